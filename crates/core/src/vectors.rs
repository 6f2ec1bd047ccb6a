//! Where tests find the public test vectors (`../shared/vectors` beside the repository).
//!
//! The folder is never copied into the repository. `CHAINSIG_VECTORS` overrides the path. When the
//! folder is missing a test is skipped with a printed reason, except under CI (`CI=true`), where a
//! missing folder is an error: a skipped vector test in CI would prove nothing.

use std::path::PathBuf;

/// The root of the vectors folder: `$CHAINSIG_VECTORS`, else `<repo>/../shared/vectors`.
pub fn root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CHAINSIG_VECTORS") {
        return PathBuf::from(dir);
    }
    // crates/core -> repository root -> its parent, which holds shared/.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors")
}

/// The vectors subfolder `sub` (for example `"wycheproof"`), or `None` when it is missing outside CI.
///
/// # Panics
/// When the folder is missing and `CI=true`: vector tests must run in CI.
pub fn dir(sub: &str) -> Option<PathBuf> {
    let path = root().join(sub);
    if path.is_dir() {
        return Some(path);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !in_ci,
        "test vectors not found at {} (set CHAINSIG_VECTORS); CI must run them",
        path.display()
    );
    eprintln!(
        "skipping: test vectors not found at {} (set CHAINSIG_VECTORS to run this test)",
        path.display()
    );
    None
}
