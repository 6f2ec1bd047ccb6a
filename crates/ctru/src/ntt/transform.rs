//! The transforms: forward (x^N − 1 split layer by layer down to the leaf rings), the unscaled
//! inverse, and the pointwise product in the leaf rings Z_Q[x]/(x^b − ζ). Twiddles by Shoup's
//! multiplication, values in [0, 2Q) throughout; the AVX2 forms where the CPU has them.

use super::*;

impl NttMultiplier {
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
    pub(super) fn forward_portable(&self, a: &mut [u32]) {
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
    pub(super) fn inverse_portable(&self, a: &mut [u32]) {
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
    pub(super) fn pointwise_portable(&self, a: &mut [u32], b: &[u32]) {
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
}
