//! chainsig-testkit: the test data of every chainsig test, benchmark and of `chainsig gen`, and
//! the constant-time check of the signers.
//!
//! One generator ([`records`]): record `i` of a data set depends only on (seed, i), is signed
//! honestly by a fresh key or by key `i mod K` of a set, and with the set's probability is then
//! spoiled in one way. Keys, signatures, digests and every reference verdict come from RustCrypto
//! (`sm2`, `p256`, `k256`, `sm3`, `sha2`, `sha3`), never from the code under test, so a bug there
//! cannot make its own test data agree with it.
//!
//! | module | job |
//! |---|---|
//! | [`records`] | the generator; `chainsig gen`'s lines ([`GeneratedRecord::to_json_line`]) |
//! | [`corruption`] | the kinds of spoiling, and which data sets draw which |
//! | [`sets`] | edge cases + generated records with reference verdicts, for the batch engines and GPU |
//! | [`edges`] | the hand-built edge cases |
//! | [`curves`] | RustCrypto key decoding, hashing and reference verdicts |
//! | [`signer`] | signing keys on RustCrypto arithmetic |
//! | [`ctime`] | the constant-time check (binary `ctime`, run under valgrind) |
//!
//! # How records are spoiled, and why each way
//!
//! Every kind targets a check a verifier must make; a verifier that skips one accepts a record of
//! that kind.
//!
//! - **r = 0, s = 0** ([`Corruption::RZero`], [`Corruption::SZero`]): both must lie in [1, n − 1]
//!   (SEC 1 §4.1.4 step 1, GB/T 32918.2 §7.1 B1–B2); with s = 0 ECDSA's s⁻¹ does not exist.
//! - **r or s ≥ n** (`RAtLeastN`, `SAtLeastN`: n, n + 1, n + 2, near 2²⁵⁶): a verifier that reduces
//!   mod n instead of refusing accepts r + n for r, a classic malleability.
//! - **a flipped bit of r or of s** (`FlipR`, `FlipS`): the final comparison and the scalar
//!   arithmetic must use every bit.
//! - **r and s swapped** (`SwapRS`): both in range, so only the equation catches it.
//! - **a flipped message bit, a replaced message, an appended byte** (`FlipMessage`,
//!   `ReplaceMessage`, `ExtendMessage`): the hash must cover the whole message; the appended byte
//!   moves SM3's padding (message records only, whose lengths already vary).
//! - **a flipped digest bit** (`FlipDigest`): for prepared records, e itself must reach the
//!   equation; a near miss of one bit, not a random value.
//! - **a wrong key that is still a point** (`FlipKey`, x with one bit flipped until it decodes):
//!   passes every key check, so only the equation catches it.
//! - **another signer's key** (`OtherSigner`): with a set of signers, the key of another member,
//!   as a misattributed endorsement would be.
//! - **another SM2 identifier** (`OtherId`): Z_A covers the identifier (GB/T 32918.2 §5.5).
//!
//! A key that is not on the curve is not among them: the verifier refuses such a key as an input
//! error naming the field, before any verdict (chainsig-core's record tests), and prepared
//! records by contract hold curve points.
//!
//! The sets ([`sets`]) add, for ECDSA, **the high s** (n − s) on one record in four: valid under
//! the any-s rule, refused under low-s (BIP 62, EIP-2), so both rules are exercised on the same
//! data. And edge cases ([`edges`]) that random data reaches with probability about 2⁻¹²⁸: r or s
//! at 0, n and 2²⁵⁶ − 1 around an honest signature; the high s of an honest signature; SM2's
//! t = r + s = n and s·G + t·P at infinity; ECDSA's u₁·G + u₂·Q at infinity and u₁·G = u₂·Q
//! (the final addition is a doubling); keys d = 1 (P = G) and d = n − 1 (P = −G); digests 0, n
//! and 2²⁵⁶ − 1 (above n, so reduced first).
//!
//! Which kinds each data set draws from ([`corruption::Form`]): `chainsig gen`'s lines all but
//! `FlipDigest`, `ExtendMessage` and `OtherId` (a line has a message of the length asked for and
//! the default identifier); prepared sets all but `ExtendMessage` and `OtherId`; SM2 message sets
//! all but `FlipDigest`.

pub mod corruption;
pub mod ctime;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod curves;
pub mod edges;
pub mod records;
pub mod sets;
pub mod signer;

pub use corruption::Corruption;
pub use curves::Verdicts;
pub use records::{
    pool_public_keys, prepared_items, prepared_items_in_pool, record, record_in_pool, GenSpec,
    GeneratedRecord,
};

#[cfg(test)]
mod tests;
