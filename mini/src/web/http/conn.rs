//! One connection between requests: its bytes so far, what it is waiting for
//! ([`Phase`]), and its deadline. [`Conn::advance`] takes what the socket has without
//! waiting and moves the request on, so the same connection can be driven by the
//! poller (waiting on many) or by a worker (right after an answer); it never blocks.
//!
//! It decides the per-request rules: the head within the head deadline, the admission
//! check on the head alone (a refused request's body is never read), the body at the
//! minimum rate, and the answer to each broken request (then a short drain before the
//! close, so that the answer is not lost to a reset). The poller decides who waits.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::head::{self, Parsed, MAX_HEAD};
use super::limits::{Class, Limits, PeerKey};
use super::{respond, sys, Admission, Request, Response, Shared};

/// Bytes read from a socket at a time.
const CHUNK: usize = 16 * 1024;
/// Bytes one [`Conn::advance`] reads at most, so that one fast upload does not keep the
/// poller from the other connections.
const BUDGET: usize = 256 * 1024;
/// How long an answered connection's input is drained before it is closed: enough for
/// the client to read the answer and close first.
const CLOSE_DRAIN: Duration = Duration::from_secs(1);
/// The most input drained from an answered connection before it is closed anyway.
const DRAIN_MAX: usize = 1024 * 1024;

/// What a connection is waiting for.
pub enum Phase {
    /// The first byte of the next request on a kept-alive connection.
    Idle { until: Instant },
    /// The rest of a request head, by `until`.
    Head { until: Instant },
    /// The body of an admitted request.
    Body {
        request: Request,
        keep_alive: bool,
        length: usize,
        started: Instant,
    },
    /// Nothing: it was answered and is closing; its input is drained until the peer
    /// closes or `until`.
    Closing { until: Instant, drained: usize },
}

/// What [`Conn::advance`] got to.
pub enum Step {
    /// Nothing to do until more bytes arrive (or the deadline passes).
    Wait,
    /// A whole request, and whether the client wants the connection kept.
    Ready(Request, bool),
    /// The connection is finished: drop it.
    Closed,
}

/// One client connection that is not being answered by a worker.
pub struct Conn {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// The address the client reached (this server's side of the connection).
    pub local: SocketAddr,
    pub key: PeerKey,
    /// Bytes read and not yet part of a request.
    buf: Vec<u8>,
    /// How far `buf` has been searched for the end of a head.
    scanned: usize,
    pub phase: Phase,
    /// A request on this connection showed the token (any admitted request, in
    /// loopback mode): it no longer counts with the unauthenticated ones.
    pub trusted: bool,
    /// When it entered its current class (oldest first, when room is made).
    pub since: Instant,
}

impl Conn {
    /// A connection just accepted: its head is due within the head deadline.
    pub fn accepted(stream: TcpStream, peer: SocketAddr, limits: &Limits, now: Instant) -> Conn {
        Conn {
            local: stream.local_addr().unwrap_or(peer),
            stream,
            peer,
            key: PeerKey::of(peer.ip()),
            buf: Vec::new(),
            scanned: 0,
            phase: Phase::Head {
                until: now + limits.head_deadline,
            },
            trusted: false,
            since: now,
        }
    }

    /// What it is doing, for the room-making rule.
    pub fn class(&self) -> Class {
        match &self.phase {
            Phase::Closing { .. } => Class::Closing,
            Phase::Body { request, .. } => Class::Body {
                received: request.body.len(),
            },
            Phase::Idle { .. } | Phase::Head { .. } if self.trusted => Class::Authenticated,
            Phase::Idle { .. } | Phase::Head { .. } => Class::Unauthenticated,
        }
    }

    /// When it must have made progress.
    pub fn deadline(&self, limits: &Limits) -> Instant {
        match &self.phase {
            Phase::Idle { until } | Phase::Head { until } | Phase::Closing { until, .. } => *until,
            Phase::Body {
                request, started, ..
            } => limits.body_deadline(*started, request.body.len()),
        }
    }

    /// Answered: waits for the next request, up to the idle timeout.
    pub fn rest(&mut self, limits: &Limits, now: Instant) {
        self.phase = Phase::Idle {
            until: now + limits.idle_timeout,
        };
        self.since = now;
        // An idle connection holds no buffer.
        if self.buf.is_empty() {
            self.buf = Vec::new();
        }
    }

    /// Its deadline passed: an unfinished head or a slow body is answered 408; an idle
    /// or answered connection is closed.
    pub fn expire(&mut self, shared: &Shared, now: Instant) -> Step {
        match &self.phase {
            Phase::Idle { .. } | Phase::Closing { .. } => Step::Closed,
            Phase::Head { .. } => {
                log::debug!("{}: request head not complete in time", self.peer);
                let message = format!(
                    "the request head did not arrive within {} s",
                    shared.limits.head_deadline.as_secs()
                );
                self.refuse(shared, 408, &message, now)
            }
            Phase::Body { .. } => {
                log::debug!("{}: request body too slow", self.peer);
                let message = format!(
                    "the request body arrived too slowly (under {} bytes a second)",
                    shared.limits.min_body_rate
                );
                self.refuse(shared, 408, &message, now)
            }
        }
    }

    /// Answers with an error in the server's shape and closes.
    pub fn refuse(&mut self, shared: &Shared, status: u16, message: &str, now: Instant) -> Step {
        let body = (shared.error_body)(status, message);
        self.answer(Response::bytes(status, "application/json", body), now)
    }

    /// Sends `response` (as far as it fits without waiting), ends the output, and
    /// drains the input for a moment before closing.
    pub fn answer(&mut self, response: Response<'_>, now: Instant) -> Step {
        let _ = sys::send_now(&self.stream, &respond::render(response));
        let _ = self.stream.shutdown(Shutdown::Write);
        self.buf = Vec::new();
        self.phase = Phase::Closing {
            until: now + CLOSE_DRAIN,
            drained: 0,
        };
        self.since = now;
        Step::Wait
    }

    /// Reads what has arrived and moves the request on, never waiting.
    pub fn advance(&mut self, shared: &Shared, now: Instant) -> Step {
        let mut chunk = [0u8; CHUNK];
        let mut budget = BUDGET;
        loop {
            let progress = match self.phase {
                Phase::Closing { .. } => self.drain(&mut chunk),
                Phase::Idle { .. } | Phase::Head { .. } => self.read_head(shared, &mut chunk, now),
                Phase::Body { .. } => self.read_body(shared, &mut chunk, now),
            };
            match progress {
                Progress::Read(n) if n < budget => budget -= n,
                Progress::Read(_) => return Step::Wait,
                Progress::Moved => {}
                Progress::Done(step) => return step,
            }
        }
    }

    /// Discards input until the peer closes.
    fn drain(&mut self, chunk: &mut [u8]) -> Progress {
        let Phase::Closing { drained, .. } = &mut self.phase else {
            return Progress::Moved;
        };
        match read(&self.stream, chunk) {
            Ok(0) | Err(Stop::Broken) => Progress::Done(Step::Closed),
            Ok(n) => {
                *drained += n;
                if *drained > DRAIN_MAX {
                    Progress::Done(Step::Closed)
                } else {
                    Progress::Read(n)
                }
            }
            Err(Stop::Empty) => Progress::Done(Step::Wait),
        }
    }

    fn read_head(&mut self, shared: &Shared, chunk: &mut [u8], now: Instant) -> Progress {
        if !self.buf.is_empty() {
            if let Phase::Idle { .. } = self.phase {
                // The next request has begun: its whole head is due by the deadline.
                self.phase = Phase::Head {
                    until: now + shared.limits.head_deadline,
                };
            }
            if head::may_end(&self.buf, self.scanned) || self.buf.len() > MAX_HEAD {
                match head::parse(&self.buf, shared.limits.max_body) {
                    Parsed::Partial => {}
                    Parsed::Bad(status, message) => {
                        log::debug!("{}: refused: {status} {message}", self.peer);
                        return Progress::Done(self.refuse(shared, status, message, now));
                    }
                    Parsed::Complete(head, taken) => {
                        self.buf.drain(..taken);
                        self.scanned = 0;
                        return self.admit(head, shared, now);
                    }
                }
            }
            self.scanned = self.buf.len();
        }
        match read(&self.stream, chunk) {
            Ok(0) if self.buf.is_empty() => Progress::Done(Step::Closed),
            Ok(0) => {
                let message = "the request ended before its head was complete";
                Progress::Done(self.refuse(shared, 400, message, now))
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Progress::Read(n)
            }
            Err(Stop::Empty) => Progress::Done(Step::Wait),
            Err(Stop::Broken) => Progress::Done(Step::Closed),
        }
    }

    /// The admission check on a complete head: refused at once, or on to its body.
    fn admit(&mut self, head: head::Head, shared: &Shared, now: Instant) -> Progress {
        let mut request = Request {
            method: head.method,
            path: head.path,
            query: head.query,
            headers: head.headers,
            body: Vec::new(),
            peer: self.peer,
            local: self.local,
            http10: head.http10,
        };
        match (shared.admit)(&request) {
            Admission::Refused(response) => {
                log::debug!(
                    "{} {} {} → {} (on its head)",
                    self.peer,
                    request.method,
                    request.path,
                    response.status
                );
                return Progress::Done(self.answer(response, now));
            }
            Admission::Authenticated => self.trusted = true,
            Admission::Public => {}
        }
        if head.length == 0 {
            self.phase = Phase::Idle { until: now };
            return Progress::Done(Step::Ready(request, head.keep_alive));
        }
        if head.expects_continue {
            let _ = sys::send_now(&self.stream, b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        request.body = Vec::with_capacity(head.length.min(64 * 1024));
        self.phase = Phase::Body {
            request,
            keep_alive: head.keep_alive,
            length: head.length,
            started: now,
        };
        self.since = now;
        Progress::Moved
    }

    fn read_body(&mut self, shared: &Shared, chunk: &mut [u8], now: Instant) -> Progress {
        let Phase::Body {
            request, length, ..
        } = &mut self.phase
        else {
            return Progress::Moved;
        };
        let missing = *length - request.body.len();
        if !self.buf.is_empty() {
            // Bytes that came with the head.
            let take = self.buf.len().min(missing);
            request.body.extend(self.buf.drain(..take));
            return Progress::Moved;
        }
        if missing == 0 {
            let Phase::Body {
                request,
                keep_alive,
                ..
            } = std::mem::replace(&mut self.phase, Phase::Idle { until: now })
            else {
                return Progress::Moved;
            };
            return Progress::Done(Step::Ready(request, keep_alive));
        }
        let want = missing.min(chunk.len());
        match read(&self.stream, &mut chunk[..want]) {
            Ok(0) => {
                let message = "the request body ended early";
                Progress::Done(self.refuse(shared, 400, message, now))
            }
            Ok(n) => {
                request.body.extend_from_slice(&chunk[..n]);
                Progress::Read(n)
            }
            Err(Stop::Empty) => Progress::Done(Step::Wait),
            Err(Stop::Broken) => Progress::Done(Step::Closed),
        }
    }
}

/// What one read step did.
enum Progress {
    /// Read this many bytes; go on.
    Read(usize),
    /// Changed phase (or moved buffered bytes); go on.
    Moved,
    /// Stop here.
    Done(Step),
}

/// Why a read got nothing.
enum Stop {
    /// Nothing has arrived.
    Empty,
    /// The connection failed.
    Broken,
}

fn read(stream: &TcpStream, buf: &mut [u8]) -> Result<usize, Stop> {
    loop {
        match sys::recv_now(stream, buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(Stop::Empty),
            Err(_) => return Err(Stop::Broken),
        }
    }
}
