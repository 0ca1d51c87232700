//! A call's event stream: its events delivered to the peer until the request is
//! answered, and, when the stream ends first after an event id, resumed with a GET that
//! carries `Last-Event-ID` after the server's `retry`, as the SSE standard and MCP's
//! resumability have it.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use ureq::http::header::ACCEPT;

use super::super::jsonrpc::{Failure, Peer};
use super::error::{shown_body, HttpErrorKind};
use super::link::{content_type_of, Head, HttpLink, Method};
use super::sse::{Event, ReadFailure, SseReader};
use super::{EVENT_STREAM, STREAM_ATTEMPTS, STREAM_RETRY, STREAM_RETRY_MAX};

impl HttpLink {
    /// Reads a POST's event stream until request `id` is answered. A stream that ends or
    /// breaks before the answer, after it gave an event id, is resumed as the SSE standard
    /// and MCP have it: after the server's `retry` (else [`STREAM_RETRY`]) a GET with
    /// `Last-Event-ID`, whose stream carries the rest; again while the resumed streams
    /// bring events (a server that polls sends one each time), until [`STREAM_ATTEMPTS`]
    /// in a row bring none. A stream without an event id cannot be resumed: an error.
    pub(super) fn read_answer_stream(
        &self,
        agent: &ureq::Agent,
        peer: &Arc<Peer>,
        body: impl Read,
        id: u64,
    ) -> Result<(), Failure> {
        let mut resume = Resume::default();
        let mut why = match self.follow(peer, body, id, &mut resume)? {
            Followed::Answered => return Ok(()),
            Followed::Stopped { why, .. } => why,
        };
        let mut failures = 0u32;
        // The last resuming GET that did not get through: it says best what is wrong.
        let mut unreached: Option<Failure> = None;
        loop {
            let Some(last_event) = resume.last_event.clone() else {
                return Err(self.error(HttpErrorKind::Broken(why)));
            };
            if failures >= STREAM_ATTEMPTS {
                return Err(match unreached {
                    Some(Failure::Broken(text)) => Failure::Broken(format!(
                        "{text}, {failures} times resuming the call's event stream after \
                         event {last_event:?}"
                    )),
                    Some(other) => other,
                    None => self.error(HttpErrorKind::Broken(format!(
                        "{why}, {failures} times after resuming at event {last_event:?}"
                    ))),
                });
            }
            // Whoever settled the request meanwhile (the caller's timeout, Ctrl-C, the
            // connection's end) has said what became of it.
            if !sleep_while_open(peer, resume.wait()) || !peer.is_pending(id) {
                return Ok(());
            }
            log::debug!(
                "MCP server {:?}: resuming the answer to request {id} after event {last_event:?}",
                self.0.server
            );
            let session = self.session_id();
            let headers = self.headers(
                &[(ACCEPT, EVENT_STREAM)],
                session.as_ref(),
                Some(&last_event),
            );
            let response = match self.send(agent, Method::Get, &headers, &[]) {
                Ok(response) => response,
                Err(e) => {
                    failures += 1;
                    unreached = Some(e);
                    continue;
                }
            };
            unreached = None;
            let head = Head::of(&response);
            if !(head.success() && head.is(EVENT_STREAM)) {
                return Err(self.error(HttpErrorKind::Protocol(format!(
                    "it ended the event stream without answering, and its answer to the GET \
                     that resumes it (Last-Event-ID {last_event:?}) was HTTP {} ({})",
                    head.status,
                    content_type_of(&head)
                ))));
            }
            match self.follow(peer, response.into_body().into_reader(), id, &mut resume)? {
                Followed::Answered => return Ok(()),
                Followed::Stopped { events, why: now } => {
                    failures = if events == 0 { failures + 1 } else { 0 };
                    why = now;
                }
            }
        }
    }

    /// Reads one event stream, delivering its events and noting where it stopped, until
    /// request `id` is answered or the stream ends; `Err` only for an event over the
    /// limit.
    fn follow(
        &self,
        peer: &Arc<Peer>,
        body: impl Read,
        id: u64,
        resume: &mut Resume,
    ) -> Result<Followed, Failure> {
        let mut events = SseReader::new(body, self.0.limits.event);
        let mut seen = 0usize;
        while peer.is_pending(id) {
            match events.next_event() {
                Ok(Some(event)) => {
                    seen += 1;
                    resume.saw(&event);
                    self.deliver(peer, &event);
                }
                Ok(None) if peer.is_pending(id) => {
                    return Ok(Followed::Stopped {
                        events: seen,
                        why: "the server ended the event stream without answering".into(),
                    })
                }
                Ok(None) => break,
                Err(ReadFailure::Io(e)) => {
                    return Ok(Followed::Stopped {
                        events: seen,
                        why: e.to_string(),
                    })
                }
                Err(e @ ReadFailure::TooLarge) => return Err(self.stream_error(e)),
            }
        }
        Ok(Followed::Answered)
    }

    /// An event's message to the peer.
    pub(super) fn deliver(&self, peer: &Arc<Peer>, event: &Event) {
        let Some(data) = event.data.as_deref().filter(|d| !d.trim().is_empty()) else {
            return;
        };
        match serde_json::from_str::<Value>(data) {
            Ok(message) => peer.dispatch(message),
            Err(_) => log::warn!(
                "MCP server {:?} sent an event that is not JSON (ignored): {}",
                self.0.server,
                shown_body(data.as_bytes(), &self.secrets())
            ),
        }
    }

    pub(super) fn stream_error(&self, e: ReadFailure) -> Failure {
        self.error(match e {
            ReadFailure::TooLarge => HttpErrorKind::TooLarge {
                what: "an event",
                limit: self.0.limits.event,
            },
            ReadFailure::Io(io) => HttpErrorKind::Broken(io.to_string()),
        })
    }
}

/// Sleeps `wait` in short steps; false once the connection has ended.
pub(super) fn sleep_while_open(peer: &Peer, wait: Duration) -> bool {
    let step = Duration::from_millis(100);
    let mut left = wait;
    loop {
        if peer.ended().is_some() {
            return false;
        }
        if left.is_zero() {
            return true;
        }
        let now = left.min(step);
        std::thread::sleep(now);
        left -= now;
    }
}
/// Where an event stream stopped and when to reconnect, as the SSE standard keeps them
/// across connections: the last event id (an empty `id` forgets it) and the server's
/// reconnection time (`retry`).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Resume {
    pub(super) last_event: Option<String>,
    pub(super) retry: Option<u64>,
}

impl Resume {
    pub(super) fn saw(&mut self, event: &Event) {
        if let Some(id) = &event.id {
            self.last_event = Some(id.clone()).filter(|id| !id.is_empty());
        }
        self.retry = event.retry.or(self.retry);
    }

    /// How long to wait before reconnecting: the server's `retry`, else [`STREAM_RETRY`];
    /// at most [`STREAM_RETRY_MAX`].
    pub(super) fn wait(&self) -> Duration {
        self.retry
            .map_or(STREAM_RETRY, Duration::from_millis)
            .min(STREAM_RETRY_MAX)
    }
}

/// How reading one event stream of a request ended.
enum Followed {
    Answered,
    /// The stream ended or broke first, after `events` events.
    Stopped {
        events: usize,
        why: String,
    },
}
