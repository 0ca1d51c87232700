//! The MCP thread: one tokio current_thread runtime owning every connection, driven by
//! commands over a channel; callers block on a reply channel, checking Ctrl-C while
//! they wait.
//!
//! Per server a slot holds the connection (if any) and its failure count. A request:
//! 1. takes the slot; a missing or closed connection is (re)started — the first restart
//!    at once, then after 1, 2, 4 … 30 s of backoff (a wait up to 2 s is slept through,
//!    a longer one is an error saying when the next attempt is);
//! 2. releases the slot and runs the request on a clone of the peer, so calls to one
//!    server run side by side;
//! 3. on a timeout or a broken connection, stops the server (a hung server is not
//!    reused) and counts a failure; a completed call resets the count.
//!
//! The tool list a server sent is kept ([`Hub::live_tools`]) and fetched again after
//! `notifications/tools/list_changed`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::conn::{self, Conn, StderrTail};
use super::{CallOutcome, McpError, McpTool, ServerSpec};

/// A backoff wait this short is slept through rather than reported.
const BACKOFF_SLEEP_MAX: Duration = Duration::from_secs(2);
/// The longest backoff between restarts.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long shutdown waits for the servers to exit.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// How often a waiting caller looks at its Ctrl-C flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Every MCP connection of this process. Cheap to create: the thread and the servers
/// start on first use. Dropping it shuts every server down (children are killed if they
/// do not exit when their stdin closes).
pub struct Hub {
    specs: std::sync::RwLock<Vec<ServerSpec>>,
    thread: OnceLock<Thread>,
    shared: Arc<Shared>,
}

/// What the callers and the MCP thread both see.
#[derive(Default)]
struct Shared {
    /// The last tool list of each connected server, with its generation.
    live: Mutex<HashMap<String, Live>>,
    /// Grows on every new list (any server).
    generation: AtomicU64,
    /// Running requests, to abort on Ctrl-C.
    running: Mutex<HashMap<u64, tokio::task::AbortHandle>>,
    next_request: AtomicU64,
}

#[derive(Clone)]
struct Live {
    generation: u64,
    tools: Vec<McpTool>,
    /// `tools/list_changed` arrived since.
    stale: Arc<AtomicBool>,
}

struct Thread {
    commands: mpsc::UnboundedSender<Command>,
    done: Mutex<Option<std_mpsc::Receiver<()>>>,
}

type Reply<T> = std_mpsc::Sender<Result<T, McpError>>;

enum Command {
    List {
        id: u64,
        server: String,
        reply: Reply<Vec<McpTool>>,
    },
    Call {
        id: u64,
        server: String,
        tool: String,
        arguments: serde_json::Map<String, serde_json::Value>,
        reply: Reply<CallOutcome>,
    },
    /// The configured servers changed (`/mcp add` in chat …).
    Reload(Vec<ServerSpec>),
    Shutdown,
}

impl Hub {
    /// A hub for these servers (disabled ones included: they are refused on use).
    pub fn new(specs: Vec<ServerSpec>) -> Hub {
        Hub {
            specs: std::sync::RwLock::new(specs),
            thread: OnceLock::new(),
            shared: Arc::new(Shared::default()),
        }
    }

    /// The configured servers.
    pub fn specs(&self) -> Vec<ServerSpec> {
        self.specs.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// The server of that name.
    pub fn spec(&self, server: &str) -> Option<ServerSpec> {
        self.specs
            .read()
            .ok()?
            .iter()
            .find(|s| s.name == server)
            .cloned()
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.specs.read().map_or(true, |s| s.is_empty())
    }

    /// Takes a new list of servers (added, removed or changed while running): removed
    /// and changed servers are stopped, new ones start on first use.
    pub fn reload(&self, specs: Vec<ServerSpec>) {
        if let Ok(mut current) = self.specs.write() {
            *current = specs.clone();
        }
        if let Some(thread) = self.thread.get() {
            let _ = thread.commands.send(Command::Reload(specs));
        }
    }

    /// Lists a server's tools, starting (or restarting) it if needed.
    pub fn list_tools(&self, server: &str, cancel: &AtomicBool) -> Result<Vec<McpTool>, McpError> {
        let spec = self.usable(server)?;
        let (reply, answer) = std_mpsc::channel();
        let id = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
        self.send(Command::List {
            id,
            server: server.to_string(),
            reply,
        })?;
        self.wait(id, &answer, &spec, cancel)
    }

    /// The tool list a connected server last sent (at connection, or after
    /// `tools/list_changed`, fetched again here), with a number that grows on every
    /// change; `None` when the server is not connected in this process.
    pub fn live_tools(&self, server: &str) -> Option<(u64, Vec<McpTool>)> {
        let live = self.shared.live.lock().ok()?.get(server).cloned()?;
        if !live.stale.load(Ordering::SeqCst) {
            return Some((live.generation, live.tools));
        }
        let never = AtomicBool::new(false);
        match self.list_tools(server, &never) {
            Ok(tools) => {
                let generation = self.shared.live.lock().ok()?.get(server)?.generation;
                Some((generation, tools))
            }
            Err(e) => {
                log::warn!("{e}");
                None
            }
        }
    }

    /// Calls a tool with JSON-object arguments, within the server's timeout.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        cancel: &AtomicBool,
    ) -> Result<CallOutcome, McpError> {
        let spec = self.usable(server)?;
        let arguments = match serde_json::from_str::<serde_json::Value>(arguments) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(serde_json::Value::Null) => serde_json::Map::new(),
            _ => {
                return Ok(CallOutcome {
                    content: "the arguments must be a JSON object".into(),
                    is_error: true,
                })
            }
        };
        let (reply, answer) = std_mpsc::channel();
        let id = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
        self.send(Command::Call {
            id,
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            reply,
        })?;
        self.wait(id, &answer, &spec, cancel)
    }

    /// Fetches the lists of connected servers that sent `tools/list_changed`; true when
    /// any list was fetched (the tools offered to the model should be rebuilt).
    pub fn refresh_changed(&self) -> bool {
        let stale: Vec<String> = match self.shared.live.lock() {
            Ok(live) => live
                .iter()
                .filter(|(_, l)| l.stale.load(Ordering::SeqCst))
                .map(|(name, _)| name.clone())
                .collect(),
            Err(_) => return false,
        };
        let mut changed = false;
        for server in stale {
            changed |= self.live_tools(&server).is_some();
        }
        changed
    }

    /// Grows whenever any server's tool list is fetched (connection, change): a tool
    /// list built at one number is stale at another.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// The servers connected right now.
    pub fn connected(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .shared
            .live
            .lock()
            .map(|l| l.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Stops every server and the thread (also done on drop); waits up to 5 s.
    pub fn shutdown(&self) {
        let Some(thread) = self.thread.get() else {
            return;
        };
        let _ = thread.commands.send(Command::Shutdown);
        if let Some(done) = thread.done.lock().ok().and_then(|mut d| d.take()) {
            let _ = done.recv_timeout(SHUTDOWN_WAIT + Duration::from_secs(1));
        }
    }

    /// The spec, if the server exists and is enabled.
    fn usable(&self, server: &str) -> Result<ServerSpec, McpError> {
        match self.spec(server) {
            Some(spec) if !spec.disabled => Ok(spec),
            _ => Err(McpError::UnknownServer(server.to_string())),
        }
    }

    fn send(&self, command: Command) -> Result<(), McpError> {
        let thread = self
            .thread
            .get_or_init(|| start(&self.specs(), &self.shared));
        thread
            .commands
            .send(command)
            .map_err(|_| McpError::Shutdown)
    }

    /// Waits for a reply. The MCP thread enforces the server's timeout; this wait adds
    /// a margin only so that a wedged thread cannot hang the caller.
    fn wait<T>(
        &self,
        id: u64,
        answer: &std_mpsc::Receiver<Result<T, McpError>>,
        spec: &ServerSpec,
        cancel: &AtomicBool,
    ) -> Result<T, McpError> {
        // Starting can take a timeout (handshake), listing another, the request a
        // third, and a short backoff wait before all that.
        let deadline =
            Instant::now() + spec.timeout * 3 + BACKOFF_SLEEP_MAX + Duration::from_secs(5);
        loop {
            if cancel.load(Ordering::SeqCst) {
                if let Some(handle) = self
                    .shared
                    .running
                    .lock()
                    .ok()
                    .and_then(|mut r| r.remove(&id))
                {
                    handle.abort();
                }
                return Err(McpError::Cancelled);
            }
            match answer.recv_timeout(CANCEL_POLL) {
                Ok(result) => return result,
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return Err(McpError::Shutdown),
                Err(std_mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    return Err(McpError::Timeout {
                        server: spec.name.clone(),
                        tool: "(waiting for the MCP thread)".into(),
                        secs: spec.timeout.as_secs(),
                    })
                }
                Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the MCP thread.
fn start(specs: &[ServerSpec], shared: &Arc<Shared>) -> Thread {
    let (commands, receiver) = mpsc::unbounded_channel();
    let (done_tx, done) = std_mpsc::channel();
    let specs = specs.to_vec();
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("mcp".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt.block_on(serve(specs, shared, receiver)),
                Err(e) => log::error!("the MCP runtime cannot start: {e}"),
            }
            let _ = done_tx.send(());
        });
    if let Err(e) = spawned {
        log::error!("the MCP thread cannot start: {e}");
    }
    Thread {
        commands,
        done: Mutex::new(Some(done)),
    }
}

/// One server's state on the MCP thread.
struct Slot {
    spec: ServerSpec,
    conn: Option<Conn>,
    /// Consecutive failures (start failures, crashes, timeouts).
    failures: u32,
    /// No restart before this.
    retry_at: Option<Instant>,
    stderr: StderrTail,
}

type Slots = Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>>;

fn new_slot(spec: ServerSpec) -> Arc<tokio::sync::Mutex<Slot>> {
    Arc::new(tokio::sync::Mutex::new(Slot {
        spec,
        conn: None,
        failures: 0,
        retry_at: None,
        stderr: StderrTail::default(),
    }))
}

/// The slot of a server.
fn slot_of(slots: &Slots, server: &str) -> Option<Arc<tokio::sync::Mutex<Slot>>> {
    slots.lock().ok()?.get(server).cloned()
}

/// The MCP thread's loop: every command becomes a task; `Shutdown` closes every
/// connection.
async fn serve(
    specs: Vec<ServerSpec>,
    shared: Arc<Shared>,
    mut receiver: mpsc::UnboundedReceiver<Command>,
) {
    let slots: Slots = Arc::new(Mutex::new(
        specs
            .into_iter()
            .map(|spec| (spec.name.clone(), new_slot(spec)))
            .collect(),
    ));
    while let Some(command) = receiver.recv().await {
        let (id, task) = match command {
            Command::Shutdown => break,
            Command::Reload(specs) => {
                reload(&slots, &shared, specs);
                continue;
            }
            Command::List { id, server, reply } => {
                let (slots, shared) = (slots.clone(), shared.clone());
                let task = tokio::spawn(async move {
                    let _ = reply.send(list(&slots, &shared, &server).await);
                });
                (id, task)
            }
            Command::Call {
                id,
                server,
                tool,
                arguments,
                reply,
            } => {
                let (slots, shared) = (slots.clone(), shared.clone());
                let task = tokio::spawn(async move {
                    let result = call(&slots, &shared, &server, &tool, arguments).await;
                    let _ = reply.send(result);
                });
                (id, task)
            }
        };
        if let Ok(mut running) = shared.running.lock() {
            running.retain(|_, h| !h.is_finished());
            running.insert(id, task.abort_handle());
        }
    }
    // Shutdown: every server stopped side by side, within the wait.
    let all: Vec<_> = slots
        .lock()
        .map(|s| s.values().cloned().collect())
        .unwrap_or_default();
    let closing = all.into_iter().map(|slot| {
        let slot = slot.clone();
        async move {
            if let Some(conn) = slot.lock().await.conn.take() {
                conn.close().await;
            }
        }
    });
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, join_all(closing.collect())).await;
    if let Ok(mut live) = shared.live.lock() {
        live.clear();
    }
}

/// A new list of servers: slots of removed or changed servers are dropped (their
/// connections closed in the background), new ones added.
fn reload(slots: &Slots, shared: &Arc<Shared>, specs: Vec<ServerSpec>) {
    let Ok(mut map) = slots.lock() else {
        return;
    };
    let stale: Vec<String> = map
        .iter()
        .filter(|(name, slot)| {
            let now = specs.iter().find(|s| &s.name == *name);
            // A slot being used keeps its old spec until the next reload; compare
            // without waiting.
            match (now, slot.try_lock()) {
                (None, _) => true,
                (Some(new), Ok(slot)) => slot.spec != *new,
                (Some(_), Err(_)) => false,
            }
        })
        .map(|(name, _)| name.clone())
        .collect();
    for name in stale {
        if let Some(slot) = map.remove(&name) {
            let shared = shared.clone();
            tokio::spawn(async move {
                if let Some(conn) = slot.lock().await.conn.take() {
                    conn.close().await;
                }
                forget(&shared, &name);
            });
        }
    }
    for spec in specs {
        if !map.contains_key(&spec.name) {
            map.insert(spec.name.clone(), new_slot(spec));
        }
    }
}

/// Waits for every future (no `futures` crate needed for this one use).
async fn join_all<F: std::future::Future<Output = ()> + Send + 'static>(futures: Vec<F>) {
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    for h in handles {
        let _ = h.await;
    }
}

/// A connected peer for the server, starting it if needed (see the module doc).
async fn connect(
    slots: &Slots,
    shared: &Shared,
    server: &str,
) -> Result<(rmcp::Peer<rmcp::service::RoleClient>, ServerSpec), McpError> {
    let slot = slot_of(slots, server).ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
    let mut slot = slot.lock().await;
    if let Some(conn) = &slot.conn {
        if !conn.is_closed() {
            let peer = conn.peer();
            let stale = conn.stale.clone();
            let spec = slot.spec.clone();
            drop(slot);
            if stale.load(Ordering::SeqCst) {
                if let Err(e) = refresh(shared, &spec, &peer, stale).await {
                    give_up_if_broken(slots, shared, server, &e).await;
                    return Err(e);
                }
            }
            return Ok((peer, spec));
        }
        log::info!("MCP server {server:?} has stopped; starting it again");
        if let Some(conn) = slot.conn.take() {
            conn.close().await;
        }
        forget(shared, server);
        slot.failures += 1;
        slot.retry_at = Some(Instant::now() + backoff(slot.failures));
    }
    if let Some(at) = slot.retry_at {
        let now = Instant::now();
        if at > now {
            let wait = at - now;
            if wait > BACKOFF_SLEEP_MAX {
                return Err(McpError::Backoff {
                    server: server.to_string(),
                    secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                });
            }
            tokio::time::sleep(wait).await;
        }
    }
    if let Ok(mut tail) = slot.stderr.lock() {
        tail.clear();
    }
    match Conn::open(&slot.spec, &slot.stderr).await {
        Ok(conn) => {
            let peer = conn.peer();
            let stale = conn.stale.clone();
            let spec = slot.spec.clone();
            slot.conn = Some(conn);
            slot.retry_at = None;
            let listed = refresh(shared, &spec, &peer, stale).await;
            if let Err(e) = listed {
                if let Some(conn) = slot.conn.take() {
                    conn.close().await;
                }
                forget(shared, server);
                failed(&mut slot);
                return Err(e);
            }
            Ok((peer, spec))
        }
        Err(e) => {
            failed(&mut slot);
            Err(e)
        }
    }
}

/// Counts a failure and sets the next restart time.
fn failed(slot: &mut Slot) {
    slot.failures += 1;
    slot.retry_at = Some(Instant::now() + backoff(slot.failures));
}

/// The wait before restart attempt `failures`: none after the first failure, then 1 s,
/// doubling, at most 30 s.
fn backoff(failures: u32) -> Duration {
    if failures <= 1 {
        return Duration::ZERO;
    }
    let secs = 1u64 << (failures - 2).min(5);
    Duration::from_secs(secs).min(BACKOFF_MAX)
}

/// Fetches the tool list and publishes it. The `stale` flag is cleared before asking
/// (a change announced meanwhile sets it again) and set again if the list could not be
/// fetched, so a failed refresh is retried on next use.
async fn refresh(
    shared: &Shared,
    spec: &ServerSpec,
    peer: &rmcp::Peer<rmcp::service::RoleClient>,
    stale: Arc<AtomicBool>,
) -> Result<Vec<McpTool>, McpError> {
    stale.store(false, Ordering::SeqCst);
    let tools = match tokio::time::timeout(spec.timeout, conn::list(peer)).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => {
            stale.store(true, Ordering::SeqCst);
            return Err(conn::request_error(&spec.name, e));
        }
        Err(_) => {
            stale.store(true, Ordering::SeqCst);
            return Err(McpError::Timeout {
                server: spec.name.clone(),
                tool: "tools/list".into(),
                secs: spec.timeout.as_secs(),
            });
        }
    };
    let generation = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
    if let Ok(mut live) = shared.live.lock() {
        live.insert(
            spec.name.clone(),
            Live {
                generation,
                tools: tools.clone(),
                stale,
            },
        );
    }
    Ok(tools)
}

/// The server is no longer connected.
fn forget(shared: &Shared, server: &str) {
    if let Ok(mut live) = shared.live.lock() {
        live.remove(server);
    }
}

async fn list(slots: &Slots, shared: &Shared, server: &str) -> Result<Vec<McpTool>, McpError> {
    let (peer, spec) = connect(slots, shared, server).await?;
    if let Some(live) = shared.live.lock().ok().and_then(|l| l.get(server).cloned()) {
        if !live.stale.load(Ordering::SeqCst) {
            return Ok(live.tools);
        }
    }
    let stale = shared
        .live
        .lock()
        .ok()
        .and_then(|l| l.get(server).map(|x| x.stale.clone()))
        .unwrap_or_default();
    let listed = refresh(shared, &spec, &peer, stale).await;
    if let Err(e) = &listed {
        give_up_if_broken(slots, shared, server, e).await;
    }
    listed
}

/// After a timeout or a broken connection the server is stopped and started again on
/// next use (a refusal from a healthy server is only its answer).
async fn give_up_if_broken(slots: &Slots, shared: &Shared, server: &str, error: &McpError) {
    if !matches!(error, McpError::Timeout { .. } | McpError::Broken { .. }) {
        return;
    }
    if let Some(slot) = slot_of(slots, server) {
        let mut slot = slot.lock().await;
        if let Some(conn) = slot.conn.take() {
            conn.close().await;
        }
        forget(shared, server);
        failed(&mut slot);
    }
}

async fn call(
    slots: &Slots,
    shared: &Shared,
    server: &str,
    tool: &str,
    arguments: serde_json::Map<String, serde_json::Value>,
) -> Result<CallOutcome, McpError> {
    let (peer, spec) = connect(slots, shared, server).await?;
    let result = tokio::time::timeout(spec.timeout, conn::call(&peer, tool, arguments)).await;
    let error = match result {
        Ok(Ok(outcome)) => {
            if let Some(slot) = slot_of(slots, server) {
                let mut slot = slot.lock().await;
                slot.failures = 0;
            }
            return Ok(outcome);
        }
        Ok(Err(e)) => conn::request_error(server, e),
        Err(_) => McpError::Timeout {
            server: server.to_string(),
            tool: tool.to_string(),
            secs: spec.timeout.as_secs(),
        },
    };
    give_up_if_broken(slots, shared, server, &error).await;
    Err(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{SpecSource, Transport};

    fn stdio(name: &str, command: &str, args: &[&str], timeout: Duration) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            transport: Transport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: Vec::new(),
                cwd: None,
            },
            timeout,
            trusted: false,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            disabled: false,
            roots: Vec::new(),
            source: SpecSource::Store,
        }
    }

    /// PyPI's `mcp-server-time` (installed by tests/mcp-peers.sh): a real third-party
    /// server through the hub.
    #[test]
    fn a_third_party_stdio_server_lists_and_answers() {
        let Some(bin) = std::env::var_os("EVOLVE_TEST_MCP_TIME") else {
            eprintln!("skipped: EVOLVE_TEST_MCP_TIME is not set (tests/mcp-peers.sh)");
            return;
        };
        let bin = bin.to_string_lossy().into_owned();
        let hub = Hub::new(vec![stdio(
            "time",
            &bin,
            &["--local-timezone", "UTC"],
            Duration::from_secs(30),
        )]);
        let never = AtomicBool::new(false);
        assert!(
            hub.live_tools("time").is_none(),
            "nothing starts before first use"
        );
        let tools = hub.list_tools("time", &never).expect("listed");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert!(names.contains(&"get_current_time"), "{names:?}");
        assert_eq!(hub.connected(), ["time"]);
        let out = hub
            .call(
                "time",
                "get_current_time",
                r#"{"timezone":"Europe/Paris"}"#,
                &never,
            )
            .expect("called");
        assert!(!out.is_error, "{out:?}");
        assert!(out.content.contains("Europe/Paris"), "{out:?}");
        let bad = hub
            .call(
                "time",
                "get_current_time",
                r#"{"timezone":"Mars/Olympus"}"#,
                &never,
            )
            .map(|o| o.is_error);
        assert!(
            matches!(bad, Ok(true) | Err(McpError::Server { .. })),
            "{bad:?}"
        );
        hub.shutdown();
        assert!(hub.connected().is_empty());
    }

    #[test]
    fn a_missing_program_is_a_clear_start_error_and_unknown_servers_are_named() {
        let hub = Hub::new(vec![stdio(
            "nope",
            "/nonexistent/evolve-mcp",
            &[],
            Duration::from_secs(5),
        )]);
        let never = AtomicBool::new(false);
        let e = hub.list_tools("nope", &never).unwrap_err();
        assert!(matches!(e, McpError::Start { .. }), "{e:?}");
        assert!(e.to_string().contains("was not found"), "{e}");
        let e = hub.call("other", "x", "{}", &never).unwrap_err();
        assert_eq!(e, McpError::UnknownServer("other".into()));
    }

    #[test]
    fn backoff_restarts_at_once_then_doubles_to_thirty_seconds() {
        let secs: Vec<u64> = (1..=9).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
