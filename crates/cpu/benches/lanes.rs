//! Per-core verification rate of the lanes against the scalar path (for secp256k1 the scalar path
//! is libsecp256k1 itself), and the same for Ethereum sender recovery (lanes against
//! libsecp256k1's `recover_ecdsa`), measured in one run, rounds interleaved so a noisy shared
//! machine affects both sides alike; prints each rate and the ratio. One thread throughout.
//!
//! `cargo bench -p chainsig-cpu --bench lanes` (add `-- 8192` for another batch size, `-- recover`
//! for recovery alone, `-- recover once-scalar` or `once-lanes` for a single pass of one side, the
//! shape to run under `valgrind --tool=callgrind`).

use chainsig_core::{Algorithm, PreparedItem, RecoverItem};
use chainsig_cpu::ecdsa_secp256k1::{recover, SRule};
use chainsig_cpu::{lanes, verify_item};
use chainsig_testkit::{prepared_items, GenSpec};
use std::time::Instant;

fn rate(items: &[PreparedItem], f: impl Fn(&[PreparedItem]) -> usize) -> (f64, usize) {
    let start = Instant::now();
    let valid = f(items);
    (items.len() as f64 / start.elapsed().as_secs_f64(), valid)
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
    let (mut best_scalar, mut best_lanes) = (0f64, 0f64);
    for _ in 0..5 {
        let start = Instant::now();
        let vs = recovered_scalar(&items);
        let s = size as f64 / start.elapsed().as_secs_f64();
        let start = Instant::now();
        let vl = recovered_lanes(&items);
        let l = size as f64 / start.elapsed().as_secs_f64();
        assert_eq!((vs, vl), (size, size), "every signer recovered");
        best_scalar = best_scalar.max(s);
        best_lanes = best_lanes.max(l);
    }
    println!(
        " ecrecover: lanes {best_lanes:>8.0}/s   libsecp256k1 {best_scalar:>8.0}/s   ratio {:.2}",
        best_lanes / best_scalar
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(4096);
    let only_recovery = args.iter().any(|a| a == "recover");
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
        let (mut best_scalar, mut best_lanes) = (0f64, 0f64);
        for _ in 0..5 {
            let (s, vs) = rate(&items, scalar);
            let (l, vl) = rate(&items, lane);
            assert_eq!((vs, vl), (size, size), "{alg}: every signature is valid");
            best_scalar = best_scalar.max(s);
            best_lanes = best_lanes.max(l);
        }
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
}
