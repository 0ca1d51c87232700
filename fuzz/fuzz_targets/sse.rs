//! A model's event stream through the shell's SSE parser (`evolve_mini::sse`, the
//! module `mini/src/llm/sse.rs`), fed as the transport feeds it: the
//! body arrives in reads of arbitrary sizes, is cut into lines at `\n` with the line end
//! (`\n`, `\r\n`) removed and invalid UTF-8 replaced (the loop of `stream_lines` in
//! `mini/src/llm/transport.rs`), and every line goes to `push_line`, then `finish`.
//!
//! The first two bytes of the input choose the read sizes; the rest is the body.
//!
//! Invariants beyond "no panic": the events do not depend on how the body was cut into
//! reads, and are the same, once trimmed as the client trims them, as when the whole body
//! is read at once (`body.lines()`, the non-streamed path in `mini/src/llm/client.rs`);
//! the parser never yields more text than it was given.
#![no_main]

use std::io::{BufRead, BufReader, Read};

use evolve_mini::sse::{self, SseParser};
use libfuzzer_sys::fuzz_target;

/// Hands the body out in reads of 1 to 16 bytes, sizes from a small generator.
struct Chunked<'a> {
    rest: &'a [u8],
    state: u32,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let size = (1 + (self.state >> 16) as usize % 16)
            .min(buf.len())
            .min(self.rest.len());
        buf[..size].copy_from_slice(&self.rest[..size]);
        self.rest = &self.rest[size..];
        Ok(size)
    }
}

/// The events of a body read through the transport's line loop.
fn streamed(reader: impl Read) -> (Vec<String>, Option<String>) {
    let mut reader = BufReader::with_capacity(8, reader);
    let mut parser = SseParser::default();
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).expect("reading memory") == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        parser.push_line(&String::from_utf8_lossy(&line), &mut out);
    }
    parser.finish(&mut out);
    (out, parser.stray)
}

fuzz_target!(|data: &[u8]| {
    let (seed, body) = match data {
        [a, b, rest @ ..] => (u32::from(*a) << 8 | u32::from(*b), rest),
        _ => return,
    };
    let chunked = streamed(Chunked {
        rest: body,
        state: seed,
    });
    let whole = streamed(body);
    assert_eq!(chunked, whole, "the events depend on the read sizes");

    let text = String::from_utf8_lossy(body);
    let mut parser = SseParser::default();
    let mut at_once = Vec::new();
    for line in text.lines() {
        parser.push_line(line, &mut at_once);
    }
    parser.finish(&mut at_once);
    // Compared as the client uses them (`apply_payload` trims): a body ending in `\r\r`
    // without a newline keeps one `\r` through `str::lines`, none through the transport.
    let trimmed = |events: &[String]| {
        events
            .iter()
            .map(|e| e.trim().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        trimmed(&chunked.0),
        trimmed(&at_once),
        "streamed and whole-body reads disagree"
    );

    let given: usize = text.len();
    let yielded: usize = at_once.iter().map(String::len).sum();
    assert!(yielded <= given, "{yielded} bytes of events from {given}");
    if let Some(stray) = &parser.stray {
        assert!(stray.len() <= given);
    }

    for payload in &at_once {
        let _ = sse::split_payloads(payload);
    }
});
