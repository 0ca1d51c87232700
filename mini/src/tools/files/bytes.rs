//! What the file tools (and the web and skill tools) make of a file's bytes: whether they
//! are text at all, one line read with a cap so an enormous line cannot exhaust memory, a
//! cut that ends on a character boundary, and a size as a person reads it.

use std::io::{self, BufRead};

/// How much of a file's start is checked for NUL bytes to call it binary (as grep does).
const BINARY_SNIFF_BYTES: usize = 8000;

/// A NUL byte near the start: not text.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0)
}

/// `12 B`, `3.4 KiB`, `1.2 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Reads one line into `buf` (without the `\n`), keeping at most `max` bytes of it and
/// skipping the rest, so one enormous line cannot exhaust memory. `false` at the end.
pub(super) fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<bool> {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, i + 1, true),
            None => (chunk.len(), chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(used);
        if done {
            return Ok(true);
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn clip_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
