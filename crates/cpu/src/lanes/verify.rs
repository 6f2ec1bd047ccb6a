//! Eight signatures per call: SM2 (GB/T 32918.2 §7, from the digest e) and ECDSA (SEC 1 §4.1.4,
//! from the digest z), the same rules as the scalar verifiers of the crate.
//!
//! The range checks are done per record on the bytes before anything enters the lanes; a lane
//! whose record fails them computes on a harmless stand-in (Q = G, r = s = 1) and its verdict is
//! false. Ragged groups (fewer than eight records) fill the missing lanes the same way.

use super::field::{add_int, lt_int, Fe8};
use super::modulus::{radix52_from_be, LaneModulus, LIMBS};
use super::mul::lincomb;
use super::point::{on_curve, Fp, Jac8, LaneCurve};
use chainsig_core::PreparedItem;

/// Which final equation: ECDSA's x(R) ≡ r, or SM2's (e + x(R)) ≡ r, both mod n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Sm2,
    /// ECDSA; `low_s` rejects s > n/2.
    Ecdsa {
        low_s: bool,
    },
}

/// The five operands of up to eight records as lane columns, and the lanes that passed the byte
/// checks.
struct Packed {
    e: [[u64; LIMBS]; 8],
    r: [[u64; LIMBS]; 8],
    s: [[u64; LIMBS]; 8],
    px: [[u64; LIMBS]; 8],
    py: [[u64; LIMBS]; 8],
    ok: u8,
}

/// Whether a big-endian value lies in [1, bound).
pub(crate) fn in_range(v: &[u8; 32], bound: &[u8; 32]) -> bool {
    v < bound && v.iter().any(|&b| b != 0)
}

fn pack<C: LaneCurve>(items: &[PreparedItem], scheme: Scheme) -> Packed {
    let params = &C::PARAMS;
    let one = radix52_from_be(&{
        let mut b = [0u8; 32];
        b[31] = 1;
        b
    });
    let mut packed = Packed {
        e: [[0; LIMBS]; 8],
        r: [one; 8],
        s: [one; 8],
        px: [radix52_from_be(&params.gx); 8],
        py: [radix52_from_be(&params.gy); 8],
        ok: 0,
    };
    for (lane, item) in items.iter().enumerate().take(8) {
        let high_s_refused =
            matches!(scheme, Scheme::Ecdsa { low_s: true }) && params.is_high_s(&item.s);
        let ok = in_range(&item.r, &params.n)
            && in_range(&item.s, &params.n)
            && item.px < params.p
            && item.py < params.p
            && !high_s_refused;
        if ok {
            packed.e[lane] = radix52_from_be(&item.e);
            packed.r[lane] = radix52_from_be(&item.r);
            packed.s[lane] = radix52_from_be(&item.s);
            packed.px[lane] = radix52_from_be(&item.px);
            packed.py[lane] = radix52_from_be(&item.py);
            packed.ok |= 1 << lane;
        }
    }
    packed
}

/// Verifies up to eight records of curve C; verdict l is record l's (lanes past the records are
/// false).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn verify_group<C: LaneCurve>(items: &[PreparedItem], scheme: Scheme) -> [bool; 8] {
    let packed = pack::<C>(items, scheme);
    let mut ok = packed.ok;

    let qx = Fp::<C>::load(&packed.px).to_mont();
    let qy = Fp::<C>::load(&packed.py).to_mont();
    ok &= on_curve::<C>(&qx, &qy);

    // Every digest is below 2²⁵⁶ < 2n, inside the lanes' [0, 2n) invariant.
    let e = Fe8::<C::N>::load(&packed.e);
    let r = Fe8::<C::N>::load(&packed.r);
    let s = Fe8::<C::N>::load(&packed.s);
    let (u1, u2, c) = match scheme {
        Scheme::Sm2 => {
            // t = r + s ≠ 0; s·G + t·P; x(R) ≡ r − e.
            let t = r.add(&s).canonical();
            ok &= !t.is_zero();
            (s, t, r.sub(&e).canonical())
        }
        Scheme::Ecdsa { .. } => {
            // w = s⁻¹ in Montgomery form, so a Montgomery product with a plain value is plain.
            let w = s.to_mont().invert_public();
            (e.mul(&w).canonical(), r.mul(&w).canonical(), r)
        }
    };
    let sum = lincomb::<C>(&u1, &u2, &qx, &qy);
    ok &= !sum.inf;
    ok &= x_mod_n_equals::<C>(&sum, &c.canonical());

    core::array::from_fn(|lane| lane < items.len() && ok >> lane & 1 == 1)
}

/// The lanes where x(R) mod n = c, without inverting Z: x lies in [0, p) and p < 2n, so x is c or
/// c + n (the latter only when c + n < p); compare X with c·Z² and (c + n)·Z².
#[target_feature(enable = "avx512f,avx512ifma")]
fn x_mod_n_equals<C: LaneCurve>(sum: &Jac8<C>, c: &Fe8<C::N>) -> u8 {
    let zz = sum.z.square();
    let c1 = Fp::<C>::from_limbs(c.0);
    let n = Fe8::<C::N>::constant(&<C::N as LaneModulus>::M.m);
    let c2 = add_int(&c.0, &n.0);
    let p = Fp::<C>::constant(&<C::P as LaneModulus>::M.m);
    let c2_below_p = lt_int(&c2, &p.0);
    let c2 = Fp::<C>::from_limbs(c2);
    let first = sum.x.equals(&c1.to_mont().mul(&zz));
    let second = sum.x.equals(&c2.to_mont().mul(&zz)) & c2_below_p;
    first | second
}
