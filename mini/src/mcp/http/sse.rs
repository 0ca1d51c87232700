//! Server-sent events over a blocking reader, bounded in memory on any input.

use std::io::{BufRead, BufReader, Read};

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Event {
    pub(super) data: Option<String>,
    pub(super) event: Option<String>,
    pub(super) id: Option<String>,
    pub(super) retry: Option<u64>,
}
/// Why an event stream could not be read further.
#[derive(Debug)]
pub(super) enum ReadFailure {
    /// A line or an event passed the limit.
    TooLarge,
    Io(std::io::Error),
}

/// A server-sent-events parser over a blocking reader, after the WHATWG standard: lines
/// end in CR, LF or CRLF; `data` lines join with `\n`; a blank line ends an event;
/// comments, unknown fields, an `id` holding NUL and a non-numeric `retry` are ignored;
/// an event cut off by the end of the stream is dropped. Lines and events are bounded by
/// `max` bytes, so memory stays bounded on any input.
///
/// Not the model client's `llm::sse` parser: that one takes lines its caller has read
/// whole (a model's events are small) and keeps an event cut off at the end (a model
/// stream's last chunk); here an event may be 16 MiB, lines are read within the limit
/// as they arrive, and a cut-off message must not pass as complete.
pub(super) struct SseReader<R> {
    input: BufReader<R>,
    max: usize,
    line: Vec<u8>,
    /// The last line ended in CR: a LF right after it belongs to it.
    after_cr: bool,
    /// No line read yet (a byte order mark may open the stream).
    at_start: bool,
    event: Event,
    has_field: bool,
    /// Bytes of the event's field lines so far.
    size: usize,
}

impl<R: Read> SseReader<R> {
    pub(super) fn new(input: R, max: usize) -> Self {
        SseReader {
            input: BufReader::new(input),
            max,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event: Event::default(),
            has_field: false,
            size: 0,
        }
    }

    /// The next event; `None` at the end of the stream.
    pub(super) fn next_event(&mut self) -> Result<Option<Event>, ReadFailure> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if self.line.is_empty() {
                if self.has_field {
                    self.has_field = false;
                    self.size = 0;
                    return Ok(Some(std::mem::take(&mut self.event)));
                }
                continue;
            }
            if self.line[0] == b':' {
                continue;
            }
            self.size = self.size.saturating_add(self.line.len() + 1);
            if self.size > self.max {
                return Err(ReadFailure::TooLarge);
            }
            self.field();
        }
    }

    /// Reads one line into `self.line`; false at the end of the stream (a last line
    /// without its end is dropped with the event it belonged to).
    fn read_line(&mut self) -> Result<bool, ReadFailure> {
        self.line.clear();
        loop {
            let chunk = self.input.fill_buf().map_err(ReadFailure::Io)?;
            if chunk.is_empty() {
                return Ok(false);
            }
            let skip = usize::from(self.after_cr && chunk[0] == b'\n');
            self.after_cr = false;
            let rest = &chunk[skip..];
            match rest.iter().position(|b| matches!(b, b'\n' | b'\r')) {
                Some(end) => {
                    self.line.extend_from_slice(&rest[..end]);
                    self.after_cr = rest[end] == b'\r';
                    self.input.consume(skip + end + 1);
                    break;
                }
                None => {
                    self.line.extend_from_slice(rest);
                    let used = chunk.len();
                    self.input.consume(used);
                }
            }
            if self.line.len() > self.max {
                return Err(ReadFailure::TooLarge);
            }
        }
        if self.line.len() > self.max {
            return Err(ReadFailure::TooLarge);
        }
        if std::mem::take(&mut self.at_start) && self.line.starts_with(b"\xEF\xBB\xBF") {
            self.line.drain(..3);
        }
        Ok(true)
    }

    /// Applies the field on `self.line` (not blank, not a comment) to the event.
    fn field(&mut self) {
        let line = &self.line;
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match name {
            b"data" => {
                match &mut self.event.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&text());
                    }
                    None => self.event.data = Some(text()),
                }
                self.has_field = true;
            }
            b"event" => {
                self.event.event = Some(text());
                self.has_field = true;
            }
            b"id" if !value.contains(&0) => {
                self.event.id = Some(text());
                self.has_field = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = text().parse() {
                    self.event.retry = Some(ms);
                    self.has_field = true;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
