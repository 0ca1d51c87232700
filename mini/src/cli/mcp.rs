//! `evolve mcp …`: the MCP servers from the command line — add a program or an HTTP
//! endpoint, list, remove, import the `mcpServers` JSON other agents use, switch servers
//! and tools on and off, start them to list their tools with each tool's level, set
//! a tool's level, and log in to an HTTP server with OAuth (the browser part of it:
//! opening or printing the URL, waiting with Ctrl-C). `/mcp` in `chat` uses the same
//! functions.
//!
//! What it decides: how a server is spelled on the command line and which mistakes are
//! caught before anything is kept (a name, an URL, a `K=V`, a token variable that is not
//! set), and that servers defined in `config.toml` are changed by editing the file — the
//! messages say at which line. Which servers exist is `mcp::servers`'s; levels are
//! `agents::mcp_levels::classify`'s; connections are the `Hub`'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use argh::FromArgs;
use evolve_core::permission::Level;
use evolve_core::text::one_line;
use serde_json::json;

use super::app::{now, App};
use super::{interrupt, printable};
use crate::agents::mcp_levels::classify::{self, Classified};
use crate::agents::mcp_levels::user_level::{self, LevelError};
use crate::agents::Runtime;
use crate::config::{server_json, Config, LoadOptions};
use crate::error::Error;
use crate::mcp::oauth::{self, LoginState};
use crate::mcp::servers::{self, TIMEOUT_FROM_CONFIG};
use crate::mcp_spec::{env_name_problem, header_problem, oauth_problem, server_name_problem};
use crate::mcp_spec::{full_name, split_name, McpTool, OAuthClient, ServerSpec, SpecSource};
use crate::mcp_spec::{url_problem, Transport};
use crate::sandbox::ServerSandbox;
use crate::secret::Secret;
use crate::store::Store;

/// manage MCP servers and the permission levels of their tools
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "mcp",
    example = "{command_name} add files -- npx -y @modelcontextprotocol/server-filesystem ~/notes",
    example = "{command_name} add remote --url http://127.0.0.1:3001/mcp --bearer-env REMOTE_TOKEN",
    example = "{command_name} tools files",
    example = "{command_name} level files__write_file L4",
    example = "{command_name} import ~/.cursor/mcp.json",
    example = "{command_name} login remote",
    note = "Servers can also be defined in config.toml under [mcp.servers.NAME]; those are changed by editing the file. The model sees each tool as SERVER__TOOL."
)]
pub struct McpCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
// Parsed once per process; `add`'s options are what they are.
#[allow(clippy::large_enum_variant)]
enum Action {
    Add(Add),
    List(List),
    Rm(Rm),
    Tools(Tools),
    Level(LevelCmd),
    Import(Import),
    Enable(Enable),
    Disable(Disable),
    Login(Login),
    Logout(Logout),
}

/// log in to an HTTP server with OAuth: opens its authorization server's page in a browser (or prints the URL), waits for it to come back, and keeps the tokens in the store
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "login",
    example = "{command_name} github",
    example = "{command_name} github --no-browser",
    note = "The browser comes back to http://127.0.0.1:PORT/callback on this machine. Evolve registers itself with the authorization server unless the server was added with --oauth-client-id. Tokens are renewed by themselves; run login again when a server says the login is no longer taken or asks for more permission."
)]
struct Login {
    /// the server's name
    #[argh(positional)]
    name: String,
    /// print the URL instead of opening a browser
    #[argh(switch)]
    no_browser: bool,
    /// seconds to wait for the browser to come back (default 300)
    #[argh(option)]
    timeout: Option<u64>,
}

/// forget the OAuth login of an HTTP server: its tokens and the client evolve registered
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "logout")]
struct Logout {
    /// the server's name
    #[argh(positional)]
    name: String,
}

/// add an MCP server: a program (NAME -- COMMAND ARGS...) or a streamable HTTP endpoint (NAME --url URL)
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "add",
    example = "{command_name} files -- npx -y @modelcontextprotocol/server-filesystem /home/me/notes",
    example = "{command_name} time --timeout 10 -- uvx mcp-server-time",
    example = "{command_name} gh --env GITHUB_TOKEN=ghp_... -- github-mcp-server stdio",
    example = "{command_name} remote --url https://mcp.example.com/mcp --bearer-env MCP_TOKEN",
    example = "{command_name} local --url http://127.0.0.1:3001/mcp --header X-Api-Key:abc",
    note = "Put -- before the command so its own options are not taken for evolve's. The server is started on first use; `evolve mcp tools NAME` starts it now."
)]
struct Add {
    /// the server's name (letters, digits, _ and -): the model sees its tools as NAME__TOOL
    #[argh(positional)]
    name: String,
    /// the program to start and its arguments, after --
    #[argh(positional, greedy)]
    command: Vec<String>,
    /// an environment variable for the program, K=V (repeatable)
    #[argh(option)]
    env: Vec<String>,
    /// the program's working directory
    #[argh(option)]
    cwd: Option<PathBuf>,
    /// the endpoint of a streamable HTTP server, e.g. http://127.0.0.1:3001/mcp
    #[argh(option)]
    url: Option<String>,
    /// a header sent with every request, K:V (repeatable)
    #[argh(option)]
    header: Vec<String>,
    /// send Authorization: Bearer with the value of this environment variable (read now and kept in the store)
    #[argh(option)]
    bearer_env: Option<String>,
    /// for `evolve mcp login`: the OAuth client id registered with the server's authorization server (else evolve registers itself)
    #[argh(option)]
    oauth_client_id: Option<String>,
    /// for `evolve mcp login`: the client secret of --oauth-client-id, from this environment variable (read now and kept in the store)
    #[argh(option)]
    oauth_client_secret_env: Option<String>,
    /// for `evolve mcp login`: the https URL of a client ID metadata document you host for evolve
    #[argh(option)]
    oauth_client_metadata_url: Option<String>,
    /// seconds one tool call may take (default: timeout_secs of [mcp] in config.toml, 60)
    #[argh(option)]
    timeout: Option<u64>,
    /// trust the server's read-only hints: they may then lower a tool's level
    #[argh(switch)]
    trusted: bool,
    /// confine the program by the kernel: workspace (reads the system, its own files and the workspace; writes the workspace and its own folder), read-only (writes only its own folder), none (default)
    #[argh(option)]
    sandbox: Option<String>,
    /// replace a server of that name added before
    #[argh(switch)]
    replace: bool,
}

/// list the MCP servers: those of config.toml and those added with `evolve mcp add` or `import`
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
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
struct Rm {
    /// the server's name
    #[argh(positional)]
    name: String,
}

/// start the MCP servers (or the one named) and list their tools, each with its level and where the level came from
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "tools",
    example = "{command_name}",
    example = "{command_name} files --json",
    note = "Levels: L0-L2 run, L3 asks once, L4 asks twice, L5 never runs. New or changed tools are classified by the cheap model; `evolve mcp level` sets a level yourself. Exits 1 when a server could not be listed (the others are still listed)."
)]
struct Tools {
    /// only this server
    #[argh(positional)]
    name: Option<String>,
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// set the permission level of an MCP tool: L0-L5, or auto to go back to the classified level
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "level",
    example = "{command_name} files__read_file L1",
    example = "{command_name} files__write_file L4",
    example = "{command_name} files__write_file auto",
    note = "L0-L2 run without asking, L3 asks once, L4 asks twice, L5 never runs. A level set here wins over [tools.levels] in config.toml and over the classifier."
)]
struct LevelCmd {
    /// the tool as the model sees it: SERVER__TOOL (`evolve mcp tools` lists them)
    #[argh(positional)]
    tool: String,
    /// L0, L1, L2, L3, L4, L5, or auto
    #[argh(positional)]
    level: String,
}

/// add every server of an mcpServers JSON file, as written by Claude Desktop, Cursor, Cline or VS Code
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "import",
    example = "{command_name} ~/.config/Claude/claude_desktop_config.json",
    example = "{command_name} .vscode/mcp.json --replace",
    note = "The file holds {{\"mcpServers\": {{NAME: {{\"command\", \"args\", \"env\"}} or {{\"url\", \"headers\"}}}}}} (VS Code: \"servers\"). Old HTTP+SSE servers are imported switched off: evolve speaks streamable HTTP."
)]
struct Import {
    /// the JSON file
    #[argh(positional)]
    file: PathBuf,
    /// confine every program of the file by the kernel: workspace, read-only or none (see `evolve mcp add --help`); a server's own "sandbox" key wins
    #[argh(option)]
    sandbox: Option<String>,
    /// replace servers of the same names added before
    #[argh(switch)]
    replace: bool,
}

/// switch a server (SERVER) or one of its tools (SERVER__TOOL) back on
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "enable",
    example = "{command_name} files",
    example = "{command_name} files__write_file"
)]
struct Enable {
    /// SERVER or SERVER__TOOL
    #[argh(positional)]
    target: String,
}

/// switch a server (SERVER) or one of its tools (SERVER__TOOL) off: it is not offered to the model
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "disable",
    example = "{command_name} files",
    example = "{command_name} files__move_file"
)]
struct Disable {
    /// SERVER or SERVER__TOOL
    #[argh(positional)]
    target: String,
}

pub fn run(cmd: McpCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::Add(c) => add(c, profile),
        Action::List(c) => list(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Tools(c) => tools(c, profile),
        Action::Level(c) => {
            let (app, store) = open(profile)?;
            let servers = servers::load(&app.config, &store)?;
            let said = set_level(&app.config, &store, &servers, &c.tool, &c.level)?;
            println!("{said}");
            Ok(())
        }
        Action::Import(c) => import(c, profile),
        Action::Enable(c) => toggle(profile, &c.target, true),
        Action::Disable(c) => toggle(profile, &c.target, false),
        Action::Login(c) => login(c, profile),
        Action::Logout(c) => logout(c, profile),
    }
}

/// The configuration of `--profile` and the store.
fn open(profile: &Option<String>) -> Result<(App, Store), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        workspace: None,
    })?;
    let store = app.open_store()?;
    Ok((app, store))
}

/// Where a file server is defined, for messages: `line 12, [mcp.servers.fs]`.
fn place_of(config: &Config, name: &str) -> String {
    match config.mcp.places.get(name) {
        Some(place) => format!("{} ({place})", config.file.display()),
        None => format!("{} ([mcp.servers.{name}])", config.file.display()),
    }
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
    let Add {
        name,
        command,
        env,
        cwd,
        url,
        header,
        bearer_env,
        oauth_client_id,
        oauth_client_secret_env,
        oauth_client_metadata_url,
        timeout,
        trusted,
        sandbox,
        replace,
    } = c;
    let oauth_flags = oauth_client_id.is_some()
        || oauth_client_secret_env.is_some()
        || oauth_client_metadata_url.is_some();
    let sandbox = match sandbox {
        Some(word) => ServerSandbox::parse(word.trim()).map_err(usage)?,
        None => ServerSandbox::None,
    };
    if let Some(problem) = server_name_problem(&name) {
        return Err(usage(problem));
    }
    let timeout = match timeout {
        Some(0) => return Err(usage("--timeout 0: a call needs at least 1 second".into())),
        Some(secs) => Duration::from_secs(secs),
        None => TIMEOUT_FROM_CONFIG,
    };
    let transport = match (command.split_first(), url) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "give either a command (after --) or --url, not both".into(),
            ))
        }
        (None, None) => {
            return Err(usage(format!(
                "say how to reach {name}: `evolve mcp add {name} -- COMMAND ARGS…` or \
                 `evolve mcp add {name} --url URL`"
            )))
        }
        (Some((program, args)), None) => {
            if !header.is_empty() || bearer_env.is_some() || oauth_flags {
                return Err(usage(
                    "--header, --bearer-env and --oauth-* are for HTTP servers (--url)".into(),
                ));
            }
            let env = env
                .iter()
                .map(|pair| parse_pair(pair, '=', "--env", "K=V"))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(problem) = env.iter().find_map(|(k, _)| env_name_problem(k)) {
                return Err(usage(format!("--env: {problem}")));
            }
            for arg in args.iter().filter(|a| {
                let p = Path::new(a.as_str());
                p.is_relative() && !a.starts_with('-') && p.is_dir()
            }) {
                eprintln!(
                    "evolve: note: {arg:?} is a relative path: the server resolves it against \
                     the directory evolve runs in — give an absolute path to be sure"
                );
            }
            Transport::Stdio {
                command: program.clone(),
                args: args.to_vec(),
                env,
                cwd: cwd.map(|d| absolute(&d)),
            }
        }
        (None, Some(url)) => {
            if !env.is_empty() || cwd.is_some() {
                return Err(usage(
                    "--env and --cwd are for programs (a command after --)".into(),
                ));
            }
            if sandbox != ServerSandbox::None {
                return Err(usage(
                    "--sandbox is for programs (a command after --): an HTTP server runs elsewhere"
                        .into(),
                ));
            }
            let url = url.trim().to_string();
            if let Some(problem) = url_problem(&url) {
                return Err(usage(format!("--url {problem}")));
            }
            let headers = header
                .iter()
                .map(|pair| parse_pair(pair, ':', "--header", "K:V"))
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(problem) = headers.iter().find_map(|(k, v)| header_problem(k, v)) {
                return Err(usage(format!("--header: {problem}")));
            }
            let bearer = match bearer_env {
                None => None,
                Some(var) => match std::env::var(&var) {
                    Ok(value) if !value.trim().is_empty() => Some(Secret::new(value.trim())),
                    _ => {
                        return Err(usage(format!(
                            "--bearer-env {var}: the variable is not set (or empty) — export \
                             {var}=… first"
                        )))
                    }
                },
            };
            let client_secret = match oauth_client_secret_env {
                None => None,
                Some(var) => match std::env::var(&var) {
                    Ok(value) if !value.trim().is_empty() => Some(Secret::new(value.trim())),
                    _ => {
                        return Err(usage(format!(
                            "--oauth-client-secret-env {var}: the variable is not set (or \
                             empty) — export {var}=… first"
                        )))
                    }
                },
            };
            let oauth = OAuthClient {
                client_id: oauth_client_id.map(|c| c.trim().to_string()),
                client_secret,
                metadata_url: oauth_client_metadata_url.map(|u| u.trim().to_string()),
            };
            if let Some(problem) = oauth_problem(&oauth) {
                return Err(usage(problem));
            }
            if !oauth.is_empty()
                && (bearer.is_some()
                    || headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("authorization")))
            {
                return Err(usage(
                    "--oauth-* settings are for `evolve mcp login`, which sends its own \
                     Authorization: drop --bearer-env (or the Authorization header)"
                        .into(),
                ));
            }
            Transport::Http {
                url,
                headers,
                bearer,
                oauth,
            }
        }
    };
    let spec = ServerSpec {
        name: name.clone(),
        transport,
        timeout,
        sandbox,
        trusted,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        disabled: false,
        roots: Vec::new(),
        source: SpecSource::Store,
    };
    let (app, store) = open(profile)?;
    if app.config.mcp.servers.iter().any(|s| s.name == name) {
        return Err(Error::Other(format!(
            "a server named {name} is defined in {} and would hide this one — choose \
             another name, or change the file",
            place_of(&app.config, &name)
        )));
    }
    if store.mcp_server(&name)?.is_some() && !replace {
        return Err(Error::Other(format!(
            "a server named {name} was already added — add --replace to replace it, or \
             `evolve mcp rm {name}` first"
        )));
    }
    store.put_mcp_server(&spec)?;
    println!(
        "added MCP server {name} ({}: {}) — `evolve mcp tools {name}` starts it and lists \
         its tools",
        kind(&spec),
        target(&spec)
    );
    if let Transport::Http { url, .. } = &spec.transport {
        if old_sse(url) {
            eprintln!(
                "evolve: warning: a URL ending in /sse is the old HTTP+SSE transport, which \
                 evolve does not speak (only streamable HTTP): if the server also offers \
                 streamable HTTP (often at /mcp instead of /sse), add it again with that URL \
                 and --replace, or run the server over stdio, e.g. through `npx mcp-remote URL`"
            );
        }
    }
    Ok(())
}

/// An endpoint whose path ends in /sse: the old HTTP+SSE transport's (`import` switches
/// such servers off; the handshake's error says so too).
fn old_sse(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.trim_end_matches('/')
        .to_ascii_lowercase()
        .ends_with("/sse")
}

/// `K=V` / `K:V` into its two halves (the value may be empty, the key not).
fn parse_pair(text: &str, sep: char, flag: &str, shape: &str) -> Result<(String, String), Error> {
    match text.split_once(sep) {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(usage(format!("{flag} {text:?}: expected {shape}"))),
    }
}

fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map_or(path.to_path_buf(), |cwd| cwd.join(path))
}

/// How a server is reached, in one line: the command and its arguments, or the URL
/// (without a `user:password@` part).
fn target(spec: &ServerSpec) -> String {
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
fn kind(spec: &ServerSpec) -> &'static str {
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

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
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

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
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

fn unknown_server(name: &str, servers: &[ServerSpec]) -> Error {
    let known: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    usage(user_level::unknown_server(name, &known))
}

/// One tool in a listing.
struct Row {
    tool: McpTool,
    /// `None`: not offered (enabled/disabled lists, a repeat).
    class: Option<Classified>,
    /// The name the model calls it by (another than `server__tool` for a name model
    /// APIs refuse), when offered.
    offered_as: Option<String>,
}

/// What listing one server gave.
enum Listing {
    Tools(Vec<Row>),
    Disabled,
    Failed(String),
}

/// Starts each server (or the one named), caches its tool list and classifies the
/// offered tools. Servers that fail are reported in their [`Listing`], not as an error.
fn list_tools(
    rt: &Runtime,
    only: Option<&str>,
    cancel: &AtomicBool,
) -> Result<Vec<(String, Listing)>, Error> {
    let specs: Vec<ServerSpec> = match only {
        Some(name) => match rt.mcp.spec(name) {
            Some(spec) => vec![spec],
            None => return Err(unknown_server(name, &rt.mcp.specs())),
        },
        None => rt.mcp.specs(),
    };
    let mut out = Vec::with_capacity(specs.len());
    for spec in &specs {
        if spec.disabled {
            out.push((spec.name.clone(), Listing::Disabled));
            continue;
        }
        let listing = match rt.mcp.list_tools(&spec.name, cancel) {
            Ok(tools) => {
                if let Err(e) = rt.store.set_mcp_tools(&spec.name, &tools, now()) {
                    log::warn!("the tool list of {} cannot be cached: {e}", spec.name);
                }
                let names = crate::agents::offered_tools(spec, &tools);
                let offered: Vec<McpTool> = tools
                    .iter()
                    .zip(&names)
                    .filter(|(_, o)| o.is_some())
                    .map(|(t, _)| t.clone())
                    .collect();
                let mut classes =
                    classify::explain(&rt.classifier(), spec, &offered, cancel).into_iter();
                let rows = tools
                    .into_iter()
                    .zip(names)
                    .map(|(tool, offered_as)| Row {
                        tool,
                        class: if offered_as.is_some() {
                            classes.next()
                        } else {
                            None
                        },
                        offered_as,
                    })
                    .collect();
                Listing::Tools(rows)
            }
            Err(e) => Listing::Failed(e.to_string()),
        };
        out.push((spec.name.clone(), listing));
    }
    Ok(out)
}

/// Prints listings as text; returns the names of the servers that failed.
fn write_listings(
    out: &mut dyn Write,
    listings: &[(String, Listing)],
) -> std::io::Result<Vec<String>> {
    let mut failed = Vec::new();
    for (server, listing) in listings {
        match listing {
            Listing::Disabled => {
                writeln!(out, "{server}: disabled (`evolve mcp enable {server}`)")?;
            }
            Listing::Failed(e) => {
                writeln!(out, "{server}: could not be listed")?;
                eprintln!("evolve: {}", printable(e, false));
                failed.push(server.clone());
            }
            Listing::Tools(rows) if rows.is_empty() => {
                writeln!(out, "{server}: no tools")?;
            }
            Listing::Tools(rows) => {
                writeln!(out, "{server}: {} tools", rows.len())?;
                let names: Vec<String> = rows
                    .iter()
                    .map(|r| full_name(server, &r.tool.name))
                    .collect();
                let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
                let origins: Vec<String> = rows
                    .iter()
                    .map(|r| match &r.class {
                        Some(c) => c.origin(),
                        None => "not offered".to_string(),
                    })
                    .collect();
                let origin_width = origins.iter().map(|o| o.chars().count()).max().unwrap_or(0);
                for ((row, name), origin) in rows.iter().zip(&names).zip(&origins) {
                    let level = row
                        .class
                        .as_ref()
                        .map_or("off".to_string(), |c| c.class.level.to_string());
                    let mut description = one_line(&row.tool.description, 80);
                    if let Some(model) = row.offered_as.as_deref().filter(|m| *m != name) {
                        description = format!("(the model calls it {model}) {description}");
                    }
                    // A definition that replaced another: what changed, and what of the
                    // person's it dropped.
                    if let Some(change) = row.class.as_ref().and_then(|c| c.change.as_ref()) {
                        description = format!("[{}] {description}", change.marker());
                    }
                    let line = format!(
                        "  {:<width$}  {level:<3}  {origin:<origin_width$}  {}",
                        printable(name, false),
                        printable(&description, false)
                    );
                    writeln!(out, "{}", line.trim_end())?;
                }
            }
        }
    }
    Ok(failed)
}

/// Listings as JSON.
fn listings_json(listings: &[(String, Listing)]) -> serde_json::Value {
    let servers: Vec<serde_json::Value> = listings
        .iter()
        .map(|(server, listing)| match listing {
            Listing::Disabled => {
                json!({"server": server, "ok": true, "disabled": true, "tools": []})
            }
            Listing::Failed(e) => json!({"server": server, "ok": false, "error": e}),
            Listing::Tools(rows) => {
                let tools: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|r| {
                        json!({
                            "name": full_name(server, &r.tool.name),
                            "tool": r.tool.name,
                            "model_name": r.offered_as,
                            "description": r.tool.description,
                            "offered": r.class.is_some(),
                            "level": r.class.as_ref().map(|c| c.class.level.name()),
                            "source": r.class.as_ref().map(|c| c.class.source),
                            "origin": r.class.as_ref().map(|c| c.origin()),
                            "classifier": r.class.as_ref().and_then(|c| c.classifier).map(Level::name),
                            "changed": r.class.as_ref().and_then(|c| c.change.as_ref()).map(|c| c.to_json()),
                        })
                    })
                    .collect();
                json!({"server": server, "ok": true, "disabled": false, "tools": tools})
            }
        })
        .collect();
    json!(servers)
}

fn tools(c: Tools, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let App { config, tokenizer } = app;
    let rt = Runtime::new(config, store, tokenizer);
    interrupt::install();
    interrupt::begin_turn();
    let listings = list_tools(&rt, c.name.as_deref(), &interrupt::CANCEL)?;
    let mut out = std::io::stdout().lock();
    let failed: Vec<String> = if c.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&listings_json(&listings)).unwrap_or_default()
        )?;
        listings
            .iter()
            .filter(|(_, l)| matches!(l, Listing::Failed(_)))
            .map(|(s, _)| s.clone())
            .collect()
    } else {
        if listings.is_empty() {
            write_servers(&mut out, &rt.config, &[], None, None)?;
        }
        write_listings(&mut out, &listings)?
    };
    rt.mcp.shutdown();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Other(format!(
            "{} of {} MCP servers could not be listed: {}",
            failed.len(),
            listings.len(),
            failed.join(", ")
        )))
    }
}

/// `/mcp tools [NAME]` in chat: the listing, errors shown, nothing ends.
pub(crate) fn chat_tools(
    rt: &Runtime,
    only: Option<&str>,
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let listings = list_tools(rt, only, cancel)?;
    let mut out = std::io::stdout().lock();
    if listings.is_empty() {
        write_servers(&mut out, &rt.config, &[], None, None)?;
    }
    write_listings(&mut out, &listings)?;
    Ok(())
}

/// What a level means in an interactive session.
/// `evolve mcp level TOOL LEVEL` and `/mcp level`: the user's level of an MCP tool, set
/// or removed; returns what to tell the user.
pub(crate) fn set_level(
    config: &Config,
    store: &Store,
    servers: &[ServerSpec],
    tool: &str,
    level: &str,
) -> Result<String, Error> {
    match user_level::set_level(config, store, servers, tool, level, now()) {
        Ok(change) => Ok(change.to_string()),
        Err(LevelError::Store(e)) => Err(Error::Store(e)),
        Err(e) => Err(usage(e.to_string())),
    }
}

fn import(c: Import, profile: &Option<String>) -> Result<(), Error> {
    let text = std::fs::read_to_string(&c.file).map_err(|source| Error::Read {
        path: c.file.clone(),
        source,
    })?;
    let mut import = servers::read_mcp_json(&text).map_err(|message| Error::Invalid {
        path: c.file.clone(),
        message,
    })?;
    if let Some(word) = &c.sandbox {
        let mode = ServerSandbox::parse(word.trim()).map_err(usage)?;
        let own: Vec<String> = own_sandbox_keys(&text);
        for spec in &mut import.servers {
            if matches!(spec.transport, Transport::Stdio { .. }) && !own.contains(&spec.name) {
                spec.sandbox = mode;
            }
        }
    }
    if import.servers.is_empty() {
        return Err(Error::Invalid {
            path: c.file.clone(),
            message: "the file lists no servers".into(),
        });
    }
    let (app, store) = open(profile)?;
    let mut clashes = Vec::new();
    for spec in &import.servers {
        if app.config.mcp.servers.iter().any(|s| s.name == spec.name) {
            clashes.push(format!(
                "{} is defined in {}",
                spec.name,
                place_of(&app.config, &spec.name)
            ));
        } else if !c.replace && store.mcp_server(&spec.name)?.is_some() {
            clashes.push(format!(
                "{} was already added (--replace replaces it)",
                spec.name
            ));
        }
    }
    if !clashes.is_empty() {
        return Err(Error::Other(format!(
            "nothing imported: {}",
            clashes.join("; ")
        )));
    }
    for spec in &import.servers {
        store.put_mcp_server(spec)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "imported {} MCP server{} from {}:",
        import.servers.len(),
        if import.servers.len() == 1 { "" } else { "s" },
        c.file.display()
    )?;
    for spec in &import.servers {
        writeln!(
            out,
            "  {}  {}: {}{}",
            spec.name,
            kind(spec),
            target(spec),
            if spec.disabled { "  [disabled]" } else { "" }
        )?;
    }
    for note in &import.notes {
        writeln!(out, "note: {note}")?;
    }
    writeln!(out, "`evolve mcp tools` starts them and lists their tools")?;
    Ok(())
}

fn toggle(profile: &Option<String>, target_name: &str, on: bool) -> Result<(), Error> {
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

/// How long `evolve mcp login` waits for the browser by default.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// `evolve mcp login`. Not inlined into `run` (measured: the binary is smaller so).
#[inline(never)]
fn login(c: Login, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    let Some(spec) = servers.iter().find(|s| s.name == c.name) else {
        return Err(unknown_server(&c.name, &servers));
    };
    let wait = match c.timeout {
        Some(0) => {
            return Err(usage(
                "--timeout 0: the browser needs at least 1 second".into(),
            ))
        }
        Some(secs) => Duration::from_secs(secs),
        None => LOGIN_WAIT,
    };
    let failed = |e: oauth::LoginError| Error::Other(e.about(&c.name));
    // Ctrl-C ends the wait (and the discovery before it) with a message, not a kill.
    interrupt::install();
    interrupt::begin_turn();
    let started = oauth::login::start(spec, &store).map_err(failed)?;
    let client = started.client_how;
    // The wait may be long: other evolve commands may use the store meanwhile.
    store.release();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "To log in to {}, open this URL in a browser on this machine:\n\n  {}\n",
        c.name, started.url
    )?;
    let opened = !c.no_browser && open_browser(&started.url);
    writeln!(
        out,
        "{}waiting up to {} s for the browser to come back to {} — Ctrl-C to stop",
        if opened {
            "(it was opened in your browser)\n"
        } else {
            ""
        },
        wait.as_secs(),
        started.redirect_uri
    )?;
    out.flush()?;
    drop(out);
    let granted = started
        .finish(&store, std::time::Instant::now() + wait, &interrupt::CANCEL)
        .map_err(failed)?;
    let scope = granted
        .scope
        .map(|s| format!("scope: {}; ", printable(&s, false)))
        .unwrap_or_default();
    let lasting = match (granted.renewable, granted.expires_in) {
        (true, _) => "; the token is renewed by itself".to_string(),
        (false, Some(secs)) => format!(
            "; the token expires in {} min and cannot be renewed: log in again then",
            secs / 60
        ),
        (false, None) => String::new(),
    };
    println!(
        "logged in to {} ({scope}client: {client}){lasting} — `evolve mcp tools {}` uses it",
        c.name, c.name
    );
    Ok(())
}

/// Opens `url` with `$BROWSER`, else `xdg-open` when there is a display; true when a
/// program was started. The URL is an argument, never a shell's input; the program
/// gets no hidden value in its environment.
fn open_browser(url: &str) -> bool {
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    let program = match std::env::var("BROWSER") {
        Ok(b) if !b.trim().is_empty() => b.trim().to_string(),
        _ if graphical => "xdg-open".to_string(),
        _ => return false,
    };
    let started = std::process::Command::new(&program)
        .arg(url)
        .env_clear()
        .envs(crate::mcp::inherited_env())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        Ok(mut child) => {
            // Reaped when it ends (a browser may run for long).
            let _ = oauth::in_background(
                "browser",
                Box::new(move || {
                    let _ = child.wait();
                }),
            );
            true
        }
        Err(e) => {
            log::info!("cannot start {program} to open the login page: {e}");
            false
        }
    }
}

/// `evolve mcp logout`. Not inlined into `run` (as `login`).
#[inline(never)]
fn logout(c: Logout, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    // A login is forgotten even when its server is gone; nothing at all is an unknown
    // server.
    let removed = store.remove_mcp_login(&c.name)?;
    if !removed && !servers.iter().any(|s| s.name == c.name) {
        return Err(unknown_server(&c.name, &servers));
    }
    if removed {
        println!(
            "logged out of {}: its tokens and the client evolve registered are forgotten (the \
             authorization server may still list the grant: revoke it there to end it)",
            c.name
        );
    } else {
        println!("{} has no login to forget", c.name);
    }
    Ok(())
}

/// The servers of an `{"mcpServers": …}` file that set their own `"sandbox"` (which
/// `--sandbox` does not override).
fn own_sandbox_keys(text: &str) -> Vec<String> {
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    ["mcpServers", "servers"]
        .iter()
        .filter_map(|k| doc.get(k).and_then(serde_json::Value::as_object))
        .flat_map(|m| m.iter())
        .filter(|(_, v)| v.get("sandbox").is_some())
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::permission::{Annotations, ClassSource, ToolClass};

    #[test]
    fn a_listing_shows_each_tool_with_its_level_and_where_it_came_from() {
        let tool = |name: &str, description: &str| McpTool {
            name: name.into(),
            description: description.into(),
            input_schema: "{}".into(),
            output_schema: None,
            annotations: Annotations::default(),
        };
        let class = |level, source, classifier| {
            Some(Classified {
                class: ToolClass { level, source },
                user: None,
                classifier,
                definition: String::new(),
                change: None,
            })
        };
        let listings = vec![
            (
                "fs".to_string(),
                Listing::Tools(vec![
                    Row {
                        tool: tool("read_file", "Read a file.\nWhole."),
                        class: class(Level::L2, ClassSource::Classifier, Some(Level::L2)),
                        offered_as: Some("fs__read_file".into()),
                    },
                    Row {
                        tool: tool("delete", "Delete \u{1b}[31m"),
                        class: class(Level::L4, ClassSource::Floor, Some(Level::L3)),
                        offered_as: Some("fs__delete".into()),
                    },
                    Row {
                        tool: tool("move", ""),
                        class: None,
                        offered_as: None,
                    },
                ]),
            ),
            ("web".to_string(), Listing::Failed("no route".into())),
            ("old".to_string(), Listing::Disabled),
        ];
        let mut out = Vec::new();
        let failed = write_listings(&mut out, &listings).expect("write");
        assert_eq!(failed, ["web"]);
        let text = String::from_utf8(out).expect("utf-8");
        let want = "fs: 3 tools\n\
                    \x20 fs__read_file  L2   classifier                          Read a file. Whole.\n\
                    \x20 fs__delete     L4   floor, destructive (classifier L3)  Delete \\u{1b}[31m\n\
                    \x20 fs__move       off  not offered\n\
                    web: could not be listed\n\
                    old: disabled (`evolve mcp enable old`)\n";
        assert_eq!(text, want);
        let json = listings_json(&listings);
        assert_eq!(json[0]["tools"][1]["level"], "L4");
        assert_eq!(json[0]["tools"][1]["source"], "floor");
        assert_eq!(json[0]["tools"][1]["classifier"], "L3");
        assert_eq!(json[0]["tools"][2]["offered"], false);
        assert_eq!(json[1]["ok"], false);
    }

    #[test]
    fn pairs_split_at_the_first_separator() {
        type Case = (&'static str, char, Option<(&'static str, &'static str)>);
        let cases: &[Case] = &[
            ("K=V", '=', Some(("K", "V"))),
            ("K=a=b", '=', Some(("K", "a=b"))),
            ("K=", '=', Some(("K", ""))),
            ("=V", '=', None),
            ("KV", '=', None),
            (
                "Authorization: Bearer x:y",
                ':',
                Some(("Authorization", "Bearer x:y")),
            ),
        ];
        for (text, sep, want) in cases {
            let got = parse_pair(text, *sep, "--x", "K=V").ok();
            let want = want.map(|(k, v)| (k.to_string(), v.to_string()));
            assert_eq!(got, want, "{text}");
        }
    }
}
