//! Decoded records in, verdicts out, in order: the path `chainsig verify` and the server share.
//!
//! Records may mix algorithms; each algorithm's records form one [`Batch`] for the backend the
//! registry picks, and the verdicts are put back in input order. Preparation (key checks and
//! hashing) runs on every core.

use crate::prepare::Preparer;
use chainsig_core::backend::CPU;
use chainsig_core::messages::{MessageBatch, MessageItem};
use chainsig_core::raw_sm2::{RawSm2Batch, RawSm2Item, ID_MAX};
use chainsig_core::record::{Payload, VerifyRecord};
use chainsig_core::{
    Algorithm, BackendError, Batch, Bitmap, HashAlg, PreparedItem, RecordError, Registry,
};
use rayon::prelude::*;

/// The answer for one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Valid,
    Invalid,
    /// The record could not be checked (bad field); carries the reason.
    Error(RecordError),
}

/// What one call verified, and on which backends.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub verdicts: Vec<Verdict>,
    /// (algorithm, backend name, records) for each batch sent.
    pub batches: Vec<(Algorithm, String, usize)>,
}

/// One prepared record: its digest computed here, or (SM2 with a message, when the backend hashes
/// on its own device) its signer's Z_A, the message staying in the record, or (when the backend
/// also decodes keys on its device) nothing at all: the record goes as its bytes.
enum Prepared<'r> {
    Digest(PreparedItem),
    Unhashed(PreparedItem, [u8; 32], &'r [u8]),
    Raw(RawSm2Item<'r>),
}

/// Prepares and verifies `records` with the backend `backend` (a name or `auto`):
/// [`prepare_records`], then [`PreparedRecords::verify`].
pub fn verify_records(
    registry: &Registry,
    backend: &str,
    low_s: bool,
    preparer: &Preparer,
    records: &[Result<VerifyRecord, RecordError>],
) -> Result<Outcome, BackendError> {
    prepare_records(registry, backend, preparer, records).verify(registry, backend, low_s)
}

/// Records prepared for verification ([`prepare_records`]), borrowing their messages.
pub struct PreparedRecords<'r> {
    prepared: Vec<Result<(Algorithm, Prepared<'r>), RecordError>>,
}

/// Prepares `records` on every core for the backend `backend` (a name or `auto`): keys checked,
/// digests computed. Apart from [`PreparedRecords::verify`] so that a caller can time the two.
///
/// SM2 records that carry their message are hashed by the backend itself when the registry picks
/// an accelerator for them (the CUDA backend runs SM3 on the GPU, so host hashing does not cap
/// the batch), and here on every core otherwise. When that backend also decodes keys on its
/// device ([`chainsig_core::Backend::takes_raw_sm2`]), they are not prepared at all: their bytes
/// go to it as they are.
pub fn prepare_records<'r>(
    registry: &Registry,
    backend: &str,
    preparer: &Preparer,
    records: &'r [Result<VerifyRecord, RecordError>],
) -> PreparedRecords<'r> {
    let sm2_records = records
        .iter()
        .filter(|r| matches!(r, Ok(rec) if rec.alg == Algorithm::Sm2))
        .count();
    let device = (sm2_records > 0)
        .then(|| registry.select(backend, Algorithm::Sm2, sm2_records).ok())
        .flatten()
        .filter(|b| b.name() != CPU);
    let device_hashes = device.is_some();
    let device_decodes = device.is_some_and(|b| b.takes_raw_sm2());
    // Keys the host decodes, compressed ones made whole eight at a time first.
    let keys = preparer.decompress_keys(records, |rec| !(device_decodes && raw_sm2(rec).is_some()));
    let prepared = records
        .par_iter()
        .enumerate()
        .map(|(i, rec)| {
            let rec = rec.as_ref().map_err(Clone::clone)?;
            if device_decodes {
                if let Some(raw) = raw_sm2(rec) {
                    return Ok((rec.alg, Prepared::Raw(raw)));
                }
            }
            let key = keys.get(i).copied().flatten();
            if device_hashes {
                if let Some(unhashed) = preparer.prepare_unhashed(rec, key) {
                    let (item, za, msg) = unhashed?;
                    return Ok((rec.alg, Prepared::Unhashed(item, za, msg)));
                }
            }
            Ok((rec.alg, Prepared::Digest(preparer.prepare(rec, key)?)))
        })
        .collect();
    PreparedRecords { prepared }
}

/// An SM2 record hashed with SM3 (GB/T 32918.2), as its bytes; `None` for any other record, and
/// for an identifier longer than ENTL counts (the parser refuses those; a record built otherwise
/// keeps the host's path).
fn raw_sm2(rec: &VerifyRecord) -> Option<RawSm2Item<'_>> {
    match &rec.payload {
        Payload::Message {
            msg,
            hash: HashAlg::Sm3,
        } if rec.alg == Algorithm::Sm2 && rec.sm2_id.len() <= ID_MAX => Some(RawSm2Item {
            r: &rec.r,
            s: &rec.s,
            pubkey: &rec.pubkey,
            id: &rec.sm2_id,
            msg,
        }),
        _ => None,
    }
}

impl PreparedRecords<'_> {
    /// Verifies the prepared records with the backend `backend` (a name or `auto`), one batch per
    /// algorithm (and one for SM2 records the backend hashes), verdicts back in input order.
    pub fn verify(
        &self,
        registry: &Registry,
        backend: &str,
        low_s: bool,
    ) -> Result<Outcome, BackendError> {
        let prepared = &self.prepared;
        let mut outcome = Outcome {
            verdicts: Vec::with_capacity(prepared.len()),
            ..Default::default()
        };
        outcome.verdicts.extend(prepared.iter().map(|p| match p {
            Ok(_) => Verdict::Invalid,
            Err(e) => Verdict::Error(e.clone()),
        }));
        for alg in Algorithm::ALL {
            let (at, items): (Vec<usize>, Vec<PreparedItem>) = prepared
                .iter()
                .enumerate()
                .filter_map(|(i, p)| match p {
                    Ok((a, Prepared::Digest(item))) if *a == alg => Some((i, *item)),
                    _ => None,
                })
                .unzip();
            if !items.is_empty() {
                let batch = Batch::from_items(alg, low_s, &items);
                let (bitmap, used) = registry.verify(backend, &batch)?;
                outcome.record(alg, used, &bitmap, at.into_iter());
            }
        }
        let unhashed: Vec<(usize, &PreparedItem, &[u8; 32], &[u8])> = prepared
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Ok((_, Prepared::Unhashed(item, za, msg))) => Some((i, item, za, *msg)),
                _ => None,
            })
            .collect();
        if !unhashed.is_empty() {
            let items: Vec<MessageItem> = unhashed
                .iter()
                .map(|&(_, item, za, msg)| MessageItem {
                    za,
                    msg,
                    r: &item.r,
                    s: &item.s,
                    px: &item.px,
                    py: &item.py,
                })
                .collect();
            let batch = MessageBatch::from_items(&items);
            let (bitmap, used) = registry.verify_messages(backend, &batch)?;
            outcome.record(Algorithm::Sm2, used, &bitmap, unhashed.iter().map(|u| u.0));
        }
        let (raw_at, raw): (Vec<usize>, Vec<RawSm2Item>) = prepared
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Ok((_, Prepared::Raw(item))) => Some((i, *item)),
                _ => None,
            })
            .unzip();
        if !raw.is_empty() {
            // Only identifiers ENTL can count come here (`raw_sm2`), so the batch is always built;
            // were it refused, its records would carry the refusal, not a verdict.
            // A batch whose buffers an earlier call built, given back for the next.
            let mut batch = RawSm2Batch::reused();
            let answered = batch
                .refill(&raw)
                .map(|()| registry.verify_raw_sm2(backend, &batch));
            batch.give_back();
            match answered {
                Ok(answer) => {
                    let (answer, used) = answer?;
                    outcome.record(
                        Algorithm::Sm2,
                        used,
                        &answer.verdicts,
                        raw_at.iter().copied(),
                    );
                    for (k, e) in answer.errors {
                        outcome.verdicts[raw_at[k]] = Verdict::Error(e);
                    }
                }
                Err(e) => raw_at
                    .iter()
                    .for_each(|&i| outcome.verdicts[i] = Verdict::Error(e.clone())),
            }
        }
        Ok(outcome)
    }
}

impl Outcome {
    /// Marks the records at `indices` (slot k of `bitmap` is `indices[k]`) and notes the batch.
    fn record(
        &mut self,
        alg: Algorithm,
        used: String,
        bitmap: &Bitmap,
        indices: impl ExactSizeIterator<Item = usize>,
    ) {
        let n = indices.len();
        for (slot, i) in indices.enumerate() {
            if bitmap.get(slot) {
                self.verdicts[i] = Verdict::Valid;
            }
        }
        self.batches.push((alg, used, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;
    use chainsig_core::raw_sm2::RawOutcome;
    use chainsig_core::Backend;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A device that takes SM2 records as their bytes (as the CUDA backend does), answering
    /// through the CPU backend's preparation, and counting the records it was given.
    struct RawDevice {
        cpu: CpuBackend,
        raw_records: AtomicUsize,
        /// Fails every raw batch, as a GPU that lost its context would.
        broken: bool,
    }

    impl Backend for RawDevice {
        fn name(&self) -> &str {
            "raw-device"
        }
        fn supports(&self, _alg: Algorithm) -> bool {
            true
        }
        fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
            self.cpu.verify_batch(batch)
        }
        fn takes_raw_sm2(&self) -> bool {
            true
        }
        fn verify_raw_sm2(&self, batch: &RawSm2Batch) -> Result<RawOutcome, BackendError> {
            self.raw_records.fetch_add(batch.len(), Ordering::Relaxed);
            if self.broken {
                return Err(BackendError::Device {
                    backend: self.name().into(),
                    reason: "lost".into(),
                });
            }
            self.cpu.verify_raw_sm2(batch)
        }
    }

    /// SM2 records with messages (every fourth key compressed, every fifth spoiled, every third
    /// signature on another message), and SM2 records with digests between them.
    fn records() -> Vec<Result<VerifyRecord, RecordError>> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x7a3);
        (0..60u8)
            .map(|i| {
                let sk = chainsig_weierstrass::SecretKey::from_bytes(&[i + 1; 32]).unwrap();
                let pk = sk.public_key();
                let id = vec![b'A' + i % 26; usize::from(i % 20)];
                let msg: Vec<u8> = (0..rng.gen_range(0..120)).map(|_| rng.gen()).collect();
                let signed = if i % 3 == 0 { &b"other"[..] } else { &msg[..] };
                let e = chainsig_weierstrass::message_digest(
                    &chainsig_weierstrass::z_a(&id, &pk),
                    signed,
                );
                let sig = chainsig_weierstrass::sign_prehashed(&sk, &e, &mut rng);
                let mut pubkey = if i % 4 == 0 {
                    pk.to_compressed().to_vec()
                } else {
                    pk.to_uncompressed().to_vec()
                };
                if i % 5 == 0 {
                    pubkey[10] ^= 1;
                }
                let payload = if i % 7 == 0 {
                    Payload::Digest(e)
                } else {
                    Payload::Message {
                        msg,
                        hash: HashAlg::Sm3,
                    }
                };
                Ok(VerifyRecord {
                    alg: Algorithm::Sm2,
                    pubkey,
                    payload,
                    r: sig[..32].try_into().unwrap(),
                    s: sig[32..].try_into().unwrap(),
                    sm2_id: id,
                })
            })
            .collect()
    }

    #[test]
    fn a_device_that_takes_raw_records_gets_their_bytes_and_gives_the_cpu_paths_verdicts() {
        let device = Arc::new(RawDevice {
            cpu: CpuBackend::new(),
            raw_records: AtomicUsize::new(0),
            broken: false,
        });
        let mut registry = crate::cpu_registry();
        registry.register(device.clone());
        let records = records();
        let raw = records
            .iter()
            .filter(|r| matches!(r, Ok(r) if matches!(r.payload, Payload::Message { .. })))
            .count();
        let on_device =
            verify_records(&registry, "raw-device", false, &Preparer::new(), &records).unwrap();
        let on_cpu = verify_records(&registry, "cpu", false, &Preparer::new(), &records).unwrap();
        assert_eq!(device.raw_records.load(Ordering::Relaxed), raw);
        assert_eq!(on_device.verdicts, on_cpu.verdicts);
        let count = |v: &Verdict| on_cpu.verdicts.iter().filter(|w| *w == v).count();
        assert!(count(&Verdict::Valid) > 10 && count(&Verdict::Invalid) > 10);
        assert!(on_cpu
            .verdicts
            .iter()
            .any(|v| matches!(v, Verdict::Error(e) if e.field == "pubkey")));
    }

    #[test]
    fn a_failing_raw_device_under_auto_leaves_the_records_to_the_cpu_with_the_same_verdicts() {
        let device = Arc::new(RawDevice {
            cpu: CpuBackend::new(),
            raw_records: AtomicUsize::new(0),
            broken: true,
        });
        let mut registry = crate::cpu_registry();
        registry.register(device.clone());
        registry.set_gpu_crossover(1);
        let records = records();
        let out = verify_records(&registry, "auto", false, &Preparer::new(), &records).unwrap();
        let on_cpu = verify_records(&registry, "cpu", false, &Preparer::new(), &records).unwrap();
        assert!(
            device.raw_records.load(Ordering::Relaxed) > 0,
            "the device was tried"
        );
        assert_eq!(out.verdicts, on_cpu.verdicts);
        assert!(
            out.batches.iter().any(|(_, used, _)| used == CPU),
            "{:?}",
            out.batches
        );
        // Named explicitly, the failing device's error is the answer.
        assert!(
            verify_records(&registry, "raw-device", false, &Preparer::new(), &records).is_err()
        );
    }
}
