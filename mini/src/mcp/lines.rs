//! A stdio server's stdout, line by line, with one guard: a message longer than
//! [`MAX_LINE`] is not kept. Dropping it silently would leave the call it answered
//! waiting out its whole timeout, to be reported as a hung server; instead the guard
//! answers the request itself with a JSON-RPC error ("larger than 16 MiB"), taking the
//! `id` from the dropped line as it streams past. A request or notification of the
//! server's own (a top-level `method`) is dropped unanswered: its id is in the server's
//! numbering, not evolve's. Memory stays bounded: an over-long line is never held, and
//! each line is handed over in its own buffer, so a big answer's memory goes with it.

use std::io::{BufRead, BufReader, Read};

/// The longest message kept (16 MiB, the limit common MCP SDKs use, a little room kept).
pub(super) const MAX_LINE: usize = 16 * 1024 * 1024 - 1024;

/// The read buffer (a pipe carries 64 KiB at a time).
const CHUNK: usize = 64 * 1024;

/// The longest `id` literal kept from a dropped line.
const MAX_ID: usize = 128;

/// Reads a server's stdout (see the module doc).
pub struct LineGuard<R> {
    input: BufReader<R>,
    server: String,
    max: usize,
}

impl<R: Read> LineGuard<R> {
    pub fn new(inner: R, server: &str) -> Self {
        Self::with_max(inner, server, MAX_LINE)
    }

    /// With a smaller limit, for the tests and `fuzz/fuzz_targets/mcp_message.rs`.
    pub fn with_max(inner: R, server: &str, max: usize) -> Self {
        LineGuard {
            input: BufReader::with_capacity(CHUNK, inner),
            server: server.to_string(),
            max,
        }
    }

    /// The next line without its end — or, in place of an over-long answer, a JSON-RPC
    /// error for its id; `None` at the end of the output (a last line without its
    /// newline is passed on as it is).
    pub fn next_line(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let mut line = Vec::new();
        // The current line is over the limit: its bytes are only scanned for the id.
        let mut dropping: Option<IdScan> = None;
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                return Ok((dropping.is_none() && !line.is_empty()).then_some(line));
            }
            let end = chunk.iter().position(|&b| b == b'\n');
            let part = &chunk[..end.unwrap_or(chunk.len())];
            match &mut dropping {
                Some(scan) => part.iter().for_each(|&b| scan.feed(b)),
                None if line.len() + part.len() > self.max => {
                    let mut scan = IdScan::default();
                    line.iter().chain(part).for_each(|&b| scan.feed(b));
                    dropping = Some(scan);
                    line = Vec::new();
                }
                None => line.extend_from_slice(part),
            }
            let used = end.map_or(chunk.len(), |e| e + 1);
            self.input.consume(used);
            if end.is_none() {
                continue;
            }
            match dropping.take() {
                None => return Ok(Some(line)),
                Some(scan) => {
                    if let Some(reply) = self.refuse(scan) {
                        return Ok(Some(reply));
                    }
                }
            }
        }
    }

    /// The answer in place of a dropped line, if it was an answer to evolve.
    fn refuse(&self, mut scan: IdScan) -> Option<Vec<u8>> {
        scan.feed(b'\n');
        let message = format!(
            "the MCP server {:?} sent a message larger than {} MiB; it was dropped (ask the tool for less)",
            self.server,
            (self.max + 1024) / (1024 * 1024)
        );
        log::warn!("{message}");
        if scan.method {
            return None;
        }
        let id = scan.id.take()?;
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": message},
        });
        Some(reply.to_string().into_bytes())
    }

    /// Bytes this reader keeps between lines.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.input.capacity()
    }
}
/// Finds the top-level `"id"` of a JSON object streaming past, byte by byte, without
/// keeping the object.
#[derive(Default)]
struct IdScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The last top-level string (a key candidate), up to a few bytes.
    key: Vec<u8>,
    key_done: bool,
    /// Reading the value of the top-level "id".
    capturing: bool,
    value: Vec<u8>,
    id: Option<serde_json::Value>,
    /// The object has a top-level "method": a request or notification, not a reply.
    method: bool,
}

impl IdScan {
    fn feed(&mut self, b: u8) {
        if self.capturing {
            self.capture(b);
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 1 && !self.capturing {
                    self.key_done = true;
                }
                return;
            }
            if self.depth == 1 && !self.capturing && self.key.len() < 8 {
                self.key.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && !self.capturing {
                    self.key.clear();
                    self.key_done = false;
                }
            }
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 && self.key_done && self.key == b"id" && self.id.is_none() => {
                self.capturing = true;
                self.value.clear();
            }
            b':' if self.depth == 1 && self.key_done && self.key == b"method" => {
                self.method = true;
            }
            b',' if self.depth == 1 => self.key_done = false,
            _ => {}
        }
    }

    /// Collects the id's value until the top level goes on (`,` or `}`).
    fn capture(&mut self, b: u8) {
        let ends = !self.in_string && self.depth == 1 && (b == b',' || b == b'}');
        if ends {
            self.capturing = false;
            let text = String::from_utf8_lossy(&self.value);
            self.id = serde_json::from_str(text.trim()).ok();
            return;
        }
        if self.value.len() < MAX_ID {
            self.value.push(b);
        } else {
            self.capturing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What evolve reads: every line, each followed by `\n`.
    fn through(input: &[u8], max: usize) -> String {
        let mut guard = LineGuard::with_max(input, "t", max);
        let mut out = String::new();
        while let Some(line) = guard.next_line().expect("read") {
            out.push_str(&String::from_utf8_lossy(&line));
            out.push('\n');
        }
        out
    }

    /// Hands out one byte per read: every line end falls across reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn short_lines_pass_unchanged() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":2}\nlast";
        let want = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":2}\nlast\n";
        assert_eq!(through(input, 100), want);
        let mut guard = LineGuard::with_max(Trickle(input), "t", 100);
        let mut lines = Vec::new();
        while let Some(line) = guard.next_line().expect("read") {
            lines.push(String::from_utf8(line).expect("text"));
        }
        assert_eq!(lines.join("\n") + "\n", want, "byte by byte");
    }

    #[test]
    fn an_oversized_reply_becomes_an_error_for_its_request() {
        let big = "x".repeat(300);
        let cases = [
            // id first, as most servers write it
            (format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{big}\"}}\n"), "7"),
            // id last, after the big result (Node's SDK writes result first)
            (format!("{{\"result\":{{\"text\":\"{big}, \\\"id\\\": 9\"}},\"jsonrpc\":\"2.0\",\"id\":\"r-8\"}}\n"), "\"r-8\""),
        ];
        for (line, id) in cases {
            let out = through(format!("{line}{{\"ok\":1}}\n").as_bytes(), 100);
            let mut lines = out.lines();
            let error: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(error["id"].to_string(), id, "{out}");
            assert!(error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("larger than"));
            assert_eq!(
                lines.next(),
                Some("{\"ok\":1}"),
                "the next message still passes"
            );
        }
    }

    /// Review: after one big (but allowed) answer the reader must not keep buffers of
    /// that size for the life of the connection (16 MiB per server that once sent a
    /// large result, held until evolve exits).
    #[test]
    fn the_buffers_are_released_after_a_big_line() {
        let big = format!("{{\"id\":1,\"result\":\"{}\"}}\n", "z".repeat(4 << 20));
        let input = format!("{big}{{\"ok\":1}}\n");
        let mut guard = LineGuard::with_max(input.as_bytes(), "t", MAX_LINE);
        let first = guard.next_line().expect("read").expect("a line");
        assert_eq!(first.len(), big.len() - 1);
        drop(first);
        let next = guard.next_line().expect("read").expect("a line");
        assert_eq!(next, b"{\"ok\":1}");
        assert!(
            guard.held() < 1 << 20,
            "{} MiB still held after the big line passed",
            guard.held() >> 20
        );
    }

    /// Review: an oversized *request* from the server (`sampling/createMessage`,
    /// `roots/list`, `elicitation/create` with a big payload: its `id` is in the
    /// server's numbering, not evolve's) must not be answered by a made-up *response*
    /// with that id, which would read as the answer to evolve's own pending request of
    /// the same number (both sides count from 0).
    #[test]
    fn an_oversized_request_from_the_server_is_not_made_a_response() {
        let big = "w".repeat(300);
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\",\"params\":{{\"x\":\"{big}\"}}}}\n{{\"ok\":1}}\n"
        );
        let out = through(line.as_bytes(), 100);
        assert_eq!(
            out, "{\"ok\":1}\n",
            "a response was made up for the server's own request"
        );
    }

    #[test]
    fn an_oversized_notification_is_dropped_without_an_answer() {
        let big = "y".repeat(300);
        let out = through(
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"log\",\"params\":\"{big}\"}}\n{{\"ok\":1}}\n"
            )
            .as_bytes(),
            100,
        );
        assert_eq!(out, "{\"ok\":1}\n");
    }

    #[test]
    fn an_oversized_last_line_without_its_end_is_dropped() {
        let out = through(
            format!(
                "{{\"ok\":1}}\n{{\"id\":3,\"result\":\"{}\"",
                "v".repeat(300)
            )
            .as_bytes(),
            100,
        );
        assert_eq!(out, "{\"ok\":1}\n");
    }
}
