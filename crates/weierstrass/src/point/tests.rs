//! The point layer against plain affine arithmetic, and its scalar multiplications against
//! each other (with helpers the scalar and verification tests reuse).

use super::*;
use crate::scalar::{Scalar, N};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// The first point whose x is n + j for j = 0, 1, … (below p for both curves), with that x as
/// an integer: it takes the rare branch of [`Jacobian::x_mod_n_equals`], x mod n = x − n.
pub(crate) fn point_with_x_above_n<C: Curve>() -> (Limbs, Affine<C>) {
    (0u64..)
        .find_map(|j| {
            let (x_int, _) = limbs::add(&C::N.m, &[j, 0, 0, 0]);
            let x = FieldElement::<C>::from_int(x_int);
            curve_rhs(&x).sqrt().map(|y| (x_int, Affine { x, y }))
        })
        .expect("some x just above n has a point")
}

/// Plain double-and-add, the slow reference.
pub(crate) fn mul_reference<C: Curve>(k: &Limbs, p: &Affine<C>) -> Jacobian<C> {
    let mut acc = Jacobian::INFINITY;
    for bit in (0..256).rev() {
        acc = acc.double();
        if (k[bit / 64] >> (bit % 64)) & 1 == 1 {
            acc = acc.add_affine_vartime(p);
        }
    }
    acc
}

fn same(a: &Jacobian, b: &Jacobian) -> bool {
    a.to_affine() == b.to_affine()
}

fn random_scalar(rng: &mut ChaCha20Rng) -> Limbs {
    let mut bytes = [0u8; 32];
    rng.fill(&mut bytes);
    Scalar::reduce_bytes(&bytes).0
}

#[test]
fn generator_is_on_curve_and_has_order_n() {
    assert!(GENERATOR.is_on_curve());
    assert!(mul_reference(&N.m, &GENERATOR).is_infinity());
}

#[test]
fn tables_are_right() {
    for (i, p) in g_odd_multiples().iter().enumerate() {
        let k = [2 * i as u64 + 1, 0, 0, 0];
        assert_eq!(Some(*p), mul_reference(&k, &GENERATOR).to_affine());
    }
    let comb = comb_table();
    for (i, window) in [0usize, 1, 31, 63].iter().map(|&i| (i, comb[i])) {
        for (j, p) in window.iter().enumerate() {
            let mut k = [0u64; 4];
            k[(4 * i) / 64] = ((j as u64) + 1) << ((4 * i) % 64);
            // (j+1)·16^i may spill over a limb boundary only for j+1 ≥ 16, which never happens.
            assert_eq!(Some(*p), mul_reference(&k, &GENERATOR).to_affine());
        }
    }
}

#[test]
fn wnaf_recomposes() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let n_minus_1 = limbs::sub(&N.m, &[1, 0, 0, 0]).0;
    let mut cases = vec![[1, 0, 0, 0], n_minus_1, [u64::MAX; 4], [0, 0, 0, 1 << 63]];
    for _ in 0..50 {
        cases.push(random_scalar(&mut rng));
    }
    for k in cases {
        for w in [2usize, 4, 5, 8] {
            let digits = wnaf(&k, w);
            let mut acc = num_bigint::BigInt::from(0);
            for d in digits.iter().rev() {
                acc = acc * 2 + d;
                assert!(*d == 0 || (d % 2 != 0 && d.abs() < (1 << (w - 1))));
            }
            let expected =
                num_bigint::BigInt::from_bytes_be(num_bigint::Sign::Plus, &limbs::to_be_bytes(&k));
            assert_eq!(acc, expected);
        }
    }
}

#[test]
fn scalar_multiplications_match_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let n_minus_1 = limbs::sub(&N.m, &[1, 0, 0, 0]).0;
    let half = limbs::sub(&N.m, &[1, 0, 0, 0]).0;
    let half = [
        (half[0] >> 1) | (half[1] << 63),
        (half[1] >> 1) | (half[2] << 63),
        (half[2] >> 1) | (half[3] << 63),
        half[3] >> 1,
    ];
    let mut ks = vec![
        [1, 0, 0, 0],
        [2, 0, 0, 0],
        [8, 0, 0, 0],
        [9, 0, 0, 0],
        n_minus_1,
        half,
        limbs::add(&half, &[1, 0, 0, 0]).0,
        [0x8888_8888_8888_8888; 4],
        [0, 0, 0, 0x7fff_ffff_ffff_ffff],
    ];
    for _ in 0..20 {
        ks.push(random_scalar(&mut rng));
    }
    for k in &ks {
        let reference = mul_reference(k, &GENERATOR);
        assert!(same(&mul_base_ct(k), &reference), "k·G for {k:x?}");
    }
    let p = mul_reference(&random_scalar(&mut rng), &GENERATOR)
        .to_affine()
        .unwrap();
    for pair in ks.windows(2) {
        let (s, t) = (pair[0], pair[1]);
        let expected = mul_reference(&s, &GENERATOR).add_vartime(&mul_reference(&t, &p));
        assert!(same(&lincomb_vartime(&s, &t, &p), &expected));
    }
    // P = G and P = −G exercise the doubling and cancellation paths of the additions.
    let s = random_scalar(&mut rng);
    let t = Scalar::new(s).neg().0;
    assert!(lincomb_vartime(&s, &t, &GENERATOR).is_infinity());
    let expected = mul_reference(&Scalar::new(s).add(&Scalar::new(s)).0, &GENERATOR);
    assert!(same(&lincomb_vartime(&s, &s, &GENERATOR), &expected));
    assert!(same(
        &lincomb_vartime(&s, &s, &GENERATOR.neg()),
        &Jacobian::INFINITY
    ));
}
