//! Fault injection at the [`Backend`] boundary: [`FaultyBackend`] wraps a working backend and
//! makes chosen calls fail, panic or answer short, as a broken accelerator would, so the
//! surfaces above it (the `verify` command, the service, the C ABI) can be shown to turn a
//! failed device call into a clean CPU fallback or a clean error, and never into a lost,
//! duplicated or reordered verdict, a panic across the C ABI or a request left hanging.
//!
//! Faults are chosen by a plan, [`FaultPlan`], written as a short text (the same text the
//! `CHAINSIG_FAULT` switch of test builds takes, see `chainsig_cpu::cpu_registry`): terms
//! separated by commas, each naming calls by number, counted from 1 over every
//! `verify_batch`, `verify_messages` and `recover_batch` call the wrapper receives:
//!
//! | term | the call(s) |
//! | --- | --- |
//! | `3` | call 3 fails with a device error |
//! | `2-5` | calls 2 to 5 fail with a device error |
//! | `panic:4` | call 4 panics (a bug in a backend) |
//! | `short:6` | call 6 answers one verdict fewer than it was given items |
//!
//! Every other call goes to the wrapped backend unchanged.

use crate::algorithm::Algorithm;
use crate::backend::{Backend, BackendError, TxAnswer};
use crate::batch::{Batch, RecoverItem, Recovered};
use crate::bitmap::Bitmap;
use crate::messages::MessageBatch;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The name a [`FaultyBackend`] registers under when the `CHAINSIG_FAULT` switch adds one.
pub const FAULT_BACKEND: &str = "fault";

/// The longest plan text accepted (a plan is a handful of terms; anything longer is a mistake).
const MAX_PLAN_CHARS: usize = 256;

/// The largest call number a plan may name.
const MAX_CALL: u64 = 1 << 32;

/// What a chosen call does instead of its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Returns [`BackendError::Device`], as a failed launch or copy does.
    Fail,
    /// Panics, as a bug in a backend would.
    Panic,
    /// Returns one result fewer than it was given items.
    Short,
}

/// Which calls fail and how: ranges of call numbers (from 1), first match wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    terms: Vec<(u64, u64, Fault)>,
}

impl FaultPlan {
    /// Reads a plan (the table in the module docs). An error quotes the term it refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_PLAN_CHARS {
            return Err(format!(
                "fault plan of {} characters (at most {MAX_PLAN_CHARS})",
                text.len()
            ));
        }
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim) {
            let (fault, calls) = match term.split_once(':') {
                Some(("panic", calls)) => (Fault::Panic, calls),
                Some(("short", calls)) => (Fault::Short, calls),
                Some(_) => return Err(format!("fault plan term {}", crate::error::quote(term))),
                None => (Fault::Fail, term),
            };
            let number = |n: &str| -> Result<u64, String> {
                match n.trim().parse::<u64>() {
                    Ok(n) if (1..=MAX_CALL).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "fault plan term {}: call numbers are 1 ..= {MAX_CALL}",
                        crate::error::quote(term)
                    )),
                }
            };
            let (first, last) = match calls.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => (number(calls)?, number(calls)?),
            };
            if first > last {
                return Err(format!(
                    "fault plan term {}: an empty range",
                    crate::error::quote(term)
                ));
            }
            terms.push((first, last, fault));
        }
        Ok(FaultPlan { terms })
    }

    /// What call `n` (from 1) does, if it is chosen.
    pub fn fault_for(&self, n: u64) -> Option<Fault> {
        self.terms
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&n))
            .map(|(_, _, fault)| *fault)
    }
}

/// A backend that forwards to `inner` except for the calls its plan chooses.
pub struct FaultyBackend {
    name: String,
    inner: Arc<dyn Backend>,
    plan: FaultPlan,
    calls: AtomicU64,
}

impl FaultyBackend {
    pub fn new(name: impl Into<String>, inner: Arc<dyn Backend>, plan: FaultPlan) -> Self {
        FaultyBackend {
            name: name.into(),
            inner,
            plan,
            calls: AtomicU64::new(0),
        }
    }

    /// Calls received so far, faulty or not.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Counts one call and runs `work` unless the plan chooses it; `shorten` drops the last
    /// result of an answer for [`Fault::Short`].
    fn call<T>(
        &self,
        work: impl FnOnce() -> Result<T, BackendError>,
        shorten: impl FnOnce(&mut T),
    ) -> Result<T, BackendError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        match self.plan.fault_for(n) {
            None => work(),
            Some(Fault::Fail) => Err(BackendError::Device {
                backend: self.name.clone(),
                reason: format!("injected fault on call {n}"),
            }),
            Some(Fault::Panic) => panic!("injected panic on call {n} of backend {}", self.name),
            Some(Fault::Short) => {
                let mut answer = work()?;
                shorten(&mut answer);
                Ok(answer)
            }
        }
    }
}

/// `map` without its last verdict.
fn drop_last_verdict(map: &mut Bitmap) {
    let len = map.len().saturating_sub(1);
    *map = Bitmap::from_bools((0..len).map(|i| map.get(i)));
}

impl Backend for FaultyBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn supports(&self, alg: Algorithm) -> bool {
        self.inner.supports(alg)
    }

    fn verify_batch(&self, batch: &Batch) -> Result<Bitmap, BackendError> {
        self.call(|| self.inner.verify_batch(batch), drop_last_verdict)
    }

    fn verify_messages(&self, batch: &MessageBatch) -> Result<Bitmap, BackendError> {
        self.call(|| self.inner.verify_messages(batch), drop_last_verdict)
    }

    fn recovers(&self) -> bool {
        self.inner.recovers()
    }

    fn recover_batch(&self, items: &[RecoverItem]) -> Result<Vec<Option<Recovered>>, BackendError> {
        self.call(
            || self.inner.recover_batch(items),
            |signers| {
                signers.pop();
            },
        )
    }

    fn recovers_transactions(&self) -> bool {
        self.inner.recovers_transactions()
    }

    fn recover_transactions(&self, txs: &[&[u8]]) -> Result<Vec<TxAnswer>, BackendError> {
        self.call(
            || self.inner.recover_transactions(txs),
            |answers| {
                answers.pop();
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_read_as_documented_and_refuse_the_rest() {
        let plan = FaultPlan::parse("3, 5-6,panic:8,short:9").unwrap();
        let faults: Vec<_> = (1..=10).map(|n| plan.fault_for(n)).collect();
        use Fault::*;
        assert_eq!(
            faults,
            [
                None,
                None,
                Some(Fail),
                None,
                Some(Fail),
                Some(Fail),
                None,
                Some(Panic),
                Some(Short),
                None
            ]
        );
        for bad in [
            "",
            "0",
            "x",
            "3-2",
            "hang:1",
            "1-",
            "99999999999999",
            "4,,5",
        ] {
            assert!(FaultPlan::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let long = "1,".repeat(200);
        let err = FaultPlan::parse(&long).unwrap_err();
        assert!(err.len() < 100, "{err}");
        let err = FaultPlan::parse(&format!("bogus:{}", "9".repeat(150))).unwrap_err();
        assert!(err.len() < 160, "{err}");
    }
}
