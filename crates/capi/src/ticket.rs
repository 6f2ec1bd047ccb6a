//! Tickets: batches submitted to a context's workers, polled and waited for from any thread.
//!
//! A ticket owns a copy of its rows, so the caller may reuse its buffer as soon as `cs_submit`
//! returns. Its result stays until `cs_ticket_free`, so it can be waited for more than once; a
//! ticket freed before its batch finishes lets the batch finish and drops the result.

use crate::context::{self, Context, Verified};
use crate::status::*;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};

/// One submitted batch.
pub struct Ticket {
    /// The context it was submitted to (for `cs_last_error` after `cs_wait`).
    pub ctx: u64,
    result: Mutex<Option<Result<Verified, Failure>>>,
    done: Condvar,
}

fn tickets() -> &'static RwLock<HashMap<u64, Arc<Ticket>>> {
    static TICKETS: OnceLock<RwLock<HashMap<u64, Arc<Ticket>>>> = OnceLock::new();
    TICKETS.get_or_init(Default::default)
}

/// The ticket behind handle `id`.
pub fn lookup(id: u64) -> Result<Arc<Ticket>, Failure> {
    tickets()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .cloned()
        .ok_or_else(|| Failure::new(CS_ERR_CLOSED, "the ticket is NULL, freed or unknown"))
}

/// Forgets handle `id`; the batch, if still running, finishes unobserved.
pub fn free(id: u64) -> Result<(), Failure> {
    tickets()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id)
        .map(drop)
        .ok_or_else(|| Failure::new(CS_ERR_CLOSED, "the ticket is NULL, freed or unknown"))
}

/// Queues `rows` (already checked for shape; the ticket's own copy) on the workers of `ctx`,
/// handle `ctx_id`; returns the ticket's handle.
pub fn submit(
    ctx_id: u64,
    ctx: Arc<Context>,
    rows: Vec<u8>,
    n_rows: usize,
) -> Result<u64, Failure> {
    let ticket = Arc::new(Ticket {
        ctx: ctx_id,
        result: Mutex::new(None),
        done: Condvar::new(),
    });
    let worker_ticket = ticket.clone();
    let worker_ctx = ctx.clone();
    ctx.spawn(Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(|| {
            let parsed = crate::rows::parse_rows(&rows, n_rows)?;
            worker_ctx.verify(parsed)
        }))
        .unwrap_or_else(|_| {
            Err(Failure::new(
                CS_ERR_INTERNAL,
                "internal error while verifying",
            ))
        });
        *worker_ticket
            .result
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(result);
        worker_ticket.done.notify_all();
    }))?;
    let id = context::next_id();
    tickets()
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, ticket);
    Ok(id)
}

impl Ticket {
    /// Whether the batch has finished.
    pub fn is_done(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Blocks until the batch finishes; its verdicts or why it failed.
    pub fn wait(&self) -> Result<Verified, Failure> {
        let mut slot = self.result.lock().unwrap_or_else(|e| e.into_inner());
        while slot.is_none() {
            slot = self.done.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
        slot.clone().expect("finished")
    }
}
