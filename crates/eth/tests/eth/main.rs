//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-eth --test eth -- ecrecover_vectors::`.

mod ecrecover_vectors;
mod known_answers;
mod malformed;
mod nonce;
mod round_trip;
