//! Polynomials in Z[x]/(x^n − x − 1): the schoolbook reference product, the fold, and inversion in R_q.
//!
//! The schoolbook product is the independent reference the NTT multiplier is tested against: it works
//! in exact 64-bit integers, so it is right for every input whose products cannot overflow i64.

use crate::arith::{negative_mask, SmallModulus};
use crate::params::Params;

/// Reduce a linear product d_0 … d_{2n−2} modulo x^n − x − 1 (x^n = x + 1): one fold, exact (spec §3).
pub fn fold<T>(n: usize, d: &[T]) -> Vec<T>
where
    T: Copy + std::ops::Add<Output = T> + Default,
{
    assert_eq!(
        d.len(),
        2 * n - 1,
        "fold needs a product of 2n − 1 coefficients"
    );
    let mut v = d[..n].to_vec();
    for k in 0..n - 1 {
        let high = d[n + k];
        v[k] = v[k] + high;
        v[k + 1] = v[k + 1] + high;
    }
    v
}

/// The exact folded product a·b in Z[x]/(x^n − x − 1), by schoolbook multiplication.
///
/// Exact when n·max|a|·max|b| < 2^62, e.g. for all coefficients below 2^26 in magnitude.
pub fn schoolbook_exact(a: &[i32], b: &[i32]) -> Vec<i64> {
    let n = a.len();
    assert_eq!(b.len(), n, "operands must have the same degree");
    let mut d = vec![0i64; 2 * n - 1];
    for (i, &ai) in a.iter().enumerate() {
        let ai = ai as i64;
        for (dk, &bj) in d[i..i + n].iter_mut().zip(b) {
            *dk += ai * bj as i64;
        }
    }
    fold(n, &d)
}

/// Schoolbook a·b mod (x^n − x − 1, q), coefficients in [0, q).
pub fn schoolbook_mul_mod_q(p: &Params, a: &[i32], b: &[i32]) -> Vec<i32> {
    schoolbook_exact(a, b)
        .into_iter()
        .map(|v| v.rem_euclid(p.q as i64) as i32)
        .collect()
}

/// Schoolbook a·b mod (x^n − x − 1, q2), coefficients in [0, q2).
pub fn schoolbook_mul_mod_q2(p: &Params, a: &[i32], b: &[i32]) -> Vec<i32> {
    schoolbook_exact(a, b)
        .into_iter()
        .map(|v| v.rem_euclid(p.q2 as i64) as i32)
        .collect()
}

/// The inverse of `a` in R_q = Z_q[x]/(x^n − x − 1), coefficients in cmod form, and whether it exists.
///
/// Constant-time in the coefficients of `a` (the secret f at key generation): a fixed 2n − 1 rounds of
/// the divstep iteration (Bernstein–Yang) on the reversed polynomials, with masked swaps and no
/// data-dependent branches. R_q is a field, so every nonzero `a` is invertible.
pub fn invert_mod_q(p: &Params, a: &[i32]) -> (Vec<i32>, bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { invert_avx2(p, a) };
    }
    invert_portable(p, a)
}

/// The same loops compiled for AVX2, so the coefficient updates vectorise.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn invert_avx2(p: &Params, a: &[i32]) -> (Vec<i32>, bool) {
    invert_portable(p, a)
}

#[inline(always)]
fn invert_portable(p: &Params, a: &[i32]) -> (Vec<i32>, bool) {
    let n = p.n;
    assert_eq!(a.len(), n, "inverse needs n coefficients");
    let m = SmallModulus::new(p.q);
    // f: the modulus x^n − x − 1 reversed (1 − x^{n−1} − x^n); g: the input reversed.
    let mut f = vec![0i32; n + 1];
    f[0] = 1;
    f[n - 1] = -1;
    f[n] = -1;
    let mut g = vec![0i32; n + 1];
    for (i, &ai) in a.iter().enumerate() {
        g[n - 1 - i] = m.center(ai);
    }
    // Invariant: v·(input) ≡ f and r·(input) ≡ g up to powers of x, in the reversed world.
    let mut v = vec![0i32; n + 1];
    let mut r = vec![0i32; n + 1];
    r[0] = 1;
    let mut delta: i32 = 1;

    for _ in 0..2 * n - 1 {
        v.copy_within(0..n, 1);
        v[0] = 0;

        // All-ones when g[0] ≠ 0: either g[0] or −g[0] then has its sign bit set.
        let g0_nonzero = negative_mask(g[0] | g[0].wrapping_neg());
        let swap = negative_mask(-delta) & g0_nonzero;
        delta ^= swap & (delta ^ -delta);
        delta += 1;

        for i in 0..=n {
            let t = swap & (f[i] ^ g[i]);
            f[i] ^= t;
            g[i] ^= t;
            let t = swap & (v[i] ^ r[i]);
            v[i] ^= t;
            r[i] ^= t;
        }

        let f0 = f[0];
        let g0 = g[0];
        // Eliminate g's constant term, then divide g by x.
        for i in 0..n {
            g[i] = m.center(f0 * g[i + 1] - g0 * f[i + 1]);
        }
        g[n] = 0;
        for i in 0..=n {
            r[i] = m.center(f0 * r[i] - g0 * v[i]);
        }
    }

    let scale = m.inverse(f[0]);
    let out = (0..n).map(|i| m.center(scale * v[n - 1 - i])).collect();
    (out, delta == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamSet;

    #[test]
    fn inverse_of_one_plus_two_x_matches_the_spec() {
        // Spec §10: coefficients 0…7, then the last two.
        let expected: [(&[i32], [i32; 2]); 3] = [
            (
                &[-595, 594, -1188, -2245, -131, 262, -524, 1048],
                [-149, 298],
            ),
            (
                &[1798, -1799, -993, 1986, 619, -1238, -2115, -361],
                [1597, 1397],
            ),
            (
                &[2151, -2152, -3575, -729, 1458, -2916, -2047, -3785],
                [-3402, -1075],
            ),
        ];
        for (set, (head, tail)) in ParamSet::ALL.into_iter().zip(expected) {
            let p = set.params();
            let mut a = vec![0i32; p.n];
            a[0] = 1;
            a[1] = 2;
            let (inv, ok) = invert_mod_q(p, &a);
            assert!(ok);
            assert_eq!(&inv[..8], head, "{set}");
            assert_eq!(&inv[p.n - 2..], tail, "{set}");
            let one = schoolbook_mul_mod_q(p, &a, &inv);
            assert_eq!(one[0], 1);
            assert!(one[1..].iter().all(|&c| c == 0));
        }
    }

    #[test]
    fn vectorised_and_portable_inversion_agree() {
        for set in ParamSet::ALL {
            let p = set.params();
            let a: Vec<i32> = (0..p.n as i32)
                .map(|i| (i * i + 3 * i + 1) % 7 - 3)
                .collect();
            assert_eq!(invert_mod_q(p, &a), invert_portable(p, &a));
        }
    }

    #[test]
    fn zero_is_not_invertible() {
        let p = ParamSet::Ctru653.params();
        let (inv, ok) = invert_mod_q(p, &vec![0; p.n]);
        assert!(!ok);
        assert!(inv.iter().all(|&c| c == 0));
    }
}
