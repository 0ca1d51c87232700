//! One connection: starting a server (a stdio child, [`super::stdio`], or streamable
//! HTTP, [`super::http`]), the handshake, listing and calling tools, and closing.
//!
//! The handshake asks for protocol version [`PROTOCOL_VERSION`] and takes whatever
//! version the server answers with (2024-11-05, 2025-03-26 and 2025-06-18 servers
//! speak the same `tools/*` methods), then sends `notifications/initialized`. Evolve
//! advertises no client capability: it offers tools to its model and nothing else.
//! Everything here blocks the calling thread; the waits watch the caller's Ctrl-C flag.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::{self, HttpLink};
use super::jsonrpc::{Failure, Peer};
use super::oauth;
use super::stdio::{self, Launch, Process, StderrTail};
use super::{CallOutcome, McpError};
use crate::mcp_spec::{McpTool, ServerSpec, Transport};
use crate::sandbox::{self, Plan, Scope, ServerSandbox};
use crate::store::Store;
use evolve_core::permission::Annotations;

/// The newest protocol version with the `initialize` handshake.
pub(super) const PROTOCOL_VERSION: &str = "2025-11-25";

/// The revisions a server may answer `initialize` with (ours or an older one it
/// speaks); anything else is refused, since what it means is unknown.
const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", PROTOCOL_VERSION];

/// At most this many pages of `tools/list` are read (a server repeating its cursor
/// forever cannot hold a turn).
const MAX_PAGES: usize = 100;

/// A live connection.
pub(super) struct Conn {
    server: String,
    peer: Arc<Peer>,
    wire: Wire,
    /// The server's per-call timeout (also for the handshake and the tool list).
    timeout: Duration,
    /// Streamable HTTP: one new session at a time after the old one expired.
    renewing: Mutex<()>,
    /// Grows with every new session.
    sessions: AtomicU64,
}

/// What carries the messages.
enum Wire {
    Stdio(Process),
    Http(HttpLink),
}

/// The kernel confinement a stdio server asked for (`sandbox = …`), or `None`. A server
/// that asked for one is not started without it: no Landlock, or no workspace to confine
/// it to, is an error that says so.
fn confinement(spec: &ServerSpec, scope: Option<&Scope>) -> Result<Option<Plan>, String> {
    let Transport::Stdio {
        command,
        args,
        env,
        cwd,
        ..
    } = &spec.transport
    else {
        return Ok(None);
    };
    if spec.sandbox == ServerSandbox::None {
        return Ok(None);
    }
    let mode = spec.sandbox.as_str();
    let status = sandbox::status();
    if status.abi.is_none() {
        return Err(format!(
            "it is to be confined (sandbox = \"{mode}\"), but there is no kernel confinement \
             here ({}) — not started; set sandbox = \"none\" to run it unconfined",
            status.problem.as_deref().unwrap_or("unknown")
        ));
    }
    let Some(scope) = scope else {
        return Err(format!(
            "it is to be confined (sandbox = \"{mode}\"), but no workspace is known here"
        ));
    };
    let data = scope.evolve_home.join("sandbox").join(&spec.name);
    // What the model can write (through this server, the shell or the file tools) never
    // decides what the server may read and run.
    let mut writable = vec![
        scope.workspace.clone(),
        scope.evolve_home.clone(),
        data.clone(),
    ];
    if spec.sandbox == ServerSandbox::Workspace {
        writable.extend(spec.roots.iter().cloned());
    }
    let mut protected = vec![scope.workspace.clone(), scope.evolve_home.clone()];
    protected.extend(std::env::var_os("HOME").map(std::path::PathBuf::from));
    let programs = sandbox::program_dirs(command, args, cwd.as_deref(), &writable, &protected);
    Plan::for_server(spec.sandbox, scope, &programs, &spec.roots, &data, env)
        .map(Some)
        .map_err(|e| e.to_string())
}

impl Conn {
    /// Starts the server and completes the handshake within the server's timeout. An
    /// HTTP server without an Authorization of its own uses its OAuth login in `logins`.
    /// `started` gets the connection as soon as the process runs (or the HTTP link
    /// exists), before the handshake: closing it from there (evolve shutting down)
    /// ends the handshake at once.
    pub fn open(
        spec: &ServerSpec,
        scope: Option<&Scope>,
        logins: Option<&Arc<Store>>,
        stderr: &StderrTail,
        cancel: &AtomicBool,
        started: impl FnOnce(&Arc<Conn>),
    ) -> Result<Arc<Conn>, McpError> {
        let start = |detail: String| McpError::Start {
            server: spec.name.clone(),
            detail,
        };
        let (peer, wire) = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let plan = confinement(spec, scope).map_err(start)?;
                // A confined server starts in the workspace unless told otherwise.
                let cwd = cwd
                    .as_deref()
                    .or_else(|| plan.as_ref().and(scope).map(|s| s.workspace.as_path()));
                let launch = Launch {
                    server: &spec.name,
                    command,
                    args,
                    env,
                    cwd,
                    roots: spec.roots.clone(),
                    plan: plan.as_ref(),
                };
                let (peer, process) = stdio::spawn(launch, stderr).map_err(start)?;
                (peer, Wire::Stdio(process))
            }
            Transport::Http {
                url,
                headers,
                bearer,
                ..
            } => {
                let mut endpoint = http::endpoint(url, headers, bearer.as_ref()).map_err(start)?;
                if let Some(store) = logins.filter(|_| oauth::applies(spec)) {
                    let login = oauth::Bearer::new(&spec.name, url, store.clone());
                    endpoint = endpoint.with_login(Arc::new(login));
                }
                let link = HttpLink::new(&spec.name, endpoint);
                let peer = Peer::new(&spec.name, Arc::new(link.clone()), spec.roots.clone());
                (peer, Wire::Http(link))
            }
        };
        let conn = Arc::new(Conn {
            server: spec.name.clone(),
            peer,
            wire,
            timeout: spec.timeout,
            renewing: Mutex::new(()),
            sessions: AtomicU64::new(0),
        });
        started(&conn);
        let failure = match conn.handshake(cancel) {
            Ok(()) => return Ok(conn),
            Err(failure) => failure,
        };
        if let (Wire::Stdio(process), Failure::Broken(_)) = (&conn.wire, &failure) {
            // A server that exits at once has usually said why.
            process.settle_stderr();
        }
        let detail = match failure {
            Failure::Cancelled => {
                conn.close();
                return Err(McpError::Cancelled);
            }
            Failure::Unauthorized(detail) => {
                conn.close();
                return Err(McpError::Login {
                    server: spec.name.clone(),
                    detail,
                });
            }
            Failure::Timeout => format!(
                "no answer to the handshake within {} s",
                spec.timeout.as_secs()
            ),
            Failure::Rpc { code, message } => {
                format!("the handshake failed: {message} (code {code})")
            }
            Failure::Broken(detail) => format!("the handshake failed: {detail}"),
            Failure::SessionExpired => {
                "the handshake failed: the server does not know its own session".to_string()
            }
        };
        let detail = stdio::with_stderr(detail, stderr);
        conn.close();
        Err(start(detail))
    }

    /// `initialize`, then `notifications/initialized`; over HTTP the notification
    /// stream opens after.
    fn handshake(&self, cancel: &AtomicBool) -> Result<(), Failure> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "evolve", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self
            .peer
            .request("initialize", Some(params), self.timeout, cancel)?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Failure::Broken("its answer to initialize names no protocol version".into())
            })?;
        if !KNOWN_VERSIONS.contains(&version) {
            return Err(Failure::Broken(format!(
                "it answered protocol version {:?}, which evolve does not speak (it speaks {}); \
                 update the server or evolve",
                evolve_core::text::clip_chars(
                    &evolve_core::text::escape_controls(version, false),
                    40
                ),
                KNOWN_VERSIONS.join(", ")
            )));
        }
        let info = |key: &str| {
            result["serverInfo"][key]
                .as_str()
                .map(|s| {
                    evolve_core::text::clip_chars(
                        &evolve_core::text::escape_controls(s, false),
                        100,
                    )
                })
                .unwrap_or_else(|| "?".into())
        };
        log::info!(
            "MCP server {:?} connected: {} {} (protocol {})",
            self.server,
            info("name"),
            info("version"),
            evolve_core::text::escape_controls(version, false)
        );
        if let Wire::Http(link) = &self.wire {
            link.set_protocol(version);
        }
        self.peer.notify("notifications/initialized", None, true)?;
        if let Wire::Http(link) = &self.wire {
            link.listen(&self.peer);
        }
        Ok(())
    }

    /// The connection still works (the process runs, the session was not closed).
    pub fn is_open(&self) -> bool {
        self.peer.ended().is_none()
    }

    /// Set by `notifications/tools/list_changed`.
    pub fn stale(&self) -> Arc<AtomicBool> {
        self.peer.stale().clone()
    }

    /// A request; over HTTP an expired session is replaced and the request sent once
    /// more.
    fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, Failure> {
        let session = self.sessions.load(Ordering::SeqCst);
        match self.peer.request(method, params.clone(), timeout, cancel) {
            Err(Failure::SessionExpired) => {
                let Wire::Http(link) = &self.wire else {
                    return Err(Failure::SessionExpired);
                };
                {
                    let _one = self.renewing.lock().unwrap_or_else(|e| e.into_inner());
                    if self.sessions.load(Ordering::SeqCst) == session {
                        log::info!(
                            "MCP server {:?} at {} no longer knows evolve's session; starting a new one",
                            self.server,
                            link.shown()
                        );
                        link.reset();
                        self.handshake(cancel)?;
                        self.sessions.fetch_add(1, Ordering::SeqCst);
                    }
                }
                self.peer.request(method, params, timeout, cancel)
            }
            other => other,
        }
    }

    /// Every tool of the server (all pages), within the server's timeout.
    pub fn list(&self, cancel: &AtomicBool) -> Result<Vec<McpTool>, McpError> {
        let deadline = Instant::now() + self.timeout;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut cursors = HashSet::new();
        for _ in 0..MAX_PAGES {
            let left = deadline.saturating_duration_since(Instant::now());
            let params = cursor.take().map(|c| json!({"cursor": c}));
            let page = self
                .request("tools/list", params, left, cancel)
                .map_err(|f| self.error("tools/list", f))?;
            let Some(listed) = page.get("tools").and_then(Value::as_array) else {
                return Err(McpError::Broken {
                    server: self.server.clone(),
                    detail: "its answer to tools/list has no tool list".into(),
                });
            };
            tools.extend(
                listed
                    .iter()
                    .filter(|t| {
                        // A tool that runs only as an MCP task (`execution.taskSupport:
                        // "required"`) would fail every call: evolve does not drive tasks.
                        let task_only = t["execution"]["taskSupport"].as_str() == Some("required");
                        if task_only {
                            log::info!(
                                "MCP server {:?}: the tool {} runs only as a task, which evolve \
                                 does not support; it is not offered",
                                self.server,
                                t["name"]
                            );
                        }
                        !task_only
                    })
                    .filter_map(tool),
            );
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if cursors.insert(next.to_string()) => cursor = Some(next.to_string()),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Calls one tool within the server's timeout.
    pub fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: &AtomicBool,
    ) -> Result<CallOutcome, McpError> {
        let params = json!({"name": tool, "arguments": arguments});
        let result = self
            .request("tools/call", Some(params), self.timeout, cancel)
            .map_err(|f| self.error(tool, f))?;
        Ok(outcome(&result))
    }

    /// Ends the connection: a stdio server's stdin is closed, SIGTERM follows after
    /// 1.5 s, and after 2 s in all its process group is killed; an HTTP session is
    /// deleted. Requests still waiting fail.
    pub fn close(&self) {
        match &self.wire {
            Wire::Stdio(process) => process.close(),
            Wire::Http(link) => link.close(),
        }
        self.peer.end("the connection was closed");
    }

    /// The error a failed request becomes.
    fn error(&self, tool: &str, failure: Failure) -> McpError {
        let server = self.server.clone();
        match failure {
            Failure::Rpc { code, message } => McpError::Server {
                server,
                detail: format!("{message} (code {code})"),
            },
            Failure::Cancelled => McpError::Cancelled,
            Failure::Timeout => McpError::Timeout {
                server,
                tool: tool.to_string(),
                secs: self.timeout.as_secs(),
            },
            Failure::Broken(detail) => McpError::Broken { server, detail },
            Failure::Unauthorized(detail) => McpError::Login { server, detail },
            Failure::SessionExpired => McpError::Broken {
                server,
                detail: "the server ended the session".into(),
            },
        }
    }
}

/// One listed tool; `None` without a name. A missing or odd schema is an empty object
/// schema, so one odd tool does not hide the others.
fn tool(t: &Value) -> Option<McpTool> {
    let name = t.get("name")?.as_str()?.to_string();
    let input_schema = match t.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.to_string(),
        _ => "{\"type\":\"object\"}".to_string(),
    };
    let hint = |key: &str| t["annotations"][key].as_bool();
    Some(McpTool {
        name,
        description: t["description"].as_str().unwrap_or_default().to_string(),
        input_schema,
        annotations: Annotations {
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            open_world_hint: hint("openWorldHint"),
        },
    })
}

/// The text the model sees from a result: text parts as they are, structured content
/// when there is no part, other parts described in one line each.
fn outcome(result: &Value) -> CallOutcome {
    let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    let base64_len = |v: &Value| v["data"].as_str().map_or(0, str::len);
    let mut parts: Vec<String> = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        parts.push(match block["type"].as_str().unwrap_or_default() {
            "text" => text(block, "text"),
            "image" => format!(
                "[image {} of {} base64 bytes]",
                text(block, "mimeType"),
                base64_len(block)
            ),
            "audio" => format!(
                "[audio {} of {} base64 bytes]",
                text(block, "mimeType"),
                base64_len(block)
            ),
            "resource" => {
                let r = &block["resource"];
                let uri = text(r, "uri");
                match (r["text"].as_str(), r.get("blob")) {
                    (Some(body), _) => format!("[resource {uri}]\n{body}"),
                    (None, Some(_)) => format!(
                        "[resource {uri}: {} data]",
                        r["mimeType"].as_str().unwrap_or("binary")
                    ),
                    (None, None) => "[resource]".to_string(),
                }
            }
            "resource_link" => format!("[link {} {}]", text(block, "name"), text(block, "uri")),
            _ => "[content of a kind evolve does not show]".to_string(),
        });
    }
    if parts.is_empty() {
        if let Some(value) = result.get("structuredContent").filter(|v| !v.is_null()) {
            parts.push(value.to_string());
        }
    }
    CallOutcome {
        content: parts.join("\n"),
        is_error: result["isError"].as_bool() == Some(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_as_the_model_sees_them() {
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                "a\nb",
                false,
            ),
            (
                json!({"content": [{"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}], "isError": true}),
                "[image image/png of 8 base64 bytes]",
                true,
            ),
            (
                json!({"content": [{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]}),
                "[audio audio/wav of 4 base64 bytes]",
                false,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}}]}),
                "[resource file:///a.txt]\nhello",
                false,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AA=="}}]}),
                "[resource file:///a.bin: binary data]",
                false,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "x:1", "mimeType": "image/gif", "blob": "AA=="}}]}),
                "[resource x:1: image/gif data]",
                false,
            ),
            (
                json!({"content": [{"type": "resource_link", "name": "notes", "uri": "file:///n"}]}),
                "[link notes file:///n]",
                false,
            ),
            (
                json!({"content": [{"type": "hologram"}]}),
                "[content of a kind evolve does not show]",
                false,
            ),
            (
                json!({"content": [], "structuredContent": {"sum": 5}}),
                "{\"sum\":5}",
                false,
            ),
            (json!({"content": [], "isError": false}), "", false),
        ];
        for (result, text, is_error) in cases {
            let out = outcome(&result);
            assert_eq!(
                (out.content.as_str(), out.is_error),
                (text, is_error),
                "{result}"
            );
        }
    }

    #[test]
    fn listed_tools_keep_their_schema_and_hints() {
        let t = tool(&json!({
            "name": "write",
            "description": "Writes",
            "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}},
            "annotations": {"readOnlyHint": false, "destructiveHint": true}
        }))
        .expect("a tool");
        assert_eq!(t.name, "write");
        assert_eq!(t.description, "Writes");
        assert_eq!(
            t.input_schema,
            r#"{"properties":{"p":{"type":"string"}},"type":"object"}"#
        );
        assert_eq!(t.annotations.read_only_hint, Some(false));
        assert_eq!(t.annotations.destructive_hint, Some(true));
        assert_eq!(t.annotations.open_world_hint, None);
        let bare = tool(&json!({"name": "x"})).expect("a tool");
        assert_eq!(
            (bare.description.as_str(), bare.input_schema.as_str()),
            ("", "{\"type\":\"object\"}")
        );
        assert!(tool(&json!({"description": "no name"})).is_none());
    }
}
