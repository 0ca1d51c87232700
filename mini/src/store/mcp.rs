//! What the store keeps about MCP: the servers added at run time (`evolve mcp add`,
//! `import`, `/mcp`), each server's last tool list, so a turn can offer a server's
//! tools without starting it, and the OAuth login of an HTTP server ([`McpLogin`]:
//! its client and tokens, which nothing exports). Which servers exist in the end (the file's win over the
//! store's) is `mcp::servers`'s decision; what a tool's level is, `agents::mcp_levels::classify`'s.

use evolve_core::Timestamp;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::*;
use super::{Store, StoreError};
use crate::mcp_spec::{McpTool, ServerSpec, SpecSource, SEP};
use crate::secret::Secret;

/// A cached tool list as stored.
#[derive(Serialize, Deserialize)]
struct ToolList {
    tools: Vec<McpTool>,
    at: Timestamp,
}

/// An HTTP server's OAuth login (`evolve mcp login`), or what a refusal of the server
/// asked for before any login. Tokens and the client secret are [`Secret`]s: kept here
/// (the user's own 0600 file), shown nowhere. What they mean is `mcp::oauth`'s.
///
/// Stored as a JSON object written and read by hand ([`McpLogin::to_json`]): a derived
/// serde implementation of its fields cost the binary 8 KB more.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpLogin {
    /// The server's URL the login is for: its tokens go to that URL only.
    pub url: String,
    /// The resource the tokens were asked for (RFC 8707).
    pub resource: String,
    /// The authorization server (its issuer identifier).
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint: `none`,
    /// `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    /// The redirect URI evolve registered the client with, when it registered itself:
    /// the next login reuses the client if it can listen there again.
    pub registered_redirect: Option<String>,
    pub access_token: Option<Secret>,
    pub refresh_token: Option<Secret>,
    /// When the access token is to be renewed, if the server said when it expires (a
    /// little before that).
    pub expires_at: Option<Timestamp>,
    /// The scopes granted.
    pub scope: Option<String>,
    /// The scopes a refusal of the server asked for since (`WWW-Authenticate: … scope=`):
    /// the next login asks for them.
    pub wanted_scope: Option<String>,
    /// Where the server said its protected resource metadata is.
    pub resource_metadata: Option<String>,
}

/// The names of [`McpLogin`]'s text fields in the stored object, in its field order.
const TEXTS: [&str; 5] = ["url", "resource", "issuer", "token_endpoint", "client_id"];
/// … and of its optional ones (secrets exposed only here, in the user's own file).
const OPTIONS: [&str; 8] = [
    "client_secret",
    "auth_method",
    "registered_redirect",
    "access_token",
    "refresh_token",
    "scope",
    "wanted_scope",
    "resource_metadata",
];

impl McpLogin {
    /// The stored object.
    fn to_json(&self) -> Value {
        fn secret(s: &Option<Secret>) -> Option<&str> {
            s.as_ref().map(Secret::expose)
        }
        let values = [
            Some(self.url.as_str()),
            Some(&self.resource),
            Some(&self.issuer),
            Some(&self.token_endpoint),
            Some(&self.client_id),
            secret(&self.client_secret),
            Some(self.auth_method.as_str()).filter(|m| !m.is_empty()),
            self.registered_redirect.as_deref(),
            secret(&self.access_token),
            secret(&self.refresh_token),
            self.scope.as_deref(),
            self.wanted_scope.as_deref(),
            self.resource_metadata.as_deref(),
        ];
        let mut map = serde_json::Map::new();
        for (key, value) in TEXTS.iter().chain(&OPTIONS).zip(values) {
            if let Some(value) = value {
                map.insert(key.to_string(), value.into());
            }
        }
        if let Some(at) = self.expires_at {
            map.insert("expires_at".into(), Value::from(at));
        }
        Value::Object(map)
    }

    /// From the stored object; what is missing or not text is empty.
    fn from_json(doc: &Value) -> McpLogin {
        let text = |key: &str| doc.get(key).and_then(Value::as_str).map(str::to_string);
        let [url, resource, issuer, token_endpoint, client_id] =
            TEXTS.map(|k| text(k).unwrap_or_default());
        let [client_secret, auth_method, registered_redirect, access_token, refresh_token, scope, wanted_scope, resource_metadata] =
            OPTIONS.map(text);
        McpLogin {
            url,
            resource,
            issuer,
            token_endpoint,
            client_id,
            client_secret: client_secret.map(Secret::new),
            auth_method: auth_method.unwrap_or_default(),
            registered_redirect,
            access_token: access_token.map(Secret::new),
            refresh_token: refresh_token.map(Secret::new),
            expires_at: doc.get("expires_at").and_then(Value::as_i64),
            scope,
            wanted_scope,
            resource_metadata,
        }
    }
}

impl Store {
    /// A server's OAuth login, if any. Boxed: a login is large (some 330 bytes), and
    /// each hand it passes through (the read, `?`, `Option`'s combinators) copied it.
    pub fn mcp_login(&self, server: &str) -> Result<Option<Box<McpLogin>>, StoreError> {
        self.read(|txn| {
            let doc: Option<Value> = get_json(&txn.open_table(MCP_LOGINS)?, "mcp_logins", server)?;
            Ok(doc.as_ref().map(|doc| Box::new(McpLogin::from_json(doc))))
        })
    }

    /// Keeps a server's OAuth login (replacing the one before).
    pub fn put_mcp_login(&self, server: &str, login: &McpLogin) -> Result<(), StoreError> {
        self.set_mcp_login(server, Some(login)).map(drop)
    }

    /// Forgets a server's OAuth login; `false` when there was none.
    pub fn remove_mcp_login(&self, server: &str) -> Result<bool, StoreError> {
        self.set_mcp_login(server, None)
    }

    /// Keeps `login`, or forgets the login without one; whether there was one to forget.
    /// One write for both: each write's code is the whole commit, instantiated anew.
    fn set_mcp_login(&self, server: &str, login: Option<&McpLogin>) -> Result<bool, StoreError> {
        let doc = login.map(McpLogin::to_json);
        self.write(|txn| {
            let mut table = txn.open_table(MCP_LOGINS)?;
            match &doc {
                Some(doc) => put_json(&mut table, "mcp_logins", server, doc).map(|()| true),
                None => Ok(table.remove(server)?.is_some()),
            }
        })
    }

    /// The servers added at run time, in name order (source [`SpecSource::Store`]).
    pub fn mcp_servers(&self) -> Result<Vec<ServerSpec>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(MCP_SERVERS)?;
            let mut out = Vec::new();
            for row in table.iter()? {
                let (key, value) = row?;
                let mut spec: ServerSpec = decode("mcp_servers", &key.value(), value.value())?;
                spec.source = SpecSource::Store;
                out.push(spec);
            }
            Ok(out)
        })
    }

    /// The server added at run time under that name.
    pub fn mcp_server(&self, name: &str) -> Result<Option<ServerSpec>, StoreError> {
        self.read(|txn| get_json(&txn.open_table(MCP_SERVERS)?, "mcp_servers", name))
    }

    /// Adds or replaces a run-time server (kept with source [`SpecSource::Store`]). A
    /// replaced server's cached tool list is dropped: it may be another program now.
    pub fn put_mcp_server(&self, spec: &ServerSpec) -> Result<(), StoreError> {
        let mut spec = spec.clone();
        spec.source = SpecSource::Store;
        self.write(|txn| {
            let mut servers = txn.open_table(MCP_SERVERS)?;
            let before: Option<ServerSpec> = get_json(&servers, "mcp_servers", spec.name.as_str())?;
            if before.is_some_and(|b| b.transport != spec.transport) {
                txn.open_table(MCP_TOOLS)?.remove(spec.name.as_str())?;
            }
            put_json(&mut servers, "mcp_servers", spec.name.as_str(), &spec)
        })
    }

    /// Removes a run-time server with everything kept about it (its tool list, its
    /// login, the classifications of its tools and the levels set for them); `false`
    /// when there was no such server.
    pub fn remove_mcp_server(&self, name: &str) -> Result<bool, StoreError> {
        self.write(|txn| {
            let removed = txn.open_table(MCP_SERVERS)?.remove(name)?.is_some();
            if removed {
                txn.open_table(MCP_TOOLS)?.remove(name)?;
                txn.open_table(MCP_LOGINS)?.remove(name)?;
                let prefix = format!("{name}{SEP}");
                // Its definitions go too; one seen again later is a new one (with a new
                // tag), so nothing bound to the old ones comes back.
                for table in [TOOL_CLASSES, MCP_DEFINITIONS] {
                    let mut table = txn.open_table(table)?;
                    let keys: Vec<String> = table
                        .range(prefix.as_str()..)?
                        .map(|row| row.map(|(k, _)| k.value().to_string()))
                        .take_while(|k| k.as_ref().map_or(true, |k| k.starts_with(&prefix)))
                        .collect::<Result<_, _>>()?;
                    for key in keys {
                        table.remove(key.as_str())?;
                    }
                }
            }
            Ok(removed)
        })
    }

    /// The definitions kept for these tools (full names), in order, as stored (what
    /// they hold is `mcp::definition`'s).
    pub fn mcp_definitions(&self, tools: &[String]) -> Result<Vec<Option<Value>>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(MCP_DEFINITIONS)?;
            tools
                .iter()
                .map(|t| get_json(&table, "mcp_definitions", t.as_str()))
                .collect()
        })
    }

    /// Keeps definitions of tools (full names), in one transaction.
    pub fn set_mcp_definitions(&self, records: &[(String, Value)]) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(MCP_DEFINITIONS)?;
            for (tool, record) in records {
                put_json(&mut table, "mcp_definitions", tool.as_str(), record)?;
            }
            Ok(())
        })
    }

    /// A server's last tool list and when it was fetched; `None` if never listed.
    pub fn mcp_tools(&self, server: &str) -> Result<Option<(Vec<McpTool>, Timestamp)>, StoreError> {
        self.read(|txn| {
            let list: Option<ToolList> =
                get_json(&txn.open_table(MCP_TOOLS)?, "mcp_tools", server)?;
            Ok(list.map(|l| (l.tools, l.at)))
        })
    }

    /// Keeps a server's tool list as fetched at `now`.
    pub fn set_mcp_tools(
        &self,
        server: &str,
        tools: &[McpTool],
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let list = ToolList {
            tools: tools.to_vec(),
            at: now,
        };
        self.write(|txn| put_json(&mut txn.open_table(MCP_TOOLS)?, "mcp_tools", server, &list))
    }
}
