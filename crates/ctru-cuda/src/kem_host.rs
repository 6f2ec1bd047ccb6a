//! The whole CTRU-Prime KEM in batch: many encapsulations under one public key, or many
//! decapsulations under one secret key, as one pipeline of kernels on one stream.
//!
//! Every step of `chainsig_ctru::kem` has a kernel: SHAKE256 of the seeds to messages, SHA3-512 to K
//! and the coins, SHAKE256 to ρ, the sampler, h·r mod q (the Tensor Core product of [`crate::products`],
//! the shared matrix built once per key), compression with the E8 codewords and PackCT; for
//! decapsulation before that UnpackCT, c·f mod q2 and the E8 decoder, and after it the constant-time
//! comparison, the rejection hash and the whole-key select. The kernel source is
//! kernels/keccak.cuh, kernels/kem.cuh and kernels/ctru_kem_kernels.cuh.
//!
//! **Why hand-written.** NVRTC programs cannot call a library, so SHA-3 and every encoding step are
//! written in CUDA C; the same source compiles as host C++ (build.rs) and [`HostKem`] runs it, step for
//! step in the GPU's order and layouts, so CI compares the kernels' results with `chainsig_ctru` on
//! random keys, honest and tampered ciphertexts without a GPU.
//!
//! **Implicit rejection** replaces the whole key with K̄ = SHA3-512(pk[0..33) ‖ z ‖ ct)[0..32) when
//! the re-encryption differs, exactly as `chainsig_ctru::decaps` does (and unlike the reference,
//! which takes only bit 0 of each byte of K̄; see chainsig_ctru's crate docs).
//!
//! **Secrets.** f, z and every per-item intermediate (messages, K, coins, w, r) live in buffers that
//! are overwritten with zeros when the [`GpuKem`] / [`HostKem`] is dropped (device buffers by a
//! memset, pinned and ordinary host buffers by `zeroize`). Between calls of one [`GpuKem`] the last
//! batch's intermediates stay in its device workspace.

use crate::{Error, MAX_BATCH};
use chainsig_ctru::params::{HASH_PREFIX_BYTES, SEED_BYTES, SS_BYTES};
use chainsig_ctru::zeroize::{Zeroize, Zeroizing};
use chainsig_ctru::{encode, Ciphertext, ParamSet, PublicKey, SecretKey, SharedSecret};

/// The `ctru_kem_params` struct of kernels/ctru_types.h, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KemParamsC {
    pub n: i32,
    pub q: i32,
    pub q2: i32,
    pub log2_q2: i32,
    pub eta: i32,
    pub coin_bytes: i32,
    pub msg_bytes: i32,
    pub ct_bytes: i32,
    /// ⌈2^40 / q⌉: the kernels divide by q as a multiply-shift (exact below 2^24).
    pub q_magic: u32,
}

// SAFETY: a plain #[repr(C)] struct of 4-byte integers, laid out as the kernel's ctru_kem_params.
unsafe impl chainsig_gpu::cudarc::driver::DeviceRepr for KemParamsC {}

impl KemParamsC {
    /// The sizes of a parameter set.
    pub fn new(set: ParamSet) -> Self {
        let p = set.params();
        KemParamsC {
            n: p.n as i32,
            q: p.q,
            q2: p.q2,
            log2_q2: p.log2_q2 as i32,
            eta: p.eta,
            coin_bytes: p.coin_bytes() as i32,
            msg_bytes: p.msg_bytes() as i32,
            ct_bytes: p.ct_bytes() as i32,
            q_magic: (1u64 << 40).div_ceil(p.q as u64) as u32,
        }
    }
}

/// Decapsulation's secrets: f (unpacked, the shared operand of c·f mod q2) and pk[0..33) ‖ z.
pub(crate) type Secret = (Zeroizing<Vec<i16>>, Zeroizing<Vec<u8>>);

/// One key pair's material as the kernels take it.
pub(crate) struct KeyMaterial {
    pub(crate) set: ParamSet,
    /// h ∈ [0, q) centered to (−q/2, q/2): the shared operand of h·r mod q.
    pub(crate) h: Vec<i16>,
    /// pk[0..33), hashed into every G.
    pub(crate) prefix: [u8; HASH_PREFIX_BYTES],
    /// Decapsulation only: f (the shared operand of c·f mod q2) and pk[0..33) ‖ z.
    pub(crate) secret: Option<Secret>,
}

impl KeyMaterial {
    pub(crate) fn new(
        set: ParamSet,
        pk: &PublicKey,
        sk: Option<&SecretKey>,
    ) -> Result<KeyMaterial, Error> {
        let p = set.params();
        let wrong = |field: &str, expected: usize, got: usize| Error::WrongLength {
            field: field.into(),
            set,
            expected,
            got,
        };
        if pk.param_set() != set || pk.as_bytes().len() != p.pk_bytes {
            return Err(wrong("pk", p.pk_bytes, pk.as_bytes().len()));
        }
        let h = encode::decode_pk(p, pk.as_bytes())
            .into_iter()
            .map(|v| (if v > (p.q - 1) / 2 { v - p.q } else { v }) as i16)
            .collect();
        let mut prefix = [0u8; HASH_PREFIX_BYTES];
        prefix.copy_from_slice(&pk.as_bytes()[..HASH_PREFIX_BYTES]);
        let secret = match sk {
            None => None,
            Some(sk) => {
                if sk.param_set() != set || sk.as_bytes().len() != p.sk_bytes() {
                    return Err(wrong("sk", p.sk_bytes(), sk.as_bytes().len()));
                }
                let bytes = sk.as_bytes();
                let s = p.sk_pke_bytes();
                if bytes[s..s + p.pk_bytes] != *pk.as_bytes() {
                    return Err(Error::Key {
                        field: "sk",
                        reason: "its embedded public key differs from pk".into(),
                    });
                }
                let f = Zeroizing::new(
                    encode::unpack_sk(p, &bytes[..s])
                        .into_iter()
                        .map(i16::from)
                        .collect::<Vec<i16>>(),
                );
                let mut pz = Zeroizing::new(Vec::with_capacity(HASH_PREFIX_BYTES + SEED_BYTES));
                pz.extend_from_slice(&prefix);
                pz.extend_from_slice(&bytes[s + p.pk_bytes..]);
                Some((f, pz))
            }
        };
        Ok(KeyMaterial {
            set,
            h,
            prefix,
            secret,
        })
    }
}

/// Checks a batch size.
pub(crate) fn check_count(count: usize) -> Result<(), Error> {
    if count == 0 {
        return Err(Error::Batch("no instances".into()));
    }
    if count > MAX_BATCH {
        return Err(Error::Batch(format!(
            "{count} instances, at most {MAX_BATCH} per call"
        )));
    }
    Ok(())
}

/// The ciphertexts of a batch, checked (set and length, named `ct[i]`) and concatenated.
pub(crate) fn flatten_cts<C: AsRef<[u8]>>(set: ParamSet, cts: &[C]) -> Result<Vec<u8>, Error> {
    check_count(cts.len())?;
    let len = set.params().ct_bytes();
    let mut flat = Vec::with_capacity(len * cts.len());
    for (i, ct) in cts.iter().enumerate() {
        let ct = ct.as_ref();
        if ct.len() != len {
            return Err(Error::WrongLength {
                field: format!("ct[{i}]"),
                set,
                expected: len,
                got: ct.len(),
            });
        }
        flat.extend_from_slice(ct);
    }
    Ok(flat)
}

/// Checks that every ciphertext belongs to `set` before its bytes are used.
pub(crate) fn ct_bytes_of(set: ParamSet, cts: &[Ciphertext]) -> Result<Vec<&[u8]>, Error> {
    cts.iter()
        .enumerate()
        .map(|(i, ct)| {
            if ct.param_set() == set {
                Ok(ct.as_bytes())
            } else {
                Err(Error::WrongLength {
                    field: format!("ct[{i}]"),
                    set,
                    expected: set.params().ct_bytes(),
                    got: ct.as_bytes().len(),
                })
            }
        })
        .collect()
}

/// Splits the pipeline's flat outputs into the API's types.
pub(crate) fn encaps_results(
    set: ParamSet,
    ct: &[u8],
    keys: &[u8],
) -> Result<Vec<(Ciphertext, SharedSecret)>, Error> {
    let len = set.params().ct_bytes();
    ct.chunks_exact(len)
        .zip(keys.chunks_exact(SS_BYTES))
        .map(|(c, k)| {
            let ct = Ciphertext::from_bytes(set, c)
                .map_err(|e| chainsig_gpu::device_err("ciphertext from the pipeline", e))?;
            Ok((ct, shared_secret(k)))
        })
        .collect()
}

pub(crate) fn shared_secret(k: &[u8]) -> SharedSecret {
    let mut b = [0u8; SS_BYTES];
    b.copy_from_slice(k);
    let ss = SharedSecret::from_bytes(b);
    b.zeroize();
    ss
}

/// Median times of one batch, in milliseconds, from CUDA events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KemTiming {
    /// The kernel pipeline alone, inputs already on the device.
    pub kernel_ms: f64,
    /// Copy in from pinned host memory, the pipeline, copy out to pinned host memory.
    pub end_to_end_ms: f64,
    /// Timed repetitions behind each median (after warm-up).
    pub runs: usize,
}

// ---------------------------------------------------------------------------------------------
// Host build of the pipeline.

extern "C" {
    fn ctru_host_sha3_512(input: *const u8, len: i32, out: *mut u8);
    fn ctru_host_shake256(input: *const u8, len: i32, out: *mut u8, out_len: i32);
    fn ctru_host_kem_unpack_ct(p: *const KemParamsC, ct: *const u8, count: i32, c: *mut i16);
    fn ctru_host_kem_decode(p: *const KemParamsC, w: *const i16, count: i32, msg: *mut u8);
    fn ctru_host_kem_message(p: *const KemParamsC, seeds: *const u8, count: i32, msg: *mut u8);
    fn ctru_host_kem_derive(
        p: *const KemParamsC,
        prefix: *const u8,
        msg: *const u8,
        count: i32,
        key: *mut u8,
        rho: *mut u8,
    );
    fn ctru_host_kem_sample(p: *const KemParamsC, rho: *const u8, count: i32, r: *mut i16);
    fn ctru_host_kem_pack(
        p: *const KemParamsC,
        sigma: *const i16,
        msg: *const u8,
        count: i32,
        ct: *mut u8,
    );
    fn ctru_host_kem_finish(
        p: *const KemParamsC,
        pz: *const u8,
        ct: *const u8,
        ct2: *const u8,
        key: *const u8,
        count: i32,
        ss: *mut u8,
    );
}

/// SHA3-512 of `input` by kernels/keccak.cuh compiled for the host (for the tests).
pub fn host_sha3_512(input: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    let len = i32::try_from(input.len()).expect("test inputs are short");
    // SAFETY: input holds len bytes, out 64.
    unsafe { ctru_host_sha3_512(input.as_ptr(), len, out.as_mut_ptr()) };
    out
}

/// SHAKE256 of `input`, `out_len` bytes, by kernels/keccak.cuh compiled for the host (for the tests).
pub fn host_shake256(input: &[u8], out_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; out_len];
    let len = i32::try_from(input.len()).expect("test inputs are short");
    let olen = i32::try_from(out_len).expect("test outputs are short");
    // SAFETY: input holds len bytes, out out_len.
    unsafe { ctru_host_shake256(input.as_ptr(), len, out.as_mut_ptr(), olen) };
    out
}

/// PackCT(compress(σ) + (q2/2)·E8(msg)) of one σ row (n values in [0, q)) by the kernels' unit, for
/// the tests. Panics on rows of the wrong length (test inputs only).
pub fn host_pack_ct(set: ParamSet, sigma: &[i32], msg: &[u8]) -> Vec<u8> {
    let p = set.params();
    assert!(sigma.len() == p.n && msg.len() == p.msg_bytes());
    let s: Vec<i16> = sigma.iter().map(|&v| v as i16).collect();
    let mut out = vec![0u8; p.ct_bytes()];
    // SAFETY: one row of each, of the lengths the shim reads.
    unsafe {
        ctru_host_kem_pack(
            &KemParamsC::new(set),
            s.as_ptr(),
            msg.as_ptr(),
            1,
            out.as_mut_ptr(),
        )
    };
    out
}

/// The E8-decoded message of one w row (n values in [0, q2)) by the kernels' unit, for the tests.
pub fn host_decode_message(set: ParamSet, w: &[i32]) -> Vec<u8> {
    let p = set.params();
    assert!(w.len() == p.n);
    let s: Vec<i16> = w.iter().map(|&v| v as i16).collect();
    let mut out = vec![0u8; p.msg_bytes()];
    // SAFETY: one row of each, of the lengths the shim reads.
    unsafe { ctru_host_kem_decode(&KemParamsC::new(set), s.as_ptr(), 1, out.as_mut_ptr()) };
    out
}

/// The batch KEM on the host: the GPU pipeline's kernels (kernels/kem.cuh, keccak.cuh and the
/// Tensor Core product's arithmetic) compiled as C++ and run in the GPU's order. Slow (the Tensor Core
/// product is emulated); it exists so CI can check the kernels against `chainsig_ctru` without a GPU.
pub struct HostKem {
    key: KeyMaterial,
    params: KemParamsC,
}

impl HostKem {
    /// Encapsulation under `pk`; decapsulation too when `sk` (whose embedded pk must be `pk`) is given.
    pub fn new(set: ParamSet, pk: &PublicKey, sk: Option<&SecretKey>) -> Result<Self, Error> {
        Ok(HostKem {
            key: KeyMaterial::new(set, pk, sk)?,
            params: KemParamsC::new(set),
        })
    }

    /// Mod-q or mod-q2 product of the shared operand with `batch` by the host Tensor Core arithmetic.
    fn product(&self, prod: i32, shared: &[i16], batch: &[i16], count: usize, out: &mut [i16]) {
        let p = self.key.set.params();
        let m = if prod == 0 { p.q } else { p.q2 };
        // SAFETY: shared holds n values, batch and out count·n.
        unsafe {
            crate::host::ctru_host_tc(
                prod,
                p.n as i32,
                p.q,
                m,
                shared.as_ptr(),
                batch.as_ptr(),
                count as i32,
                out.as_mut_ptr(),
            )
        }
    }

    /// Re-encryption core shared by encaps and decaps: msg → (K, ct).
    /// The ciphertexts are zeroised too: in decapsulation they are re-encryptions of a decrypted
    /// (secret) message.
    fn encrypt(&self, msg: &[u8], count: usize) -> (Zeroizing<Vec<u8>>, Zeroizing<Vec<u8>>) {
        let p = self.key.set.params();
        let pc = &self.params;
        let cnt = count as i32;
        let mut key = Zeroizing::new(vec![0u8; count * SS_BYTES]);
        let mut rho = Zeroizing::new(vec![0u8; count * p.coin_bytes()]);
        let mut r = Zeroizing::new(vec![0i16; count * p.n]);
        let mut sigma = Zeroizing::new(vec![0i16; count * p.n]);
        let mut ct = Zeroizing::new(vec![0u8; count * p.ct_bytes()]);
        // SAFETY (all): every buffer has the row length times count that the shim's loops use.
        unsafe {
            ctru_host_kem_derive(
                pc,
                self.key.prefix.as_ptr(),
                msg.as_ptr(),
                cnt,
                key.as_mut_ptr(),
                rho.as_mut_ptr(),
            );
            ctru_host_kem_sample(pc, rho.as_ptr(), cnt, r.as_mut_ptr());
        }
        self.product(0, &self.key.h, &r, count, &mut sigma);
        // SAFETY: as above.
        unsafe { ctru_host_kem_pack(pc, sigma.as_ptr(), msg.as_ptr(), cnt, ct.as_mut_ptr()) };
        (key, ct)
    }

    /// Encapsulations from 32-byte seeds b (the randomness `chainsig_ctru::encaps` draws).
    pub fn encaps_batch(
        &self,
        seeds: &[[u8; SEED_BYTES]],
    ) -> Result<Vec<(Ciphertext, SharedSecret)>, Error> {
        check_count(seeds.len())?;
        let p = self.key.set.params();
        let count = seeds.len();
        let flat = Zeroizing::new(seeds.concat());
        let mut msg = Zeroizing::new(vec![0u8; count * p.msg_bytes()]);
        // SAFETY: seeds hold 32·count bytes, msg MSG·count.
        unsafe {
            ctru_host_kem_message(&self.params, flat.as_ptr(), count as i32, msg.as_mut_ptr())
        };
        let (key, ct) = self.encrypt(&msg, count);
        encaps_results(self.key.set, &ct, &key)
    }

    /// Decapsulations under the secret key.
    pub fn decaps_batch(&self, cts: &[Ciphertext]) -> Result<Vec<SharedSecret>, Error> {
        let bytes = ct_bytes_of(self.key.set, cts)?;
        self.decaps_bytes(&bytes)
    }

    /// As [`Self::decaps_batch`] on raw ciphertext bytes (each checked for its length).
    pub fn decaps_bytes<C: AsRef<[u8]>>(&self, cts: &[C]) -> Result<Vec<SharedSecret>, Error> {
        let set = self.key.set;
        let p = set.params();
        let (f, pz) = self.key.secret.as_ref().ok_or(Error::Key {
            field: "sk",
            reason: "decapsulation needs the secret key".into(),
        })?;
        let flat = flatten_cts(set, cts)?;
        let count = cts.len();
        let cnt = count as i32;
        let pc = &self.params;
        let mut c = vec![0i16; count * p.n];
        let mut w = Zeroizing::new(vec![0i16; count * p.n]);
        let mut msg = Zeroizing::new(vec![0u8; count * p.msg_bytes()]);
        // SAFETY: row lengths as the shim uses them.
        unsafe { ctru_host_kem_unpack_ct(pc, flat.as_ptr(), cnt, c.as_mut_ptr()) };
        self.product(1, f, &c, count, &mut w);
        // SAFETY: as above.
        unsafe { ctru_host_kem_decode(pc, w.as_ptr(), cnt, msg.as_mut_ptr()) };
        let (key, ct2) = self.encrypt(&msg, count);
        let mut ss = Zeroizing::new(vec![0u8; count * SS_BYTES]);
        // SAFETY: as above; pz holds 65 bytes.
        unsafe {
            ctru_host_kem_finish(
                pc,
                pz.as_ptr(),
                flat.as_ptr(),
                ct2.as_ptr(),
                key.as_ptr(),
                cnt,
                ss.as_mut_ptr(),
            )
        };
        Ok(ss.chunks_exact(SS_BYTES).map(shared_secret).collect())
    }
}

pub use crate::kem_pipeline::GpuKem;
