//! Exhaustive test of the crate's generic point and scalar code on curves whose group has a small
//! prime order q (`chainsig_core::curve::small_order`: SM2's and P-256's fields, a = −3, another
//! b), in the manner of libsecp256k1's `tests_exhaustive.c`: every doubling, every sum of two
//! points (mixed and Jacobian, every exceptional case), every point's decompression, the
//! comparison x(R) mod n = c for every point, and the scalar arithmetic for every pair of
//! residues, each checked against multiples k·G formed here by repeated textbook affine addition.
//! The point formulas never use b (only the curve equation does), so they are the same code as on
//! the real curves.
//!
//! Not reachable with a group of order q, and covered elsewhere (point.rs, p256.rs, scalar.rs
//! tests against the real curves and RustCrypto):
//! - `lincomb_vartime`: its table of G's odd multiples up to 511·G would hold infinity (q < 512),
//!   which the table's affine form cannot store.
//! - `mul_base_ct`: its unchecked additions rely on the order exceeding every partial sum of the
//!   comb (n > 2²⁵⁵); in a group of order q they meet doublings and cancellations by design.
//! - `GroupScalar::invert`: Fermat's n − 2 exponent inverts only modulo a prime, and the test
//!   curves' n = q·c is not one (see `small_order`).

use crate::curve::Curve;
use crate::field::FieldElement;
use crate::limbs::{self, Limbs};
use crate::point::{Affine, Jacobian};
use crate::scalar::GroupScalar;
use chainsig_core::curve::small_order::{SmallOrderCurve, P256_FIELD, SM2_FIELD};
use chainsig_core::curve::CurveParams;
use std::sync::OnceLock;

macro_rules! small_order_curve {
    ($name:ident, $curve:expr) => {
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        struct $name;

        impl $name {
            const SMALL: SmallOrderCurve = $curve;
        }

        impl Curve for $name {
            const PARAMS: CurveParams = $curve.params;

            fn g_odd_multiples_cell() -> &'static OnceLock<Vec<Affine<Self>>> {
                static CELL: OnceLock<Vec<Affine<$name>>> = OnceLock::new();
                &CELL
            }

            fn comb_cell() -> &'static OnceLock<Vec<[Affine<Self>; 8]>> {
                static CELL: OnceLock<Vec<[Affine<$name>; 8]>> = OnceLock::new();
                &CELL
            }
        }
    };
}
small_order_curve!(Sm2Field, SM2_FIELD);
small_order_curve!(P256Field, P256_FIELD);

/// The textbook affine sum (the reference), None for infinity.
fn affine_sum<C: Curve>(a: Option<Affine<C>>, b: Option<Affine<C>>) -> Option<Affine<C>> {
    let (Some(a), Some(b)) = (a, b) else {
        return a.or(b);
    };
    let lambda = if a.x == b.x {
        if a.y.add(&b.y).is_zero() {
            return None;
        }
        // (3x² + a)/(2y) with a = −3
        let three = FieldElement::<C>::from_int([3, 0, 0, 0]);
        a.x.square()
            .mul(&three)
            .sub(&three)
            .mul(&a.y.double().invert())
    } else {
        b.y.sub(&a.y).mul(&b.x.sub(&a.x).invert())
    };
    let x = lambda.square().sub(&a.x).sub(&b.x);
    let y = lambda.mul(&a.x.sub(&x)).sub(&a.y);
    Some(Affine { x, y })
}

/// k·G for k < q by repeated addition; checks that G has order exactly q.
fn multiples<C: Curve>(q: u32) -> Vec<Option<Affine<C>>> {
    let g = Affine::<C>::GENERATOR;
    assert!(g.is_on_curve(), "{}: G is not on the curve", C::PARAMS.name);
    let mut m = vec![None, Some(g)];
    for k in 2..q {
        let next = affine_sum(m[k as usize - 1], Some(g));
        assert!(next.is_some(), "{}: {k}·G is infinity", C::PARAMS.name);
        m.push(next);
    }
    assert!(affine_sum(m[q as usize - 1], Some(g)).is_none(), "q·G ≠ ∞");
    m
}

/// The point on the Z lam (lam ≠ 0), or infinity (Z = 0 with other X, Y) for None.
fn on_z<C: Curve>(p: Option<Affine<C>>, lam: u64) -> Jacobian<C> {
    let lam = FieldElement::<C>::from_int([lam, 0, 0, 0]);
    match p {
        None => Jacobian {
            x: lam,
            y: lam.double(),
            z: FieldElement::<C>::ZERO,
        },
        Some(p) => {
            let l2 = lam.square();
            Jacobian {
                x: p.x.mul(&l2),
                y: p.y.mul(&l2).mul(&lam),
                z: lam,
            }
        }
    }
}

fn check_group_law<C: Curve>(q: u32) -> usize {
    let m = multiples::<C>(q);
    let at = |k: u32| m[(k % q) as usize];
    let mut checked = 0;
    for i in 0..q {
        let r = on_z(at(i), u64::from(i) * 7 + 3);
        assert_eq!(r.double().to_affine(), at(2 * i), "2·{i}G");
        assert_eq!(r.to_affine(), at(i), "{i}G to affine");
        for j in 0..q {
            let s = on_z(at(j), u64::from(j) * 11 + 5);
            assert_eq!(r.add_vartime(&s).to_affine(), at(i + j), "{i}G + {j}G");
            if let Some(qa) = at(j) {
                assert_eq!(
                    r.add_affine_vartime(&qa).to_affine(),
                    at(i + j),
                    "{i}G + {j}G"
                );
            }
            checked += 2;
        }
        checked += 2;
    }
    checked
}

fn check_points<C: Curve>(q: u32) -> usize {
    let m = multiples::<C>(q);
    let n = C::N.m;
    // n here is a multiple of q standing in for the order (chainsig_core's small_order).
    assert!(
        residue(&n, q) == 0,
        "{}: q does not divide n",
        C::PARAMS.name
    );
    let mut checked = 0;
    for (k, p) in m.iter().enumerate().skip(1) {
        let p = p.expect("finite");
        assert!(p.is_on_curve());
        // Decompression (the one use of b) recovers every point from x and y's parity, and the
        // SEC1 forms round-trip.
        let x = p.x.to_bytes();
        assert_eq!(crate::decompress::<C>(&x, p.y.is_odd()), Ok(p), "{k}G");
        assert_eq!(crate::affine_from_sec1::<C>(&p.sec1_compressed()), Ok(p));
        assert_eq!(crate::affine_from_sec1::<C>(&p.sec1_uncompressed()), Ok(p));
        assert_eq!(p.neg().y.add(&p.y), FieldElement::<C>::ZERO);
        // x(kG) mod n = c for c = x mod n, and for no neighbour, on a Z other than 1.
        let x_int = p.x.to_int();
        let c = limbs::reduce_once(&x_int, 0, &n);
        let r = on_z(Some(p), 0x1234_5678 + k as u64);
        assert!(r.x_mod_n_equals(&c), "x({k}G) mod n");
        let (c_next, _) = limbs::add(&c, &[1, 0, 0, 0]);
        assert!(!r.x_mod_n_equals(&c_next), "x({k}G) mod n + 1");
        checked += 5;
    }
    checked
}

/// Scalars mod n for every pair of residues mod q: representatives a, a + q and the largest below
/// n of each, their sum, difference and product checked exactly mod n (against `num-bigint`) and
/// so mod q, which is all the group sees of them.
fn check_scalars<C: Curve>(q: u32) -> usize {
    use num_bigint::BigUint;
    let n = C::N.m;
    let big = |v: &Limbs| BigUint::from_bytes_be(&limbs::to_be_bytes(v));
    let n_big = big(&n);
    let reps = |a: u32| -> [Limbs; 3] {
        // The largest representative below n: n − 1 stepped down to the residue a (< q steps).
        let mut top = limbs::sub(&n, &[1, 0, 0, 0]).0;
        while residue(&top, q) != a {
            top = limbs::sub(&top, &[1, 0, 0, 0]).0;
        }
        [[u64::from(a), 0, 0, 0], [u64::from(a + q), 0, 0, 0], top]
    };
    let mut checked = 0;
    for a in 0..q {
        for b in 0..q {
            for (i, ra) in reps(a).into_iter().enumerate() {
                let rb = reps(b)[(i + b as usize) % 3];
                let (x, y) = (GroupScalar::<C>::new(ra), GroupScalar::<C>::new(rb));
                let (xb, yb) = (big(&ra), big(&rb));
                for (got, want, what) in [
                    (x.mul(&y), &xb * &yb % &n_big, "a·b"),
                    (x.add(&y), (&xb + &yb) % &n_big, "a + b"),
                    (x.sub(&y), (&xb + &n_big - &yb) % &n_big, "a − b"),
                ] {
                    assert_eq!(
                        big(&got.0),
                        want,
                        "{what} for {a}, {b} (representative {i})"
                    );
                    checked += 1;
                }
            }
        }
    }
    checked
}

/// v mod q for a 256-bit v.
fn residue(v: &Limbs, q: u32) -> u32 {
    let q = u128::from(q);
    let mut r = 0u128;
    for limb in v.iter().rev() {
        r = ((r << 64) | u128::from(*limb)) % q;
    }
    r as u32
}

#[test]
fn every_sum_and_doubling_on_small_order_curves() {
    let checked = check_group_law::<Sm2Field>(Sm2Field::SMALL.q)
        + check_group_law::<P256Field>(P256Field::SMALL.q);
    eprintln!("{checked} sums and doublings checked");
}

#[test]
fn every_point_decompresses_and_compares_mod_n() {
    let checked =
        check_points::<Sm2Field>(Sm2Field::SMALL.q) + check_points::<P256Field>(P256Field::SMALL.q);
    eprintln!("{checked} points checked");
}

#[test]
fn scalar_arithmetic_for_every_pair_of_residues() {
    let checked = check_scalars::<Sm2Field>(Sm2Field::SMALL.q)
        + check_scalars::<P256Field>(P256Field::SMALL.q);
    eprintln!("{checked} scalar operations checked");
}
