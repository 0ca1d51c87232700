//! The session link: one streamable HTTP connection's endpoint, session id, protocol
//! version and agents, the headers every request carries, sending one request (renewing
//! an OAuth token once when the server refuses it), handing messages to the POSTing
//! threads, and deleting the session at the end.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{mpsc, Arc, Mutex};

use ureq::http::header::AUTHORIZATION;
use ureq::http::{HeaderName, HeaderValue};

use super::super::jsonrpc::{Failure, Link, Outgoing, Peer};
use super::endpoint::{shown_url, Endpoint};
use super::error::{describe, HttpError, HttpErrorKind};
use super::routing::STATELESS_VERSION;
use super::{
    CONNECT_TIMEOUT, DELETE_WAIT, LAST_EVENT_ID, MAX_ERROR, MAX_EVENT, MAX_JSON, POSTING_WAIT,
    PROTOCOL_VERSION, SESSION_ID,
};

/// One streamable HTTP connection: its endpoint, its session, and the agent (the
/// connection pool) every request shares. Cheap to clone.
#[derive(Clone)]
pub(crate) struct HttpLink(pub(super) Arc<Session>);

pub(super) struct Session {
    pub(super) agent: ureq::Agent,
    pub(super) endpoint: Endpoint,
    /// [`shown_url`] of the endpoint.
    pub(super) shown: String,
    /// The server's name, for the log.
    pub(super) server: String,
    /// The `Mcp-Session-Id` the server gave at `initialize`.
    pub(super) id: Mutex<Option<HeaderValue>>,
    /// The protocol version agreed at `initialize`.
    pub(super) protocol: Mutex<Option<HeaderValue>>,
    pub(super) limits: Limits,
    /// Notifications and replies still being POSTed in the background (a
    /// `notifications/cancelled` among them): closing waits for them before the DELETE,
    /// so the server hears of a cancellation while the session still exists.
    pub(super) posting: (Mutex<usize>, std::sync::Condvar),
    /// Revision 2026-07-28: the agent of each request whose answer is being read, by
    /// id, and agents kept for the next requests (at most [`SPARE_AGENTS`]).
    pub(super) flights: Mutex<HashMap<u64, ureq::Agent>>,
    pub(super) spare: Mutex<Vec<ureq::Agent>>,
}

/// Byte limits on what is read.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) json: usize,
    pub(super) event: usize,
    pub(super) error: usize,
}

pub(super) const LIMITS: Limits = Limits {
    json: MAX_JSON,
    event: MAX_EVENT,
    error: MAX_ERROR,
};

/// The HTTP methods of streamable HTTP.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Method {
    Post,
    Get,
    Delete,
}

/// The parts of an answer's head that matter here.
#[derive(Debug, Default)]
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) content_type: Option<String>,
    pub(super) session_id: Option<String>,
    pub(super) location: Option<String>,
}

impl Head {
    pub(super) fn of(response: &ureq::http::Response<ureq::Body>) -> Head {
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
    pub(super) fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }
    pub(super) fn is(&self, media_type: &str) -> bool {
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

    pub(super) fn with_limits(server: &str, endpoint: Endpoint, limits: Limits) -> HttpLink {
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
    pub(super) fn stateless(&self) -> bool {
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

    pub(super) fn session_id(&self) -> Option<HeaderValue> {
        self.0.id.lock().ok()?.clone()
    }

    pub(super) fn error(&self, kind: HttpErrorKind) -> Failure {
        Failure::Broken(HttpError::new(&self.0.shown, kind).to_string())
    }

    /// Session, protocol version, resume point, then the definition's headers.
    pub(super) fn headers(
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
    pub(super) fn secrets(&self) -> Vec<String> {
        let mut secrets = self.0.endpoint.secrets.clone();
        if let Some(login) = &self.0.endpoint.login {
            secrets.extend(login.secrets());
        }
        secrets
    }

    /// Sends one request through ureq.
    pub(super) fn send(
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
    pub(super) fn lock_flights(&self) -> std::sync::MutexGuard<'_, HashMap<u64, ureq::Agent>> {
        self.0.flights.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn lock_spare(&self) -> std::sync::MutexGuard<'_, Vec<ureq::Agent>> {
        self.0.spare.lock().unwrap_or_else(|e| e.into_inner())
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
pub(super) const SPARE_AGENTS: usize = 2;

/// At most `limit + 1` bytes (one more tells that the limit was passed).
pub(super) fn read_up_to(body: &mut impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    body.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}
/// The content type for messages, `none` when absent.
pub(super) fn content_type_of(head: &Head) -> String {
    head.content_type
        .as_deref()
        .map(|ct| evolve_core::text::escape_controls(ct, false))
        .unwrap_or_else(|| "none".into())
}
