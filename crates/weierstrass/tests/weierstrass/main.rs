//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-weierstrass --test weierstrass -- known_answers::`.

mod known_answers;
mod p256_cross_check;
mod rustcrypto_cross_check;
