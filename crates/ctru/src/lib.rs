//! CTRU-Prime, a post-quantum KEM over the NTRU Prime field Z_q[x]/(x^n − x − 1), for n = 653, 761
//! and 1277, byte-exact to the public C reference (the "FPTRU" code of Prime-KEM, commit 954c197) on
//! every known answer, as specified in `shared/specs/ctru-prime.md`.
//!
//! Hand-written because no maintained Rust implementation of CTRU-Prime exists; hashing (SHA3-512,
//! SHAKE256) and AES (for the NIST KAT DRBG) come from the RustCrypto crates, constant-time selection
//! from `subtle`.
//!
//! * [`params`]: the three parameter sets, one [`Params`] each, from which every size and every NTT
//!   constant is derived (so a GPU backend can share them and be checked against this code).
//! * [`poly`]: schoolbook reference product and constant-time inversion in R_q.
//! * [`ntt`]: the fast multiplier, an incomplete mixed-radix NTT, exact on every input in range.
//! * [`encode`]: sampler, E8 message code, pk/sk/ct formats.
//! * [`kem`]: [`keygen`], [`encaps`], [`decaps`]; randomness through [`RandomSource`]
//!   ([`NistDrbg`] for known answers, [`OsRandom`] otherwise).
//! * [`kat`]: the known-answer runner behind `chainsig kem kat`.
//!
//! # Where this implementation deliberately differs from the reference
//!
//! 1. **Implicit rejection replaces the whole key.** When the re-encryption check fails, [`decaps`]
//!    returns K̄ = SHA3-512(pk[0..33) ‖ z ‖ ct)[0..32), selected byte-wise in constant time. The
//!    reference builds its selection mask as 0/1 instead of 0x00/0xFF, so it outputs
//!    (K′ AND 0xFE) OR (K̄ AND 0x01) per byte, which leaks 7/8 of the key derived from the decrypted
//!    message. That is a bug, not the design; no known answer exercises the path, so the KATs pass
//!    either way. On dishonest ciphertexts our keys therefore differ from the reference's.
//! 2. **The fast product is exact on every input in range.** The reference's NTT over Q ≈ 2^24/2^25
//!    wraps for n = 653 and 1277 on extreme operands (e.g. all coefficients q − 1 times all η). Ours
//!    centers the large operand and lifts each linear coefficient before folding, which keeps every
//!    product the KEM can take inside the exact range; see [`ntt`].
//!
//! Secret keys and shared secrets are zeroised on drop and print as `<redacted>`; wrong input lengths
//! are [`Error`]s naming the field.

pub mod arith;
pub mod encode;
mod error;
pub mod kat;
pub mod kem;
pub mod ntt;
pub mod params;
pub mod poly;
pub mod rng;

pub use error::Error;
pub use kem::{
    decaps, decaps_with_verdict, encaps, keygen, Ciphertext, PublicKey, SecretKey, SharedSecret,
};
pub use params::{ParamSet, Params};
pub use rng::{NistDrbg, OsRandom, RandomSource};
/// Re-exported so callers can hold secret bytes in the same zeroising wrappers.
pub use zeroize;
