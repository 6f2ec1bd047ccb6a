//! Per-core verification rate of the lanes against the scalar path (for secp256k1 the scalar path
//! is libsecp256k1 itself), measured in one run, rounds interleaved so a noisy shared machine
//! affects both sides alike; prints each rate and the ratio. One thread throughout.
//!
//! `cargo bench -p chainsig-cpu --bench lanes` (add `-- 8192` for another batch size).

use chainsig_core::{Algorithm, PreparedItem};
use chainsig_cpu::{lanes, verify_item};
use chainsig_testkit::{prepared_items, GenSpec};
use std::time::Instant;

fn rate(items: &[PreparedItem], f: impl Fn(&[PreparedItem]) -> usize) -> (f64, usize) {
    let start = Instant::now();
    let valid = f(items);
    (items.len() as f64 / start.elapsed().as_secs_f64(), valid)
}

fn main() {
    let size: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(4096);
    if !lanes::available() {
        eprintln!("this CPU lacks AVX-512 IFMA: nothing to compare");
        return;
    }
    println!("per core, {size} signatures per round, best of 5 interleaved rounds");
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
}
