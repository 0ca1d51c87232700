//! `[mcp]` of `config.toml`: the per-call timeout and the servers defined in the file,
//! checked into [`ServerSpec`]s.
//!
//! What it decides: what a server definition must say (exactly one of `command` and
//! `url`, and only the keys of that kind of server), what a missing setting means (the
//! `[mcp]` timeout, not trusted, every tool offered, roots from the arguments), and
//! where in the file a server is defined, so that every error — and `evolve mcp rm` of
//! a server the file defines — names its line. Unknown keys are rejected by the raw
//! types (`file.rs`) with their line, like the rest of the file. Connecting is the
//! `mcp` module's.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::context::Context;
use super::file::{RawMcp, RawServer};
use super::{ConfigError, McpConfig};
use crate::mcp_spec::{
    default_roots, env_name_problem, header_problem, oauth_problem, server_name_problem,
    url_problem, OAuthClient, ServerSpec, SpecSource, Transport,
};
use crate::sandbox::ServerSandbox;
use crate::secret::Secret;

/// Where in `config.toml` a server is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// 1-based.
    pub line: usize,
    /// `mcp.servers.NAME` or `profiles.P.mcp.servers.NAME`.
    pub table: String,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, [{}]", self.line, self.table)
    }
}

/// Turns `[mcp]` (after the profile is merged) into the [`McpConfig`].
pub(super) fn resolve_mcp(raw: RawMcp, ctx: &Context<'_>) -> Result<McpConfig, ConfigError> {
    let RawMcp {
        timeout_secs,
        servers,
    } = raw;
    let d = McpConfig::default();
    let timeout = ctx.seconds("mcp.timeout_secs", timeout_secs, d.timeout)?;
    let mut out = McpConfig { timeout, ..d };
    for (name, raw) in servers.unwrap_or_default() {
        let place = server_place(ctx.text, ctx.profile, &name);
        let spec = resolve_server(&name, raw, timeout, ctx, place.as_ref(), &mut out)?;
        if let Some(place) = place {
            out.places.insert(name, place);
        }
        out.servers.push(spec);
    }
    Ok(out)
}

fn resolve_server(
    name: &str,
    raw: RawServer,
    default_timeout: Duration,
    ctx: &Context<'_>,
    place: Option<&Place>,
    out: &mut McpConfig,
) -> Result<ServerSpec, ConfigError> {
    let RawServer {
        command,
        args,
        env,
        cwd,
        url,
        headers,
        bearer_token,
        bearer_token_env,
        oauth_client_id,
        oauth_client_secret,
        oauth_client_secret_env,
        oauth_client_metadata_url,
        timeout_secs,
        trusted,
        enabled_tools,
        disabled_tools,
        disabled,
        roots,
        sandbox,
    } = raw;
    let key = format!("mcp.servers.{name}");
    let fail = |message: String| -> ConfigError {
        let at = match place {
            Some(p) => format!("{p}: "),
            None => format!("[{key}]: "),
        };
        ctx.invalid(format!(
            "{at}{message} — fix it, then run `evolve config check`"
        ))
    };
    if let Some(problem) = server_name_problem(name) {
        return Err(fail(problem));
    }
    let only_for = |present: bool, what: &str, kind: &str| -> Result<(), ConfigError> {
        if present {
            Err(fail(format!(
                "`{what}` only applies to a server with `{kind}`"
            )))
        } else {
            Ok(())
        }
    };
    let transport = match (command, url) {
        (Some(_), Some(_)) => {
            return Err(fail(
                "sets both `command` and `url` — a server is either a program to start \
                 (command, args) or an HTTP endpoint (url); keep one"
                    .to_string(),
            ))
        }
        (None, None) => {
            return Err(fail(
                "sets neither `command` nor `url` — give the program to start (command = \
                 \"npx\", args = [...]) or the endpoint (url = \"http://…/mcp\")"
                    .to_string(),
            ))
        }
        (Some(command), None) => {
            only_for(headers.is_some(), "headers", "url")?;
            only_for(bearer_token.is_some(), "bearer_token", "url")?;
            only_for(bearer_token_env.is_some(), "bearer_token_env", "url")?;
            only_for(oauth_client_id.is_some(), "oauth_client_id", "url")?;
            only_for(oauth_client_secret.is_some(), "oauth_client_secret", "url")?;
            only_for(
                oauth_client_secret_env.is_some(),
                "oauth_client_secret_env",
                "url",
            )?;
            only_for(
                oauth_client_metadata_url.is_some(),
                "oauth_client_metadata_url",
                "url",
            )?;
            let command = command.trim().to_string();
            if command.is_empty() {
                return Err(fail(
                    "`command` is empty — name the program to start".into(),
                ));
            }
            let env: Vec<(String, String)> = env.unwrap_or_default().into_iter().collect();
            if let Some(problem) = env.iter().find_map(|(k, _)| env_name_problem(k)) {
                return Err(fail(format!("env: {problem}")));
            }
            let cwd = cwd
                .map(|c| ctx.path_setting(&format!("{key}.cwd"), &c))
                .transpose()?;
            Transport::Stdio {
                command,
                args: args.unwrap_or_default(),
                env,
                cwd,
            }
        }
        (None, Some(url)) => {
            only_for(sandbox.is_some(), "sandbox", "command")?;
            only_for(args.is_some(), "args", "command")?;
            only_for(env.is_some(), "env", "command")?;
            only_for(cwd.is_some(), "cwd", "command")?;
            let url = url.trim().to_string();
            if let Some(problem) = url_problem(&url) {
                return Err(fail(format!("url {problem}")));
            }
            let headers: Vec<(String, String)> = headers.unwrap_or_default().into_iter().collect();
            if let Some(problem) = headers.iter().find_map(|(k, v)| header_problem(k, v)) {
                return Err(fail(problem));
            }
            if !headers.is_empty() {
                out.secrets_in_file = true;
            }
            let bearer = match (bearer_token, bearer_token_env) {
                (Some(_), Some(_)) => {
                    return Err(fail(
                        "sets both `bearer_token` and `bearer_token_env` — keep one".into(),
                    ))
                }
                (Some(token), None) => {
                    out.secrets_in_file = true;
                    Some(Secret::new(token.trim())).filter(|t| !t.is_empty())
                }
                (None, Some(var)) => {
                    let var = var.trim();
                    let value = (ctx.env)(var)
                        .and_then(|v| v.into_string().ok())
                        .map(|v| v.trim().to_string())
                        .filter(|v| !v.is_empty());
                    if value.is_none() {
                        out.warnings.push(format!(
                            "{key}.bearer_token_env = \"{var}\" names an environment \
                             variable that is not set: the server is sent no token — \
                             export {var}=… before starting evolve"
                        ));
                    }
                    value.map(Secret::new)
                }
                (None, None) => None,
            };
            let client_secret =
                match (oauth_client_secret, oauth_client_secret_env) {
                    (Some(_), Some(_)) => return Err(fail(
                        "sets both `oauth_client_secret` and `oauth_client_secret_env` — keep one"
                            .into(),
                    )),
                    (Some(secret), None) => {
                        out.secrets_in_file = true;
                        Some(Secret::new(secret.trim())).filter(|t| !t.is_empty())
                    }
                    (None, Some(var)) => {
                        let var = var.trim();
                        let value = (ctx.env)(var)
                            .and_then(|v| v.into_string().ok())
                            .map(|v| v.trim().to_string())
                            .filter(|v| !v.is_empty());
                        if value.is_none() {
                            out.warnings.push(format!(
                                "{key}.oauth_client_secret_env = \"{var}\" names an environment \
                             variable that is not set: the login goes without a client secret"
                            ));
                        }
                        value.map(Secret::new)
                    }
                    (None, None) => None,
                };
            let oauth = OAuthClient {
                client_id: oauth_client_id
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty()),
                client_secret,
                metadata_url: oauth_client_metadata_url.map(|u| u.trim().to_string()),
            };
            if let Some(problem) = oauth_problem(&oauth) {
                return Err(fail(problem));
            }
            Transport::Http {
                url,
                headers,
                bearer,
                oauth,
            }
        }
    };
    let timeout = ctx.seconds(
        &format!("{key}.timeout_secs"),
        timeout_secs,
        default_timeout,
    )?;
    let tool_list = |what: &str, list: Option<Vec<String>>| -> Result<_, ConfigError> {
        let Some(list) = list else { return Ok(None) };
        let list: Vec<String> = list.into_iter().map(|t| t.trim().to_string()).collect();
        if list.iter().any(String::is_empty) {
            return Err(fail(format!("`{what}` has an empty tool name")));
        }
        Ok(Some(list))
    };
    let enabled_tools = tool_list("enabled_tools", enabled_tools)?;
    let disabled_tools = tool_list("disabled_tools", disabled_tools)?.unwrap_or_default();
    let roots = match roots {
        Some(list) => list
            .iter()
            .map(|r| ctx.path_setting(&format!("{key}.roots"), r))
            .collect::<Result<Vec<PathBuf>, _>>()?,
        None => default_roots(&transport),
    };
    let sandbox = match sandbox {
        Some(word) => ServerSandbox::parse(word.trim()).map_err(fail)?,
        None => ServerSandbox::None,
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        timeout,
        sandbox,
        trusted: trusted.unwrap_or(false),
        enabled_tools,
        disabled_tools,
        disabled: disabled.unwrap_or(false),
        roots,
        source: SpecSource::ConfigFile,
    })
}

/// Where server `name` is defined in `text`: the active profile's definition if it
/// has one, else the top level's. A definition is a `[mcp.servers.NAME]` header, a
/// `NAME = {…}` line under `[mcp.servers]`, or a `servers.NAME = {…}` line under
/// `[mcp]` (and the same under `[profiles.P]`).
pub fn server_place(text: &str, profile: &str, name: &str) -> Option<Place> {
    let in_profile = |prefix: &[&str]| find_definition(text, prefix, name);
    if profile != super::DEFAULT_PROFILE {
        if let Some(line) = in_profile(&["profiles", profile, "mcp", "servers"]) {
            return Some(Place {
                line,
                table: format!("profiles.{profile}.mcp.servers.{}", quoted_key(name)),
            });
        }
    }
    in_profile(&["mcp", "servers"]).map(|line| Place {
        line,
        table: format!("mcp.servers.{}", quoted_key(name)),
    })
}

/// The line of the definition of `name` in the table `prefix`.
fn find_definition(text: &str, prefix: &[&str], name: &str) -> Option<usize> {
    let mut full: Vec<&str> = prefix.to_vec();
    full.push(name);
    let mut table: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(header) = trimmed
            .strip_prefix('[')
            .filter(|h| !h.starts_with('['))
            .and_then(|h| h.split_once(']'))
            .map(|(h, _)| h)
        {
            table = split_dotted(header);
            if table == full {
                return Some(i + 1);
            }
            continue;
        }
        if trimmed.starts_with('#') {
            continue;
        }
        let Some((key, _)) = trimmed.split_once('=') else {
            continue;
        };
        let mut path = table.clone();
        path.extend(split_dotted(key));
        if path.len() >= full.len() && path[..full.len()] == full[..] {
            return Some(i + 1);
        }
    }
    None
}

/// A dotted TOML key as its parts, unquoted (`a."b.c" . d` → `a`, `b.c`, `d`).
fn split_dotted(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in key.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => quote = Some(c),
            (None, '.') => parts.push(std::mem::take(&mut current).trim().to_string()),
            (None, c) => current.push(c),
        }
    }
    parts.push(current.trim().to_string());
    parts
}

/// A key as written in a header: bare when it can be.
fn quoted_key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// The servers as `config show` prints them: every setting, secrets (bearer tokens,
/// header and environment values, which often carry tokens) masked.
pub fn servers_json(servers: &[ServerSpec]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = servers
        .iter()
        .map(|s| (s.name.clone(), server_json(s)))
        .collect();
    serde_json::Value::Object(map)
}

/// One server for `config show` and `evolve mcp list --json`, secrets masked.
pub fn server_json(s: &ServerSpec) -> serde_json::Value {
    use serde_json::json;
    let masked = |pairs: &[(String, String)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Secret::new(v.as_str()).masked()))
            .collect()
    };
    let mut doc = match &s.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!({
            "command": command,
            "args": args,
            "env": masked(env),
            "cwd": cwd.as_ref().map(|p| p.display().to_string()),
        }),
        Transport::Http {
            url,
            headers,
            bearer,
            oauth,
        } => {
            let mut doc = json!({
                "url": crate::secret::display_url(url),
                "headers": masked(headers),
                "bearer_token": bearer.as_ref().map(Secret::masked),
            });
            if !oauth.is_empty() {
                doc["oauth_client_id"] = json!(oauth.client_id);
                doc["oauth_client_secret"] =
                    json!(oauth.client_secret.as_ref().map(Secret::masked));
                doc["oauth_client_metadata_url"] = json!(oauth.metadata_url);
            }
            doc
        }
    };
    if let serde_json::Value::Object(map) = &mut doc {
        map.insert("timeout_secs".into(), json!(s.timeout.as_secs()));
        map.insert("trusted".into(), json!(s.trusted));
        if matches!(s.transport, Transport::Stdio { .. }) {
            map.insert("sandbox".into(), json!(s.sandbox.as_str()));
        }
        map.insert("enabled_tools".into(), json!(s.enabled_tools));
        map.insert("disabled_tools".into(), json!(s.disabled_tools));
        map.insert("disabled".into(), json!(s.disabled));
        let roots: Vec<String> = s.roots.iter().map(|p| p.display().to_string()).collect();
        map.insert("roots".into(), json!(roots));
    }
    doc
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
