//! Streamable HTTP: rmcp's tower service (stateful sessions, one `TestServer` per
//! session) mounted at `/mcp` on a hyper HTTP/1 server bound to a loopback address.
//! Every other path answers 404. The "listening on" line is printed only after the
//! socket is bound, so a test that reads it can connect at once.

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
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service;

use crate::server::{Settings, TestServer};

/// The one path the MCP endpoint answers on.
const MCP_PATH: &str = "/mcp";

/// Serves until the process is killed (or the `crash` tool exits it).
pub async fn serve(addr: SocketAddr, settings: Settings) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address of {addr}: {e}"))?;
    let settings = Arc::new(settings);
    // rmcp's defaults already restrict the Host header to loopback names, which
    // matches the loopback-only bind.
    let mcp = StreamableHttpService::new(
        move || Ok(TestServer::new(settings.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
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
        tokio::spawn(async move {
            let route = service_fn(move |req: Request<Incoming>| {
                let mut mcp = mcp.clone();
                async move {
                    if req.uri().path() == MCP_PATH {
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
