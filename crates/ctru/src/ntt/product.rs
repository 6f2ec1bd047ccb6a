//! The exact products the KEM takes: the small operand's bound checked, the large operand
//! centered, the linear product lifted to integers and folded by x^n = x + 1 exactly (the reasons
//! are in the parent module's docs), then reduced mod q or q2.

use super::*;
use crate::Error;

impl NttMultiplier {
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
