//! Verification and secp256k1 signing eight signatures at a time on AVX-512 IFMA (`vpmadd52luq`/`vpmadd52huq`), the
//! multi-buffer technique of Intel's crypto_mb (`mbx_nistp256_ecdsa_verify_mb8`,
//! `mbx_sm2_ecdsa_verify_mb8`).
//!
//! # Representation
//! A field element is five 52-bit limbs (radix 2⁵², 260 bits); eight elements, one per lane, sit
//! limb-major in five 512-bit registers, so one `vpmadd52luq` multiplies and accumulates the same
//! limb of eight different elements. Multiplication is Montgomery's with R = 2²⁶⁰ in its
//! "almost" form (results below 2m, not m), as in crypto_mb's `ifma_amm52x5` and Gueron–Krasnov,
//! "Fast prime field elliptic curve cryptography with 256-bit primes" (J. Cryptographic
//! Engineering, 2015); the lane layout follows Drucker–Gueron's AVX-512 IFMA work. The code is
//! written once over the modulus as data ([`modulus`]): SM2, P-256 and secp256k1, their primes
//! and their group orders, all derived from [`chainsig_core::curve`] at compile time.
//!
//! # Files
//! - [`modulus`]: the radix-2⁵² constants of each modulus.
//! - [`field`]: eight elements mod m: multiplication, addition, reduction, inversion.
//! - [`invert`]: the eight lanes' inverses by Montgomery's trick and one constant-time inversion.
//! - [`nonce`]: eight RFC 6979 nonces at once, SHA-256 in 32-bit lanes, for the signer.
//! - [`point`]: eight Jacobian points, additions whose exceptional cases are lane masks.
//! - [`curves`]: SM2, P-256 and secp256k1 as lane curves.
//! - [`g_table`]: the fixed-base comb of G (6-bit windows) and the signed recoding into them,
//!   shared by verification and signing.
//! - [`mul`]: u₁·G + u₂·Q with the comb for G (gathers) and a window for Q.
//! - [`verify`]: SM2 and ECDSA verification of eight records, with the scalar path's rules.
//! - [`recover`]: Ethereum sender recovery (ecrecover) of eight secp256k1 records.
//! - [`decompress`]: compressed SEC1 keys made whole, eight at a time, before records are
//!   prepared ([`decompress_keys`]).
//! - [`ct_comb`]: k·G in constant time (whole-row table scans, masked blends), for signing.
//! - [`sign`]: secp256k1 ECDSA signing of eight (key, digest) pairs in constant time, RFC 6979
//!   nonces and low s, byte for byte libsecp256k1's ([`sign_secp256k1`]).
//! - [`sign_sm2`]: SM2 signing of eight (key, e, nonce) triples in constant time, byte for byte
//!   chainsig-weierstrass's `sign_prehashed_with_nonce` ([`sign_sm2_with_nonces`]).
//!
//! # Choosing the path
//! [`available`] checks the CPU at run time (`is_x86_feature_detected!`); every function of the
//! engine carries `#[target_feature(enable = "avx512f,avx512ifma")]` and is entered only through
//! [`verify_items`], [`recover_items`] or [`sign_secp256k1`] (and the timing test's hooks), after
//! that check. The environment variable `CHAINSIG_CPU_LANES` forces a path
//! ([`LaneMode::from_env`]): `off` keeps the 4×64-bit scalar code (libsecp256k1 for signing), `on`
//! insists on lanes (an error where the CPU lacks IFMA), unset or `auto` uses lanes where the CPU
//! has them. chainsig-eth reads the same switch for batch signing.
//!
//! # Checks and measurements
//! `tests/cpu/lanes.rs` compares the lanes with the scalar path record by record (random, corrupted
//! and adversarial records: edge scalars, keys off the curve, sums at infinity, final additions
//! that are doublings) and holds an ignored release-mode check of a million records per
//! algorithm (`cargo test --release -p chainsig-cpu --test cpu -- lanes:: --ignored`); the
//! public vectors (`tests/cpu/vectors.rs`) run on both paths. `tests/cpu/lanes_recover.rs` holds
//! sender recovery to libsecp256k1 and k256 (random, signed and adversarial records; an ignored
//! million-record run). `cargo bench -p chainsig-cpu --bench lanes` prints the per-core rate of
//! the lanes beside the scalar path's (libsecp256k1 for secp256k1 and for recovery).
//!
//! Verification is variable time: all of its inputs are public. Signing uses none of its secret-
//! unsafe parts (the gathered comb, the addition that branches on a doubling): [`sign`] has its
//! own constant-time comb and its review of every secret-dependent branch and index.
//! `tests/cpu/lanes_sign.rs` holds the lane signer to libsecp256k1 byte for byte
//! (`lanes_sign_sm2.rs` the SM2 one to chainsig-weierstrass's), and
//! `cargo bench -p chainsig-cpu --bench lanes_ct` tests its timing (dudect).

#[cfg(target_arch = "x86_64")]
mod ct_comb;
#[cfg(target_arch = "x86_64")]
mod curves;
#[cfg(target_arch = "x86_64")]
mod decompress;
#[cfg(target_arch = "x86_64")]
mod field;
#[cfg(target_arch = "x86_64")]
mod g_table;
#[cfg(target_arch = "x86_64")]
mod invert;
#[cfg(target_arch = "x86_64")]
mod modulus;
#[cfg(target_arch = "x86_64")]
mod mul;
#[cfg(target_arch = "x86_64")]
mod nonce;
#[cfg(target_arch = "x86_64")]
mod point;
#[cfg(target_arch = "x86_64")]
mod recover;
#[cfg(target_arch = "x86_64")]
mod sign;
#[cfg(target_arch = "x86_64")]
mod sign_sm2;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;
#[cfg(target_arch = "x86_64")]
mod verify;

use crate::ecdsa_secp256k1::SRule;
use chainsig_core::{Algorithm, PreparedItem, RecoverItem, Recovered};
use secp256k1::ecdsa::RecoverableSignature;
use secp256k1::SecretKey;

/// The environment variable that forces the CPU backend's path.
pub const ENV_VAR: &str = "CHAINSIG_CPU_LANES";

/// Records per lane group.
pub const LANES: usize = 8;

/// Which verification path the CPU backend takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneMode {
    /// Lanes where the CPU has AVX-512 IFMA, the scalar path elsewhere.
    Auto,
    /// Lanes, or an error where the CPU lacks them.
    On,
    /// The scalar path.
    Off,
}

impl LaneMode {
    /// The mode `CHAINSIG_CPU_LANES` asks for: `auto` (or unset), `on` or `off`; any other value
    /// is an error naming it.
    pub fn from_env() -> Result<LaneMode, String> {
        match std::env::var(ENV_VAR) {
            Err(std::env::VarError::NotPresent) => Ok(LaneMode::Auto),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{ENV_VAR} is not UTF-8")),
            Ok(value) => LaneMode::parse(&value),
        }
    }

    /// A value of `CHAINSIG_CPU_LANES`: `auto` (or empty), `on` or `off`, nothing else.
    pub fn parse(value: &str) -> Result<LaneMode, String> {
        match value {
            "" | "auto" => Ok(LaneMode::Auto),
            "on" => Ok(LaneMode::On),
            "off" => Ok(LaneMode::Off),
            other => {
                let shown: String = other.chars().take(40).collect();
                Err(format!("{ENV_VAR}={shown:?}: expected on, off or auto"))
            }
        }
    }

    /// Whether this mode uses lanes on this CPU; an error for `On` without IFMA.
    pub fn resolve(self) -> Result<bool, String> {
        match self {
            LaneMode::Auto => Ok(available()),
            LaneMode::Off => Ok(false),
            LaneMode::On if available() => Ok(true),
            LaneMode::On => Err(format!(
                "{ENV_VAR}=on, but this CPU lacks AVX-512F with IFMA"
            )),
        }
    }
}

/// Whether this CPU runs the lanes (AVX-512F and AVX-512 IFMA, and AVX-512VL for the signer's
/// 256-bit hashing lanes: every CPU with IFMA has it).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512ifma")
            && std::arch::is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Verifies up to [`LANES`] items of `alg` in lanes, verdict i for item i; `None` where the CPU
/// lacks the lanes. Rules as [`crate::verify_item`]: `low_s` rejects ECDSA's s > n/2.
pub fn verify_items(alg: Algorithm, low_s: bool, items: &[PreparedItem]) -> Option<[bool; LANES]> {
    assert!(items.len() <= LANES, "at most {LANES} items per group");
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use verify::{verify_group, Scheme};
        let ecdsa = Scheme::Ecdsa { low_s };
        // SAFETY: `available()` confirmed AVX-512F and IFMA, the only features these need.
        Some(unsafe {
            match alg {
                Algorithm::Sm2 => verify_group::<curves::Sm2Curve>(items, Scheme::Sm2),
                Algorithm::P256 => verify_group::<curves::P256Curve>(items, ecdsa),
                Algorithm::Secp256k1 => verify_group::<curves::K256Curve>(items, ecdsa),
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (alg, low_s);
        None
    }
}

/// The y coordinates of up to [`LANES`] compressed SEC1 keys of `alg` (`02`/`03` ‖ x), y[l] for
/// key l, in lanes; `None` where the CPU lacks the lanes. A key refused (x ≥ p, no point with
/// this x, a prefix other than 02 or 03) has no y: [`crate::prepare::decode_pubkey`] words why.
pub fn decompress_keys(alg: Algorithm, keys: &[[u8; 33]]) -> Option<[Option<[u8; 32]>; LANES]> {
    assert!(keys.len() <= LANES, "at most {LANES} keys per group");
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use decompress::decompress_group;
        // SAFETY: `available()` confirmed AVX-512F and IFMA, the only features it needs.
        Some(unsafe {
            match alg {
                Algorithm::Sm2 => decompress_group::<curves::Sm2Curve>(keys),
                Algorithm::P256 => decompress_group::<curves::P256Curve>(keys),
                Algorithm::Secp256k1 => decompress_group::<curves::K256Curve>(keys),
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = alg;
        None
    }
}

/// Recovers the signers of up to [`LANES`] secp256k1 records in lanes, result i for item i;
/// `None` where the CPU lacks the lanes. Rules and results as [`crate::ecdsa_secp256k1::recover`]
/// under `rule`: `None` in a lane for a record refused or without a key.
pub fn recover_items(rule: SRule, items: &[RecoverItem]) -> Option<[Option<Recovered>; LANES]> {
    assert!(items.len() <= LANES, "at most {LANES} items per group");
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` confirmed AVX-512F and IFMA, the only features it needs.
        Some(unsafe { recover::recover_group(items, rule) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = rule;
        None
    }
}

/// Signs up to [`LANES`] secp256k1 digests in lanes, in constant time: signature i is key i's of
/// digest i, byte for byte what libsecp256k1's `sign_ecdsa_recoverable` returns (RFC 6979 nonce,
/// low s, recovery id). `None` where the CPU lacks the lanes. See [`sign`] for the method and
/// its one variable-time exit (probability about 2⁻¹²⁸ per signature).
pub fn sign_secp256k1(
    keys: &[&SecretKey],
    digests: &[[u8; 32]],
) -> Option<Vec<RecoverableSignature>> {
    assert!(keys.len() <= LANES, "at most {LANES} keys per group");
    assert_eq!(keys.len(), digests.len(), "one digest per key");
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` confirmed AVX-512F and IFMA, the only features it needs.
        Some(unsafe { sign::sign_group(keys, digests) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Signs up to [`LANES`] SM2 prehashed messages e with the given nonces in lanes, in constant
/// time: entry i is r‖s for key i, digest i and nonce i, byte for byte
/// [`chainsig_weierstrass::sign_prehashed_with_nonce`], `None` where that nonce does not sign
/// (k ∉ [1, n − 1], r = 0, r + k = n or s = 0). `None` overall where the CPU lacks the lanes.
#[allow(clippy::type_complexity)]
pub fn sign_sm2_with_nonces(
    keys: &[&chainsig_weierstrass::SecretKey],
    digests: &[[u8; 32]],
    nonces: &[[u8; 32]],
) -> Option<Vec<Option<[u8; 64]>>> {
    assert!(keys.len() <= LANES, "at most {LANES} keys per group");
    assert!(
        keys.len() == digests.len() && keys.len() == nonces.len(),
        "one digest and nonce per key"
    );
    if !available() {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `available()` confirmed AVX-512F and IFMA, the only features it needs.
        Some(unsafe { sign_sm2::sign_group(keys, digests, nonces) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Entry points for the constant-time test program (`benches/lanes_ct.rs`), which must time the
/// secret-handling parts alone; not an API. Every function returns `None` without the lanes.
#[doc(hidden)]
pub mod timing {
    /// Windows of the signing comb.
    #[cfg(target_arch = "x86_64")]
    pub const COMB_WINDOWS: usize = super::g_table::WINDOWS;
    /// The largest magnitude of the signing comb's digits.
    #[cfg(target_arch = "x86_64")]
    pub const COMB_MAX_DIGIT: usize = super::g_table::ENTRIES;

    /// The signing comb's table lookups alone for its windows of signed digits in
    /// [−COMB_MAX_DIGIT, COMB_MAX_DIGIT] per lane (`digits[window][lane]`), folded into one word
    /// so nothing is optimised away.
    #[cfg(target_arch = "x86_64")]
    pub fn comb_lookups(digits: &[[i64; super::LANES]; COMB_WINDOWS]) -> Option<u64> {
        if !super::available() {
            return None;
        }
        // SAFETY: `available()` confirmed AVX-512F and IFMA.
        Some(unsafe { super::ct_comb::lookups_for_timing(digits) })
    }
}
