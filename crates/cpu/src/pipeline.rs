//! Decoded records in, verdicts out, in order: the path `chainsig verify` and the server share.
//!
//! Records may mix algorithms; each algorithm's records form one [`Batch`] for the backend the
//! registry picks, and the verdicts are put back in input order. Preparation (key checks and
//! hashing) runs on every core.

use crate::prepare::Preparer;
use chainsig_core::record::VerifyRecord;
use chainsig_core::{Algorithm, BackendError, Batch, PreparedItem, RecordError, Registry};
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

/// Prepares and verifies `records` with the backend `backend` (a name or `auto`).
pub fn verify_records(
    registry: &Registry,
    backend: &str,
    low_s: bool,
    preparer: &Preparer,
    records: &[Result<VerifyRecord, RecordError>],
) -> Result<Outcome, BackendError> {
    let prepared: Vec<_> = records
        .par_iter()
        .map(|rec| {
            rec.as_ref()
                .map_err(Clone::clone)
                .and_then(|rec| Ok((rec.alg, preparer.prepare(rec)?)))
        })
        .collect();

    let mut outcome = Outcome {
        verdicts: Vec::with_capacity(records.len()),
        ..Default::default()
    };
    outcome.verdicts.extend(prepared.iter().map(|p| match p {
        Ok(_) => Verdict::Invalid,
        Err(e) => Verdict::Error(e.clone()),
    }));
    for alg in Algorithm::ALL {
        let members: Vec<(usize, PreparedItem)> = prepared
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Ok((a, item)) if *a == alg => Some((i, *item)),
                _ => None,
            })
            .collect();
        if members.is_empty() {
            continue;
        }
        let batch = Batch::from_results(alg, low_s, members.iter().map(|(_, item)| Ok(*item)));
        let (bitmap, used) = registry.verify(backend, &batch)?;
        for (slot, &(i, _)) in members.iter().enumerate() {
            if bitmap.get(slot) {
                outcome.verdicts[i] = Verdict::Valid;
            }
        }
        outcome.batches.push((alg, used, members.len()));
    }
    Ok(outcome)
}
