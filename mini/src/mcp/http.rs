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

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;
use ureq::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use ureq::http::{HeaderName, HeaderValue};

use super::jsonrpc::{Failure, Link, Outgoing, Peer};
use super::oauth::Bearer;
use crate::secret::Secret;

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

/// A server's endpoint with the headers of its definition, checked.
#[derive(Clone)]
pub(super) struct Endpoint {
    url: String,
    /// The configured headers and `Authorization: Bearer …`, values marked sensitive.
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Values blanked out of the server's error text.
    secrets: Vec<String>,
    /// The OAuth login, for a server without an Authorization of its own.
    login: Option<Arc<Bearer>>,
}

impl Endpoint {
    /// Requests carry the login's token (see the module doc).
    pub(super) fn with_login(mut self, login: Arc<Bearer>) -> Endpoint {
        self.login = Some(login);
        self
    }
}

/// The endpoint for `url`, checked: an http(s) URL with a host, header names and
/// values HTTP can carry, none of the headers the client sets itself, not two
/// `Authorization`s. The `Err` text names what to fix in the server's definition and
/// never contains a header value or the token.
pub(super) fn endpoint(
    url: &str,
    headers: &[(String, String)],
    bearer: Option<&Secret>,
) -> Result<Endpoint, String> {
    check_url(url)?;
    let mut out = Endpoint {
        url: url.to_string(),
        headers: Vec::new(),
        secrets: Vec::new(),
        login: None,
    };
    for (name, value) in headers {
        let key = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("{name:?} is not a valid HTTP header name"))?;
        if OWN_HEADERS.contains(&key.as_str()) {
            return Err(format!(
                "header {name:?} is set by the MCP client itself: remove it from the server's headers"
            ));
        }
        if key == AUTHORIZATION && bearer.is_some() {
            return Err(
                "both a bearer token and an Authorization header are set: keep one".to_string(),
            );
        }
        let text = value.trim();
        let mut value = HeaderValue::from_str(text).map_err(|_| {
            format!("the value of header {name:?} has characters an HTTP header cannot carry")
        })?;
        value.set_sensitive(true);
        if text.len() >= 6 && !key.as_str().starts_with("mcp-") {
            out.secrets.push(text.to_string());
        }
        out.headers.push((key, value));
    }
    if let Some(token) = bearer {
        let token = token.expose().trim();
        if token.is_empty() {
            return Err("the bearer token is empty".to_string());
        }
        let value = bearer_value(token).ok_or_else(|| {
            "the bearer token has characters an HTTP header cannot carry (a line break?)"
                .to_string()
        })?;
        out.headers.push((AUTHORIZATION, value));
        out.secrets.push(token.to_string());
    }
    Ok(out)
}

/// An `http://` or `https://` URL with a host.
fn check_url(url: &str) -> Result<(), String> {
    let usable = ureq::http::Uri::try_from(url).ok().is_some_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some_and(|h| !h.is_empty())
    });
    if usable {
        Ok(())
    } else {
        Err(format!(
            "{} is not an http:// or https:// URL of an MCP endpoint (e.g. http://127.0.0.1:3001/mcp)",
            shown_url(url)
        ))
    }
}

/// `Authorization: Bearer <token>`, marked sensitive; `None` if HTTP cannot carry it.
/// (The OAuth login's tokens go the same way.)
pub(super) fn bearer_value(token: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// `url` as errors and logs show it: without user name, password, query or fragment,
/// where credentials are kept.
pub fn shown_url(url: &str) -> String {
    crate::secret::display_url(url)
}

/// A failed exchange with an MCP server over HTTP.
#[derive(Debug)]
pub struct HttpError {
    /// The server's URL as [`shown_url`] prints it.
    pub url: String,
    /// What went wrong.
    pub kind: HttpErrorKind,
}

/// What went wrong talking to an MCP server over HTTP.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpErrorKind {
    /// No connection (refused, unknown host, TLS, connect timeout).
    Unreachable(String),
    /// The server answered with an error status.
    Status {
        status: u16,
        /// The start of its text, one line, secrets blanked.
        body: String,
        /// Where a redirect pointed (query cut).
        location: Option<String>,
    },
    /// The connection broke while sending or reading.
    Broken(String),
    /// An answer or event passed the byte limit.
    TooLarge { what: &'static str, limit: usize },
    /// The answer is not what an MCP endpoint sends.
    Protocol(String),
    /// No thread could be started for the request.
    NoThread(String),
    /// A refusal the OAuth login could not mend: what happened and what to do.
    Login(String),
}

impl HttpError {
    fn new(url: &str, kind: HttpErrorKind) -> HttpError {
        HttpError {
            url: url.to_string(),
            kind,
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = &self.url;
        match &self.kind {
            HttpErrorKind::Unreachable(detail) => write!(
                f,
                "cannot reach the MCP server at {url}: {detail} (is it running, and is the URL right?)"
            ),
            HttpErrorKind::Status {
                status,
                body,
                location,
            } => {
                let reason = ureq::http::StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default();
                write!(f, "the MCP server at {url} answered HTTP {status}{reason}")?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                match (status, location) {
                    // The old HTTP+SSE transport's endpoint (`import` detects it too).
                    (400..=499, _) if url.trim_end_matches('/').ends_with("/sse") => f.write_str(
                        " (a URL ending in /sse is the old HTTP+SSE transport, which evolve does \
                         not speak: use the server's streamable HTTP endpoint, often /mcp, or run \
                         the server over stdio, e.g. through `npx mcp-remote URL`)",
                    ),
                    (300..=399, Some(to)) => write!(f, " (it redirects to {to}: use that URL)"),
                    (300..=399, None) => f.write_str(" (a redirect: check the URL)"),
                    (401 | 403, _) => f.write_str(
                        " (check the bearer token and headers configured for this server)",
                    ),
                    (404, _) => f.write_str(" (check the URL's path, often /mcp)"),
                    _ => Ok(()),
                }
            }
            HttpErrorKind::Broken(detail) => {
                write!(f, "the connection to the MCP server at {url} broke: {detail}")
            }
            HttpErrorKind::TooLarge { what, limit } => write!(
                f,
                "the MCP server at {url} sent {what} larger than {limit} bytes; it was refused"
            ),
            HttpErrorKind::Protocol(detail) => {
                write!(f, "unexpected answer from the MCP server at {url}: {detail}")
            }
            HttpErrorKind::NoThread(detail) => {
                write!(f, "cannot start a thread for a request to {url}: {detail}")
            }
            HttpErrorKind::Login(detail) => write!(f, "the MCP server at {url} {detail}"),
        }
    }
}

impl std::error::Error for HttpError {}

/// One streamable HTTP connection: its endpoint, its session, and the agent (the
/// connection pool) every request shares. Cheap to clone.
#[derive(Clone)]
pub(super) struct HttpLink(Arc<Session>);

struct Session {
    agent: ureq::Agent,
    endpoint: Endpoint,
    /// [`shown_url`] of the endpoint.
    shown: String,
    /// The server's name, for the log.
    server: String,
    /// The `Mcp-Session-Id` the server gave at `initialize`.
    id: Mutex<Option<HeaderValue>>,
    /// The protocol version agreed at `initialize`.
    protocol: Mutex<Option<HeaderValue>>,
    limits: Limits,
    /// Notifications and replies still being POSTed in the background (a
    /// `notifications/cancelled` among them): closing waits for them before the DELETE,
    /// so the server hears of a cancellation while the session still exists.
    posting: (Mutex<usize>, std::sync::Condvar),
    /// Revision 2026-07-28: the agent of each request whose answer is being read, by
    /// id, and agents kept for the next requests (at most [`SPARE_AGENTS`]).
    flights: Mutex<HashMap<u64, ureq::Agent>>,
    spare: Mutex<Vec<ureq::Agent>>,
}

/// Byte limits on what is read.
#[derive(Clone, Copy)]
struct Limits {
    json: usize,
    event: usize,
    error: usize,
}

const LIMITS: Limits = Limits {
    json: MAX_JSON,
    event: MAX_EVENT,
    error: MAX_ERROR,
};

/// The HTTP methods of streamable HTTP.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Post,
    Get,
    Delete,
}

/// The parts of an answer's head that matter here.
#[derive(Debug, Default)]
struct Head {
    status: u16,
    content_type: Option<String>,
    session_id: Option<String>,
    location: Option<String>,
}

impl Head {
    fn of(response: &ureq::http::Response<ureq::Body>) -> Head {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        Head {
            status: response.status().as_u16(),
            content_type: header("content-type"),
            session_id: header("mcp-session-id"),
            location: header("location"),
        }
    }
    fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }
    fn is(&self, media_type: &str) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|ct| media_type_is(ct, media_type))
    }
}

/// `Content-Type` is `expected`, ignoring case and parameters (`; charset=utf-8`).
fn media_type_is(content_type: &str, expected: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

impl HttpLink {
    /// Statuses are read, not errors; redirects are not followed (see the module doc);
    /// only connecting has a time limit.
    pub fn new(server: &str, endpoint: Endpoint) -> HttpLink {
        HttpLink::with_limits(server, endpoint, LIMITS)
    }

    fn with_limits(server: &str, endpoint: Endpoint, limits: Limits) -> HttpLink {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .tls_config(crate::tls::config())
            .user_agent(concat!("evolve/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        HttpLink(Arc::new(Session {
            agent,
            shown: shown_url(&endpoint.url),
            endpoint,
            server: server.to_string(),
            id: Mutex::new(None),
            protocol: Mutex::new(None),
            limits,
            posting: Default::default(),
            flights: Default::default(),
            spare: Default::default(),
        }))
    }

    /// The URL as errors show it.
    pub fn shown(&self) -> &str {
        &self.0.shown
    }

    /// After the handshake: the version goes with every later message.
    pub fn set_protocol(&self, version: &str) {
        if let Ok(mut p) = self.0.protocol.lock() {
            *p = HeaderValue::from_str(version).ok();
        }
    }

    /// Speaks revision 2026-07-28 (no session; each message names its method in the
    /// headers).
    fn stateless(&self) -> bool {
        self.0
            .protocol
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .is_some_and(|v| v.as_bytes() == STATELESS_VERSION.as_bytes())
    }

    /// Forgets the session (a new `initialize` follows).
    pub fn reset(&self) {
        if let Ok(mut id) = self.0.id.lock() {
            *id = None;
        }
        if let Ok(mut p) = self.0.protocol.lock() {
            *p = None;
        }
    }

    fn session_id(&self) -> Option<HeaderValue> {
        self.0.id.lock().ok()?.clone()
    }

    fn error(&self, kind: HttpErrorKind) -> Failure {
        Failure::Broken(HttpError::new(&self.0.shown, kind).to_string())
    }

    /// Session, protocol version, resume point, then the definition's headers.
    fn headers(
        &self,
        fixed: &[(HeaderName, &'static str)],
        session: Option<&HeaderValue>,
        last_event_id: Option<&str>,
    ) -> Vec<(HeaderName, HeaderValue)> {
        let mut headers: Vec<(HeaderName, HeaderValue)> = fixed
            .iter()
            .map(|(name, value)| (name.clone(), HeaderValue::from_static(value)))
            .collect();
        if let Some(id) = session {
            headers.push((SESSION_ID, id.clone()));
        }
        if let Some(version) = self.0.protocol.lock().ok().and_then(|p| p.clone()) {
            headers.push((PROTOCOL_VERSION, version));
        }
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            headers.push((LAST_EVENT_ID, id));
        }
        headers.extend(self.0.endpoint.headers.iter().cloned());
        if let Some(token) = self.0.endpoint.login.as_ref().and_then(|l| l.header()) {
            headers.push((AUTHORIZATION, token));
        }
        headers
    }

    /// The values blanked out of what the server sends back.
    fn secrets(&self) -> Vec<String> {
        let mut secrets = self.0.endpoint.secrets.clone();
        if let Some(login) = &self.0.endpoint.login {
            secrets.extend(login.secrets());
        }
        secrets
    }

    /// Sends one request through ureq.
    fn send(
        &self,
        agent: &ureq::Agent,
        method: Method,
        headers: &[(HeaderName, HeaderValue)],
        body: &[u8],
    ) -> Result<ureq::http::Response<ureq::Body>, Failure> {
        fn with<B>(
            mut builder: ureq::RequestBuilder<B>,
            headers: &[(HeaderName, HeaderValue)],
        ) -> ureq::RequestBuilder<B> {
            for (name, value) in headers {
                builder = builder.header(name.clone(), value.clone());
            }
            builder
        }
        let url = self.0.endpoint.url.as_str();
        log::debug!("MCP HTTP {method:?} {}", self.0.shown);
        let once = |headers: &[(HeaderName, HeaderValue)]| {
            match method {
                Method::Post => with(agent.post(url), headers).send(body),
                Method::Get => with(agent.get(url), headers).call(),
                Method::Delete => with(agent.delete(url), headers).call(),
            }
            .map_err(|e| self.error(describe(e)))
        };
        let response = once(headers)?;
        let Some(login) = &self.0.endpoint.login else {
            return Ok(response);
        };
        let status = response.status().as_u16();
        if !matches!(status, 401 | 403) {
            return Ok(response);
        }
        let challenges: Vec<String> = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        let used = headers.iter().find(|(n, _)| *n == AUTHORIZATION);
        if !login.refused(status, &challenges, used.map(|(_, v)| v)) {
            return Ok(response);
        }
        let mut renewed: Vec<(HeaderName, HeaderValue)> = headers
            .iter()
            .filter(|(n, _)| *n != AUTHORIZATION)
            .cloned()
            .collect();
        renewed.extend(login.header().map(|v| (AUTHORIZATION, v)));
        once(&renewed)
    }

    /// POSTs one message and handles the answer (see the module doc). `Ok` once the
    /// message was taken; for a request, also once it was answered or its answer was
    /// announced for later (202).
    fn post(&self, peer: &Arc<Peer>, body: &[u8], id: Option<u64>) -> Result<(), Failure> {
        let Some(id) = id.filter(|_| self.stateless()) else {
            return self.post_on(&self.0.agent, peer, body, id);
        };
        // Revision 2026-07-28 cancels a request by closing its answer: the request gets
        // an agent (a connection) of its own, which `abandon` can shut down.
        let agent = self
            .lock_spare()
            .pop()
            .unwrap_or_else(|| ureq::Agent::new_with_config(self.0.agent.config().clone()));
        self.lock_flights().insert(id, agent.clone());
        let posted = self.post_on(&agent, peer, body, Some(id));
        if self.lock_flights().remove(&id).is_some() {
            let mut spare = self.lock_spare();
            if spare.len() < SPARE_AGENTS {
                spare.push(agent);
            }
        }
        posted
    }

    fn lock_flights(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ureq::Agent>> {
        self.0.flights.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_spare(&self) -> std::sync::MutexGuard<'_, Vec<ureq::Agent>> {
        self.0.spare.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`HttpLink::post`] through `agent`.
    fn post_on(
        &self,
        agent: &ureq::Agent,
        peer: &Arc<Peer>,
        body: &[u8],
        id: Option<u64>,
    ) -> Result<(), Failure> {
        let session = self.session_id();
        let mut headers = self.headers(
            &[
                (ACCEPT, "application/json, text/event-stream"),
                (CONTENT_TYPE, JSON),
            ],
            session.as_ref(),
            None,
        );
        if self.stateless() {
            headers.extend(routing_headers(body));
        }
        let response = self.send(agent, Method::Post, &headers, body)?;
        let head = Head::of(&response);
        if session.is_none() {
            if let Some(given) = &head.session_id {
                let value = HeaderValue::from_str(given).map_err(|_| {
                    self.error(HttpErrorKind::Protocol(
                        "its session id cannot be sent back as an HTTP header".into(),
                    ))
                })?;
                if let Ok(mut id) = self.0.id.lock() {
                    *id = Some(value);
                }
            }
        }
        let mut body = response.into_body().into_reader();
        if head.success() && head.is(EVENT_STREAM) {
            return match id {
                Some(id) => self.read_answer_stream(agent, peer, body, id),
                // Nothing is awaited: the stream is not read.
                None => Ok(()),
            };
        }
        if matches!(head.status, 202 | 204) {
            return Ok(());
        }
        if head.status == 404 && session.is_some() {
            return Err(Failure::SessionExpired);
        }
        let json = head.is(JSON);
        if !head.success() {
            let auth_failure = matches!(head.status, 401 | 403);
            let limit = if json && !auth_failure {
                self.0.limits.json
            } else {
                self.0.limits.error
            };
            let mut bytes = read_up_to(&mut body, limit).unwrap_or_default();
            // A server restarted on the same port (the TypeScript SDK's examples)
            // answers an old session 400 "No valid session ID": a new session, as for
            // 404 — unless it is the error of the request itself.
            if head.status == 400 && session.is_some() {
                let about_session = String::from_utf8_lossy(&bytes)
                    .to_ascii_lowercase()
                    .contains("session");
                let for_request = serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .is_some_and(|m| m.get("id").is_some_and(|i| !i.is_null()));
                if about_session && !for_request {
                    return Err(Failure::SessionExpired);
                }
            }
            if json && !auth_failure {
                // The server's own JSON-RPC error for the request.
                if let Ok(message) = serde_json::from_slice::<Value>(&bytes) {
                    if message.get("error").is_some()
                        && message.get("id").is_some_and(|i| !i.is_null())
                    {
                        peer.dispatch(message);
                        if id.is_none_or(|id| !peer.is_pending(id)) {
                            return Ok(());
                        }
                    }
                }
            }
            bytes.truncate(self.0.limits.error);
            return Err(self.status_error(&head, &bytes));
        }
        // Notifications and replies need nothing back; servers answer them 200 with
        // anything or nothing as well as 202.
        let Some(id) = id else {
            return Ok(());
        };
        if !json {
            return Err(self.error(HttpErrorKind::Protocol(format!(
                "content type {}, not JSON or an event stream (is this the MCP endpoint?)",
                content_type_of(&head)
            ))));
        }
        let limit = self.0.limits.json;
        let bytes = match read_up_to(&mut body, limit) {
            Ok(bytes) if bytes.len() > limit => {
                return Err(self.error(HttpErrorKind::TooLarge {
                    what: "a response",
                    limit,
                }))
            }
            Ok(bytes) => bytes,
            Err(e) => return Err(self.error(HttpErrorKind::Broken(e.to_string()))),
        };
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(message @ (Value::Object(_) | Value::Array(_))) => peer.dispatch(message),
            Ok(_) => {
                return Err(self.error(HttpErrorKind::Protocol(format!(
                    "JSON that is not a JSON-RPC message: {}",
                    shown_body(&bytes, &self.secrets())
                ))))
            }
            Err(e) => {
                return Err(self.error(HttpErrorKind::Protocol(format!(
                    "JSON that is not a JSON-RPC message ({e}): {}",
                    shown_body(&bytes, &self.secrets())
                ))))
            }
        }
        if peer.is_pending(id) {
            return Err(self.error(HttpErrorKind::Protocol(
                "its answer was not the answer to the request".into(),
            )));
        }
        Ok(())
    }

    /// Reads a POST's event stream until request `id` is answered. A stream that ends or
    /// breaks before the answer, after it gave an event id, is resumed as the SSE standard
    /// and MCP have it: after the server's `retry` (else [`STREAM_RETRY`]) a GET with
    /// `Last-Event-ID`, whose stream carries the rest; again while the resumed streams
    /// bring events (a server that polls sends one each time), until [`STREAM_ATTEMPTS`]
    /// in a row bring none. A stream without an event id cannot be resumed: an error.
    fn read_answer_stream(
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
    fn deliver(&self, peer: &Arc<Peer>, event: &Event) {
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

    fn stream_error(&self, e: ReadFailure) -> Failure {
        self.error(match e {
            ReadFailure::TooLarge => HttpErrorKind::TooLarge {
                what: "an event",
                limit: self.0.limits.event,
            },
            ReadFailure::Io(io) => HttpErrorKind::Broken(io.to_string()),
        })
    }

    /// The error for an error status.
    fn status_error(&self, head: &Head, body: &[u8]) -> Failure {
        let login = self.0.endpoint.login.as_ref();
        if let Some(why) = login.and_then(|l| l.explain(head.status)) {
            return Failure::Unauthorized(
                HttpError::new(&self.0.shown, HttpErrorKind::Login(why)).to_string(),
            );
        }
        self.error(HttpErrorKind::Status {
            status: head.status,
            body: shown_body(body, &self.secrets()),
            location: head.location.as_deref().map(shown_url),
        })
    }

    /// Opens the GET stream for server notifications on its own thread (see the module
    /// doc); nothing for a server that gave no session.
    pub fn listen(&self, peer: &Arc<Peer>) {
        let Some(session) = self.session_id() else {
            return;
        };
        let (link, peer) = (self.clone(), peer.clone());
        let spawned = std::thread::Builder::new()
            .name("mcp-http-get".into())
            .spawn(move || link.listen_on(&peer, &session));
        if let Err(e) = spawned {
            log::warn!(
                "MCP server {:?}: no thread for its notifications: {e}",
                self.0.server
            );
        }
    }

    fn listen_on(&self, peer: &Arc<Peer>, session: &HeaderValue) {
        let server = &self.0.server;
        let mut resume = Resume::default();
        let mut failures = 0u32;
        let mut wait = Duration::ZERO;
        loop {
            if !sleep_while_open(peer, wait) || self.session_id().as_ref() != Some(session) {
                return;
            }
            let headers = self.headers(
                &[(ACCEPT, EVENT_STREAM)],
                Some(session),
                resume.last_event.as_deref(),
            );
            match self.send(&self.0.agent, Method::Get, &headers, &[]) {
                Err(e) => {
                    log::debug!("MCP server {server:?}: its notification stream: {e:?}");
                    failures += 1;
                }
                Ok(response) => {
                    let head = Head::of(&response);
                    match head.status {
                        405 => {
                            log::debug!(
                                "MCP server {server:?} has no notification stream (HTTP 405)"
                            );
                            return;
                        }
                        401 | 403 | 404 => {
                            log::info!(
                                "MCP server {server:?} refused its notification stream (HTTP {}); tool list changes are seen at the next call",
                                head.status
                            );
                            return;
                        }
                        _ if head.success() && head.is(EVENT_STREAM) => {
                            let body = response.into_body().into_reader();
                            let mut events = SseReader::new(body, self.0.limits.event);
                            // A stream that ends without an event counts as a failure:
                            // a server closing every stream at once is not polled
                            // forever.
                            failures += 1;
                            loop {
                                match events.next_event() {
                                    Ok(Some(event)) => {
                                        failures = 0;
                                        resume.saw(&event);
                                        self.deliver(peer, &event);
                                        if peer.ended().is_some() {
                                            return;
                                        }
                                    }
                                    Ok(None) => break,
                                    Err(e) => {
                                        log::debug!(
                                            "MCP server {server:?}: its notification stream: {:?}",
                                            self.stream_error(e)
                                        );
                                        failures = failures.max(1);
                                        break;
                                    }
                                }
                            }
                        }
                        _ => {
                            log::debug!(
                                "MCP server {server:?}: its notification stream answered HTTP {} ({})",
                                head.status,
                                content_type_of(&head)
                            );
                            failures += 1;
                        }
                    }
                }
            }
            if failures >= STREAM_ATTEMPTS {
                log::warn!(
                    "MCP server {server:?}: its notification stream at {} keeps failing; tool list changes are seen at the next call",
                    self.0.shown
                );
                return;
            }
            wait = if failures == 0 {
                resume.wait()
            } else {
                (STREAM_RETRY * (1 << failures.min(5))).min(STREAM_RETRY_MAX)
            };
        }
    }

    /// Deletes the session (the server may then end its streams), waiting at most 2 s;
    /// first, at most 1 s for the messages still being sent (see `posting`).
    pub fn close(&self) {
        let Some(session) = self.session_id() else {
            return;
        };
        {
            let (count, settled) = &self.0.posting;
            let count = count.lock().unwrap_or_else(|e| e.into_inner());
            let waited = settled.wait_timeout_while(count, POSTING_WAIT, |n| *n > 0);
            if waited.is_ok_and(|(_, t)| t.timed_out()) {
                log::debug!(
                    "MCP server {:?}: ending the session with messages still being sent",
                    self.0.server
                );
            }
        }
        let link = self.clone();
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("mcp-http-del".into())
            .spawn(move || {
                let headers = link.headers(&[], Some(&session), None);
                let outcome =
                    link.send(&link.0.agent, Method::Delete, &headers, &[])
                        .map(|response| {
                            let head = Head::of(&response);
                            // 404: gone already; 405: the server keeps sessions until they expire.
                            if !(head.success() || matches!(head.status, 404 | 405)) {
                                let body =
                                    read_up_to(&mut response.into_body().into_reader(), MAX_ERROR)
                                        .unwrap_or_default();
                                log::debug!("{:?}", link.status_error(&head, &body));
                            }
                        });
                let _ = tx.send(outcome);
            });
        if spawned.is_ok() {
            if let Ok(Err(e)) = rx.recv_timeout(DELETE_WAIT) {
                log::debug!("MCP server {:?}: ending its session: {e:?}", self.0.server);
            }
        }
        self.reset();
    }
}

impl Link for HttpLink {
    /// Revision 2026-07-28: closing a request's answer is its cancellation (no
    /// `notifications/cancelled`); the reading thread then ends with an error nobody
    /// waits for.
    fn abandon(&self, id: u64) -> bool {
        let Some(agent) = self.lock_flights().remove(&id) else {
            return false;
        };
        agent.shutdown();
        true
    }

    fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure> {
        if message.wait {
            return self.post(peer, &message.body, message.id);
        }
        let (link, peer) = (self.clone(), peer.clone());
        let counted = message.id.is_none();
        let posting = |change: fn(&mut usize)| {
            let (count, settled) = &link.0.posting;
            change(&mut count.lock().unwrap_or_else(|e| e.into_inner()));
            settled.notify_all();
        };
        if counted {
            posting(|n| *n += 1);
        }
        let spawned = std::thread::Builder::new().name("mcp-http".into()).spawn({
            let link = link.clone();
            move || {
                match (link.post(&peer, &message.body, message.id), message.id) {
                    (Ok(()), _) => {}
                    (Err(e), Some(id)) => peer.fail(id, e),
                    (Err(e), None) => log::debug!(
                        "MCP server {:?}: a message was not taken: {e:?}",
                        link.0.server
                    ),
                }
                if counted {
                    let (count, settled) = &link.0.posting;
                    *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                    settled.notify_all();
                }
            }
        });
        if spawned.is_err() && counted {
            posting(|n| *n -= 1);
        }
        spawned
            .map(|_| ())
            .map_err(|e| self.error(HttpErrorKind::NoThread(e.to_string())))
    }
}

/// How many idle agents of 2026-07-28 requests are kept for the next ones (a
/// connection each, kept alive).
const SPARE_AGENTS: usize = 2;

/// The revision without sessions, whose messages carry their method in the headers.
pub(super) const STATELESS_VERSION: &str = "2026-07-28";

/// `Mcp-Method` (every message of 2026-07-28) and `Mcp-Name` (the tool of a
/// `tools/call`), read from the message itself; a value that is not plain visible ASCII
/// goes as `=?base64?…?=`.
fn routing_headers(body: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let mut headers = Vec::new();
    let mut add = |name: &'static str, value: &str| {
        let plain = !value.is_empty()
            && value
                .bytes()
                .all(|b| (0x21..0x7f).contains(&b) || b == b' ')
            && !value.starts_with(' ')
            && !value.ends_with(' ');
        let text = if plain {
            value.to_string()
        } else {
            format!("=?base64?{}?=", STANDARD.encode(value))
        };
        if let Ok(v) = HeaderValue::from_str(&text) {
            headers.push((HeaderName::from_static(name), v));
        }
    };
    if let Some(method) = message["method"].as_str() {
        add("mcp-method", method);
        if method == "tools/call" {
            if let Some(tool) = message["params"]["name"].as_str() {
                add("mcp-name", tool);
            }
        }
    }
    headers
}

/// Sleeps `wait` in short steps; false once the connection has ended.
fn sleep_while_open(peer: &Peer, wait: Duration) -> bool {
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

/// At most `limit + 1` bytes (one more tells that the limit was passed).
fn read_up_to(body: &mut impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    body.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A ureq failure in the user's words (the OAuth login's requests word most of them
/// so too: `oauth::fetch`).
pub(super) fn describe(e: ureq::Error) -> HttpErrorKind {
    use std::io::ErrorKind as K;
    use ureq::Error as E;
    match e {
        E::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => HttpErrorKind::Unreachable(
            format!("no connection within {} s", CONNECT_TIMEOUT.as_secs()),
        ),
        E::Timeout(t) => HttpErrorKind::Broken(format!("timed out ({t})")),
        E::Io(io) => match io.kind() {
            K::ConnectionRefused => HttpErrorKind::Unreachable("connection refused".into()),
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                HttpErrorKind::Broken("the server closed the connection".into())
            }
            _ => HttpErrorKind::Broken(io.to_string()),
        },
        E::HostNotFound => HttpErrorKind::Unreachable("host not found".into()),
        E::ConnectionFailed => HttpErrorKind::Unreachable("connection failed".into()),
        E::BadUri(_) => HttpErrorKind::Unreachable("not a usable URL".into()),
        E::Tls(m) => HttpErrorKind::Unreachable(format!(
            "TLS failed: {m} (check the server's certificate, or use http:// for a local server)"
        )),
        E::Rustls(r) => HttpErrorKind::Unreachable(format!(
            "TLS failed: {r} (check the server's certificate, or use http:// for a local server)"
        )),
        other => HttpErrorKind::Protocol(format!("not a valid HTTP answer: {other}")),
    }
}

/// The start of a server's text, on one line, secrets blanked, control characters
/// escaped.
fn shown_body(body: &[u8], secrets: &[String]) -> String {
    let mut text = String::from_utf8_lossy(body).into_owned();
    for secret in secrets {
        text = text.replace(secret.as_str(), "***");
    }
    evolve_core::text::escape_controls(&evolve_core::text::one_line(&text, SHOWN_BODY), false)
}

/// The content type for messages, `none` when absent.
fn content_type_of(head: &Head) -> String {
    head.content_type
        .as_deref()
        .map(|ct| evolve_core::text::escape_controls(ct, false))
        .unwrap_or_else(|| "none".into())
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq)]
struct Event {
    data: Option<String>,
    event: Option<String>,
    id: Option<String>,
    retry: Option<u64>,
}

/// Where an event stream stopped and when to reconnect, as the SSE standard keeps them
/// across connections: the last event id (an empty `id` forgets it) and the server's
/// reconnection time (`retry`).
#[derive(Debug, Default, PartialEq)]
struct Resume {
    last_event: Option<String>,
    retry: Option<u64>,
}

impl Resume {
    fn saw(&mut self, event: &Event) {
        if let Some(id) = &event.id {
            self.last_event = Some(id.clone()).filter(|id| !id.is_empty());
        }
        self.retry = event.retry.or(self.retry);
    }

    /// How long to wait before reconnecting: the server's `retry`, else [`STREAM_RETRY`];
    /// at most [`STREAM_RETRY_MAX`].
    fn wait(&self) -> Duration {
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

/// Why an event stream could not be read further.
#[derive(Debug)]
enum ReadFailure {
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
struct SseReader<R> {
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
    fn new(input: R, max: usize) -> Self {
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
    fn next_event(&mut self) -> Result<Option<Event>, ReadFailure> {
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
mod tests {
    use super::*;

    #[test]
    fn routing_headers_name_the_method_and_tool_and_encode_what_is_not_plain() {
        let headers = |body: &str| -> Vec<(String, String)> {
            routing_headers(body.as_bytes())
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
                .collect()
        };
        assert_eq!(
            headers(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#),
            [
                ("mcp-method".to_string(), "tools/call".to_string()),
                ("mcp-name".to_string(), "echo".to_string())
            ]
        );
        // Not plain ASCII, or spaces at an end: standard base64 with padding.
        let named = |name: &str| {
            headers(&format!(
                r#"{{"method":"tools/call","params":{{"name":"{name}"}}}}"#
            ))[1]
                .1
                .clone()
        };
        assert_eq!(named("日本"), "=?base64?5pel5pys?=");
        assert_eq!(named(" a"), "=?base64?IGE=?=");
        assert_eq!(named("abé"), "=?base64?YWLDqQ==?=");
        assert!(headers("not json").is_empty());
    }
    use std::io::{Cursor, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Instant;

    use serde_json::json;

    use crate::mcp::conn::Conn;
    use crate::mcp::stdio::StderrTail;
    use crate::mcp::McpError;
    use crate::mcp_spec::{ServerSpec, SpecSource, Transport};

    const TOKEN: &str = "tok-5ecret-0123456789";
    const SESSION: &str = "sess-7f3a";
    const LONG: Duration = Duration::from_secs(30);

    // ---- the SSE parser ----

    /// Hands out one byte per read: every line end falls across reads.
    struct Trickle(Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    fn events(input: &[u8], max: usize) -> (Vec<Event>, Option<String>) {
        let whole = read_events(SseReader::new(Cursor::new(input.to_vec()), max));
        let trickled = read_events(SseReader::new(Trickle(Cursor::new(input.to_vec())), max));
        assert_eq!(whole, trickled, "byte by byte differs for {input:?}");
        whole
    }

    fn read_events(mut reader: SseReader<impl Read>) -> (Vec<Event>, Option<String>) {
        let mut out = Vec::new();
        loop {
            match reader.next_event() {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(format!("{e:?}"))),
            }
        }
    }

    fn data(d: &str) -> Event {
        Event {
            data: Some(d.into()),
            ..Event::default()
        }
    }

    #[test]
    fn event_streams_parse_as_the_standard_says() {
        let cases: &[(&str, &[u8], Vec<Event>)] = &[
            ("LF", b"data: a\n\ndata: b\n\n", vec![data("a"), data("b")]),
            ("CRLF", b"data: a\r\n\r\n", vec![data("a")]),
            (
                "CRLF inside an event",
                b"data: a\r\ndata: b\r\n\r\n",
                vec![data("a\nb")],
            ),
            (
                "CR alone",
                b"data: a\r\rdata: b\r\r",
                vec![data("a"), data("b")],
            ),
            (
                "data lines join",
                b"data: {\"a\":\ndata: 1}\n\n",
                vec![data("{\"a\":\n1}")],
            ),
            (
                "fields",
                b"event: message\nid: 7\nretry: 1500\ndata: x\n\n",
                vec![Event {
                    data: Some("x".into()),
                    event: Some("message".into()),
                    id: Some("7".into()),
                    retry: Some(1500),
                }],
            ),
            ("comments", b": ping\n\n:x\ndata: y\n\n", vec![data("y")]),
            ("no space after colon", b"data:z\n\n", vec![data("z")]),
            (
                "only one space is stripped",
                b"data:  z\n\n",
                vec![data(" z")],
            ),
            ("field without colon", b"data\n\n", vec![data("")]),
            (
                "unknown field ignored",
                b"foo: bar\ndata: q\n\n",
                vec![data("q")],
            ),
            (
                "bad retry ignored",
                b"retry: soon\ndata: q\n\n",
                vec![data("q")],
            ),
            (
                "id with NUL ignored",
                b"id: a\0b\ndata: q\n\n",
                vec![data("q")],
            ),
            (
                "id-only event",
                b"id: 9\n\n",
                vec![Event {
                    id: Some("9".into()),
                    ..Event::default()
                }],
            ),
            (
                "byte order mark",
                b"\xEF\xBB\xBFdata: q\n\n",
                vec![data("q")],
            ),
            (
                "cut at the end is dropped",
                b"data: a\n\ndata: b\n",
                vec![data("a")],
            ),
            ("blank lines alone", b"\n\n\r\n", vec![]),
        ];
        for (name, input, want) in cases {
            let (got, err) = events(input, 1024);
            assert_eq!(err, None, "{name}");
            assert_eq!(&got, want, "{name}");
        }
    }

    #[test]
    fn a_line_or_event_over_the_limit_ends_the_stream() {
        let cases: &[(&str, Vec<u8>)] = &[
            (
                "one long line",
                [b"data: ".as_slice(), &[b'x'; 40], b"\n\n"].concat(),
            ),
            (
                "a line without end",
                [b"data: ".as_slice(), &[b'x'; 4000]].concat(),
            ),
            ("many short lines", b"data: 1234567\n".repeat(4)),
        ];
        for (name, input) in cases {
            let (got, err) = events(input, 32);
            assert!(got.is_empty(), "{name}");
            assert_eq!(err.as_deref(), Some("TooLarge"), "{name}");
        }
        // The limit is per event: many small events pass.
        let (got, err) = events(&b"data: 1234567\n\n".repeat(20), 32);
        assert_eq!((got.len(), err), (20, None));
    }

    // ---- the configuration ----

    #[test]
    fn bad_definitions_are_refused_with_what_to_fix() {
        let secret = Secret::new(TOKEN);
        let h = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
        // URL, headers, bearer, what the error says.
        type Case<'a> = (&'a str, Vec<(String, String)>, Option<&'a Secret>, &'a str);
        let cases: Vec<Case> = vec![
            (
                "ftp://host/mcp",
                vec![],
                None,
                "not an http:// or https:// URL",
            ),
            (
                "127.0.0.1:3001/mcp",
                vec![],
                None,
                "not an http:// or https://",
            ),
            (
                "http://u:pw@/mcp?key=abc",
                vec![],
                None,
                "http:///mcp is not",
            ),
            (
                "http://h/mcp",
                h("bad name", "v"),
                None,
                "not a valid HTTP header name",
            ),
            (
                "http://h/mcp",
                h("X-Key", "a\nb"),
                None,
                "header \"X-Key\" has characters",
            ),
            (
                "http://h/mcp",
                h("Mcp-Session-Id", "x"),
                None,
                "set by the MCP client itself",
            ),
            (
                "http://h/mcp",
                h("MCP-Protocol-Version", "x"),
                None,
                "set by the MCP client itself",
            ),
            (
                "http://h/mcp",
                h("Accept", "x"),
                None,
                "set by the MCP client itself",
            ),
            (
                "http://h/mcp",
                h("Authorization", "x"),
                Some(&secret),
                "keep one",
            ),
        ];
        for (url, headers, bearer, want) in cases {
            let Err(err) = endpoint(url, &headers, bearer) else {
                panic!("{url} accepted");
            };
            assert!(err.contains(want), "{url}: {err}");
            assert!(!err.contains("key=abc") && !err.contains("pw"), "{err}");
        }
        let bad = Secret::new("a\r\nX-Evil: 1");
        let Err(err) = endpoint("http://h/mcp", &[], Some(&bad)) else {
            panic!("a bad token accepted");
        };
        assert!(
            err.contains("bearer token") && !err.contains("Evil"),
            "{err}"
        );
        let Ok(ok) = endpoint("https://h:8443/mcp", &h("X-Team", "blue"), Some(&secret)) else {
            panic!("a good definition refused");
        };
        let headers: Vec<(&str, &str)> = ok
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.to_str().unwrap_or("?")))
            .collect();
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(
            headers,
            [("x-team", "blue"), ("authorization", bearer.as_str())]
        );
        assert!(ok.headers.iter().all(|(_, v)| v.is_sensitive()));
    }

    #[test]
    fn an_old_sse_endpoint_is_named_as_such() {
        let err = |url: &str, status| HttpError {
            url: url.into(),
            kind: HttpErrorKind::Status {
                status,
                body: String::new(),
                location: None,
            },
        };
        for status in [404, 405, 400] {
            let text = err("http://127.0.0.1:3001/sse", status).to_string();
            assert!(
                text.contains("old HTTP+SSE transport") && text.contains("/mcp"),
                "{text}"
            );
        }
        let text = err("http://127.0.0.1:3001/mcp", 404).to_string();
        assert!(
            text.contains("often /mcp") && !text.contains("SSE"),
            "{text}"
        );
    }

    #[test]
    fn shown_urls_keep_no_credentials() {
        let cases = [
            ("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/mcp"),
            ("https://user:pw@h.example/mcp", "https://h.example/mcp"),
            (
                "https://h.example/mcp?api_key=abc#x",
                "https://h.example/mcp",
            ),
            ("https://h.example?token=abc", "https://h.example"),
            ("https://a@b@h.example/p", "https://h.example/p"),
        ];
        for (url, want) in cases {
            assert_eq!(shown_url(url), want, "{url}");
        }
    }

    // ---- a loopback streamable HTTP server ----

    /// One request as the test server saw it.
    #[derive(Debug, Clone)]
    struct Seen {
        method: String,
        headers: Vec<(String, String)>,
        body: Value,
    }

    impl Seen {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
        fn rpc_method(&self) -> &str {
            self.body["method"].as_str().unwrap_or("")
        }
    }

    type Answer = Arc<dyn Fn(&Seen) -> String + Send + Sync>;

    struct Server {
        url: String,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Server {
        /// Answers every request with `answer`, one request per connection.
        fn start(answer: impl Fn(&Seen) -> String + Send + Sync + 'static) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
            let port = listener.local_addr().expect("local address").port();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = seen.clone();
            let answer: Answer = Arc::new(answer);
            std::thread::spawn(move || {
                for conn in listener.incoming().flatten() {
                    let (log, answer) = (log.clone(), answer.clone());
                    std::thread::spawn(move || serve_one(conn, &answer, &log));
                }
            });
            Server {
                url: format!("http://127.0.0.1:{port}/mcp"),
                seen,
            }
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().expect("log").clone()
        }

        /// Waits until what the server saw satisfies `done` (the GET stream and
        /// answers to the server run on threads of their own).
        fn wait_for(&self, what: &str, done: impl Fn(&[Seen]) -> bool) {
            let end = Instant::now() + LONG;
            while !done(&self.seen()) {
                assert!(Instant::now() < end, "never saw {what}: {:?}", self.seen());
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Reads one request, records it, answers it and closes the connection.
    fn serve_one(conn: TcpStream, answer: &Answer, log: &Mutex<Vec<Seen>>) {
        let mut reader = BufReader::new(conn.try_clone().expect("clone socket"));
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let method = line.split(' ').next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((n, v)) = l.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let seen = Seen {
            method,
            headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        let mut conn = conn;
        if seen.rpc_method() == "server/discover" {
            // These servers speak the revisions with `initialize` only, as a stateful
            // TypeScript server does: a request without a session is refused.
            let refusal = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
            let _ = conn.write_all(plain(400, JSON, &[], &refusal.to_string()).as_bytes());
            return;
        }
        log.lock().expect("log").push(seen.clone());
        let _ = conn.write_all(answer(&seen).as_bytes());
    }

    fn plain(status: u16, content_type: &str, extra: &[(&str, &str)], body: &str) -> String {
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
            body.len()
        );
        for (n, v) in extra {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        format!("{head}\r\n{body}")
    }

    const PROTOCOL_VERSION_TEXT: &str = crate::mcp::conn::PROTOCOL_VERSION;

    /// An event stream without a length: it ends when the connection closes.
    fn event_stream(events: &str) -> String {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{events}"
        )
    }

    /// The answer to `initialize`, giving session `session`.
    fn initialized(req: &Seen, session: &str) -> String {
        let result = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {
            "protocolVersion": req.body["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "loopback", "version": "1"}
        }});
        plain(
            200,
            "application/json; charset=utf-8",
            &[("Mcp-Session-Id", session)],
            &result.to_string(),
        )
    }

    /// Enough streamable HTTP for a client: JSON, event streams, a notification and a
    /// request of the server's inside a call's stream, errors as statuses.
    fn mcp_answer(req: &Seen) -> String {
        match req.method.as_str() {
            "GET" => return plain(405, "text/plain", &[("Allow", "POST, DELETE")], ""),
            "DELETE" => return plain(200, "text/plain", &[], ""),
            _ => {}
        }
        let id = req.body["id"].clone();
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        match req.rpc_method() {
            "initialize" => initialized(req, SESSION),
            "tools/list" => {
                let result = reply(json!({"tools": [{
                    "name": "echo",
                    "description": "Says it back",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
                }]}));
                event_stream(&format!(
                    ": hello\r\nid: ev-1\r\nevent: message\r\ndata: {result}\r\n\r\n"
                ))
            }
            "tools/call" if req.body["params"]["name"] == "boom" => {
                plain(500, "text/plain", &[], "the tool exploded")
            }
            "tools/call" if req.body["params"]["name"] == "nope" => plain(
                400,
                JSON,
                &[],
                &json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": "unknown tool \"nope\""}})
                .to_string(),
            ),
            "tools/call" => {
                let text = req.body["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("");
                let result = reply(json!({
                    "content": [{"type": "text", "text": format!("echo: {text}")}],
                    "isError": false
                }))
                .to_string();
                // A log notification and a ping first, then the answer cut over two
                // data lines.
                let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "working"}});
                let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
                let (a, b) = result.split_at(result.find(",\"result\"").unwrap_or(0));
                event_stream(&format!(
                    "data: {note}\n\ndata: {ping}\n\ndata: {a}\ndata: {b}\n\n"
                ))
            }
            _ if req.body.get("id").is_none() => plain(202, "text/plain", &[], ""),
            _ => plain(
                200,
                JSON,
                &[],
                &json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "no such method"}})
                .to_string(),
            ),
        }
    }

    fn spec(url: &str, headers: &[(&str, &str)], bearer: Option<&str>) -> ServerSpec {
        ServerSpec {
            name: "web".into(),
            transport: Transport::Http {
                url: url.into(),
                headers: headers
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
                bearer: bearer.map(Secret::new),
                oauth: Default::default(),
            },
            timeout: LONG,
            sandbox: Default::default(),
            trusted: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            disabled: false,
            roots: Vec::new(),
            source: SpecSource::Store,
        }
    }

    fn open(spec: &ServerSpec) -> Result<Arc<Conn>, McpError> {
        Conn::open(
            spec,
            None,
            None,
            &StderrTail::default(),
            &AtomicBool::new(false),
            |_| {},
        )
    }

    /// A bare peer on the link, for one exchange.
    fn peer_at(url: &str, bearer: Option<&Secret>, limits: Limits) -> Arc<Peer> {
        let Ok(endpoint) = endpoint(url, &[], bearer) else {
            panic!("{url} refused");
        };
        let link = HttpLink::with_limits("web", endpoint, limits);
        Peer::new("web", Arc::new(link), Vec::new())
    }

    fn broken(got: Result<Value, Failure>) -> String {
        match got {
            Err(Failure::Broken(text)) => text,
            other => panic!("not a broken exchange: {other:?}"),
        }
    }

    #[test]
    fn a_client_initializes_lists_and_calls_tools_through_ureq() {
        let server = Server::start(mcp_answer);
        let never = AtomicBool::new(false);
        let conn =
            open(&spec(&server.url, &[("X-Team", "blue")], Some(TOKEN))).expect("initialize");
        let tools = conn.list(&never).expect("tools/list");
        let mut args = serde_json::Map::new();
        args.insert("text".into(), json!("hi"));
        let out = conn
            .call("echo", args, &never, &mut crate::mcp::NoEvents)
            .expect("tools/call");
        let boom = conn
            .call(
                "boom",
                serde_json::Map::new(),
                &never,
                &mut crate::mcp::NoEvents,
            )
            .expect_err("a failing call");
        assert_eq!(
            boom,
            McpError::Broken {
                server: "web".into(),
                detail: format!(
                    "the MCP server at {} answered HTTP 500 Internal Server Error: the tool exploded",
                    server.url
                )
            }
        );
        let nope = conn
            .call(
                "nope",
                serde_json::Map::new(),
                &never,
                &mut crate::mcp::NoEvents,
            )
            .expect_err("an unknown tool");
        assert_eq!(
            nope,
            McpError::Server {
                server: "web".into(),
                detail: "unknown tool \"nope\" (code -32602)".into()
            },
            "the server's JSON-RPC error in an error status is its answer"
        );
        server.wait_for("the GET stream", |seen| {
            seen.iter().any(|s| s.method == "GET")
        });
        server.wait_for("the answer to the server's ping", |seen| {
            seen.iter()
                .any(|s| s.method == "POST" && s.body["id"] == "srv-1")
        });
        conn.close();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo"]);
        assert_eq!(out.content, "echo: hi");
        assert!(!out.is_error);

        let seen = server.seen();
        // The answer to the server's ping goes on a thread of its own: in any order.
        let (answers, posts): (Vec<&Seen>, Vec<&Seen>) = seen
            .iter()
            .filter(|s| s.method == "POST")
            .partition(|s| s.body["id"] == "srv-1");
        let methods: Vec<&str> = posts.iter().map(|s| s.rpc_method()).collect();
        assert_eq!(
            methods,
            [
                "initialize",
                "notifications/initialized",
                "tools/list",
                "tools/call",
                "tools/call",
                "tools/call"
            ]
        );
        assert_eq!(answers.len(), 1);
        assert_eq!(
            answers[0].body,
            json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})
        );
        for s in &seen {
            let what = format!("{} {}", s.method, s.rpc_method());
            assert_eq!(
                s.header("authorization"),
                Some(&*format!("Bearer {TOKEN}")),
                "{what}"
            );
            assert_eq!(s.header("x-team"), Some("blue"), "{what}");
            let initialize = s.rpc_method() == "initialize";
            assert_eq!(
                s.header("mcp-session-id"),
                (!initialize).then_some(SESSION),
                "{what}"
            );
            assert_eq!(
                s.header("mcp-protocol-version"),
                (!initialize).then_some(crate::mcp::conn::PROTOCOL_VERSION),
                "{what}"
            );
        }
        let post = posts[0];
        assert_eq!(post.header("content-type"), Some(JSON));
        assert_eq!(
            post.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(
            post.body["params"],
            json!({"protocolVersion": "2025-11-25",
                "capabilities": {"roots": {"listChanged": true}, "elicitation": {"form": {}}},
                "clientInfo": {"name": "evolve", "version": env!("CARGO_PKG_VERSION")}})
        );
        // The GET stream was asked for (405: the client went on without it), and the
        // session was deleted on close.
        let get = seen
            .iter()
            .find(|s| s.method == "GET")
            .expect("a GET stream");
        assert_eq!(get.header("accept"), Some(EVENT_STREAM));
        assert!(seen.iter().any(|s| s.method == "DELETE"), "{seen:?}");
    }

    #[test]
    fn error_statuses_name_the_url_and_status_but_not_the_token() {
        let long = "<html>".repeat(200);
        let echoed = format!("bad token {TOKEN}");
        let cases: [(u16, String, &[&str]); 3] = [
            (
                401,
                echoed,
                &[
                    "HTTP 401 Unauthorized",
                    "bad token ***",
                    "check the bearer token",
                ],
            ),
            (
                500,
                "database down".into(),
                &["HTTP 500 Internal Server Error", "database down"],
            ),
            (502, long, &["HTTP 502", "<html><html>", "…"]),
        ];
        for (status, body, wants) in cases {
            let server = Server::start(move |_| plain(status, "text/plain", &[], &body));
            let secret = Secret::new(TOKEN);
            let peer = peer_at(&server.url, Some(&secret), LIMITS);
            let err =
                broken(peer.request("initialize", Some(json!({})), LONG, &AtomicBool::new(false)));
            let start = format!("the MCP server at {} answered HTTP {status}", server.url);
            assert!(err.starts_with(&start), "{status}: {err}");
            for want in wants {
                assert!(err.contains(want), "{status}: {want:?} not in {err}");
            }
            assert!(!err.contains(TOKEN), "{status}: the token leaked: {err}");
            assert!(
                err.chars().count() < 300 + 150,
                "{status}: body not cut: {err}"
            );
        }
    }

    #[test]
    fn an_unreachable_server_is_named_with_what_to_check() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("address").port()
        };
        let url = format!("http://127.0.0.1:{port}/mcp");
        let peer = peer_at(&url, None, LIMITS);
        let err =
            broken(peer.request("initialize", Some(json!({})), LONG, &AtomicBool::new(false)));
        assert!(
            err.contains(&format!("cannot reach the MCP server at {url}")),
            "{err}"
        );
        assert!(err.contains("connection refused"), "{err}");
        let Err(McpError::Start { detail, .. }) = open(&spec(&url, &[], None)) else {
            panic!("started without a server");
        };
        assert!(
            detail.starts_with("the handshake failed: cannot reach"),
            "{detail}"
        );
    }

    /// The GET stream delivers the server's notifications, resumes after the last event
    /// id, and ends when the server has none (405).
    #[test]
    fn the_get_stream_delivers_notifications_and_resumes() {
        let server = Server::start(|req| {
            match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => initialized(req, SESSION),
            ("POST", _) => plain(202, "text/plain", &[], ""),
            ("GET", _) if req.header("last-event-id").is_none() => event_stream(
                "retry: 10\nid: 5\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            ),
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        }
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        server.wait_for("two GETs", |seen| {
            seen.iter().filter(|s| s.method == "GET").count() == 2
        });
        assert!(conn.stale().load(Ordering::SeqCst), "list_changed arrived");
        conn.close();
        let seen = server.seen();
        let gets: Vec<&Seen> = seen.iter().filter(|s| s.method == "GET").collect();
        for get in &gets {
            assert_eq!(get.header("accept"), Some(EVENT_STREAM));
            assert_eq!(get.header("mcp-session-id"), Some(SESSION));
            assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
        }
        assert_eq!(gets[0].header("last-event-id"), None);
        assert_eq!(gets[1].header("last-event-id"), Some("5"));
    }

    /// What the resuming tests' server did: when it closed the call's stream, and each
    /// resuming GET's Last-Event-ID with how long after that close it came.
    #[derive(Default)]
    struct Resumed {
        call: Option<Value>,
        closed: Option<Instant>,
        gets: Vec<(String, Duration)>,
    }

    /// A server that ends a call's event stream early (after `first`, the call's events
    /// up to where it stops) and answers resuming GETs with `on_get(n, call id)`, the
    /// n-th such GET from 0; the session's own GET stream is refused (405).
    fn resuming_server(
        first: &'static str,
        on_get: impl Fn(usize, &Value) -> String + Send + Sync + 'static,
    ) -> (Server, Arc<Mutex<Resumed>>) {
        let state = Arc::new(Mutex::new(Resumed::default()));
        let log = state.clone();
        let server = Server::start(move |req| {
            let mut state = log.lock().expect("state");
            match (req.method.as_str(), req.rpc_method()) {
                ("POST", "initialize") => initialized(req, SESSION),
                ("POST", "tools/call") => {
                    state.call = Some(req.body["id"].clone());
                    state.closed = Some(Instant::now());
                    event_stream(first)
                }
                ("GET", _) => match req.header("last-event-id") {
                    None => plain(405, "text/plain", &[], ""),
                    Some(last) => {
                        let after = state.closed.map(|c| c.elapsed()).unwrap_or_default();
                        state.gets.push((last.to_string(), after));
                        let n = state.gets.len() - 1;
                        // A poll ends like the call's stream did: the next GET is timed
                        // from here.
                        state.closed = Some(Instant::now());
                        on_get(n, state.call.as_ref().unwrap_or(&Value::Null))
                    }
                },
                ("POST", _) => plain(202, "text/plain", &[], ""),
                _ => plain(200, "text/plain", &[], ""),
            }
        });
        (server, state)
    }

    fn echo_result(call: &Value, text: &str) -> String {
        json!({"jsonrpc": "2.0", "id": call, "result": {
            "content": [{"type": "text", "text": text}]
        }})
        .to_string()
    }

    /// A call whose event stream ends before the answer (SSE polling, as the MCP
    /// conformance suite's sse-retry scenario does it) is resumed with a GET carrying
    /// Last-Event-ID after the server's `retry` — not at once, not after the default
    /// second — again while the server keeps polling, and the answer on the resumed
    /// stream is the call's.
    #[test]
    fn a_call_stream_ended_early_is_resumed_after_the_servers_retry_with_the_last_event_id() {
        let (server, state) = resuming_server("id: call-1\nretry: 250\ndata: \n\n", |n, call| {
            if n == 0 {
                // Still working: one more priming event, and the stream ends again.
                event_stream("id: call-2\ndata: \n\n")
            } else {
                let answer = echo_result(call, "done after polling");
                event_stream(&format!("id: call-3\nevent: message\ndata: {answer}\n\n"))
            }
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let never = AtomicBool::new(false);
        let out = conn
            .call(
                "slow",
                serde_json::Map::new(),
                &never,
                &mut crate::mcp::NoEvents,
            )
            .expect("the answer on the resumed stream");
        conn.close();
        assert_eq!(out.content, "done after polling");
        let gets = std::mem::take(&mut state.lock().expect("state").gets);
        let ids: Vec<&str> = gets.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["call-1", "call-2"]);
        for (id, after) in &gets {
            // The retry of the first stream holds for the next ones (the SSE standard).
            assert!(
                *after >= Duration::from_millis(250) && *after < Duration::from_millis(1000),
                "resumed after {id} in {after:?}, not after the server's 250 ms"
            );
        }
        let seen = server.seen();
        let resumes: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.method == "GET" && s.header("last-event-id").is_some())
            .collect();
        for get in resumes {
            assert_eq!(get.header("accept"), Some(EVENT_STREAM));
            assert_eq!(get.header("mcp-session-id"), Some(SESSION));
        }
        assert_eq!(
            seen.iter()
                .filter(|s| s.rpc_method() == "tools/call")
                .count(),
            1,
            "the call is resumed, never sent again"
        );
    }

    /// What cannot be resumed is an error naming why: a stream that gave no event id, a
    /// server that refuses the resuming GET or does not answer it, one whose resumed
    /// streams stay empty.
    #[test]
    fn a_call_stream_that_cannot_be_resumed_fails_the_call_with_the_reason() {
        /// What the server does, and what the call's error says after how many GETs.
        struct Case {
            what: &'static str,
            first: &'static str,
            on_get: fn(usize, &Value) -> String,
            error: &'static str,
            gets: usize,
        }
        let cases = [
            Case {
                what: "no event id",
                first: "data: \n\n",
                on_get: |_, _| unreachable!("nothing to resume from"),
                error: "the server ended the event stream without answering",
                gets: 0,
            },
            Case {
                what: "the GET refused",
                first: "id: a-1\nretry: 10\ndata: \n\n",
                on_get: |_, _| plain(405, "text/plain", &[], ""),
                error: "answer to the GET that resumes it (Last-Event-ID \"a-1\") was HTTP 405",
                gets: 1,
            },
            Case {
                what: "the GET unanswered",
                first: "id: c-1\nretry: 10\ndata: \n\n",
                // The connection closes before a status line: ureq fails the GET.
                on_get: |_, _| String::new(),
                error: "broke: the server closed the connection, 5 times resuming the call's \
                        event stream after event \"c-1\"",
                gets: 5,
            },
            Case {
                what: "empty resumed streams",
                first: "id: b-1\nretry: 10\ndata: \n\n",
                on_get: |_, _| event_stream(""),
                error: "without answering, 5 times after resuming at event \"b-1\"",
                gets: 5,
            },
        ];
        for Case {
            what,
            first,
            on_get,
            error,
            gets,
        } in cases
        {
            let (server, state) = resuming_server(first, on_get);
            let conn = open(&spec(&server.url, &[], None)).expect("initialize");
            let got = conn.call(
                "slow",
                serde_json::Map::new(),
                &AtomicBool::new(false),
                &mut crate::mcp::NoEvents,
            );
            conn.close();
            match got {
                Err(McpError::Broken { detail, .. }) => {
                    assert!(detail.contains(error), "{what}: {detail}")
                }
                other => panic!("{what}: not a broken call: {other:?}"),
            }
            assert_eq!(state.lock().expect("state").gets.len(), gets, "{what}");
        }
    }

    /// A server that lost the session (restarted) answers 404: a new session is
    /// started and the request sent once more.
    #[test]
    fn an_expired_session_is_replaced_and_the_request_sent_again() {
        for restarted in [false, true] {
            expired_session_is_replaced(restarted);
        }
    }

    /// `restarted`: the server answers the old session as the TypeScript SDK's examples
    /// do after a restart (400, a JSON-RPC error without an id), not 404.
    fn expired_session_is_replaced(restarted: bool) {
        let sessions = Arc::new(AtomicUsize::new(0));
        let server = Server::start(move |req| {
            let session = req.header("mcp-session-id").unwrap_or("");
            match (req.method.as_str(), req.rpc_method()) {
                ("POST", "initialize") => {
                    let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                    initialized(req, &format!("s{n}"))
                }
                ("POST", "tools/list") if session == "s1" && restarted => plain(
                    400,
                    JSON,
                    &[],
                    r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
                ),
                ("POST", "tools/list") if session == "s1" => plain(404, "text/plain", &[], "no such session"),
                ("POST", "tools/list") => plain(
                    200,
                    JSON,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}})
                        .to_string(),
                ),
                ("POST", _) => plain(202, "text/plain", &[], ""),
                ("GET", _) => plain(405, "text/plain", &[], ""),
                _ => plain(200, "text/plain", &[], ""),
            }
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let tools = conn
            .list(&AtomicBool::new(false))
            .expect("listed in a new session");
        assert_eq!(tools.len(), 1);
        conn.close();
        let seen = server.seen();
        let posts: Vec<(&str, Option<&str>, Option<&str>)> = seen
            .iter()
            .filter(|s| s.method == "POST")
            .map(|s| {
                (
                    s.rpc_method(),
                    s.header("mcp-session-id"),
                    s.header("mcp-protocol-version"),
                )
            })
            .collect();
        let v = Some("2025-11-25");
        assert_eq!(
            posts,
            [
                ("initialize", None, None),
                ("notifications/initialized", Some("s1"), v),
                ("tools/list", Some("s1"), v),
                ("initialize", None, None),
                ("notifications/initialized", Some("s2"), v),
                ("tools/list", Some("s2"), v),
            ]
        );
    }

    /// `tools/list` is read page by page while the server gives a new `nextCursor`; a
    /// cursor given twice ends the listing (a server stuck on one page cannot hold a
    /// turn).
    #[test]
    fn tools_are_listed_page_by_page() {
        let server = Server::start(|req| match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => initialized(req, SESSION),
            ("POST", "tools/list") => {
                let (names, next) = match req.body["params"]["cursor"].as_str() {
                    None => (["a", "b"], json!("c2")),
                    Some("c2") => (["c", "d"], json!("c3")),
                    // The third page points back at itself.
                    _ => (["e", "f"], json!("c3")),
                };
                let tools: Vec<Value> = names
                    .iter()
                    .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
                    .collect();
                let body = json!({"jsonrpc": "2.0", "id": req.body["id"],
                    "result": {"tools": tools, "nextCursor": next}});
                plain(200, JSON, &[], &body.to_string())
            }
            ("POST", _) => plain(202, "text/plain", &[], ""),
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let tools = conn.list(&AtomicBool::new(false)).expect("listed");
        conn.close();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
        let cursors: Vec<Value> = server
            .seen()
            .iter()
            .filter(|s| s.rpc_method() == "tools/list")
            .map(|s| s.body.get("params").cloned().unwrap_or(Value::Null))
            .collect();
        assert_eq!(
            cursors,
            [
                Value::Null,
                json!({"cursor": "c2"}),
                json!({"cursor": "c3"})
            ]
        );
    }

    /// A protocol revision evolve does not know is refused at the handshake, naming it
    /// and the ones evolve speaks; an older known one is taken.
    #[test]
    fn an_unknown_protocol_version_is_refused_and_an_older_one_taken() {
        for (answered, ok) in [
            ("1999-01-01", false),
            ("2025-06-18", true),
            ("2024-11-05", true),
        ] {
            let server = Server::start(move |req| match (req.method.as_str(), req.rpc_method()) {
                ("POST", "initialize") => {
                    let result = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {
                        "protocolVersion": answered, "capabilities": {"tools": {}},
                        "serverInfo": {"name": "old", "version": "1"}}});
                    plain(
                        200,
                        JSON,
                        &[("Mcp-Session-Id", SESSION)],
                        &result.to_string(),
                    )
                }
                ("POST", _) => plain(202, "text/plain", &[], ""),
                ("GET", _) => plain(405, "text/plain", &[], ""),
                _ => plain(200, "text/plain", &[], ""),
            });
            match open(&spec(&server.url, &[], None)) {
                Ok(conn) => {
                    assert!(ok, "{answered} was taken");
                    conn.close();
                }
                Err(e) => {
                    assert!(!ok, "{answered}: {e}");
                    let text = e.to_string();
                    assert!(
                        text.contains("1999-01-01") && text.contains(PROTOCOL_VERSION_TEXT),
                        "{text}"
                    );
                }
            }
        }
    }

    /// A tool that runs only as an MCP task is not offered (every call would fail).
    #[test]
    fn task_only_tools_are_not_offered() {
        let server = Server::start(|req| match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => initialized(req, SESSION),
            ("POST", "tools/list") => {
                let body = json!({"jsonrpc": "2.0", "id": req.body["id"], "result": {"tools": [
                    {"name": "quick", "inputSchema": {"type": "object"}},
                    {"name": "long", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
                    {"name": "either", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
                ]}});
                plain(200, JSON, &[], &body.to_string())
            }
            ("POST", _) => plain(202, "text/plain", &[], ""),
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(200, "text/plain", &[], ""),
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let tools = conn.list(&AtomicBool::new(false)).expect("listed");
        conn.close();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["quick", "either"]);
    }

    /// Answers are read within the limits before they are parsed.
    #[test]
    fn answers_over_the_limits_are_refused() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{{\"pad\":\"{}\"}}}}",
            "x".repeat(4000)
        );
        let cases = [
            (
                plain(200, JSON, &[], &big),
                "a response larger than 1000 bytes",
            ),
            (
                event_stream(&format!("data: {big}\n\n")),
                "an event larger than 1000 bytes",
            ),
        ];
        let limits = Limits {
            json: 1000,
            event: 1000,
            error: MAX_ERROR,
        };
        for (answer, want) in cases {
            let server = Server::start(move |_| answer.clone());
            let peer = peer_at(&server.url, None, limits);
            let err = broken(peer.request("ping", None, LONG, &AtomicBool::new(false)));
            assert!(err.contains(want), "{want}: {err}");
        }
    }

    /// A call given up on (Ctrl-C before evolve exits) is cancelled while the session
    /// still exists: the server has taken the `notifications/cancelled` before the
    /// DELETE that ends the session — even when it is slow to take it.
    #[test]
    fn a_cancellation_reaches_the_server_before_the_session_is_deleted() {
        let order = Arc::new(Mutex::new(Vec::<&str>::new()));
        let log = order.clone();
        let server = Server::start(move |req| match (req.method.as_str(), req.rpc_method()) {
            ("POST", "initialize") => initialized(req, SESSION),
            ("POST", "tools/call") => {
                // Never answered in time.
                std::thread::sleep(Duration::from_secs(5));
                plain(202, "text/plain", &[], "")
            }
            ("POST", "notifications/cancelled") => {
                std::thread::sleep(Duration::from_millis(300));
                log.lock().unwrap().push("cancelled taken");
                plain(202, "text/plain", &[], "")
            }
            ("DELETE", _) => {
                log.lock().unwrap().push("DELETE");
                plain(200, "text/plain", &[], "")
            }
            ("GET", _) => plain(405, "text/plain", &[], ""),
            _ => plain(202, "text/plain", &[], ""),
        });
        let conn = open(&spec(&server.url, &[], None)).expect("initialize");
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::SeqCst);
        });
        let got = conn.call(
            "slow",
            serde_json::Map::new(),
            &cancel,
            &mut crate::mcp::NoEvents,
        );
        assert_eq!(got, Err(McpError::Cancelled));
        conn.close();
        let cancelled = server
            .seen()
            .into_iter()
            .find(|s| s.rpc_method() == "notifications/cancelled")
            .expect("a cancellation was sent");
        assert_eq!(cancelled.body["params"]["reason"], "cancelled by the user");
        assert_eq!(cancelled.header("Mcp-Session-Id"), Some(SESSION));
        assert_eq!(*order.lock().unwrap(), ["cancelled taken", "DELETE"]);
    }

    /// Interoperability with a real server, by hand: start one, e.g.
    /// `PORT=3001 npx -y @modelcontextprotocol/server-everything streamableHttp`, then
    /// `EVOLVE_MCP_TEST_URL=http://127.0.0.1:3001/mcp cargo test -p evolve-mini
    /// real_server -- --ignored --nocapture`.
    #[test]
    #[ignore = "needs a running MCP server at EVOLVE_MCP_TEST_URL"]
    fn real_server() {
        let Ok(url) = std::env::var("EVOLVE_MCP_TEST_URL") else {
            panic!("set EVOLVE_MCP_TEST_URL to a streamable HTTP MCP endpoint");
        };
        let never = AtomicBool::new(false);
        let conn = open(&spec(&url, &[], None)).unwrap_or_else(|e| panic!("{e}"));
        let tools = conn.list(&never).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        eprintln!("{} tools: {names:?}", names.len());
        let mut args = serde_json::Map::new();
        args.insert("message".into(), json!("hello over ureq"));
        let out = conn
            .call("echo", args, &never, &mut crate::mcp::NoEvents)
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("echo: {out:?}");
        // A slow tool that streams progress before its answer.
        if names.contains(&"trigger-long-running-operation") {
            let mut args = serde_json::Map::new();
            args.insert("duration".into(), json!(2));
            args.insert("steps".into(), json!(4));
            let out = conn
                .call(
                    "trigger-long-running-operation",
                    args,
                    &never,
                    &mut crate::mcp::NoEvents,
                )
                .unwrap_or_else(|e| panic!("{e}"));
            eprintln!("slow: {out:?}");
        }
        conn.close();
    }
}
