//! The GET stream for the notifications a server sends outside a call
//! (`tools/list_changed`): opened after the handshake on a thread of its own, resumed
//! with the last event id, given up on a refusal or after repeated failures.

use std::sync::Arc;
use std::time::Duration;

use ureq::http::header::ACCEPT;
use ureq::http::HeaderValue;

use super::super::jsonrpc::Peer;
use super::link::{content_type_of, Head, HttpLink, Method};
use super::resume::{sleep_while_open, Resume};
use super::sse::SseReader;
use super::{EVENT_STREAM, STREAM_ATTEMPTS, STREAM_RETRY, STREAM_RETRY_MAX};

impl HttpLink {
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
}
