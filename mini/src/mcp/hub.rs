//! Every MCP connection of the process, used with plain blocking calls from any thread:
//! a request runs on its caller's thread, which watches its Ctrl-C flag while it waits.
//! The connections' own threads (see [`super::stdio`] and [`super::http`]) read what
//! the servers send.
//!
//! Per server a slot holds the connection (if any) and its failure count. A request:
//! 1. takes its turn at the slot (one caller starts a server, the others wait, Ctrl-C
//!    still seen); a missing or dead connection is (re)started — the first restart at
//!    once, then after 1, 2, 4 … 30 s of backoff (a wait up to 2 s is slept through, a
//!    longer one is an error saying when the next attempt is);
//! 2. gives the slot back and runs the request on the shared connection, so calls to
//!    one server run side by side;
//! 3. on a broken connection, stops the server and counts a failure. A timeout only
//!    cancels its own request (`notifications/cancelled`): the calls beside it go on.
//!    The server is stopped (and restarted on next use) only when it fails a `ping`
//!    right after, or after [`TIMEOUTS_BEFORE_RESTART`] timeouts in a row — a hung
//!    server is not reused, a busy one keeps its other calls. A completed call resets
//!    both counts. Stopping runs in the background: the caller gets its error at once.
//!
//! The tool list a server sent is kept ([`Hub::live_tools`]) and fetched again after
//! `notifications/tools/list_changed`. Servers removed or changed by [`Hub::reload`] are
//! closed on a background thread that [`Hub::shutdown`] waits for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::stdio::StderrTail;
use super::{CallEvents, CallOutcome, McpError};
use crate::cancel::Cancel;
use crate::mcp_spec::{McpTool, ServerSpec};
use crate::sandbox::Scope;
use crate::store::Store;

/// A backoff wait this short is slept through rather than reported.
const BACKOFF_SLEEP_MAX: Duration = Duration::from_secs(2);
/// The longest backoff between restarts.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How often a waiting caller looks at its Ctrl-C flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// This many timeouts in a row stop the server even though it still answers pings.
const TIMEOUTS_BEFORE_RESTART: u32 = 3;
/// The longest wait for the `ping` after a timeout.
const PING_WAIT: Duration = Duration::from_secs(5);
/// How often a request whose server's definition changed meanwhile is tried again.
const RETRIES: usize = 3;

/// Every MCP connection of this process. Cheap to create: servers start on first use.
/// Dropping it shuts every server down (children are killed if they do not exit when
/// their stdin closes).
pub struct Hub {
    specs: RwLock<Vec<ServerSpec>>,
    /// A slot per server used so far. Lock order: `slots`, then `specs`.
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    shared: Arc<Shared>,
    /// Threads closing the servers `reload` removed (or pinging one after a timeout).
    closing: Mutex<Vec<JoinHandle<()>>>,
    /// `shutdown` ran: nothing starts any more.
    shut: AtomicBool,
    /// What a confined server (`sandbox = …`) is confined to.
    scope: Option<Scope>,
    /// Where the OAuth logins of HTTP servers are kept.
    logins: Option<Arc<Store>>,
}

/// What every caller sees.
#[derive(Default)]
struct Shared {
    /// The last tool list of each connected server, with its generation.
    live: Mutex<HashMap<String, Live>>,
    /// Grows on every new list (any server).
    generation: AtomicU64,
}

#[derive(Clone)]
struct Live {
    generation: u64,
    tools: Vec<McpTool>,
    /// `tools/list_changed` arrived since.
    stale: Arc<AtomicBool>,
}

/// One server.
struct Slot {
    spec: ServerSpec,
    /// Held while the server is (re)started: one starter at a time.
    turn: Mutex<()>,
    state: Mutex<State>,
    /// Removed by `reload` or `shutdown`: its connection is closed, nothing starts.
    retired: AtomicBool,
    stderr: StderrTail,
}

#[derive(Default)]
struct State {
    conn: Option<Arc<Conn>>,
    /// Consecutive failures (start failures, crashes, hangs).
    failures: u32,
    /// Calls in a row that timed out.
    timeouts: u32,
    /// No restart before this.
    retry_at: Option<Instant>,
}

impl Slot {
    fn new(spec: ServerSpec) -> Slot {
        Slot {
            spec,
            turn: Mutex::new(()),
            state: Mutex::new(State::default()),
            retired: AtomicBool::new(false),
            stderr: StderrTail::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Counts a failure and sets the next restart time.
    fn failed(&self) {
        let mut state = self.state();
        state.failures += 1;
        state.retry_at = Some(Instant::now() + backoff(state.failures));
    }
}

/// Why no connection was had.
enum Refused {
    /// The slot was retired meanwhile: look it up again.
    Retired,
    Error(McpError),
}

impl From<McpError> for Refused {
    fn from(e: McpError) -> Refused {
        Refused::Error(e)
    }
}

/// A poisoned lock (a panic elsewhere) still holds consistent data here.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    /// A hub for these servers (disabled ones included: they are refused on use).
    pub fn new(specs: Vec<ServerSpec>) -> Hub {
        Hub {
            specs: RwLock::new(specs),
            slots: Mutex::new(HashMap::new()),
            shared: Arc::default(),
            closing: Mutex::new(Vec::new()),
            shut: AtomicBool::new(false),
            scope: None,
            logins: None,
        }
    }

    /// The same, with the store that keeps the OAuth logins of HTTP servers.
    pub fn with_logins(mut self, store: Arc<Store>) -> Hub {
        self.logins = Some(store);
        self
    }

    /// The same, with the workspace and the places a confined server must never reach.
    pub fn confined_to(mut self, scope: Scope) -> Hub {
        self.scope = Some(scope);
        self
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
    /// and changed servers are stopped, new ones start on first use; a server whose
    /// roots alone changed keeps its connection and gets
    /// `notifications/roots/list_changed`.
    pub fn reload(&self, specs: Vec<ServerSpec>) {
        let mut slots = lock(&self.slots);
        let gone: Vec<String> = slots
            .iter()
            .filter(|(name, slot)| specs.iter().find(|s| &s.name == *name) != Some(&slot.spec))
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            let Some(slot) = slots.remove(&name) else {
                continue;
            };
            slot.retired.store(true, Ordering::SeqCst);
            // Only its roots changed: the connection stays, and the server is told.
            let moved = specs
                .iter()
                .find(|s| s.name == name)
                .filter(|new| {
                    &ServerSpec {
                        roots: new.roots.clone(),
                        ..slot.spec.clone()
                    } == *new
                })
                .and_then(|new| {
                    let conn = slot.state().conn.take().filter(|c| c.is_open())?;
                    conn.set_roots(new, self.scope.as_ref());
                    let kept = Arc::new(Slot::new(new.clone()));
                    kept.state().conn = Some(conn);
                    Some(kept)
                });
            match moved {
                Some(kept) => {
                    log::info!("MCP server {name:?} has new roots; it was told");
                    slots.insert(name, kept);
                }
                None => {
                    self.forget(&name);
                    self.close_in_background(slot);
                }
            }
        }
        if let Ok(mut current) = self.specs.write() {
            *current = specs;
        }
    }

    /// Stops a server's connection (if any): the next use starts it anew.
    pub fn restart(&self, server: &str) {
        let slot = lock(&self.slots).remove(server);
        if let Some(slot) = slot {
            slot.retired.store(true, Ordering::SeqCst);
            self.forget(server);
            self.close_in_background(slot);
        }
    }

    /// Lists a server's tools, starting (or restarting) it if needed.
    pub fn list_tools(&self, server: &str, cancel: &Cancel) -> Result<Vec<McpTool>, McpError> {
        self.usable(server)?;
        self.with_conn(server, cancel, |slot, conn| {
            if let Some(live) = self.live(server) {
                if !live.stale.load(Ordering::SeqCst) {
                    return Ok(live.tools);
                }
            }
            let listed = self.refresh(&slot.spec, conn, cancel);
            if let Err(e) = &listed {
                self.give_up_if_broken(slot, conn, e);
            }
            listed
        })
    }

    /// The tool list a connected server last sent (at connection, or after
    /// `tools/list_changed`, fetched again here), with a number that grows on every
    /// change; `None` when the server is not connected in this process.
    pub fn live_tools(&self, server: &str) -> Option<(u64, Vec<McpTool>)> {
        let live = self.live(server)?;
        if !live.stale.load(Ordering::SeqCst) {
            return Some((live.generation, live.tools));
        }
        let never = Cancel::new();
        match self.list_tools(server, &never) {
            Ok(tools) => Some((self.live(server)?.generation, tools)),
            Err(e) => {
                log::warn!("{e}");
                None
            }
        }
    }

    /// Calls a tool with JSON-object arguments, within the server's timeout; the
    /// server's progress notices (which extend the timeout, see [`Conn::call`]) and
    /// questions for a person go to `events`.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        cancel: &Cancel,
        events: &mut dyn CallEvents,
    ) -> Result<CallOutcome, McpError> {
        self.usable(server)?;
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
        let events = std::cell::RefCell::new(events);
        self.with_conn(server, cancel, |slot, conn| {
            let mut events = events.borrow_mut();
            match conn.call(tool, arguments.clone(), cancel, &mut **events) {
                Ok(outcome) => {
                    let mut state = slot.state();
                    state.failures = 0;
                    state.timeouts = 0;
                    Ok(outcome)
                }
                Err(e) => {
                    self.give_up_if_broken(slot, conn, &e);
                    Err(e)
                }
            }
        })
    }

    /// Fetches a server's tool list anew (starting it if needed), whatever was last
    /// heard: a call named a tool its known list lacks, and a `tools/list_changed` may
    /// still be on its way (over HTTP it comes on another stream than the answer).
    pub fn relist(&self, server: &str, cancel: &Cancel) -> Result<Vec<McpTool>, McpError> {
        if let Some(live) = self.live(server) {
            live.stale.store(true, Ordering::SeqCst);
        }
        self.list_tools(server, cancel)
    }

    /// Fetches the lists of connected servers that sent `tools/list_changed`; true when
    /// any list was fetched (the tools offered to the model should be rebuilt).
    pub fn refresh_changed(&self) -> bool {
        let stale: Vec<String> = lock(&self.shared.live)
            .iter()
            .filter(|(_, l)| l.stale.load(Ordering::SeqCst))
            .map(|(name, _)| name.clone())
            .collect();
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
        let mut names: Vec<String> = lock(&self.shared.live).keys().cloned().collect();
        names.sort();
        names
    }

    /// Stops every server, side by side (also done on drop): each gets its stdin
    /// closed and 2 s to exit before its process group is killed; HTTP sessions are
    /// deleted. Later requests fail with [`McpError::Shutdown`].
    pub fn shutdown(&self) {
        self.shut.store(true, Ordering::SeqCst);
        let slots: Vec<Arc<Slot>> = lock(&self.slots).drain().map(|(_, s)| s).collect();
        let conns: Vec<Arc<Conn>> = slots
            .iter()
            .filter_map(|slot| {
                slot.retired.store(true, Ordering::SeqCst);
                slot.state().conn.take()
            })
            .collect();
        std::thread::scope(|scope| {
            for conn in &conns {
                let spawned = std::thread::Builder::new()
                    .name("mcp-close".into())
                    .spawn_scoped(scope, || conn.close());
                if spawned.is_err() {
                    conn.close();
                }
            }
        });
        let closing: Vec<JoinHandle<()>> = lock(&self.closing).drain(..).collect();
        for thread in closing {
            let _ = thread.join();
        }
        lock(&self.shared.live).clear();
    }

    /// The spec, if the server exists and is enabled.
    fn usable(&self, server: &str) -> Result<ServerSpec, McpError> {
        match self.spec(server) {
            Some(spec) if !spec.disabled => Ok(spec),
            _ => Err(McpError::UnknownServer(server.to_string())),
        }
    }

    /// The server's slot, made on first use.
    fn slot(&self, server: &str) -> Result<Arc<Slot>, McpError> {
        if self.shut.load(Ordering::SeqCst) {
            return Err(McpError::Shutdown);
        }
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get(server) {
            return Ok(slot.clone());
        }
        let spec = self
            .spec(server)
            .filter(|s| !s.disabled)
            .ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let slot = Arc::new(Slot::new(spec));
        slots.insert(server.to_string(), slot.clone());
        Ok(slot)
    }

    /// Runs `work` on a connected server, looking the server up again if its
    /// definition changed while it started. After `shutdown` every error is
    /// [`McpError::Shutdown`].
    fn with_conn<T>(
        &self,
        server: &str,
        cancel: &Cancel,
        work: impl Fn(&Arc<Slot>, &Arc<Conn>) -> Result<T, McpError>,
    ) -> Result<T, McpError> {
        let mut result = Err(McpError::Broken {
            server: server.to_string(),
            detail: "its definition kept changing while it started".into(),
        });
        for _ in 0..RETRIES {
            let slot = self.slot(server)?;
            match self.connect(&slot, cancel) {
                Ok(conn) => {
                    result = work(&slot, &conn);
                    break;
                }
                Err(Refused::Retired) => continue,
                Err(Refused::Error(e)) => {
                    result = Err(e);
                    break;
                }
            }
        }
        match result {
            Err(_) if self.shut.load(Ordering::SeqCst) => Err(McpError::Shutdown),
            other => other,
        }
    }

    /// A connected server, starting it if needed (see the module doc).
    fn connect(&self, slot: &Arc<Slot>, cancel: &Cancel) -> Result<Arc<Conn>, Refused> {
        let server = &slot.spec.name;
        let turn = wait_turn(&slot.turn, cancel)?;
        if slot.retired.load(Ordering::SeqCst) {
            return Err(Refused::Retired);
        }
        let existing = slot.state().conn.clone();
        if let Some(conn) = existing {
            if conn.is_open() {
                drop(turn);
                if conn.stale().load(Ordering::SeqCst) {
                    if let Err(e) = self.refresh(&slot.spec, &conn, cancel) {
                        self.give_up_if_broken(slot, &conn, &e);
                        return Err(e.into());
                    }
                }
                return Ok(conn);
            }
            log::info!("MCP server {server:?} has stopped; starting it again");
            slot.state().conn = None;
            slot.failed();
            conn.close();
            self.forget(server);
        }
        let retry_at = slot.state().retry_at;
        if let Some(at) = retry_at {
            let now = Instant::now();
            if at > now {
                let wait = at - now;
                if wait > BACKOFF_SLEEP_MAX {
                    return Err(McpError::Backoff {
                        server: server.clone(),
                        secs: wait.as_secs_f64().ceil().max(1.0) as u64,
                    }
                    .into());
                }
                sleep(wait, cancel)?;
            }
        }
        lock(&slot.stderr).clear();
        let opened = Conn::open(
            &slot.spec,
            self.scope.as_ref(),
            self.logins.as_ref(),
            &slot.stderr,
            cancel,
            |conn| {
                // From here `reload` and `shutdown` can close it, even mid-handshake.
                slot.state().conn = Some(conn.clone());
            },
        );
        let retired = || slot.retired.load(Ordering::SeqCst);
        let conn = match opened {
            Ok(conn) => conn,
            Err(e) => {
                slot.state().conn = None;
                if retired() {
                    return Err(Refused::Retired);
                }
                if e != McpError::Cancelled {
                    slot.failed();
                }
                return Err(e.into());
            }
        };
        if retired() {
            conn.close();
            return Err(Refused::Retired);
        }
        slot.state().retry_at = None;
        if let Err(e) = self.refresh(&slot.spec, &conn, cancel) {
            slot.state().conn = None;
            conn.close();
            self.forget(server);
            if e != McpError::Cancelled {
                slot.failed();
            }
            return Err(e.into());
        }
        Ok(conn)
    }

    /// Fetches the tool list and publishes it. The `stale` flag is cleared before asking
    /// (a change announced meanwhile sets it again) and set again if the list could not
    /// be fetched, so a failed refresh is retried on next use.
    fn refresh(
        &self,
        spec: &ServerSpec,
        conn: &Conn,
        cancel: &Cancel,
    ) -> Result<Vec<McpTool>, McpError> {
        let stale = conn.stale();
        stale.store(false, Ordering::SeqCst);
        let tools = match conn.list(cancel) {
            Ok(tools) => tools,
            Err(e) => {
                stale.store(true, Ordering::SeqCst);
                return Err(e);
            }
        };
        let generation = self.shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
        lock(&self.shared.live).insert(
            spec.name.clone(),
            Live {
                generation,
                tools: tools.clone(),
                stale,
            },
        );
        Ok(tools)
    }

    /// After a broken connection the server is stopped and started again on next use;
    /// after a timeout only when it does not answer a ping or timed out
    /// [`TIMEOUTS_BEFORE_RESTART`] times in a row (a refusal from a healthy server is
    /// only its answer). Nothing here waits for the server.
    fn give_up_if_broken(&self, slot: &Arc<Slot>, conn: &Arc<Conn>, error: &McpError) {
        match error {
            McpError::Broken { .. } => self.stop(slot, conn),
            McpError::Timeout { .. } => {
                let timeouts = {
                    let mut state = slot.state();
                    state.timeouts += 1;
                    state.timeouts
                };
                if timeouts >= TIMEOUTS_BEFORE_RESTART {
                    log::warn!(
                        "MCP server {:?}: {timeouts} calls in a row timed out; it is restarted on next use",
                        slot.spec.name
                    );
                    self.stop(slot, conn);
                    return;
                }
                let (slot, conn, shared) = (slot.clone(), conn.clone(), self.shared.clone());
                let wait = slot.spec.timeout.min(PING_WAIT);
                let ping = move || {
                    if conn.ping(wait) {
                        return;
                    }
                    if conn.is_open() {
                        log::warn!(
                            "MCP server {:?} let a call time out and does not answer a ping; it is restarted on next use",
                            slot.spec.name
                        );
                    }
                    if take_if_ours(&slot, &conn) {
                        lock(&shared.live).remove(&slot.spec.name);
                        slot.failed();
                    }
                    conn.close();
                };
                self.in_background("mcp-ping", ping);
            }
            _ => {}
        }
    }

    /// Stops this connection of the slot's server, in the background: the next use
    /// starts it anew.
    fn stop(&self, slot: &Slot, conn: &Arc<Conn>) {
        if take_if_ours(slot, conn) {
            self.forget(&slot.spec.name);
            slot.failed();
        }
        let conn = conn.clone();
        self.in_background("mcp-close", move || conn.close());
    }

    /// Runs `work` on a thread `shutdown` waits for (inline when no thread is had).
    fn in_background(&self, name: &str, work: impl FnOnce() + Send + 'static) {
        let mut closing = lock(&self.closing);
        closing.retain(|t| !t.is_finished());
        let work = std::sync::Arc::new(Mutex::new(Some(work)));
        let run = {
            let work = work.clone();
            move || {
                if let Some(w) = lock(&work).take() {
                    w();
                }
            }
        };
        match std::thread::Builder::new().name(name.into()).spawn(run) {
            Ok(thread) => closing.push(thread),
            Err(e) => {
                log::debug!("no thread for {name}: {e}; done here");
                drop(closing);
                if let Some(w) = lock(&work).take() {
                    w();
                }
            }
        }
    }

    fn live(&self, server: &str) -> Option<Live> {
        lock(&self.shared.live).get(server).cloned()
    }

    /// The server is no longer connected.
    fn forget(&self, server: &str) {
        lock(&self.shared.live).remove(server);
    }

    /// Closes a retired server's connection on a thread `shutdown` waits for.
    fn close_in_background(&self, slot: Arc<Slot>) {
        self.in_background("mcp-close", move || {
            let conn = slot.state().conn.take();
            if let Some(conn) = conn {
                conn.close();
            }
        });
    }
}

/// Takes the slot's connection if it is still `conn` (not one started since); true
/// when it was.
fn take_if_ours(slot: &Slot, conn: &Arc<Conn>) -> bool {
    let mut state = slot.state();
    let ours = state.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn));
    if ours {
        state.conn = None;
    }
    ours
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Takes the slot's turn, looking at the Ctrl-C flag while another caller starts the
/// server.
fn wait_turn<'a>(turn: &'a Mutex<()>, cancel: &Cancel) -> Result<MutexGuard<'a, ()>, Refused> {
    loop {
        match turn.try_lock() {
            Ok(guard) => return Ok(guard),
            Err(TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => {}
        }
        if cancel.is_cancelled() {
            return Err(McpError::Cancelled.into());
        }
        std::thread::sleep(CANCEL_POLL / 2);
    }
}

/// Sleeps, looking at the Ctrl-C flag.
fn sleep(wait: Duration, cancel: &Cancel) -> Result<(), McpError> {
    let end = Instant::now() + wait;
    loop {
        if cancel.is_cancelled() {
            return Err(McpError::Cancelled);
        }
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(CANCEL_POLL));
    }
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

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
