//! Sender recovery for records in the `recover` format (`docs/formats.md`) and for batches of raw
//! transactions: the path that `chainsig recover`, the server's `chainsig_recoverBatch` and gRPC
//! `RecoverBatch`, and the C ABI's `cs_recover_transactions` share.
//!
//! Raw transactions go through [`recover_transactions`]: to a backend that decodes them on its
//! own device when the registry has one for the name asked (`Registry::recover_transactions`:
//! `cuda`, or `auto` for large batches), else decoded on the host's cores by
//! [`crate::rawtx::recover_raw`]. A record the device refuses is decoded again on the host, whose
//! error is the one given (the device's fault number only says which cause; the host's message
//! says what is wrong), and a record the device hands back ([`TX_DEFER`]) is recovered there. So
//! the answers, errors included, are the host's whichever way they went. Bare signatures go to
//! the backend the registry picks as one batch, with the registry's CPU fallback.

use crate::rawtx::{recover_raw, RawTxError};
use chainsig_core::record::RecoverRecord;
use chainsig_core::{
    BackendError, RecordError, RecoverItem, Recovered, Registry, TxAnswer, TX_DEFER,
};
use rayon::prelude::*;

/// What one call recovered, and where the work went.
#[derive(Debug, Clone)]
pub struct RecoverOutcome {
    /// The signer of each record, in input order, or why there is none.
    pub results: Vec<Result<Recovered, RecordError>>,
    /// The backend that recovered the bare signatures, with their count (`None` when there were none).
    pub batch: Option<(String, usize)>,
    /// The device that decoded the raw transactions, with their count (`None` when the host did
    /// or there were none).
    pub transactions: Option<(String, usize)>,
    /// Raw transactions the device refused for another cause than the host's (the host's answer
    /// is the one given): 0 unless the device is wrong.
    pub disagreements: u64,
}

/// What [`recover_transactions`] found.
#[derive(Debug, Clone)]
pub struct TxRecovery {
    /// The sender of each transaction, in input order, or why there is none (the host's cause
    /// and words).
    pub results: Vec<Result<Recovered, RawTxError>>,
    /// The device that decoded them (`None`: the host did).
    pub device: Option<String>,
    /// Transactions the device refused for another cause than the host's: 0 unless it is wrong.
    pub disagreements: u64,
}

/// The sender of each raw signed transaction of `txs` (types 0–4), in order, under the backend
/// `backend` (a name or `auto`): on a device that decodes transactions when the registry gives
/// one (the host refining its refusals, see the module docs), else on the host's cores. Fails
/// only when the backend named is unavailable or fails; under `auto` a failing device leaves the
/// work to the host.
pub fn recover_transactions(
    registry: &Registry,
    backend: &str,
    txs: &[&[u8]],
) -> Result<TxRecovery, BackendError> {
    let Some((answers, device)) = registry.recover_transactions(backend, txs)? else {
        return Ok(TxRecovery {
            results: txs.par_iter().map(|tx| recover_raw(tx)).collect(),
            device: None,
            disagreements: 0,
        });
    };
    let refined: Vec<(Result<Recovered, RawTxError>, bool)> = answers
        .into_par_iter()
        .zip(txs.par_iter())
        .map(|(answer, tx)| refine(answer, tx))
        .collect();
    let disagreements = refined.iter().filter(|(_, agrees)| !agrees).count() as u64;
    Ok(TxRecovery {
        results: refined.into_iter().map(|(result, _)| result).collect(),
        device: Some(device),
        disagreements,
    })
}

/// A device's answer for `tx` as the host would give it, and whether the device agreed: a sender
/// is taken as it is; a refusal is decoded again on the host for its message (and must name the
/// host's cause); a deferred record is the host's to decode.
fn refine(answer: TxAnswer, tx: &[u8]) -> (Result<Recovered, RawTxError>, bool) {
    match answer {
        Ok(found) => (Ok(found), true),
        Err(code) => {
            let host = recover_raw(tx);
            let agrees = code == TX_DEFER || host.as_ref().is_err_and(|e| e.fault.code() == code);
            (host, agrees)
        }
    }
}

/// Each record, resolved as far as the host takes it.
enum Pending {
    Done(Result<Recovered, RecordError>),
    /// A bare signature waiting for the backend.
    Signature(RecoverItem),
    /// A raw transaction waiting for [`recover_transactions`].
    Transaction(Vec<u8>),
}

/// Recovers the signer of every record on the backend `backend` (a name or `auto`): the raw
/// transactions through [`recover_transactions`], the bare signatures as one batch.
pub fn recover_records(
    registry: &Registry,
    backend: &str,
    records: Vec<Result<RecoverRecord, RecordError>>,
) -> Result<RecoverOutcome, BackendError> {
    let pending: Vec<Pending> = records
        .into_iter()
        .map(|record| match record {
            Err(e) => Pending::Done(Err(e)),
            Ok(RecoverRecord::Signature(item)) => Pending::Signature(item),
            Ok(RecoverRecord::Transaction(raw)) => Pending::Transaction(raw),
        })
        .collect();
    let items: Vec<RecoverItem> = pending
        .iter()
        .filter_map(|p| match p {
            Pending::Signature(item) => Some(*item),
            _ => None,
        })
        .collect();
    let txs: Vec<&[u8]> = pending
        .iter()
        .filter_map(|p| match p {
            Pending::Transaction(raw) => Some(raw.as_slice()),
            _ => None,
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
    let decoded = if txs.is_empty() {
        None
    } else {
        Some(recover_transactions(registry, backend, &txs)?)
    };
    let tx_count = txs.len();
    drop(txs);
    let (senders, transactions, disagreements) = match decoded {
        None => (Vec::new(), None, 0),
        Some(d) => (
            d.results,
            d.device.map(|device| (device, tx_count)),
            d.disagreements,
        ),
    };
    let mut found = found.into_iter();
    let mut senders = senders.into_iter();
    let results = pending
        .into_iter()
        .map(|p| match p {
            Pending::Done(result) => result,
            Pending::Signature(_) => found
                .next()
                .flatten()
                .ok_or_else(|| RecordError::new("sig", "no signer recovers from this signature")),
            Pending::Transaction(_) => match senders.next() {
                Some(sender) => sender.map_err(|e| RecordError::new("", e.to_string())),
                None => Err(RecordError::new("tx", "no answer for this transaction")),
            },
        })
        .collect();
    Ok(RecoverOutcome {
        results,
        batch,
        transactions,
        disagreements,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rawtx::corpus::Corpus;
    use crate::rawtx::TxFault;
    use chainsig_core::{Algorithm, Backend, Batch, Bitmap};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// A device that decodes transactions as the host does, then lies as told: every record is
    /// handed back (`defer_all`), or each refusal's number is off by one (`wrong_faults`).
    #[derive(Default)]
    struct Device {
        defer_all: bool,
        wrong_faults: bool,
        calls: AtomicU64,
    }

    impl Backend for Device {
        fn name(&self) -> &str {
            "gpu"
        }
        fn supports(&self, _alg: Algorithm) -> bool {
            false
        }
        fn verify_batch(&self, _batch: &Batch) -> Result<Bitmap, BackendError> {
            unreachable!("not a verifier")
        }
        fn recovers_transactions(&self) -> bool {
            true
        }
        fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Ok(txs
                .iter()
                .map(|tx| {
                    if self.defer_all {
                        return Err(TX_DEFER);
                    }
                    let code = |e: crate::rawtx::RawTxError| match self.wrong_faults {
                        // Another cause's number (9 + 1 would read as a deferral).
                        true => e.fault.code() % 9 + 1,
                        false => e.fault.code(),
                    };
                    recover_raw(tx).map_err(code)
                })
                .collect())
        }
    }

    fn registry(device: Option<Arc<Device>>) -> Registry {
        let mut registry = chainsig_cpu::cpu_registry();
        if let Some(device) = device {
            registry.register(device);
        }
        registry.set_gpu_crossover(1);
        registry
    }

    fn corpus_txs() -> Vec<Vec<u8>> {
        let mut txs = Corpus::new(31, 4).mixed(400, 0.4);
        txs.push(Vec::new());
        txs
    }

    #[test]
    fn a_device_gives_the_hosts_answers_and_refined_errors() {
        let txs = corpus_txs();
        let refs: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
        let host = recover_transactions(&registry(None), "auto", &refs).unwrap();
        assert_eq!(host.device, None);
        let errors = host.results.iter().filter(|r| r.is_err()).count();
        assert!(errors > 80 && errors < 250, "{errors} errors");
        for device in [
            Device::default(),
            Device {
                defer_all: true,
                ..Default::default()
            },
        ] {
            let device = Arc::new(device);
            let on_device =
                recover_transactions(&registry(Some(device.clone())), "gpu", &refs).unwrap();
            assert_eq!(on_device.device.as_deref(), Some("gpu"));
            assert_eq!(on_device.disagreements, 0);
            assert_eq!(on_device.results, host.results);
            assert_eq!(device.calls.load(Ordering::Relaxed), 1);
        }
        // A device naming the wrong cause is counted; the host's answer is the one given.
        let lying = Arc::new(Device {
            wrong_faults: true,
            ..Default::default()
        });
        let out = recover_transactions(&registry(Some(lying)), "auto", &refs).unwrap();
        assert_eq!(out.disagreements, errors as u64);
        assert_eq!(out.results, host.results);
    }

    #[test]
    fn records_of_both_kinds_keep_their_places() {
        let txs = corpus_txs();
        let records: Vec<Result<RecoverRecord, RecordError>> = txs
            .iter()
            .enumerate()
            .flat_map(|(i, tx)| {
                let signature = RecoverRecord::Signature(RecoverItem {
                    digest: [i as u8; 32],
                    r: [1; 32],
                    s: [2; 32],
                    recovery_id: 0,
                });
                [
                    Ok(RecoverRecord::Transaction(tx.clone())),
                    Ok(signature),
                    Err(RecordError::new("v", format!("record {i}"))),
                ]
            })
            .collect();
        let host = recover_records(&registry(None), "cpu", records.clone()).unwrap();
        let device = Arc::new(Device::default());
        let mixed = recover_records(&registry(Some(device.clone())), "gpu", records.clone());
        // The device recovers no bare signatures: asked for by name, they are refused.
        assert!(matches!(mixed, Err(BackendError::Unsupported { .. })));
        let auto = recover_records(&registry(Some(device)), "auto", records).unwrap();
        assert_eq!(auto.transactions, Some(("gpu".to_string(), txs.len())));
        assert_eq!(auto.batch, Some(("cpu".to_string(), txs.len())));
        assert_eq!(host.transactions, None);
        assert_eq!(auto.results, host.results);
        for (i, tx) in txs.iter().enumerate() {
            assert_eq!(
                auto.results[3 * i].clone().map_err(|e| e.to_string()),
                recover_raw(tx).map_err(|e| e.to_string()),
                "record {i}"
            );
            assert_eq!(
                auto.results[3 * i + 2].as_ref().unwrap_err().to_string(),
                format!("v: record {i}")
            );
        }
        assert!(TxFault::from_code(TX_DEFER).is_none());
    }
}
