//! The one-thread reader: an input (a pipe, standard input, a file read in order) read in blocks
//! on its own thread and cut into chunks of lines as the module docs of [`super`] describe: full
//! chunks from a regular file, and from a pipe a chunk also cut when the lines read so far are all
//! that has arrived. Lines past [`MAX_LINE`] are skipped as they are read.

use super::{BlockReader, Buffers, Input, TextChunk, MAX_LINE, READ_BLOCK};
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Chunks read and not yet taken, with what the reader knows of the end.
#[derive(Default)]
struct Queue {
    batches: VecDeque<TextChunk>,
    lines: usize,
    finished: bool,
    error: Option<std::io::Error>,
    consumer_gone: bool,
    /// Time the reader spent reading and cutting lines (not waiting for room in the queue).
    busy: Duration,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// Chunks of at most `chunk` lines, in order; dropping it lets the reader thread stop.
pub struct TextChunks {
    shared: Arc<Shared>,
    chunk: usize,
}

/// Reads `input` on a background thread and yields chunks of 1 to `chunk` lines, in order (see
/// the module docs for where chunks are cut). At most about two chunks of lines wait in memory.
pub fn text_chunks(input: Input, chunk: usize) -> TextChunks {
    let chunk = chunk.max(1);
    let shared = Arc::new(Shared::default());
    let producer = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("chainsig-reader".into())
        .spawn(move || read_chunks(input, chunk, &producer))
        .expect("spawn the input reader");
    TextChunks { shared, chunk }
}

/// The reader thread: reads `input` in blocks into the chunk being filled and queues its
/// lines in chunks. A chunk's buffer is sized from the last full chunk's bytes, so that a chunk is
/// read without the buffer growing (each growth copies what was read and touches new pages).
fn read_chunks(input: Input, chunk: usize, shared: &Shared) {
    let streaming = input.streaming;
    let mut reader = input.into_reader();
    let mut reads = BlockReader::new(READ_BLOCK);
    let mut current = TextChunk::starting_at(1, Vec::with_capacity(2 * READ_BLOCK));
    current.pool = Some(Arc::new(Buffers::default()));
    // Bytes of the last full chunk, and a block to spare: the next chunk's room.
    let mut room = 2 * READ_BLOCK;
    let mut busy = Duration::ZERO;
    // A line past MAX_LINE is being skipped: its bytes are dropped as they are read.
    let mut skipping = false;
    loop {
        let started = Instant::now();
        let scan_from = current.text.len();
        if current.text.capacity() - scan_from < READ_BLOCK {
            current.text.reserve(room.max(READ_BLOCK));
        }
        let n = match reads.append(&mut reader, &mut current.text) {
            Ok(n) => n,
            Err(e) => {
                let rest = current.split_after_last_line();
                push(shared, current, chunk, busy);
                // The partial line before the failure is not a line: it is dropped with the error.
                drop(rest);
                let mut queue = shared.queue.lock().expect("input queue");
                queue.error = Some(e);
                queue.finished = true;
                shared.changed.notify_all();
                return;
            }
        };
        if n == 0 {
            break;
        }
        let mut scan = scan_from;
        if skipping {
            // Drop the long line's bytes up to its newline; without one, the whole read.
            match memchr::memchr(b'\n', &current.text[scan..]) {
                None => current.text.truncate(scan),
                Some(at) => {
                    current.text.drain(scan..=scan + at);
                    current.end_skipped_line();
                    skipping = false;
                }
            }
        }
        loop {
            if current.ends.len() == chunk {
                room = current.tail() + READ_BLOCK;
                let next = current.split_after_last_line_into(room);
                busy += started.elapsed();
                if !push(shared, std::mem::replace(&mut current, next), chunk, busy) {
                    return;
                }
                busy = Duration::ZERO;
                scan = current.tail();
            }
            if skipping {
                break;
            }
            match memchr::memchr(b'\n', &current.text[scan..]) {
                Some(at) => {
                    scan += at + 1;
                    current.end_line(scan);
                }
                None => break,
            }
        }
        // A line still being read and already past the limit is skipped from here on.
        if !skipping && current.text.len() - current.tail() > MAX_LINE {
            current.text.truncate(current.tail());
            skipping = true;
        }
        // Every whole line read so far is queued before the next read, which may wait for the
        // producer: from a pipe, a line is answered as soon as it has arrived.
        if streaming && !current.is_empty() {
            let next = current.split_after_last_line();
            busy += started.elapsed();
            if !push(shared, std::mem::replace(&mut current, next), chunk, busy) {
                return;
            }
            busy = Duration::ZERO;
        } else {
            busy += started.elapsed();
        }
    }
    // A last line without a newline is a line.
    if skipping {
        current.end_skipped_line();
    } else if current.text.len() > current.tail() {
        current.end_line(current.text.len());
    }
    push(shared, current, chunk, busy);
    shared.queue.lock().expect("input queue").finished = true;
    shared.changed.notify_all();
}

/// Queues `lines`, first waiting while two chunks' worth wait already; false once nobody reads.
fn push(shared: &Shared, lines: TextChunk, chunk: usize, busy: Duration) -> bool {
    let mut queue = shared.queue.lock().expect("input queue");
    queue.busy += busy;
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

impl TextChunks {
    /// Time the reader thread has spent reading and cutting lines so far (not waiting for the
    /// consumer).
    pub fn read_time(&self) -> Duration {
        self.shared.queue.lock().map_or(Duration::ZERO, |q| q.busy)
    }
}

impl Iterator for TextChunks {
    type Item = std::io::Result<TextChunk>;

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
            lines.append(next);
        }
        queue.lines -= lines.len();
        self.shared.changed.notify_all();
        Some(Ok(lines))
    }
}

impl Drop for TextChunks {
    fn drop(&mut self) {
        if let Ok(mut queue) = self.shared.queue.lock() {
            queue.consumer_gone = true;
        }
        self.shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::super::TOO_LONG;
    use super::*;
    use std::io::Read;

    /// One input line: its 1-based number and its text, or why it could not be read as text.
    type Line = (u64, Result<String, String>);

    /// [`text_chunks`] with each line as its own `String`.
    fn chunks(input: Input, chunk: usize) -> impl Iterator<Item = std::io::Result<Vec<Line>>> {
        text_chunks(input, chunk).map(|c| {
            c.map(|c| {
                (0..c.len())
                    .map(|k| {
                        (
                            c.number(k),
                            c.line(k).map(str::to_string).map_err(str::to_string),
                        )
                    })
                    .collect()
            })
        })
    }

    fn lines_of(text: &'static str, streaming: bool, chunk: usize) -> Vec<Vec<Line>> {
        let input = Input::from_reader(text.as_bytes(), streaming);
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
        let input = Input::from_reader(&b"ok\n\xff\xfe\nok\n"[..], true);
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

    /// A reader that hands its text out a few bytes at a time.
    struct Trickle(&'static [u8], usize);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_cut_across_reads_come_whole_and_numbered() {
        let text = "first\r\n\nthird line\nfour\nfifth, no newline";
        for piece in [1, 2, 3, 7, 100] {
            for (streaming, chunk) in [(false, 2), (false, 100), (true, 2), (true, 100)] {
                let input = Input::from_reader(Trickle(text.as_bytes(), piece), streaming);
                let chunks: Vec<TextChunk> =
                    text_chunks(input, chunk).map(Result::unwrap).collect();
                assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= chunk));
                let lines: Vec<(u64, &str)> = chunks
                    .iter()
                    .flat_map(|c| (0..c.len()).map(move |k| (c.number(k), c.line(k).unwrap())))
                    .collect();
                assert_eq!(
                    lines,
                    [
                        (1, "first"),
                        (2, ""),
                        (3, "third line"),
                        (4, "four"),
                        (5, "fifth, no newline")
                    ],
                    "pieces of {piece}, streaming {streaming}, chunk {chunk}"
                );
                if !streaming {
                    let sizes: Vec<usize> = chunks.iter().map(TextChunk::len).collect();
                    let want: &[usize] = if chunk == 2 { &[2, 2, 1] } else { &[5] };
                    assert_eq!(sizes, want);
                }
            }
        }
    }

    /// A reader of a line past the limit between short ones, handed out in blocks of `piece`.
    struct Long {
        text: Arc<Vec<u8>>,
        at: usize,
        piece: usize,
    }
    impl Read for Long {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (self.text.len() - self.at).min(buf.len()).min(self.piece);
            buf[..n].copy_from_slice(&self.text[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_as_it_is_read_and_reading_goes_on() {
        let mut text = b"one\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        text.extend_from_slice(b"\nthree\n");
        // At the limit: MAX_LINE bytes before the newline, a carriage return among them.
        text.extend(std::iter::repeat_n(b'y', MAX_LINE - 1));
        text.extend_from_slice(b"\r\nfive\n");
        // Five times the limit: held whole, it would take a buffer of 80 MiB.
        text.extend(std::iter::repeat_n(b'z', 5 * MAX_LINE));
        let text = Arc::new(text);
        let exact = "y".repeat(MAX_LINE - 1);
        for (piece, streaming, chunk) in [
            (READ_BLOCK, false, 100),
            (READ_BLOCK, true, 1),
            (READ_BLOCK / 3 + 1, false, 2),
            (READ_BLOCK / 3 + 1, true, 100),
        ] {
            let input = Input::from_reader(
                Long {
                    text: text.clone(),
                    at: 0,
                    piece,
                },
                streaming,
            );
            let chunks: Vec<TextChunk> = text_chunks(input, chunk).map(Result::unwrap).collect();
            let lines: Vec<(u64, Result<&str, &str>)> = chunks
                .iter()
                .flat_map(|c| (0..c.len()).map(move |k| (c.number(k), c.line(k))))
                .collect();
            let want: [(u64, Result<&str, &str>); 6] = [
                (1, Ok("one")),
                (2, Err(TOO_LONG)),
                (3, Ok("three")),
                (4, Ok(&exact)),
                (5, Ok("five")),
                (6, Err(TOO_LONG)),
            ];
            assert_eq!(
                lines, want,
                "pieces of {piece}, streaming {streaming}, chunk {chunk}"
            );
            // The skipped lines' bytes were never held: no chunk grew to hold one.
            let most = chunks.iter().map(|c| c.text.capacity()).max().unwrap_or(0);
            assert!(most < 5 * MAX_LINE, "a chunk held {most} bytes");
        }
    }

    #[test]
    fn a_read_error_comes_after_the_lines_before_it() {
        let input = Input::from_reader(FailsAfter(b"one\ntwo\n"), false);
        let out: Vec<_> = chunks(input, 100).collect();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].as_ref().unwrap().len(), 2);
        assert!(out[1].is_err());
    }
}
