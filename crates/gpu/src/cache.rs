//! The on-disk CUBIN cache: a compiled module is kept under a hash of its source, its NVRTC
//! options and the architecture, so a change to any of them compiles afresh and a hit needs no
//! NVRTC at all.

use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Where compiled kernels are kept: `$CHAINSIG_CACHE_DIR`, else `$XDG_CACHE_HOME/chainsig`, else
/// `~/.cache/chainsig`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CHAINSIG_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("chainsig"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("chainsig"))
}

/// The cache key: SHA-256 over source, options and architecture.
pub fn cache_key(src: &str, opts: &[String], arch: &str) -> String {
    let mut h = Sha256::new();
    h.update(src.as_bytes());
    for o in opts {
        h.update([0u8]);
        h.update(o.as_bytes());
    }
    h.update([1u8]);
    h.update(arch.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The cached CUBIN and ptxas log of `key`, if present.
pub fn load(key: &str) -> Option<(Vec<u8>, String)> {
    let dir = cache_dir()?;
    let cubin = std::fs::read(dir.join(format!("{key}.cubin"))).ok()?;
    let log = std::fs::read_to_string(dir.join(format!("{key}.log"))).unwrap_or_default();
    Some((cubin, log))
}

/// Stores a module under `key`. The cache is an optimisation: failing to write it is not an
/// error. The CUBIN is written under a name of this process and renamed into place, so a
/// concurrent reader never sees half a file.
pub fn store(key: &str, cubin: &[u8], log: &str) {
    let Some(dir) = cache_dir() else { return };
    if std::fs::create_dir_all(&dir).is_ok() {
        let tmp = dir.join(format!("{key}.cubin.{}", std::process::id()));
        if std::fs::write(&tmp, cubin).is_ok() {
            let _ = std::fs::write(dir.join(format!("{key}.log")), log);
            let _ = std::fs::rename(&tmp, dir.join(format!("{key}.cubin")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_source_options_and_architecture() {
        let opts = vec!["--std=c++17".to_string()];
        let k = cache_key("src", &opts, "sm_90");
        assert_eq!(k.len(), 64);
        assert_ne!(k, cache_key("src2", &opts, "sm_90"));
        assert_ne!(k, cache_key("src", &[], "sm_90"));
        assert_ne!(k, cache_key("src", &opts, "sm_80"));
        // Option boundaries count: ["ab"] and ["a", "b"] differ.
        assert_ne!(
            cache_key("s", &["ab".into()], "sm_90"),
            cache_key("s", &["a".into(), "b".into()], "sm_90")
        );
    }
}
