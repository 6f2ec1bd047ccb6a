//! The kernels' ECDSA path compiled for P-256 and for secp256k1 on the host
//! (kernels/host_ecdsa.cpp), checked against RustCrypto `p256` and `k256` and bit-serial
//! arithmetic: each curve's field reduction (P-256's negative rows and their bias included), the
//! scalar arithmetic modulo n, G's table, and whole verifications on random, corrupted and
//! edge-case records, with and without the low-s rule.

use chainsig_core::Algorithm;
use chainsig_cuda::codegen::{ge, sub, words_from_be, Words};
use chainsig_cuda::host::{self, EcdsaHost, HostCurve, Modulus};
use chainsig_cuda::HostWords;
use chainsig_testkit::sets::generate_ecdsa as generate;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

use crate::slow;

/// The ECDSA curves, each with its host build and algorithm.
const CURVES: [(HostCurve, Algorithm); 2] = [
    (HostCurve::P256, Algorithm::P256),
    (HostCurve::Secp256k1, Algorithm::Secp256k1),
];

fn host_of(curve: HostCurve) -> EcdsaHost {
    curve.ecdsa().expect("an ECDSA curve")
}

fn p(curve: HostCurve) -> Words {
    words_from_be(&curve.params().p)
}

fn n(curve: HostCurve) -> Words {
    words_from_be(&curve.params().n)
}

fn gtable(curve: HostCurve) -> &'static [u32] {
    static T: [OnceLock<Vec<u32>>; 2] = [OnceLock::new(), OnceLock::new()];
    T[usize::from(curve == HostCurve::Secp256k1)]
        .get_or_init(|| host_of(curve).build_gtable().expect("fixed-base table"))
}

fn random_below(rng: &mut ChaCha20Rng, m: &Words) -> Words {
    loop {
        let mut w = [0u32; 8];
        w.iter_mut().for_each(|x| *x = rng.next_u32());
        if !ge(&w, m) {
            return w;
        }
    }
}

#[test]
fn reductions_are_exact_where_their_rows_pull_hardest() {
    for (curve, _) in CURVES {
        let plan = chainsig_cuda::codegen::reduction(&p(curve)).expect("the curve reduces");
        // A row is negative when its most significant nonzero digit is.
        let negative: Vec<bool> = plan
            .rows
            .iter()
            .map(|row| row.iter().rev().find(|&&d| d != 0).is_some_and(|&d| d < 0))
            .collect();
        // P-256's top word 2^32 - 1 makes most rows negative, with a bias; secp256k1 has neither.
        assert_eq!(
            plan.bias > 0,
            negative.iter().any(|&x| x),
            "{curve:?}: {plan:?}"
        );
        assert_eq!(plan.bias > 0, curve == HostCurve::P256, "{curve:?}");
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
            // A third of them sparse: a few high words set, the rest zero.
            if rng.next_u32() % 3 == 0 {
                for w in t[8..].iter_mut() {
                    if rng.next_u32() % 4 != 0 {
                        *w = 0;
                    }
                }
            }
            inputs.push(t);
        }
        let h = host_of(curve);
        for t in &inputs {
            assert_eq!(
                h.reduce_wide(t),
                slow::reduce_mod(t, &p(curve)),
                "{curve:?}, t = {t:08x?}"
            );
        }
    }
}

#[test]
fn field_products_match_the_bit_serial_reference() {
    for (curve, _) in CURVES {
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        let p = p(curve);
        let mut values = vec![
            [0u32; 8],
            [1, 0, 0, 0, 0, 0, 0, 0],
            sub(&p, &[1, 0, 0, 0, 0, 0, 0, 0]),
        ];
        values.extend((0..40).map(|_| random_below(&mut rng, &p)));
        for a in &values {
            for b in &values {
                assert_eq!(
                    curve.fe_mul(a, b),
                    slow::mul_mod_slow(a, b, &p),
                    "{curve:?}: {a:08x?} * {b:08x?}"
                );
            }
        }
    }
}

const ONE: Words = [1, 0, 0, 0, 0, 0, 0, 0];

/// The values where arithmetic mod m goes wrong first: 1, 2, m − 1, m − 2 and about m / 2.
fn edge_scalars(m: &Words) -> Vec<Words> {
    let two = [2, 0, 0, 0, 0, 0, 0, 0];
    vec![ONE, two, sub(m, &ONE), sub(m, &two), m.map(|w| w >> 1)]
}

#[test]
fn scalar_products_and_inverses_match_the_bit_serial_reference() {
    for (curve, _) in CURVES {
        let mut rng = ChaCha20Rng::seed_from_u64(33);
        let n = n(curve);
        let h = host_of(curve);
        let mut values = edge_scalars(&n);
        values.extend((0..40).map(|_| random_below(&mut rng, &n)));
        for a in &values {
            let inv = h.scalar_inv(a);
            assert!(!ge(&inv, &n), "{curve:?}: inverse of {a:08x?} not reduced");
            assert_eq!(
                slow::mul_mod_slow(a, &inv, &n),
                ONE,
                "{curve:?}: inverse of {a:08x?}"
            );
            for b in values.iter().take(12) {
                assert_eq!(
                    h.scalar_mul(a, b),
                    slow::mul_mod_slow(a, b, &n),
                    "{curve:?}: {a:08x?} * {b:08x?}"
                );
            }
        }
        assert_eq!(h.scalar_mul(&values[5], &[0; 8]), [0; 8]);
    }
}

#[test]
fn a_warps_shared_inversion_gives_every_lane_its_own_inverse() {
    for (curve, _) in CURVES {
        for modulus in [Modulus::Order, Modulus::Field] {
            let mut rng = ChaCha20Rng::seed_from_u64(34);
            let m = match modulus {
                Modulus::Order => n(curve),
                Modulus::Field => p(curve),
            };
            let h = host_of(curve);
            // Whole warps of random values, then warps with edge values, idle lanes (a batch's
            // tail, signatures that failed their checks) at the ends and in between, and one lane
            // alone.
            let mut warps: Vec<([Words; 32], [bool; 32])> = Vec::new();
            for _ in 0..3 {
                warps.push((
                    std::array::from_fn(|_| random_below(&mut rng, &m)),
                    [true; 32],
                ));
            }
            let edges = edge_scalars(&m);
            let x: [Words; 32] = std::array::from_fn(|k| {
                if k % 5 == 0 {
                    edges[k / 5 % edges.len()]
                } else {
                    random_below(&mut rng, &m)
                }
            });
            warps.push((x, std::array::from_fn(|k| k % 7 != 3 && k < 29)));
            warps.push((x, std::array::from_fn(|k| k == 0 || k == 31)));
            warps.push((x, std::array::from_fn(|k| k == 17)));
            warps.push((x, [false; 32]));
            // An idle lane's value never matters: zero there, where an inversion would fail.
            let mut zeros = x;
            zeros[4] = [0; 8];
            let mut used = [true; 32];
            used[4] = false;
            warps.push((zeros, used));
            for (x, used) in &warps {
                let w = h.warp_inverse(modulus, x, used).unwrap_or_else(|| {
                    panic!("{curve:?} {modulus:?}: lanes disagreed on their shuffles")
                });
                for k in 0..32 {
                    // The inverse is the one value below m whose product with x is 1.
                    assert!(
                        !ge(&w[k], &m),
                        "{curve:?} {modulus:?}: lane {k} not reduced"
                    );
                    let got = if used[k] {
                        slow::mul_mod_slow(&x[k], &w[k], &m)
                    } else {
                        w[k]
                    };
                    assert_eq!(got, ONE, "{curve:?} {modulus:?}: lane {k} of {used:?}");
                }
            }
        }
    }
}

/// k·G by the curve's RustCrypto crate, as the kernels' words (x, then y).
fn reference_multiple(curve: HostCurve, doublings: usize, m: u64) -> [u32; 16] {
    macro_rules! multiple {
        ($krate:ident) => {{
            use $krate::elliptic_curve::sec1::ToSec1Point;
            let mut k = $krate::Scalar::from(m);
            for _ in 0..doublings {
                k = k + k;
            }
            let pt = ($krate::ProjectivePoint::GENERATOR * k).to_affine();
            let enc = pt.to_sec1_point(false);
            let b = enc.as_bytes().to_vec();
            b
        }};
    }
    let b = match curve {
        HostCurve::P256 => multiple!(p256),
        _ => multiple!(k256),
    };
    let mut w = [0u32; 16];
    w[..8].copy_from_slice(&words_from_be(b[1..33].try_into().unwrap()));
    w[8..].copy_from_slice(&words_from_be(b[33..65].try_into().unwrap()));
    w
}

#[test]
fn g_table_entries_are_the_reference_multiples() {
    for (curve, _) in CURVES {
        let t = gtable(curve);
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
            let i = j * half + m - 1;
            assert_eq!(
                t[i * 16..i * 16 + 16],
                reference_multiple(curve, host::GTABLE_BITS * j, m as u64),
                "{curve:?}: entry ({j}, {m})"
            );
        }
    }
}

#[test]
fn verification_decides_as_rustcrypto_decides_on_random_corrupted_and_edge_records() {
    for (curve, alg) in CURVES {
        let (records, verdicts) = generate(alg, 1200, 40, 250, 34);
        let (h, gtab) = (host_of(curve), gtable(curve));
        let mut mismatches = Vec::new();
        for (i, (rec, want)) in records.iter().zip(&verdicts).enumerate() {
            for low_s in [false, true] {
                let got = h.verify(low_s, &rec.host_words(), gtab);
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
            "{alg}: {} mismatches: {:?}",
            mismatches.len(),
            &mismatches[..mismatches.len().min(8)]
        );
        // The set exercises both answers under both rules, and the rule itself.
        let valid = verdicts.iter().filter(|v| v.any_s).count();
        let high_s_only = verdicts.iter().filter(|v| v.any_s && !v.low_s).count();
        assert!(valid > 600 && valid < 1150, "{alg}: {valid} valid");
        assert!(
            high_s_only > 100,
            "{alg}: {high_s_only} valid only without low-s"
        );
    }
}

/// The GPU self-test's embedded known answers (src/known_answers.rs): RustCrypto gives every
/// record the recorded verdicts, the host build of the kernels agrees, and the set holds valid,
/// invalid and valid-only-without-low-s records.
#[test]
fn known_answers_agree_with_rustcrypto_and_the_host_build() {
    for (curve, alg) in CURVES {
        let (records, recorded) = chainsig_cuda::known_answers::ecdsa(alg);
        assert!(
            records.len() >= 40,
            "{alg}: {} known answers",
            records.len()
        );
        let (h, gtab) = (host_of(curve), gtable(curve));
        for (i, (rec, want)) in records.iter().zip(&recorded).enumerate() {
            let reference = chainsig_testkit::curves::reference_verdicts(alg, rec);
            assert_eq!(
                (reference.any_s, reference.low_s),
                (want.any_s, want.low_s),
                "{alg}: known answer {i} against RustCrypto"
            );
            for low_s in [false, true] {
                assert_eq!(
                    h.verify(low_s, &rec.host_words(), gtab),
                    want.get(low_s),
                    "{alg}: known answer {i}, low_s {low_s}, host build"
                );
            }
        }
        let count =
            |f: &dyn Fn(&chainsig_core::Verdicts) -> bool| recorded.iter().filter(|v| f(v)).count();
        assert!(count(&|v| v.low_s) >= 8, "{alg}: valid records");
        assert!(count(&|v| !v.any_s) >= 15, "{alg}: invalid records");
        assert!(
            count(&|v| v.any_s && !v.low_s) >= 3,
            "{alg}: high-s records"
        );
    }
}

#[test]
fn edge_cases_are_decided_as_expected() {
    // generate puts its edge cases first, in a fixed order (chainsig_testkit::edges): 0 valid; 1-6 r or
    // s out of range; 7 the high s of 0; 8-11 the sum at infinity; 12-15 u1 G = u2 Q, valid;
    // 16-17 P = G and P = -G, valid; 18-20 digests 1..1, 0 and n, valid.
    let want_any = [
        true, false, false, false, false, false, false, true, false, false, false, false, true,
        true, true, true, true, true, true, true, true,
    ];
    for (curve, alg) in CURVES {
        let (records, verdicts) = generate(alg, 30, 8, 0, 35);
        let any: Vec<bool> = verdicts.iter().map(|v| v.any_s).collect();
        assert_eq!(
            &any[..want_any.len()],
            &want_any,
            "{alg}: the reference's verdicts"
        );
        assert!(!verdicts[7].low_s, "{alg}: high s is refused under low-s");
        let (h, gtab) = (host_of(curve), gtable(curve));
        for (i, rec) in records.iter().enumerate().take(want_any.len()) {
            for low_s in [false, true] {
                assert_eq!(
                    h.verify(low_s, &rec.host_words(), gtab),
                    verdicts[i].get(low_s),
                    "{alg}: edge case {i}, low_s {low_s}"
                );
            }
        }
    }
}

#[test]
fn recovery_finds_the_keys_libsecp256k1_finds() {
    use chainsig_core::RecoverItem;
    use chainsig_cpu::ecdsa_secp256k1::{recover, SRule};
    let curve = HostCurve::Secp256k1;
    let (h, gtab) = (host_of(curve), gtable(curve));
    let (records, verdicts) = generate(Algorithm::Secp256k1, 600, 32, 250, 36);
    let mut rng = ChaCha20Rng::seed_from_u64(37);
    let mut items = chainsig_testkit::sets::recovery_items(&records);
    // Ids 2 and 3 (x = r + n) are refused; random r are no point's x about half the time.
    for id in [2, 3] {
        items.push(RecoverItem {
            recovery_id: id,
            ..items[0]
        });
    }
    for _ in 0..60 {
        let mut r = [0u8; 32];
        rng.fill_bytes(&mut r);
        r[0] &= 0x7f; // below n
        items.push(RecoverItem { r, ..items[0] });
    }
    let (mut found, mut own_keys) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let want = recover(item, SRule::LowOnly).map(|k| k.pubkey);
        let got = h
            .recover(
                &words_from_be(&item.digest),
                &words_from_be(&item.r),
                &words_from_be(&item.s),
                u32::from(item.recovery_id),
                gtab,
            )
            .map(|(x, y)| {
                let mut key = [0u32; 16];
                key[..8].copy_from_slice(&x);
                key[8..].copy_from_slice(&y);
                chainsig_cuda::stage::sec1(&key)
            });
        assert_eq!(got, want, "item {i}: {item:?}");
        found += usize::from(got.is_some());
        if let Some(rec) = records.get(i / 2) {
            let key = [&[4u8][..], &rec.px, &rec.py].concat();
            own_keys += usize::from(got.is_some_and(|k| k[..] == key[..]));
        }
    }
    // Every valid low-s signature recovers its own key under one of the two ids.
    let valid_low = verdicts.iter().filter(|v| v.low_s).count();
    assert_eq!(own_keys, valid_low);
    assert!(
        found > items.len() / 3,
        "{found} of {} recovered",
        items.len()
    );
}
