//! Configuration: `$EVOLVE_HOME/config.toml`, named profiles and environment overrides,
//! parsed into one validated [`Config`]. Owns the file format and the defaults of the
//! shell; the core's constants come in as [`CoreConfig`].
//!
//! Precedence, lowest first: built-in defaults → the file's top level → the chosen
//! profile (`[profiles.NAME]`, chosen by `--profile` or `profile = "…"` in the file) →
//! environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `EVOLVE_MODEL`, `EVOLVE_CHEAP_MODEL`,
//! `EVOLVE_LOG`) → command-line flags (`--workspace`).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use evolve_core::permission::Level;
use evolve_core::CoreConfig;

/// The local server tried when nothing is configured (Ollama's OpenAI-compatible API).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";

/// A secret (API key, token): never printed, never logged, `Debug` shows it masked.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The value itself, for the one place that sends it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
    /// What `config show` prints: the first 3 and last 2 characters at most, never more
    /// than a fifth of the secret, e.g. `sk-…ab`; `***` for short secrets.
    pub fn masked(&self) -> String {
        todo!()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.masked())
    }
}

/// Timeouts of one model endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect: Duration,
    /// From the request sent to the first byte of the response (models think first).
    pub first_byte: Duration,
    /// Longest silence between two chunks of a stream (`timeout_per_read`).
    pub per_read: Duration,
    /// Cap on a whole non-streaming call.
    pub overall: Duration,
}

/// Which model server and models to use.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Base URL ending before `/chat/completions`, e.g. `https://host/v1`. No trailing `/`.
    pub base_url: String,
    /// True when `base_url` is [`DEFAULT_BASE_URL`] because nothing was configured: the
    /// error for an unreachable server then says what to set.
    pub base_url_is_default: bool,
    /// Sent as `Authorization: Bearer …` when set.
    pub api_key: Option<Secret>,
    /// The main model (answers, tool planning).
    pub main: String,
    /// The cheap model (extraction, evaluation, reflection, summaries); = `main` when unset.
    pub cheap: String,
    /// The model's context window in tokens.
    pub context_window: usize,
    /// Tokens reserved for the answer (sent as `max_tokens`).
    pub reserved_output: usize,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retries after the first attempt on connect errors, 429 and 5xx.
    pub max_retries: u32,
    /// Stream answers where the interface streams.
    pub stream: bool,
    /// Sampling temperature for the main model (`None`: the server's default).
    pub temperature: Option<f32>,
}

/// How the agent runs a turn (the shell's knobs; the core's are in [`CoreConfig`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Model round trips in one turn's tool loop (default 8).
    pub max_steps: usize,
    /// Reflect every N turns of a session (seed 002: 10).
    pub reflect_every: u32,
    /// Reflect when the evaluation score is below this (default 0.5).
    pub reflect_below: f32,
    /// A reply scoring at least this feeds style learning (default 0.8).
    pub style_above: f32,
    /// At most this many style notes are kept and injected (default 8).
    pub style_notes_max: usize,
    /// How long `ask` waits for the post-reply worker before exiting (default 60 s).
    pub background_wait: Duration,
    /// Extract memories, evaluate and reflect after each turn (default true).
    pub learn: bool,
}

/// Built-in tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    /// `shell` runs at most this long (default 30 s).
    pub shell_timeout: Duration,
    /// Output of `shell` and `http_get` kept, in bytes (default 128 KiB).
    pub output_cap: usize,
    /// `http_get` may fetch loopback and private addresses (default false).
    pub http_allow_private: bool,
    /// `http_get` timeout (default 20 s).
    pub http_timeout: Duration,
    /// User levels per tool name (`[tools.levels]`); a built-in tool can only be raised.
    pub levels: Vec<(String, Level)>,
}

/// Chinese segmentation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextConfig {
    /// A full jieba dictionary file to use instead of the embedded trimmed one.
    pub dict_path: Option<PathBuf>,
}

/// Everything a command needs, validated.
#[derive(Debug, Clone)]
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
    /// File tools work inside this directory (default `$EVOLVE_HOME/workspace`).
    pub workspace: PathBuf,
    /// Log filter (`EVOLVE_LOG`, e.g. `info`, `debug`; default `warn`).
    pub log: String,
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
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Loads `$EVOLVE_HOME/config.toml` (absent = defaults), applies the profile and
    /// the environment. Creates nothing on disk.
    pub fn load(opts: &LoadOptions) -> Result<Config, ConfigError> {
        let _ = opts;
        todo!()
    }

    /// The redb file: `$EVOLVE_HOME/evolve.redb`.
    pub fn store_path(&self) -> PathBuf {
        self.home.join("evolve.redb")
    }

    /// User skills: `$EVOLVE_HOME/skills`.
    pub fn skills_dir(&self) -> PathBuf {
        self.home.join("skills")
    }
}
