//! Decoded records in, verdicts out, in order: the path `chainsig verify` and the server share.
//!
//! Records may mix algorithms; each algorithm's records form one [`Batch`] for the backend the
//! registry picks, and the verdicts are put back in input order. Preparation (key checks and
//! hashing) runs on every core.

use crate::prepare::Preparer;
use chainsig_core::backend::CPU;
use chainsig_core::messages::{MessageBatch, MessageItem};
use chainsig_core::record::VerifyRecord;
use chainsig_core::{Algorithm, BackendError, Batch, Bitmap, PreparedItem, RecordError, Registry};
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
/// on its own device) its signer's Z_A, the message staying in the record.
enum Prepared<'r> {
    Digest(PreparedItem),
    Unhashed(PreparedItem, [u8; 32], &'r [u8]),
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
/// the batch), and here on every core otherwise.
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
    let device_hashes = sm2_records > 0
        && registry
            .select(backend, Algorithm::Sm2, sm2_records)
            .is_ok_and(|b| b.name() != CPU);
    let prepared = records
        .par_iter()
        .map(|rec| {
            let rec = rec.as_ref().map_err(Clone::clone)?;
            if device_hashes {
                if let Some(unhashed) = preparer.prepare_unhashed(rec) {
                    let (item, za, msg) = unhashed?;
                    return Ok((rec.alg, Prepared::Unhashed(item, za, msg)));
                }
            }
            Ok((rec.alg, Prepared::Digest(preparer.prepare(rec)?)))
        })
        .collect();
    PreparedRecords { prepared }
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
