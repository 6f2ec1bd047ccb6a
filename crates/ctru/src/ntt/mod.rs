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

mod product;
mod transform;

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
