//! [`GpuKem`]: the batch KEM pipeline of [`crate::kem_host`] on a CUDA device, one stream, inputs and
//! outputs through pinned host memory (`cudarc`'s `alloc_pinned_with_flags`, plain page-locked, not
//! write-combined since results are read back on the host).

use crate::device_common::{device_err, flat, pad32, Device, TensorCore, FLAT_THREADS};
#[cfg(feature = "bench")]
use crate::kem_host::KemTiming;
use crate::kem_host::{
    check_count, ct_bytes_of, encaps_results, flatten_cts, shared_secret, KemParamsC, KeyMaterial,
};
use crate::Error;
use chainsig_ctru::params::{SEED_BYTES, SS_BYTES};
use chainsig_ctru::zeroize::Zeroizing;
use chainsig_ctru::{Ciphertext, ParamSet, PublicKey, SecretKey, SharedSecret};
use chainsig_gpu::cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, PinnedHostSlice, PushKernelArg,
};
use chainsig_gpu::Resources;
use std::sync::Arc;

/// Threads per block of the one-thread-per-item kernels (hashing, sampling seeds, the final check).
const ITEM_THREADS: u32 = 128;

struct Funcs {
    unpack_ct: CudaFunction,
    decode: CudaFunction,
    message: CudaFunction,
    derive: CudaFunction,
    sample: CudaFunction,
    pack: CudaFunction,
    finish: CudaFunction,
    tc: TensorCore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Encaps,
    Decaps,
}

/// Device and pinned buffers for one operation and batch size.
struct Work {
    op: Op,
    count: usize,
    stream: Arc<CudaStream>,
    /// Encaps: the seeds; decaps: the ciphertexts.
    input: CudaSlice<u8>,
    poly: CudaSlice<i16>,
    prod: CudaSlice<i16>,
    msg: CudaSlice<u8>,
    key: CudaSlice<u8>,
    rho: CudaSlice<u8>,
    ct2: CudaSlice<u8>,
    ss: CudaSlice<u8>,
    b0: CudaSlice<i8>,
    b1: CudaSlice<i8>,
    pin_in: PinnedHostSlice<u8>,
    /// Encaps: the ciphertexts out.
    pin_ct: Option<PinnedHostSlice<u8>>,
    /// Encaps: K; decaps: the shared secrets.
    pin_ss: PinnedHostSlice<u8>,
}

impl Drop for Work {
    fn drop(&mut self) {
        // Best effort: a failing driver cannot be reported from drop.
        let s = &self.stream;
        let _ = s.memset_zeros(&mut self.poly);
        let _ = s.memset_zeros(&mut self.prod);
        let _ = s.memset_zeros(&mut self.msg);
        let _ = s.memset_zeros(&mut self.key);
        let _ = s.memset_zeros(&mut self.rho);
        let _ = s.memset_zeros(&mut self.ct2);
        let _ = s.memset_zeros(&mut self.ss);
        let _ = s.memset_zeros(&mut self.b0);
        let _ = s.memset_zeros(&mut self.b1);
        let _ = s.memset_zeros(&mut self.input);
        for pinned in [
            Some(&mut self.pin_in),
            self.pin_ct.as_mut(),
            Some(&mut self.pin_ss),
        ]
        .into_iter()
        .flatten()
        {
            if let Ok(b) = pinned.as_mut_slice() {
                chainsig_ctru::zeroize::Zeroize::zeroize(b);
            }
        }
        let _ = s.synchronize();
    }
}

/// Batch encapsulation under one public key and batch decapsulation under one secret key on a GPU.
pub struct GpuKem {
    set: ParamSet,
    params: KemParamsC,
    key: KeyMaterial,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    funcs: Funcs,
    /// Digit matrices of h (mod q, lo and hi digit).
    h_a0: CudaSlice<i8>,
    h_a1: CudaSlice<i8>,
    /// Decapsulation: the matrix of f (secret) and pk[0..33) ‖ z (secret).
    f_a0: Option<CudaSlice<i8>>,
    pz: Option<CudaSlice<u8>>,
    prefix: CudaSlice<u8>,
    work: Option<Work>,
    arch: String,
    resources: Vec<Resources>,
}

impl Drop for GpuKem {
    fn drop(&mut self) {
        self.work = None;
        if let Some(f) = self.f_a0.as_mut() {
            let _ = self.stream.memset_zeros(f);
        }
        if let Some(pz) = self.pz.as_mut() {
            let _ = self.stream.memset_zeros(pz);
        }
        let _ = self.stream.synchronize();
    }
}

impl GpuKem {
    /// Opens device 0 for encapsulation under `pk`, and decapsulation when `sk` (whose embedded pk
    /// must be `pk`) is given. [`crate::GpuError::Unavailable`] without a driver, device, NVRTC (and no cached
    /// CUBIN) or int8 Tensor Cores.
    pub fn new(set: ParamSet, pk: &PublicKey, sk: Option<&SecretKey>) -> Result<Self, Error> {
        Self::on_device(set, pk, sk, 0)
    }

    /// As [`Self::new`] on device `ordinal`.
    pub fn on_device(
        set: ParamSet,
        pk: &PublicKey,
        sk: Option<&SecretKey>,
        ordinal: usize,
    ) -> Result<Self, Error> {
        let key = KeyMaterial::new(set, pk, sk)?;
        let device = Device::open(ordinal, true)?;
        let f = |name: &str| device.function(name);
        let stream = device.ctx.default_stream();
        let funcs = Funcs {
            unpack_ct: f("ctru_kem_unpack_ct")?,
            decode: f("ctru_kem_decode")?,
            message: f("ctru_kem_message")?,
            derive: f("ctru_kem_derive")?,
            sample: f("ctru_kem_sample")?,
            pack: f("ctru_kem_pack")?,
            finish: f("ctru_kem_finish")?,
            tc: TensorCore::new(&device, set.params(), stream.clone())?,
        };
        let p = set.params();
        let np = pad32(p.n);
        let alloc8 = |len: usize| {
            stream
                .alloc_zeros::<i8>(len)
                .map_err(|e| device_err("cuMemAlloc", e))
        };
        let (mut h_a0, mut h_a1) = (alloc8(np * np)?, alloc8(np * np)?);
        let matrix = |prod: i32,
                      shared: &[i16],
                      a0: &mut CudaSlice<i8>,
                      a1: &mut CudaSlice<i8>|
         -> Result<(), Error> {
            let mut dev = stream
                .clone_htod(shared)
                .map_err(|e| device_err("copy shared operand", e))?;
            funcs.tc.matrix(prod, &dev, a0, a1)?;
            // f is secret: its upload is overwritten once the matrix is built.
            stream
                .memset_zeros(&mut dev)
                .map_err(|e| device_err("cuMemsetD8", e))?;
            stream
                .synchronize()
                .map_err(|e| device_err("cuStreamSynchronize", e))
        };
        matrix(0, &key.h, &mut h_a0, &mut h_a1)?;
        let (f_a0, pz) = match &key.secret {
            None => (None, None),
            Some((f, pz)) => {
                let mut a0 = alloc8(np * np)?;
                let mut scratch = alloc8(1)?;
                matrix(1, f, &mut a0, &mut scratch)?;
                let pz = stream
                    .clone_htod(&pz[..])
                    .map_err(|e| device_err("copy pk prefix and z", e))?;
                (Some(a0), Some(pz))
            }
        };
        let prefix = stream
            .clone_htod(&key.prefix[..])
            .map_err(|e| device_err("copy pk prefix", e))?;
        Ok(GpuKem {
            set,
            params: KemParamsC::new(set),
            key,
            ctx: device.ctx,
            stream,
            _module: device.module,
            funcs,
            h_a0,
            h_a1,
            f_a0,
            pz,
            prefix,
            work: None,
            arch: device.arch,
            resources: device.resources,
        })
    }

    /// The parameter set.
    pub fn set(&self) -> ParamSet {
        self.set
    }

    /// The device architecture, e.g. "sm_90".
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Registers, stack and spills per kernel, from ptxas.
    pub fn resources(&self) -> &[Resources] {
        &self.resources
    }

    /// Whether decapsulation is possible (a secret key was given).
    pub fn can_decaps(&self) -> bool {
        self.key.secret.is_some()
    }

    fn work(&mut self, op: Op, count: usize) -> Result<Work, Error> {
        if let Some(w) = self.work.take() {
            if w.op == op && w.count == count {
                return Ok(w);
            }
        }
        let p = self.set.params();
        let s = &self.stream;
        let e = |e| device_err("cuMemAlloc", e);
        let (np, bp) = (pad32(p.n), pad32(count));
        let in_len = match op {
            Op::Encaps => count * SEED_BYTES,
            Op::Decaps => count * p.ct_bytes(),
        };
        // SAFETY (pinned): plain page-locked memory; every byte is written before it is read.
        let pinned = |len: usize| unsafe {
            self.ctx
                .alloc_pinned_with_flags::<u8>(len, 0)
                .map_err(|e| device_err("cuMemHostAlloc", e))
        };
        Ok(Work {
            op,
            count,
            stream: s.clone(),
            input: s.alloc_zeros::<u8>(in_len).map_err(e)?,
            poly: s.alloc_zeros::<i16>(count * p.n).map_err(e)?,
            prod: s.alloc_zeros::<i16>(count * p.n).map_err(e)?,
            msg: s.alloc_zeros::<u8>(count * p.msg_bytes()).map_err(e)?,
            key: s.alloc_zeros::<u8>(count * SS_BYTES).map_err(e)?,
            rho: s.alloc_zeros::<u8>(count * p.coin_bytes()).map_err(e)?,
            ct2: s.alloc_zeros::<u8>(count * p.ct_bytes()).map_err(e)?,
            ss: s.alloc_zeros::<u8>(count * SS_BYTES).map_err(e)?,
            b0: s.alloc_zeros::<i8>(np * bp).map_err(e)?,
            b1: s.alloc_zeros::<i8>(np * bp).map_err(e)?,
            pin_in: pinned(in_len)?,
            pin_ct: match op {
                Op::Encaps => Some(pinned(count * p.ct_bytes())?),
                Op::Decaps => None,
            },
            pin_ss: pinned(count * SS_BYTES)?,
        })
    }

    /// The product of a shared digit matrix with w.poly into w.prod (prod 0: mod q, 1: mod q2).
    fn product(&self, prod: i32, w: &mut Work) -> Result<(), Error> {
        let matrix = if prod == 0 {
            [&self.h_a0, &self.h_a1]
        } else {
            let f = self.f_a0.as_ref().ok_or(Error::Key {
                field: "sk",
                reason: "decapsulation needs the secret key".into(),
            })?;
            [f, f]
        };
        self.funcs.tc.product(
            prod,
            &w.poly,
            w.count,
            matrix,
            [&mut w.b0, &mut w.b1],
            &mut w.prod,
        )
    }

    /// msg → K (w.key) and the re-encryption or ciphertext (w.ct2).
    fn encrypt(&self, w: &mut Work) -> Result<(), Error> {
        let p = self.set.params();
        let cnt = w.count as i32;
        let mut b = self.stream.launch_builder(&self.funcs.derive);
        b.arg(&self.params)
            .arg(&self.prefix)
            .arg(&w.msg)
            .arg(&cnt)
            .arg(&mut w.key)
            .arg(&mut w.rho);
        // SAFETY: argument types and buffer sizes match ctru_kem_derive.
        unsafe { b.launch(flat(w.count, ITEM_THREADS)) }
            .map_err(|e| device_err("launch ctru_kem_derive", e))?;
        let mut b = self.stream.launch_builder(&self.funcs.sample);
        b.arg(&self.params).arg(&w.rho).arg(&cnt).arg(&mut w.poly);
        // SAFETY: as above for ctru_kem_sample.
        unsafe { b.launch(flat(w.count * p.n, FLAT_THREADS)) }
            .map_err(|e| device_err("launch ctru_kem_sample", e))?;
        self.product(0, w)?;
        let mut b = self.stream.launch_builder(&self.funcs.pack);
        b.arg(&self.params)
            .arg(&w.prod)
            .arg(&w.msg)
            .arg(&cnt)
            .arg(&mut w.ct2);
        // SAFETY: as above for ctru_kem_pack.
        unsafe { b.launch(flat(w.count * p.ct_bytes(), FLAT_THREADS)) }
            .map_err(|e| device_err("launch ctru_kem_pack", e))?;
        Ok(())
    }

    /// The whole pipeline of `w.op` on data already in w.input, in stream order.
    fn pipeline(&self, w: &mut Work) -> Result<(), Error> {
        let p = self.set.params();
        let cnt = w.count as i32;
        match w.op {
            Op::Encaps => {
                let mut b = self.stream.launch_builder(&self.funcs.message);
                b.arg(&self.params).arg(&w.input).arg(&cnt).arg(&mut w.msg);
                // SAFETY: argument types and buffer sizes match ctru_kem_message.
                unsafe { b.launch(flat(w.count, ITEM_THREADS)) }
                    .map_err(|e| device_err("launch ctru_kem_message", e))?;
                self.encrypt(w)
            }
            Op::Decaps => {
                let pz = self.pz.as_ref().ok_or(Error::Key {
                    field: "sk",
                    reason: "decapsulation needs the secret key".into(),
                })?;
                let mut b = self.stream.launch_builder(&self.funcs.unpack_ct);
                b.arg(&self.params).arg(&w.input).arg(&cnt).arg(&mut w.poly);
                // SAFETY: argument types and buffer sizes match ctru_kem_unpack_ct.
                unsafe { b.launch(flat(w.count * p.n, FLAT_THREADS)) }
                    .map_err(|e| device_err("launch ctru_kem_unpack_ct", e))?;
                self.product(1, w)?;
                let mut b = self.stream.launch_builder(&self.funcs.decode);
                b.arg(&self.params).arg(&w.prod).arg(&cnt).arg(&mut w.msg);
                // SAFETY: as above for ctru_kem_decode.
                unsafe { b.launch(flat(w.count * p.msg_bytes(), FLAT_THREADS)) }
                    .map_err(|e| device_err("launch ctru_kem_decode", e))?;
                self.encrypt(w)?;
                let mut b = self.stream.launch_builder(&self.funcs.finish);
                b.arg(&self.params)
                    .arg(pz)
                    .arg(&w.input)
                    .arg(&w.ct2)
                    .arg(&w.key)
                    .arg(&cnt)
                    .arg(&mut w.ss);
                // SAFETY: as above for ctru_kem_finish.
                unsafe { b.launch(flat(w.count, ITEM_THREADS)) }
                    .map_err(|e| device_err("launch ctru_kem_finish", e))?;
                Ok(())
            }
        }
    }

    fn upload(&self, w: &mut Work) -> Result<(), Error> {
        self.stream
            .memcpy_htod(&w.pin_in, &mut w.input)
            .map_err(|e| device_err("copy inputs", e))
    }

    fn download(&self, w: &mut Work) -> Result<(), Error> {
        match w.op {
            Op::Encaps => {
                if let Some(ct) = w.pin_ct.as_mut() {
                    self.stream
                        .memcpy_dtoh(&w.ct2, ct)
                        .map_err(|e| device_err("copy ciphertexts", e))?;
                }
                self.stream
                    .memcpy_dtoh(&w.key, &mut w.pin_ss)
                    .map_err(|e| device_err("copy keys", e))
            }
            Op::Decaps => self
                .stream
                .memcpy_dtoh(&w.ss, &mut w.pin_ss)
                .map_err(|e| device_err("copy keys", e)),
        }
    }

    fn prepare(&mut self, op: Op, input: &[u8], count: usize) -> Result<Work, Error> {
        if op == Op::Decaps && !self.can_decaps() {
            return Err(Error::Key {
                field: "sk",
                reason: "decapsulation needs the secret key".into(),
            });
        }
        let mut w = self.work(op, count)?;
        w.pin_in
            .as_mut_slice()
            .map_err(|e| device_err("pinned input", e))?
            .copy_from_slice(input);
        Ok(w)
    }

    fn run(&mut self, op: Op, input: &[u8], count: usize) -> Result<Work, Error> {
        let mut w = self.prepare(op, input, count)?;
        let r = self
            .upload(&mut w)
            .and_then(|()| self.pipeline(&mut w))
            .and_then(|()| self.download(&mut w))
            .and_then(|()| {
                self.stream
                    .synchronize()
                    .map_err(|e| device_err("cuStreamSynchronize", e))
            });
        match r {
            Ok(()) => Ok(w),
            Err(e) => {
                self.work = Some(w);
                Err(e)
            }
        }
    }

    /// Encapsulations from 32-byte seeds b (the randomness `chainsig_ctru::encaps` draws; use
    /// OS randomness in production).
    pub fn encaps_batch(
        &mut self,
        seeds: &[[u8; SEED_BYTES]],
    ) -> Result<Vec<(Ciphertext, SharedSecret)>, Error> {
        check_count(seeds.len())?;
        let flat = Zeroizing::new(seeds.concat());
        let w = self.run(Op::Encaps, &flat, seeds.len())?;
        let out = (|| {
            let ct = w
                .pin_ct
                .as_ref()
                .ok_or_else(|| Error::unavailable("ciphertext buffer missing"))?
                .as_slice()
                .map_err(|e| device_err("pinned ciphertexts", e))?;
            let keys = w
                .pin_ss
                .as_slice()
                .map_err(|e| device_err("pinned keys", e))?;
            encaps_results(self.set, ct, keys)
        })();
        self.work = Some(w);
        out
    }

    /// Decapsulations under the secret key.
    pub fn decaps_batch(&mut self, cts: &[Ciphertext]) -> Result<Vec<SharedSecret>, Error> {
        let bytes = ct_bytes_of(self.set, cts)?;
        self.decaps_bytes(&bytes)
    }

    /// As [`Self::decaps_batch`] on raw ciphertext bytes (each checked for its length).
    pub fn decaps_bytes<C: AsRef<[u8]>>(&mut self, cts: &[C]) -> Result<Vec<SharedSecret>, Error> {
        let flat = flatten_cts(self.set, cts)?;
        let w = self.run(Op::Decaps, &flat, cts.len())?;
        let out = w
            .pin_ss
            .as_slice()
            .map(|s| s.chunks_exact(SS_BYTES).map(shared_secret).collect())
            .map_err(|e| device_err("pinned keys", e));
        self.work = Some(w);
        out
    }

    /// Times batch encapsulation of `seeds`: medians of `reps` runs after `reps / 4 + 2` warm-ups.
    #[cfg(feature = "bench")]
    pub fn time_encaps(
        &mut self,
        seeds: &[[u8; SEED_BYTES]],
        reps: usize,
    ) -> Result<KemTiming, Error> {
        check_count(seeds.len())?;
        let flat = Zeroizing::new(seeds.concat());
        self.time(Op::Encaps, &flat, seeds.len(), reps)
    }

    /// Times batch decapsulation of `cts` (see [`Self::time_encaps`]).
    #[cfg(feature = "bench")]
    pub fn time_decaps(&mut self, cts: &[Ciphertext], reps: usize) -> Result<KemTiming, Error> {
        let bytes = ct_bytes_of(self.set, cts)?;
        let flat = flatten_cts(self.set, &bytes)?;
        self.time(Op::Decaps, &flat, cts.len(), reps)
    }

    #[cfg(feature = "bench")]
    fn time(
        &mut self,
        op: Op,
        input: &[u8],
        count: usize,
        reps: usize,
    ) -> Result<KemTiming, Error> {
        let mut w = self.prepare(op, input, count)?;
        let r = self.time_work(&mut w, reps);
        self.work = Some(w);
        r
    }

    #[cfg(feature = "bench")]
    fn time_work(&self, w: &mut Work, reps: usize) -> Result<KemTiming, Error> {
        let watch = chainsig_gpu::Stopwatch::new(&self.ctx, &self.stream)?;
        let reps = reps.max(1);
        let warm = reps / 4 + 2;
        self.upload(w)?;
        let kernel_ms = watch.median(warm, reps, || self.pipeline(w))?;
        let end_to_end_ms = watch.median(warm, reps, || {
            self.upload(w)?;
            self.pipeline(w)?;
            self.download(w)
        })?;
        Ok(KemTiming {
            kernel_ms,
            end_to_end_ms,
            runs: reps,
        })
    }
}
