//! Configuration: `$EVOLVE_HOME/config.toml`, named profiles and environment overrides,
//! parsed into one validated [`Config`]. Owns the file format and the defaults of the
//! shell; the core's constants come in as [`CoreConfig`].
//!
//! Precedence, lowest first: built-in defaults → the file's top level → the chosen
//! profile (`[profiles.NAME]`, chosen by `--profile`, else `EVOLVE_PROFILE`, else
//! `profile = "…"` in the file) → environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
//! `EVOLVE_MODEL`, `EVOLVE_CHEAP_MODEL`, `EVOLVE_LOG`) → command-line flags
//! (`--workspace`). A profile overrides key by key (`[profiles.work.model] main = "…"`
//! changes only the main model); `api_key` and `api_key_env` count as one setting.
//!
//! One exception: a profile *named for this run* — `--profile NAME`, `EVOLVE_PROFILE`,
//! or a switch in chat or the web UI; not the file's `profile = "…"` key, not
//! `default` — wins over the environment for every key its own table sets, and its
//! own `base_url` without a key of its own means `OPENAI_API_KEY` is not sent to it.
//! The environment still fills what the profile leaves unset. Each variable ignored
//! that way is in [`Config::ignored_env`], and every front end warns about it once
//! ([`Config::warn_ignored_env`]). Otherwise `--profile alt` with the quick start's
//! `OPENAI_BASE_URL` exported sends its calls to the exported server while it names
//! its own models.
//!
//! What it decides: where the data lives (`$EVOLVE_HOME`, default `~/.evolve`), what
//! a missing setting means (the defaults below, each with its reason), and what is not
//! acceptable (unknown keys, values out of range), with a message naming the file, the
//! key and what to do. It creates nothing on disk (`evolve config init` does); it keeps
//! what is in the home private (`private.rs`).
//!
//! Loading is validation: [`Config::load`] resolves and checks the active profile and
//! every other profile of the file, permission rules included, so every command that
//! reads the configuration (`ask`, `chat`, `serve` and its scheduler, `memory`, `tasks`,
//! `mcp`, a profile switch in `chat` or the web UI, …) refuses a file that
//! `evolve config check` refuses, with the same message and exit code 2, before it does
//! anything. `config check` adds only warnings; `config path` and `config init` do not
//! read the file, so they still work on a broken one.
//!
//! Files: `file.rs` the raw TOML types, `resolve.rs` layering, environment and
//! validation, `context.rs` what checking a layer needs (where its errors point),
//! `mcp.rs` the `[mcp]` section (servers, with the lines they are defined on; the
//! server types and their rules are `crate::mcp_spec`'s), `template.rs` the commented
//! file `config init` writes, `show.rs` the masked view for `config show` and the API,
//! `private.rs` the umask, the tightening of a home others can read and the private
//! rewrite of the file, `edit.rs` changing one setting of the file in place. Secrets are
//! `crate::secret`'s.

mod channels;
mod context;
pub mod edit;
pub mod file;
mod layers;
mod mcp;
mod model;
pub mod private;
mod ranges;
mod resolve;
mod show;
mod template;

pub use channels::{ChannelsConfig, DingtalkConfig, FeishuConfig, TelegramConfig};
pub use context::check_base_url;
pub use mcp::{server_json, Place};
pub use resolve::{check, home_dir};
pub use template::CONFIG_TEMPLATE;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use evolve_core::permission::Level;
use evolve_core::CoreConfig;

/// `[model]` is read into the model client's own settings.
pub use crate::llm::settings::{
    ModelConfig, Timeouts, ToolCalling, Transcription, DEFAULT_BASE_URL, MAX_ANSWER_BYTES_RANGE,
};

/// The log filter when neither the file nor `EVOLVE_LOG` sets one: problems only, so
/// scripts reading stderr see nothing on a good run.
pub const DEFAULT_LOG: &str = "warn";

/// What the models' work may use and cost (`[model] daily_tokens`, `price_in_per_mtok`,
/// `price_out_per_mtok`, and the same with `cheap_` for the cheap model).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spending {
    /// Tokens (both models, prompt and completion) a local day may use; a turn that
    /// would start beyond it stops with a message. `None`: no limit.
    pub daily_tokens: Option<u64>,
    /// The main model's price; `None`: unknown (costs are not shown).
    pub main: Option<Price>,
    /// The cheap model's price (the main's when only that is set).
    pub cheap: Option<Price>,
}

/// A model's price, per million tokens, in the currency the user bills in.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    pub in_per_mtok: f64,
    pub out_per_mtok: f64,
}

impl Spending {
    /// What `main` and `cheap` tokens cost; `None` without a price for a model that was
    /// used.
    pub fn cost(&self, main: crate::store::Tokens, cheap: crate::store::Tokens) -> Option<f64> {
        let of = |price: Option<Price>, t: crate::store::Tokens| match price {
            Some(p) => Some(
                (t.prompt_tokens as f64 * p.in_per_mtok
                    + t.completion_tokens as f64 * p.out_per_mtok)
                    / 1e6,
            ),
            None if t.total() == 0 => Some(0.0),
            None => None,
        };
        Some(of(self.main, main)? + of(self.cheap, cheap)?)
    }
}

/// How the agent runs a turn (the shell's knobs; the core's are in [`CoreConfig`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Model round trips in one turn's tool loop (default 8).
    pub max_steps: usize,
    /// Reflect every N turns of a session (the Evolve Agent design: 10); 0 turns periodic reflection off.
    pub reflect_every: u32,
    /// Reflect when the evaluation score is below this (default 0.5).
    pub reflect_below: f32,
    /// A reply scoring at least this feeds style learning (default 0.8).
    pub style_above: f32,
    /// A turn with at least two successful tool calls scoring at least this is written
    /// back as a learned skill (default 0.8, the same bar as style learning).
    pub crystallize_above: f32,
    /// At most this many style notes are kept and injected (default 8).
    pub style_notes_max: usize,
    /// How long `ask` waits for the post-reply worker before exiting (default 60 s; 0:
    /// do not wait, the post-reply work of that turn may be lost).
    pub background_wait: Duration,
    /// Extract memories, evaluate and reflect after each turn (default true).
    pub learn: bool,
    /// Tools a model step carries in full, chosen by the question, besides those the
    /// session used or the model asked for (`more_tools`); 0 offers every tool in full
    /// (default 6).
    pub tool_schemas: usize,
    /// `evolve chat` prints one dim line after each answer with what the turn did
    /// (memories, tools, time; the score and any lesson when they come) (default true).
    pub turn_line: bool,
    /// The cheap model titles a session after its first answer (default true).
    pub titles: bool,
    /// The cheap model keeps a review of the session's tool calls after each turn with
    /// tool calls, which L3 injects (default true).
    pub tool_chain: bool,
    /// The `subtasks` tool: at most this many sub-turns per call (0: no such tool).
    pub subtasks: usize,
    /// Sub-turns run at once.
    pub subtask_parallel: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            max_steps: 8,
            reflect_every: 10,
            reflect_below: 0.5,
            style_above: 0.8,
            crystallize_above: 0.8,
            style_notes_max: 8,
            background_wait: Duration::from_secs(60),
            learn: true,
            tool_schemas: 6,
            turn_line: true,
            titles: true,
            tool_chain: true,
            subtasks: 4,
            subtask_parallel: 3,
        }
    }
}

/// Built-in tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    /// `shell` runs this long (default 30 s), longer while it is busy (up to 4 times,
    /// where `/proc` tells; see `evolve_core::watch`).
    pub shell_timeout: Duration,
    /// A command idle this long in a row (no CPU, I/O or output) is stopped before its
    /// timeout (default 20 s; 0: never).
    pub shell_idle_stop: Duration,
    /// Output of `shell` and `http_get` kept, in bytes (default 128 KiB).
    pub output_cap: usize,
    /// `http_get` may fetch loopback and private addresses (default false).
    pub http_allow_private: bool,
    /// `http_get` timeout (default 20 s).
    pub http_timeout: Duration,
    /// Hosts that may receive anything from a call, even after outside text entered the
    /// turn (`example.com`, or `*.example.com` for its subdomains); the egress rule asks
    /// (or, headless, refuses) for every other host then. Empty by default.
    pub http_hosts: Vec<String>,
    /// User levels per tool name (`[tools.levels]`); a built-in tool can only be raised.
    pub levels: Vec<(String, Level)>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            shell_timeout: Duration::from_secs(30),
            shell_idle_stop: Duration::from_secs(20),
            output_cap: 128 * 1024,
            http_allow_private: false,
            http_timeout: Duration::from_secs(20),
            http_hosts: Vec::new(),
            levels: Vec::new(),
        }
    }
}

/// Chinese segmentation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextConfig {
    /// A full jieba dictionary file to use instead of the embedded trimmed one.
    pub dict_path: Option<PathBuf>,
}

/// Scheduled tasks (`[scheduler]`). Only a zone the file names is kept (and checked
/// at load); the system's zone is read when the scheduler needs it ([`Self::resolve`]),
/// so loading the configuration does not depend on the machine it runs on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchedulerConfig {
    /// `time_zone` as written, with the zone it names.
    pub time_zone: Option<(String, crate::zone::LocalZone)>,
}

/// The zone cron and `daily` schedules are read in, with its name.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedZone {
    /// `Asia/Shanghai`, `+08:00`, `UTC`, or the system's zone name.
    pub name: String,
    /// The offsets.
    pub zone: crate::zone::LocalZone,
    /// Why it is UTC although the system seemed to have another zone (a `TZ` or
    /// `/etc/localtime` that could not be read); logged when the scheduler starts.
    pub warning: Option<String>,
}

impl SchedulerConfig {
    /// The configured zone; without one `TZ`, then the system's zone, then UTC with a
    /// warning.
    pub fn resolve(&self) -> SchedZone {
        use crate::zone::{self, LocalZone};
        if let Some((name, zone)) = &self.time_zone {
            return SchedZone {
                name: name.clone(),
                zone: zone.clone(),
                warning: None,
            };
        }
        match zone::system() {
            Ok(zone) => SchedZone {
                name: system_zone_name(&zone),
                zone,
                warning: None,
            },
            Err(e) => {
                let from = match std::env::var("TZ") {
                    Ok(tz) if !tz.trim().is_empty() => format!("the TZ variable ({tz})"),
                    _ => "the system's time zone (/etc/localtime)".to_string(),
                };
                SchedZone {
                    name: "UTC".into(),
                    zone: LocalZone::Utc,
                    warning: Some(format!(
                        "{from} cannot be used: {e}; scheduled tasks use UTC — set \
                         [scheduler] time_zone in config.toml"
                    )),
                }
            }
        }
    }
}

/// The name of the system's zone: `TZ`, else the database name `/etc/localtime` links
/// to, else `/etc/localtime` itself (`UTC` when there is none).
fn system_zone_name(zone: &crate::zone::LocalZone) -> String {
    if let Some(tz) = std::env::var("TZ").ok().filter(|t| !t.trim().is_empty()) {
        return tz.trim().trim_start_matches(':').to_string();
    }
    if *zone == crate::zone::LocalZone::Utc {
        return "UTC".into();
    }
    std::fs::read_link("/etc/localtime")
        .ok()
        .and_then(|target| {
            let text = target.to_string_lossy().into_owned();
            text.split_once("zoneinfo/")
                .map(|(_, name)| name.to_string())
        })
        .unwrap_or_else(|| "/etc/localtime".into())
}

/// MCP servers defined in `config.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// The per-call timeout of servers that do not set their own (default 60 s).
    pub timeout: Duration,
    /// `[mcp.servers.NAME]`, in name order.
    pub servers: Vec<crate::mcp_spec::ServerSpec>,
    /// Where each server is defined in the file (for messages that send the user there).
    pub places: BTreeMap<String, Place>,
    /// Problems that do not stop evolve (a `bearer_token_env` naming an unset variable):
    /// shown by `evolve config check` and logged when the servers are loaded.
    pub warnings: Vec<String>,
    /// A token or header value is written in the file (`config check` then warns when
    /// others can read it).
    pub secrets_in_file: bool,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            timeout: crate::mcp_spec::DEFAULT_CALL_TIMEOUT,
            servers: Vec::new(),
            places: BTreeMap::new(),
            warnings: Vec::new(),
            secrets_in_file: false,
        }
    }
}

/// The file's name inside `$EVOLVE_HOME`.
pub const CONFIG_FILE: &str = "config.toml";

/// What `[model] tools = "auto"` learned: which models refused native tools (in
/// `$EVOLVE_HOME`; see `llm::learned`).
pub const TOOLS_LEARNED_FILE: &str = "model-tools.json";

/// The name of "no profile": the top level of the file alone.
pub const DEFAULT_PROFILE: &str = "default";

/// Everything a command needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `$EVOLVE_HOME`.
    pub home: PathBuf,
    /// `$EVOLVE_HOME/config.toml` (may not exist).
    pub file: PathBuf,
    /// The active profile's name (`default` when none).
    pub profile: String,
    /// Model server and models.
    pub model: ModelConfig,
    /// What the models' work may use in a day and what it costs (`[model]
    /// daily_tokens`, prices).
    pub spending: Spending,
    /// The core's constants (memory, history, permission).
    pub core: CoreConfig,
    /// Turn knobs.
    pub agent: AgentConfig,
    /// Built-in tools.
    pub tools: ToolsConfig,
    /// Chinese segmentation.
    pub text: TextConfig,
    /// What every started program may take (`[limits]`: memory, file size, processes,
    /// CPU time).
    pub limits: evolve_core::permission::Limits,
    /// MCP servers from the file (`[mcp]`).
    pub mcp: McpConfig,
    /// Scheduled tasks' time zone (`[scheduler]`).
    pub scheduler: SchedulerConfig,
    /// The chat platforms `serve` answers on (`[channels]`).
    pub channels: ChannelsConfig,
    /// File tools work inside this directory (default `$EVOLVE_HOME/workspace`).
    pub workspace: PathBuf,
    /// Log filter (`EVOLVE_LOG`, e.g. `info`, `debug`; default `warn`).
    pub log: String,
    /// The environment variables the profile named for this run overrode.
    pub ignored_env: Vec<IgnoredEnv>,
}

/// An environment variable a named profile overrode (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredEnv {
    /// The variable, e.g. `OPENAI_BASE_URL`.
    pub var: &'static str,
    /// The profile that won.
    pub profile: String,
    /// Why it was ignored.
    pub why: Overridden,
}

/// Why a named profile ignored an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overridden {
    /// The profile's own table sets this dotted key (`model.base_url`).
    SetByProfile(&'static str),
    /// `OPENAI_API_KEY`: the profile names its own server and no key for it.
    KeyOfAnotherServer,
}

impl fmt::Display for IgnoredEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let IgnoredEnv { var, profile, why } = self;
        match why {
            Overridden::SetByProfile(key) => {
                let setting = match key.rsplit_once('.') {
                    Some((table, name)) => format!("[{table}] {name}"),
                    None => (*key).to_string(),
                };
                write!(
                    f,
                    "profile {profile} sets {setting}; {var} from the environment is ignored"
                )
            }
            Overridden::KeyOfAnotherServer => write!(
                f,
                "profile {profile} sets [model] base_url but no key; {var} from the \
                 environment is not sent to that server — add api_key_env = \"{var}\" \
                 to [profiles.{profile}.model] to send it"
            ),
        }
    }
}

/// Reads an environment variable: the process environment in the binary, a table in
/// tests (so tests never change the environment other tests run in).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The process environment, for [`EnvLookup`].
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Where a setting's value came from, for `config show`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Nothing set it: the built-in default.
    Default,
    /// The top level of `config.toml`.
    File,
    /// `[profiles.NAME]` of `config.toml`.
    Profile(String),
    /// `[profiles.NAME]`, named for this run, over the environment variable it names.
    ProfileOverEnv(String, String),
    /// An environment variable (also one named by `api_key_env`).
    Env(String),
    /// A command-line flag.
    Flag(&'static str),
    /// `cheap` was not set: the main model is used.
    Main,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => write!(f, "default"),
            Origin::File => write!(f, "file"),
            Origin::Profile(name) => write!(f, "profile {name}"),
            Origin::ProfileOverEnv(name, var) => write!(f, "profile {name} (over env {var})"),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::Main => write!(f, "same as main"),
        }
    }
}

/// The origin of each setting that was traced, by dotted key (`model.base_url`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origins(BTreeMap<String, Origin>);

impl Origins {
    /// Where `key` came from ([`Origin::Default`] for keys never set).
    pub fn get(&self, key: &str) -> &Origin {
        self.0.get(key).unwrap_or(&Origin::Default)
    }

    /// Every traced key with its origin, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Origin)> {
        self.0.iter().map(|(k, o)| (k.as_str(), o))
    }

    fn set(&mut self, key: &str, origin: Origin) {
        self.0.insert(key.to_string(), origin);
    }
}

/// The outcome of loading: the configuration and what `config show` tells about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The validated configuration.
    pub config: Config,
    /// Where the model settings, the workspace, the log filter and the dictionary path
    /// came from.
    pub origins: Origins,
    /// The profiles the file defines, sorted.
    pub profiles: Vec<String>,
    /// Whether `config.toml` exists (absent = defaults and environment only).
    pub file_exists: bool,
}

/// What `evolve config check` found.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The active configuration.
    pub loaded: Loaded,
    /// Every profile that was loaded and checked, the active one first.
    pub checked: Vec<String>,
    /// Problems that do not stop evolve but that the user should fix.
    pub warnings: Vec<String>,
}

/// What the command line adds to loading.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--profile NAME`.
    pub profile: Option<String>,
    /// `--workspace DIR`.
    pub workspace: Option<PathBuf>,
}

/// Why the configuration cannot be used (exit code 2).
#[derive(Debug)]
pub enum ConfigError {
    /// The file exists but cannot be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Syntax error, unknown key (named), wrong type, out-of-range value. `key` is the
    /// dotted setting the message is about (`model.base_url`) when it is about one: what
    /// a form marks, never found again in the message.
    Invalid {
        path: PathBuf,
        key: Option<String>,
        message: String,
    },
    /// `--profile NAME` names no profile in the file.
    UnknownProfile {
        name: String,
        path: PathBuf,
        known: Vec<String>,
    },
    /// An environment variable has a value that cannot be used.
    Env { var: &'static str, message: String },
    /// No home directory: neither `EVOLVE_HOME` nor `HOME` is set.
    NoHome,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => write!(
                f,
                "cannot read the configuration file {}: {source} — check its permissions, \
                 or move it away to run with the defaults",
                path.display()
            ),
            ConfigError::Invalid { path, message, .. } => {
                write!(f, "configuration error in {}: {message}", path.display())
            }
            ConfigError::UnknownProfile { name, path, known } => {
                write!(f, "no profile `{name}` in {}: ", path.display())?;
                if known.is_empty() {
                    write!(f, "the file defines no profiles")?;
                } else {
                    write!(f, "known profiles: {}", known.join(", "))?;
                }
                write!(
                    f,
                    " — add a [profiles.{name}] table or choose another with --profile"
                )
            }
            ConfigError::Env { var, message } => {
                write!(
                    f,
                    "environment variable {var} {message} — fix it or unset it"
                )
            }
            ConfigError::NoHome => write!(
                f,
                "cannot find the data directory: neither EVOLVE_HOME nor HOME is set — \
                 set EVOLVE_HOME to a directory evolve may use"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The dotted key of the setting the error is about (`model.main`), if it is about
    /// one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => key.as_deref(),
            _ => None,
        }
    }
}

impl Config {
    /// Loads `$EVOLVE_HOME/config.toml` (absent = defaults), applies the profile and
    /// the environment. Creates nothing on disk.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        Ok(Self::load_from(opts, &process_env)?.config)
    }

    /// [`Config::load`] with the environment read through `env` (tests pass a table
    /// instead of changing the process environment), and where each setting came from.
    pub fn load_from(opts: &LoadOptions, env: EnvLookup<'_>) -> Result<Loaded, ConfigError> {
        resolve::load(opts, env)
    }

    /// [`Config::load_from`] with `text` as the file's content (see `resolve::load_text`).
    pub fn load_from_text(
        opts: &LoadOptions,
        env: EnvLookup<'_>,
        text: &str,
    ) -> Result<Loaded, ConfigError> {
        resolve::load_text(opts, env, Some(text))
    }

    /// Every setting at its default, for data under `home`: what `load` gives with no
    /// file and no environment. For tests and tools that need a `Config` without I/O.
    #[cfg(test)]
    pub fn defaults(home: PathBuf) -> Config {
        Config {
            file: home.join(CONFIG_FILE),
            workspace: home.join("workspace"),
            model: ModelConfig {
                tools_learned_file: Some(home.join(TOOLS_LEARNED_FILE)),
                ..ModelConfig::default()
            },
            home,
            spending: Spending::default(),
            profile: DEFAULT_PROFILE.to_string(),
            core: CoreConfig::default(),
            agent: AgentConfig::default(),
            tools: ToolsConfig::default(),
            text: TextConfig::default(),
            limits: evolve_core::permission::Limits::default(),
            mcp: McpConfig::default(),
            scheduler: SchedulerConfig::default(),
            channels: ChannelsConfig::default(),
            log: DEFAULT_LOG.to_string(),
            ignored_env: Vec::new(),
        }
    }

    /// Says on stderr (a warning) which environment variables the profile named for
    /// this run overrode. Call it once the logger is installed, once per load.
    pub fn warn_ignored_env(&self) {
        for ignored in &self.ignored_env {
            log::warn!("{ignored}");
        }
    }

    /// The redb file: `$EVOLVE_HOME/evolve.redb`.
    pub fn store_path(&self) -> PathBuf {
        self.home.join("evolve.redb")
    }

    /// User skills: `$EVOLVE_HOME/skills`.
    pub fn skills_dir(&self) -> PathBuf {
        self.home.join("skills")
    }

    /// What a confined child (a shell command, a confined MCP server) must never reach:
    /// Evolve's home outside `workspace`, and Evolve's own files even inside it (the
    /// config, the store and its side files, `serve`'s login token and endpoint file).
    pub fn sandbox_scope(&self, workspace: &std::path::Path) -> crate::sandbox::Scope {
        let store = self.store_path();
        let mut private = vec![self.file.clone(), store.clone()];
        private.extend(
            ["serve.token", "serve.json", TOOLS_LEARNED_FILE]
                .iter()
                .map(|name| self.home.join(name)),
        );
        private.push(store.with_extension("redb.lock"));
        private.push(self.home.join(".evolve.redb.closed"));
        crate::sandbox::Scope {
            workspace: workspace.to_path_buf(),
            evolve_home: self.home.clone(),
            private_files: private,
            limits: self.limits,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
