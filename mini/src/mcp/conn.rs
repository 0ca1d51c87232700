//! One connection: starting a server (a stdio child, [`super::stdio`], or streamable
//! HTTP, [`super::http`]), the handshake, listing and calling tools, and closing.
//!
//! The handshake asks for protocol version [`PROTOCOL_VERSION`] and takes whatever
//! version the server answers with (2024-11-05, 2025-03-26 and 2025-06-18 servers
//! speak the same `tools/*` methods), then sends `notifications/initialized`. Evolve
//! advertises the `roots` capability (`roots/list` gives the workspace and the server's
//! own roots, and a change of them is announced) and form `elicitation` (a server's
//! question goes to the person of the turn, see [`super::elicit`]).
//! Everything here blocks the calling thread; the waits watch the caller's Ctrl-C flag.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::answers::{outcome, tool};
use super::http::{self, HttpLink, STATELESS_VERSION};
use super::jsonrpc::{Failure, Peer, Wait};
use super::oauth;
use super::stdio::{self, Launch, Process, StderrTail};
use super::{CallEvents, CallOutcome, McpError};
use crate::cancel::Cancel;
use crate::mcp_spec::{McpTool, ServerSpec, Transport};
use crate::sandbox::{self, Plan, Scope, ServerSandbox};
use crate::store::Store;

/// The newest protocol version with the `initialize` handshake.
pub(super) const PROTOCOL_VERSION: &str = "2025-11-25";

/// The revisions a server may answer `initialize` with (ours or an older one it
/// speaks); anything else is refused, since what it means is unknown.
const KNOWN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", PROTOCOL_VERSION];

/// Why a start is tried again.
enum Retry {
    /// The server speaks only revision 2026-07-28 (stdio: it exits after refusing
    /// `initialize`): start it again and discover.
    Stateless,
    Error(McpError),
}

/// The error a server that speaks only 2026-07-28 answers `initialize` with.
const UNSUPPORTED_VERSION: i64 = -32022;

/// A server may take longer to start than to answer a call (`npx` fetching a package,
/// Python importing its SDK): the handshake waits at least this long.
const HANDSHAKE_MIN: Duration = Duration::from_secs(15);

/// How long the handshake waits for a server whose calls have `timeout`.
fn handshake_wait(timeout: Duration) -> Duration {
    timeout.max(HANDSHAKE_MIN)
}

/// How long `server/discover` is waited for before `initialize` is tried (a server that
/// takes the request and never answers it must not cost a whole timeout).
const DISCOVER_WAIT: Duration = Duration::from_secs(5);

/// The `_meta` key of the protocol version in 2026-07-28 requests.
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// How often a 2026-07-28 call that answers `input_required` is made again.
const MAX_INPUT_ROUNDS: usize = 4;

/// A call that reports progress may run this many times its server's timeout in all
/// (each notice starts the timeout again); then it times out like any other.
pub(super) const PROGRESS_CAP: u32 = 10;

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
    /// Revision 2026-07-28 is spoken (no session, no ping).
    stateless: AtomicBool,
    /// The `outputSchema` of each tool that gave one, from the last listing.
    output_schemas: Mutex<std::collections::HashMap<String, Value>>,
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
    /// Starts the server and completes the handshake within the server's timeout (at
    /// least 15 s: starting can take longer than a call). An HTTP server without an
    /// Authorization of its own uses its OAuth login in `logins`.
    /// `started` gets the connection as soon as the process runs (or the HTTP link
    /// exists), before the handshake: closing it from there (evolve shutting down)
    /// ends the handshake at once.
    ///
    /// The handshake: over HTTP `server/discover` first (revision 2026-07-28, no
    /// session), then `initialize` if the server does not answer it; over stdio
    /// `initialize` (an older server may take an unknown first request badly), and a
    /// server that refuses it as an unsupported version (-32022: it speaks only
    /// 2026-07-28) is started again and spoken to without a handshake.
    pub fn open(
        spec: &ServerSpec,
        scope: Option<&Scope>,
        logins: Option<&Arc<Store>>,
        stderr: &StderrTail,
        cancel: &Cancel,
        started: impl Fn(&Arc<Conn>),
    ) -> Result<Arc<Conn>, McpError> {
        let http = matches!(spec.transport, Transport::Http { .. });
        match Conn::open_as(spec, scope, logins, stderr, cancel, &started, http) {
            Err(Retry::Stateless) => {
                log::info!(
                    "MCP server {:?} speaks only protocol {STATELESS_VERSION}; starting it again for that",
                    spec.name
                );
                Conn::open_as(spec, scope, logins, stderr, cancel, &started, true).map_err(|r| {
                    match r {
                        Retry::Stateless => McpError::Start {
                            server: spec.name.clone(),
                            detail: "it refuses every handshake evolve knows".into(),
                        },
                        Retry::Error(e) => e,
                    }
                })
            }
            Err(Retry::Error(e)) => Err(e),
            Ok(conn) => Ok(conn),
        }
    }

    fn open_as(
        spec: &ServerSpec,
        scope: Option<&Scope>,
        logins: Option<&Arc<Store>>,
        stderr: &StderrTail,
        cancel: &Cancel,
        started: &dyn Fn(&Arc<Conn>),
        discover: bool,
    ) -> Result<Arc<Conn>, Retry> {
        let start = |detail: String| McpError::Start {
            server: spec.name.clone(),
            detail,
        };
        let roots = roots(spec, scope);
        let (peer, wire) = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let plan = confinement(spec, scope)
                    .map_err(start)
                    .map_err(Retry::Error)?;
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
                    roots,
                    plan: plan.as_ref(),
                };
                let (peer, process) = stdio::spawn(launch, stderr)
                    .map_err(start)
                    .map_err(Retry::Error)?;
                (peer, Wire::Stdio(process))
            }
            Transport::Http {
                url,
                headers,
                bearer,
                ..
            } => {
                let mut endpoint = http::endpoint(url, headers, bearer.as_ref())
                    .map_err(|e| start(e.to_string()))
                    .map_err(Retry::Error)?;
                if let Some(store) = logins.filter(|_| oauth::applies(spec)) {
                    let login = oauth::Bearer::new(&spec.name, url, store.clone());
                    endpoint = endpoint.with_login(Arc::new(login));
                }
                let link = HttpLink::new(&spec.name, endpoint);
                let peer = Peer::new(&spec.name, Arc::new(link.clone()), roots);
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
            output_schemas: Mutex::default(),
            stateless: AtomicBool::new(false),
        });
        started(&conn);
        let shaken = if discover {
            match conn.discover(cancel) {
                Ok(true) => Ok(()),
                Ok(false) => conn.handshake(cancel),
                Err(f) => Err(f),
            }
        } else {
            conn.handshake(cancel)
        };
        let failure = match shaken {
            Ok(()) => return Ok(conn),
            Err(Failure::Rpc {
                code: UNSUPPORTED_VERSION,
                ..
            }) if !discover => {
                conn.close();
                return Err(Retry::Stateless);
            }
            Err(failure) => failure,
        };
        if let (Wire::Stdio(process), Failure::Broken(_)) = (&conn.wire, &failure) {
            // A server that exits at once has usually said why.
            process.settle_stderr();
        }
        let detail = match failure {
            Failure::Cancelled => {
                conn.close();
                return Err(Retry::Error(McpError::Cancelled));
            }
            Failure::Unauthorized(detail) => {
                conn.close();
                return Err(Retry::Error(McpError::Login {
                    server: spec.name.clone(),
                    detail,
                }));
            }
            Failure::Timeout => format!(
                "no answer to the handshake within {} s",
                handshake_wait(spec.timeout).as_secs()
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
        Err(Retry::Error(start(detail)))
    }

    /// Revision 2026-07-28: `server/discover`, every request carrying the version and
    /// the client's capabilities in `_meta`. `Ok(false)` when the server does not speak
    /// it (an error, an HTTP refusal, an answer without the version): the older
    /// handshake follows on the same link.
    fn discover(&self, cancel: &Cancel) -> Result<bool, Failure> {
        let mut meta = serde_json::Map::new();
        meta.insert(META_VERSION.into(), json!(STATELESS_VERSION));
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            json!({"roots": {}, "elicitation": {"form": {}}}),
        );
        meta.insert(
            "io.modelcontextprotocol/clientInfo".into(),
            json!({"name": "evolve", "version": env!("CARGO_PKG_VERSION")}),
        );
        self.peer.set_request_meta(Some(meta));
        if let Wire::Http(link) = &self.wire {
            link.set_protocol(STATELESS_VERSION);
        }
        let undo = || {
            self.peer.set_request_meta(None);
            if let Wire::Http(link) = &self.wire {
                link.reset();
            }
        };
        let wait = self.timeout.min(DISCOVER_WAIT);
        let result = match self.peer.request("server/discover", None, wait, cancel) {
            Ok(result) => result,
            Err(Failure::Cancelled) => {
                undo();
                return Err(Failure::Cancelled);
            }
            Err(other) => {
                log::debug!(
                    "MCP server {:?} does not answer server/discover ({other:?}); initialize follows",
                    self.server
                );
                undo();
                return Ok(false);
            }
        };
        let speaks = result["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v == STATELESS_VERSION));
        if !speaks {
            undo();
            return Ok(false);
        }
        let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
        let shown = |v: &Value| {
            v.as_str().map_or_else(
                || "?".to_string(),
                |s| {
                    evolve_core::text::clip_chars(
                        &evolve_core::text::escape_controls(s, false),
                        100,
                    )
                },
            )
        };
        log::info!(
            "MCP server {:?} connected: {} {} (protocol {STATELESS_VERSION}, no session)",
            self.server,
            shown(&info["name"]),
            shown(&info["version"]),
        );
        self.stateless.store(true, Ordering::SeqCst);
        Ok(true)
    }

    /// `initialize`, then `notifications/initialized`; over HTTP the notification
    /// stream opens after.
    fn handshake(&self, cancel: &Cancel) -> Result<(), Failure> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"roots": {"listChanged": true}, "elicitation": {"form": {}}},
            "clientInfo": {"name": "evolve", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = self.peer.request(
            "initialize",
            Some(params),
            handshake_wait(self.timeout),
            cancel,
        )?;
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

    /// Takes a changed definition's roots without reconnecting (see [`roots`]).
    pub fn set_roots(&self, spec: &ServerSpec, scope: Option<&Scope>) {
        self.peer.set_roots(roots(spec, scope));
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
    /// more. With `events` the request asks for progress notices and takes the server's
    /// questions for a person (see [`Peer::request_with`]); progress may stretch its
    /// wait to [`PROGRESS_CAP`] timeouts.
    fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: &Cancel,
        mut events: Option<&mut dyn CallEvents>,
    ) -> Result<Value, Failure> {
        let session = self.sessions.load(Ordering::SeqCst);
        fn wait<'a, 'b: 'a>(
            timeout: Duration,
            cancel: &'a Cancel,
            events: Option<&'a mut (dyn CallEvents + 'b)>,
        ) -> Wait<'a> {
            Wait {
                timeout,
                cancel,
                events: events
                    .map(|e| (e as &'a mut (dyn CallEvents + 'a), timeout * PROGRESS_CAP)),
            }
        }
        let first = self.peer.request_with(
            method,
            params.clone(),
            wait(
                timeout,
                cancel,
                events.as_mut().map(|e| &mut **e as &mut dyn CallEvents),
            ),
        );
        match first {
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
                self.peer
                    .request_with(method, params, wait(timeout, cancel, events))
            }
            other => other,
        }
    }

    /// Whether the server answers a `ping` (2026-07-28 has none: `server/discover`)
    /// within `timeout`: a server that let one call time out but still answers is
    /// busy, not hung.
    pub fn ping(&self, timeout: Duration) -> bool {
        let never = Cancel::new();
        let method = if self.stateless.load(Ordering::SeqCst) {
            "server/discover"
        } else {
            "ping"
        };
        self.peer.request(method, None, timeout, &never).is_ok()
    }

    /// Every tool of the server (all pages), within the server's timeout.
    pub fn list(&self, cancel: &Cancel) -> Result<Vec<McpTool>, McpError> {
        let deadline = Instant::now() + self.timeout;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut cursors = HashSet::new();
        for _ in 0..MAX_PAGES {
            let left = deadline.saturating_duration_since(Instant::now());
            let params = cursor.take().map(|c| json!({"cursor": c}));
            let page = self
                .request("tools/list", params, left, cancel, None)
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
            let mut schemas = self
                .output_schemas
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if cursors.is_empty() {
                schemas.clear();
            }
            for t in listed {
                if let (Some(name), Some(schema @ Value::Object(_))) =
                    (t["name"].as_str(), t.get("outputSchema"))
                {
                    schemas.insert(name.to_string(), schema.clone());
                }
            }
            drop(schemas);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if cursors.insert(next.to_string()) => cursor = Some(next.to_string()),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Calls one tool within the server's timeout, each progress notice of the server
    /// going to `events` and starting the timeout again (up to [`PROGRESS_CAP`] times
    /// the timeout in all), and each question for a person (`elicitation/create`) to
    /// `events` too, the clock stopped while the person answers.
    pub fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: &Cancel,
        events: &mut dyn CallEvents,
    ) -> Result<CallOutcome, McpError> {
        let mut params = json!({"name": tool, "arguments": arguments});
        let mut result = Value::Null;
        for _ in 0..=MAX_INPUT_ROUNDS {
            result = self
                .request(
                    "tools/call",
                    Some(params.clone()),
                    self.timeout,
                    cancel,
                    Some(&mut *events),
                )
                .map_err(|f| self.error(tool, f))?;
            if result["resultType"] != "input_required" {
                break;
            }
            // 2026-07-28: a server cannot ask during a call; it answers with what it
            // needs, and the call is made again with the answers.
            let mut responses = serde_json::Map::new();
            for (key, asked) in result["inputRequests"].as_object().into_iter().flatten() {
                let answer = match asked["method"].as_str() {
                    Some("roots/list") => self.peer.roots_result(),
                    Some("elicitation/create") => {
                        match super::elicit::Elicitation::parse(&self.server, &asked["params"]) {
                            Ok(question) => events.elicit(&question).result(),
                            Err(_) => super::elicit::ElicitReply::Decline.result(),
                        }
                    }
                    _ => continue,
                };
                responses.insert(key.clone(), answer);
            }
            params["inputResponses"] = Value::Object(responses);
            params["requestState"] = result["requestState"].clone();
        }
        if result["resultType"] == "input_required" {
            return Err(McpError::Broken {
                server: self.server.clone(),
                detail: format!("it kept asking for input after {MAX_INPUT_ROUNDS} answers"),
            });
        }
        let schema = self
            .output_schemas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool)
            .cloned();
        Ok(outcome(&result, schema.as_ref()))
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

/// What `roots/list` answers: the workspace (where the user works, and where the model's
/// paths point), then the server's own roots (`roots = […]`, or the directories among
/// its arguments), each once.
fn roots(spec: &ServerSpec, scope: Option<&Scope>) -> Vec<std::path::PathBuf> {
    let mut roots: Vec<std::path::PathBuf> =
        scope.map(|s| s.workspace.clone()).into_iter().collect();
    for root in &spec.roots {
        if !roots.contains(root) {
            roots.push(root.clone());
        }
    }
    roots
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
