//! What the store keeps about MCP: the servers added at run time (`evolve mcp add`,
//! `import`, `/mcp`) and each server's last tool list, so a turn can offer a server's
//! tools without starting it. Which servers exist in the end (the file's win over the
//! store's) is `mcp::servers`'s decision; what a tool's level is, `mcp::classify`'s.

use evolve_core::Timestamp;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::schema::*;
use super::{Store, StoreError};
use crate::mcp_spec::{McpTool, ServerSpec, SpecSource, SEP};

/// A cached tool list as stored.
#[derive(Serialize, Deserialize)]
struct ToolList {
    tools: Vec<McpTool>,
    at: Timestamp,
}

impl Store {
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

    /// Removes a run-time server with everything kept about it (its tool list, the
    /// classifications of its tools and the levels set for them); `false` when there
    /// was no such server.
    pub fn remove_mcp_server(&self, name: &str) -> Result<bool, StoreError> {
        self.write(|txn| {
            let removed = txn.open_table(MCP_SERVERS)?.remove(name)?.is_some();
            if removed {
                txn.open_table(MCP_TOOLS)?.remove(name)?;
                let prefix = format!("{name}{SEP}");
                let mut classes = txn.open_table(TOOL_CLASSES)?;
                let keys: Vec<String> = classes
                    .range(prefix.as_str()..)?
                    .map(|row| row.map(|(k, _)| k.value().to_string()))
                    .take_while(|k| k.as_ref().map_or(true, |k| k.starts_with(&prefix)))
                    .collect::<Result<_, _>>()?;
                for key in keys {
                    classes.remove(key.as_str())?;
                }
            }
            Ok(removed)
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
