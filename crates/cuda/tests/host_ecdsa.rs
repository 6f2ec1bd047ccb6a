//! The kernels' ECDSA path compiled for P-256 on the host (kernels/host_ecdsa.cpp), checked against
//! RustCrypto `p256` and bit-serial arithmetic: P-256's field reduction (negative rows and their
//! bias), the scalar arithmetic modulo n, G's table, and whole verifications on random,
//! corrupted and edge-case records, with and without the low-s rule.

use chainsig_core::curve::P256;
use chainsig_cuda::codegen::{ge, sub, words_from_be, Words};
use chainsig_cuda::host::{self, p256 as hp};
use chainsig_cuda::testdata_ecdsa::{generate_p256, scalar_from_be, scalar_to_be};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

mod slow;

fn p() -> Words {
    words_from_be(&P256.p)
}

fn n() -> Words {
    words_from_be(&P256.n)
}

fn gtable() -> &'static [u32] {
    static T: OnceLock<Vec<u32>> = OnceLock::new();
    T.get_or_init(|| hp::build_gtable().expect("P-256 fixed-base table"))
}

fn random_words(rng: &mut ChaCha20Rng) -> Words {
    let mut w = [0u32; 8];
    w.iter_mut().for_each(|x| *x = rng.next_u32());
    w
}

fn random_below(rng: &mut ChaCha20Rng, m: &Words) -> Words {
    loop {
        let w = random_words(rng);
        if !ge(&w, m) {
            return w;
        }
    }
}

/// Big-endian bytes of little-endian words.
fn be(w: &Words) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (j, word) in w.iter().enumerate() {
        out[28 - 4 * j..32 - 4 * j].copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[test]
fn the_reduction_is_exact_where_negative_rows_pull_hardest() {
    // P-256's rows for 2^(32k) mod p are partly negative, so the generated reduction adds a bias
    // of 8p; the extreme inputs put all ones exactly under the negative (or positive) digits.
    let plan = chainsig_cuda::codegen::reduction(&p()).expect("P-256 reduces");
    assert!(plan.bias > 0, "P-256 needs the bias: {plan:?}");
    let negative: Vec<bool> = plan
        .rows
        .iter()
        .map(|row| row.iter().rev().find(|&&d| d != 0).is_some_and(|&d| d < 0))
        .collect();
    assert!(
        negative.iter().any(|&x| x),
        "some row is a negative representative"
    );
    let mut inputs: Vec<[u32; 16]> = vec![[0; 16], [u32::MAX; 16]];
    for low in [[0u32; 8], [u32::MAX; 8]] {
        for want_negative in [true, false] {
            let mut t = [0u32; 16];
            t[..8].copy_from_slice(&low);
            for (k, &neg) in negative.iter().enumerate() {
                t[8 + k] = if neg == want_negative { u32::MAX } else { 0 };
            }
            inputs.push(t);
        }
    }
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    for _ in 0..3000 {
        let mut t = [0u32; 16];
        t.iter_mut().for_each(|w| *w = rng.next_u32());
        // A third of them sparse: single high words set, the rest zero.
        if rng.next_u32() % 3 == 0 {
            for w in t[8..].iter_mut() {
                if rng.next_u32() % 4 != 0 {
                    *w = 0;
                }
            }
        }
        inputs.push(t);
    }
    for t in &inputs {
        assert_eq!(
            hp::reduce_wide(t),
            slow::reduce_mod(t, &p()),
            "t = {t:08x?}"
        );
    }
}

#[test]
fn field_products_match_the_bit_serial_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(32);
    let p = p();
    let mut values = vec![
        [0u32; 8],
        [1, 0, 0, 0, 0, 0, 0, 0],
        sub(&p, &[1, 0, 0, 0, 0, 0, 0, 0]),
    ];
    values.extend((0..40).map(|_| random_below(&mut rng, &p)));
    for a in &values {
        for b in &values {
            assert_eq!(
                hp::fe_mul(a, b),
                slow::mul_mod_slow(a, b, &p),
                "{a:08x?} * {b:08x?}"
            );
        }
    }
}

#[test]
fn scalar_products_and_inverses_match_p256() {
    let mut rng = ChaCha20Rng::seed_from_u64(33);
    let n = n();
    let one = [1, 0, 0, 0, 0, 0, 0, 0];
    let mut values = vec![
        one,
        [2, 0, 0, 0, 0, 0, 0, 0],
        sub(&n, &one),
        sub(&n, &[2, 0, 0, 0, 0, 0, 0, 0]),
    ];
    values.push(words_from_be(&P256.n).map(|w| w >> 1)); // about n / 2
    values.extend((0..60).map(|_| random_below(&mut rng, &n)));
    for a in &values {
        let sa = scalar_from_be(&be(a)).expect("below n");
        let inv = hp::scalar_inv(a);
        let want = Option::<p256::Scalar>::from(sa.invert()).expect("nonzero");
        assert_eq!(be(&inv), scalar_to_be(&want), "inverse of {a:08x?}");
        assert_eq!(hp::scalar_mul(a, &inv), one);
        for b in values.iter().take(12) {
            let sb = scalar_from_be(&be(b)).expect("below n");
            assert_eq!(
                be(&hp::scalar_mul(a, b)),
                scalar_to_be(&(sa * sb)),
                "{a:08x?} * {b:08x?}"
            );
        }
    }
    assert_eq!(hp::scalar_mul(&values[5], &[0; 8]), [0; 8]);
}

#[test]
fn g_table_entries_are_the_reference_multiples() {
    use p256::elliptic_curve::sec1::ToSec1Point;
    let t = gtable();
    assert_eq!(t.len(), host::GTABLE_WORDS);
    let half = 1usize << (host::GTABLE_BITS - 1);
    for (j, m) in [
        (0, 1),
        (0, 2),
        (0, half),
        (1, 1),
        (7, 1234),
        (19, half),
        (19, 1),
    ] {
        let mut k = p256::Scalar::from(m as u64);
        for _ in 0..host::GTABLE_BITS * j {
            k = k + k;
        }
        let pt = (p256::ProjectivePoint::GENERATOR * k).to_affine();
        let enc = pt.to_sec1_point(false);
        let b = enc.as_bytes();
        let x = words_from_be(b[1..33].try_into().unwrap());
        let y = words_from_be(b[33..65].try_into().unwrap());
        let i = j * half + m - 1;
        assert_eq!(&t[i * 16..i * 16 + 8], &x, "x of entry ({j}, {m})");
        assert_eq!(&t[i * 16 + 8..i * 16 + 16], &y, "y of entry ({j}, {m})");
    }
}

#[test]
fn verification_decides_as_p256_decides_on_random_corrupted_and_edge_records() {
    let (records, verdicts) = generate_p256(1200, 40, 250, 34);
    let gtab = gtable();
    let mut mismatches = Vec::new();
    for (i, (rec, want)) in records.iter().zip(&verdicts).enumerate() {
        for low_s in [false, true] {
            let got = hp::verify(low_s, &rec.host_words(), gtab);
            if got != want.get(low_s) {
                mismatches.push(format!(
                    "record {i} (low_s {low_s}): kernel {got}, reference {}",
                    want.get(low_s)
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(8)]
    );
    // The set exercises both answers under both rules, and the rule itself.
    let valid = verdicts.iter().filter(|v| v.any_s).count();
    let high_s_only = verdicts.iter().filter(|v| v.any_s && !v.low_s).count();
    assert!(valid > 600 && valid < 1150, "{valid} valid");
    assert!(high_s_only > 100, "{high_s_only} valid only without low-s");
}

#[test]
fn edge_cases_are_decided_as_expected() {
    // generate_p256 puts its edge cases first, in a fixed order (testdata_ecdsa.rs).
    let (records, verdicts) = generate_p256(30, 8, 0, 35);
    let gtab = gtable();
    let any: Vec<bool> = verdicts.iter().map(|v| v.any_s).collect();
    // 0: valid; 1-6: r or s out of range; 7: the high s of 0; 8-11: the sum at infinity;
    // 12-15: u1 G = u2 Q, valid; 16-17: P = G and P = -G, valid; 18-20: digests 1..1, 0 and n.
    let want_any = [
        true, false, false, false, false, false, false, true, false, false, false, false, true,
        true, true, true, true, true, true, true, true,
    ];
    assert_eq!(
        &any[..want_any.len()],
        &want_any,
        "the reference's verdicts"
    );
    assert!(!verdicts[7].low_s, "high s is refused under low-s");
    for (i, rec) in records.iter().enumerate().take(want_any.len()) {
        for low_s in [false, true] {
            assert_eq!(
                hp::verify(low_s, &rec.host_words(), gtab),
                verdicts[i].get(low_s),
                "edge case {i}, low_s {low_s}"
            );
        }
    }
}
