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

use std::path::PathBuf;
use std::time::Duration;

use evolve_core::CoreConfig;

use super::context::{expand_tilde, Context};
use super::file::{RawAgent, RawLayer, RawScheduler, RawText, RawTools};
use super::{
    AgentConfig, Checked, Config, ConfigError, EnvLookup, IgnoredEnv, LoadOptions, Loaded, Origin,
    Origins, Overridden, SchedulerConfig, TextConfig, ToolsConfig, CONFIG_FILE, DEFAULT_PROFILE,
};

use super::layers::{
    has_key, merge_layer, nested_profile_error, profile_table, read_file, toml_error, toml_text,
};
use super::model::resolve_model;
use super::ranges::check_core;

/// The log filters `EVOLVE_LOG` and `log` accept (`logger::parse_filter`).
const LOG_LEVELS: &[&str] = &["off", "none", "error", "warn", "info", "debug", "trace"];

/// `$EVOLVE_HOME` if set (a leading `~` is the home directory; relative to the current
/// directory), else `$HOME/.evolve`.
pub fn home_dir(env: EnvLookup<'_>) -> Result<PathBuf, ConfigError> {
    if let Some(home) = env("EVOLVE_HOME").filter(|v| !v.is_empty()) {
        let path = match home.to_str() {
            Some(text) => expand_tilde(text, env).map_err(|e| ConfigError::Env {
                var: "EVOLVE_HOME",
                message: e.to_string(),
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
        // Read back through the same TOML reader as the file (one copy of the config's
        // deserializer in the binary instead of two: about 60 KB).
        let layer: RawLayer =
            toml::from_str(&toml_text(&merged)).map_err(|e| ConfigError::Invalid {
                path: path.clone(),
                key: None,
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

impl Context<'_> {
    /// Whether the profile the user named sets the dotted `key` in its own table.
    pub(super) fn named_sets(&self, key: &str) -> bool {
        let keys: Vec<&str> = key.split('.').collect();
        self.named.is_some_and(|t| has_key(t, &keys))
    }

    /// Environment variable `var` for the setting `key` (`also`: other keys that are
    /// the same setting, as `api_key_env` is `api_key`): `None` when it is unset, and
    /// when the profile the user named sets the key itself — then the variable is
    /// recorded as ignored and the origin says the profile won over it.
    pub(super) fn env_setting(
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
                ctx.invalid_key(
                    "log",
                    format!(
                        "log = \"{l}\"{}: expected one of {}",
                        ctx.source_note("log"),
                        LOG_LEVELS.join(", ")
                    ),
                )
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
    check_core(&core).map_err(|e| ctx.invalid_key(e.key, e.to_string()))?;
    let limits = limits.unwrap_or_default();
    limits.validate().map_err(|e| {
        ctx.invalid_key(
            "limits.memory_mib",
            format!("{e}{}", ctx.source_note("limits.memory_mib")),
        )
    })?;

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
        ctx.invalid_key(
            "scheduler.time_zone",
            format!(
                "[scheduler] time_zone{}: {e}",
                ctx.source_note("scheduler.time_zone")
            ),
        )
    })?;
    Ok(SchedulerConfig {
        time_zone: Some((name.trim().to_string(), zone)),
    })
}

/// The log filter, lower-cased, if it is one `logger` knows.
fn check_log(text: &str) -> Option<String> {
    let lower = text.trim().to_ascii_lowercase();
    LOG_LEVELS.contains(&lower.as_str()).then_some(lower)
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
        return Err(ctx.invalid_key(
            "agent.max_steps",
            format!(
                "agent.max_steps = 0{}: a turn needs at least 1 model call",
                ctx.source_note("agent.max_steps")
            ),
        ));
    }
    if subtasks.is_some_and(|n| n > MAX_SUBTASKS) {
        return Err(ctx.invalid_key(
            "agent.subtasks",
            format!(
                "agent.subtasks = {}{}: at most {MAX_SUBTASKS} sub-turns per call (0 turns the tool off)",
                subtasks.unwrap_or_default(),
                ctx.source_note("agent.subtasks")
            ),
        ));
    }
    if subtask_parallel == Some(0) {
        return Err(ctx.invalid_key(
            "agent.subtask_parallel",
            format!(
                "agent.subtask_parallel = 0{}: at least 1 sub-turn runs at a time",
                ctx.source_note("agent.subtask_parallel")
            ),
        ));
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
            return Err(ctx.invalid_key("tools.http_hosts", format!(
                "tools.http_hosts has {host:?}: give a host name (example.com), an address, or *.example.com for its subdomains — no scheme, path or wildcard elsewhere"
            )));
        }
    }
    let d = ToolsConfig::default();
    if output_cap == Some(0) {
        return Err(ctx.invalid_key(
            "tools.output_cap",
            format!(
                "tools.output_cap = 0{}: tool output would always be empty — set a size in bytes",
                ctx.source_note("tools.output_cap")
            ),
        ));
    }
    let levels: Vec<_> = levels.unwrap_or_default().into_iter().collect();
    if let Some((name, _)) = levels.iter().find(|(name, _)| name.trim().is_empty()) {
        return Err(ctx.invalid_key(
            "tools.levels",
            format!("tools.levels has an empty tool name (\"{name}\") — name the tool"),
        ));
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
            return Err(ctx.invalid_key(
                &format!("tools.levels.{name}"),
                format!(
                    "tools.levels.{name}: there is no built-in tool `{name}` (MCP tools are \
                 named server__tool) — check the spelling"
                ),
            ));
        };
        if *level < fixed {
            let hint = if name == "shell" {
                " — the shell's level is set with permission.shell_level (L4 at the lowest) \
                 and permission.command_prefixes"
            } else {
                ""
            };
            return Err(ctx.invalid_key(
                &format!("tools.levels.{name}"),
                format!(
                "tools.levels.{name} = \"{level}\" would lower a built-in tool (it is {fixed}); \
                 levels of built-in tools can only be raised{hint}"
            ),
            ));
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
            key: None,
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
