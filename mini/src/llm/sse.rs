//! Server-sent events, one line at a time, as real model servers send them.
//!
//! Follows the SSE grammar (fields `data`, `event`, `id`, `retry`; `:` comments; an event
//! ends at a blank line; several `data` lines join with `\n`) and tolerates the rest of
//! what is seen in practice: `data:` without the space, CRLF line ends (the caller strips
//! them), a missing blank line between events, bare JSON lines (NDJSON), and a last event
//! not followed by a blank line. It only splits events; [`split_payloads`] and the
//! caller decide what the payloads mean.

use std::borrow::Cow;

/// Accumulates lines into event payloads.
#[derive(Debug, Default)]
pub struct SseParser {
    /// `data` lines of the event being read.
    data: Vec<String>,
    /// The first line that is not SSE at all (an HTML error page, plain text): quoted
    /// when a stream yields no event.
    pub stray: Option<String>,
}

impl SseParser {
    /// Feeds one line (without its line end); completed payloads go to `out`.
    pub fn push_line(&mut self, line: &str, out: &mut Vec<String>) {
        self.push(Cow::Borrowed(line), out);
    }

    /// [`SseParser::push_line`] of a line the caller owns: a `data` value is kept
    /// without a copy.
    pub fn push_owned(&mut self, line: String, out: &mut Vec<String>) {
        self.push(Cow::Owned(line), out);
    }

    /// The last line, cut at a limit: it ends the event (and the stream).
    pub fn push_cut_line(&mut self, line: String, out: &mut Vec<String>) {
        self.push_owned(line, out);
        self.dispatch(out);
    }

    fn push(&mut self, line: Cow<'_, str>, out: &mut Vec<String>) {
        let text = line.strip_suffix('\r').unwrap_or(&line);
        if text.trim().is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let end = text.len();
        let (field, start) = match text.split_once(':') {
            Some((f, v)) => (f, end - v.strip_prefix(' ').unwrap_or(v).len()),
            None => (text, end),
        };
        match field {
            "data" => {
                let value = match line {
                    Cow::Owned(mut s) => {
                        s.truncate(end);
                        s.drain(..start);
                        s
                    }
                    Cow::Borrowed(b) => b[start..end].to_string(),
                };
                self.data.push(value);
            }
            "event" | "id" | "retry" => {}
            _ if text.trim_start().starts_with(['{', '[']) => {
                // NDJSON: a bare JSON line is an event of its own.
                let json = text.trim().to_string();
                self.dispatch(out);
                out.push(json);
            }
            _ => {
                // An unknown field is ignored, as the SSE grammar says; remember it in
                // case nothing else comes.
                if self.stray.is_none() {
                    self.stray = Some(text.to_string());
                }
            }
        }
    }

    /// The end of the body: a last event without its blank line still counts.
    pub fn finish(&mut self, out: &mut Vec<String>) {
        self.dispatch(out);
    }

    fn dispatch(&mut self, out: &mut Vec<String>) {
        match self.data.len() {
            0 => {}
            1 => out.extend(self.data.pop()),
            _ => {
                out.push(self.data.join("\n"));
                self.data.clear();
            }
        }
    }
}

/// The JSON payloads in one event's data. Usually the data itself; when a server left
/// out the blank lines between events, several `data:` lines arrive as one event whose
/// joined text is not JSON, and each line is tried on its own. `Err` quotes the bad part.
pub fn split_payloads(data: &str) -> Result<Vec<serde_json::Value>, String> {
    let data = data.trim();
    match serde_json::from_str(data) {
        Ok(v) => Ok(vec![v]),
        Err(first) if data.contains('\n') => data
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != DONE)
            .map(|l| serde_json::from_str(l).map_err(|e| format!("{e} in {l}")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("{first}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The payload that ends an OpenAI stream.
pub(crate) const DONE: &str = "[DONE]";

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[&str]) -> Vec<String> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for l in lines {
            p.push_line(l, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn lines_become_the_events_a_server_meant() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "plain",
                &["data: {\"a\":1}", "", "data: [DONE]", ""],
                &["{\"a\":1}", "[DONE]"],
            ),
            (
                "no space after data:",
                &["data:{\"a\":1}", ""],
                &["{\"a\":1}"],
            ),
            ("CRLF", &["data: {\"a\":1}\r", "\r"], &["{\"a\":1}"]),
            (
                "comments and keep-alives",
                &[": ping", "data: x", ": ping", ""],
                &["x"],
            ),
            (
                "event, id and retry lines",
                &["event: message", "id: 7", "retry: 10", "data: x", ""],
                &["x"],
            ),
            (
                "multi-line data joins with \\n",
                &["data: {\"a\":", "data: 1}", ""],
                &["{\"a\":\n1}"],
            ),
            ("many blank lines", &["", "", "data: x", "", "", ""], &["x"]),
            ("last event without blank line", &["data: x"], &["x"]),
            ("bare data field", &["data", ""], &[""]),
            (
                "NDJSON lines",
                &["{\"a\":1}", "{\"a\":2}"],
                &["{\"a\":1}", "{\"a\":2}"],
            ),
            (
                "unknown fields ignored",
                &["foo: bar", "data: x", ""],
                &["x"],
            ),
            ("only a space is kept off", &["data:  two", ""], &[" two"]),
        ];
        for (name, lines, expected) in cases {
            assert_eq!(events(lines), *expected, "{name}");
        }
    }

    #[test]
    fn the_first_line_that_is_not_sse_is_kept_for_the_error() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for l in ["<html>", "<body>Bad gateway</body>", "data: x"] {
            p.push_line(l, &mut out);
        }
        assert_eq!(p.stray.as_deref(), Some("<html>"));
        let mut clean = SseParser::default();
        for l in [": ping", "event: x", "data: y", ""] {
            clean.push_line(l, &mut out);
        }
        assert_eq!(clean.stray, None);
    }

    #[test]
    fn payloads_split_when_blank_lines_were_left_out() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("{\"a\":1}", Ok(1)),
            ("{\"a\":\n1}", Ok(1)),
            ("{\"a\":1}\n{\"a\":2}", Ok(2)),
            ("{\"a\":1}\n[DONE]", Ok(1)),
            ("{broken", Err(())),
            ("{\"a\":1}\n{broken", Err(())),
        ];
        for (data, expected) in cases {
            let got = split_payloads(data).map(|v| v.len()).map_err(|_| ());
            assert_eq!(got, *expected, "{data:?}");
        }
    }
}
