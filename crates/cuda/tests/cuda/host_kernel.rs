//! CI without a GPU: the kernels' arithmetic and verification routine, compiled for the host from
//! the same sources NVRTC compiles, checked against the RustCrypto `sm2` reference and against a
//! bit-serial modular multiplication written here.

use chainsig_cuda::codegen::{ge, sub, words_from_be, Words};
use chainsig_cuda::host;
use chainsig_cuda::HostWords;
use chainsig_cuda::{Inversion, Mode};
use chainsig_testkit::cuda::{affine_words, table_entry_reference};
use chainsig_testkit::sets::{generate, reference_verify};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

use crate::slow;
use slow::{add_mod, mul_mod_slow};

fn p() -> Words {
    words_from_be(&chainsig_core::curve::SM2.p)
}

fn gtable() -> &'static [u32] {
    static T: OnceLock<Vec<u32>> = OnceLock::new();
    T.get_or_init(|| host::build_gtable().expect("fixed-base table"))
}

fn random_below_p(rng: &mut ChaCha20Rng) -> Words {
    loop {
        let mut w = [0u32; 8];
        for x in w.iter_mut() {
            *x = rng.next_u32();
        }
        if !ge(&w, &p()) {
            return w;
        }
    }
}

fn edge_field_values() -> Vec<Words> {
    let p = p();
    let one = [1, 0, 0, 0, 0, 0, 0, 0];
    vec![
        [0; 8],
        one,
        sub(&p, &one),
        sub(&p, &[2, 0, 0, 0, 0, 0, 0, 0]),
        [0xffff_ffff, 0xffff_ffff, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0x8000_0000],
        [
            0xffff_ffff,
            0xffff_ffff,
            0xffff_ffff,
            0xffff_ffff,
            0,
            0,
            0,
            0,
        ],
    ]
}

#[test]
fn small_constant_products_match_bit_serial_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let p = p();
    let mut values = edge_field_values();
    // Values whose multiple lands just above a multiple of 2^256 or of p.
    for k in [3u32, 4, 8] {
        for d in 0..40u32 {
            let near = mul_mod_slow(&[d + 1, 0, 0, 0, 0, 0, 0, 0], &[k, 0, 0, 0, 0, 0, 0, 0], &p);
            values.push(sub(&p, &near));
        }
    }
    for _ in 0..300 {
        values.push(random_below_p(&mut rng));
    }
    for a in &values {
        for k in [3u32, 4, 8] {
            let want = mul_mod_slow(a, &[k, 0, 0, 0, 0, 0, 0, 0], &p);
            assert_eq!(host::fe_mul_small(k, a), Some(want), "{k} * {a:08x?}");
        }
    }
    assert_eq!(host::fe_mul_small(5, &[1, 0, 0, 0, 0, 0, 0, 0]), None);
}

#[test]
fn field_multiplication_matches_bit_serial_reference() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let p = p();
    let mut values = edge_field_values();
    for _ in 0..300 {
        values.push(random_below_p(&mut rng));
    }
    for (i, a) in values.iter().enumerate() {
        let b = &values[(i * 7 + 3) % values.len()];
        assert_eq!(
            host::fe_mul(a, b),
            mul_mod_slow(a, b, &p),
            "a={a:x?} b={b:x?}"
        );
        assert_eq!(
            host::fe_mul(a, a),
            mul_mod_slow(a, a, &p),
            "square a={a:x?}"
        );
    }
    let edges = edge_field_values();
    for a in &edges {
        for b in &edges {
            assert_eq!(host::fe_mul(a, b), mul_mod_slow(a, b, &p));
        }
    }
}

/// t mod p for a 512-bit t, from the bit-serial reference: t_high·2^256 + t_low.
fn reduce_slow(t: &[u32; 16]) -> Words {
    slow::reduce_mod(t, &p())
}

/// Σ_k t[8+k]·(2^(32(8+k)) mod p) as 9 words: the column total the reduction's carry pass sees.
fn column_total(high: &[u32]) -> [u32; 9] {
    let p = p();
    let mut power = sub(&[0; 8], &p);
    let mut total = [0u64; 9];
    for &word in high {
        let mut carry = 0u64;
        for j in 0..8 {
            let x = total[j] + word as u64 * power[j] as u64 + carry;
            total[j] = x & 0xffff_ffff;
            carry = x >> 32;
        }
        total[8] += carry;
        power = mul_mod_slow(&power, &[0, 1, 0, 0, 0, 0, 0, 0], &p);
    }
    total.map(|w| w as u32)
}

#[test]
fn reduction_is_exact_on_every_512_bit_input_including_both_top_folds() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let mut inputs: Vec<[u32; 16]> = vec![[0; 16], [u32::MAX; 16]];
    let mut all_ones_high = [0u32; 16];
    all_ones_high[8..].fill(u32::MAX);
    inputs.push(all_ones_high);
    for _ in 0..2000 {
        let mut t = [0u32; 16];
        t.iter_mut().for_each(|w| *w = rng.next_u32());
        inputs.push(t);
    }
    // Inputs whose first fold carries out, the rare path random products almost never take: choose
    // the low half so the carry pass leaves r = 2^256 − 1 − δ with top carry c ≥ 1 and δ < c·K
    // (K = 2^256 − p), so r + c·K overflows and the second fold runs.
    let k = sub(&[0; 8], &p());
    let mut crafted = 0;
    while crafted < 500 {
        let mut t = [0u32; 16];
        t[8..].iter_mut().for_each(|w| *w = rng.next_u32());
        let h = column_total(&t[8..]);
        let c = h[8];
        if c == 0 {
            continue;
        }
        let mut delta = [0u32; 8];
        delta[..6].iter_mut().for_each(|w| *w = rng.next_u32());
        // t_low = 2^256 − 1 − δ − (h mod 2^256)  (mod 2^256); then t_low + h mod 2^256 = 2^256 − 1 − δ
        // without a carry, so the top carry is exactly c.
        let h_low: Words = h[..8].try_into().unwrap();
        let target = sub(&[u32::MAX; 8], &delta);
        if !ge(&target, &h_low) {
            continue;
        }
        let low = sub(&target, &h_low);
        t[..8].copy_from_slice(&low);
        assert!(
            !ge(&delta, &k),
            "δ must be below c·K for the second fold to run"
        );
        inputs.push(t);
        crafted += 1;
    }
    // Values whose reduction ends in [p, 2^256), or just below p with p's top word: the final
    // subtraction's path, which random products take about once in 2^31 multiplications.
    for i in 0..400u32 {
        let mut d = [0u32; 8];
        d[..7]
            .iter_mut()
            .for_each(|w| *w = rng.next_u32() >> (i % 32));
        d[7] = 0;
        let low = if i % 2 == 0 {
            let sum = add_mod(&p(), &d, &[u32::MAX; 8]); // p + d < 2^256 as d < 2^224
            if ge(&sum, &p()) {
                sum
            } else {
                continue;
            }
        } else {
            sub(&sub(&p(), &[1, 0, 0, 0, 0, 0, 0, 0]), &d)
        };
        let mut t = [0u32; 16];
        t[..8].copy_from_slice(&low);
        inputs.push(t);
    }
    for t in &inputs {
        assert_eq!(host::reduce_wide(t), reduce_slow(t), "t = {t:08x?}");
    }
}

#[test]
fn both_inversions_invert() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let one = [1, 0, 0, 0, 0, 0, 0, 0];
    let mut values = edge_field_values()[1..].to_vec();
    for _ in 0..100 {
        values.push(random_below_p(&mut rng));
    }
    for a in &values {
        for inv in [Inversion::Euclid, Inversion::Fermat] {
            let r = host::fe_inv(inv, a);
            assert_eq!(host::fe_mul(a, &r), one, "{inv:?} of {a:x?}");
        }
    }
    assert_eq!(host::fe_inv(Inversion::Euclid, &[0; 8]), [0; 8]);
}

#[test]
fn decompression_recovers_keys_and_rejects_non_points() {
    let (records, _) = generate(64, 16, 0, 3);
    for rec in &records {
        let w = rec.host_words();
        assert_eq!(host::decompress(&w.px, w.py[0] & 1), Some(w.py));
        assert_eq!(
            host::decompress(&w.px, (w.py[0] & 1) ^ 1).map(|y| y[0] & 1),
            Some((w.py[0] & 1) ^ 1)
        );
    }
    // About half of all x have no point; find some and check they are rejected.
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let mut rejected = 0;
    for _ in 0..64 {
        let x = random_below_p(&mut rng);
        match host::decompress(&x, 0) {
            Some(y) => assert!(host::on_curve(&x, &y)),
            None => rejected += 1,
        }
    }
    assert!(rejected > 10, "too few x without a point: {rejected}");
    assert_eq!(host::decompress(&p(), 0), None, "x = p must be rejected");
    assert_eq!(
        host::decompress(&[0xffff_ffff; 8], 1),
        None,
        "x > p must be rejected"
    );
}

#[test]
fn fixed_base_table_matches_reference_multiples() {
    let t = gtable();
    assert_eq!(t.len(), host::GTABLE_WORDS);
    let w = host::GTABLE_BITS;
    let half = 1usize << (w - 1);
    let windows = 256usize.div_ceil(w);
    // Entry (j, m) = m·2^(w·j)·G, first and last of each checked window, some in between.
    for (j, m) in [
        (0usize, 1usize),
        (0, 2),
        (0, half),
        (1, 1),
        (7, 2000),
        (12, 3),
        (windows - 1, 1),
        (windows - 1, half),
    ] {
        let (idx, want) = table_entry_reference(&sm2::ProjectivePoint::GENERATOR, w, j, m);
        assert_eq!(&t[idx * 16..idx * 16 + 16], &want, "entry ({j}, {m})");
    }
}

#[test]
fn table_sizes_agree_with_the_kernel_source() {
    assert_eq!(
        host::table_words_compiled(),
        (host::GTABLE_WORDS, host::KTABLE_WORDS)
    );
    assert_eq!(host::GTABLE_WORDS, 20 * 4096 * 16);
    assert_eq!(host::KTABLE_WORDS, 29 * 256 * 16);
}

const CONFIGS: [(Mode, Inversion, bool); 7] = [
    (Mode::Fast, Inversion::Euclid, true),
    (Mode::Fast, Inversion::Euclid, false),
    (Mode::Paper, Inversion::Euclid, true),
    (Mode::Paper, Inversion::Fermat, false),
    (Mode::Separate, Inversion::Euclid, true),
    (Mode::Separate, Inversion::Fermat, false),
    (Mode::Paper, Inversion::Fermat, true),
];

#[test]
fn kernel_verification_matches_reference_on_random_and_adversarial_records() {
    let (records, verdicts) = generate(400, 32, 300, 5);
    let valid = verdicts.iter().filter(|v| **v).count();
    assert!(
        valid > 200 && valid < 380,
        "unexpected share of valid records: {valid}"
    );
    for (i, (rec, want)) in records.iter().zip(&verdicts).enumerate() {
        let w = rec.host_words();
        for (mode, inv, compress) in CONFIGS {
            let got = host::verify(mode, inv, compress, &w, gtable());
            assert_eq!(
                got, *want,
                "record {i} {mode:?} {inv:?} compress={compress}: {rec:x?}"
            );
        }
    }
}

#[test]
fn edge_cases_are_decided_as_the_reference_decides() {
    // The first records of every generated set are the hand-built edge cases.
    let (records, verdicts) = generate(20, 8, 0, 6);
    let expected_valid = [
        true, false, false, false, false, false, false, false, false, false, false, false, true,
        true, true, true, true,
    ];
    for (i, want) in expected_valid.iter().enumerate() {
        assert_eq!(verdicts[i], *want, "reference verdict of edge case {i}");
        assert_eq!(reference_verify(&records[i]), *want);
        let w = records[i].host_words();
        for (mode, inv, compress) in CONFIGS {
            assert_eq!(
                host::verify(mode, inv, compress, &w, gtable()),
                *want,
                "edge case {i} {mode:?} {inv:?} {compress}"
            );
        }
    }
}

#[test]
fn multiplication_counts_per_mode() {
    let (records, verdicts) = generate(24, 8, 0, 7);
    let table = gtable(); // built before counting
    for (mode, inv, compress) in CONFIGS {
        host::mul_count_reset();
        let mut n = 0u64;
        for (rec, ok) in records.iter().zip(&verdicts).skip(20) {
            assert!(*ok);
            assert!(host::verify(mode, inv, compress, &rec.host_words(), table));
            n += 1;
        }
        let per = host::mul_count() / n;
        println!(
            "{mode:?} {inv:?} compress={compress}: {per} field multiplications per verification"
        );
        assert!(per > 1000 && per < 8000, "{per}");
    }
}

/// The variable-base window (co-Z table of odd multiples, then the walk) in both of its forms, the
/// Jacobian walk of one thread and of pairs and the modified-Jacobian walk of quads, against
/// RustCrypto's t·P on random points and scalars and on the scalars at the ends of the range
/// (t = 1, 2, n − 1, n − 2, small odd and even values, powers of two).
#[test]
fn window_walks_match_reference_scalar_multiplication() {
    use sm2::elliptic_curve::ff::PrimeField;
    let n = words_from_be(&chainsig_core::curve::SM2.n);
    let be_of = chainsig_cuda::codegen::be_from_words;
    let mut rng = ChaCha20Rng::seed_from_u64(0x77a1);
    let mut scalars: Vec<Words> = Vec::new();
    for small in [1u32, 2, 3, 4, 15, 16, 17, 31, 32, 33, 255, 256] {
        let mut w = [0u32; 8];
        w[0] = small;
        scalars.push(w);
        scalars.push(sub(&n, &w));
    }
    for bit in [31usize, 32, 127, 128, 254, 255] {
        let mut w = [0u32; 8];
        w[bit / 32] = 1 << (bit % 32);
        if !ge(&w, &n) {
            scalars.push(w);
        }
    }
    while scalars.len() < 120 {
        let mut w = [0u32; 8];
        for x in w.iter_mut() {
            *x = rng.next_u32();
        }
        if !ge(&w, &n) && w != [0u32; 8] {
            scalars.push(w);
        }
    }
    for (i, t) in scalars.iter().enumerate() {
        // a fresh point P = d·G for each scalar
        let mut d = [0u32; 8];
        for x in d.iter_mut() {
            *x = rng.next_u32();
        }
        d[7] &= 0x7fff_ffff;
        d[0] |= 1;
        let d = sm2::Scalar::from_repr(be_of(&d).into()).unwrap();
        let p_pt = (sm2::ProjectivePoint::GENERATOR * d).to_affine();
        let (px, py) = affine_words(&p_pt);
        let k = sm2::Scalar::from_repr(be_of(t).into()).unwrap();
        let want = affine_words(&(sm2::ProjectivePoint::from(p_pt) * k).to_affine());
        for modified in [false, true] {
            let got = host::mul_window(modified, t, &px, &py);
            assert_eq!(
                got,
                Some(want),
                "scalar {i} ({t:08x?}), modified walk {modified}"
            );
        }
    }
}

/// The pair and quad kernels' verification (lane forms of the product steps, their shuffles, the
/// quads' modified-Jacobian walk), each lane emulated on the host, against RustCrypto: the edge
/// cases and random records, a third of them corrupted. Every lane must reach the reference's
/// verdict.
#[test]
fn lane_pairs_and_quads_decide_as_the_reference_decides() {
    let (records, verdicts) = generate(40, 8, 300, 8);
    let mut valid = 0;
    for (i, (rec, want)) in records.iter().zip(&verdicts).enumerate() {
        let w = rec.host_words();
        for lanes in [2, 4] {
            assert_eq!(
                host::verify_lanes(lanes, &w, gtable()),
                Some(*want),
                "record {i}, {lanes} lanes: {rec:x?}"
            );
        }
        valid += usize::from(*want);
    }
    assert!((15..40).contains(&valid), "{valid} valid of 40");
}
