//! What every command that touches the agent's data starts with: the configuration,
//! the logger, the tokenizer, and (on demand) the store.

use std::time::{Duration, Instant};

use crate::config::{Config, LoadOptions};
use crate::error::{Error, ServeError};
use crate::store::{Lease, Store};
use crate::text::ShellTokenizer;

/// The loaded configuration and the process-wide helpers.
pub struct App {
    /// The validated configuration.
    pub config: Config,
    /// jieba for CJK (lazy), the core's rules for the rest.
    pub tokenizer: ShellTokenizer,
}

impl App {
    /// Loads the configuration and installs the logger.
    pub fn load(opts: &LoadOptions) -> Result<App, Error> {
        Ok(App::from_config(Config::load(opts)?))
    }

    /// The configuration of `profile` (the default one for `None`) and its store, as
    /// every command that reads or writes the store starts.
    pub fn with_store(profile: &Option<String>) -> Result<(App, Store), Error> {
        let app = App::load(&LoadOptions {
            profile: profile.clone(),
            ..LoadOptions::default()
        })?;
        let store = app.open_store()?;
        Ok((app, store))
    }

    /// The same from an already loaded configuration.
    pub fn from_config(config: Config) -> App {
        crate::logger::init(&config.log);
        config.warn_ignored_env();
        crate::config::private::tighten_home(&config.home);
        forget_key_variables(&config);
        let tokenizer = ShellTokenizer::new(config.text.dict_path.clone());
        App { config, tokenizer }
    }

    /// Opens the store for a process that keeps it for its whole life (`serve`): it is
    /// never released between uses.
    pub fn open_store_held(&self) -> Result<Store, Error> {
        let path = self.config.store_path();
        let _ = STORE_PATH.set(path.clone());
        Store::open(&path, &self.tokenizer).map_err(|e| {
            if e.is_locked() {
                Error::StoreInUse(path.clone())
            } else {
                e.into()
            }
        })
    }

    /// Opens (or creates) the store under `$EVOLVE_HOME`, waiting up to
    /// [`STORE_WAIT`] while another evolve holds it.
    pub fn open_store(&self) -> Result<Store, Error> {
        open_store(&self.config, &self.tokenizer, STORE_WAIT)
    }
}

/// The store this process opened, for messages that must name it (the panic hook).
static STORE_PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The store file this process opened, if any.
pub fn store_path() -> Option<&'static std::path::Path> {
    STORE_PATH.get().map(|p| p.as_path())
}

/// How long a command waits for another evolve (a `chat` in the middle of a turn, an
/// `ask` from cron) to release the store before giving up.
pub const STORE_WAIT: Duration = Duration::from_secs(30);

/// Opens the store, retrying while another process holds its lock, at most `wait`.
/// A running `serve` (which holds the file for as long as it runs) is asked to lend
/// it ([`super::lend`]); the store keeps the lease while it holds the file and asks
/// again when it reopens the file and finds it held.
pub fn open_store(
    config: &Config,
    tokenizer: &ShellTokenizer,
    wait: Duration,
) -> Result<Store, Error> {
    let path = config.store_path();
    let _ = STORE_PATH.set(path.clone());
    let started = Instant::now();
    let mut told = false;
    let mut lease: Option<Lease> = None;
    loop {
        match Store::open(&path, tokenizer) {
            Ok(mut store) => {
                // Released while the agent waits for the model or a person, so other
                // evolve commands (a cron `ask`, a second `chat`, `serve`) are not
                // locked out.
                store.share(wait);
                store.borrow_with(super::lend::lender(config.home.clone()), lease);
                return Ok(store);
            }
            Err(e) if e.is_locked() => {
                // A running `serve` keeps the store for as long as it runs: it lends it,
                // or it is said at once instead of waiting for it.
                if lease.is_none() {
                    if let Some(ep) = crate::web::endpoint::running(&config.home) {
                        match super::lend::borrow(&config.home, &ep) {
                            Ok(conn) => {
                                lease = Some(Box::new(conn));
                                continue;
                            }
                            Err(source) => {
                                return Err(ServeError::NotLent {
                                    store: path.clone(),
                                    pid: ep.pid,
                                    addr: ep.addr,
                                    source,
                                }
                                .into())
                            }
                        }
                    }
                }
                // Lent, and another command beside serve has it: wait for it as for any.
                if started.elapsed() >= wait {
                    return Err(e.into());
                }
                if !told && started.elapsed() >= Duration::from_secs(1) {
                    log::warn!(
                        "waiting up to {} s for another evolve to release {}",
                        wait.as_secs(),
                        path.display()
                    );
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Keeps the API key from every child: it is hidden from what unconfined MCP servers
/// inherit ([`crate::mcp::hide_value`]; shell commands and confined servers get an
/// environment built from an allowlist anyway), and — the first time only, while this
/// process has no other thread — removed from the process's own environment, so
/// `/proc/self/environ` read through a child does not hold it either. A later load
/// (`/mcp` in chat, a profile switch) never writes the environment: with other threads
/// running that is undefined behaviour.
fn forget_key_variables(config: &Config) {
    static FIRST: std::sync::Once = std::sync::Once::new();
    let key = config
        .model
        .api_key
        .as_ref()
        .map(|k| k.expose().to_string())
        .filter(|k| !k.is_empty());
    // Consumed by the first load whether or not it has a key: no later load writes.
    FIRST.call_once(|| {
        let Some(key) = key.as_deref() else {
            return;
        };
        for (name, value) in std::env::vars_os() {
            if value.to_string_lossy().contains(key) {
                std::env::remove_var(&name);
            }
        }
    });
    if let Some(key) = key {
        crate::mcp::hide_value(&key);
    }
}

pub use crate::clock::now;
