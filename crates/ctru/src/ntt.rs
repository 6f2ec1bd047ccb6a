//! The fast multiplier: an incomplete mixed-radix NTT over a prime Q near 2^24 or 2^25 (spec §9).
//!
//! Both operands are zero-padded to length N ≥ 2n − 1 and multiplied in Z_Q[x]/(x^N − 1), so the
//! product is the exact linear product reduced mod Q. The forward transform splits x^N − 1 layer by
//! layer (radix 2, and radix 3 once for n = 653) down to `leaves` rings Z_Q[x]/(x^b − ζ) with b = 3, 5
//! or 7, where a schoolbook product is cheap. The inverse transform undoes the layers without the 1/r
//! factors; one multiplication by leaves⁻¹ at the end removes them all.
//!
//! **Exactness, and where this differs from the reference.** The reference folds the products mod Q
//! and maps the result straight to mod q, which is only right while the *folded* coefficient (up to
//! (2n − 1) terms) stays below Q/2; extreme inputs break it for n = 653 and 1277. Here the large
//! operand is first centered (|a| ≤ (q−1)/2, resp. q2/2), each *linear* coefficient d_k (at most n
//! terms) is lifted to the integer in (−Q/2, Q/2), and the fold x^n = x + 1 is done on exact integers.
//! That is exact whenever n·max|a|·max|b| < Q/2, which [`NttMultiplier::small_limit_q`] and
//! [`NttMultiplier::small_limit_q2`] turn into a bound on the small operand; every product the KEM takes
//! (u·g, h·r with |g|, |r| ≤ η; c·f with f in the unpacked-key range) is inside it for every input,
//! and the multiplier refuses (with an error, not a wrong answer) a small operand outside it.
//!
//! Every constant is derived from [`Params`] ([`crate::params::NttPlan`]): Q, N and the radices; the
//! root of unity is found by search, so a GPU backend can build the same tables.
//!
//! Arithmetic: twiddles use Shoup's precomputed-quotient multiplication (result in [0, 2Q), values kept
//! in [0, 2Q) throughout), leaf products use 64-bit accumulation and Barrett reduction. Operations on
//! the coefficients have no data-dependent branches.

use crate::params::Params;
use crate::Error;

/// A constant w < Q with its Shoup quotient ⌊w·2^32/Q⌋.
#[derive(Debug, Clone, Copy)]
struct Twiddle {
    w: u32,
    w_shoup: u32,
}

impl Twiddle {
    fn new(w: u32, prime: u32) -> Self {
        Twiddle {
            w,
            w_shoup: (((w as u64) << 32) / prime as u64) as u32,
        }
    }
}

/// a·w mod Q, in [0, 2Q), for any a < 2^32.
#[inline(always)]
fn mul_shoup(a: u32, t: Twiddle, prime: u32) -> u32 {
    let quotient = ((a as u64 * t.w_shoup as u64) >> 32) as u32;
    a.wrapping_mul(t.w)
        .wrapping_sub(quotient.wrapping_mul(prime))
}

/// x − m when x ≥ m, else x (for x < 2m).
#[inline(always)]
fn csub(x: u32, m: u32) -> u32 {
    x.min(x.wrapping_sub(m))
}

fn pow_mod(base: u64, mut exp: u64, m: u64) -> u64 {
    let mut acc = 1u64;
    let mut b = base % m;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc * b % m;
        }
        b = b * b % m;
        exp >>= 1;
    }
    acc
}

/// The smallest generator of Z_p^* for a prime p < 2^32.
fn generator(p: u64) -> u64 {
    let mut factors = Vec::new();
    let mut rest = p - 1;
    let mut d = 2;
    while d * d <= rest {
        if rest % d == 0 {
            factors.push(d);
            while rest % d == 0 {
                rest /= d;
            }
        }
        d += 1;
    }
    if rest > 1 {
        factors.push(rest);
    }
    (2..p)
        .find(|&g| factors.iter().all(|&f| pow_mod(g, (p - 1) / f, p) != 1))
        .expect("a prime has a generator")
}

/// One forward layer: every block of `block_len` coefficients splits into `radix` children.
#[derive(Debug, Clone)]
struct Layer {
    radix: usize,
    block_len: usize,
    /// Per block: radix 2: [ζ_0]; radix r: ζ_j^k for j < r, 1 ≤ k < r.
    forward: Vec<Twiddle>,
    /// Per block: radix 2: [ζ_0⁻¹]; radix r: ζ_j^−i for 1 ≤ i < r, j < r.
    inverse: Vec<Twiddle>,
}

/// One forward layer's constants as plain words, for a backend that runs the same transform elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerTables {
    /// Children per block (2 or 3 in the shipped plans).
    pub radix: usize,
    /// Coefficients per block at the input of this layer.
    pub block_len: usize,
    /// Forward twiddles as (w, ⌊w·2^32/Q⌋), in the order the CPU transform reads them.
    pub forward: Vec<[u32; 2]>,
    /// Inverse twiddles as (w, ⌊w·2^32/Q⌋), in the order the CPU transform reads them.
    pub inverse: Vec<[u32; 2]>,
}

/// Every constant of an [`NttMultiplier`], exported (read-only copies) so a GPU backend computes with
/// the very same tables and can be checked against this code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NttTables {
    /// The NTT prime Q.
    pub prime: u32,
    /// Transform length N.
    pub len: usize,
    /// Ring degree n.
    pub n: usize,
    /// Forward layers, outermost first (the inverse runs them in reverse).
    pub layers: Vec<LayerTables>,
    /// Degree b of the leaf rings.
    pub leaf_len: usize,
    /// ζ·2^32 mod Q per leaf.
    pub leaf_zeta_mont: Vec<u32>,
    /// leaves⁻¹·2^32 mod Q with its Shoup quotient.
    pub final_scale: [u32; 2],
    /// −Q⁻¹ mod 2^32.
    pub neg_q_inv: u32,
}

/// Precomputed tables for one parameter set's fast multiplication.
#[derive(Debug, Clone)]
pub struct NttMultiplier {
    n: usize,
    q: i32,
    q2: i32,
    len: usize,
    prime: u32,
    root: u32,
    layers: Vec<Layer>,
    leaf_len: usize,
    /// ζ·2^32 mod Q per leaf (Montgomery form, for the leaf products).
    leaf_zeta_mont: Vec<u32>,
    /// leaves⁻¹·2^32 mod Q: removes the 1/r factors and the leaf products' 2^−32.
    final_scale: Twiddle,
    /// −Q⁻¹ mod 2^32, for Montgomery reduction.
    neg_q_inv: u32,
    /// ⌊2^64 / Q⌋ for Barrett reduction of 64-bit sums.
    barrett: u64,
}

impl NttMultiplier {
    /// Build the tables from the parameter set's [`crate::params::NttPlan`].
    pub fn new(p: &Params) -> Self {
        let plan = p.ntt;
        let prime = plan.prime;
        let q64 = prime as u64;
        let leaves = plan.leaves();
        assert!(
            plan.len >= 2 * p.n - 1,
            "the transform must hold the whole linear product"
        );
        assert_eq!(plan.len % leaves, 0, "the radices must divide N");
        assert_eq!(
            (q64 - 1) % leaves as u64,
            0,
            "Q − 1 must be divisible by the number of leaves"
        );
        assert!(prime < 1 << 30, "values in [0, 4Q) must fit in 32 bits");

        // ψ: a primitive `leaves`-th root of unity. A block x^len − ψ^e is tracked by its exponent e.
        let root = pow_mod(generator(q64), (q64 - 1) / leaves as u64, q64);
        let root_inv = pow_mod(root, q64 - 2, q64);
        let zeta = |e: usize| pow_mod(root, e as u64, q64) as u32;
        let zeta_inv = |e: usize| pow_mod(root_inv, e as u64, q64) as u32;

        let mut exponents = vec![0usize];
        let mut block_len = plan.len;
        let mut layers = Vec::new();
        for &radix in plan.radices {
            let mut forward = Vec::new();
            let mut inverse = Vec::new();
            let mut children = Vec::with_capacity(exponents.len() * radix);
            for &e in &exponents {
                // x^{r·m} − ψ^e = ∏_j (x^m − ψ^{e_j}) with e_j = (e + j·leaves)/r.
                let child: Vec<usize> = (0..radix)
                    .map(|j| {
                        let num = e + j * leaves;
                        assert_eq!(num % radix, 0);
                        num / radix
                    })
                    .collect();
                if radix == 2 {
                    forward.push(Twiddle::new(zeta(child[0]), prime));
                    inverse.push(Twiddle::new(zeta_inv(child[0]), prime));
                } else {
                    for &ej in &child {
                        for k in 1..radix {
                            forward.push(Twiddle::new(zeta(ej * k), prime));
                        }
                    }
                    for i in 1..radix {
                        for &ej in &child {
                            inverse.push(Twiddle::new(zeta_inv(ej * i), prime));
                        }
                    }
                }
                children.extend(child);
            }
            layers.push(Layer {
                radix,
                block_len,
                forward,
                inverse,
            });
            block_len /= radix;
            exponents = children;
        }
        assert!(
            matches!(block_len, 3 | 5 | 7 | 8),
            "leaf length without a product routine"
        );
        assert!(34 * q64 < 1 << 32, "leaf sums must stay below Q·2^32");
        let mont = (1u64 << 32) % q64;
        let leaf_zeta_mont = exponents
            .iter()
            .map(|&e| (zeta(e) as u64 * mont % q64) as u32)
            .collect();
        let leaves_inv = pow_mod(leaves as u64, q64 - 2, q64);
        let final_scale = Twiddle::new((leaves_inv * mont % q64) as u32, prime);
        // Newton iteration for Q⁻¹ mod 2^32 (Q odd): each step doubles the correct low bits.
        let mut q_inv: u32 = 1;
        for _ in 0..5 {
            q_inv = q_inv.wrapping_mul(2u32.wrapping_sub(prime.wrapping_mul(q_inv)));
        }
        assert_eq!(prime.wrapping_mul(q_inv), 1);
        NttMultiplier {
            n: p.n,
            q: p.q,
            q2: p.q2,
            len: plan.len,
            prime,
            root: root as u32,
            layers,
            leaf_len: block_len,
            leaf_zeta_mont,
            final_scale,
            neg_q_inv: q_inv.wrapping_neg(),
            barrett: ((1u128 << 64) / q64 as u128) as u64,
        }
    }

    /// A copy of every table, for a backend that runs this transform on other hardware.
    pub fn tables(&self) -> NttTables {
        let pair = |t: &Twiddle| [t.w, t.w_shoup];
        NttTables {
            prime: self.prime,
            len: self.len,
            n: self.n,
            layers: self
                .layers
                .iter()
                .map(|l| LayerTables {
                    radix: l.radix,
                    block_len: l.block_len,
                    forward: l.forward.iter().map(pair).collect(),
                    inverse: l.inverse.iter().map(pair).collect(),
                })
                .collect(),
            leaf_len: self.leaf_len,
            leaf_zeta_mont: self.leaf_zeta_mont.clone(),
            final_scale: pair(&self.final_scale),
            neg_q_inv: self.neg_q_inv,
        }
    }

    /// Transform length N.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a transform has at least 2n − 1 slots.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The NTT prime Q.
    pub fn prime(&self) -> u32 {
        self.prime
    }

    /// The primitive leaves-th root of unity ψ the tables are built from (leaf i is x^b − ψ^{e_i}).
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Degree b of the leaf rings.
    pub fn leaf_len(&self) -> usize {
        self.leaf_len
    }

    /// Largest |b| for which a·b mod q is exact for every a: n·(q−1)/2·|b| ≤ (Q−1)/2.
    pub fn small_limit_q(&self) -> i32 {
        self.small_limit((self.q - 1) / 2)
    }

    /// Largest |b| for which a·b mod q2 is exact for every a: n·(q2/2)·|b| ≤ (Q−1)/2.
    pub fn small_limit_q2(&self) -> i32 {
        self.small_limit(self.q2 / 2)
    }

    fn small_limit(&self, large_max: i32) -> i32 {
        (((self.prime - 1) / 2) as u64 / (self.n as u64 * large_max as u64)) as i32
    }

    #[inline(always)]
    fn barrett_reduce(&self, x: u64) -> u32 {
        let quotient = ((x as u128 * self.barrett as u128) >> 64) as u64;
        csub((x - quotient * self.prime as u64) as u32, self.prime)
    }

    /// x·2^−32 mod Q, in [0, 2Q), for x < Q·2^32 (Montgomery reduction).
    #[inline(always)]
    fn redc(&self, x: u64) -> u32 {
        let m = (x as u32).wrapping_mul(self.neg_q_inv);
        ((x + m as u64 * self.prime as u64) >> 32) as u32
    }

    /// Forward transform in place. Input and output coefficients in [0, 2Q).
    pub fn forward(&self, a: &mut [u32]) {
        assert_eq!(a.len(), self.len, "transform length");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { self.forward_avx2(a) };
        }
        self.forward_portable(a)
    }

    /// The same loops compiled for AVX2, so the butterflies vectorise 8 lanes wide.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn forward_avx2(&self, a: &mut [u32]) {
        self.forward_portable(a)
    }

    #[inline(always)]
    fn forward_portable(&self, a: &mut [u32]) {
        let two_q = 2 * self.prime;
        for layer in &self.layers {
            let sub = layer.block_len / layer.radix;
            for (blk, block) in a.chunks_exact_mut(layer.block_len).enumerate() {
                if layer.radix == 2 {
                    let tw = layer.forward[blk];
                    let (lo, hi) = block.split_at_mut(sub);
                    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                        let t = mul_shoup(*y, tw, self.prime);
                        let u = *x;
                        *x = csub(u + t, two_q);
                        *y = csub(u + two_q - t, two_q);
                    }
                } else if layer.radix == 3 {
                    let c = &layer.forward[blk * 6..blk * 6 + 6];
                    let (s0, rest) = block.split_at_mut(sub);
                    let (s1, s2) = rest.split_at_mut(sub);
                    for ((x, y), z) in s0.iter_mut().zip(s1.iter_mut()).zip(s2.iter_mut()) {
                        let (a0, a1, a2) = (*x, *y, *z);
                        let child = |t1: Twiddle, t2: Twiddle| {
                            let v =
                                a0 + mul_shoup(a1, t1, self.prime) + mul_shoup(a2, t2, self.prime);
                            csub(csub(v, 2 * two_q), two_q)
                        };
                        *x = child(c[0], c[1]);
                        *y = child(c[2], c[3]);
                        *z = child(c[4], c[5]);
                    }
                } else {
                    let r = layer.radix;
                    let consts = &layer.forward[blk * r * (r - 1)..(blk + 1) * r * (r - 1)];
                    let mut parts = [0u32; 8];
                    for i in 0..sub {
                        for (k, part) in parts[..r].iter_mut().enumerate() {
                            *part = block[k * sub + i];
                        }
                        for j in 0..r {
                            let mut acc = parts[0] as u64;
                            for k in 1..r {
                                acc += mul_shoup(parts[k], consts[j * (r - 1) + k - 1], self.prime)
                                    as u64;
                            }
                            block[j * sub + i] = self.barrett_reduce(acc);
                        }
                    }
                }
            }
        }
    }

    /// Inverse transform in place, without the 1/leaves factor. Coefficients in [0, 2Q).
    pub fn inverse_unscaled(&self, a: &mut [u32]) {
        assert_eq!(a.len(), self.len, "transform length");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { self.inverse_avx2(a) };
        }
        self.inverse_portable(a)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn inverse_avx2(&self, a: &mut [u32]) {
        self.inverse_portable(a)
    }

    #[inline(always)]
    fn inverse_portable(&self, a: &mut [u32]) {
        let two_q = 2 * self.prime;
        for layer in self.layers.iter().rev() {
            let sub = layer.block_len / layer.radix;
            for (blk, block) in a.chunks_exact_mut(layer.block_len).enumerate() {
                if layer.radix == 2 {
                    let tw = layer.inverse[blk];
                    let (lo, hi) = block.split_at_mut(sub);
                    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                        let (c0, c1) = (*x, *y);
                        *x = csub(c0 + c1, two_q);
                        *y = mul_shoup(c0 + two_q - c1, tw, self.prime);
                    }
                } else if layer.radix == 3 {
                    let k = &layer.inverse[blk * 6..blk * 6 + 6];
                    let (s0, rest) = block.split_at_mut(sub);
                    let (s1, s2) = rest.split_at_mut(sub);
                    let reduce = |v: u32| csub(csub(v, 2 * two_q), two_q);
                    for ((x, y), z) in s0.iter_mut().zip(s1.iter_mut()).zip(s2.iter_mut()) {
                        let (c0, c1, c2) = (*x, *y, *z);
                        let part = |t0: Twiddle, t1: Twiddle, t2: Twiddle| {
                            mul_shoup(c0, t0, self.prime)
                                + mul_shoup(c1, t1, self.prime)
                                + mul_shoup(c2, t2, self.prime)
                        };
                        *x = reduce(c0 + c1 + c2);
                        *y = reduce(part(k[0], k[1], k[2]));
                        *z = reduce(part(k[3], k[4], k[5]));
                    }
                } else {
                    let r = layer.radix;
                    let consts = &layer.inverse[blk * r * (r - 1)..(blk + 1) * r * (r - 1)];
                    let mut parts = [0u32; 8];
                    for i in 0..sub {
                        for (j, part) in parts[..r].iter_mut().enumerate() {
                            *part = block[j * sub + i];
                        }
                        block[i] = self.barrett_reduce(parts[..r].iter().map(|&c| c as u64).sum());
                        for k in 1..r {
                            let mut acc = 0u64;
                            for j in 0..r {
                                acc +=
                                    mul_shoup(parts[j], consts[(k - 1) * r + j], self.prime) as u64;
                            }
                            block[k * sub + i] = self.barrett_reduce(acc);
                        }
                    }
                }
            }
        }
    }

    /// Leaf-wise products: a ← a·b·2^−32 in every Z_Q[x]/(x^b − ζ) (the 2^−32 of Montgomery reduction
    /// is removed with the final scaling). Inputs and output in [0, 2Q).
    pub fn pointwise(&self, a: &mut [u32], b: &[u32]) {
        assert_eq!(a.len(), self.len, "transform length");
        assert_eq!(b.len(), self.len, "transform length");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { self.pointwise_avx2(a, b) };
        }
        self.pointwise_portable(a, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn pointwise_avx2(&self, a: &mut [u32], b: &[u32]) {
        self.pointwise_portable(a, b)
    }

    #[inline(always)]
    fn pointwise_portable(&self, a: &mut [u32], b: &[u32]) {
        // A fixed leaf size lets the compiler unroll the small products completely.
        match self.leaf_len {
            3 => self.pointwise_fixed::<3>(a, b),
            5 => self.pointwise_fixed::<5>(a, b),
            7 => self.pointwise_fixed::<7>(a, b),
            8 => self.pointwise_fixed::<8>(a, b),
            other => unreachable!("leaf length {other} has no product routine"),
        }
    }

    #[inline(always)]
    fn pointwise_fixed<const B: usize>(&self, a: &mut [u32], b: &[u32]) {
        for ((x, y), &zeta) in a
            .chunks_exact_mut(B)
            .zip(b.chunks_exact(B))
            .zip(&self.leaf_zeta_mont)
        {
            let x: &mut [u32; B] = x.try_into().expect("chunk of B");
            let y: &[u32; B] = y.try_into().expect("chunk of B");
            // prod[k] for k < B, and high[k] = prod[k + B] for k < B − 1. At most 8 terms below 4Q²
            // each: every sum stays below Q·2^32, as Montgomery reduction needs.
            let mut low = [0u64; B];
            let mut high = [0u64; B];
            for i in 0..B {
                for j in 0..B {
                    let t = x[i] as u64 * y[j] as u64;
                    if i + j < B {
                        low[i + j] += t;
                    } else {
                        high[i + j - B] += t;
                    }
                }
            }
            for k in 0..B {
                // redc(·)·ζ·2^32 ≡ prod[k + B]·ζ: x^B = ζ in this leaf.
                let folded = low[k] + self.redc(high[k]) as u64 * zeta as u64;
                x[k] = self.redc(folded);
            }
        }
    }

    /// The folded product of a centered large operand and a small one, as exact integers, provided
    /// n·max|a|·max|b| < Q/2 (the callers check this).
    #[inline(always)]
    fn exact_folded(&self, a_centered: &[i32], b: &[i8]) -> Vec<i32> {
        let lift = |v: i32| -> u32 { (v + (self.prime as i32 & (v >> 31))) as u32 };
        let mut ta = vec![0u32; self.len];
        let mut tb = vec![0u32; self.len];
        for (t, &v) in ta.iter_mut().zip(a_centered) {
            *t = lift(v);
        }
        for (t, &v) in tb.iter_mut().zip(b) {
            *t = lift(v as i32);
        }
        self.forward_portable(&mut ta);
        self.forward_portable(&mut tb);
        self.pointwise_portable(&mut ta, &tb);
        self.inverse_portable(&mut ta);
        let half = (self.prime / 2) as i32;
        let linear: Vec<i32> = ta[..2 * self.n - 1]
            .iter()
            .map(|&d| {
                let r = csub(mul_shoup(d, self.final_scale, self.prime), self.prime) as i32;
                // Lift to (−Q/2, Q/2): the exact coefficient.
                r - (self.prime as i32 & ((half - r) >> 31))
            })
            .collect();
        crate::poly::fold(self.n, &linear)
    }

    fn check(&self, a: &[i32], b: &[i8], limit: i32) -> Result<(), Error> {
        if a.len() != self.n {
            return Err(Error::WrongDegree {
                field: "large operand",
                expected: self.n,
                got: a.len(),
            });
        }
        if b.len() != self.n {
            return Err(Error::WrongDegree {
                field: "small operand",
                expected: self.n,
                got: b.len(),
            });
        }
        let largest = b.iter().fold(0i32, |m, &v| m.max((v as i32).abs()));
        if largest > limit {
            return Err(Error::SmallOperandOutOfRange {
                field: "small operand",
                limit,
                got: largest,
            });
        }
        Ok(())
    }

    /// a·b mod (x^n − x − 1, q), coefficients in [0, q). `a` may hold any integers (taken mod q);
    /// `b` must satisfy |b_i| ≤ [`Self::small_limit_q`] (η always does).
    pub fn mul_mod_q(&self, a: &[i32], b: &[i8]) -> Result<Vec<i32>, Error> {
        self.check(a, b, self.small_limit_q())?;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return Ok(unsafe { self.mul_mod_q_avx2(a, b) });
        }
        Ok(self.mul_mod_q_portable(a, b))
    }

    /// a·b mod (x^n − x − 1, q2), coefficients in [0, q2). `a` may hold any integers (taken mod q2);
    /// `b` must satisfy |b_i| ≤ [`Self::small_limit_q2`] (every unpacked secret key does).
    pub fn mul_mod_q2(&self, a: &[i32], b: &[i8]) -> Result<Vec<i32>, Error> {
        self.check(a, b, self.small_limit_q2())?;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return Ok(unsafe { self.mul_mod_q2_avx2(a, b) });
        }
        Ok(self.mul_mod_q2_portable(a, b))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn mul_mod_q_avx2(&self, a: &[i32], b: &[i8]) -> Vec<i32> {
        self.mul_mod_q_portable(a, b)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn mul_mod_q2_avx2(&self, a: &[i32], b: &[i8]) -> Vec<i32> {
        self.mul_mod_q2_portable(a, b)
    }

    #[inline(always)]
    fn mul_mod_q_portable(&self, a: &[i32], b: &[i8]) -> Vec<i32> {
        let m = crate::arith::SmallModulus::new(self.q);
        let centered: Vec<i32> = a.iter().map(|&v| m.center(v)).collect();
        let mut out = self.exact_folded(&centered, b);
        for v in out.iter_mut() {
            *v = m.reduce(*v);
        }
        out
    }

    #[inline(always)]
    fn mul_mod_q2_portable(&self, a: &[i32], b: &[i8]) -> Vec<i32> {
        let mask = self.q2 - 1;
        let half = self.q2 / 2;
        let centered: Vec<i32> = a
            .iter()
            .map(|&v| {
                let r = v & mask;
                r - (self.q2 & ((half - 1 - r) >> 31))
            })
            .collect();
        let mut out = self.exact_folded(&centered, b);
        for v in out.iter_mut() {
            *v &= mask;
        }
        out
    }
}

/// The shared tables for a parameter set, built on first use.
pub fn multiplier(set: crate::ParamSet) -> &'static NttMultiplier {
    static TABLES: [std::sync::OnceLock<NttMultiplier>; 3] = [
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
    ];
    TABLES[set.index()].get_or_init(|| NttMultiplier::new(set.params()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamSet;

    #[test]
    fn small_limits_cover_every_kem_product() {
        for set in ParamSet::ALL {
            let p = set.params();
            let m = multiplier(set);
            assert!(m.small_limit_q() >= p.eta, "{set}: u·g and h·r");
            let (lo, hi) = p.unpacked_f_range();
            assert!(m.small_limit_q2() >= lo.abs().max(hi.abs()), "{set}: c·f");
            assert_eq!(m.leaf_len(), p.ntt.leaf_len());
        }
    }

    #[test]
    fn exported_tables_describe_the_plan() {
        for set in ParamSet::ALL {
            let p = set.params();
            let t = multiplier(set).tables();
            assert_eq!((t.prime, t.len, t.n), (p.ntt.prime, p.ntt.len, p.n));
            let radices: Vec<usize> = t.layers.iter().map(|l| l.radix).collect();
            assert_eq!(radices, p.ntt.radices);
            let mut blocks = 1;
            for l in &t.layers {
                let per_block = if l.radix == 2 {
                    1
                } else {
                    l.radix * (l.radix - 1)
                };
                assert_eq!(l.forward.len(), blocks * per_block);
                assert_eq!(l.inverse.len(), blocks * per_block);
                assert_eq!(l.block_len, p.ntt.len / blocks);
                assert!(l.forward.iter().all(|w| w[0] < t.prime));
                blocks *= l.radix;
            }
            assert_eq!(t.leaf_zeta_mont.len(), p.ntt.leaves());
            assert_eq!(t.leaf_len, p.ntt.leaf_len());
            assert_eq!(t.prime.wrapping_mul(t.neg_q_inv.wrapping_neg()), 1);
        }
    }

    #[test]
    fn vectorised_and_portable_transforms_agree() {
        for set in ParamSet::ALL {
            let m = multiplier(set);
            let input: Vec<u32> = (0..m.len() as u32)
                .map(|i| i.wrapping_mul(2_654_435_761) % (2 * m.prime()))
                .collect();
            let (mut fast, mut plain) = (input.clone(), input);
            m.forward(&mut fast);
            m.forward_portable(&mut plain);
            assert_eq!(fast, plain);
            m.inverse_unscaled(&mut fast);
            m.inverse_portable(&mut plain);
            assert_eq!(fast, plain);
        }
    }

    #[test]
    fn transform_round_trips() {
        for set in ParamSet::ALL {
            let m = multiplier(set);
            let leaves = set.params().ntt.leaves() as u64;
            let input: Vec<u32> = (0..m.len() as u32)
                .map(|i| (i * 7919 + 13) % m.prime())
                .collect();
            let mut a = input.clone();
            m.forward(&mut a);
            m.inverse_unscaled(&mut a);
            for (x, y) in a.iter().zip(&input) {
                assert_eq!(
                    *x as u64 % m.prime() as u64,
                    *y as u64 * leaves % m.prime() as u64
                );
            }
        }
    }
}
