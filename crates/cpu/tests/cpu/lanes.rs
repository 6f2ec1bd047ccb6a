//! The lane engine against the scalar path, verdict by verdict, in groups of every size from 1 to
//! 8 (ragged tails) on generated records (a third corrupted in the generator's ways) and on
//! adversarial ones built here: r, s at 0, 1, n − 1, n and above; keys off the curve or with
//! coordinates ≥ p; digests ≥ n; signatures whose u₁·G and u₂·Q cancel (the sum is infinity) or
//! coincide (the final addition is a doubling), valid ones among them. Both paths of the CPU
//! backend run on the same batches. (The cross-check and vector tests also reach the lanes,
//! through the backend's automatic choice, against RustCrypto, ring and libsecp256k1.)

use crate::support::{be, lanes_missing};
use chainsig_core::{Algorithm, Backend, Batch, PreparedItem};
use chainsig_cpu::lanes::{self, LaneMode};
use chainsig_cpu::{verify_item, CpuBackend};
use chainsig_testkit::{prepared_items, GenSpec};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn n_of(alg: Algorithm) -> BigUint {
    BigUint::from_bytes_be(&alg.curve().n)
}

/// k·G as affine (x, y), through the independent crates (our SM2 crate for SM2).
fn mul_g(alg: Algorithm, k: &BigUint) -> ([u8; 32], [u8; 32]) {
    let k = be(&(k % n_of(alg)));
    let sec1: Vec<u8> = match alg {
        Algorithm::Sm2 => chainsig_weierstrass::SecretKey::from_bytes(&k)
            .unwrap()
            .public_key()
            .to_uncompressed()
            .to_vec(),
        Algorithm::P256 => {
            use p256::elliptic_curve::sec1::ToSec1Point;
            p256::SecretKey::from_bytes(&k.into())
                .unwrap()
                .public_key()
                .to_sec1_point(false)
                .as_bytes()
                .to_vec()
        }
        Algorithm::Secp256k1 => {
            let secp = secp256k1::Secp256k1::new();
            let sk = secp256k1::SecretKey::from_byte_array(k).unwrap();
            secp256k1::PublicKey::from_secret_key(&secp, &sk)
                .serialize_uncompressed()
                .to_vec()
        }
    };
    (
        sec1[1..33].try_into().unwrap(),
        sec1[33..65].try_into().unwrap(),
    )
}

fn inv(a: &BigUint, n: &BigUint) -> BigUint {
    a.modpow(&(n - 2u32), n)
}

/// Records that drive the exceptional paths, valid and not.
fn adversarial(alg: Algorithm, rng: &mut ChaCha20Rng) -> Vec<PreparedItem> {
    let n = n_of(alg);
    let p = BigUint::from_bytes_be(&alg.curve().p);
    let one = BigUint::from(1u32);
    let (gx, gy) = mul_g(alg, &one);
    let mut out = Vec::new();
    let random = |rng: &mut ChaCha20Rng| BigUint::from_bytes_be(&rng.gen::<[u8; 32]>()) % &n;
    for _ in 0..4 {
        let r = random(rng);
        let s = random(rng);
        let k = random(rng);
        let (kx, _) = mul_g(alg, &k);
        let x_k = BigUint::from_bytes_be(&kx) % &n;
        match alg {
            Algorithm::Sm2 => {
                // Key G: s·G + t·G is infinity when 2s + r ≡ 0.
                let s_cancel = ((&n - &r) * inv(&BigUint::from(2u32), &n)) % &n;
                out.push(item(&one, &r, &s_cancel, gx, gy));
                // Key d·G with d = s/t: s·G = t·Q, the final addition doubles; e chosen so the
                // signature is valid.
                let t = (&r + &s) % &n;
                let d = (&s * inv(&t, &n)) % &n;
                let (qx, qy) = mul_g(alg, &d);
                let (x1, _) = mul_g(alg, &(&s * 2u32));
                let x1 = BigUint::from_bytes_be(&x1);
                let e = (&r + &n * 2u32 - &x1 % &n) % &n;
                out.push(item(&e, &r, &s, qx, qy));
                // The same with e + n (a digest ≥ n, reduced by the verifier) when it fits.
                if &e + &n < (BigUint::from(1u32) << 256) {
                    out.push(item(&(&e + &n), &r, &s, qx, qy));
                }
            }
            _ => {
                // Key G: u₁ + u₂ = (z + r)/s ≡ 0 when z ≡ −r: the sum is infinity.
                out.push(item(&((&n - &r) % &n), &r, &s, gx, gy));
                // Key G, z = r: u₁ = u₂, the final addition doubles; s = 2r/k makes it valid.
                if x_k != BigUint::from(0u32) {
                    let s_valid = (&x_k * 2u32 * inv(&k, &n)) % &n;
                    out.push(item(&x_k, &x_k, &s_valid, gx, gy));
                    out.push(item(&x_k, &x_k, &((&n - &s_valid) % &n), gx, gy));
                    // z + n: the digest ≥ n means the same.
                    if &x_k + &n < (BigUint::from(1u32) << 256) {
                        out.push(item(&(&x_k + &n), &x_k, &s_valid, gx, gy));
                    }
                }
            }
        }
    }
    // Scalars at and past the edges, on an honest key.
    let (qx, qy) = mul_g(alg, &random(rng));
    let edges = [
        BigUint::from(0u32),
        one.clone(),
        &n - 1u32,
        n.clone(),
        &n + 1u32,
        (BigUint::from(1u32) << 256) - 1u32,
    ];
    for r in &edges {
        for s in &edges {
            out.push(item(&random(rng), r, s, qx, qy));
        }
    }
    // Keys off the curve, at coordinates ≥ p, and the digest's extremes.
    let (r, s) = (random(rng), random(rng));
    let off = BigUint::from_bytes_be(&qy) + 1u32;
    out.push(item(&one, &r, &s, qx, be(&(off % &p))));
    out.push(item(
        &one,
        &r,
        &s,
        be(&(BigUint::from_bytes_be(&qx) + &p).min((BigUint::from(1u32) << 256) - 1u32)),
        qy,
    ));
    out.push(item(&one, &r, &s, be(&p), qy));
    out.push(item(&BigUint::from(0u32), &r, &s, qx, qy));
    out.push(item(&((BigUint::from(1u32) << 256) - 1u32), &r, &s, qx, qy));
    out
}

fn item(e: &BigUint, r: &BigUint, s: &BigUint, px: [u8; 32], py: [u8; 32]) -> PreparedItem {
    let clip = |v: &BigUint| be(&v.clone().min((BigUint::from(1u32) << 256) - 1u32));
    PreparedItem {
        e: clip(e),
        r: clip(r),
        s: clip(s),
        px,
        py,
    }
}

/// Verifies `items` in lane groups of sizes cycling 1..=8 and compares with the scalar path.
fn compare(alg: Algorithm, items: &[PreparedItem], what: &str) -> usize {
    let mut valid = 0;
    for low_s in [false, true] {
        let mut at = 0;
        let mut size = 1;
        while at < items.len() {
            let group = &items[at..items.len().min(at + size)];
            let got = lanes::verify_items(alg, low_s, group).expect("lanes available");
            for (k, it) in group.iter().enumerate() {
                let want = verify_item(alg, low_s, it);
                assert_eq!(
                    got[k],
                    want,
                    "{alg} {what} item {} low_s {low_s}: {it:?}",
                    at + k
                );
                valid += want as usize;
            }
            assert!(
                got[group.len()..].iter().all(|v| !v),
                "lanes past the group are false"
            );
            at += group.len();
            size = size % 8 + 1;
        }
    }
    valid
}

#[test]
fn lanes_agree_with_the_scalar_path() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(29);
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 0x1fa ^ alg as u64,
            invalid_ratio: 0.35,
            msg_len: 32,
        };
        let (items, _) = prepared_items(&spec, 600);
        let valid = compare(alg, &items, "generated");
        assert!(valid > 400, "{alg}: {valid} valid verdicts over both rules");
        let hard = adversarial(alg, &mut rng);
        let valid = compare(alg, &hard, "adversarial");
        // The doubling constructions are valid signatures: the exceptional path accepts them.
        assert!(valid >= 4, "{alg}: {valid} adversarial records valid");
    }
}

#[test]
fn the_backend_gives_the_same_bitmap_on_both_paths() {
    if lanes_missing() {
        return;
    }
    let on = CpuBackend::new().with_lane_mode(LaneMode::On);
    let off = CpuBackend::new().with_lane_mode(LaneMode::Off);
    assert!(on.uses_lanes().unwrap());
    assert!(!off.uses_lanes().unwrap());
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 77,
            invalid_ratio: 0.4,
            msg_len: 20,
        };
        let (items, _) = prepared_items(&spec, 203);
        for low_s in [false, true] {
            // A slot that failed preparation sits between good ones.
            let results = items.iter().enumerate().map(|(i, it)| {
                if i == 100 {
                    Err(chainsig_core::RecordError::new("pubkey", "bad"))
                } else {
                    Ok(*it)
                }
            });
            let batch = Batch::from_results(alg, low_s, results);
            let a = on.verify_batch(&batch).unwrap();
            let b = off.verify_batch(&batch).unwrap();
            assert_eq!(a.len(), 203);
            assert!(!a.get(100));
            assert_eq!(
                a.iter().collect::<Vec<_>>(),
                b.iter().collect::<Vec<_>>(),
                "{alg}"
            );
        }
    }
}

#[test]
fn the_environment_switch_is_strict() {
    // Parsing only; the variable itself is not touched here (tests run in parallel).
    assert_eq!(LaneMode::parse("on"), Ok(LaneMode::On));
    assert_eq!(LaneMode::parse("off"), Ok(LaneMode::Off));
    assert_eq!(LaneMode::parse(""), Ok(LaneMode::Auto));
    assert_eq!(LaneMode::parse("auto"), Ok(LaneMode::Auto));
    for bad in ["ON", "yes", "1", " on"] {
        let err = LaneMode::parse(bad).unwrap_err();
        assert!(
            err.contains(lanes::ENV_VAR) && err.contains("expected"),
            "{err}"
        );
    }
    assert_eq!(LaneMode::Off.resolve(), Ok(false));
    assert_eq!(LaneMode::Auto.resolve(), Ok(lanes::available()));
    assert_eq!(LaneMode::On.resolve().is_ok(), lanes::available());
}

/// The release-mode check: a million records per algorithm, lanes against the scalar path (for
/// secp256k1 that is libsecp256k1), ragged groups, valid and invalid records mixed in every group.
/// 65,536 generated records (a third corrupted) are drawn at random, and 5 in 16 of the draws
/// changed: fields swapped between records, r and s set to edge values, digests moved by n, or
/// replaced by an adversarial record. The scalar verdict of an unchanged record is computed once. Run it with
/// `cargo test --release -p chainsig-cpu --test cpu -- lanes:: --ignored --nocapture`.
#[test]
#[ignore = "minutes in release mode; run by hand"]
fn a_million_mixed_records_per_algorithm() {
    use rayon::prelude::*;
    assert!(lanes::available(), "this CPU lacks AVX-512 IFMA");
    const RECORDS: usize = 1_000_000;
    const BASE: usize = 65_536;
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 0xa11 ^ alg as u64,
            invalid_ratio: 0.35,
            msg_len: 32,
        };
        let (base, _) = prepared_items(&spec, BASE);
        // The scalar verdicts of the unchanged records, computed once (the path is
        // deterministic); every changed record gets its own scalar verification below.
        let base_plain: Vec<bool> = base
            .par_iter()
            .map(|it| verify_item(alg, false, it))
            .collect();
        let n = n_of(alg);
        let hard = adversarial(alg, &mut ChaCha20Rng::seed_from_u64(alg as u64));
        let edges = [
            BigUint::from(0u32),
            BigUint::from(1u32),
            &n - 1u32,
            n.clone(),
            (BigUint::from(1u32) << 256) - 1u32,
        ]
        .map(|v| be(&v.min((BigUint::from(1u32) << 256) - 1u32)));
        let started = std::time::Instant::now();
        let (checked, valid) = (0..RECORDS / 4)
            .into_par_iter()
            .map(|g| {
                let mut rng = ChaCha20Rng::seed_from_u64(g as u64);
                let size = rng.gen_range(1..=8);
                let group: Vec<(PreparedItem, Option<bool>)> = (0..size)
                    .map(|_| {
                        let pick = rng.gen_range(0..base.len());
                        let mut it = base[pick];
                        match rng.gen_range(0..16) {
                            0 => it.r = edges[rng.gen_range(0..edges.len())],
                            1 => it.s = edges[rng.gen_range(0..edges.len())],
                            2 => {
                                let other = base[rng.gen_range(0..base.len())];
                                (it.px, it.py) = (other.px, other.py);
                            }
                            3 => {
                                let e = BigUint::from_bytes_be(&it.e) + &n;
                                if e < (BigUint::from(1u32) << 256) {
                                    it.e = be(&e);
                                }
                            }
                            4 => it = hard[rng.gen_range(0..hard.len())],
                            _ => return (it, Some(base_plain[pick])),
                        }
                        (it, None)
                    })
                    .collect();
                let (group, known): (Vec<PreparedItem>, Vec<Option<bool>>) =
                    group.into_iter().unzip();
                // The scalar path runs once per record: its low-s verdict is its plain verdict
                // and s ≤ n/2 (ECDSA; SM2 has no such rule), as the functions are written.
                let plain: Vec<bool> = group
                    .iter()
                    .zip(&known)
                    .map(|(it, known)| known.unwrap_or_else(|| verify_item(alg, false, it)))
                    .collect();
                let mut valid = 0;
                for low_s in [false, true] {
                    let got = lanes::verify_items(alg, low_s, &group).unwrap();
                    for (k, it) in group.iter().enumerate() {
                        let high_s = alg != Algorithm::Sm2 && alg.curve().is_high_s(&it.s);
                        let want = plain[k] && !(low_s && high_s);
                        assert_eq!(
                            got[k], want,
                            "{alg} group {g} item {k} low_s {low_s}: {it:?}"
                        );
                        valid += want as usize;
                    }
                }
                (group.len(), valid)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        println!(
            "{alg}: {checked} records × 2 rules, {valid} valid verdicts, lanes = scalar path on all ({:.0?})",
            started.elapsed()
        );
        assert!(checked >= RECORDS, "{checked} records");
    }
}
