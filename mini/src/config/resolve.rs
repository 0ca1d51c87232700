//! From the file, the profile and the environment to a validated [`Config`].
//!
//! The file is read twice from the same text: once into the typed [`RawLayer`], which
//! rejects unknown keys and wrong types with the line they are on, and once as a plain
//! TOML table, in which the chosen profile is merged over the top level key by key.
//! The merged table is then read as one [`RawLayer`] and checked value by value, every
//! field destructured so that a new key cannot be forgotten here.
//!
//! The environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `EVOLVE_MODEL`,
//! `EVOLVE_CHEAP_MODEL`, `EVOLVE_LOG`) overrides the file, except where a profile the
//! user named for this run ([`Choice::Named`]) sets the same key in its own table: the
//! profile wins there, and the variable is listed in [`Config::ignored_env`] for the
//! caller to warn about once the logger runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use evolve_core::CoreConfig;

use super::context::{check_base_url, expand_tilde, Context};
use super::file::{RawAgent, RawLayer, RawModel, RawScheduler, RawText, RawTimeouts, RawTools};
use super::{
    AgentConfig, Checked, Config, ConfigError, EnvLookup, IgnoredEnv, LoadOptions, Loaded,
    ModelConfig, Origin, Origins, Overridden, Price, SchedulerConfig, Spending, TextConfig,
    Timeouts, ToolCalling, ToolsConfig, CONFIG_FILE, DEFAULT_BASE_URL, DEFAULT_PROFILE,
};
use crate::secret::Secret;

/// The log filters `EVOLVE_LOG` and `log` accept (`logger::parse_filter`).
const LOG_LEVELS: &[&str] = &["off", "none", "error", "warn", "info", "debug", "trace"];

/// `$EVOLVE_HOME` if set (a leading `~` is the home directory; relative to the current
/// directory), else `$HOME/.evolve`.
pub fn home_dir(env: EnvLookup<'_>) -> Result<PathBuf, ConfigError> {
    if let Some(home) = env("EVOLVE_HOME").filter(|v| !v.is_empty()) {
        let path = match home.to_str() {
            Some(text) => expand_tilde(text, env).map_err(|message| ConfigError::Env {
                var: "EVOLVE_HOME",
                message,
            })?,
            None => PathBuf::from(home),
        };
        return Ok(absolute(path));
    }
    match env("HOME").filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".evolve")),
        None => Err(ConfigError::NoHome),
    }
}

/// `path` made absolute against the current directory (unchanged if that is unknown).
fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::env::current_dir().map_or(path.clone(), |cwd| cwd.join(path))
}

/// An environment variable as text, trimmed; unset and empty are the same (so
/// `OPENAI_API_KEY=` in a shell script unsets it rather than sending an empty key).
fn env_text(env: EnvLookup<'_>, var: &'static str) -> Result<Option<String>, ConfigError> {
    let Some(value) = env(var) else {
        return Ok(None);
    };
    match value.into_string() {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => Ok(Some(text.trim().to_string())),
        Err(_) => Err(ConfigError::Env {
            var,
            message: "is not valid UTF-8".to_string(),
        }),
    }
}

/// Loads the configuration of `opts` (see the module docs of `config`) and validates the
/// whole file: the active profile, then every other profile of the file, each through
/// the same resolution and the same permission checks (what the core's rules would
/// otherwise clamp or ignore). This is the one validation every command goes through —
/// `evolve config check` adds only warnings — so a file `config check` rejects is
/// rejected by every command, with the same message, before anything runs, and a
/// mistake in a profile shows up before the day it is used.
pub fn load(opts: &LoadOptions, env: EnvLookup<'_>) -> Result<Loaded, ConfigError> {
    load_text(opts, env, None)
}

/// [`load`] with `text` read as `config.toml` instead of the file (`None`: the file):
/// what a changed file would load as, before it is written (`PUT /v1/settings/model`).
pub fn load_text(
    opts: &LoadOptions,
    env: EnvLookup<'_>,
    text: Option<&str>,
) -> Result<Loaded, ConfigError> {
    let file = FileText::read(env, text)?;
    let (wanted, chosen) = match (&opts.profile, env_text(env, "EVOLVE_PROFILE")?) {
        (Some(flag), _) => (Some(flag.clone()), Choice::Named),
        (None, Some(var)) => (Some(var), Choice::Named),
        (None, None) => (file.raw.profile.clone(), Choice::Standing),
    };
    let active = wanted.unwrap_or_else(|| DEFAULT_PROFILE.to_string());
    let loaded = file.load_profile(&active, chosen, opts, env)?;
    for name in &file.profiles {
        if *name != loaded.config.profile {
            // Checked as it would run: named, by `--profile` or a switch in chat or
            // the web UI.
            file.load_profile(name, Choice::Named, opts, env)?;
        }
    }
    Ok(loaded)
}

/// How the active profile was chosen, which decides whether it or the environment wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// Named for this run: `--profile NAME`, `EVOLVE_PROFILE`, or a profile switch in
    /// chat or the web UI. What the profile's own table sets wins over the environment
    /// (`OPENAI_BASE_URL` exported for the default profile does not send the main call
    /// of `--profile alt` to another server than its cheap calls).
    Named,
    /// The file's `profile = "…"` key, or no profile: the environment wins, so a
    /// variable exported for one run overrides the file as the quick start shows.
    Standing,
}

/// `config.toml` read once, for loading each of its profiles.
struct FileText {
    home: PathBuf,
    path: PathBuf,
    exists: bool,
    text: String,
    /// The typed reading: unknown keys and wrong types are rejected here.
    raw: RawLayer,
    /// The plain table the profiles are merged in.
    doc: toml::Table,
    /// The profiles the file defines, sorted.
    profiles: Vec<String>,
}

impl FileText {
    fn read(env: EnvLookup<'_>, text: Option<&str>) -> Result<FileText, ConfigError> {
        let home = home_dir(env)?;
        let path = home.join(CONFIG_FILE);
        let text = match text {
            Some(text) => Some(text.to_string()),
            None => read_file(&path)?,
        };
        let exists = text.is_some();
        let text = text.unwrap_or_default();
        let raw: RawLayer = toml::from_str(&text).map_err(|e| toml_error(&path, &text, &e))?;
        if let Some(name) = raw.nested_profile() {
            return Err(nested_profile_error(path, &text, name));
        }
        let doc: toml::Table = toml::from_str(&text).map_err(|e| toml_error(&path, &text, &e))?;
        let profiles: Vec<String> = raw
            .profiles
            .iter()
            .flat_map(|p| p.keys().cloned())
            .collect();
        Ok(FileText {
            home,
            path,
            exists,
            text,
            raw,
            doc,
            profiles,
        })
    }

    /// Profile `profile` over the top level, the environment and the flags, resolved
    /// and checked.
    fn load_profile(
        &self,
        profile: &str,
        chosen: Choice,
        opts: &LoadOptions,
        env: EnvLookup<'_>,
    ) -> Result<Loaded, ConfigError> {
        let FileText {
            home,
            path,
            exists,
            text,
            raw: _,
            doc,
            profiles,
        } = self;
        let overlay = match profile_table(doc, profile) {
            Some(table) => Some(table),
            None if profile == DEFAULT_PROFILE => None,
            None => {
                return Err(ConfigError::UnknownProfile {
                    name: profile.to_string(),
                    path: path.clone(),
                    known: profiles.clone(),
                })
            }
        };

        let mut merged = doc.clone();
        merged.remove("profile");
        merged.remove("profiles");
        if let Some(overlay) = overlay {
            merge_layer(&mut merged, overlay);
        }
        let layer: RawLayer = merged.try_into().map_err(|e| ConfigError::Invalid {
            path: path.clone(),
            message: format!(
                "{} (after applying profile `{profile}`)",
                e.message().trim()
            ),
        })?;

        let mut origins = Origins::default();
        let trace = |key: &str| -> Origin {
            let keys: Vec<&str> = key.split('.').collect();
            if overlay.is_some_and(|t| has_key(t, &keys)) {
                Origin::Profile(profile.to_string())
            } else if has_key(doc, &keys) {
                Origin::File
            } else {
                Origin::Default
            }
        };
        for key in TRACED_KEYS {
            origins.set(key, trace(key));
        }

        let named = match chosen {
            Choice::Named if profile != DEFAULT_PROFILE => overlay,
            _ => None,
        };
        let mut ignored_env = Vec::new();
        let ctx = Context {
            path,
            home,
            env,
            origins: &mut origins,
            text,
            profile,
            named,
            ignored_env: &mut ignored_env,
        };
        let config = resolve(layer, profile.to_string(), opts, ctx)?;
        check_permissions(&config)?;
        Ok(Loaded {
            config,
            origins,
            profiles: profiles.clone(),
            file_exists: *exists,
        })
    }
}

/// The keys whose origin `config show` prints.
const TRACED_KEYS: &[&str] = &[
    "workspace",
    "log",
    "model.base_url",
    "model.api_key",
    "model.main",
    "model.cheap",
    "model.context_window",
    "model.reserved_output",
    "model.max_answer_bytes",
    "model.stream",
    "model.temperature",
    "model.tools",
    "model.max_retries",
    "model.timeouts.connect",
    "model.timeouts.first_byte",
    "model.timeouts.per_read",
    "model.timeouts.overall",
    "text.dict_path",
    "mcp.timeout_secs",
    "scheduler.time_zone",
];

/// The file's text; `None` when it does not exist.
fn read_file(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "the file is not UTF-8 text (byte {}) — save it as UTF-8",
                    e.utf8_error().valid_up_to()
                ),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A TOML error as a message naming the line, the table and the key.
fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let mut message = String::new();
    if let Some(span) = e.span() {
        let before = text.get(..span.start).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        message.push_str(&format!("line {line}"));
        if let Some(table) = table_at(text, line) {
            message.push_str(&format!(", in [{table}]"));
        }
        message.push_str(": ");
    }
    let what = e.message().trim().replace("unknown field", "unknown key");
    // Type errors point at the value and do not name the key: take it from the line.
    if !what.starts_with("unknown key") {
        if let Some(key) = e.span().and_then(|span| key_on_line(text, span.start)) {
            message.push_str(&format!("`{key}`: "));
        }
    }
    message.push_str(&what);
    message.push_str(if what.starts_with("unknown key") {
        " — fix the spelling or remove it, then run `evolve config check`"
    } else {
        " — fix the value, then run `evolve config check`"
    });
    ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    }
}

/// A profile that sets `profile` or `profiles` itself, told as serde tells an unknown
/// key (only the top level has them), with the line when it can be found.
fn nested_profile_error(path: PathBuf, text: &str, name: &str) -> ConfigError {
    let table = format!("profiles.{name}");
    let mut offset = 0;
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let key = key_on_line(text, offset);
        offset += line.len() + 1;
        let key = match key.as_deref() {
            Some(k @ ("profile" | "profiles")) => k.to_string(),
            _ => continue,
        };
        if table_at(text, i + 1).as_deref() == Some(table.as_str()) {
            found = Some((i + 1, key));
            break;
        }
    }
    let (place, key) = match found {
        Some((line, key)) => (format!("line {line}, in [{table}]: "), key),
        None => (
            format!("in [{table}]: "),
            "profile` or `profiles".to_string(),
        ),
    };
    ConfigError::Invalid {
        path,
        message: format!(
            "{place}unknown key `{key}` (only the top level names the profile and holds \
             the profiles) — fix the spelling or remove it, then run `evolve config check`"
        ),
    }
}

/// The key of the `key = value` line holding byte `at`, if that line is one.
fn key_on_line(text: &str, at: usize) -> Option<String> {
    let start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"');
    (!key.is_empty() && key.chars().all(bare)).then(|| key.to_string())
}

/// The table a line belongs to: the last `[header]` above it, or the parent of the
/// header on the line itself (an unknown `[modle]` is a key of the top level).
fn table_at(text: &str, line: usize) -> Option<String> {
    let header = |l: &str| -> Option<String> {
        let l = l.trim();
        let inner = l.strip_prefix("[[").or_else(|| l.strip_prefix('['))?;
        let end = inner.find(']')?;
        Some(inner[..end].trim().to_string())
    };
    let mut table = None;
    for (i, l) in text.lines().enumerate() {
        if i + 1 == line {
            if let Some(own) = header(l) {
                return own.rsplit_once('.').map(|(parent, _)| parent.to_string());
            }
            break;
        }
        if let Some(h) = header(l) {
            table = Some(h);
        }
    }
    table
}

/// `[profiles.NAME]` as a table.
fn profile_table<'a>(doc: &'a toml::Table, name: &str) -> Option<&'a toml::Table> {
    doc.get("profiles")?.as_table()?.get(name)?.as_table()
}

/// True when the dotted key is set in `table`.
fn has_key(table: &toml::Table, keys: &[&str]) -> bool {
    match keys {
        [] => true,
        [last] => table.contains_key(*last),
        [first, rest @ ..] => table
            .get(*first)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| has_key(t, rest)),
    }
}

/// Merges a profile over the top level, key by key; `api_key` and `api_key_env` are one
/// setting (a profile naming either replaces both of the top level), and an MCP server
/// is one setting too (a profile's `[profiles.P.mcp.servers.NAME]` replaces the top
/// level's server NAME as a whole: a `url` in the profile and a `command` in the top
/// level would otherwise make a server that is both).
fn merge_layer(base: &mut toml::Table, overlay: &toml::Table) {
    let overlay_servers = overlay
        .get("mcp")
        .and_then(toml::Value::as_table)
        .and_then(|m| m.get("servers"))
        .and_then(toml::Value::as_table);
    if let (Some(names), Some(toml::Value::Table(mcp))) = (overlay_servers, base.get_mut("mcp")) {
        if let Some(toml::Value::Table(servers)) = mcp.get_mut("servers") {
            for name in names.keys() {
                servers.remove(name);
            }
        }
    }
    let overlay_model = overlay.get("model").and_then(toml::Value::as_table);
    if overlay_model.is_some_and(|m| m.contains_key("api_key") || m.contains_key("api_key_env")) {
        if let Some(toml::Value::Table(model)) = base.get_mut("model") {
            model.remove("api_key");
            model.remove("api_key_env");
        }
    }
    merge_tables(base, overlay);
}

fn merge_tables(base: &mut toml::Table, overlay: &toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

impl Context<'_> {
    /// Whether the profile the user named sets the dotted `key` in its own table.
    fn named_sets(&self, key: &str) -> bool {
        let keys: Vec<&str> = key.split('.').collect();
        self.named.is_some_and(|t| has_key(t, &keys))
    }

    /// Environment variable `var` for the setting `key` (`also`: other keys that are
    /// the same setting, as `api_key_env` is `api_key`): `None` when it is unset, and
    /// when the profile the user named sets the key itself — then the variable is
    /// recorded as ignored and the origin says the profile won over it.
    fn env_setting(
        &mut self,
        var: &'static str,
        key: &'static str,
        also: &[&'static str],
    ) -> Result<Option<String>, ConfigError> {
        let Some(value) = env_text(self.env, var)? else {
            return Ok(None);
        };
        let Some(set) = std::iter::once(&key)
            .chain(also)
            .find(|k| self.named_sets(k))
        else {
            return Ok(Some(value));
        };
        self.origins.set(
            key,
            Origin::ProfileOverEnv(self.profile.to_string(), var.to_string()),
        );
        self.ignored_env.push(IgnoredEnv {
            var,
            profile: self.profile.to_string(),
            why: Overridden::SetByProfile(set),
        });
        Ok(None)
    }
}

/// The merged layer plus the environment and flags, checked.
fn resolve(
    layer: RawLayer,
    profile: String,
    opts: &LoadOptions,
    mut ctx: Context<'_>,
) -> Result<Config, ConfigError> {
    let RawLayer {
        // Removed from the merged table before it is read.
        profile: _,
        profiles: _,
        workspace,
        log,
        model,
        agent,
        tools,
        text,
        memory,
        history,
        permission,
        limits,
        mcp,
        scheduler,
        channels,
    } = layer;

    let workspace = match (&opts.workspace, workspace) {
        (Some(flag), _) => {
            ctx.origins.set("workspace", Origin::Flag("--workspace"));
            absolute(flag.clone())
        }
        (None, Some(text)) => ctx.path_setting("workspace", &text)?,
        (None, None) => ctx.home.join("workspace"),
    };

    let log = match ctx.env_setting("EVOLVE_LOG", "log", &[])? {
        Some(var) => {
            ctx.origins.set("log", Origin::Env("EVOLVE_LOG".into()));
            check_log(&var).ok_or_else(|| ConfigError::Env {
                var: "EVOLVE_LOG",
                message: format!("is `{var}`: expected one of {}", LOG_LEVELS.join(", ")),
            })?
        }
        None => match log {
            Some(l) => check_log(&l).ok_or_else(|| {
                ctx.invalid(format!(
                    "log = \"{l}\"{}: expected one of {}",
                    ctx.source_note("log"),
                    LOG_LEVELS.join(", ")
                ))
            })?,
            None => super::DEFAULT_LOG.to_string(),
        },
    };

    let (model, spending) = resolve_model(model.unwrap_or_default(), &mut ctx)?;
    let agent = resolve_agent(agent.unwrap_or_default(), &ctx)?;
    let tools = resolve_tools(tools.unwrap_or_default(), &ctx)?;
    let RawText { dict_path } = text.unwrap_or_default();
    let text = TextConfig {
        dict_path: dict_path
            .map(|p| ctx.path_setting("text.dict_path", &p))
            .transpose()?,
    };
    let mcp = super::mcp::resolve_mcp(mcp.unwrap_or_default(), &ctx)?;
    let scheduler = resolve_scheduler(scheduler.unwrap_or_default(), &mut ctx)?;
    let channels = super::channels::resolve_channels(channels.unwrap_or_default(), &ctx)?;
    let core = CoreConfig {
        memory: memory.unwrap_or_default(),
        history: history.unwrap_or_default(),
        permission: permission.unwrap_or_default(),
    };
    check_core(&core).map_err(|m| ctx.invalid(m))?;
    let limits = limits.unwrap_or_default();
    limits
        .validate()
        .map_err(|e| ctx.invalid(format!("{e}{}", ctx.source_note("limits.memory_mib"))))?;

    Ok(Config {
        home: ctx.home.to_path_buf(),
        file: ctx.path.to_path_buf(),
        profile,
        model,
        spending,
        core,
        agent,
        tools,
        text,
        limits,
        mcp,
        scheduler,
        channels,
        workspace,
        log,
        ignored_env: std::mem::take(ctx.ignored_env),
    })
}

/// `[scheduler] time_zone`: a zone the file names must exist (a misspelt zone would
/// run every task at the wrong hour). Without one the system's zone is used, read when
/// needed ([`SchedulerConfig::resolve`]); `TZ` is then where it comes from.
fn resolve_scheduler(
    raw: RawScheduler,
    ctx: &mut Context<'_>,
) -> Result<SchedulerConfig, ConfigError> {
    let RawScheduler { time_zone } = raw;
    let Some(name) = time_zone else {
        if env_text(ctx.env, "TZ")?.is_some() {
            ctx.origins
                .set("scheduler.time_zone", Origin::Env("TZ".into()));
        }
        return Ok(SchedulerConfig::default());
    };
    let zone = crate::zone::load(&name).map_err(|e| {
        ctx.invalid(format!(
            "[scheduler] time_zone{}: {e}",
            ctx.source_note("scheduler.time_zone")
        ))
    })?;
    Ok(SchedulerConfig {
        time_zone: Some((name.trim().to_string(), zone)),
    })
}

/// The memory and history constants within the ranges where the agent still works: a
/// value outside them would, for example, delete every new CRITICAL memory at once
/// (`critical_cap = 0`) or never select a memory (`max_selected = 0`).
fn check_core(core: &CoreConfig) -> Result<(), String> {
    let m = &core.memory;
    let h = &core.history;
    let unit = |v: f32| v > 0.0 && v <= 1.0;
    let share = |v: f32| (0.0..=1.0).contains(&v);
    let problems: [(bool, &str, String, &str); 19] = [
        (
            m.max_selected >= 1,
            "memory.max_selected",
            m.max_selected.to_string(),
            "at least 1",
        ),
        (
            share(m.context_weight),
            "memory.context_weight",
            m.context_weight.to_string(),
            "between 0 and 1",
        ),
        (
            share(m.min_relevance),
            "memory.min_relevance",
            m.min_relevance.to_string(),
            "between 0 and 1",
        ),
        (
            (0.5..=4.0).contains(&m.relevance_exponent),
            "memory.relevance_exponent",
            m.relevance_exponent.to_string(),
            "between 0.5 and 4",
        ),
        (
            share(m.reply_share),
            "memory.reply_share",
            m.reply_share.to_string(),
            "between 0 and 1",
        ),
        (
            (1.0..=4.0).contains(&m.subject_boost),
            "memory.subject_boost",
            m.subject_boost.to_string(),
            "between 1 and 4",
        ),
        (
            share(m.vector_weight),
            "memory.vector_weight",
            m.vector_weight.to_string(),
            "between 0 and 1",
        ),
        (
            m.vector_candidates <= 10_000,
            "memory.vector_candidates",
            m.vector_candidates.to_string(),
            "at most 10000",
        ),
        (
            m.critical_cap >= 1,
            "memory.critical_cap",
            m.critical_cap.to_string(),
            "at least 1",
        ),
        (
            unit(m.merge_jaccard),
            "memory.merge_jaccard",
            m.merge_jaccard.to_string(),
            "above 0 and at most 1",
        ),
        (
            (1.0..=2.0).contains(&m.same_category_bonus),
            "memory.same_category_bonus",
            m.same_category_bonus.to_string(),
            "between 1 and 2",
        ),
        (
            unit(m.strong_match_f1),
            "memory.strong_match_f1",
            m.strong_match_f1.to_string(),
            "above 0 and at most 1",
        ),
        (
            unit(m.duplicate_cosine),
            "memory.duplicate_cosine",
            m.duplicate_cosine.to_string(),
            "above 0 and at most 1",
        ),
        (
            h.l2_capacity >= 2,
            "history.l2_capacity",
            h.l2_capacity.to_string(),
            "at least 2",
        ),
        (
            h.l2_overflow >= 1 && h.l2_overflow < h.l2_capacity,
            "history.l2_overflow",
            h.l2_overflow.to_string(),
            "at least 1 and below history.l2_capacity",
        ),
        (
            unit(h.trim_threshold),
            "history.trim_threshold",
            h.trim_threshold.to_string(),
            "above 0 and at most 1",
        ),
        (
            h.max_tool_output_bytes >= 1024,
            "history.max_tool_output_bytes",
            h.max_tool_output_bytes.to_string(),
            "at least 1024",
        ),
        (
            h.keep_user_turns >= 1,
            "history.keep_user_turns",
            h.keep_user_turns.to_string(),
            "at least 1",
        ),
        (
            (0.0..=1.0).contains(&h.relevance_digest) && h.relevance_digest <= h.relevance_full,
            "history.relevance_digest",
            h.relevance_digest.to_string(),
            "between 0 and history.relevance_full",
        ),
    ];
    match problems.iter().find(|(ok, ..)| !ok) {
        None => Ok(()),
        Some((_, key, value, range)) => Err(format!("{key} = {value} must be {range}")),
    }
}

/// The log filter, lower-cased, if it is one `logger` knows.
fn check_log(text: &str) -> Option<String> {
    let lower = text.trim().to_ascii_lowercase();
    LOG_LEVELS.contains(&lower.as_str()).then_some(lower)
}

/// `[model] daily_tokens` and the prices per million tokens: what the models' work may
/// use in a day, and what it costs.
fn resolve_spending(
    daily_tokens: Option<u64>,
    prices: [(Option<f64>, &'static str); 4],
    ctx: &Context<'_>,
) -> Result<Spending, ConfigError> {
    if daily_tokens == Some(0) {
        return Err(ctx.invalid(format!(
            "model.daily_tokens = 0{}: at least 1 token a day (leave it out for no limit)",
            ctx.source_note("model.daily_tokens")
        )));
    }
    for (price, key) in prices {
        if let Some(p) = price.filter(|p| !p.is_finite() || *p < 0.0) {
            return Err(ctx.invalid(format!(
                "model.{key} = {p}{}: a price per million tokens is a number of 0 or more",
                ctx.source_note(&format!("model.{key}"))
            )));
        }
    }
    let [(main_in, _), (main_out, _), (cheap_in, _), (cheap_out, _)] = prices;
    let price = |i: Option<f64>, o: Option<f64>| {
        (i.is_some() || o.is_some()).then(|| Price {
            in_per_mtok: i.unwrap_or(0.0),
            out_per_mtok: o.unwrap_or(0.0),
        })
    };
    let main = price(main_in, main_out);
    Ok(Spending {
        daily_tokens,
        main,
        cheap: price(cheap_in, cheap_out).or(main),
    })
}

fn resolve_model(
    raw: RawModel,
    ctx: &mut Context<'_>,
) -> Result<(ModelConfig, Spending), ConfigError> {
    let RawModel {
        base_url,
        api_key,
        api_key_env,
        main,
        cheap,
        embedding_model,
        context_window,
        reserved_output,
        max_answer_bytes,
        stream,
        temperature,
        tools,
        max_retries,
        timeouts,
        daily_tokens,
        price_in_per_mtok,
        price_out_per_mtok,
        cheap_price_in_per_mtok,
        cheap_price_out_per_mtok,
    } = raw;
    let d = ModelConfig::default();
    let spending = resolve_spending(
        daily_tokens,
        [
            (price_in_per_mtok, "price_in_per_mtok"),
            (price_out_per_mtok, "price_out_per_mtok"),
            (cheap_price_in_per_mtok, "cheap_price_in_per_mtok"),
            (cheap_price_out_per_mtok, "cheap_price_out_per_mtok"),
        ],
        ctx,
    )?;

    let (base_url, base_url_is_default) =
        match ctx.env_setting("OPENAI_BASE_URL", "model.base_url", &[])? {
            Some(url) => {
                ctx.origins
                    .set("model.base_url", Origin::Env("OPENAI_BASE_URL".into()));
                let url = check_base_url(&url).map_err(|message| ConfigError::Env {
                    var: "OPENAI_BASE_URL",
                    message: format!("is `{url}`: {message}"),
                })?;
                (url, false)
            }
            None => match base_url {
                Some(url) => {
                    let checked = check_base_url(&url).map_err(|m| {
                        ctx.invalid(format!(
                            "model.base_url = \"{url}\"{}: {m}",
                            ctx.source_note("model.base_url")
                        ))
                    })?;
                    (checked, false)
                }
                None => (DEFAULT_BASE_URL.to_string(), true),
            },
        };

    let api_key = match env_key(ctx)? {
        Some(key) => {
            ctx.origins
                .set("model.api_key", Origin::Env("OPENAI_API_KEY".into()));
            Some(Secret::new(key))
        }
        None => match (api_key, api_key_env) {
            (Some(_), Some(_)) => {
                return Err(ctx.invalid(format!(
                    "model.api_key and model.api_key_env are both set{} — keep one",
                    ctx.source_note("model.api_key")
                )))
            }
            (Some(key), None) => Some(Secret::new(key.trim())).filter(|k| !k.is_empty()),
            (None, Some(var)) => {
                let value = (ctx.env)(var.trim()).and_then(|v| v.into_string().ok());
                match value
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                {
                    Some(key) => {
                        ctx.origins
                            .set("model.api_key", Origin::Env(var.trim().to_string()));
                        Some(Secret::new(key))
                    }
                    None => {
                        return Err(ctx.invalid(format!(
                            "model.api_key_env = \"{var}\"{} names an environment variable \
                             that is not set (or not UTF-8) — export {var}=… or set \
                             model.api_key instead",
                            ctx.source_note("model.api_key_env")
                        )))
                    }
                }
            }
            (None, None) => None,
        },
    };
    let main = match ctx.env_setting("EVOLVE_MODEL", "model.main", &[])? {
        Some(name) => {
            ctx.origins
                .set("model.main", Origin::Env("EVOLVE_MODEL".into()));
            name
        }
        None => model_name(ctx, "model.main", main)?.unwrap_or(d.main),
    };
    let cheap = match ctx.env_setting("EVOLVE_CHEAP_MODEL", "model.cheap", &[])? {
        Some(name) => {
            ctx.origins
                .set("model.cheap", Origin::Env("EVOLVE_CHEAP_MODEL".into()));
            name
        }
        None => match model_name(ctx, "model.cheap", cheap)? {
            Some(name) => name,
            None => {
                ctx.origins.set("model.cheap", Origin::Main);
                main.clone()
            }
        },
    };

    let embedding_model = model_name(ctx, "model.embedding_model", embedding_model)?;

    let context_window = context_window.unwrap_or(d.context_window);
    let reserved_output = reserved_output.unwrap_or(d.reserved_output);
    if reserved_output == 0 || reserved_output >= context_window {
        return Err(ctx.invalid(format!(
            "model.reserved_output = {reserved_output}{} must be at least 1 and below \
             model.context_window = {context_window}{} — it is the part of the window kept \
             for the answer",
            ctx.source_note("model.reserved_output"),
            ctx.source_note("model.context_window"),
        )));
    }
    let min_window = reserved_output + evolve_core::history::MIN_INPUT_BUDGET;
    if reserved_output > 0 && context_window < min_window {
        return Err(ctx.invalid(format!(
            "model.context_window = {context_window}{} leaves no room for the question: it \
             must be at least model.reserved_output + {} = {min_window} tokens",
            ctx.source_note("model.context_window"),
            evolve_core::history::MIN_INPUT_BUDGET,
        )));
    }
    let max_answer_bytes = max_answer_bytes.unwrap_or(d.max_answer_bytes);
    if !super::MAX_ANSWER_BYTES_RANGE.contains(&max_answer_bytes) {
        return Err(ctx.invalid(format!(
            "model.max_answer_bytes = {max_answer_bytes}{} must be between {} (4 KiB) and \
             {} (16 MiB) — it is the largest answer, in bytes, kept from the model",
            ctx.source_note("model.max_answer_bytes"),
            super::MAX_ANSWER_BYTES_RANGE.start(),
            super::MAX_ANSWER_BYTES_RANGE.end(),
        )));
    }
    if let Some(t) = temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ctx.invalid(format!(
                "model.temperature = {t}{} must be between 0 and 2 (or removed for the \
                 server's default)",
                ctx.source_note("model.temperature")
            )));
        }
    }

    let tools = match tools {
        None => d.tools,
        Some(text) => ToolCalling::parse(&text).ok_or_else(|| {
            ctx.invalid(format!(
                "model.tools = \"{text}\"{} must be one of {} — \"auto\" uses the model's \
                 native tool calling and falls back to describing the tools in the prompt \
                 when the server says the model has none",
                ctx.source_note("model.tools"),
                ToolCalling::NAMES.join(", "),
            ))
        })?,
    };

    let RawTimeouts {
        connect,
        first_byte,
        per_read,
        overall,
    } = timeouts.unwrap_or_default();
    let timeouts = Timeouts {
        connect: ctx.seconds("model.timeouts.connect", connect, d.timeouts.connect)?,
        first_byte: ctx.seconds(
            "model.timeouts.first_byte",
            first_byte,
            d.timeouts.first_byte,
        )?,
        per_read: ctx.seconds("model.timeouts.per_read", per_read, d.timeouts.per_read)?,
        overall: ctx.seconds("model.timeouts.overall", overall, d.timeouts.overall)?,
    };

    let model = ModelConfig {
        base_url,
        base_url_is_default,
        api_key,
        main,
        cheap,
        embedding_model,
        context_window,
        reserved_output,
        max_answer_bytes,
        timeouts,
        max_retries: max_retries.unwrap_or(d.max_retries),
        stream: stream.unwrap_or(d.stream),
        temperature,
        tools,
        tools_learned_file: Some(ctx.home.join(super::TOOLS_LEARNED_FILE)),
    };
    Ok((model, spending))
}

/// `OPENAI_API_KEY`, unless the profile the user named sets its own key, or its own
/// server without a key: a key exported for the environment's server is not sent to
/// another one (the profile sends it with `api_key_env = "OPENAI_API_KEY"`).
fn env_key(ctx: &mut Context<'_>) -> Result<Option<String>, ConfigError> {
    let key = ctx.env_setting("OPENAI_API_KEY", "model.api_key", &["model.api_key_env"])?;
    if key.is_some() && ctx.named_sets("model.base_url") {
        ctx.ignored_env.push(IgnoredEnv {
            var: "OPENAI_API_KEY",
            profile: ctx.profile.to_string(),
            why: Overridden::KeyOfAnotherServer,
        });
        return Ok(None);
    }
    Ok(key)
}

/// A model name from the file: trimmed, not empty.
fn model_name(
    ctx: &Context<'_>,
    key: &str,
    value: Option<String>,
) -> Result<Option<String>, ConfigError> {
    match value {
        Some(name) if name.trim().is_empty() => Err(ctx.invalid(format!(
            "{key} is empty{} — name a model or remove the key",
            ctx.source_note(key)
        ))),
        Some(name) => Ok(Some(name.trim().to_string())),
        None => Ok(None),
    }
}

/// The most sub-turns one `subtasks` call may ask for.
const MAX_SUBTASKS: usize = 16;

fn resolve_agent(raw: RawAgent, ctx: &Context<'_>) -> Result<AgentConfig, ConfigError> {
    let RawAgent {
        max_steps,
        reflect_every,
        reflect_below,
        style_above,
        crystallize_above,
        style_notes_max,
        background_wait,
        learn,
        tool_schemas,
        turn_line,
        titles,
        tool_chain,
        subtasks,
        subtask_parallel,
    } = raw;
    let d = AgentConfig::default();
    if max_steps == Some(0) {
        return Err(ctx.invalid(format!(
            "agent.max_steps = 0{}: a turn needs at least 1 model call",
            ctx.source_note("agent.max_steps")
        )));
    }
    if subtasks.is_some_and(|n| n > MAX_SUBTASKS) {
        return Err(ctx.invalid(format!(
            "agent.subtasks = {}{}: at most {MAX_SUBTASKS} sub-turns per call (0 turns the tool off)",
            subtasks.unwrap_or_default(),
            ctx.source_note("agent.subtasks")
        )));
    }
    if subtask_parallel == Some(0) {
        return Err(ctx.invalid(format!(
            "agent.subtask_parallel = 0{}: at least 1 sub-turn runs at a time",
            ctx.source_note("agent.subtask_parallel")
        )));
    }
    Ok(AgentConfig {
        max_steps: max_steps.unwrap_or(d.max_steps),
        reflect_every: reflect_every.unwrap_or(d.reflect_every),
        reflect_below: ctx.fraction("agent.reflect_below", reflect_below, d.reflect_below)?,
        style_above: ctx.fraction("agent.style_above", style_above, d.style_above)?,
        crystallize_above: ctx.fraction(
            "agent.crystallize_above",
            crystallize_above,
            d.crystallize_above,
        )?,
        style_notes_max: style_notes_max.unwrap_or(d.style_notes_max),
        background_wait: background_wait.map_or(d.background_wait, Duration::from_secs),
        learn: learn.unwrap_or(d.learn),
        tool_schemas: tool_schemas.unwrap_or(d.tool_schemas),
        turn_line: turn_line.unwrap_or(d.turn_line),
        titles: titles.unwrap_or(d.titles),
        tool_chain: tool_chain.unwrap_or(d.tool_chain),
        subtasks: subtasks.unwrap_or(d.subtasks),
        subtask_parallel: subtask_parallel.unwrap_or(d.subtask_parallel),
    })
}

fn resolve_tools(raw: RawTools, ctx: &Context<'_>) -> Result<ToolsConfig, ConfigError> {
    let RawTools {
        shell_timeout,
        shell_idle_stop,
        output_cap,
        http_allow_private,
        http_timeout,
        http_hosts,
        levels,
    } = raw;
    let http_hosts = http_hosts.unwrap_or_default();
    for host in &http_hosts {
        let name = host.strip_prefix("*.").unwrap_or(host);
        let plain = !name.is_empty()
            && name.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']')
            });
        if !plain || name.starts_with('.') || name.contains("..") {
            return Err(ctx.invalid(format!(
                "tools.http_hosts has {host:?}: give a host name (example.com), an address, or                  *.example.com for its subdomains — no scheme, path or wildcard elsewhere"
            )));
        }
    }
    let d = ToolsConfig::default();
    if output_cap == Some(0) {
        return Err(ctx.invalid(format!(
            "tools.output_cap = 0{}: tool output would always be empty — set a size in bytes",
            ctx.source_note("tools.output_cap")
        )));
    }
    let levels: Vec<_> = levels.unwrap_or_default().into_iter().collect();
    if let Some((name, _)) = levels.iter().find(|(name, _)| name.trim().is_empty()) {
        return Err(ctx.invalid(format!(
            "tools.levels has an empty tool name (\"{name}\") — name the tool"
        )));
    }
    for (name, level) in &levels {
        // MCP tools are named `<server>__<tool>`; every other name must be built in.
        if name.contains("__") {
            continue;
        }
        let Some(fixed) = evolve_core::permission::builtin_level(name, Some("list"))
            .zip(evolve_core::permission::builtin_level(name, None))
            .map(|(lowest, highest)| if name == "memory" { lowest } else { highest })
        else {
            return Err(ctx.invalid(format!(
                "tools.levels.{name}: there is no built-in tool `{name}` (MCP tools are \
                 named server__tool) — check the spelling"
            )));
        };
        if *level < fixed {
            let hint = if name == "shell" {
                " — the shell's level is set with permission.shell_level (L4 at the lowest) \
                 and permission.command_prefixes"
            } else {
                ""
            };
            return Err(ctx.invalid(format!(
                "tools.levels.{name} = \"{level}\" would lower a built-in tool (it is {fixed}); \
                 levels of built-in tools can only be raised{hint}"
            )));
        }
    }
    Ok(ToolsConfig {
        shell_timeout: ctx.seconds("tools.shell_timeout", shell_timeout, d.shell_timeout)?,
        shell_idle_stop: shell_idle_stop.map_or(d.shell_idle_stop, Duration::from_secs),
        output_cap: output_cap.unwrap_or(d.output_cap),
        http_allow_private: http_allow_private.unwrap_or(d.http_allow_private),
        http_timeout: ctx.seconds("tools.http_timeout", http_timeout, d.http_timeout)?,
        http_hosts,
        levels,
    })
}

/// `evolve config check`: [`load`] — the validation every command runs — and the
/// warnings about problems that do not stop evolve (a readable API key, MCP server
/// settings with no effect, an unknown system time zone).
pub fn check(opts: &LoadOptions, env: EnvLookup<'_>) -> Result<Checked, ConfigError> {
    let loaded = load(opts, env)?;
    let active = loaded.config.profile.clone();
    let mut checked = vec![active.clone()];
    checked.extend(loaded.profiles.iter().filter(|p| **p != active).cloned());
    let mut warnings = loaded.config.mcp.warnings.clone();
    warnings.extend(loaded.config.ignored_env.iter().map(ToString::to_string));
    if let Some(w) = readable_key_warning(&loaded) {
        warnings.push(w);
    }
    if let Some(w) = loaded.config.scheduler.resolve().warning {
        warnings.push(w);
    }
    Ok(Checked {
        loaded,
        checked,
        warnings,
    })
}

/// The permission settings the core's rules would clamp or ignore (`validate`), as a
/// configuration error naming the profile.
fn check_permissions(config: &Config) -> Result<(), ConfigError> {
    config
        .core
        .permission
        .validate()
        .map_err(|e| ConfigError::Invalid {
            path: config.file.clone(),
            message: format!(
                "[permission] of profile `{}`: {e} — change the setting so it has the \
                 effect you expect",
                config.profile
            ),
        })
}

/// A file holding an API key that other users can read.
#[cfg(unix)]
fn readable_key_warning(loaded: &Loaded) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let key_in_file = matches!(
        loaded.origins.get("model.api_key"),
        Origin::File | Origin::Profile(_) | Origin::ProfileOverEnv(..)
    ) || loaded.config.mcp.secrets_in_file
        || loaded.config.channels.secrets_in_file;
    let mode = std::fs::metadata(&loaded.config.file)
        .ok()?
        .permissions()
        .mode();
    (key_in_file && mode & 0o077 != 0).then(|| {
        format!(
            "{} holds an API key or token and other users can read it — run chmod 600 {0}",
            loaded.config.file.display()
        )
    })
}

#[cfg(not(unix))]
fn readable_key_warning(_loaded: &Loaded) -> Option<String> {
    None
}
