//! What a turn offers the model from MCP: every enabled tool of every enabled server as
//! `<server>__<tool>` with its schema and level.

use std::sync::atomic::AtomicBool;

use evolve_core::permission::ToolClass;

use super::{McpTool, ServerSpec};
use crate::agents::Runtime;
use crate::llm::ToolSpec;

/// One MCP tool as a turn sees it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `<server>__<tool>`.
    pub full_name: String,
    /// The server's name.
    pub server: String,
    /// The tool as the server describes it.
    pub tool: McpTool,
    /// Its level before the arguments are looked at.
    pub class: ToolClass,
}

/// The MCP tools of one turn.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<Entry>,
    /// Servers that could not be listed, with why (shown to the user, not the model).
    pub problems: Vec<String>,
}

impl Catalog {
    /// The tools of every enabled server: the live list when the server is connected, else
    /// the store's cached list, else the server is started and listed (and the list
    /// cached). New or changed tools are classified.
    pub fn prepare(rt: &Runtime, cancel: &AtomicBool) -> Catalog {
        let _ = (rt, cancel);
        Catalog::default()
    }

    /// The tools, in server then tool order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool of that full name.
    pub fn get(&self, full_name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.full_name == full_name)
    }

    /// What the model sees.
    pub fn specs(&self) -> Vec<ToolSpec> {
        Vec::new()
    }
}

/// The spec of a server, for callers holding only an entry.
pub fn spec_of<'a>(rt: &'a Runtime, entry: &Entry) -> Option<&'a ServerSpec> {
    rt.mcp.spec(&entry.server)
}
