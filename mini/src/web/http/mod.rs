//! A small HTTP/1.1 server on `std::net`: what `evolve serve` needs and nothing more.
//!
//! Why not tiny_http (the first choice when the dependencies were picked): it starts one thread per connection with
//! no upper bound and sets no read timeout on the sockets it accepts, so a few thousand
//! idle or trickling connections (slowloris) would hold a thread each for ever, and its
//! chunked encoder buffers 8 KiB, which holds back streamed tokens.
//!
//! How a connection goes: the [`poller`] (one thread, poll(2)) accepts it and reads its
//! request head and body without waiting on any one client; only a complete, admitted
//! request goes to a worker thread, which answers it and, on a kept-alive connection,
//! takes the next request if it follows at once, else gives the connection back. So a
//! client that trickles its head or body holds a file descriptor and a small buffer,
//! never a worker, and the waiting ones are bounded ([`limits`]):
//! - the whole head within [`limits::HEAD_DEADLINE`] (408); a body at
//!   [`limits::MIN_BODY_RATE`] after [`limits::BODY_GRACE`] (408);
//! - unauthenticated waiting connections capped per address and overall, bodies being
//!   received capped, everything waiting capped — one more closes the oldest head or the
//!   slowest body of its kind (one that has had [`limits::FAIR_CHANCE`]), never the
//!   newcomer, so a fast client is served however many slow ones share its address;
//! - at most `max_workers` requests answered at once; one more gets `503`;
//! - [`head`] refuses broken heads with a 4xx before any body is read; the admission
//!   check ([`Admit`]) runs on the head alone;
//! - streamed responses are chunked, one chunk per event, flushed at once ([`respond`]).
//!
//! What it leaves to others: routing, auth and every answer (the handler).

mod conn;
mod head;
pub mod limits;
mod poller;
mod respond;
mod sys;

use std::borrow::Cow;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use limits::Limits;
pub use respond::Stream;

/// One request, read in full.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, … as sent (upper case by the standard).
    pub method: String,
    /// The path, still percent-encoded (the router decodes segments).
    pub path: String,
    /// The query string without `?` (may be empty).
    pub query: String,
    /// Header names in lower case, values trimmed, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The client's address.
    pub peer: SocketAddr,
    /// The address the client reached (this server's side of the connection).
    pub local: SocketAddr,
    /// An HTTP/1.0 request (streams to it are not chunked).
    pub http10: bool,
}

impl Request {
    /// The first header of that (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A query parameter, percent-decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_value(&self.query, name)
    }
}

/// A value from `application/x-www-form-urlencoded` text (a query string or a form).
pub fn form_value(text: &str, name: &str) -> Option<String> {
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(&k.replace('+', " "))? == name)
            .then(|| percent_decode(&v.replace('+', " ")))
            .flatten()
    })
}

/// Decodes `%XX` escapes; `None` when they are malformed (a `%` not followed by two hex
/// digits) or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, &b)| {
        b != b'%'
            || bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if !well_formed {
        return None;
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// What a streamed response does once its headers are out.
pub type StreamFn<'a> = Box<dyn FnOnce(&mut Stream<'_>) + 'a>;

/// A response body.
pub enum Body<'a> {
    /// All at once.
    Bytes(Cow<'static, [u8]>),
    /// Chunked, written by the closure.
    Stream(StreamFn<'a>),
}

/// A response.
pub struct Response<'a> {
    /// The status code.
    pub status: u16,
    /// Headers besides Content-Length, Transfer-Encoding, Connection.
    pub headers: Vec<(Cow<'static, str>, String)>,
    /// The body.
    pub body: Body<'a>,
}

impl<'a> Response<'a> {
    /// A complete response.
    pub fn bytes(status: u16, content_type: &str, body: impl Into<Cow<'static, [u8]>>) -> Self {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.to_string())],
            body: Body::Bytes(body.into()),
        }
    }

    /// A JSON response.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self::bytes(
            status,
            "application/json",
            serde_json::to_vec(value).unwrap_or_default(),
        )
    }

    /// A streamed response (`text/event-stream`).
    pub fn sse(f: StreamFn<'a>) -> Self {
        Response {
            status: 200,
            headers: vec![
                (
                    "Content-Type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("Cache-Control".into(), "no-cache".into()),
                ("X-Accel-Buffering".into(), "no".into()),
            ],
            body: Body::Stream(f),
        }
    }

    /// Adds a header.
    pub fn with(mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// The handler of every request.
pub type Handler = dyn Fn(&Request) -> Response<'static> + Send + Sync;

/// What the admission check decided on a request's head (its body still unread).
pub enum Admission {
    /// Served, and the request showed who sent it (the token; in loopback mode, any
    /// request): its connection no longer counts with the unauthenticated ones.
    Authenticated,
    /// Served without proof (a public route such as `/health` or the login page).
    Public,
    /// Refused with this answer; the body is never read.
    Refused(Response<'static>),
}

/// The admission check, on a request's head (its body still empty). It runs on the
/// poller's thread, between the reads of every waiting connection: it must not block.
pub type Admit = dyn Fn(&Request) -> Admission + Send + Sync;

/// What the poller and the workers of one server share.
struct Shared {
    limits: Limits,
    admit: Arc<Admit>,
    handler: Arc<Handler>,
    shutdown: Arc<AtomicBool>,
    error_body: fn(u16, &str) -> Vec<u8>,
}

/// Hands each request to [`Handler`] — or a canned error for a broken one — until
/// `shutdown` is set; the listener is then dropped and the call returns once every
/// request being answered has finished (connections finish their current response and
/// close).
pub fn serve(
    listener: TcpListener,
    limits: Limits,
    admit: Arc<Admit>,
    handler: Arc<Handler>,
    shutdown: Arc<AtomicBool>,
    error_body: fn(u16, &str) -> Vec<u8>,
) {
    let shared = Arc::new(Shared {
        limits,
        admit,
        handler,
        shutdown,
        error_body,
    });
    poller::run(listener, shared);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_decoded() {
        assert_eq!(
            form_value("a=1&token=x%2By+z", "token").as_deref(),
            Some("x+y z")
        );
        assert_eq!(form_value("q=%E4%B8%AD", "q").as_deref(), Some("中"));
        assert_eq!(form_value("q=%zz", "q"), None);
        assert_eq!(form_value("a=1", "b"), None);
    }

    #[test]
    fn malformed_escapes_are_refused_not_guessed() {
        // A sign is not a hex digit: `%+5` is not byte 0x05.
        for bad in ["%+5", "%-1", "%5", "%", "a%g0", "%C3"] {
            assert_eq!(percent_decode(bad), None, "{bad:?}");
        }
        assert_eq!(percent_decode("%41%62c").as_deref(), Some("Abc"));
        assert_eq!(percent_decode("%c3%a9").as_deref(), Some("é"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
    }
}
