//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-ctru --test ctru -- kat::`.

mod kat;
mod kem;
mod multiply;
