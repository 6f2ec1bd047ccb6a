//! Ethereum sender recovery (ecrecover, SEC 1 §4.1.6) eight records at a time on secp256k1, with
//! exactly the rules of the scalar path ([`crate::ecdsa_secp256k1::recover`], libsecp256k1):
//! r and s in [1, n), s ≤ n/2 under [`SRule::LowOnly`] (EIP-2), recovery id 0 or 1 only, so
//! R's x coordinate is r itself (ids 2 and 3, x = r + n, are refused there and here).
//!
//! For each lane: x = r; y = √(x³ + 7) as (x³ + 7)^((p+1)/4), valid because p ≡ 3 (mod 4), and
//! checked by squaring (no root: no such R, no key); y negated where its parity differs from the
//! recovery id. Then Q = r⁻¹(s·R − e·G) = u₁·G + u₂·R with u₁ = −e·r⁻¹ and u₂ = s·r⁻¹ mod n, by
//! the lanes' double-scalar multiplication ([`super::mul::lincomb`]); Q at infinity means no
//! key. The affine key comes from one lane-parallel inversion of Z for the eight lanes, and the
//! address from Keccak-256 of x‖y, as [`Recovered::from_pubkey`] builds it for the scalar path.
//!
//! Records that fail the byte checks compute on a stand-in (R = ±G, s = 1, e = 0) and yield
//! `None`, as do lanes past a ragged group's records. Everything is public: variable time is fine.

use super::curves::K256Curve;
use super::field::{splat, Fe8, Mask};
use super::modulus::{be_from_radix52, radix52_from_be, sqrt_exponent, LIMBS};
use super::mul::lincomb;
use super::point::{curve_rhs, Fp, LaneCurve};
use super::verify::in_range;
use crate::ecdsa_secp256k1::SRule;
use chainsig_core::{RecoverItem, Recovered};
use core::arch::x86_64::*;

type Curve = K256Curve;
type Scalar = Fe8<<K256Curve as LaneCurve>::N>;

/// (p + 1)/4, the square-root exponent for p ≡ 3 (mod 4).
const SQRT_EXPONENT: [u64; 4] = sqrt_exponent(&Curve::PARAMS.p);

/// The operands of up to eight records as lane columns, the wanted parity of y, and the lanes
/// that passed the byte checks.
struct Packed {
    e: [[u64; LIMBS]; 8],
    r: [[u64; LIMBS]; 8],
    s: [[u64; LIMBS]; 8],
    odd: Mask,
    ok: Mask,
}

fn pack(items: &[RecoverItem], rule: SRule) -> Packed {
    let params = &Curve::PARAMS;
    let one = radix52_from_be(&{
        let mut b = [0u8; 32];
        b[31] = 1;
        b
    });
    // The stand-in: x(G) < n, so R = ±G is a point and r⁻¹ exists.
    let mut packed = Packed {
        e: [[0; LIMBS]; 8],
        r: [radix52_from_be(&params.gx); 8],
        s: [one; 8],
        odd: 0,
        ok: 0,
    };
    for (lane, item) in items.iter().enumerate().take(8) {
        let high_s_refused = rule == SRule::LowOnly && params.is_high_s(&item.s);
        let ok = item.recovery_id <= 1
            && in_range(&item.r, &params.n)
            && in_range(&item.s, &params.n)
            && !high_s_refused;
        if ok {
            packed.e[lane] = radix52_from_be(&item.digest);
            packed.r[lane] = radix52_from_be(&item.r);
            packed.s[lane] = radix52_from_be(&item.s);
            packed.odd |= (item.recovery_id & 1) << lane;
            packed.ok |= 1 << lane;
        }
    }
    packed
}

/// Recovers up to eight records; result l is record l's (`None` past the records).
#[target_feature(enable = "avx512f,avx512ifma")]
pub(crate) fn recover_group(items: &[RecoverItem], rule: SRule) -> [Option<Recovered>; 8] {
    let packed = pack(items, rule);
    let mut ok = packed.ok;

    // R = (r, ±√(r³ + 7)); r < n < p, inside the lanes' [0, 2p) invariant.
    let x = Fp::<Curve>::load(&packed.r).to_mont();
    let rhs = curve_rhs::<Curve>(&x);
    let root = rhs.pow(&SQRT_EXPONENT);
    ok &= root.square().equals(&rhs);
    // Negation commutes with the Montgomery form, so the parity is read from the plain value and
    // the Montgomery value negated. (y ≠ 0: a curve of odd prime order has no point of order 2.)
    let root_odd = _mm512_test_epi64_mask(root.out_of_mont().0[0], splat(1));
    let y = root.select(root_odd ^ packed.odd, &root.neg());

    // u₁ = −e·r⁻¹, u₂ = s·r⁻¹: w = r⁻¹ in Montgomery form, so its product with a plain value is
    // plain. Every digest is below 2²⁵⁶ < 2n, inside the [0, 2n) invariant.
    let e = Scalar::load(&packed.e);
    let r = Scalar::load(&packed.r);
    let s = Scalar::load(&packed.s);
    let w = r.to_mont().invert_public();
    let u1 = e.mul(&w).neg().canonical();
    let u2 = s.mul(&w).canonical();
    let q = lincomb::<Curve>(&u1, &u2, &x, &y);
    // s·R = e·G: Q is infinity, no key.
    ok &= !q.inf & !q.z.is_zero();

    let z_inv = q.z.invert_public();
    let z_inv2 = z_inv.square();
    let qx = q.x.mul(&z_inv2).out_of_mont().store();
    let qy = q.y.mul(&z_inv2).mul(&z_inv).out_of_mont().store();
    core::array::from_fn(|lane| {
        if lane >= items.len() || ok >> lane & 1 == 0 {
            return None;
        }
        let mut pubkey = [4u8; 65];
        pubkey[1..33].copy_from_slice(&be_from_radix52(&qx[lane]));
        pubkey[33..].copy_from_slice(&be_from_radix52(&qy[lane]));
        Some(Recovered::from_pubkey(pubkey))
    })
}
