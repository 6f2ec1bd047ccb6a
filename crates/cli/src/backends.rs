//! The registry the commands use: the CPU backend always, accelerators when they start.

use anyhow::Context;
use chainsig_core::{Algorithm, Registry};
use chainsig_cuda::signers::SignerKey;
use chainsig_cuda::startup::{self, KnownSignersError};
use chainsig_cuda::{CudaBackend, CudaConfig};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The CUDA backend this process started, if any (one process, one GPU backend): `verify
/// --stats` reads its pipeline's staging and waiting times from it.
static STARTED_CUDA: OnceLock<Arc<CudaBackend>> = OnceLock::new();

/// The CUDA backend a registry of this process started, if one did.
pub fn started_cuda() -> Option<&'static CudaBackend> {
    STARTED_CUDA.get().map(Arc::as_ref)
}

/// Loads, on a thread of its own, the GPU modules that the work `upcoming` names needs, when this
/// process started the CUDA backend and the run may use it (`requested` is not `cpu`): the first
/// batch then finds them loaded instead of loading them while every other worker waits for the
/// engine ([`CudaBackend::warm_up`]). `upcoming` is asked only then (finding the work may read
/// the input's start), and may answer that it does not know. Dropping the returned value waits
/// for the warm-up. An error is left for the first batch to meet, as it would without it.
pub fn warm_up(
    requested: &str,
    upcoming: impl FnOnce() -> Option<chainsig_cuda::Upcoming>,
) -> Option<WarmUp> {
    let cuda = started_cuda().filter(|_| requested != chainsig_core::backend::CPU)?;
    let upcoming = upcoming()?;
    std::thread::Builder::new()
        .name("chainsig-warm-up".into())
        .spawn(move || drop(cuda.warm_up(upcoming)))
        .ok()
        .map(|handle| WarmUp(Some(handle)))
}

/// A warm-up in progress ([`warm_up`]); dropping it waits for it.
pub struct WarmUp(Option<std::thread::JoinHandle<()>>);

impl Drop for WarmUp {
    fn drop(&mut self) {
        // The thread only loads modules; it has nothing to report that the run needs.
        if let Some(handle) = self.0.take() {
            let _ = handle.join();
        }
    }
}

/// Backends for a run that asked for `requested` (`auto`, `cpu`, `cuda`). Accelerators are only
/// started when they may be used, so `--backend cpu` never touches a GPU driver. When the GPU
/// cannot start, the reason is kept: `--backend cuda` reports it, `auto` uses the CPU.
pub fn registry(requested: &str) -> Registry {
    with_signers(requested, &[]).expect("no signer tables to build or load")
}

/// As [`registry`], with the known signers of the file `signers` (`--signers` of `verify` and
/// `serve`; see [`read_signer_keys`]) when one is named.
pub fn with_signer_file(requested: &str, signers: Option<&Path>) -> anyhow::Result<Registry> {
    let keys = match signers {
        Some(path) => read_signer_keys(path)?,
        None => Vec::new(),
    };
    with_signers(requested, &keys)
}

/// As [`registry`], with the SM2 keys `signers` loaded into the GPU backend as known signers
/// (`chainsig_cuda::signers`): their records are verified through per-key tables, several
/// times as fast, and the few records of a batch outside the set go to the CPU meanwhile. The CPU
/// backend has no use for them. Building the tables (464 KB and a few tens of ms of one core per key)
/// is reported on stderr when there are any.
pub fn with_signers(requested: &str, signers: &[SignerKey]) -> anyhow::Result<Registry> {
    let mut registry = chainsig_cpu::cpu_registry();
    if requested == chainsig_core::backend::CPU {
        return Ok(registry);
    }
    let config = match CudaConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            registry.register_unavailable(chainsig_cuda::NAME, e);
            return Ok(registry);
        }
    };
    if let Some(cuda) = startup::start(&mut registry, config) {
        let _ = STARTED_CUDA.set(cuda.clone());
        if !signers.is_empty() {
            let started = Instant::now();
            let tables =
                startup::load_known_signers(&cuda, &registry, signers).map_err(|e| match e {
                    KnownSignersError::Tables(e) => anyhow::anyhow!("--signers: {e}"),
                    load => anyhow::Error::new(load),
                })?;
            eprintln!(
                "known signers: {} tables ({} MB) built and loaded in {:.2} s",
                tables.len(),
                (tables.words().len() * 4) >> 20,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(registry)
}

/// The known signers' SM2 public keys in `path`: one SEC1 key in hex per line (compressed or
/// not, `0x` optional); blank lines and lines starting with `#` are skipped. An error names the
/// line and why its key was refused.
pub fn read_signer_keys(path: &Path) -> anyhow::Result<Vec<SignerKey>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--signers: cannot read {}", crate::input::shown(path)))?;
    parse_signer_keys(&text).map_err(|e| anyhow::anyhow!("--signers {}: {e}", path.display()))
}

fn parse_signer_keys(text: &str) -> Result<Vec<SignerKey>, String> {
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = chainsig_core::hexstr::decode("pubkey", line)
            .and_then(|sec1| chainsig_cpu::prepare::decode_pubkey(Algorithm::Sm2, &sec1))
            .map_err(|e| format!("line {}: {e}", n + 1))?;
        keys.push(key);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signer_keys_are_read_in_order_and_bad_lines_are_named() {
        let g = chainsig_core::curve::SM2;
        let uncompressed = format!("04{}{}", hex::encode(g.gx), hex::encode(g.gy));
        let parity = if g.gy[31] & 1 == 1 { "03" } else { "02" };
        let compressed = format!("0x{parity}{}", hex::encode(g.gx));
        let text = format!("# endorsers\n{uncompressed}\n\n  {compressed}  \n");
        let keys = parse_signer_keys(&text).unwrap();
        assert_eq!(keys, vec![(g.gx, g.gy), (g.gx, g.gy)]);

        let mut off_curve = g.gy;
        off_curve[31] ^= 1;
        let bad = format!(
            "{uncompressed}\n04{}{}\n",
            hex::encode(g.gx),
            hex::encode(off_curve)
        );
        let err = parse_signer_keys(&bad).unwrap_err();
        assert!(err.starts_with("line 2: pubkey"), "{err}");
        let err = parse_signer_keys("# x\nzz\n").unwrap_err();
        assert!(err.starts_with("line 2: pubkey"), "{err}");
    }
}
