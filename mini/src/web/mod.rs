//! `evolve serve`: the browser UI and the JSON API, served by the binary itself.
//!
//! One process holds the store and runs turns for every client: the UI, programs using
//! the OpenAI-compatible `/v1/chat/completions`, and `evolve ask` while `serve` runs;
//! other commands run beside it borrow the store file for as long as they need it
//! ([`lend`]).
//! This module wires the parts: [`http`] (the server and its limits), [`auth`] (who may
//! ask), [`api`] (the routes), [`chat`] (turns over HTTP), [`assets`] (the embedded UI),
//! [`tasks`] (scheduled tasks over HTTP; the loop that runs them is started here and is
//! `crate::sched::tasks`'). The chat channels (`crate::channels`) are started here too,
//! one thread each, and share the turns' registry with the UI.

pub mod api;
pub mod assets;
pub mod auth;
mod channels;
pub mod chat;
pub mod endpoint;
mod grants;
pub mod http;

mod lend;
mod mcp_servers;
mod memories;
mod memory_patch;
mod profiles;
mod prompt;
mod request;
mod search;
mod sessions;
mod settings;
mod skill_edit;
mod style;
pub mod tasks;
mod tools;
mod turn_io;
mod uploads;
mod usage;
pub mod waiting;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::agents::Manager;
use crate::cancel::Cancel;
use crate::error::Error;
use http::{Admission, Limits, Request, Response};

/// How the server was asked to run.
pub struct Options {
    /// The address to bind.
    pub addr: SocketAddr,
    /// Request limits.
    pub limits: Limits,
    /// The profiles `config.toml` defines.
    pub profiles: Vec<String>,
    /// The configuration's environment (see [`State::env`]).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// `--workspace`, if given.
    pub workspace: Option<std::path::PathBuf>,
}

/// What every request handler can reach.
pub struct State {
    /// Runs turns; owns the runtime (config, store, model, tools). Replaced when the
    /// profile changes; a running turn keeps the one it started with.
    manager: RwLock<Arc<Manager>>,
    /// When the server started.
    pub started: Instant,
    /// The access rule.
    pub auth: auth::Auth,
    /// Set when the server is stopping.
    pub shutdown: Arc<AtomicBool>,
    /// Sessions with a turn running, and that turn's cancel.
    pub turns: Mutex<HashMap<String, Arc<Cancel>>>,
    /// Calls waiting for a person, by (session, call id).
    pub approvals: waiting::Approvals,
    /// MCP servers' questions waiting for a person, by (session, id).
    pub elicitations: waiting::Elicitations,
    /// The profiles `config.toml` defines.
    pub profiles: Vec<String>,
    /// The environment the configuration was read with (the API key is removed from
    /// the process's own environment once read; a profile switch reads it from here).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// `--workspace`, if given.
    pub workspace: Option<std::path::PathBuf>,
    /// Scheduled tasks: which run, and the loop's alarm.
    pub scheduler: Arc<crate::sched::tasks::Scheduler>,
    /// OAuth logins of MCP servers waiting for the browser.
    pub logins: mcp_servers::Logins,
}

impl State {
    /// The current manager.
    pub fn manager(&self) -> Arc<Manager> {
        Arc::clone(&self.manager.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The current runtime.
    pub fn rt(&self) -> Arc<crate::agents::Runtime> {
        Arc::clone(self.manager().runtime())
    }

    /// Switches to another profile of `config.toml`: the next turns use its models and
    /// settings; the store stays the same.
    pub fn switch_profile(&self, name: &str) -> Result<String, Error> {
        let loaded = self.load_profile(name, None)?;
        Ok(self.install(loaded.config))
    }

    /// Profile `name` loaded as a switch to it loads it — from `text` instead of the
    /// file when given (what a changed file would give, before it is written).
    pub fn load_profile(
        &self,
        name: &str,
        text: Option<&str>,
    ) -> Result<crate::config::Loaded, crate::config::ConfigError> {
        // `default` is the file's top level: no profile, whatever EVOLVE_PROFILE says.
        let default = name == "default";
        let opts = crate::config::LoadOptions {
            profile: (!default).then(|| name.to_string()),
            workspace: self.workspace.clone(),
        };
        let env = |k: &str| {
            if default && k == "EVOLVE_PROFILE" {
                return None;
            }
            self.env
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        match text {
            Some(text) => crate::config::Config::load_from_text(&opts, &env, text),
            None => crate::config::Config::load_from(&opts, &env),
        }
    }

    /// Runs the next turns on `config` (a running turn keeps the runtime it started
    /// with); returns its profile's name.
    pub fn install(&self, config: crate::config::Config) -> String {
        let old = self.manager();
        let rt = old.runtime();
        config.warn_ignored_env();
        let profile = config.profile.clone();
        let next = Manager::new(crate::agents::Runtime::sharing(
            config,
            Arc::clone(&rt.store),
            rt.tokenizer.clone(),
        ));
        *self.manager.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        // The old runtime's MCP servers stop; a turn still running on it starts them
        // again if it needs them, and they stop when it is dropped.
        old.flush(Duration::from_secs(10));
        rt.mcp.shutdown();
        profile
    }

    /// Cancels every running turn and scheduled task (the server is stopping).
    pub fn cancel_all(&self) {
        self.scheduler.stop();
        for flag in self
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            flag.cancel();
        }
    }
}

/// The `type` of an OpenAI-shaped error for a status.
fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        s if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

/// The body of an error, in OpenAI's shape (`code` is null: the status says it).
pub fn error_body(status: u16, message: &str) -> Vec<u8> {
    error_value(status, message, None).to_string().into_bytes()
}

/// The error object, with an optional machine-readable code (the failure's class, as
/// `evolve ask` reads it); `said` is the message's own code, its status's here.
pub fn error_value(status: u16, message: &str, code: Option<&str>) -> serde_json::Value {
    said_value(
        status,
        message,
        code,
        &crate::said::Said::status(status, message),
    )
}

/// The error object with what the message says as a code and its values.
pub fn said_value(
    status: u16,
    message: &str,
    code: Option<&str>,
    said: &crate::said::Said,
) -> serde_json::Value {
    json!({"error": {"message": message, "type": error_type(status), "code": code, "said": said.to_json()}})
}

/// An error response in OpenAI's shape.
pub fn error(status: u16, message: impl AsRef<str>) -> Response<'static> {
    Response::bytes(
        status,
        "application/json",
        error_body(status, message.as_ref()),
    )
}

/// An error response whose message has a code of its own (see [`crate::said`]).
pub fn said_error(
    status: u16,
    message: impl AsRef<str>,
    said: crate::said::Said,
) -> Response<'static> {
    Response::json(status, &said_value(status, message.as_ref(), None, &said))
}

/// SIGTERM / SIGINT: the first asks the server to stop (the accept loop is woken
/// through a socket pair; the handler only writes one byte), the second ends the
/// process at once.
mod signals {
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

    static FD: AtomicI32 = AtomicI32::new(-1);
    static SEEN: AtomicBool = AtomicBool::new(false);

    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
        fn write(fd: i32, buf: *const u8, n: usize) -> isize;
        fn _exit(code: i32) -> !;
    }

    extern "C" fn on_signal(_sig: i32) {
        if SEEN.swap(true, Ordering::SeqCst) {
            // SAFETY: `_exit` is async-signal-safe.
            unsafe { _exit(130) }
        }
        let fd = FD.load(Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: write(2) on a socket we own is async-signal-safe.
            unsafe {
                write(fd, b"x".as_ptr(), 1);
            }
        }
    }

    /// Installs the handlers; `fd` is written to when a signal comes.
    pub fn install(fd: i32) {
        FD.store(fd, Ordering::SeqCst);
        let handler: extern "C" fn(i32) = on_signal;
        // SAFETY: the handler only touches atomics and async-signal-safe calls.
        unsafe {
            signal(2, handler as usize); // SIGINT
            signal(15, handler as usize); // SIGTERM
        }
    }
}

/// Binds, serves until SIGTERM/SIGINT, then stops in order: no new connections, running
/// turns get `grace` to finish and are then cancelled, the background work is saved,
/// MCP servers are stopped, the store is closed.
pub fn run(manager: Manager, auth: auth::Auth, opts: Options) -> Result<(), Error> {
    let listener = TcpListener::bind(opts.addr).map_err(|source| Error::Listen {
        addr: opts.addr,
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| Error::System {
        doing: "read the bound address",
        source,
    })?;
    let shutdown = Arc::new(AtomicBool::new(false));
    let state = Arc::new(State {
        manager: RwLock::new(Arc::new(manager)),
        started: Instant::now(),
        auth,
        shutdown: Arc::clone(&shutdown),
        turns: Mutex::new(HashMap::new()),
        approvals: waiting::Approvals::default(),
        elicitations: waiting::Elicitations::default(),
        profiles: opts.profiles,
        env: opts.env,
        workspace: opts.workspace,
        scheduler: crate::sched::tasks::Scheduler::new(),
        logins: mcp_servers::Logins::default(),
    });

    // Signals → a byte on a socket pair → this thread wakes the accept loop.
    let (wake_rx, wake_tx) =
        std::os::unix::net::UnixStream::pair().map_err(|source| Error::System {
            doing: "create the signal socket",
            source,
        })?;
    signals::install(std::os::fd::AsRawFd::as_raw_fd(&wake_tx));
    {
        let (state, shutdown) = (Arc::clone(&state), Arc::clone(&shutdown));
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let _keep = wake_tx;
                let mut byte = [0u8; 1];
                let _ = std::io::Read::read(&mut &wake_rx, &mut byte);
                log::info!("stopping: finishing running turns");
                shutdown.store(true, Ordering::SeqCst);
                let grace = Instant::now();
                while !state
                    .turns
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_empty()
                    && grace.elapsed() < Duration::from_secs(5)
                {
                    std::thread::sleep(Duration::from_millis(50));
                }
                state.cancel_all();
                state.approvals.refuse_all();
                state.elicitations.cancel_all();
                // Wake the accept loop.
                let _ = TcpStream::connect_timeout(&wake_addr(addr), Duration::from_secs(1));
            })
            .map_err(|source| Error::System {
                doing: "start the signal thread",
                source,
            })?;
    }

    // Recorded before the start is announced: whoever waits for the announcement
    // (a script, a test) finds the record.
    let home = state.rt().config.home.clone();
    if let Err(e) = endpoint::write(&home, addr) {
        log::warn!(
            "cannot record the server in {}: {e} (`evolve ask` will not find it)",
            home.display()
        );
    }

    let every = if addr.ip().is_unspecified() {
        " on every address of this machine"
    } else {
        ""
    };
    // One write for the whole line: stderr is unbuffered, and `eprintln!` writes each
    // piece on its own, so a script that reads the log while it is written could see
    // "serving on http://" before the address (seen under qemu).
    // The link goes first: whoever waits for "serving on" has it by then.
    let banner = format!(
        "evolve: sign in to the web UI with {} (`evolve open` prints it again)\n\
         evolve {} serving on http://{addr}{every} (UI at /, API at /v1, docs at /docs) — \
         token in {}\n",
        state.auth.login_link(wake_addr(addr)),
        env!("CARGO_PKG_VERSION"),
        auth::token_path(&home).display(),
    );
    {
        use std::io::Write as _;
        let _ = std::io::stderr().lock().write_all(banner.as_bytes());
    }

    let admit_state = Arc::clone(&state);
    let admit: Arc<http::Admit> = Arc::new(move |req: &Request| admit(&admit_state, req));
    let handler_state = Arc::clone(&state);
    let handler: Arc<http::Handler> =
        Arc::new(move |req: &Request| api::route(&handler_state, req));
    let scheduler = crate::sched::tasks::spawn_loop(
        Arc::clone(&state) as Arc<dyn crate::agents::Host>,
        Arc::clone(&state.scheduler),
    )
    .map_err(|source| Error::System {
        doing: "start the scheduler thread",
        source,
    })?;
    let channels = crate::channels::supervise(Arc::clone(&state) as Arc<dyn crate::agents::Host>)
        .map_err(|source| Error::System {
        doing: "start the channels' thread",
        source,
    })?;
    http::serve(
        listener,
        opts.limits,
        admit,
        handler,
        Arc::clone(&shutdown),
        error_body,
    );

    // Every connection has ended: let scheduled runs record how they ended, save the
    // background work, stop MCP, close the store.
    state.scheduler.stop();
    if !state.scheduler.wait_idle(Duration::from_secs(10)) {
        log::warn!("scheduled tasks did not stop within 10 s");
    }
    let _ = scheduler.join();
    // The channels stop (waiting a few seconds for them: see `channels::supervise`).
    let _ = channels.join();
    crate::agents::close_all(&state.manager(), Duration::from_secs(10));
    endpoint::remove(&home);
    eprintln!("evolve serve stopped");
    Ok(())
}

/// Where to connect to wake the accept loop (an unspecified bind is reached on loopback).
pub(crate) fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let mut a = addr;
    if a.ip().is_unspecified() {
        a.set_ip(if a.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    a
}

/// Who may send this request, decided on its head before its body is read (a refused
/// request's body is never buffered).
fn admit(state: &State, req: &Request) -> Admission {
    if state.shutdown.load(Ordering::SeqCst) {
        return Admission::Refused(error(503, "the server is stopping"));
    }
    match state.auth.check_origin(req) {
        Ok(()) => {}
        Err(auth::Refusal::Host) => {
            return Admission::Refused(error(
                403,
                "this server only answers requests addressed to 127.0.0.1 or localhost",
            ))
        }
        Err(_) => return Admission::Refused(error(403, "cross-site requests are refused")),
    }
    if state.auth.check_token(req).is_ok() {
        return Admission::Authenticated;
    }
    let path = req.path.as_str();
    // The login page and what it needs to draw, nothing else: `/static/{file}` names
    // every embedded file (the UI, `openapi.json`), and those need the token.
    let public = matches!(
        path,
        "/health" | "/login" | "/static/login.js" | "/static/app.css" | "/favicon.ico"
    );
    if public {
        return Admission::Public;
    }
    if req.method == "GET" && (path == "/" || path == "/docs") {
        return Admission::Refused(
            Response::bytes(303, "text/plain", &b"login required"[..]).with("Location", "/login"),
        );
    }
    Admission::Refused(error(
        401,
        "a token is required: send `Authorization: Bearer TOKEN` (the token is in \
         $EVOLVE_HOME/serve.token; `evolve open` signs a browser in)",
    ))
}
