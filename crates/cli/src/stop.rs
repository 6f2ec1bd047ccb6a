//! Stopping the bulk commands (`verify`, `recover`, `eth sign-bulk`) on SIGTERM without tearing
//! their output.
//!
//! Each command writes a chunk's answers and flushes them while holding [`writing`]. The first
//! call starts a thread that waits for SIGTERM; on the signal it takes the same lock, so it waits
//! for a chunk being written to be complete, and ends the process with status
//! [`SIGTERM_EXIT`] while no answer is half written. The output is then every answer of the
//! chunks finished before the signal, whole lines in input order, and nothing of the rest; the
//! records after the last answer were not processed (for `sign-bulk`, not signed or not given
//! out), so a rerun can start from the line after it. Before the first chunk is written the
//! signal keeps its default action, which also writes nothing.
//!
//! tokio's signal handling is used (already a dependency, for `serve`), on a runtime of its own.

use std::sync::{Mutex, MutexGuard, OnceLock};

/// The exit status after SIGTERM: 128 + 15, as a shell reports a process the signal ended.
pub const SIGTERM_EXIT: i32 = 143;

static WRITING: Mutex<()> = Mutex::new(());

/// Held while a chunk's answers are written and flushed: SIGTERM waits for it to be dropped.
pub fn writing() -> MutexGuard<'static, ()> {
    static WATCHER: OnceLock<()> = OnceLock::new();
    WATCHER.get_or_init(watch);
    WRITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Catches SIGTERM from now on and starts the thread that acts on it. When any step fails the
/// signal keeps its default action (the process ends at once), which is what it had before.
fn watch() {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
    else {
        return;
    };
    let terminate = {
        let _entered = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    };
    let Ok(mut terminate) = terminate else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("sigterm".into())
        .spawn(move || {
            runtime.block_on(terminate.recv());
            let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
            eprintln!(
                "chainsig: SIGTERM: stopped after the last whole answer written; the records after it were not processed"
            );
            std::process::exit(SIGTERM_EXIT);
        });
}
