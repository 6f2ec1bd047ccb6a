//! Per-core verification rate of the lanes against the scalar path (for secp256k1 the scalar path
//! is libsecp256k1 itself), and the same for Ethereum sender recovery (lanes against
//! libsecp256k1's `recover_ecdsa`), measured in one run, rounds interleaved so a noisy shared
//! machine affects both sides alike; prints each rate and the ratio. One thread throughout.
//!
//! Signing too: the constant-time lane signer (`lanes::sign_secp256k1`) against libsecp256k1's
//! `sign_ecdsa_recoverable` (its context made once, not re-randomised), byte for byte the same
//! signatures, and the cost of one lane call for groups of 1 to 8 (where lanes start to pay); and
//! SM2 signing with given nonces, lanes against chainsig-weierstrass's scalar signer. And key
//! decompression (`-- decompress`): compressed SEC1 keys made whole in lanes against the scalar
//! path's `decode_pubkey` (libsecp256k1 for secp256k1, chainsig-weierstrass for SM2 and P-256).
//!
//! `cargo bench -p chainsig-cpu --bench lanes` (add `-- 8192` for another batch size, `-- recover`
//! for recovery alone, `-- sign` for signing alone, `-- recover once-scalar` or `once-lanes` for a single pass of one side, the
//! shape to run under `valgrind --tool=callgrind`).

use chainsig_core::{Algorithm, PreparedItem, RecoverItem};
use chainsig_cpu::ecdsa_secp256k1::{recover, SRule};
use chainsig_cpu::{lanes, verify_item};
use chainsig_testkit::{prepared_items, GenSpec};
use std::time::Instant;

/// The best rates (items/s over `n` items) of five rounds, each running `scalar` then `lanes`
/// (interleaved, so both see the same machine); `check` gets each round's two results.
fn best_of_five<T>(
    n: usize,
    scalar: impl Fn() -> T,
    lanes: impl Fn() -> T,
    check: impl Fn(T, T),
) -> (f64, f64) {
    let timed = |f: &dyn Fn() -> T| {
        let start = Instant::now();
        let out = std::hint::black_box(f());
        (n as f64 / start.elapsed().as_secs_f64(), out)
    };
    let (mut best_scalar, mut best_lanes) = (0f64, 0f64);
    for _ in 0..5 {
        let (s, vs) = timed(&scalar);
        let (l, vl) = timed(&lanes);
        check(vs, vl);
        best_scalar = best_scalar.max(s);
        best_lanes = best_lanes.max(l);
    }
    (best_scalar, best_lanes)
}

/// `size` transactions' worth of recovery records: libsecp256k1 signatures by distinct keys, each
/// recovering its signer under EIP-2's low-s rule.
fn recover_items(size: usize) -> Vec<RecoverItem> {
    let secp = secp256k1::Secp256k1::new();
    (0..size as u64)
        .map(|i| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i + 1).to_be_bytes());
            key[31] = 0x5a;
            let sk = secp256k1::SecretKey::from_byte_array(key).expect("a valid key");
            let digest = chainsig_core::hash::keccak256(&key);
            let sig = secp.sign_ecdsa_recoverable(secp256k1::Message::from_digest(digest), &sk);
            let (id, compact) = sig.serialize_compact();
            RecoverItem {
                digest,
                r: compact[..32].try_into().expect("32 bytes"),
                s: compact[32..].try_into().expect("32 bytes"),
                recovery_id: i32::from(id) as u8,
            }
        })
        .collect()
}

fn recovered_scalar(items: &[RecoverItem]) -> usize {
    items
        .iter()
        .filter(|it| recover(it, SRule::LowOnly).is_some())
        .count()
}

fn recovered_lanes(items: &[RecoverItem]) -> usize {
    items
        .chunks(lanes::LANES)
        .map(|g| {
            let got = lanes::recover_items(SRule::LowOnly, g).expect("lanes available");
            got.iter().filter(|r| r.is_some()).count()
        })
        .sum()
}

/// Recovery, lanes against libsecp256k1, or one pass of one side (`once`).
fn bench_recovery(size: usize, once: Option<&str>) {
    let items = recover_items(size);
    match once {
        Some("once-scalar") => {
            println!("libsecp256k1 recovered {}", recovered_scalar(&items));
            return;
        }
        Some(_) => {
            println!("lanes recovered {}", recovered_lanes(&items));
            return;
        }
        None => {}
    }
    recovered_lanes(&items[..8.min(items.len())]);
    let (best_scalar, best_lanes) = best_of_five(
        size,
        || recovered_scalar(&items),
        || recovered_lanes(&items),
        |vs, vl| assert_eq!((vs, vl), (size, size), "every signer recovered"),
    );
    println!(
        " ecrecover: lanes {best_lanes:>8.0}/s   libsecp256k1 {best_scalar:>8.0}/s   ratio {:.2}",
        best_lanes / best_scalar
    );
}

/// `size` (key, digest) pairs, keys distinct.
fn sign_pairs(size: usize) -> Vec<(secp256k1::SecretKey, [u8; 32])> {
    (0..size as u64)
        .map(|i| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i + 1).to_be_bytes());
            key[31] = 0x5a;
            let sk = secp256k1::SecretKey::from_byte_array(key).expect("a valid key");
            (sk, chainsig_core::hash::keccak256(&key))
        })
        .collect()
}

/// Signing, lanes against libsecp256k1, rounds interleaved; then the time of one lane call per
/// group size against that many libsecp256k1 signatures.
fn bench_signing(size: usize) {
    let pairs = sign_pairs(size);
    let secp = secp256k1::Secp256k1::signing_only();
    let scalar = |pairs: &[(secp256k1::SecretKey, [u8; 32])]| -> u8 {
        pairs
            .iter()
            .map(|(k, d)| {
                let sig = secp.sign_ecdsa_recoverable(secp256k1::Message::from_digest(*d), k);
                sig.serialize_compact().1[63]
            })
            .fold(0, |a, b| a ^ b)
    };
    let lane = |pairs: &[(secp256k1::SecretKey, [u8; 32])]| -> u8 {
        pairs
            .chunks(lanes::LANES)
            .map(|g| {
                let keys: Vec<&secp256k1::SecretKey> = g.iter().map(|(k, _)| k).collect();
                let digests: Vec<[u8; 32]> = g.iter().map(|(_, d)| *d).collect();
                let sigs = lanes::sign_secp256k1(&keys, &digests).expect("lanes available");
                sigs.iter()
                    .map(|s| s.serialize_compact().1[63])
                    .fold(0, |a, b| a ^ b)
            })
            .fold(0, |a, b| a ^ b)
    };
    assert_eq!(
        scalar(&pairs[..64.min(size)]),
        lane(&pairs[..64.min(size)]),
        "same signatures"
    );
    let (best_scalar, best_lanes) =
        best_of_five(size, || scalar(&pairs), || lane(&pairs), |_, _| {});
    println!(
        "      sign: lanes {best_lanes:>8.0}/s   libsecp256k1 {best_scalar:>8.0}/s   ratio {:.2}",
        best_lanes / best_scalar
    );
    // One lane call for g pairs against g libsecp256k1 signatures: µs per call, best of 5.
    let rounds = (size / lanes::LANES).max(1);
    let mut line = String::from("  per call (µs), group size 1..8: lanes / libsecp256k1:");
    for g in 1..=lanes::LANES {
        let (mut best_l, mut best_s) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let start = Instant::now();
            for r in 0..rounds {
                let at = (r * lanes::LANES) % (pairs.len() - lanes::LANES + 1);
                std::hint::black_box(lane(&pairs[at..at + g]));
            }
            best_l = best_l.min(start.elapsed().as_secs_f64() * 1e6 / rounds as f64);
            let start = Instant::now();
            for r in 0..rounds {
                let at = (r * lanes::LANES) % (pairs.len() - lanes::LANES + 1);
                std::hint::black_box(scalar(&pairs[at..at + g]));
            }
            best_s = best_s.min(start.elapsed().as_secs_f64() * 1e6 / rounds as f64);
        }
        line += &format!(" {g}: {best_l:.1}/{best_s:.1}");
    }
    println!("{line}");
    bench_sm2_signing(size);
}

/// SM2 signing with given nonces: lanes against chainsig-weierstrass's constant-time scalar
/// signer (`sign_prehashed_with_nonce`), the same signatures, rounds interleaved.
fn bench_sm2_signing(size: usize) {
    use chainsig_weierstrass::{sign_prehashed_with_nonce, SecretKey};
    let triples: Vec<(SecretKey, [u8; 32], [u8; 32])> = (0..size as u64)
        .map(|i| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i + 1).to_be_bytes());
            key[31] = 0x5a;
            let e = chainsig_core::hash::keccak256(&key);
            let k = chainsig_core::hash::keccak256(&e);
            (SecretKey::from_bytes(&key).expect("a valid key"), e, k)
        })
        .collect();
    let scalar = |t: &[(SecretKey, [u8; 32], [u8; 32])]| -> u8 {
        t.iter()
            .map(|(d, e, k)| sign_prehashed_with_nonce(d, e, k).expect("signs")[63])
            .fold(0, |a, b| a ^ b)
    };
    let lane = |t: &[(SecretKey, [u8; 32], [u8; 32])]| -> u8 {
        t.chunks(lanes::LANES)
            .map(|g| {
                let keys: Vec<&SecretKey> = g.iter().map(|x| &x.0).collect();
                let e: Vec<[u8; 32]> = g.iter().map(|x| x.1).collect();
                let k: Vec<[u8; 32]> = g.iter().map(|x| x.2).collect();
                let sigs = lanes::sign_sm2_with_nonces(&keys, &e, &k).expect("lanes available");
                sigs.iter()
                    .map(|s| s.expect("signs")[63])
                    .fold(0, |a, b| a ^ b)
            })
            .fold(0, |a, b| a ^ b)
    };
    assert_eq!(scalar(&triples), lane(&triples), "same signatures");
    let (best_scalar, best_lanes) =
        best_of_five(size, || scalar(&triples), || lane(&triples), |_, _| {});
    println!(
        "  sm2 sign: lanes {best_lanes:>8.0}/s   scalar (weierstrass) {best_scalar:>8.0}/s   ratio {:.2}",
        best_lanes / best_scalar
    );
}

/// Compressed keys made whole, lanes against the scalar path, for each curve.
fn bench_decompression(size: usize) {
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 33,
            invalid_ratio: 0.0,
            msg_len: 8,
        };
        // The generator compresses the keys of odd-numbered records.
        let keys: Vec<[u8; 33]> = (0..size as u64)
            .map(|i| {
                chainsig_testkit::record(&spec, 2 * i + 1)
                    .pubkey
                    .try_into()
                    .expect("a compressed key")
            })
            .collect();
        let scalar = || {
            keys.iter()
                .filter(|k| chainsig_cpu::prepare::decode_pubkey(alg, &k[..]).is_ok())
                .count()
        };
        let lane = || {
            keys.chunks(lanes::LANES)
                .map(|g| {
                    let ys = lanes::decompress_keys(alg, g).expect("lanes available");
                    ys.iter().flatten().count()
                })
                .sum::<usize>()
        };
        let (best_scalar, best_lanes) = best_of_five(size, scalar, lane, |vs, vl| {
            assert_eq!((vs, vl), (size, size), "{alg}: every key decoded")
        });
        println!(
            " {alg:<9} decompression: lanes {best_lanes:>9.0}/s   scalar {best_scalar:>9.0}/s   ratio {:.2}",
            best_lanes / best_scalar
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(4096);
    let only_recovery = args.iter().any(|a| a == "recover");
    let only_signing = args.iter().any(|a| a == "sign");
    let once = args
        .iter()
        .find(|a| a.as_str() == "once-scalar" || a.as_str() == "once-lanes")
        .map(String::as_str);
    if !lanes::available() {
        if once == Some("once-scalar") {
            // Valgrind hides AVX-512 from the program: the scalar side still counts.
            bench_recovery(size, once);
        } else {
            eprintln!("this CPU lacks AVX-512 IFMA: nothing to compare");
        }
        return;
    }
    println!("per core, {size} signatures per round, best of 5 interleaved rounds");
    if only_signing {
        bench_signing(size);
        return;
    }
    if args.iter().any(|a| a == "decompress") {
        bench_decompression(size);
        return;
    }
    if only_recovery || once.is_some() {
        bench_recovery(size, once);
        return;
    }
    for alg in Algorithm::ALL {
        let spec = GenSpec {
            alg,
            seed: 4096,
            invalid_ratio: 0.0,
            msg_len: 64,
        };
        let (items, _) = prepared_items(&spec, size);
        let scalar = |items: &[PreparedItem]| {
            items
                .iter()
                .filter(|it| verify_item(alg, false, it))
                .count()
        };
        let lane = |items: &[PreparedItem]| {
            items
                .chunks(lanes::LANES)
                .map(|g| {
                    let v = lanes::verify_items(alg, false, g).expect("lanes available");
                    v.iter().filter(|&&ok| ok).count()
                })
                .sum()
        };
        // Warm up (the lanes build their table of G on first use).
        lane(&items[..8.min(items.len())]);
        let (best_scalar, best_lanes) = best_of_five(
            size,
            || scalar(&items),
            || lane(&items),
            |vs, vl| assert_eq!((vs, vl), (size, size), "{alg}: every signature is valid"),
        );
        let scalar_name = match alg {
            Algorithm::Secp256k1 => "libsecp256k1",
            _ => "scalar 4x64",
        };
        println!(
            "{alg:>10}: lanes {best_lanes:>8.0}/s   {scalar_name} {best_scalar:>8.0}/s   ratio {:.2}",
            best_lanes / best_scalar
        );
    }
    bench_recovery(size, None);
    bench_signing(size);
}
