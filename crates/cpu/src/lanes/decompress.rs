//! Compressed SEC1 keys (`02`/`03` ‖ x) made whole eight at a time (SEC 1 v2, §2.3.4): y is a
//! square root of x³ + ax + b, taken as (x³ + ax + b)^((p+1)/4) since each of the three primes is
//! ≡ 3 (mod 4), checked by squaring (no root: x is on no point), and negated where its parity is
//! not the prefix's. A batch of keys from a node's records is decompressed here before they are
//! prepared: one exponentiation in lanes costs about what one does in scalar code, so eight keys
//! take the time of one (libsecp256k1 decompresses one key in about 4 µs here).
//!
//! Only the good case is answered: a key with x ≥ p, or whose x is on no point, comes back
//! `None`, and the caller decodes it one at a time for the error the scalar path words. Keys are
//! public: variable time is fine.

use super::field::splat;
use super::modulus::{be_from_radix52, radix52_from_be, sqrt_exponent, LIMBS};
use super::point::{curve_rhs, Fp, LaneCurve};
use core::arch::x86_64::*;

/// The y of up to eight compressed keys (prefix byte, then x big-endian), y[l] for key l; `None`
/// for a key refused (x ≥ p, no root, a prefix other than 2 or 3) and past the keys.
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn decompress_group<C: LaneCurve>(keys: &[[u8; 33]]) -> [Option<[u8; 32]>; 8] {
    let mut xs = [[0u64; LIMBS]; 8];
    let (mut ok, mut odd) = (0u8, 0u8);
    for (lane, key) in keys.iter().enumerate().take(8) {
        let x: &[u8; 32] = key[1..].try_into().expect("33 bytes");
        // x < p, as big-endian byte strings compare (zero is a coordinate like any other).
        if matches!(key[0], 2 | 3) && x < &C::PARAMS.p {
            xs[lane] = radix52_from_be(x);
            ok |= 1 << lane;
            odd |= (key[0] & 1) << lane;
        }
    }
    let x = Fp::<C>::load(&xs).to_mont();
    let rhs = curve_rhs::<C>(&x);
    let root = rhs.pow(&sqrt_exponent(&C::PARAMS.p));
    ok &= root.square().equals(&rhs);
    // y = 0 has no odd form (none of the three curves has such a point; the check costs nothing).
    ok &= !(root.is_zero() & odd);
    // Negation commutes with the Montgomery form, so the parity is read from the plain value.
    let plain = root.out_of_mont().canonical();
    let root_odd = _mm512_test_epi64_mask(plain.0[0], splat(1));
    let y = plain
        .select(root_odd ^ odd, &plain.neg().canonical())
        .store();
    core::array::from_fn(|lane| {
        (lane < keys.len() && ok >> lane & 1 == 1).then(|| be_from_radix52(&y[lane]))
    })
}
