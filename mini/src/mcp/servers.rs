//! The configured servers: `[mcp.servers.NAME]` from `config.toml` and those added at run
//! time (kept in the store), merged; and reading the common `{"mcpServers": {…}}` JSON
//! that Claude Desktop, Cursor, Cline, Gemini CLI and VS Code (`{"servers": {…}}`) write.
//!
//! What it decides: the file wins over the store for a name both define (the file is
//! what the user edits by hand; the store's copy is reported and skipped), what a
//! run-time server without its own timeout or roots gets, and how each field of those
//! JSON dialects maps onto a [`ServerSpec`] — and which it cannot honour (old HTTP+SSE
//! servers are imported switched off, with a note).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::config::Config;
use crate::mcp_spec::{
    default_roots, env_name_problem, header_problem, oauth_problem, server_name_problem,
    url_problem, OAuthClient, ServerSpec, SpecSource, Transport,
};
use crate::sandbox::ServerSandbox;
use crate::secret::Secret;
use crate::store::{Store, StoreError};

/// The timeout a run-time server is kept with when none was given: "the `[mcp]`
/// `timeout_secs` of the configuration in use", filled in by [`load`].
pub const TIMEOUT_FROM_CONFIG: Duration = Duration::ZERO;

/// Every configured server: the file's first, then the store's (a store server with the
/// name of a file server is shadowed by it), each with its roots filled in.
pub fn load(config: &Config, store: &Store) -> Result<Vec<ServerSpec>, StoreError> {
    for warning in &config.mcp.warnings {
        log::warn!("{warning}");
    }
    let mut out = config.mcp.servers.clone();
    for mut spec in store.mcp_servers()? {
        if out.iter().any(|s| s.name == spec.name) {
            log::warn!(
                "the MCP server {:?} added with `evolve mcp add` is hidden by the one of the \
                 same name in {}: remove one of them (`evolve mcp rm {0}` removes the added \
                 one)",
                spec.name,
                config.file.display()
            );
            continue;
        }
        complete(&mut spec, config);
        out.push(spec);
    }
    Ok(out)
}

/// Fills in what a run-time server leaves to the configuration: its timeout and roots.
pub fn complete(spec: &mut ServerSpec, config: &Config) {
    spec.source = SpecSource::Store;
    if spec.timeout == TIMEOUT_FROM_CONFIG {
        spec.timeout = config.mcp.timeout;
    }
    if spec.roots.is_empty() {
        spec.roots = default_roots(&spec.transport);
    }
}

/// The servers of an `mcpServers` JSON file and what could not be taken over as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The servers, in name order (source [`SpecSource::Store`], timeout
    /// [`TIMEOUT_FROM_CONFIG`] unless the entry set one).
    pub servers: Vec<ServerSpec>,
    /// One line per thing the user should know (an ignored key, an SSE server imported
    /// switched off, a `${input:…}` placeholder).
    pub notes: Vec<String>,
}

/// The servers of `{"mcpServers": {NAME: {…}}}` (or VS Code's `{"servers": {…}}`),
/// with notes. Accepted per entry: `command`, `args`, `env`,
/// `cwd` (a program) or `url` / `serverUrl` / `httpUrl`, `headers` (an endpoint);
/// `type` / `transportType` (`stdio`, `http`, `streamable-http`, `sse`); `disabled`
/// (or `enabled: false`); `timeout` (seconds, or milliseconds when 1000 or more);
/// `disabledTools` / `excludeTools` and `enabledTools` / `includeTools`. Other keys
/// are ignored with a note. Comments and trailing commas (VS Code's JSONC) are read.
pub fn read_mcp_json(text: &str) -> Result<Import, String> {
    let mut notes = Vec::new();
    let doc: Value = match serde_json::from_str(text) {
        Ok(doc) => doc,
        Err(strict) => match evolve_core::json::repair(text)
            .and_then(|fixed| serde_json::from_str(&fixed).ok())
        {
            Some(doc) => {
                notes.push(format!(
                    "the file is not strict JSON ({strict}); it was read leniently (comments, \
                     trailing commas) — check the imported servers"
                ));
                doc
            }
            None => return Err(format!("not JSON: {strict}")),
        },
    };
    let Value::Object(top) = doc else {
        return Err("expected a JSON object with \"mcpServers\" (or \"servers\")".into());
    };
    let mut entries: Vec<(&String, &Value)> = Vec::new();
    let mut found = false;
    for key in ["mcpServers", "servers"] {
        match top.get(key) {
            None => {}
            Some(Value::Object(map)) => {
                found = true;
                entries.extend(map.iter());
            }
            Some(other) => {
                return Err(format!(
                    "\"{key}\" is {} — expected an object of servers by name",
                    kind(other)
                ))
            }
        }
    }
    if !found {
        let keys: Vec<&str> = top.keys().map(String::as_str).collect();
        return Err(format!(
            "no \"mcpServers\" (or \"servers\") object at the top (found: {}) — is this an \
             MCP configuration file?",
            if keys.is_empty() {
                "nothing".to_string()
            } else {
                keys.join(", ")
            }
        ));
    }
    let mut servers: Vec<ServerSpec> = Vec::new();
    for (name, entry) in entries {
        if servers.iter().any(|s| &s.name == name) {
            return Err(format!("server {name:?} is defined twice"));
        }
        let spec =
            entry_spec(name, entry, &mut notes).map_err(|e| format!("server {name:?}: {e}"))?;
        servers.push(spec);
    }
    Ok(Import { servers, notes })
}

/// The JSON type of a value, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// How an entry says it is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

/// Keys an entry may have that evolve reads.
const KNOWN_KEYS: &[&str] = &[
    "sandbox",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "serverUrl",
    "httpUrl",
    "headers",
    "type",
    "transportType",
    "disabled",
    "enabled",
    "timeout",
    "disabledTools",
    "excludeTools",
    "enabledTools",
    "includeTools",
    "oauth_client_id",
    "oauth_client_secret",
    "oauth_client_metadata_url",
];

fn entry_spec(name: &str, entry: &Value, notes: &mut Vec<String>) -> Result<ServerSpec, String> {
    if let Some(problem) = server_name_problem(name) {
        return Err(format!("{problem}; rename the entry in the file"));
    }
    let Value::Object(map) = entry else {
        return Err(format!("is {} — expected an object", kind(entry)));
    };
    let string = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(format!("\"{key}\" is {} — expected a string", kind(other))),
        }
    };
    let strings = |key: &str| -> Result<Option<Vec<String>>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s.clone()),
                    // Numbers in args are common (`"--port", 8080`): take them as written.
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!(
                        "\"{key}\" holds {} — expected strings",
                        kind(other)
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!(
                "\"{key}\" is {} — expected a list of strings",
                kind(other)
            )),
        }
    };
    let pairs = |key: &str| -> Result<Vec<(String, String)>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
                    other => Err(format!(
                        "\"{key}\".{k} is {} — expected a string",
                        kind(other)
                    )),
                })
                .collect(),
            Some(other) => Err(format!("\"{key}\" is {} — expected an object", kind(other))),
        }
    };
    let flag = |key: &str| -> Result<Option<bool>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!(
                "\"{key}\" is {} — expected true or false",
                kind(other)
            )),
        }
    };

    let declared = match string("type")?.or(string("transportType")?) {
        None => None,
        Some(t) => Some(
            match t.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
                "stdio" | "local" => Kind::Stdio,
                "http" | "streamablehttp" | "remote" => Kind::Http,
                "sse" => Kind::Sse,
                _ => {
                    return Err(format!(
                    "\"type\": {t:?} is not one evolve knows (stdio, http, streamable-http, sse)"
                ))
                }
            },
        ),
    };
    let command = string("command")?.filter(|c| !c.is_empty());
    let url = match (string("url")?, string("serverUrl")?, string("httpUrl")?) {
        (_, _, Some(u)) => Some((u, Some(Kind::Http))),
        (Some(u), _, _) | (None, Some(u), _) => Some((u, None)),
        (None, None, None) => None,
    };
    let transport_kind = match (&command, &url, declared) {
        (Some(_), Some(_), _) => {
            return Err("has both \"command\" and a URL — keep one".to_string());
        }
        (None, None, _) => {
            return Err(
                "has neither \"command\" nor \"url\" — evolve cannot tell how to reach it"
                    .to_string(),
            );
        }
        (Some(_), None, Some(Kind::Http | Kind::Sse)) => {
            return Err("says \"type\": http/sse but has no \"url\"".to_string());
        }
        (Some(_), None, _) => Kind::Stdio,
        (None, Some(_), Some(Kind::Stdio)) => {
            return Err("says \"type\": \"stdio\" but has no \"command\"".to_string());
        }
        (None, Some((_, Some(k))), _) => *k,
        (None, Some(_), Some(k)) => k,
        // No type: an endpoint ending in /sse is an old HTTP+SSE server.
        (None, Some((u, None)), None) => {
            if u.trim_end_matches('/')
                .to_ascii_lowercase()
                .ends_with("/sse")
            {
                Kind::Sse
            } else {
                Kind::Http
            }
        }
    };

    let mut disabled = flag("disabled")?.unwrap_or(false) || flag("enabled")? == Some(false);
    let transport = match transport_kind {
        Kind::Stdio => {
            let env = pairs("env")?;
            if let Some(problem) = env.iter().find_map(|(k, _)| env_name_problem(k)) {
                return Err(format!("env: {problem}"));
            }
            for (k, v) in &env {
                if v.contains("${") {
                    notes.push(format!(
                        "{name}: env {k} holds a placeholder ({}) that evolve does not fill \
                         in — set the real value with `evolve mcp add {name} --env {k}=… -- …`",
                        evolve_core::text::escape_controls(v, false)
                    ));
                }
            }
            Transport::Stdio {
                command: command.unwrap_or_default(),
                args: strings("args")?.unwrap_or_default(),
                env,
                cwd: string("cwd")?.filter(|c| !c.is_empty()).map(PathBuf::from),
            }
        }
        Kind::Http | Kind::Sse => {
            let (url, _) = url.unwrap_or_default();
            if let Some(problem) = url_problem(&url) {
                return Err(format!("url {problem}"));
            }
            let headers = pairs("headers")?;
            if let Some(problem) = headers.iter().find_map(|(k, v)| header_problem(k, v)) {
                return Err(problem);
            }
            if headers.iter().any(|(_, v)| v.contains("${")) {
                notes.push(format!(
                    "{name}: a header holds a placeholder (${{…}}) that evolve does not fill in \
                     — add the server again with the real value (`--header K:V`, or \
                     `--bearer-env VAR`)"
                ));
            }
            // Evolve's own keys: the OAuth client of its login (`evolve mcp login`).
            let oauth = OAuthClient {
                client_id: string("oauth_client_id")?.filter(|c| !c.is_empty()),
                client_secret: string("oauth_client_secret")?
                    .filter(|c| !c.is_empty())
                    .map(Secret::new),
                metadata_url: string("oauth_client_metadata_url")?.filter(|c| !c.is_empty()),
            };
            if let Some(problem) = oauth_problem(&oauth) {
                return Err(problem);
            }
            if transport_kind == Kind::Sse {
                disabled = true;
                notes.push(format!(
                    "{name}: uses the old HTTP+SSE transport, which evolve does not speak \
                     (only streamable HTTP): imported switched off — if the server also \
                     offers streamable HTTP (often at /mcp instead of /sse), add it again \
                     with that URL"
                ));
            }
            Transport::Http {
                url,
                headers,
                bearer: None,
                oauth,
            }
        }
    };
    for key in ["args", "env", "cwd"] {
        if transport_kind != Kind::Stdio && map.contains_key(key) {
            notes.push(format!("{name}: \"{key}\" ignored (it is an HTTP server)"));
        }
    }
    if transport_kind == Kind::Stdio && map.contains_key("headers") {
        notes.push(format!(
            "{name}: \"headers\" ignored (it is a program, not an HTTP server)"
        ));
    }

    let timeout = match map.get("timeout") {
        None | Some(Value::Null) => TIMEOUT_FROM_CONFIG,
        Some(Value::Number(n)) => match n.as_u64().filter(|t| *t > 0) {
            Some(t) if t >= 1000 => Duration::from_secs(t.div_ceil(1000)),
            Some(t) => Duration::from_secs(t),
            None => {
                return Err(format!(
                    "\"timeout\": {n} — expected a positive whole number"
                ))
            }
        },
        Some(other) => {
            return Err(format!(
                "\"timeout\" is {} — expected a number",
                kind(other)
            ))
        }
    };
    let mut disabled_tools = strings("disabledTools")?.unwrap_or_default();
    disabled_tools.extend(strings("excludeTools")?.unwrap_or_default());
    let enabled_tools = match (strings("enabledTools")?, strings("includeTools")?) {
        (None, None) => None,
        (a, b) => Some(a.into_iter().chain(b).flatten().collect()),
    };
    let ignored: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !KNOWN_KEYS.contains(k))
        .collect();
    if !ignored.is_empty() {
        notes.push(format!(
            "{name}: ignored {} (levels are set with `evolve mcp level`)",
            ignored
                .iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Evolve's own key: how the kernel confines a program (`evolve mcp import --sandbox`
    // sets it for every program of a file).
    let sandbox = match (string("sandbox")?, transport_kind) {
        (None, _) => ServerSandbox::None,
        (Some(word), Kind::Stdio) => ServerSandbox::parse(word.trim())?,
        (Some(_), _) => {
            notes.push(format!(
                "{name}: \"sandbox\" ignored (it is an HTTP server: nothing runs here)"
            ));
            ServerSandbox::None
        }
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        timeout,
        sandbox,
        trusted: false,
        enabled_tools,
        disabled_tools,
        disabled,
        roots: Vec::new(),
        source: SpecSource::Store,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, args: &[&str], env: &[(&str, &str)]) -> Transport {
        Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            cwd: None,
        }
    }

    fn http(url: &str, headers: &[(&str, &str)]) -> Transport {
        Transport::Http {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            bearer: None,
            oauth: Default::default(),
        }
    }

    #[test]
    fn the_dialects_of_other_agents_import() {
        // (what, file, [(name, transport, disabled)], a note containing)
        type Want = (&'static str, Transport, bool);
        let cases: Vec<(&str, &str, Vec<Want>, Option<&str>)> = vec![
            (
                "Claude Desktop",
                r#"{"mcpServers": {
                    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
                    "github": {"command": "docker", "args": ["run", "-i", "ghcr.io/github/github-mcp-server"],
                               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}}
                }}"#,
                vec![
                    (
                        "filesystem",
                        stdio("npx", &["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], &[]),
                        false,
                    ),
                    (
                        "github",
                        stdio(
                            "docker",
                            &["run", "-i", "ghcr.io/github/github-mcp-server"],
                            &[("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_x")],
                        ),
                        false,
                    ),
                ],
                None,
            ),
            (
                "Cursor: url without a type is streamable HTTP; disabled respected",
                r#"{"mcpServers": {"remote": {"url": "http://127.0.0.1:3001/mcp",
                     "headers": {"Authorization": "Bearer t"}, "disabled": true}}}"#,
                vec![(
                    "remote",
                    http("http://127.0.0.1:3001/mcp", &[("Authorization", "Bearer t")]),
                    true,
                )],
                None,
            ),
            (
                "VS Code: servers, type, JSONC comments and trailing commas",
                "{\n // my servers\n \"servers\": {\"time\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"mcp-server-time\"],},\n \"api\": {\"type\": \"http\", \"url\": \"https://h.example/mcp\"}},\n \"inputs\": []}",
                vec![
                    ("api", http("https://h.example/mcp", &[]), false),
                    ("time", stdio("uvx", &["mcp-server-time"], &[]), false),
                ],
                Some("read leniently"),
            ),
            (
                "an old SSE server is imported switched off, with a note",
                r#"{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                                   "guess": {"serverUrl": "http://127.0.0.1:9/sse/"}}}"#,
                vec![
                    ("guess", http("http://127.0.0.1:9/sse/", &[]), true),
                    ("old", http("http://127.0.0.1:9/sse", &[]), true),
                ],
                Some("old HTTP+SSE transport"),
            ),
            (
                "Cline: extra keys noted, timeout in seconds",
                r#"{"mcpServers": {"t": {"command": "node", "args": ["s.js", 8080], "alwaysAllow": ["x"], "timeout": 30}}}"#,
                vec![("t", stdio("node", &["s.js", "8080"], &[]), false)],
                Some("\"alwaysAllow\""),
            ),
            (
                "VS Code input placeholders are noted",
                r#"{"servers": {"gh": {"command": "gh-mcp", "env": {"TOKEN": "${input:token}"}}}}"#,
                vec![("gh", stdio("gh-mcp", &[], &[("TOKEN", "${input:token}")]), false)],
                Some("placeholder"),
            ),
        ];
        for (what, file, want, note) in cases {
            let import = read_mcp_json(file).unwrap_or_else(|e| panic!("{what}: {e}"));
            let got: Vec<(String, Transport, bool)> = import
                .servers
                .iter()
                .map(|s| (s.name.clone(), s.transport.clone(), s.disabled))
                .collect();
            let want: Vec<(String, Transport, bool)> = want
                .into_iter()
                .map(|(n, t, d)| (n.to_string(), t, d))
                .collect();
            assert_eq!(got, want, "{what}");
            assert!(import
                .servers
                .iter()
                .all(|s| s.source == SpecSource::Store && !s.trusted));
            match note {
                Some(n) => assert!(
                    import.notes.iter().any(|x| x.contains(n)),
                    "{what}: {n:?} not in {:?}",
                    import.notes
                ),
                None => assert!(import.notes.is_empty(), "{what}: {:?}", import.notes),
            }
        }
    }

    #[test]
    fn timeouts_and_tool_lists_are_taken_over() {
        let file = r#"{"mcpServers": {
            "a": {"command": "x", "timeout": 600000, "excludeTools": ["rm"], "includeTools": ["ls", "rm"]},
            "b": {"command": "y", "timeout": 45, "disabledTools": ["w"], "enabled": false},
            "c": {"command": "z"}
        }}"#;
        let servers = read_mcp_json(file).expect("parses").servers;
        let t: Vec<u64> = servers.iter().map(|s| s.timeout.as_secs()).collect();
        assert_eq!(t, [600, 45, 0]);
        assert_eq!(
            servers[0].enabled_tools,
            Some(vec!["ls".into(), "rm".into()])
        );
        assert!(!servers[0].offers("rm") && servers[0].offers("ls") && !servers[0].offers("cat"));
        assert_eq!(servers[1].disabled_tools, ["w"]);
        assert!(servers[1].disabled);
        assert!(!servers[2].disabled && servers[2].enabled_tools.is_none());
    }

    #[test]
    fn bad_files_say_which_entry_and_what_is_wrong() {
        let cases: &[(&str, &[&str])] = &[
            ("not json at all", &["not JSON"]),
            ("[1, 2]", &["expected a JSON object"]),
            (r#"{"tools": {}}"#, &["no \"mcpServers\"", "tools"]),
            (r#"{"mcpServers": []}"#, &["\"mcpServers\" is a list"]),
            (
                r#"{"mcpServers": {"a": "npx"}}"#,
                &["server \"a\"", "a string"],
            ),
            (r#"{"mcpServers": {"a": {}}}"#, &["server \"a\"", "neither"]),
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}"#,
                &["server \"a\"", "both"],
            ),
            (
                r#"{"mcpServers": {"my server": {"command": "x"}}}"#,
                &["\"my server\"", "not a usable MCP server name"],
            ),
            (
                r#"{"mcpServers": {"a__b": {"command": "x"}}}"#,
                &["\"a__b\"", "__"],
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": "-y pkg"}}}"#,
                &["server \"a\"", "\"args\" is a string"],
            ),
            (
                r#"{"mcpServers": {"a": {"url": "ftp://h/mcp"}}}"#,
                &["server \"a\"", "http://"],
            ),
            (
                r#"{"mcpServers": {"a": {"type": "websocket", "url": "http://h/"}}}"#,
                &["server \"a\"", "websocket"],
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}}}"#,
                &["\"a\" is defined twice"],
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "timeout": -5}}}"#,
                &["server \"a\"", "timeout"],
            ),
        ];
        for (file, wants) in cases {
            let e = read_mcp_json(file).expect_err(file);
            for want in *wants {
                assert!(e.contains(want), "{file}: {want:?} not in {e}");
            }
        }
    }

    #[test]
    fn default_roots_are_the_existing_absolute_directories() {
        let dir = crate::testing::TempDir::new("roots");
        let d = dir.path().to_string_lossy().into_owned();
        let missing = dir.path().join("missing").to_string_lossy().into_owned();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").expect("write");
        let f = file.to_string_lossy().into_owned();
        let t = Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), d.clone(), missing, f, "relative".into()],
            env: Vec::new(),
            cwd: Some(PathBuf::from("/")),
        };
        assert_eq!(default_roots(&t), [PathBuf::from(&d), PathBuf::from("/")]);
        assert!(default_roots(&http("http://h/mcp", &[])).is_empty());
    }
}
