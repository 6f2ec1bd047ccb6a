//! Constant-time integer helpers for the small moduli q (and division by q).
//!
//! Division instructions can take data-dependent time, so reductions of secret values use a
//! multiply-and-shift estimate followed by masked corrections.

/// Reduction modulo one small odd prime q, without division instructions.
#[derive(Debug, Clone, Copy)]
pub struct SmallModulus {
    q: i32,
    /// ⌊2^32 / q⌋ (fits in 31 bits; kept as i32 so the product is a 32×32→64 multiply).
    mu: i32,
}

/// All-ones when x < 0, else 0.
#[inline(always)]
pub(crate) fn negative_mask(x: i32) -> i32 {
    x >> 31
}

impl SmallModulus {
    /// For an odd q < 2^15.
    pub const fn new(q: i32) -> Self {
        SmallModulus {
            q,
            mu: ((1i64 << 32) / q as i64) as i32,
        }
    }

    /// The modulus.
    pub const fn q(&self) -> i32 {
        self.q
    }

    /// x mod q in [0, q), for every i32 x.
    #[inline(always)]
    pub fn reduce(&self, x: i32) -> i32 {
        // The estimate is ⌊x/q⌋ or off by one in either direction, so r starts in [−q, 2q).
        let estimate = ((x as i64 * self.mu as i64) >> 32) as i32;
        let mut r = x.wrapping_sub(estimate.wrapping_mul(self.q));
        r += self.q & negative_mask(r);
        r -= self.q;
        r += self.q & negative_mask(r);
        r
    }

    /// cmod(x, q) in [−(q−1)/2, (q−1)/2], for every i32 x.
    #[inline(always)]
    pub fn center(&self, x: i32) -> i32 {
        let r = self.reduce(x);
        r - (self.q & negative_mask((self.q - 1) / 2 - r))
    }

    /// ⌊x / q⌋ for 0 ≤ x < 2^31.
    #[inline(always)]
    pub fn div_floor(&self, x: i32) -> i32 {
        let mut estimate = ((x as i64 * self.mu as i64) >> 32) as i32;
        let r = x - estimate * self.q;
        // r ∈ [0, 2q): add one when r ≥ q.
        estimate += 1 + negative_mask(r - self.q);
        estimate
    }

    /// a^(q−2) mod q: the inverse of a nonzero a, in [0, q).
    pub fn inverse(&self, a: i32) -> i32 {
        let mut base = self.reduce(a);
        let mut exp = (self.q - 2) as u32;
        let mut acc = 1i32;
        while exp > 0 {
            if exp & 1 == 1 {
                acc = self.reduce(acc * base);
            }
            base = self.reduce(base * base);
            exp >>= 1;
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_center_and_divide_match_plain_arithmetic() {
        for q in [4621, 4591, 7879] {
            let m = SmallModulus::new(q);
            let mut samples: Vec<i32> = (-70_000..70_000).collect();
            samples.extend([
                i32::MIN,
                i32::MIN + 1,
                i32::MAX,
                i32::MAX - 1,
                -q,
                q,
                2 * q - 1,
            ]);
            let mut x: i64 = 12345;
            for _ in 0..200_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                samples.push((x >> 32) as i32);
            }
            for &v in &samples {
                let r = v.rem_euclid(q);
                assert_eq!(m.reduce(v), r, "reduce {v} mod {q}");
                let c = if r > (q - 1) / 2 { r - q } else { r };
                assert_eq!(m.center(v), c, "center {v} mod {q}");
                if v >= 0 {
                    assert_eq!(m.div_floor(v), v / q, "divide {v} by {q}");
                }
            }
            for a in 1..q {
                assert_eq!(m.reduce(m.inverse(a) * a), 1);
            }
        }
    }
}
