//! `evolve mcp add` and `evolve mcp import`: a server spelled on the command line, or
//! every server of an `mcpServers` file, checked before anything is kept.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use argh::FromArgs;

use super::list::{kind, target};
use super::{open, place_of, usage};
use crate::error::Error;
use crate::mcp::servers::{self, TIMEOUT_FROM_CONFIG};
use crate::mcp_spec::{
    env_name_problem, header_problem, oauth_problem, server_name_problem, url_problem, OAuthClient,
    ServerSpec, SpecSource, Transport,
};
use crate::sandbox::ServerSandbox;
use crate::secret::Secret;

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
pub(super) struct Add {
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

/// add every server of an mcpServers JSON file, as written by Claude Desktop, Cursor, Cline or VS Code
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "import",
    example = "{command_name} ~/.config/Claude/claude_desktop_config.json",
    example = "{command_name} .vscode/mcp.json --replace",
    note = "The file holds {{\"mcpServers\": {{NAME: {{\"command\", \"args\", \"env\"}} or {{\"url\", \"headers\"}}}}}} (VS Code: \"servers\"). Old HTTP+SSE servers are imported switched off: evolve speaks streamable HTTP."
)]
pub(super) struct Import {
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

pub(super) fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
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
        return Err(Error::Conflict(format!(
            "a server named {name} is defined in {} and would hide this one — choose \
             another name, or change the file",
            place_of(&app.config, &name)
        )));
    }
    if store.mcp_server(&name)?.is_some() && !replace {
        return Err(Error::Conflict(format!(
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

pub(super) fn import(c: Import, profile: &Option<String>) -> Result<(), Error> {
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
        return Err(Error::Conflict(format!(
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
#[path = "add_tests.rs"]
mod tests;
