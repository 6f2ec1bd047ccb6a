//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-cli --test cli -- verify_cli::`.

mod common; // helpers shared by the modules below
mod eth_cli;
mod fault_cli;
mod kem_bench_cli;
mod loadtest_cli;
mod recover_raw_cli;
mod serve_cli;
mod sigterm_cli;
mod verify_cli;
mod verify_rows_cli;
