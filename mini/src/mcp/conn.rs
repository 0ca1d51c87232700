//! One connection: starting a server (stdio child or streamable HTTP), the handshake,
//! listing and calling tools, and noticing `tools/list_changed`.
//!
//! A stdio server runs in its own process group, so stopping it also stops what it
//! started (`npx` → `node`); its stderr goes to the log line by line, and the last lines
//! are kept for the error message when it fails to start. Everything here runs on the
//! MCP thread's current_thread runtime.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{CallOutcome, McpError, McpTool, ServerSpec, Transport};
use evolve_core::permission::Annotations;

/// How many stderr lines of a server are kept for error messages.
const STDERR_KEPT: usize = 8;

/// The client side of one connection: says who we are and notices list changes.
pub(super) struct Handler {
    /// Set by `notifications/tools/list_changed`; the hub lists again before the next use.
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("evolve", env!("CARGO_PKG_VERSION")),
        )
        // The newest version with the initialize handshake; servers answer with theirs
        // (back to 2024-11-05), and rmcp speaks what they chose.
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// A live connection.
pub(super) struct Conn {
    service: RunningService<RoleClient, Handler>,
    /// A stdio server's process group, killed when the connection ends.
    _group: Group,
    /// The tool list needs fetching again.
    pub stale: Arc<AtomicBool>,
}

/// The last lines a server wrote to stderr.
pub(super) type StderrTail = Arc<Mutex<VecDeque<String>>>;

impl Conn {
    /// Starts the server and completes the handshake within `timeout`.
    pub async fn open(spec: &ServerSpec, stderr: &StderrTail) -> Result<Conn, McpError> {
        let stale = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            stale: stale.clone(),
        };
        let start = |detail: String| McpError::Start {
            server: spec.name.clone(),
            detail,
        };
        let mut pgid = None;
        let mut exited: Option<tokio::sync::oneshot::Receiver<()>> = None;
        let serving = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                cmd.envs(env.iter().map(|(k, v)| (k, v)));
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                cmd.stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                let mut spawned = wrapped
                    .spawn()
                    .map_err(|e| start(spawn_problem(command, cwd.as_deref(), &e)))?;
                pgid = spawned.id().map(|p| p as i32);
                if let Some(p) = pgid {
                    super::reap::register(p);
                }
                if let Some(err) = spawned.stderr().take() {
                    tokio::spawn(log_stderr(spec.name.clone(), err, stderr.clone()));
                }
                let (Some(out), Some(input)) = (spawned.stdout().take(), spawned.stdin().take())
                else {
                    super::reap::kill_group(pgid.unwrap_or(0));
                    return Err(start("its stdin or stdout could not be connected".into()));
                };
                // The watcher owns the child: when it exits — closed by evolve or dead of
                // its own accord between calls — it is reaped and its group killed (what
                // it started goes with it).
                let (tell, told) = tokio::sync::oneshot::channel();
                exited = Some(told);
                tokio::spawn(async move {
                    let _ = spawned.wait().await;
                    if let Some(p) = pgid {
                        super::reap::kill_group(p);
                    }
                    let _ = tell.send(());
                });
                let transport = AsyncRwTransport::new_client(
                    super::lines::LineGuard::new(out, &spec.name),
                    input,
                );
                tokio::time::timeout(spec.timeout, handler.serve(transport)).await
            }
            Transport::Http {
                url,
                headers,
                bearer,
            } => {
                let transport =
                    super::http::transport(url, headers, bearer.as_ref()).map_err(start)?;
                tokio::time::timeout(spec.timeout, handler.serve(transport)).await
            }
        };
        // From here a failed start still stops the process group (Drop).
        let group = Group { pgid, exited };
        let service = match serving {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // Give the stderr reader a moment: a server that exits at once has
                // usually said why.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let e = super::http::error_text(&e);
                return Err(start(with_stderr(
                    format!("the handshake failed: {e}"),
                    stderr,
                )));
            }
            Err(_) => {
                return Err(start(with_stderr(
                    format!(
                        "no answer to the handshake within {} s",
                        spec.timeout.as_secs()
                    ),
                    stderr,
                )))
            }
        };
        if let Some(info) = service.peer_info() {
            let (name, version) = info
                .server_info
                .as_ref()
                .map(|i| (i.name.as_str(), i.version.as_str()))
                .unwrap_or(("?", "?"));
            log::info!(
                "MCP server {:?} connected: {name} {version} (protocol {})",
                spec.name,
                info.protocol_version
            );
        }
        Ok(Conn {
            service,
            _group: group,
            stale,
        })
    }

    /// The connection is gone (the child exited, the HTTP session ended).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// A handle for requests; several may run at once.
    pub fn peer(&self) -> rmcp::Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// Ends the session: stdin closed and the child given a moment to exit; then its
    /// process group is killed (the group's Drop), with whatever it started.
    pub async fn close(self) {
        let Conn {
            service,
            mut _group,
            ..
        } = self;
        // Closing the session closes the server's stdin; a well-behaved server exits.
        let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        if let Some(exited) = _group.exited.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), exited).await;
        }
        drop(_group);
    }
}

/// A stdio server's process; dropping it kills its whole process group.
struct Group {
    pgid: Option<i32>,
    /// Fires when the watcher has reaped the server.
    exited: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(p) = self.pgid.take() {
            super::reap::kill_group(p);
        }
    }
}

/// Every tool of the server (all pages).
pub(super) async fn list(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<McpTool>, ServiceError> {
    let tools = peer.list_all_tools().await?;
    Ok(tools
        .into_iter()
        .map(|t| McpTool {
            name: t.name.into_owned(),
            description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
            input_schema: serde_json::to_string(&*t.input_schema)
                .unwrap_or_else(|_| "{\"type\":\"object\"}".into()),
            annotations: t
                .annotations
                .map(|a| Annotations {
                    read_only_hint: a.read_only_hint,
                    destructive_hint: a.destructive_hint,
                    open_world_hint: a.open_world_hint,
                })
                .unwrap_or_default(),
        })
        .collect())
}

/// Calls one tool.
pub(super) async fn call(
    peer: &rmcp::Peer<RoleClient>,
    tool: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> Result<CallOutcome, ServiceError> {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let result = peer.call_tool(params).await?;
    Ok(outcome(result))
}

/// The text the model sees from a result: text parts as they are, structured content
/// when there is no text, other parts described in one line each.
fn outcome(result: CallToolResult) -> CallOutcome {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!(
                "[image {} of {} base64 bytes]",
                i.mime_type,
                i.data.len()
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[audio {} of {} base64 bytes]",
                a.mime_type,
                a.data.len()
            )),
            ContentBlock::Resource(r) => parts.push(match &r.resource {
                rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                rmcp::model::ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    format!(
                        "[resource {uri}: {} data]",
                        mime_type.as_deref().unwrap_or("binary")
                    )
                }
                _ => "[resource]".to_string(),
            }),
            ContentBlock::ResourceLink(l) => parts.push(format!("[link {} {}]", l.name, l.uri)),
            _ => parts.push("[content of a kind evolve does not show]".to_string()),
        }
    }
    if parts.is_empty() {
        if let Some(value) = &result.structured_content {
            parts.push(value.to_string());
        }
    }
    CallOutcome {
        content: parts.join("\n"),
        is_error: result.is_error == Some(true),
    }
}

/// The error a failed request becomes.
pub(super) fn request_error(server: &str, e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(data) => McpError::Server {
            server: server.to_string(),
            detail: format!("{} (code {})", data.message, data.code.0),
        },
        ServiceError::Cancelled { .. } => McpError::Cancelled,
        other => McpError::Broken {
            server: server.to_string(),
            detail: super::http::error_text(&other),
        },
    }
}

/// What went wrong starting a program, in words a user can act on.
fn spawn_problem(command: &str, cwd: Option<&std::path::Path>, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => match cwd {
            Some(dir) if !dir.is_dir() => {
                format!("its working directory {} does not exist", dir.display())
            }
            _ => format!("the program {command:?} was not found (is it installed and on PATH?)"),
        },
        std::io::ErrorKind::PermissionDenied => {
            format!("the program {command:?} cannot be run (permission denied)")
        }
        _ => format!("{command:?} could not be started: {e}"),
    }
}

/// Appends what the server last wrote to stderr.
fn with_stderr(mut message: String, stderr: &StderrTail) -> String {
    let lines = stderr.lock().map(|l| l.clone()).unwrap_or_default();
    if !lines.is_empty() {
        message.push_str("; it said: ");
        message.push_str(&Vec::from(lines).join(" | "));
    }
    message
}

/// Copies a server's stderr to the log (`info`, so `EVOLVE_LOG=info` shows it) and
/// keeps the last lines.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line =
            evolve_core::text::clip_chars(&evolve_core::text::escape_controls(&line, false), 500);
        log::info!("MCP server {server:?}: {line}");
        if let Ok(mut kept) = tail.lock() {
            if kept.len() == STDERR_KEPT {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    }
}
