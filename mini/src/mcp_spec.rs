//! What an MCP server is, as the configuration, the store and the client all see it:
//! [`ServerSpec`] (its [`Transport`], timeout, confinement, tool lists, roots and
//! [`SpecSource`]) and [`McpTool`] (one tool as a server describes it), with the rules
//! every place that takes a definition applies — the name rule (`<server>__<tool>`),
//! URLs, headers, environment names — and the roots a server gets when none are given.
//!
//! A leaf: it reads no file and talks to no server. `config` checks `[mcp.servers.*]`
//! into these types, the store keeps the servers added at run time, `mcp` connects.

use std::path::{Path, PathBuf};
use std::time::Duration;

use evolve_core::permission::Annotations;
use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// Between a server's name and its tool's in the names the model sees.
pub const SEP: &str = "__";

/// The default per-call timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// `<server>__<tool>`.
pub fn full_name(server: &str, tool: &str) -> String {
    format!("{server}{SEP}{tool}")
}

/// Splits `<server>__<tool>` at the first `__` (server names cannot contain it).
pub fn split_name(full: &str) -> Option<(&str, &str)> {
    let (server, tool) = full.split_once(SEP)?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Longest function name OpenAI-compatible APIs accept.
pub const MAX_MODEL_NAME: usize = 64;

/// Whether a model API takes `name` as a function name: 1–64 of `[A-Za-z0-9_-]`.
pub fn model_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_MODEL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The names the model calls a server's tools by, in the order given: `<server>__<tool>`
/// where a model API takes it; otherwise (the spec allows `.` and `/`, any length) the
/// same with every other character as `_`, cut to fit and always ended with `_` and four
/// hex digits of the tool's own name — so no tool of the server, listed before or after,
/// ever changes another's name. `None` for a name listed twice (an API refuses two
/// functions of one name; the first is kept) or a tag that collides. Stable: grants,
/// turn records and the user's settings keep their meaning from list to list.
pub fn model_names(server: &str, tools: &[&str]) -> Vec<Option<String>> {
    let mut seen = std::collections::HashSet::new();
    let firsts: Vec<bool> = tools.iter().map(|t| seen.insert(*t)).collect();
    let mut taken: std::collections::HashSet<String> = tools
        .iter()
        .map(|t| full_name(server, t))
        .filter(|f| model_safe(f))
        .collect();
    let mut names: Vec<Option<String>> = vec![None; tools.len()];
    for (i, tool) in tools.iter().enumerate() {
        if !firsts[i] {
            continue;
        }
        let full = full_name(server, tool);
        if model_safe(&full) {
            names[i] = Some(full);
            continue;
        }
        let clean: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let tag = format!("_{:04x}", fnv1a(tool.as_bytes()) & 0xffff);
        let mut name = full_name(server, &clean);
        name.truncate(MAX_MODEL_NAME.saturating_sub(tag.len()));
        name.push_str(&tag);
        if model_safe(&name) && split_name(&name).is_some() && taken.insert(name.clone()) {
            names[i] = Some(name);
        }
    }
    names
}

/// FNV-1a, 32 bits: a short tag that stays the same from run to run.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// A server name is 1–32 of `[A-Za-z0-9_-]`, not containing `__`, not starting with `-`
/// and not ending with `_` (`t_` + `__` + `echo` would read as server `t`).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('-')
        && !name.ends_with('_')
        && !name.contains(SEP)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Transport {
    /// A child process speaking JSON-RPC over stdin/stdout; its stderr goes to the log.
    Stdio {
        /// The program (looked up on PATH).
        command: String,
        /// Its arguments.
        #[serde(default)]
        args: Vec<String>,
        /// Extra environment variables (the rest of evolve's environment is inherited).
        #[serde(default)]
        env: Vec<(String, String)>,
        /// Working directory (default: evolve's).
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers sent with every request (values may be secrets: never shown).
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// `Authorization: Bearer …` (kept in the store as it is; never shown).
        #[serde(default, with = "secret_opt")]
        bearer: Option<Secret>,
        /// How evolve identifies itself when it logs in to the server with OAuth
        /// (`evolve mcp login`); empty: it registers itself.
        #[serde(default)]
        oauth: OAuthClient,
    },
}

/// The OAuth client evolve is to a server's authorization server, when the user set
/// one (`oauth_client_id` …); without one evolve registers itself there (RFC 7591).
///
/// Kept as a JSON object of the fields that are set (`client_id`, `client_secret`,
/// `metadata_url`), (de)serialized by hand: the derived implementation (with its
/// sequence form and field visitor, instantiated for every deserializer a server's
/// transport goes through) cost the binary more.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OAuthClient {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (never shown).
    pub client_secret: Option<Secret>,
    /// The https URL of a client ID metadata document the user hosts for evolve: the
    /// client id where the authorization server takes such documents.
    pub metadata_url: Option<String>,
}

impl OAuthClient {
    /// Nothing set: evolve registers itself.
    pub fn is_empty(&self) -> bool {
        self.client_id.is_none() && self.client_secret.is_none() && self.metadata_url.is_none()
    }
}

/// The fields that are set (the secret exposed only here: the store is the user's own
/// 0600 file).
impl Serialize for OAuthClient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = [
            ("client_id", self.client_id.as_deref()),
            (
                "client_secret",
                self.client_secret.as_ref().map(Secret::expose),
            ),
            ("metadata_url", self.metadata_url.as_deref()),
        ];
        s.collect_map(fields.into_iter().filter_map(|(k, v)| Some((k, v?))))
    }
}

/// A field absent or null is not set; unknown fields are ignored.
impl<'de> Deserialize<'de> for OAuthClient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = OAuthClient;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an OAuth client")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OAuthClient, A::Error> {
                let mut out = OAuthClient::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "client_id" => out.client_id = map.next_value()?,
                        "client_secret" => {
                            out.client_secret = map.next_value::<Option<String>>()?.map(Secret::new)
                        }
                        "metadata_url" => out.metadata_url = map.next_value()?,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// Where a server's definition lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecSource {
    /// `[mcp.servers.NAME]` in `config.toml` (edit the file to change it).
    ConfigFile,
    /// Added with `evolve mcp add` / `import` / `/mcp add` (kept in the store).
    Store,
}

/// One MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSpec {
    /// Its name (the `<server>` of `<server>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Per-call timeout.
    #[serde(with = "secs")]
    pub timeout: Duration,
    /// How a stdio server is confined by the kernel (`sandbox = "workspace"`,
    /// `"read-only"`; `none` by default).
    #[serde(default)]
    pub sandbox: crate::sandbox::ServerSandbox,
    /// The user trusts its annotations: a `readOnlyHint: true` is believed over the
    /// classifier (the tool is L2).
    #[serde(default)]
    pub trusted: bool,
    /// Only these tools are offered (`None` = all).
    #[serde(default)]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// The whole server is switched off.
    #[serde(default)]
    pub disabled: bool,
    /// Directories outside the workspace its tools may name in path arguments (core's
    /// `extra_roots`): set with `roots = [...]`, else the absolute directories among a
    /// stdio server's arguments and its `cwd` (how filesystem and git servers are told
    /// where to work).
    #[serde(default)]
    pub roots: Vec<PathBuf>,
    /// Where the definition lives.
    pub source: SpecSource,
}

impl ServerSpec {
    /// The tool is offered to the model (enabled/disabled lists).
    pub fn offers(&self, tool: &str) -> bool {
        !self.disabled_tools.iter().any(|t| t == tool)
            && self
                .enabled_tools
                .as_ref()
                .is_none_or(|only| only.iter().any(|t| t == tool))
    }
}

/// A secret kept in the store (the store is the user's own 0600 file); any other output
/// masks it.
pub(crate) mod secret_opt {
    use crate::secret::Secret;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &Option<Secret>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(secret) => s.serialize_some(secret.expose()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(Secret::new))
    }
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_secs(u64::deserialize(d)?))
    }
}

/// One tool as a server describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// The server's name for it.
    pub name: String,
    /// Its description (may be empty).
    #[serde(default)]
    pub description: String,
    /// Its JSON schema for the arguments, as JSON text (`{"type":"object",…}`).
    pub input_schema: String,
    /// The risk hints it came with.
    #[serde(default)]
    pub annotations: Annotations,
    /// Its JSON schema for `structuredContent`, as JSON text, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<String>,
}

/// What is wrong with a server name, for every place that takes one (the file, `evolve
/// mcp add`, an imported JSON file).
pub fn server_name_problem(name: &str) -> Option<String> {
    (!valid_server_name(name)).then(|| {
        format!(
            "{name:?} is not a usable MCP server name: use 1 to 32 letters, digits, `_` or \
             `-`, not starting with `-`, not ending with `_` and without `__` (the model sees \
             its tools as NAME__TOOL)"
        )
    })
}

/// An HTTP endpoint: `http(s)://host…` without spaces. The error says what is wrong.
pub fn url_problem(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
    else {
        return Some(format!(
            "{url:?} must start with http:// or https:// (e.g. http://127.0.0.1:3001/mcp)"
        ));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Some(format!(
            "{url:?} has no host (e.g. http://127.0.0.1:3001/mcp)"
        ));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!("{url:?} contains a space or a control character"));
    }
    None
}

/// What is wrong with a server's OAuth client settings, if anything: a secret needs an
/// id, and a client ID metadata document is an https URL with a path.
pub fn oauth_problem(oauth: &OAuthClient) -> Option<String> {
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        return Some(
            "an OAuth client secret is set without its client id (oauth_client_id)".to_string(),
        );
    }
    let url = oauth.metadata_url.as_deref()?;
    let path = url
        .strip_prefix("https://")
        .and_then(|rest| rest.find('/').map(|i| &rest[i..]));
    match path {
        Some(p) if p.len() > 1 && !url.contains(char::is_whitespace) => None,
        _ => Some(format!(
            "the client ID metadata document {url:?} must be an https URL with a path (e.g. \
             https://example.com/evolve-client.json)"
        )),
    }
}

/// What is wrong with an HTTP header, if anything: names are HTTP tokens, values one
/// line.
pub fn header_problem(name: &str, value: &str) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Some(format!(
            "header name {name:?} is not valid (letters, digits and - only, e.g. X-Api-Key)"
        ));
    }
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Some(format!("the value of header {name} contains a line break"));
    }
    None
}

/// What is wrong with an environment variable's name, if anything.
pub fn env_name_problem(name: &str) -> Option<String> {
    (name.is_empty() || name.contains('=') || name.contains('\0'))
        .then(|| format!("environment variable name {name:?} is not valid (no `=`, not empty)"))
}

/// The directories a server works in when none are configured: the absolute paths
/// among a stdio server's arguments that are existing directories, and its `cwd` —
/// how filesystem and git servers are told where to work
/// (`npx @modelcontextprotocol/server-filesystem /home/me/notes`).
pub fn default_roots(transport: &Transport) -> Vec<PathBuf> {
    let Transport::Stdio { args, cwd, .. } = transport else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = args
        .iter()
        .map(Path::new)
        .filter(|p| p.is_absolute() && p.is_dir())
        .map(Path::to_path_buf)
        .collect();
    if let Some(dir) = cwd.as_ref().filter(|d| d.is_absolute()) {
        if !roots.contains(dir) {
            roots.push(dir.clone());
        }
    }
    roots
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_clients_are_kept_as_the_fields_set() {
        let full = OAuthClient {
            client_id: Some("id-1".into()),
            client_secret: Some(Secret::new("s3cret")),
            metadata_url: Some("https://me.example/c.json".into()),
        };
        let text = serde_json::to_string(&full).expect("JSON");
        assert_eq!(
            text,
            r#"{"client_id":"id-1","client_secret":"s3cret","metadata_url":"https://me.example/c.json"}"#
        );
        assert_eq!(
            serde_json::from_str::<OAuthClient>(&text).expect("back"),
            full
        );
        let id_only = OAuthClient {
            client_id: Some("id-2".into()),
            ..OAuthClient::default()
        };
        assert_eq!(
            serde_json::to_string(&id_only).expect("JSON"),
            r#"{"client_id":"id-2"}"#
        );
        assert_eq!(
            serde_json::to_string(&OAuthClient::default()).expect("JSON"),
            "{}"
        );
        let read = |text: &str| serde_json::from_str::<OAuthClient>(text);
        assert_eq!(
            read(r#"{"client_id":"id-2","client_secret":null,"other":[1]}"#).expect("read"),
            id_only
        );
        assert!(read(r#"{"client_id":1}"#).is_err());
        assert!(read("[]").is_err());
        // Inside a server's transport, as the store keeps it (and before OAuth: none).
        let http = |oauth| Transport::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: Vec::new(),
            bearer: None,
            oauth,
        };
        let kept = serde_json::to_string(&http(full.clone())).expect("JSON");
        assert_eq!(
            serde_json::from_str::<Transport>(&kept).expect("back"),
            http(full)
        );
        let before = r#"{"type":"http","url":"https://mcp.example.com/mcp","headers":[]}"#;
        assert_eq!(
            serde_json::from_str::<Transport>(before).expect("read"),
            http(OAuthClient::default())
        );
    }

    #[test]
    fn odd_tool_names_get_names_a_model_takes_and_keep_them() {
        let long = "x".repeat(70);
        let tools = [
            "notes.read",
            "ns/echo",
            "notes_read",
            "echo",
            "echo",
            "a.b",
            "a/b",
            long.as_str(),
            "读",
        ];
        let names = model_names("fs", &tools);
        let tag = |t: &str| format!("_{:04x}", fnv1a(t.as_bytes()) & 0xffff);
        let want: Vec<Option<String>> = vec![
            // `notes_read` is a real tool's name; the dotted one has a tag of its own.
            Some(format!("fs__notes_read{}", tag("notes.read"))),
            Some(format!("fs__ns_echo{}", tag("ns/echo"))),
            Some("fs__notes_read".into()),
            Some("fs__echo".into()),
            None,
            Some(format!("fs__a_b{}", tag("a.b"))),
            Some(format!("fs__a_b{}", tag("a/b"))),
            Some(format!("{}{}", &full_name("fs", &long)[..59], tag(&long))),
            Some(format!("fs___{}", tag("读"))),
        ];
        assert_eq!(names, want);
        for name in names.iter().flatten() {
            assert!(model_safe(name), "{name}");
            assert_eq!(split_name(name).map(|(s, _)| s), Some("fs"), "{name}");
        }
        // Stable, and a new odd tool renames nobody.
        assert_eq!(model_names("fs", &tools), want);
        let mut more = tools.to_vec();
        more.insert(0, "a:b");
        let again = model_names("fs", &more);
        assert_eq!(again[1..], want[..]);
        assert!(again[0].as_deref().is_some_and(model_safe), "{again:?}");
    }
}
