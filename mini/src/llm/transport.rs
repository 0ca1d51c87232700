//! One HTTP exchange with the model server, run on a worker thread.
//!
//! The socket blocks; the caller must not. The worker sends the request and hands back
//! the response as events (status and headers, then each line of a stream, or the
//! whole body) over a bounded channel, while the caller waits in 50 ms slices, looking
//! at its cancel flag and at the stream's idle time. When the caller gives up (Ctrl-C,
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
//! Bodies over 16 MiB are refused.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use crate::config::Timeouts;

/// Largest body accepted from a model server.
pub(crate) const MAX_BODY: u64 = 16 * 1024 * 1024;

/// Timeout phases as users read them in errors.
pub(crate) const PHASE_FIRST_BYTE: &str = "waiting for the first byte";
pub(crate) const PHASE_IDLE: &str = "stream idle between chunks";
pub(crate) const PHASE_OVERALL: &str = "whole request";
pub(crate) const PHASE_SEND: &str = "sending the request";

/// How often a waiting caller looks at its cancel flag.
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
    /// One line of a successful stream, without its line end.
    Line(String),
    /// The whole body (errors, unstreamed answers).
    Body(String),
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
    /// The body passed [`MAX_BODY`].
    TooLarge,
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

/// A request to send.
pub(crate) struct Call<'a> {
    pub agent: &'a ureq::Agent,
    pub url: &'a str,
    /// `None` sends a GET.
    pub body: Option<String>,
    /// The `Authorization: Bearer` value; never logged.
    pub api_key: Option<&'a str>,
    pub stream: bool,
    pub timeouts: &'a Timeouts,
}

/// A running exchange.
pub(crate) struct Exchange {
    rx: Receiver<Event>,
}

impl Exchange {
    /// Starts the exchange on a worker thread.
    pub fn start(call: Call<'_>) -> Exchange {
        let (tx, rx) = sync_channel(256);
        let job = Job {
            agent: call.agent.clone(),
            url: call.url.to_string(),
            body: call.body,
            bearer: call.api_key.map(|k| format!("Bearer {k}")),
            stream: call.stream,
            timeouts: *call.timeouts,
        };
        let spawned = std::thread::Builder::new()
            .name("evolve-llm".into())
            .spawn({
                let tx = tx.clone();
                move || job.run(&tx)
            });
        if let Err(e) = spawned {
            let _ = tx.send(Event::Failed(Failure::Spawn(e)));
        }
        Exchange { rx }
    }

    /// The next event; `Idle` when `idle` (if any) passed first; `Cancelled` as soon as
    /// the flag is seen. A worker that vanished reads as the end of the stream.
    pub fn next(&self, idle: Option<Duration>, cancel: &AtomicBool) -> Next {
        let deadline = idle.map(|d| Instant::now() + d);
        loop {
            if cancel.load(Ordering::Relaxed) {
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
            match self.rx.recv_timeout(slice) {
                Ok(e) => return Next::Event(e),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Next::Event(Event::End),
            }
        }
    }
}

/// What the worker owns.
struct Job {
    agent: ureq::Agent,
    url: String,
    body: Option<String>,
    bearer: Option<String>,
    stream: bool,
    timeouts: Timeouts,
}

impl Job {
    fn run(self, tx: &SyncSender<Event>) {
        let t = &self.timeouts;
        let result = match self.body {
            Some(body) => {
                let mut req = self
                    .agent
                    .post(&self.url)
                    .header("Content-Type", "application/json");
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
                req.send(body)
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
        let reader = resp.into_body().into_reader().take(MAX_BODY + 1);
        if self.stream && (200..300).contains(&status) {
            stream_lines(reader, tx);
        } else {
            let mut bytes = Vec::new();
            let event = match BufReader::new(reader).read_to_end(&mut bytes) {
                Err(e) => Event::Failed(Failure::Http(ureq::Error::from(e))),
                Ok(_) if bytes.len() as u64 > MAX_BODY => Event::Failed(Failure::TooLarge),
                Ok(_) => Event::Body(String::from_utf8_lossy(&bytes).into_owned()),
            };
            let _ = tx.send(event);
        }
    }
}

/// Sends each line as it arrives; stops when the caller is gone.
fn stream_lines(reader: impl Read, tx: &SyncSender<Event>) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut total = 0u64;
    loop {
        line.clear();
        let event = match reader.read_until(b'\n', &mut line) {
            Ok(0) => Event::End,
            Ok(n) => {
                total += n as u64;
                if total > MAX_BODY {
                    Event::Failed(Failure::TooLarge)
                } else {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    Event::Line(String::from_utf8_lossy(&line).into_owned())
                }
            }
            Err(e) => Event::Failed(Failure::Http(ureq::Error::from(e))),
        };
        let last = !matches!(event, Event::Line(_));
        if tx.send(event).is_err() || last {
            return;
        }
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
