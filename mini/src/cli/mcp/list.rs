//! The servers as they stand: `evolve mcp list` (and `/mcp` in chat), `rm`, and
//! `enable`/`disable` of a server or one of its tools.

use std::io::Write;

use argh::FromArgs;
use serde_json::json;

use super::super::app::now;
use super::super::printable;
use super::{open, place_of, unknown_server};
use crate::config::{server_json, Config};
use crate::error::Error;
use crate::mcp::oauth::LoginState;
use crate::mcp::servers;
use crate::mcp_spec::{full_name, split_name, ServerSpec, SpecSource, Transport};
use crate::sandbox::ServerSandbox;
use crate::store::Store;

/// list the MCP servers: those of config.toml and those added with `evolve mcp add` or `import`
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
pub(super) struct List {
    /// print JSON (secrets masked)
    #[argh(switch)]
    json: bool,
}

/// remove a server added with `evolve mcp add` or `import`, with its cached tools and levels
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "rm",
    note = "A server defined in config.toml is removed by deleting its [mcp.servers.NAME] table."
)]
pub(super) struct Rm {
    /// the server's name
    #[argh(positional)]
    name: String,
}

/// switch a server (SERVER) or one of its tools (SERVER__TOOL) back on
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "enable",
    example = "{command_name} files",
    example = "{command_name} files__write_file"
)]
pub(super) struct Enable {
    /// SERVER or SERVER__TOOL
    #[argh(positional)]
    pub(super) target: String,
}

/// switch a server (SERVER) or one of its tools (SERVER__TOOL) off: it is not offered to the model
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "disable",
    example = "{command_name} files",
    example = "{command_name} files__move_file"
)]
pub(super) struct Disable {
    /// SERVER or SERVER__TOOL
    #[argh(positional)]
    pub(super) target: String,
}

/// How a server is reached, in one line: the command and its arguments, or the URL
/// (without a `user:password@` part).
pub(super) fn target(spec: &ServerSpec) -> String {
    match &spec.transport {
        Transport::Stdio { command, args, .. } => {
            let mut parts = vec![command.as_str()];
            parts.extend(args.iter().map(String::as_str));
            printable(&parts.join(" "), false)
        }
        Transport::Http { url, .. } => printable(&crate::mcp::shown_url(url), false),
    }
}

/// `stdio` or `http`.
pub(super) fn kind(spec: &ServerSpec) -> &'static str {
    match spec.transport {
        Transport::Stdio { .. } => "stdio",
        Transport::Http { .. } => "http",
    }
}

/// Where a server is defined, short: `config.toml:12` or `added`.
fn source(config: &Config, spec: &ServerSpec) -> String {
    match spec.source {
        SpecSource::Store => "added".to_string(),
        SpecSource::ConfigFile => match config.mcp.places.get(&spec.name) {
            Some(place) => format!("config.toml:{}", place.line),
            None => "config.toml".to_string(),
        },
    }
}

/// The tool filter in words, empty when every tool is offered.
fn filter(spec: &ServerSpec) -> String {
    let mut parts = Vec::new();
    if let Some(only) = &spec.enabled_tools {
        parts.push(format!("only {}", only.join(", ")));
    }
    if !spec.disabled_tools.is_empty() {
        parts.push(format!("not {}", spec.disabled_tools.join(", ")));
    }
    parts.join("; ")
}

pub(super) fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let doc: Vec<serde_json::Value> = servers
            .iter()
            .map(|s| {
                let mut entry = server_entry(&app.config, s, None);
                if let Some(state) = LoginState::of(s, &store) {
                    entry["login"] = json!(state.label(now()));
                }
                entry
            })
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        )?;
        return Ok(());
    }
    write_servers(&mut out, &app.config, &servers, None, Some(&store))?;
    Ok(())
}

/// One server of `list --json`: its settings (secrets masked) and where it is defined.
fn server_entry(
    config: &Config,
    spec: &ServerSpec,
    connected: Option<&[String]>,
) -> serde_json::Value {
    let mut doc = server_json(spec);
    if let serde_json::Value::Object(map) = &mut doc {
        map.insert("name".into(), json!(spec.name));
        map.insert("transport".into(), json!(kind(spec)));
        map.insert(
            "source".into(),
            json!(match spec.source {
                SpecSource::ConfigFile => "config",
                SpecSource::Store => "store",
            }),
        );
        if let Some(place) = config.mcp.places.get(&spec.name) {
            map.insert("line".into(), json!(place.line));
        }
        if let Some(connected) = connected {
            map.insert("connected".into(), json!(connected.contains(&spec.name)));
        }
    }
    doc
}

/// The servers as a table; with `connected`, whether each is connected now (chat); with
/// the store, where each HTTP server's OAuth login stands.
pub(crate) fn write_servers(
    out: &mut dyn Write,
    config: &Config,
    servers: &[ServerSpec],
    connected: Option<&[String]>,
    store: Option<&Store>,
) -> std::io::Result<()> {
    if servers.is_empty() {
        writeln!(
            out,
            "no MCP servers — add one with `evolve mcp add NAME -- COMMAND ARGS…`, `evolve mcp \
             add NAME --url URL`, `evolve mcp import FILE`, or [mcp.servers.NAME] in {}",
            config.file.display()
        )?;
        return Ok(());
    }
    let width = servers
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let sources: Vec<String> = servers.iter().map(|s| source(config, s)).collect();
    let source_width = sources.iter().map(String::len).max().unwrap_or(6).max(6);
    writeln!(
        out,
        "{:<width$}  {:<5}  {:<source_width$}  {:>6}  COMMAND OR URL",
        "NAME", "KIND", "SOURCE", "TIMEOUT"
    )?;
    for (spec, source) in servers.iter().zip(&sources) {
        let mut flags = Vec::new();
        if let Some(connected) = connected {
            flags.push(if connected.contains(&spec.name) {
                "connected"
            } else {
                "not started"
            });
        }
        if spec.disabled {
            flags.push("disabled");
        }
        if spec.trusted {
            flags.push("trusted");
        }
        match spec.sandbox {
            ServerSandbox::None => {}
            ServerSandbox::Workspace => flags.push("sandbox: workspace"),
            ServerSandbox::ReadOnly => flags.push("sandbox: read-only"),
        }
        let login = store
            .and_then(|store| LoginState::of(spec, store))
            .map(|state| state.label(now()));
        flags.extend(login.as_deref());
        let mut line = format!(
            "{:<width$}  {:<5}  {:<source_width$}  {:>5}s  {}",
            spec.name,
            kind(spec),
            source,
            spec.timeout.as_secs(),
            target(spec),
        );
        match &spec.transport {
            Transport::Stdio { env, .. } if !env.is_empty() => {
                let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
                line.push_str(&format!("  env: {}", keys.join(", ")));
            }
            Transport::Http {
                headers, bearer, ..
            } => {
                let mut keys: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
                if bearer.is_some() {
                    keys.push("Authorization (bearer)");
                }
                if !keys.is_empty() {
                    line.push_str(&format!("  headers: {}", keys.join(", ")));
                }
            }
            _ => {}
        }
        let tools = filter(spec);
        if !tools.is_empty() {
            line.push_str(&format!("  tools: {}", printable(&tools, false)));
        }
        if !flags.is_empty() {
            line.push_str(&format!("  [{}]", flags.join(", ")));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

pub(super) fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let in_file = app.config.mcp.servers.iter().any(|s| s.name == c.name);
    let removed = store.remove_mcp_server(&c.name)?;
    match (removed, in_file) {
        (true, false) => {
            println!("removed MCP server {}", c.name);
            Ok(())
        }
        (true, true) => {
            println!(
                "removed the added MCP server {0}; the one defined in {1} stays — delete its \
                 table there to remove it too",
                c.name,
                place_of(&app.config, &c.name)
            );
            Ok(())
        }
        (false, true) => Err(Error::Invalid {
            path: app.config.file.clone(),
            message: format!(
                "the MCP server {0} is defined in this file ({1}) — delete its table there to \
                 remove it, or set `disabled = true` in it to switch it off",
                c.name,
                app.config
                    .mcp
                    .places
                    .get(&c.name)
                    .map_or_else(|| format!("[mcp.servers.{}]", c.name), |p| p.to_string())
            ),
        }),
        (false, false) => Err(unknown_server(
            &c.name,
            &servers::load(&app.config, &store)?,
        )),
    }
}

pub(super) fn toggle(profile: &Option<String>, target_name: &str, on: bool) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    let (server, tool) = match split_name(target_name) {
        Some((server, tool)) => (server, Some(tool)),
        None => (target_name, None),
    };
    let Some(spec) = servers.iter().find(|s| s.name == server) else {
        return Err(unknown_server(server, &servers));
    };
    // The model's name of a tool the server names otherwise (`.`, `/`) means that tool.
    let own: Option<String> = match (tool, store.mcp_tools(server)?) {
        (Some(t), Some((tools, _))) if !tools.iter().any(|x| x.name == t) => {
            let raw: Vec<&str> = tools.iter().map(|x| x.name.as_str()).collect();
            crate::mcp_spec::model_names(server, &raw)
                .iter()
                .position(|m| m.as_deref() == Some(target_name))
                .map(|i| raw[i].to_string())
        }
        _ => None,
    };
    let tool = own.as_deref().or(tool);
    if spec.source == SpecSource::ConfigFile {
        let change = match (tool, on) {
            (None, true) => "remove `disabled = true` there".to_string(),
            (None, false) => "set `disabled = true` there".to_string(),
            (Some(t), true) => format!("remove {t:?} from its disabled_tools there"),
            (Some(t), false) => format!("add {t:?} to its disabled_tools there"),
        };
        return Err(Error::Invalid {
            path: app.config.file.clone(),
            message: format!(
                "the MCP server {server} is defined in this file ({}) — {change}",
                app.config
                    .mcp
                    .places
                    .get(server)
                    .map_or_else(|| format!("[mcp.servers.{server}]"), |p| p.to_string())
            ),
        });
    }
    // The stored definition, not the loaded one (whose timeout and roots were filled in).
    let Some(mut stored) = store.mcp_server(server)? else {
        return Err(unknown_server(server, &servers));
    };
    let said = match tool {
        None => {
            stored.disabled = !on;
            format!(
                "MCP server {server} is {}",
                if on { "enabled" } else { "disabled" }
            )
        }
        Some(t) => {
            if on {
                stored.disabled_tools.retain(|d| d != t);
                if let Some(only) = &mut stored.enabled_tools {
                    if !only.iter().any(|o| o == t) {
                        only.push(t.to_string());
                    }
                }
            } else if !stored.disabled_tools.iter().any(|d| d == t) {
                stored.disabled_tools.push(t.to_string());
            }
            format!(
                "{} is {}",
                full_name(server, t),
                if on {
                    "offered to the model again"
                } else {
                    "no longer offered to the model"
                }
            )
        }
    };
    store.put_mcp_server(&stored)?;
    let note = if on && stored.disabled && tool.is_some() {
        format!(" (the server itself is disabled: `evolve mcp enable {server}`)")
    } else {
        String::new()
    };
    println!("{said}{note}");
    Ok(())
}
