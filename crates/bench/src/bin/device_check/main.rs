//! The GPU machine's run: fresh random SM2 records (about 10% corrupted, plus edge cases), verdicts
//! of every kernel configuration compared with the CPU reference (RustCrypto `sm2`), the async
//! submit/confirm path checked, then the benchmark sweep. Writes CSV/JSON into $OUT (or ./out).
//!
//! Usage: device_check [--count N] [--quick] [--regcap] [--regcap-full-keys] [--compact] [--pairs]
//! [--messages] [--signers N] [--ecdsa]  (--regcap: the register-cap
//! sweep in place of the standard one, --regcap-full-keys the same for full keys, --compact the
//! default kernel against its compact form across batch sizes, --pairs one thread per signature
//! against a lane pair (two per signature) across batch sizes; every run is still checked against
//! the reference.
//! --messages: only the records that carry messages, hashed by SM3 on the GPU, checked and timed
//! against hashing on the host; --signers N: records of N known signers, verified with their
//! fixed-base tables, checked and timed against the same records verified with their keys;
//! --ecdsa: P-256 and secp256k1 ECDSA records through the ECDSA kernels, checked against
//! RustCrypto `p256` and `k256` under both s rules and timed against batch size beside the CPU
//! backend, and Ethereum's sender recovery checked and timed against the CPU's libsecp256k1)

//!
//! Built by `cargo build --release -p chainsig-bench --bin device_check` (crates/bench/README.md).
//! Files: `sm2` (the standard run), `messages`, `signers`, `ecdsa` (one per mode).

mod ecdsa;
mod messages;
mod signers;
mod sm2;

use chainsig_core::algorithm::Algorithm;
use clap::Parser;

/// The GPU machine's SM2 / ECDSA acceptance run and benchmark; writes into $OUT (or ./out).
#[derive(Parser)]
struct Args {
    /// Fresh records to generate.
    #[arg(long, default_value_t = 1 << 20)]
    count: usize,
    /// Sweep only the batches of 4096 and 172032.
    #[arg(long)]
    quick: bool,
    /// The register-cap sweep in place of the standard one.
    #[arg(long)]
    regcap: bool,
    /// The register-cap sweep for full keys.
    #[arg(long = "regcap-full-keys")]
    regcap_full_keys: bool,
    /// The default kernel against its compact form across batch sizes.
    #[arg(long)]
    compact: bool,
    /// One thread per signature against a lane pair across batch sizes.
    #[arg(long)]
    pairs: bool,
    /// Only records that carry messages, hashed by SM3 on the GPU.
    #[arg(long)]
    messages: bool,
    /// Records of N known signers through their fixed-base tables.
    #[arg(long, default_value_t = 0)]
    signers: usize,
    /// P-256 and secp256k1 ECDSA, and Ethereum's sender recovery.
    #[arg(long)]
    ecdsa: bool,
}

fn main() {
    let args = Args::parse();
    let out = std::path::PathBuf::from(std::env::var("OUT").unwrap_or_else(|_| "out".into()));
    std::fs::create_dir_all(&out).expect("create output folder");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let count = args.count;
    if args.messages {
        return messages::messages_check(count, seed, &out);
    }
    if args.ecdsa {
        for alg in [Algorithm::P256, Algorithm::Secp256k1] {
            ecdsa::ecdsa_check(alg, count, seed, &out);
        }
        return;
    }
    if args.signers > 0 {
        return signers::signers_check(count, args.signers, seed, &out);
    }
    let sweep = sm2::Sweep {
        pairs: args.pairs,
        compact: args.compact,
        regcap_full: args.regcap_full_keys,
        regcap: args.regcap,
        quick: args.quick,
    };
    sm2::run(count, sweep, seed, &out);
}
