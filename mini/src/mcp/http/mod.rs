//! MCP's streamable HTTP on ureq, the blocking HTTP client the model already uses, so
//! MCP over HTTP costs no second HTTP stack.
//!
//! Every message evolve sends is a POST of its JSON to the endpoint, with `Accept:
//! application/json, text/event-stream`. The answer to a request comes back as JSON or
//! as an event stream whose events (notifications and requests of the server's among
//! them) are handed to [`Peer::dispatch`] until the request is answered; a notification
//! or a reply is accepted with 202 (any success will do). The `Mcp-Session-Id` the
//! server gives at `initialize` goes with every later request, the negotiated
//! `MCP-Protocol-Version` with every one after the handshake, and the session is deleted
//! (DELETE) when the connection is closed.
//!
//! What it decides:
//! - **Threads.** ureq blocks, and a caller must stay free to notice Ctrl-C and its
//!   timeout, so every request's POST runs on its own short-lived thread
//!   (`mcp-http`), which reads the answer (and its event stream) and ends with it.
//!   `notifications/initialized` is sent on the caller's thread: it must reach the
//!   server before the next request.
//! - **The GET stream** for server notifications (`tools/list_changed` outside a call)
//!   is opened after the handshake on a thread of its own. A server without one answers
//!   405, and that is fine; 401/403/404 end it too; otherwise it reconnects (with the
//!   last event id) after the server's `retry` or 1 s, backing off to 30 s, and gives
//!   up after 5 failures in a row (a stream that ends without an event counts as one).
//!   A thread blocked on a silent stream stays until the server writes or closes —
//!   servers end their streams when the session is deleted.
//! - **A call's event stream that ends before the answer** (a server that polls, or a
//!   broken connection) is resumed when it gave an event id: after the server's `retry`
//!   (or 1 s) a GET with `Last-Event-ID` carries the rest, as the SSE standard and MCP's
//!   resumability have it. The request is never sent again; after 5 resumed streams in
//!   a row without an event, or a server that refuses the GET, the call fails.
//! - **Cancelling.** In revision 2026-07-28 closing a request's answer is its
//!   cancellation, and its servers take no `notifications/cancelled`: each request
//!   runs on a ureq agent of its own (one connection; idle ones are kept for the next
//!   requests), and giving up on it shuts that agent down, which ends the read blocked
//!   on the answer. With a session, the notification is posted instead.
//! - **An expired session** (404 while a session is attached) is reported as
//!   [`Failure::SessionExpired`]: the connection starts a new session and sends the
//!   request once more.
//! - **Timeouts.** Connecting: [`CONNECT_TIMEOUT`]. Nothing else: a tool call may take
//!   minutes before its answer starts, and the per-call timeout is the caller's (the
//!   thread ends when the server answers or the connection dies). No idle-read timeout
//!   either: a GET stream is legitimately silent for hours.
//! - **Limits** (those of the common MCP SDKs): JSON answers over 16 MiB are refused, an
//!   event over 16 MiB ends its stream with an error, and only 64 KiB of an error page
//!   are read.
//! - **Errors** ([`HttpError`]) name the server's URL without user name, password or
//!   query (where tokens hide), the HTTP status and the first 300 characters of the
//!   server's text (with the bearer token and custom header values blanked out). A
//!   JSON-RPC error in an error status is the server's own error for the request.
//! - **Redirects** are not followed: a POST cannot be replayed safely and a bearer token
//!   must not travel to another host; the error tells the user where to point instead.
//! - **OAuth.** A server evolve logged in to ([`super::oauth::Bearer`]) gets its access
//!   token with every request; a 401 or 403 is shown to the login, which may renew the
//!   token (the request is then sent once more) and words the error otherwise.
//!
//! Where each part lives: `endpoint` checks a server's definition, `error` words what
//! went wrong, `link` holds the session and sends one request, `post` sends a message and
//! reads its answer, `resume` follows a call's event stream and resumes it, `listen` keeps
//! the GET stream, `routing` writes the 2026-07-28 routing headers, `sse` parses event
//! streams.

mod endpoint;
mod error;
mod link;
mod listen;
mod post;
mod resume;
mod routing;
mod sse;

pub use endpoint::shown_url;
pub(super) use endpoint::{bearer_value, endpoint};
pub(super) use error::{describe, HttpErrorKind};
pub(super) use link::HttpLink;
pub(super) use routing::STATELESS_VERSION;

use std::time::Duration;

use ureq::http::HeaderName;

/// TCP + TLS must be done within this: the model client's default `connect` too.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Characters of a server's error text shown to the user.
const SHOWN_BODY: usize = 300;

/// The largest JSON answer read (16 MiB, as the common MCP SDKs).
const MAX_JSON: usize = 16 * 1024 * 1024;
/// The largest event of an event stream.
const MAX_EVENT: usize = 16 * 1024 * 1024;
/// The part of an error page read.
const MAX_ERROR: usize = 64 * 1024;

/// How long closing waits for messages still being sent before the DELETE.
const POSTING_WAIT: Duration = Duration::from_secs(1);
/// How long closing waits for the session's DELETE.
const DELETE_WAIT: Duration = Duration::from_secs(2);
/// The GET stream reconnects after this unless the server said otherwise (`retry`).
const STREAM_RETRY: Duration = Duration::from_secs(1);
/// … backing off to this after failures.
const STREAM_RETRY_MAX: Duration = Duration::from_secs(30);
/// … and gives up after this many failures in a row.
const STREAM_ATTEMPTS: u32 = 5;

/// The session header (MCP streamable HTTP).
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// Where a resumed event stream starts again (the SSE standard).
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// The protocol version, after the handshake.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// Headers this client sets itself; a server's definition may not set them.
const OWN_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "last-event-id",
    "mcp-protocol-version",
];

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

#[cfg(test)]
mod tests;
