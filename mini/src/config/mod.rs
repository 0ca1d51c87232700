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
mod file;
mod mcp;
pub mod private;
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
    ModelConfig, Timeouts, ToolCalling, DEFAULT_BASE_URL, MAX_ANSWER_BYTES_RANGE,
};

/// The log filter when neither the file nor `EVOLVE_LOG` sets one: problems only, so
/// scripts reading stderr see nothing on a good run.
pub const DEFAULT_LOG: &str = "warn";

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
    /// Syntax error, unknown key (named), wrong type, out-of-range value.
    Invalid { path: PathBuf, message: String },
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
            ConfigError::Invalid { path, message } => {
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
pub(crate) mod tests {
    use super::*;
    use std::path::Path;

    /// The home directory of a test.
    pub(crate) type TempHome = crate::testing::TempDir;

    /// An environment of exactly `pairs`.
    fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    /// Loads `text` (None: no file) as `$EVOLVE_HOME/config.toml` of a fresh home, with
    /// `HOME` = that home too and the other variables of `pairs`.
    pub(crate) fn load_in(
        text: Option<&str>,
        pairs: &[(&str, &str)],
        opts: &LoadOptions,
    ) -> (Result<Loaded, ConfigError>, TempHome) {
        let home = TempHome::new("config");
        if let Some(text) = text {
            std::fs::write(home.path().join(CONFIG_FILE), text).expect("write config");
        }
        let dir = home.path().to_string_lossy().into_owned();
        let mut all: Vec<(&str, &str)> = vec![("EVOLVE_HOME", &dir), ("HOME", &dir)];
        all.extend_from_slice(pairs);
        let env = env_of(&all);
        (Config::load_from(opts, &env), home)
    }

    pub(crate) fn load_text(text: &str, pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
        load_in(Some(text), pairs, &LoadOptions::default()).0
    }

    pub(crate) fn assert_same(got: &Config, want: &Config) {
        assert_eq!(got, want);
    }

    fn ok(text: &str, pairs: &[(&str, &str)]) -> Loaded {
        load_text(text, pairs).unwrap_or_else(|e| panic!("{text:?} should load: {e}"))
    }

    fn err(text: &str, pairs: &[(&str, &str)]) -> String {
        match load_text(text, pairs) {
            Ok(_) => panic!("{text:?} should not load"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn nothing_configured_gives_the_documented_defaults() {
        let env = [("HOME", "/nonexistent-evolve-home")];
        let loaded = Config::load_from(&LoadOptions::default(), &env_of(&env)).expect("loads");
        let c = &loaded.config;
        let home = PathBuf::from("/nonexistent-evolve-home/.evolve");
        assert_eq!(c, &Config::defaults(home.clone()));
        assert!(!loaded.file_exists);
        assert_eq!(c.file, home.join("config.toml"));
        assert_eq!(c.workspace, home.join("workspace"));
        assert_eq!(c.store_path(), home.join("evolve.redb"));
        assert_eq!(c.skills_dir(), home.join("skills"));
        assert_eq!(c.profile, "default");
        assert_eq!(c.log, "warn");
        let m = &c.model;
        assert_eq!(
            (m.base_url.as_str(), m.base_url_is_default),
            (DEFAULT_BASE_URL, true)
        );
        assert_eq!((m.main.as_str(), m.cheap.as_str()), ("default", "default"));
        assert_eq!((m.context_window, m.reserved_output), (8192, 1024));
        assert_eq!((m.max_retries, m.stream, m.temperature), (2, true, None));
        let secs = |d: Duration| d.as_secs();
        let t = &m.timeouts;
        assert_eq!(
            [
                secs(t.connect),
                secs(t.first_byte),
                secs(t.per_read),
                secs(t.overall)
            ],
            [10, 120, 60, 600]
        );
        let a = &c.agent;
        assert_eq!(
            (a.max_steps, a.reflect_every, a.style_notes_max),
            (8, 10, 8)
        );
        assert_eq!((a.reflect_below, a.style_above), (0.5, 0.8));
        assert_eq!((secs(a.background_wait), a.learn), (60, true));
        let tools = &c.tools;
        assert_eq!(
            (
                secs(tools.shell_timeout),
                tools.output_cap,
                secs(tools.http_timeout)
            ),
            (30, 128 * 1024, 20)
        );
        assert!(!tools.http_allow_private && tools.levels.is_empty());
        assert_eq!(c.core, CoreConfig::default());
        assert_eq!(loaded.origins.get("model.base_url"), &Origin::Default);
        assert_eq!(loaded.origins.get("model.cheap"), &Origin::Main);
    }

    #[test]
    fn no_home_at_all_is_an_error_that_says_what_to_set() {
        let e = Config::load_from(&LoadOptions::default(), &env_of(&[])).expect_err("no home");
        assert!(matches!(e, ConfigError::NoHome));
        assert!(e.to_string().contains("EVOLVE_HOME"));
    }

    /// The layered file of the precedence table.
    const LAYERED: &str = r#"
profile = "work"
[model]
base_url = "http://file.example/v1/"
main = "file-main"
context_window = 32768
[profiles.work.model]
main = "work-main"
[profiles.cloud.model]
base_url = "https://cloud.example/v1"
main = "cloud-main"
cheap = "cloud-cheap"
"#;

    #[test]
    fn precedence_defaults_file_profile_env_flag() {
        struct Case {
            name: &'static str,
            env: &'static [(&'static str, &'static str)],
            flag: Option<&'static str>,
            want: (&'static str, &'static str, &'static str, &'static str),
            main_from: Origin,
        }
        let cases = [
            Case {
                name: "file's profile key chooses work; work overrides main only",
                env: &[],
                flag: None,
                want: ("work", "http://file.example/v1", "work-main", "work-main"),
                main_from: Origin::Profile("work".into()),
            },
            Case {
                name: "EVOLVE_PROFILE beats the file's profile key",
                env: &[("EVOLVE_PROFILE", "cloud")],
                flag: None,
                want: (
                    "cloud",
                    "https://cloud.example/v1",
                    "cloud-main",
                    "cloud-cheap",
                ),
                main_from: Origin::Profile("cloud".into()),
            },
            Case {
                name: "--profile beats EVOLVE_PROFILE; `default` is the top level alone",
                env: &[("EVOLVE_PROFILE", "cloud")],
                flag: Some("default"),
                want: (
                    "default",
                    "http://file.example/v1",
                    "file-main",
                    "file-main",
                ),
                main_from: Origin::File,
            },
            Case {
                name: "environment beats the profile; cheap follows the effective main",
                env: &[
                    ("EVOLVE_MODEL", "env-main"),
                    ("OPENAI_BASE_URL", "http://env.example:8080/v1//"),
                ],
                flag: None,
                want: ("work", "http://env.example:8080/v1", "env-main", "env-main"),
                main_from: Origin::Env("EVOLVE_MODEL".into()),
            },
            Case {
                name: "EVOLVE_CHEAP_MODEL beats the cheap of a profile chosen by the file",
                env: &[("EVOLVE_CHEAP_MODEL", "env-cheap"), ("EVOLVE_PROFILE", "")],
                flag: None,
                want: ("work", "http://file.example/v1", "work-main", "env-cheap"),
                main_from: Origin::Profile("work".into()),
            },
            Case {
                name: "a profile named by --profile beats the environment for what it sets",
                env: &[
                    ("EVOLVE_CHEAP_MODEL", "env-cheap"),
                    ("EVOLVE_MODEL", "env-main"),
                    ("OPENAI_BASE_URL", "http://env.example:8080/v1"),
                ],
                flag: Some("cloud"),
                want: (
                    "cloud",
                    "https://cloud.example/v1",
                    "cloud-main",
                    "cloud-cheap",
                ),
                main_from: Origin::ProfileOverEnv("cloud".into(), "EVOLVE_MODEL".into()),
            },
            Case {
                name: "named by EVOLVE_PROFILE: the same; the environment fills the rest",
                env: &[
                    ("EVOLVE_PROFILE", "work"),
                    ("EVOLVE_MODEL", "env-main"),
                    ("OPENAI_BASE_URL", "http://env.example:8080/v1"),
                ],
                flag: None,
                want: (
                    "work",
                    "http://env.example:8080/v1",
                    "work-main",
                    "work-main",
                ),
                main_from: Origin::ProfileOverEnv("work".into(), "EVOLVE_MODEL".into()),
            },
            Case {
                name: "--profile default keeps the environment over the file",
                env: &[("EVOLVE_MODEL", "env-main")],
                flag: Some("default"),
                want: ("default", "http://file.example/v1", "env-main", "env-main"),
                main_from: Origin::Env("EVOLVE_MODEL".into()),
            },
            Case {
                name: "empty variables count as unset",
                env: &[("EVOLVE_MODEL", ""), ("OPENAI_BASE_URL", "  ")],
                flag: None,
                want: ("work", "http://file.example/v1", "work-main", "work-main"),
                main_from: Origin::Profile("work".into()),
            },
        ];
        for case in cases {
            let opts = LoadOptions {
                profile: case.flag.map(String::from),
                workspace: None,
            };
            let (loaded, _home) = load_in(Some(LAYERED), case.env, &opts);
            let loaded = loaded.unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let m = &loaded.config.model;
            assert_eq!(
                (
                    loaded.config.profile.as_str(),
                    m.base_url.as_str(),
                    m.main.as_str(),
                    m.cheap.as_str()
                ),
                case.want,
                "{}",
                case.name
            );
            assert!(!m.base_url_is_default, "{}", case.name);
            // Keys the profile does not set come from the file.
            assert_eq!(m.context_window, 32768, "{}", case.name);
            assert_eq!(
                loaded.origins.get("model.main"),
                &case.main_from,
                "{}",
                case.name
            );
            assert_eq!(loaded.profiles, ["cloud", "work"]);
        }
    }

    #[test]
    fn a_named_profile_lists_the_variables_it_overrode() {
        let file = r#"
[model]
api_key = "sk-file-0123456789"
[profiles.alt]
log = "debug"
[profiles.alt.model]
base_url = "http://alt.example/v1"
cheap = "alt-cheap"
[profiles.keyed.model]
base_url = "http://keyed.example/v1"
api_key_env = "ALT_KEY"
[profiles.models.model]
main = "m"
"#;
        let env: &[(&str, &str)] = &[
            ("OPENAI_BASE_URL", "http://env.example/v1"),
            ("OPENAI_API_KEY", "sk-env-0123456789"),
            ("EVOLVE_MODEL", "env-main"),
            ("EVOLVE_LOG", "info"),
            ("ALT_KEY", "sk-alt-0123456789"),
        ];
        let cases: [(&str, &[&str], &str, &str); 3] = [
            // alt's own server gets neither the environment's key nor its URL; the
            // top level's key still applies (the file merges key by key).
            (
                "alt",
                &[
                    "profile alt sets log; EVOLVE_LOG from the environment is ignored",
                    "profile alt sets [model] base_url; OPENAI_BASE_URL from the environment is ignored",
                    "profile alt sets [model] base_url but no key; OPENAI_API_KEY from the environment is not sent to that server",
                ],
                "http://alt.example/v1",
                "sk-file-0123456789",
            ),
            (
                "keyed",
                &[
                    "profile keyed sets [model] base_url; OPENAI_BASE_URL",
                    "profile keyed sets [model] api_key_env; OPENAI_API_KEY",
                ],
                "http://keyed.example/v1",
                "sk-alt-0123456789",
            ),
            // A profile that names no server keeps the environment's, and its key.
            (
                "models",
                &["profile models sets [model] main; EVOLVE_MODEL from the environment is ignored"],
                "http://env.example/v1",
                "sk-env-0123456789",
            ),
        ];
        for (profile, want, url, key) in cases {
            let opts = LoadOptions {
                profile: Some(profile.to_string()),
                workspace: None,
            };
            let (loaded, _home) = load_in(Some(file), env, &opts);
            let c = loaded.unwrap_or_else(|e| panic!("{profile}: {e}")).config;
            let got: Vec<String> = c.ignored_env.iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{profile}: {got:?}");
            for (got, want) in got.iter().zip(want) {
                assert!(got.starts_with(want), "{profile}: {got}");
            }
            assert_eq!(c.model.base_url, url, "{profile}");
            assert_eq!(
                c.model.api_key.as_ref().map(crate::secret::Secret::expose),
                Some(key)
            );
        }
        // Chosen by the file, or no profile: the environment wins, silently.
        for text in [
            file.replace("[model]\n", "profile = \"alt\"\n[model]\n"),
            file.into(),
        ] {
            let (loaded, _home) = load_in(Some(&text), env, &LoadOptions::default());
            let c = loaded.expect("valid").config;
            assert!(c.ignored_env.is_empty(), "{:?}", c.ignored_env);
            assert_eq!(c.model.base_url, "http://env.example/v1");
        }
    }

    #[test]
    fn unknown_keys_and_bad_types_name_the_key_the_line_and_the_file() {
        let cases: &[(&str, &[&str])] = &[
            ("colour = \"blue\"\n", &["unknown key `colour`", "line 1"]),
            (
                "[model]\nmain = \"m\"\nmodle = \"x\"\n",
                &["unknown key `modle`", "line 3", "[model]", "main"],
            ),
            (
                "[modle]\nmain = \"x\"\n",
                &["unknown key `modle`", "line 1"],
            ),
            (
                "[model.timeouts]\nconect = 5\n",
                &["unknown key `conect`", "[model.timeouts]"],
            ),
            (
                "[profiles.work.model]\nmian = \"x\"\n",
                &["unknown key `mian`", "[profiles.work.model]", "line 2"],
            ),
            (
                "[profiles.work]\nprofile = \"x\"\n",
                &["unknown key `profile`", "[profiles.work]"],
            ),
            (
                "log = \"info\"\n[profiles.work]\nlog = \"debug\"\nprofiles = {}\n",
                &["unknown key `profiles`", "line 4", "[profiles.work]"],
            ),
            (
                "[profiles.work.profiles.inner]\nlog = \"debug\"\n",
                &["unknown key `profile` or `profiles`", "[profiles.work]"],
            ),
            (
                "[memory]\nmax_selectd = 3\n",
                &["unknown key `max_selectd`", "[memory]"],
            ),
            (
                "[model]\ncontext_window = \"big\"\n",
                &["`context_window`", "line 2", "fix the value"],
            ),
            ("[tools.levels]\nshell = \"L9\"\n", &["line 2", "shell"]),
            ("[model\nmain = 1\n", &["line 1"]),
        ];
        for (text, wants) in cases {
            let (result, home) = load_in(Some(text), &[], &LoadOptions::default());
            let e = result.expect_err(text).to_string();
            assert!(
                e.contains(&home.path().join("config.toml").display().to_string()),
                "{e}"
            );
            for want in *wants {
                assert!(e.contains(want), "{text:?}: {want:?} not in {e}");
            }
        }
    }

    #[test]
    fn out_of_range_values_name_the_key() {
        let cases: &[(&str, &str)] = &[
            (
                "[model]\ncontext_window = 4096\nreserved_output = 4096\n",
                "model.reserved_output",
            ),
            ("[model]\nreserved_output = 0\n", "model.reserved_output"),
            (
                "[model]\nmax_answer_bytes = 100\n",
                "model.max_answer_bytes",
            ),
            (
                "[model]\nmax_answer_bytes = 16777217\n",
                "model.max_answer_bytes",
            ),
            ("[model.timeouts]\nconnect = 0\n", "model.timeouts.connect"),
            ("[model.timeouts]\noverall = 0\n", "model.timeouts.overall"),
            ("[agent]\nreflect_below = 1.5\n", "agent.reflect_below"),
            ("[agent]\nstyle_above = -0.1\n", "agent.style_above"),
            (
                "[agent]\ncrystallize_above = 1.2\n",
                "agent.crystallize_above",
            ),
            ("[agent]\nmax_steps = 0\n", "agent.max_steps"),
            ("[model]\ntemperature = 3.0\n", "model.temperature"),
            ("[model]\ntools = \"json\"\n", "model.tools"),
            ("[tools]\nshell_timeout = 0\n", "tools.shell_timeout"),
            ("[tools]\noutput_cap = 0\n", "tools.output_cap"),
            ("[limits]\nmemory_mib = 8\n", "limits.memory_mib = 8"),
            ("[limits]\nprocesses = -1\n", "in [limits]: `processes`"),
            ("[limits]\nmemory = 512\n", "limits"),
            ("log = \"loud\"\n", "log"),
            ("[model]\nmain = \"  \"\n", "model.main"),
            (
                "[model]\nbase_url = \"localhost:11434\"\n",
                "model.base_url",
            ),
            (
                "[model]\nbase_url = \"https://api.openai.com/v1/chat/completions\"\n",
                "model.base_url",
            ),
            (
                "[profiles.p.model]\nreserved_output = 9000\n",
                "model.reserved_output",
            ),
        ];
        for (text, key) in cases {
            let opts = LoadOptions {
                profile: text.contains("profiles.p").then(|| "p".to_string()),
                workspace: None,
            };
            let (result, _home) = load_in(Some(text), &[], &opts);
            let e = result.expect_err(text).to_string();
            assert!(e.contains(key), "{text:?}: {key} not in {e}");
        }
        // Where the value came from a profile, the message says which table to edit.
        let opts = LoadOptions {
            profile: Some("p".into()),
            workspace: None,
        };
        let (result, _home) = load_in(
            Some("[profiles.p.model]\nreserved_output = 9000\n"),
            &[],
            &opts,
        );
        assert!(result
            .expect_err("range")
            .to_string()
            .contains("[profiles.p]"));
    }

    #[test]
    fn environment_values_are_checked_and_named() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("OPENAI_BASE_URL", "localhost:11434/v1")],
                "OPENAI_BASE_URL",
            ),
            (&[("OPENAI_BASE_URL", "http://")], "OPENAI_BASE_URL"),
            (&[("EVOLVE_LOG", "chatty")], "EVOLVE_LOG"),
        ];
        for (env, var) in cases {
            let e = err("", env);
            assert!(e.contains(var) && e.contains("unset"), "{var}: {e}");
        }
        let loaded = ok(
            "log = \"error\"\n",
            &[
                ("EVOLVE_LOG", "DEBUG"),
                ("OPENAI_BASE_URL", "HTTPS://h.example/v1/"),
            ],
        );
        assert_eq!(loaded.config.log, "debug");
        assert_eq!(loaded.config.model.base_url, "HTTPS://h.example/v1");
        assert_eq!(loaded.origins.get("log"), &Origin::Env("EVOLVE_LOG".into()));
    }

    #[test]
    fn unknown_profile_lists_the_known_ones() {
        let text = "[profiles.home.model]\nmain = \"a\"\n[profiles.work.model]\nmain = \"b\"\n";
        for (flag, env) in [(Some("wrok"), None), (None, Some("wrok"))] {
            let opts = LoadOptions {
                profile: flag.map(String::from),
                workspace: None,
            };
            let pairs: Vec<(&str, &str)> = env.map(|v| ("EVOLVE_PROFILE", v)).into_iter().collect();
            let (result, _home) = load_in(Some(text), &pairs, &opts);
            let e = result.expect_err("unknown profile");
            assert!(
                matches!(&e, ConfigError::UnknownProfile { known, .. } if known == &["home", "work"])
            );
            let msg = e.to_string();
            assert!(
                msg.contains("`wrok`") && msg.contains("home, work"),
                "{msg}"
            );
        }
        let e = err("profile = \"gone\"\n", &[]);
        assert!(
            e.contains("`gone`") && e.contains("defines no profiles"),
            "{e}"
        );
    }

    #[test]
    fn api_keys_come_from_the_file_a_named_variable_or_openai_api_key() {
        let key = |loaded: &Loaded| {
            loaded
                .config
                .model
                .api_key
                .as_ref()
                .map(|k| k.expose().to_string())
        };
        let file = "[model]\napi_key = \"sk-file-0123456789\"\n";
        assert_eq!(key(&ok(file, &[])).as_deref(), Some("sk-file-0123456789"));
        assert_eq!(
            key(&ok(file, &[("OPENAI_API_KEY", "sk-env-0123456789 \n")])).as_deref(),
            Some("sk-env-0123456789")
        );
        let named = "[model]\napi_key_env = \"MY_KEY\"\n";
        let loaded = ok(named, &[("MY_KEY", "sk-named-0123456789")]);
        assert_eq!(key(&loaded).as_deref(), Some("sk-named-0123456789"));
        assert_eq!(
            loaded.origins.get("model.api_key"),
            &Origin::Env("MY_KEY".into())
        );
        let e = err(named, &[]);
        assert!(
            e.contains("model.api_key_env") && e.contains("MY_KEY"),
            "{e}"
        );
        let e = err("[model]\napi_key = \"a\"\napi_key_env = \"B\"\n", &[]);
        assert!(e.contains("both set"), "{e}");
        // A profile naming a variable replaces the file's key instead of clashing with it.
        let layered = format!("{file}[profiles.p.model]\napi_key_env = \"P_KEY\"\n");
        let opts = LoadOptions {
            profile: Some("p".into()),
            workspace: None,
        };
        let (loaded, _home) = load_in(Some(&layered), &[("P_KEY", "sk-profile-0123456")], &opts);
        assert_eq!(
            key(&loaded.expect("loads")).as_deref(),
            Some("sk-profile-0123456")
        );
        // An empty key is no key.
        assert_eq!(key(&ok("[model]\napi_key = \"\"\n", &[])), None);
    }

    #[test]
    fn masked_secrets_never_reveal_more_than_a_fifth_nor_five_characters() {
        let table: &[(&str, &str)] = &[
            ("", "***"),
            ("short", "***"),
            ("sk-12345678", "***"),
            ("sk-123456789", "s…9"),
            ("sk-0123456789abcdefghijyz", "sk-…yz"),
            (
                "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaayz",
                "sk-…yz",
            ),
            ("密钥密钥密钥密钥密钥密钥密钥密钥", "密钥…钥"),
        ];
        for (key, want) in table {
            assert_eq!(crate::secret::Secret::new(*key).masked(), *want, "{key}");
        }
        for n in 0..80 {
            let key: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            let masked = crate::secret::Secret::new(key.as_str()).masked();
            let shown = masked.chars().filter(|c| *c != '…' && *c != '*').count();
            assert!(shown <= 5 && shown * 5 <= n, "{n}: {masked}");
            if n >= 2 {
                assert!(!masked.contains(&key), "{n}: {masked}");
            }
        }
        // Debug never shows it either, nor does the Config that holds it.
        let loaded = ok(
            "[model]\napi_key = \"sk-live-abcdefghijklmnopqrstuvwxyz\"\n",
            &[],
        );
        let debug = format!("{:?}", loaded.config);
        let json = loaded.to_json().to_string();
        let text = loaded.to_text();
        for shown in [&debug, &json, &text] {
            assert!(!shown.contains("abcdefghijklmnop"), "{shown}");
            assert!(shown.contains("sk-…yz"), "{shown}");
        }
    }

    #[test]
    fn paths_expand_tilde_and_resolve_under_the_home() {
        let (loaded, home) = load_in(
            Some("workspace = \"~/ws\"\n[text]\ndict_path = \"dicts/full.txt\"\n"),
            &[],
            &LoadOptions::default(),
        );
        let c = loaded.expect("loads").config;
        assert_eq!(c.workspace, home.path().join("ws"));
        assert_eq!(c.text.dict_path, Some(home.path().join("dicts/full.txt")));
        let opts = LoadOptions {
            profile: None,
            workspace: Some(PathBuf::from("/srv/ws")),
        };
        let (loaded, _home) = load_in(Some("workspace = \"~/ws\"\n"), &[], &opts);
        let loaded = loaded.expect("loads");
        assert_eq!(loaded.config.workspace, Path::new("/srv/ws"));
        assert_eq!(
            loaded.origins.get("workspace"),
            &Origin::Flag("--workspace")
        );
        // EVOLVE_HOME itself may start with ~.
        let env = [("HOME", "/home/u"), ("EVOLVE_HOME", "~/agent")];
        let c = Config::load_from(&LoadOptions::default(), &env_of(&env))
            .expect("loads")
            .config;
        assert_eq!(c.home, Path::new("/home/u/agent"));
        assert_eq!(c.workspace, Path::new("/home/u/agent/workspace"));
    }

    #[test]
    fn profiles_override_key_by_key_including_the_cores_sections() {
        let text = r#"
[memory]
max_selected = 12
floor_high = 5
[tools.levels]
write_file = "L4"
[profiles.p.memory]
max_selected = 20
[profiles.p.tools.levels]
shell = 5
"#;
        let opts = LoadOptions {
            profile: Some("p".into()),
            workspace: None,
        };
        let (loaded, _home) = load_in(Some(text), &[], &opts);
        let c = loaded.expect("loads").config;
        assert_eq!(
            (c.core.memory.max_selected, c.core.memory.floor_high),
            (20, 5)
        );
        use evolve_core::permission::Level;
        assert_eq!(
            c.tools.levels,
            [
                ("shell".to_string(), Level::L5),
                ("write_file".to_string(), Level::L4)
            ]
        );
    }

    #[test]
    fn every_load_checks_every_profile_and_the_permission_settings_like_check() {
        let cases: &[(&str, Option<&str>)] = &[
            ("[profiles.a.model]\nmain = \"x\"\n", None),
            (
                "[profiles.a.model]\nmain = \"x\"\n[profiles.b.agent]\nreflect_below = 7.0\n",
                Some("agent.reflect_below"),
            ),
            ("[permission]\nshell_level = \"L3\"\n", Some("[permission]")),
            (
                "[profiles.b.permission]\ncommand_prefixes = [[\"bash\", \"L3\"]]\n",
                Some("profile `b`"),
            ),
        ];
        for (text, want) in cases {
            let home = TempHome::new("config");
            std::fs::write(home.path().join(CONFIG_FILE), text).expect("write");
            let dir = home.path().to_string_lossy().into_owned();
            let pairs = [("EVOLVE_HOME", dir.as_str())];
            let env = env_of(&pairs);
            // Loading for any command is the same validation, with the same message.
            let loaded = Config::load_from(&LoadOptions::default(), &env);
            assert_eq!(
                loaded.as_ref().err().map(ToString::to_string),
                check(&LoadOptions::default(), &env)
                    .err()
                    .map(|e| e.to_string()),
                "{text}"
            );
            match (check(&LoadOptions::default(), &env), want) {
                (Ok(checked), None) => assert_eq!(checked.checked, ["default", "a"]),
                (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{text}: {e}"),
                (Ok(_), Some(want)) => panic!("{text}: check passed, expected {want}"),
                (Err(e), None) => panic!("{text}: {e}"),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn check_warns_about_a_key_others_can_read() {
        use std::os::unix::fs::PermissionsExt;
        let home = TempHome::new("config");
        let file = home.path().join(CONFIG_FILE);
        std::fs::write(&file, "[model]\napi_key = \"sk-0123456789abcdef\"\n").expect("write");
        let dir = home.path().to_string_lossy().into_owned();
        let pairs = [("EVOLVE_HOME", dir.as_str())];
        let env = env_of(&pairs);
        for (mode, warned) in [(0o644, true), (0o600, false)] {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let checked = check(&LoadOptions::default(), &env).expect("valid");
            assert_eq!(checked.warnings.len(), usize::from(warned), "{mode:o}");
        }
    }

    #[test]
    fn show_text_tells_where_model_settings_came_from() {
        let loaded = ok(
            "[model]\nmain = \"m\"\n",
            &[
                ("OPENAI_API_KEY", "sk-0123456789abcdefghij"),
                ("EVOLVE_CHEAP_MODEL", "c"),
            ],
        );
        let text = loaded.to_text();
        for want in [
            "# file",
            "# env OPENAI_API_KEY",
            "# env EVOLVE_CHEAP_MODEL",
            "# default",
            "[model.timeouts]",
            "[memory]",
            "[permission]",
        ] {
            assert!(text.contains(want), "{want} not in\n{text}");
        }
        let json = loaded.to_json();
        assert_eq!(json["model"]["main"], "m");
        assert_eq!(json["origins"]["model.main"], "file");
        assert_eq!(json["agent"]["reflect_below"], serde_json::json!(0.5));
        assert_eq!(json["memory"]["strong_match_f1"], serde_json::json!(0.7));
    }
}
