//! ECDSA signing and recovery through libsecp256k1.
//!
//! The signature is libsecp256k1's `secp256k1_ecdsa_sign_recoverable` (constant time, low s), called
//! through its C interface with our RFC 6979 nonce function ([`crate::rfc6979`]), which is the
//! reason for the `unsafe` below: the safe wrapper always uses the built-in, slower one.
//!
//! Side-channel protection: libsecp256k1 blinds its generator multiplication with a random value held
//! in the context (`secp256k1_context_randomize`). Re-randomising costs about one generator
//! multiplication, nearly as much as the signature itself, so we do not pay it per signature
//! (secp256k1 0.33's context-free API does, which is why this crate pins 0.31 and owns its contexts).
//! Each thread owns one signing context, randomised from the OS generator when the thread first
//! signs and again every [`RERANDOMISE_EVERY`] signatures. Measured with the criterion bench
//! (`sign_prehash_context_blinded_per_thread` against `…_rerandomised_per_signature`, 2-core
//! machine, load 3): 34.5 µs against 57.9 µs per signature, so re-randomising every time would cost
//! about 68 % more; once per 4,096 signatures it costs about 0.02 %. Randomisation never changes a signature:
//! nonces are RFC 6979 and libsecp256k1 always returns the low-s form.
//!
//! Batches ([`sign_prehash_batch`]) sign in groups of eight in the CPU's AVX-512 IFMA lanes where
//! the CPU has them ([`chainsig_cpu::lanes::sign_secp256k1`]: constant time, the same RFC 6979
//! nonce function, byte for byte libsecp256k1's signatures), under the switch verification uses,
//! `CHAINSIG_CPU_LANES` (`auto`, `on`, `off`); groups smaller than [`LANES_FROM`] and single
//! signatures stay with libsecp256k1.
//!
//! Constant time: CI runs [`sign_recoverable_in`] (libsecp256k1's signing with our RFC 6979 nonce
//! function, in a randomised context) under valgrind with the secret key and the randomisation
//! seed marked secret; memcheck reports any branch or memory address that depends on them
//! (chainsig-testkit's `ctime`, RELIABILITY.md, "Constant time").

use alloy_primitives::{Address, Signature, B256, U256};
use rand::RngCore;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::ffi::{self, CPtr};
use secp256k1::{All, Message, Secp256k1, SecretKey, SignOnly, VerifyOnly};
use std::cell::RefCell;
use std::ptr;
use std::sync::OnceLock;

use chainsig_cpu::lanes::{LaneMode, LANES};

use crate::key::address_of;
use crate::EthError;

/// The smallest group signed in lanes: one lane call costs about as much for 1 as for 8
/// signatures, and at this size it costs less than as many libsecp256k1 signatures
/// (`cargo bench -p chainsig-cpu --bench lanes -- sign`, BENCHMARKS.md).
pub const LANES_FROM: usize = 3;

/// Signatures a thread makes between two randomisations of its context.
pub const RERANDOMISE_EVERY: u32 = 4096;

/// half the group order n, for the low-s rule
pub(crate) const HALF_ORDER: U256 = U256::from_limbs([
    0xdfe9_2f46_681b_20a0,
    0x5d57_6e73_57a4_501d,
    0xffff_ffff_ffff_ffff,
    0x7fff_ffff_ffff_ffff,
]);

struct ThreadContext {
    secp: Secp256k1<SignOnly>,
    left: u32,
}

impl ThreadContext {
    fn new() -> Self {
        let mut ctx = ThreadContext {
            secp: Secp256k1::signing_only(),
            left: 0,
        };
        ctx.randomise();
        ctx
    }

    fn randomise(&mut self) {
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng.fill_bytes(seed.as_mut());
        self.secp.seeded_randomize(&seed);
        self.left = RERANDOMISE_EVERY;
    }
}

thread_local! {
    static SIGNING: RefCell<ThreadContext> = RefCell::new(ThreadContext::new());
}

/// A shared context for public-key work (no secrets: no blinding needed).
pub(crate) fn verify_context() -> &'static Secp256k1<All> {
    static CONTEXT: OnceLock<Secp256k1<All>> = OnceLock::new();
    CONTEXT.get_or_init(Secp256k1::new)
}

fn recovery_context() -> &'static Secp256k1<VerifyOnly> {
    static CONTEXT: OnceLock<Secp256k1<VerifyOnly>> = OnceLock::new();
    CONTEXT.get_or_init(Secp256k1::verification_only)
}

/// Signs a 32-byte hash: RFC 6979 nonce, low s, with the recovery parity.
pub fn sign_prehash(secret: &SecretKey, hash: &B256) -> Signature {
    let recoverable = SIGNING.with(|cell| {
        let mut ctx = cell.borrow_mut();
        if ctx.left == 0 {
            ctx.randomise();
        }
        ctx.left -= 1;
        sign_recoverable_in(&ctx.secp, secret, hash)
    });
    signature_of(&recoverable)
}

/// The secret-handling half of [`sign_prehash`] in a given context: libsecp256k1's
/// `secp256k1_ecdsa_sign_recoverable` with our RFC 6979 nonce function. Separate so that the
/// constant-time check (chainsig-testkit's `ctime`) can run it in a context made with
/// libsecp256k1's declassify flag and mark its output public before [`signature_of`].
pub fn sign_recoverable_in<C: secp256k1::Signing>(
    secp: &Secp256k1<C>,
    secret: &SecretKey,
    hash: &B256,
) -> RecoverableSignature {
    let mut raw = ffi::recovery::RecoverableSignature::new();
    // SAFETY: a live context, 65 writable bytes, a 32-byte hash, a valid secret key, and a nonce
    // function with libsecp256k1's signature that reads and writes only what it is given.
    let ok = unsafe {
        ffi::recovery::secp256k1_ecdsa_sign_recoverable(
            secp.ctx().as_ptr(),
            &mut raw,
            hash.as_ptr(),
            secret.as_c_ptr(),
            Some(crate::rfc6979::nonce_function),
            ptr::null(),
        )
    };
    // The result carries the secret key's validity bit: public by design, declared so before
    // the branch, as libsecp256k1's own constant-time test does.
    assert!(
        chainsig_core::checkmem::public_bit(ok == 1),
        "libsecp256k1 signs any valid key and hash"
    );
    RecoverableSignature::from(raw)
}

/// Whether batches sign in lanes: `CHAINSIG_CPU_LANES` resolved once per process (`on` without
/// AVX-512 IFMA, or a value other than on/off/auto, is an error naming the variable).
pub fn lanes_for_batches() -> Result<bool, EthError> {
    static RESOLVED: OnceLock<Result<bool, String>> = OnceLock::new();
    RESOLVED
        .get_or_init(|| LaneMode::from_env().and_then(LaneMode::resolve))
        .clone()
        .map_err(|e| EthError::field(chainsig_cpu::lanes::ENV_VAR, e))
}

/// Signs `hashes[i]` with `keys[i]` for every i, as [`sign_prehash`] would (the same bytes):
/// in groups of eight in lanes when `lanes` is true (see [`lanes_for_batches`]), a remaining group
/// smaller than [`LANES_FROM`] and every signature otherwise through libsecp256k1.
pub fn sign_prehash_batch(keys: &[&SecretKey], hashes: &[B256], lanes: bool) -> Vec<Signature> {
    assert_eq!(keys.len(), hashes.len(), "one hash per key");
    let mut out = Vec::with_capacity(keys.len());
    for (keys, hashes) in keys.chunks(LANES).zip(hashes.chunks(LANES)) {
        if lanes && keys.len() >= LANES_FROM {
            let digests: Vec<[u8; 32]> = hashes.iter().map(|h| h.0).collect();
            if let Some(signed) = chainsig_cpu::lanes::sign_secp256k1(keys, &digests) {
                out.extend(signed.iter().map(signature_of));
                continue;
            }
        }
        out.extend(keys.iter().zip(hashes).map(|(k, h)| sign_prehash(k, h)));
    }
    out
}

/// r, s and the recovery parity of a public signature.
pub fn signature_of(recoverable: &RecoverableSignature) -> Signature {
    let (recid, rs) = recoverable.serialize_compact();
    Signature::from_bytes_and_parity(&rs, i32::from(recid) == 1)
}

/// Signs through libsecp256k1's built-in RFC 6979 nonce function (portable C SHA-256): the
/// reference [`sign_prehash`] is checked against, and the benchmark's baseline.
pub fn sign_prehash_libsecp_nonce(secret: &SecretKey, hash: &B256) -> Signature {
    SIGNING.with(|cell| {
        let ctx = cell.borrow();
        let (recid, rs) = ctx
            .secp
            .sign_ecdsa_recoverable(Message::from_digest(hash.0), secret)
            .serialize_compact();
        Signature::from_bytes_and_parity(&rs, i32::from(recid) == 1)
    })
}

/// Signs with a context randomised just for this signature: the cost that the per-thread context
/// avoids (kept for the benchmark that measures the choice).
pub fn sign_prehash_fresh_blinding(secret: &SecretKey, hash: &B256) -> Signature {
    SIGNING.with(|cell| cell.borrow_mut().randomise());
    sign_prehash(secret, hash)
}

/// Recovers the signer's uncompressed public key and address from a hash and a signature.
/// Rejects s above n/2, as Ethereum does for transactions.
pub fn recover_prehash(
    hash: &B256,
    signature: &Signature,
) -> Result<([u8; 65], Address), EthError> {
    if signature.s() > HALF_ORDER {
        return Err(EthError::field("s", "above n/2 (not low-s)"));
    }
    recover_prehash_any_s(hash, signature)
}

/// As [`recover_prehash`] but accepting any s in [1, n−1], as the `ecrecover` precompile does.
pub fn recover_prehash_any_s(
    hash: &B256,
    signature: &Signature,
) -> Result<([u8; 65], Address), EthError> {
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&signature.r().to_be_bytes::<32>());
    rs[32..].copy_from_slice(&signature.s().to_be_bytes::<32>());
    let recid = RecoveryId::try_from(i32::from(signature.v())).expect("parity is 0 or 1");
    let sig = RecoverableSignature::from_compact(&rs, recid)
        .map_err(|_| EthError::field("signature", "r or s is zero or not below the group order"))?;
    let public = recovery_context()
        .recover_ecdsa(Message::from_digest(hash.0), &sig)
        .map_err(|_| EthError::field("signature", "no public key recovers from it"))?;
    Ok((public.serialize_uncompressed(), address_of(&public)))
}
