//! Integration tests, one binary: each module below was a test binary of its own; linking one
//! binary instead of several is most of the saving in CI's test build. Filter by module, e.g.
//! `cargo test -p chainsig-cpu --test cpu -- cross_check::`.

mod cross_check;
mod lanes; // the AVX-512 IFMA lanes against the one-at-a-time path
mod lanes_decompress; // compressed keys made whole in lanes against RustCrypto and the equation
mod lanes_recover; // sender recovery in lanes against libsecp256k1 and k256
mod lanes_sign; // signing in lanes against libsecp256k1, byte for byte
mod lanes_sign_sm2; // SM2 signing in lanes against the scalar signer
mod support; // helpers of the lane modules
mod vectors;
