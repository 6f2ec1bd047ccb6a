//! Sender recovery in lanes against the scalar path (libsecp256k1) and against k256's recovery,
//! key and address, record by record, under both s rules, in groups of every size from 1 to 8:
//! random records (any r, s, digest and id 0..3, so about half of them have no point R), signed
//! records whose signer is known, and adversarial ones built here: r or s at 0, n − 1, n and
//! above, s at n/2 and just past it, digests 0 and ≥ n, ids 2 and 3, r whose x³ + 7 is not a
//! square, and signatures whose key is the point at infinity (s·R = e·G).

use crate::support::{be, lanes_missing, order};
use chainsig_core::{Backend, RecoverItem, Recovered};
use chainsig_cpu::ecdsa_secp256k1::{recover, SRule};
use chainsig_cpu::lanes::{self, LaneMode};
use chainsig_cpu::CpuBackend;
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

fn n() -> BigUint {
    order(&chainsig_core::curve::SECP256K1)
}

/// k256's recovery under our rules (ids 0 and 1 only; s ≤ n/2 under `LowOnly`), the third,
/// independent answer.
fn k256_recover(item: &RecoverItem, rule: SRule) -> Option<Recovered> {
    use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
    use k256::elliptic_curve::sec1::ToSec1Point;
    let high_s = chainsig_core::curve::SECP256K1.is_high_s(&item.s);
    if item.recovery_id > 1 || (rule == SRule::LowOnly && high_s) {
        return None;
    }
    let sig = Signature::from_scalars(item.r, item.s).ok()?;
    let id = RecoveryId::from_byte(item.recovery_id)?;
    let key = VerifyingKey::recover_from_prehash(&item.digest, &sig, id).ok()?;
    let sec1 = key.as_affine().to_sec1_point(false);
    Some(Recovered::from_pubkey(sec1.as_bytes().try_into().ok()?))
}

/// Random records: uniform r, s, digest (some digests and s pushed to the top of their range),
/// ids mostly 0 and 1.
fn random_records(rng: &mut ChaCha20Rng, count: usize) -> Vec<RecoverItem> {
    (0..count)
        .map(|_| {
            let mut item = RecoverItem {
                digest: rng.gen(),
                r: rng.gen(),
                s: rng.gen(),
                recovery_id: if rng.gen_bool(0.9) {
                    rng.gen_range(0..2)
                } else {
                    rng.gen_range(2..4)
                },
            };
            if rng.gen_bool(0.05) {
                item.digest[..16].fill(0xff);
            }
            if rng.gen_bool(0.3) {
                item.s[0] &= 0x7f;
            }
            item
        })
        .collect()
}

/// Signatures by known keys (libsecp256k1 signs), with the address each must recover.
fn signed_records(rng: &mut ChaCha20Rng, count: usize) -> Vec<(RecoverItem, [u8; 20])> {
    let secp = secp256k1::Secp256k1::new();
    (0..count)
        .map(|_| {
            // A random 256-bit value is a valid key but with probability about 2⁻¹²⁸.
            let sk = secp256k1::SecretKey::from_byte_array(rng.gen()).expect("in [1, n)");
            let digest: [u8; 32] = rng.gen();
            let sig = secp.sign_ecdsa_recoverable(secp256k1::Message::from_digest(digest), &sk);
            let (id, compact) = sig.serialize_compact();
            let pk = secp256k1::PublicKey::from_secret_key(&secp, &sk);
            let item = RecoverItem {
                digest,
                r: compact[..32].try_into().unwrap(),
                s: compact[32..].try_into().unwrap(),
                recovery_id: i32::from(id) as u8,
            };
            (
                item,
                Recovered::from_pubkey(pk.serialize_uncompressed()).address,
            )
        })
        .collect()
}

/// Records that reach every refusal and the key at infinity.
fn adversarial(rng: &mut ChaCha20Rng) -> Vec<RecoverItem> {
    let n = n();
    let p = BigUint::from_bytes_be(&chainsig_core::curve::SECP256K1.p);
    let top: BigUint = (BigUint::from(1u32) << 256) - 1u32;
    let half: BigUint = (&n - 1u32) >> 1;
    let random = |rng: &mut ChaCha20Rng| BigUint::from_bytes_be(&rng.gen::<[u8; 32]>()) % &n;
    let mut out = Vec::new();
    let scalars = [
        BigUint::from(0u32),
        BigUint::from(1u32),
        half.clone(),
        &half + 1u32,
        &n - 1u32,
        n.clone(),
        &n + 1u32,
        top.clone(),
    ];
    let digests = [BigUint::from(0u32), &n - 1u32, n.clone(), &n + 5u32, top];
    let valid_r = random(rng);
    for v in &scalars {
        for id in 0..4 {
            let (s, d) = (random(rng), &digests[id as usize % digests.len()]);
            out.push(item(d, v, &s, id));
            out.push(item(d, &valid_r, v, id));
        }
    }
    for d in &digests {
        out.push(item(d, &valid_r, &random(rng), rng.gen_range(0..2)));
    }
    // r without a point: x³ + 7 is not a square mod p.
    let mut no_point = 0;
    while no_point < 8 {
        let r = random(rng);
        let rhs = (r.modpow(&BigUint::from(3u32), &p) + 7u32) % &p;
        if rhs.modpow(&((&p - 1u32) >> 1), &p) != BigUint::from(1u32) {
            out.push(item(&random(rng), &r, &random(rng), rng.gen_range(0..2)));
            no_point += 1;
        }
    }
    // Q at infinity: R = k·G, e = s·k, so s·R − e·G = 0.
    let secp = secp256k1::Secp256k1::new();
    let mut infinite = 0;
    while infinite < 8 {
        let k = random(rng);
        let Ok(sk) = secp256k1::SecretKey::from_byte_array(be(&k)) else {
            continue;
        };
        let point = secp256k1::PublicKey::from_secret_key(&secp, &sk).serialize_uncompressed();
        let x = BigUint::from_bytes_be(&point[1..33]);
        if x >= n {
            continue;
        }
        let s = random(rng);
        let e = (&s * &k) % &n;
        let it = item(&e, &x, &s, point[64] & 1);
        assert_eq!(
            recover(&it, SRule::Any),
            None,
            "the construction is at infinity"
        );
        out.push(it);
        infinite += 1;
    }
    out
}

fn item(digest: &BigUint, r: &BigUint, s: &BigUint, recovery_id: u8) -> RecoverItem {
    RecoverItem {
        digest: be(digest),
        r: be(r),
        s: be(s),
        recovery_id,
    }
}

/// Lanes (groups of sizes cycling 1..=8 from `first`) against libsecp256k1 and k256 under both
/// rules; the number of keys recovered.
fn compare(items: &[RecoverItem], first: usize, what: &str) -> usize {
    let mut starts = Vec::new();
    let (mut at, mut size) = (0, first);
    while at < items.len() {
        starts.push((at, items.len().min(at + size)));
        at += size;
        size = size % 8 + 1;
    }
    starts
        .par_iter()
        .map(|&(from, to)| {
            let group = &items[from..to];
            // Each reference recovers once, under `Any`; under `LowOnly` the scalar path differs
            // only by refusing s > n/2 first (as it is written), so it runs again only there.
            let any: Vec<Option<Recovered>> =
                group.iter().map(|it| recover(it, SRule::Any)).collect();
            let mut found = 0;
            for (k, it) in group.iter().enumerate() {
                assert_eq!(k256_recover(it, SRule::Any), any[k], "k256, {what} {it:?}");
            }
            for rule in [SRule::Any, SRule::LowOnly] {
                let got = lanes::recover_items(rule, group).expect("lanes available");
                for (k, it) in group.iter().enumerate() {
                    let high_s = chainsig_core::curve::SECP256K1.is_high_s(&it.s);
                    let want = match rule {
                        SRule::LowOnly if high_s => recover(it, rule),
                        _ => any[k],
                    };
                    assert_eq!(got[k], want, "{what} item {} {rule:?}: {it:?}", from + k);
                    found += want.is_some() as usize;
                }
                assert!(got[group.len()..].iter().all(Option::is_none));
            }
            found
        })
        .sum()
}

#[test]
fn recovery_in_lanes_agrees_on_a_hundred_thousand_random_records() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0xec);
    let items = random_records(&mut rng, 100_000);
    let found = compare(&items, 1, "random");
    // About half the x have a point; ids 2, 3 and high s under LowOnly refuse more.
    assert!(found > 60_000, "{found} keys over both rules");
}

#[test]
fn recovery_in_lanes_finds_signers_and_refuses_the_adversarial() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0x5e);
    let signed = signed_records(&mut rng, 400);
    for (first, chunk) in signed.chunks(37).enumerate() {
        let items: Vec<RecoverItem> = chunk.iter().map(|(it, _)| *it).collect();
        let mut at = 0;
        for size in (first % 8 + 1..=8).cycle() {
            if at >= items.len() {
                break;
            }
            let group = &items[at..items.len().min(at + size)];
            let got = lanes::recover_items(SRule::LowOnly, group).unwrap();
            for (k, (_, address)) in chunk[at..at + group.len()].iter().enumerate() {
                assert_eq!(got[k].map(|r| r.address), Some(*address), "signer");
            }
            at += group.len();
        }
    }
    let mut hard = adversarial(&mut rng);
    let found = compare(&hard, 3, "adversarial");
    assert!(found >= 10, "{found} adversarial records recovered");
    // The same records interleaved with valid ones, so every group mixes the two.
    hard.extend(signed.iter().map(|(it, _)| *it));
    for _ in 0..3 {
        for i in (1..hard.len()).rev() {
            hard.swap(i, rng.gen_range(0..=i));
        }
        compare(&hard, rng.gen_range(1..=8), "mixed");
    }
}

#[test]
fn the_backend_recovers_the_same_on_both_paths() {
    if lanes_missing() {
        return;
    }
    let on = CpuBackend::new().with_lane_mode(LaneMode::On);
    let off = CpuBackend::new().with_lane_mode(LaneMode::Off);
    let mut rng = ChaCha20Rng::seed_from_u64(203);
    let mut items = random_records(&mut rng, 190);
    items.extend(adversarial(&mut rng).into_iter().take(13));
    for len in [0, 1, 7, 8, 9, 203] {
        let a = on.recover_batch(&items[..len]).unwrap();
        let b = off.recover_batch(&items[..len]).unwrap();
        assert_eq!(a.len(), len);
        assert_eq!(a, b, "{len} records");
    }
}

/// The release-mode check: a million random records and the adversarial ones mixed in, lanes
/// against libsecp256k1 and k256 under both rules. Run it with
/// `cargo test --release -p chainsig-cpu --test cpu -- lanes_recover:: --ignored --nocapture`.
#[test]
#[ignore = "a minute or more in release mode; run by hand"]
fn a_million_records_recovered_in_lanes() {
    assert!(lanes::available(), "this CPU lacks AVX-512 IFMA");
    let started = std::time::Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(0x10_0000);
    let mut items = random_records(&mut rng, 1_000_000);
    let hard = adversarial(&mut rng);
    let len = items.len();
    for (i, it) in hard.iter().enumerate() {
        items[i * 997 % len] = *it;
    }
    let found = compare(&items, 5, "million");
    println!(
        "{} records × 2 rules, {found} keys, lanes = libsecp256k1 = k256 on all ({:.0?})",
        items.len(),
        started.elapsed()
    );
}
