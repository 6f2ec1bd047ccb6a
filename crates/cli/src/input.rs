//! Streaming JSON Lines input: records arrive in chunks, read on their own thread, so a file of
//! 10⁷ records never sits whole in memory and reading overlaps verification.

use anyhow::Context;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::mpsc;

/// One input line: its 1-based number and its text, or why it could not be read as text.
pub type Line = (u64, Result<String, String>);

/// Opens `path` (`-` or none for standard input).
pub fn open(path: Option<&Path>) -> anyhow::Result<Box<dyn Read + Send>> {
    match path {
        None => Ok(Box::new(std::io::stdin())),
        Some(p) if p == Path::new("-") => Ok(Box::new(std::io::stdin())),
        Some(p) => Ok(Box::new(
            std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?,
        )),
    }
}

/// Reads `input` on a background thread and yields chunks of up to `chunk` lines, in order.
/// At most two chunks wait in memory at a time.
pub fn chunks(
    input: Box<dyn Read + Send>,
    chunk: usize,
) -> impl Iterator<Item = std::io::Result<Vec<Line>>> {
    let (tx, rx) = mpsc::sync_channel(2);
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 20, input);
        let mut number = 0u64;
        loop {
            let mut lines = Vec::with_capacity(chunk);
            while lines.len() < chunk {
                let mut buf = Vec::new();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) => break,
                    Ok(_) => {
                        number += 1;
                        while matches!(buf.last(), Some(b'\n' | b'\r')) {
                            buf.pop();
                        }
                        let text = String::from_utf8(buf)
                            .map_err(|_| "line is not valid UTF-8".to_string());
                        lines.push((number, text));
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            let done = lines.len() < chunk;
            if !lines.is_empty() && tx.send(Ok(lines)).is_err() {
                return;
            }
            if done {
                return;
            }
        }
    });
    rx.into_iter()
}
