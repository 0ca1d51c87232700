//! One HTTP exchange with the model server, run on a worker thread.
//!
//! The socket blocks; the caller must not. The worker sends the request and hands back
//! the response as events (status and headers, then each line of a stream, or the
//! whole body) over a bounded channel, while the caller waits in 50 ms slices, looking
//! at its cancel and at the stream's idle time. When the caller gives up (Ctrl-C,
//! idle timeout), it drops the channel; the worker notices at its next line and drops
//! the connection — or, if the server is silent, when ureq's own read timeout fires.
//!
//! Timeouts (from `[model.timeouts]`), per kind of call:
//! - every call: `connect` (TCP + TLS);
//! - a stream: `first_byte` until the response headers arrive (`timeout_recv_response`),
//!   then `per_read` between two lines, enforced here; ureq's per-read limit is set to
//!   the larger of the two only so that a worker blocked on a silent server ends;
//! - not streamed: `overall` for the whole exchange (`timeout_global`) — the first byte
//!   of an unstreamed answer comes when the whole answer is ready, so there is no
//!   separate first-byte limit.
//!
//! What is read is bounded by the call's [`BodyLimit`]: an answer is read up to its limit
//! and handed on cut there (the rest is never read: the connection is dropped), any other
//! body over its limit is refused. A stream is bounded per line, not in total — its lines
//! are handled one by one, and the answer they add up to is capped by the caller. Between
//! the worker and the caller at most [`READ_AHEAD`] bytes wait, so a server that sends
//! faster than the caller reads is held back by the socket, not buffered here.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::settings::Timeouts;

use crate::cancel::Cancel;

/// Largest body accepted from a model server for anything but an answer (model lists,
/// embeddings, error bodies of those).
pub(crate) const MAX_BODY: u64 = 16 * 1024 * 1024;

/// Bytes of lines or bodies the worker may have read ahead of the caller (one line or
/// body of any size still passes when nothing else waits).
const READ_AHEAD: usize = 256 * 1024;
/// Events that may wait, whatever their size.
const READ_AHEAD_EVENTS: usize = 256;

/// Timeout phases as users read them in errors.
pub(crate) const PHASE_FIRST_BYTE: &str = "waiting for the first byte";
pub(crate) const PHASE_IDLE: &str = "stream idle between chunks";
pub(crate) const PHASE_OVERALL: &str = "whole request";
pub(crate) const PHASE_SEND: &str = "sending the request";

/// How often a waiting caller looks at its cancel.
const POLL: Duration = Duration::from_millis(50);

/// The ureq agent shared by every call of a client: statuses are read, not errors;
/// connect timeout from the config; the rest is set per request.
pub(crate) fn agent(t: &Timeouts) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(t.connect))
        .tls_config(crate::tls::config())
        .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// What the worker reports.
#[derive(Debug)]
pub(crate) enum Event {
    /// The response headers arrived.
    Head {
        status: u16,
        content_type: String,
        retry_after: Option<String>,
    },
    /// One line of a successful stream, without its line end. `cut`: the line passed the
    /// limit and this is its beginning; nothing more of the stream is read.
    Line { text: String, cut: bool },
    /// The whole body (errors, unstreamed answers); `cut`: only its first
    /// [`BodyLimit::Cut`] bytes (the rest was not read).
    Body { text: String, cut: bool },
    /// The stream ended.
    End,
    /// The exchange failed.
    Failed(Failure),
}

/// Why an exchange failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Anything ureq reports: connection, TLS, timeout, HTTP syntax.
    Http(ureq::Error),
    /// The body passed its [`BodyLimit::Refuse`] limit (in bytes).
    TooLarge(u64),
    /// No worker thread could be started.
    Spawn(std::io::Error),
}

/// What waiting for the next event gave.
#[derive(Debug)]
pub(crate) enum Next {
    Event(Event),
    /// Nothing arrived within the wait.
    Idle,
    Cancelled,
}

/// A request body and its content type.
#[derive(Clone)]
pub(crate) struct Payload {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

impl Payload {
    /// A JSON body (every chat, embeddings and list request).
    pub fn json(text: String) -> Payload {
        Payload {
            content_type: "application/json".into(),
            bytes: text.into_bytes(),
        }
    }
}

/// A request to send.
pub(crate) struct Call<'a> {
    pub agent: &'a ureq::Agent,
    pub url: &'a str,
    /// `None` sends a GET.
    pub body: Option<Payload>,
    /// The `Authorization: Bearer` value; never logged.
    pub api_key: Option<&'a str>,
    pub stream: bool,
    pub timeouts: &'a Timeouts,
    /// How much of the body (of each line, when streamed) is read.
    pub limit: BodyLimit,
}

/// How much of a body is read, and what happens beyond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyLimit {
    /// At most this many bytes are read; a longer body is handed on cut there (an
    /// answer, which the caller cuts with a note).
    Cut(u64),
    /// A longer body is an error ([`Failure::TooLarge`]).
    Refuse(u64),
}

impl BodyLimit {
    fn bytes(self) -> u64 {
        match self {
            BodyLimit::Cut(n) | BodyLimit::Refuse(n) => n,
        }
    }
}

/// A running exchange.
pub(crate) struct Exchange {
    pipe: Arc<Pipe>,
}

impl Exchange {
    /// Starts the exchange on a worker thread.
    pub fn start(call: Call<'_>) -> Exchange {
        let pipe = Arc::new(Pipe::default());
        let job = Job {
            agent: call.agent.clone(),
            url: call.url.to_string(),
            body: call.body,
            bearer: call.api_key.map(|k| format!("Bearer {k}")),
            stream: call.stream,
            timeouts: *call.timeouts,
            limit: call.limit,
        };
        let tx = Sender(Arc::clone(&pipe));
        if let Err(e) = std::thread::Builder::new()
            .name("evolve-llm".into())
            .spawn(move || job.run(&tx))
        {
            // The closure (and its sender) is gone: the pipe reads as ended after this.
            pipe.lock()
                .events
                .push_back(Event::Failed(Failure::Spawn(e)));
        }
        Exchange { pipe }
    }

    /// The next event; `Idle` when `idle` (if any) passed first; `Cancelled` as soon as
    /// the flag is seen. A worker that vanished reads as the end of the stream.
    pub fn next(&self, idle: Option<Duration>, cancel: &Cancel) -> Next {
        let deadline = idle.map(|d| Instant::now() + d);
        loop {
            if cancel.is_cancelled() {
                return Next::Cancelled;
            }
            let slice = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Next::Idle;
                    }
                    (d - now).min(POLL)
                }
                None => POLL,
            };
            match self.pipe.recv_timeout(slice) {
                Received::Event(e) => return Next::Event(e),
                Received::Timeout => {}
                Received::Ended => return Next::Event(Event::End),
            }
        }
    }
}

impl Drop for Exchange {
    /// The caller has gone: the worker stops at its next send.
    fn drop(&mut self) {
        self.pipe.lock().receiver_gone = true;
        self.pipe.changed.notify_all();
    }
}

/// The events between the worker and the caller, bounded by count and by bytes
/// ([`READ_AHEAD`]): a bounded channel counts only events, and 256 lines of megabytes
/// each would all be held.
#[derive(Default)]
struct Pipe {
    state: Mutex<PipeState>,
    changed: Condvar,
}

#[derive(Default)]
struct PipeState {
    events: VecDeque<Event>,
    /// Text bytes of `events`.
    bytes: usize,
    receiver_gone: bool,
    sender_gone: bool,
}

/// What [`Pipe::recv_timeout`] gave.
enum Received {
    Event(Event),
    Timeout,
    /// The worker has finished and everything it sent was taken.
    Ended,
}

/// The worker's end of the pipe; dropping it ends the pipe.
struct Sender(Arc<Pipe>);

/// The caller has gone.
struct Gone;

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, PipeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn recv_timeout(&self, wait: Duration) -> Received {
        let deadline = Instant::now() + wait;
        let mut st = self.lock();
        loop {
            if let Some(e) = st.events.pop_front() {
                st.bytes -= e.size();
                drop(st);
                self.changed.notify_all();
                return Received::Event(e);
            }
            if st.sender_gone {
                return Received::Ended;
            }
            let now = Instant::now();
            if now >= deadline {
                return Received::Timeout;
            }
            st = self
                .changed
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Sender {
    /// Queues `e`, waiting while the read-ahead is full; `Err` once the caller has gone.
    fn send(&self, e: Event) -> Result<(), Gone> {
        let pipe = &*self.0;
        let size = e.size();
        let mut st = pipe.lock();
        while !st.receiver_gone
            && !st.events.is_empty()
            && (st.events.len() >= READ_AHEAD_EVENTS || st.bytes + size > READ_AHEAD)
        {
            st = pipe
                .changed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if st.receiver_gone {
            return Err(Gone);
        }
        st.bytes += size;
        st.events.push_back(e);
        drop(st);
        pipe.changed.notify_all();
        Ok(())
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.0.lock().sender_gone = true;
        self.0.changed.notify_all();
    }
}

impl Event {
    /// The bytes of text it holds (what the read-ahead counts).
    fn size(&self) -> usize {
        match self {
            Event::Line { text, .. } | Event::Body { text, .. } => text.len(),
            _ => 0,
        }
    }
}

/// What the worker owns.
struct Job {
    agent: ureq::Agent,
    url: String,
    body: Option<Payload>,
    bearer: Option<String>,
    stream: bool,
    timeouts: Timeouts,
    limit: BodyLimit,
}

impl Job {
    fn run(self, tx: &Sender) {
        let t = &self.timeouts;
        let result = match self.body {
            Some(body) => {
                let mut req = self
                    .agent
                    .post(&self.url)
                    .header("Content-Type", body.content_type.as_str());
                req = req.header(
                    "Accept",
                    if self.stream {
                        "text/event-stream"
                    } else {
                        "application/json"
                    },
                );
                if let Some(b) = &self.bearer {
                    req = req.header("Authorization", b.as_str());
                }
                let req = if self.stream {
                    req.config()
                        .timeout_recv_response(Some(t.first_byte))
                        .timeout_per_read(Some(t.first_byte.max(t.per_read)))
                        .build()
                } else {
                    req.config().timeout_global(Some(t.overall)).build()
                };
                req.send(body.bytes)
            }
            None => {
                let mut req = self.agent.get(&self.url);
                if let Some(b) = &self.bearer {
                    req = req.header("Authorization", b.as_str());
                }
                req.config().timeout_global(Some(t.overall)).build().call()
            }
        };
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Event::Failed(Failure::Http(e)));
                return;
            }
        };
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let head = Event::Head {
            status,
            content_type: header("content-type").unwrap_or_default(),
            retry_after: header("retry-after"),
        };
        if tx.send(head).is_err() {
            return;
        }
        let length: Option<u64> = header("content-length").and_then(|v| v.trim().parse().ok());
        let limit = self.limit.bytes();
        let reader = resp.into_body().into_reader();
        if self.stream && (200..300).contains(&status) {
            stream_lines(reader, limit, tx);
        } else {
            let reader = reader.take(limit + 1);
            // Sized from Content-Length when the server sends one, so the buffer is not
            // grown by doubling to twice the body.
            let hint = length.unwrap_or(0).min(limit + 1);
            let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
            let event = match BufReader::new(reader).read_to_end(&mut bytes) {
                Err(e) => Event::Failed(Failure::Http(ureq::Error::from(e))),
                Ok(_) if bytes.len() as u64 > limit => match self.limit {
                    BodyLimit::Refuse(n) => Event::Failed(Failure::TooLarge(n)),
                    BodyLimit::Cut(n) => {
                        bytes.truncate(usize::try_from(n).unwrap_or(usize::MAX));
                        Event::Body {
                            text: into_text(bytes),
                            cut: true,
                        }
                    }
                },
                Ok(_) => Event::Body {
                    text: into_text(bytes),
                    cut: false,
                },
            };
            let _ = tx.send(event);
        }
    }
}

/// Sends each line as it arrives; stops when the caller is gone, and after a line
/// longer than `limit` bytes (its first `limit` bytes are sent, marked cut).
fn stream_lines(reader: impl Read, limit: u64, tx: &Sender) {
    let mut reader = BufReader::new(reader);
    loop {
        let mut line = Vec::new();
        let event = match reader.by_ref().take(limit + 1).read_until(b'\n', &mut line) {
            Ok(0) => Event::End,
            Ok(_) if line.len() as u64 > limit && line.last() != Some(&b'\n') => {
                line.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
                Event::Line {
                    text: into_text(line),
                    cut: true,
                }
            }
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Event::Line {
                    text: into_text(line),
                    cut: false,
                }
            }
            Err(e) => Event::Failed(Failure::Http(ureq::Error::from(e))),
        };
        let last = !matches!(event, Event::Line { cut: false, .. });
        if tx.send(event).is_err() || last {
            return;
        }
    }
}

/// The bytes as text without a copy when they are UTF-8 (a character cut at the end,
/// where a limit cut the body, is dropped); invalid bytes become U+FFFD.
fn into_text(mut bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// A ureq timeout's phase, in the words of [`super::LlmError::Timeout`]; `None` for the
/// connect phase, which is reported as a connect error.
pub(crate) fn timeout_phase(t: ureq::Timeout) -> Option<&'static str> {
    use ureq::Timeout as T;
    match t {
        T::Resolve | T::Connect => None,
        T::RecvResponse => Some(PHASE_FIRST_BYTE),
        T::PerRead => Some(PHASE_IDLE),
        T::SendRequest | T::SendBody | T::PerWrite | T::Await100 => Some(PHASE_SEND),
        _ => Some(PHASE_OVERALL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn text_cut_inside_a_character_drops_it_and_bad_bytes_are_replaced() {
        let cases: &[(&[u8], &str)] = &[
            (b"plain", "plain"),
            ("中文".as_bytes(), "中文"),
            (&"中文".as_bytes()[..4], "中"),
            (&"中文".as_bytes()[..5], "中"),
            (b"a\xffb", "a\u{fffd}b"),
        ];
        for (bytes, text) in cases {
            assert_eq!(into_text(bytes.to_vec()), *text, "{bytes:?}");
        }
    }

    #[test]
    fn the_worker_reads_ahead_at_most_the_budget() {
        let pipe = Arc::new(Pipe::default());
        let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let line = "l".repeat(200 * 1024);
        let worker = {
            let tx = Sender(Arc::clone(&pipe));
            let sent = Arc::clone(&sent);
            std::thread::spawn(move || {
                for _ in 0..4 {
                    let event = Event::Line {
                        text: line.clone(),
                        cut: false,
                    };
                    if tx.send(event).is_err() {
                        return;
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Nobody reads: one line of 200 KiB waits, the second would pass 256 KiB.
        std::thread::sleep(Duration::from_millis(200));
        assert!(sent.load(Ordering::SeqCst) <= 1);
        assert!(pipe.lock().bytes <= READ_AHEAD);
        let mut got = 0;
        loop {
            match pipe.recv_timeout(Duration::from_secs(10)) {
                Received::Event(Event::Line { .. }) => got += 1,
                Received::Ended => break,
                Received::Event(_) | Received::Timeout => panic!("the pipe stalled"),
            }
        }
        assert_eq!(got, 4);
        worker.join().expect("the worker");
    }

    #[test]
    fn a_caller_that_has_gone_stops_the_worker() {
        let pipe = Arc::new(Pipe::default());
        let tx = Sender(Arc::clone(&pipe));
        let rx = Exchange {
            pipe: Arc::clone(&pipe),
        };
        assert!(tx.send(Event::End).is_ok());
        drop(rx);
        assert!(tx.send(Event::End).is_err());
    }
}
