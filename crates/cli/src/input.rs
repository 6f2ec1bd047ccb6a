//! Streaming JSON Lines input: records arrive in chunks, read on their own thread, so a file of
//! 10⁷ records never sits whole in memory and reading overlaps verification.
//!
//! Chunks are cut two ways. From a regular file every chunk is full (the last excepted): reading
//! never waits long, and large chunks keep a GPU busy. From a pipe, a terminal or a socket, a
//! chunk is also cut as soon as the lines read so far are all the input that has arrived, so a
//! producer that writes one line and waits for its answer gets it at once rather than after
//! 65,536 more lines; while a chunk is being verified the next one fills, so a fast producer
//! still gets large chunks.

use anyhow::Context;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

/// One input line: its 1-based number and its text, or why it could not be read as text.
pub type Line = (u64, Result<String, String>);

/// An opened input and how to cut it into chunks.
pub struct Input {
    reader: Box<dyn Read + Send>,
    /// Not a regular file: input may arrive slowly, so chunks are cut when none is waiting.
    streaming: bool,
}

/// Opens `path` (`-` or none for standard input).
pub fn open(path: Option<&Path>) -> anyhow::Result<Input> {
    match path {
        None => Ok(stdin()),
        Some(p) if p == Path::new("-") => Ok(stdin()),
        Some(p) => {
            let file =
                std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?;
            let streaming = !file.metadata().is_ok_and(|m| m.is_file());
            Ok(Input {
                reader: Box::new(file),
                streaming,
            })
        }
    }
}

fn stdin() -> Input {
    Input {
        reader: Box::new(std::io::stdin()),
        streaming: !stdin_is_regular_file(),
    }
}

/// Whether standard input is redirected from a regular file (`< records.jsonl`).
#[cfg(unix)]
fn stdin_is_regular_file() -> bool {
    use std::os::fd::AsFd;
    std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|m| m.is_file())
}

#[cfg(not(unix))]
fn stdin_is_regular_file() -> bool {
    false
}

/// Lines read and not yet taken, with what the reader knows of the end.
#[derive(Default)]
struct Queue {
    batches: VecDeque<Vec<Line>>,
    lines: usize,
    finished: bool,
    error: Option<std::io::Error>,
    consumer_gone: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// Chunks of at most `chunk` lines, in order; dropping it lets the reader thread stop.
pub struct Chunks {
    shared: Arc<Shared>,
    chunk: usize,
}

/// Reads `input` on a background thread and yields chunks of 1 to `chunk` lines, in order (see
/// the module docs for where chunks are cut). At most about two chunks of lines wait in memory.
pub fn chunks(input: Input, chunk: usize) -> Chunks {
    let chunk = chunk.max(1);
    let shared = Arc::new(Shared::default());
    let producer = Arc::clone(&shared);
    std::thread::spawn(move || read_lines(input, chunk, &producer));
    Chunks { shared, chunk }
}

/// The reader thread: splits `input` into lines and queues them in batches.
fn read_lines(input: Input, chunk: usize, shared: &Shared) {
    let mut reader = BufReader::with_capacity(1 << 20, input.reader);
    let mut number = 0u64;
    let mut pending: Vec<Line> = Vec::new();
    loop {
        let mut buf = Vec::new();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {
                number += 1;
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                let text =
                    String::from_utf8(buf).map_err(|_| "line is not valid UTF-8".to_string());
                pending.push((number, text));
                // With no whole line left in the buffer, the next read goes to the operating
                // system and may wait for the producer: hand over what has arrived first.
                let nothing_waiting = input.streaming && !reader.buffer().contains(&b'\n');
                if (pending.len() >= chunk || nothing_waiting)
                    && !push(shared, std::mem::take(&mut pending), chunk)
                {
                    return;
                }
            }
            Err(e) => {
                push(shared, std::mem::take(&mut pending), chunk);
                let mut queue = shared.queue.lock().expect("input queue");
                queue.error = Some(e);
                queue.finished = true;
                shared.changed.notify_all();
                return;
            }
        }
    }
    push(shared, pending, chunk);
    shared.queue.lock().expect("input queue").finished = true;
    shared.changed.notify_all();
}

/// Queues `lines`, first waiting while two chunks' worth wait already; false once nobody reads.
fn push(shared: &Shared, lines: Vec<Line>, chunk: usize) -> bool {
    let mut queue = shared.queue.lock().expect("input queue");
    while queue.lines >= 2 * chunk && !queue.consumer_gone {
        queue = shared.changed.wait(queue).expect("input queue");
    }
    if queue.consumer_gone {
        return false;
    }
    if !lines.is_empty() {
        queue.lines += lines.len();
        queue.batches.push_back(lines);
        shared.changed.notify_all();
    }
    true
}

impl Iterator for Chunks {
    type Item = std::io::Result<Vec<Line>>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut queue = self.shared.queue.lock().expect("input queue");
        while queue.batches.is_empty() {
            if let Some(error) = queue.error.take() {
                return Some(Err(error));
            }
            if queue.finished {
                return None;
            }
            queue = self.shared.changed.wait(queue).expect("input queue");
        }
        // Everything that has arrived, up to a chunk: batches are never split, and the reader
        // never makes one longer than a chunk.
        let mut lines = queue.batches.pop_front().expect("a batch");
        while let Some(next) = queue.batches.front() {
            if lines.len() + next.len() > self.chunk {
                break;
            }
            let next = queue.batches.pop_front().expect("a batch");
            lines.extend(next);
        }
        queue.lines -= lines.len();
        self.shared.changed.notify_all();
        Some(Ok(lines))
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        if let Ok(mut queue) = self.shared.queue.lock() {
            queue.consumer_gone = true;
        }
        self.shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &'static str, streaming: bool, chunk: usize) -> Vec<Vec<Line>> {
        let input = Input {
            reader: Box::new(text.as_bytes()),
            streaming,
        };
        chunks(input, chunk).map(|c| c.unwrap()).collect()
    }

    #[test]
    fn files_come_in_full_chunks_in_order() {
        let chunks = lines_of("a\nb\r\nc\nd\ne", false, 2);
        let sizes: Vec<usize> = chunks.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 2, 1]);
        let all: Vec<Line> = chunks.into_iter().flatten().collect();
        assert_eq!(all[1], (2, Ok("b".to_string())));
        assert_eq!(all[4], (5, Ok("e".to_string())));
    }

    #[test]
    fn bad_utf8_is_a_line_error_and_reading_goes_on() {
        let input = Input {
            reader: Box::new(&b"ok\n\xff\xfe\nok\n"[..]),
            streaming: true,
        };
        let all: Vec<Line> = chunks(input, 10).flat_map(|c| c.unwrap()).collect();
        assert_eq!(all.len(), 3);
        assert!(all[1].1.is_err());
        assert_eq!(all[2], (3, Ok("ok".to_string())));
    }

    /// A reader that fails after its text: the lines before the failure still come out.
    struct FailsAfter(&'static [u8]);
    impl Read for FailsAfter {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_comes_after_the_lines_before_it() {
        let input = Input {
            reader: Box::new(FailsAfter(b"one\ntwo\n")),
            streaming: false,
        };
        let out: Vec<_> = chunks(input, 100).collect();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().unwrap().len(), 2);
        assert!(out[1].is_err());
    }
}
