//! Chunks worked on by several threads at once and answered in input order: the skeleton of the
//! bulk commands' pipelines (`verify`, `recover --raw`). While one worker waits on the GPU, the
//! others read and prepare the next chunks; the calling thread writes the answers as their turn
//! comes.
//!
//! Chunks in flight are bounded: one per worker and as many answers waiting for the writer. A
//! failed chunk (a read error, a backend failure) stops the run after every answer before it has
//! been written; the answers after it are dropped.

use std::collections::HashMap;
use std::sync::{mpsc, Mutex};

/// Chunks read in order by whichever worker asks next, each numbered as it is taken: the
/// source of [`run`] for an input read one chunk after another.
pub struct Sequenced<I>(Mutex<(u64, I)>);

impl<I: Iterator> Sequenced<I> {
    pub fn new(chunks: I) -> Self {
        Sequenced(Mutex::new((0, chunks)))
    }

    /// The next chunk and its number, taken together.
    pub fn next(&self) -> Option<(u64, I::Item)> {
        let mut guard = self.0.lock().ok()?;
        let (seq, chunks) = &mut *guard;
        let chunk = chunks.next()?;
        *seq += 1;
        Some((*seq - 1, chunk))
    }

    /// What `look` finds in the chunks' source.
    pub fn inspect<T: Default>(&self, look: impl FnOnce(&I) -> T) -> T {
        self.0.lock().map(|g| look(&g.1)).unwrap_or_default()
    }
}

/// Runs `workers` threads that each take the next chunk (`next`: its sequence number, counting
/// from 0 in input order, and the chunk or the error reading it) and `work` it; `write` gets the
/// answers in sequence order. Returns the first error, a read error, a worker's or the writer's,
/// once the answers before it are written.
pub fn run<C, A>(
    workers: usize,
    next: impl Fn() -> Option<(u64, std::io::Result<C>)> + Sync,
    work: impl Fn(C) -> anyhow::Result<A> + Sync,
    mut write: impl FnMut(A) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    A: Send,
{
    let (tx, rx) = mpsc::sync_channel::<(u64, anyhow::Result<A>)>(workers);
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || loop {
                let Some((seq, chunk)) = next() else { return };
                let answer = chunk
                    .map_err(|e| anyhow::Error::new(e).context("reading input"))
                    .and_then(work);
                let failed = answer.is_err();
                if tx.send((seq, answer)).is_err() || failed {
                    return;
                }
            });
        }
        drop(tx);
        // Dropping `rx` on an error lets the workers stop at their next answer.
        let mut waiting: HashMap<u64, anyhow::Result<A>> = HashMap::new();
        let mut turn = 0u64;
        for (seq, answer) in rx {
            waiting.insert(seq, answer);
            while let Some(answer) = waiting.remove(&turn) {
                turn += 1;
                write(answer?)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Chunks 0..n handed out in order, each worked after a pause that shrinks with its number,
    /// so later chunks tend to finish first.
    fn numbers(n: u64, fail_at: Option<u64>) -> (anyhow::Result<()>, Vec<u64>) {
        let counter = Mutex::new(0u64);
        let mut written = Vec::new();
        let result = run(
            4,
            || {
                let mut c = counter.lock().unwrap();
                (*c < n).then(|| {
                    *c += 1;
                    (*c - 1, Ok(*c - 1))
                })
            },
            |k| {
                std::thread::sleep(std::time::Duration::from_micros(200 * (n - k)));
                if Some(k) == fail_at {
                    anyhow::bail!("chunk {k} failed");
                }
                Ok(k * 10)
            },
            |answer| {
                written.push(answer);
                Ok(())
            },
        );
        (result, written)
    }

    #[test]
    fn answers_are_written_in_input_order() {
        let (result, written) = numbers(40, None);
        assert!(result.is_ok());
        assert_eq!(written, (0..40).map(|k| k * 10).collect::<Vec<_>>());
    }

    #[test]
    fn a_failed_chunk_stops_the_run_after_the_answers_before_it() {
        let (result, written) = numbers(40, Some(17));
        assert_eq!(result.unwrap_err().to_string(), "chunk 17 failed");
        assert_eq!(written, (0..17).map(|k| k * 10).collect::<Vec<_>>());
    }
}
