//! Streamable HTTP: rmcp's tower service mounted at `/mcp` on a hyper HTTP/1 server
//! bound to a loopback address. Every other path answers 404. The "listening on" line is
//! printed only after the socket is bound, so a test that reads it can connect at once.
//!
//! Two ways to serve, decided by [`Versions`]:
//! - sessions (the default): `initialize` opens a session (`Mcp-Session-Id`, one
//!   `TestServer` per session, GET stream, DELETE). rmcp also serves a POST whose
//!   request `_meta` carries the 2026-07-28 lifecycle fields statelessly, on the same
//!   endpoint, so this server speaks both lifecycles.
//! - `--stateless` ([`Versions::StatelessOnly`]): no sessions at all (rmcp's
//!   `NeverSessionManager`, `legacy_session_mode` off); each POST is served by a clone
//!   of one `TestServer` (so `add_tool` lasts), must carry `MCP-Protocol-Version` and
//!   its own `_meta`, and GET and DELETE answer 405. What a client sends is in the
//!   crate's README.
//!
//! With `--events`, each request to `/mcp` is written down ([`crate::events`]) before
//! rmcp sees it: a POST's body is read first for that, then handed on whole.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio::net::TcpListener;
use tower_service::Service;

use crate::events::{self, Events};
use crate::server::{Settings, TestServer, Versions};

/// The one path the MCP endpoint answers on.
const MCP_PATH: &str = "/mcp";

/// Serves until the process is killed (or the `crash` tool exits it).
pub async fn serve(addr: SocketAddr, settings: Settings) -> Result<(), String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address of {addr}: {e}"))?;
    let stateless = settings.versions == Versions::StatelessOnly;
    let events = settings.events.clone();
    let settings = Arc::new(settings);
    // rmcp's defaults already restrict the Host header to loopback names, which
    // matches the loopback-only bind.
    let config = StreamableHttpServerConfig::default();
    if stateless {
        // Requests without `MCP-Protocol-Version` or without `_meta` are refused before
        // any tool runs, as a 2026-07-28-only server must.
        let config = config
            .with_legacy_session_mode(false)
            .with_stateless_protocol_metadata_required(true);
        // rmcp asks for a handler per POST; with no session to own `add_tool`'s tool,
        // every POST gets a clone of one handler, so the tool stays for the next call.
        let shared = TestServer::new(settings);
        let handler = move || Ok(shared.clone());
        let sessions = Arc::new(NeverSessionManager::default());
        let mcp = StreamableHttpService::new(handler, sessions, config);
        accept(listener, bound, mcp, events).await
    } else {
        let handler = move || Ok(TestServer::new(settings.clone()));
        let sessions = Arc::new(LocalSessionManager::default());
        let mcp = StreamableHttpService::new(handler, sessions, config);
        accept(listener, bound, mcp, events).await
    }
}

async fn accept<M: SessionManager>(
    listener: TcpListener,
    bound: SocketAddr,
    mcp: StreamableHttpService<TestServer, M>,
    events: Events,
) -> Result<(), String> {
    println!("listening on http://{bound}{MCP_PATH}");
    let _ = std::io::stdout().flush();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("evolve-mcp-test-server: accept failed: {e}");
                continue;
            }
        };
        let mcp = mcp.clone();
        let events = events.clone();
        tokio::spawn(async move {
            let route = service_fn(move |req: Request<Incoming>| {
                let mut mcp = mcp.clone();
                let events = events.clone();
                async move {
                    if req.uri().path() == MCP_PATH && events.on() {
                        let req = noted(req, &events).await;
                        mcp.call(req).await
                    } else if req.uri().path() == MCP_PATH {
                        mcp.call(req).await
                    } else {
                        let body =
                            Full::new(Bytes::from_static(b"not found: the MCP endpoint is /mcp\n"))
                                .boxed();
                        let mut resp = Response::new(body);
                        *resp.status_mut() = StatusCode::NOT_FOUND;
                        Ok(resp)
                    }
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), route)
                .await
            {
                eprintln!("evolve-mcp-test-server: connection error: {e}");
            }
        });
    }
}

/// Writes the request down (a POST's messages, or its HTTP method) and gives it back
/// with its body read.
async fn noted(req: Request<Incoming>, events: &Events) -> Request<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            eprintln!("evolve-mcp-test-server: cannot read a request body: {e}");
            Bytes::new()
        }
    };
    if parts.method == hyper::Method::POST {
        for line in events::describe(&body) {
            events.record(&line);
        }
    } else {
        events.record(parts.method.as_str());
    }
    Request::from_parts(parts, Full::new(body))
}
