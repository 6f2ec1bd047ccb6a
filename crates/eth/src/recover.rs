//! Sender recovery for records in the `recover` format (`shared/specs/cli.md`): the path that
//! `chainsig recover` and the server's `chainsig_recoverBatch` share.
//!
//! Raw transactions are decoded, and their senders recovered, on the host by
//! [`crate::rawtx::recover_raw`] (decoding needs the whole envelope, which no batch backend takes); bare signatures go to the backend the registry
//! picks as one batch, with the registry's CPU fallback.

use crate::rawtx::recover_raw;
use chainsig_core::record::RecoverRecord;
use chainsig_core::{BackendError, RecordError, RecoverItem, Recovered, Registry};
use rayon::prelude::*;

/// What one call recovered, and where the bare signatures went.
#[derive(Debug, Clone)]
pub struct RecoverOutcome {
    /// The signer of each record, in input order, or why there is none.
    pub results: Vec<Result<Recovered, RecordError>>,
    /// The backend that recovered the bare signatures, with their count (`None` when there were none).
    pub batch: Option<(String, usize)>,
}

/// Each record, resolved as far as the host takes it.
enum Pending {
    Done(Result<Recovered, RecordError>),
    /// A bare signature waiting for the backend.
    Signature(RecoverItem),
}

/// Recovers the signer of every record on the backend `backend` (a name or `auto`).
pub fn recover_records(
    registry: &Registry,
    backend: &str,
    records: Vec<Result<RecoverRecord, RecordError>>,
) -> Result<RecoverOutcome, BackendError> {
    let pending: Vec<Pending> = records.into_par_iter().map(resolve_on_host).collect();
    let items: Vec<RecoverItem> = pending
        .iter()
        .filter_map(|p| match p {
            Pending::Signature(item) => Some(*item),
            Pending::Done(_) => None,
        })
        .collect();
    let (found, batch) = if items.is_empty() {
        (Vec::new(), None)
    } else {
        let (found, used) = registry.recover(backend, &items)?;
        if found.len() != items.len() {
            return Err(BackendError::Device {
                backend: used,
                reason: format!(
                    "returned {} results for {} signatures",
                    found.len(),
                    items.len()
                ),
            });
        }
        (found, Some((used, items.len())))
    };
    let mut found = found.into_iter();
    let results = pending
        .into_iter()
        .map(|p| match p {
            Pending::Done(result) => result,
            Pending::Signature(_) => found
                .next()
                .flatten()
                .ok_or_else(|| RecordError::new("sig", "no signer recovers from this signature")),
        })
        .collect();
    Ok(RecoverOutcome { results, batch })
}

fn resolve_on_host(record: Result<RecoverRecord, RecordError>) -> Pending {
    match record {
        Err(e) => Pending::Done(Err(e)),
        Ok(RecoverRecord::Signature(item)) => Pending::Signature(item),
        Ok(RecoverRecord::Transaction(raw)) => {
            Pending::Done(recover_raw(&raw).map_err(|e| RecordError::new("", e.to_string())))
        }
    }
}
