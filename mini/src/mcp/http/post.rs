//! POSTing one message and reading its answer: JSON, an event stream (read until the
//! request is answered), 202 for what needs no answer, or an error status, which may
//! mean the session expired or be the server's own JSON-RPC error for the request. In
//! revision 2026-07-28 each request gets an agent (a connection) of its own, so closing
//! it cancels the request.

use std::sync::Arc;

use serde_json::Value;
use ureq::http::header::{ACCEPT, CONTENT_TYPE};
use ureq::http::HeaderValue;

use super::super::jsonrpc::{Failure, Peer};
use super::endpoint::shown_url;
use super::error::{shown_body, HttpError, HttpErrorKind};
use super::link::{content_type_of, read_up_to, Head, HttpLink, Method, SPARE_AGENTS};
use super::routing::routing_headers;
use super::{EVENT_STREAM, JSON};

impl HttpLink {
    /// POSTs one message and handles the answer (see the module doc). `Ok` once the
    /// message was taken; for a request, also once it was answered or its answer was
    /// announced for later (202).
    pub(super) fn post(
        &self,
        peer: &Arc<Peer>,
        body: &[u8],
        id: Option<u64>,
    ) -> Result<(), Failure> {
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
    /// The error for an error status.
    pub(super) fn status_error(&self, head: &Head, body: &[u8]) -> Failure {
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
}
