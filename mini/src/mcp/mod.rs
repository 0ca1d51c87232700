//! MCP: tools from any MCP server, through a client of evolve's own on plain threads.
//!
//! MCP is JSON-RPC 2.0 over newline-delimited stdio or streamable HTTP; the client is
//! small: [`jsonrpc`] matches answers to the callers waiting for them and answers what
//! servers send on their own, [`stdio`] runs a server as a child process, [`http`] speaks
//! streamable HTTP on the ureq the model client already uses, and [`conn`] does the
//! handshake and the `tools/*` methods. Callers block; nothing in evolve is async.
//!
//! - [`ServerSpec`] (defined in [`crate::mcp_spec`], below the configuration and the
//!   store): one server, from `config.toml` (`[mcp.servers.NAME]`) or added at run time
//!   (`evolve mcp add`, kept in the store); [`servers`] merges the two and reads the
//!   common `{"mcpServers": {…}}` JSON.
//! - [`Hub`]: starts servers lazily on first use, lists and calls tools with a per-call
//!   timeout, restarts a crashed or hung server on next use (with backoff), refreshes
//!   a tool list on `notifications/tools/list_changed`, and shuts every child down on drop.
//! - [`definition`]: each tool's definition (description, canonical schema,
//!   annotations) as a fingerprint, and whether it changed: grants, user levels and
//!   classifications hold for the definition they were made for only.
//! - `agents/catalog.rs` (beside the turn, not here): what a turn offers the model (`<server>__<tool>` with schemas and
//!   levels), from the live lists or the store's cache, so a server is only started when
//!   one of its tools is called or its list is unknown.
//! - `agents/mcp_levels/` (policy, not here): the level of each MCP tool (the user's
//!   override, else the cheap model's classification cached with the definition's
//!   fingerprint, never below the annotations' floor) and the user's own levels.
//! - [`oauth`]: logging in to an HTTP server with OAuth (`evolve mcp login`) and using
//!   the login on its requests.

mod answers;
mod conn;
pub mod definition;
pub mod elicit;
mod http;
mod hub;
pub mod jsonrpc;
pub mod lines;
pub mod oauth;
mod reap;
mod schema;
pub mod servers;
mod stdio;

use crate::mcp_spec::Transport;

/// The names of servers and their tools as the client and its callers speak of them;
/// defined in [`crate::mcp_spec`], which the configuration and the store share with the
/// client without depending on it.
pub use crate::mcp_spec::{split_name, McpTool, ServerSpec};
pub use http::shown_url;
pub use hub::Hub;
pub use reap::kill_all_groups;

/// The values no child started without confinement may inherit: every HTTP server's
/// token and header values (read through `bearer_token_env` and the like). Kept here,
/// not removed from the process environment: `std::env::remove_var` while other threads
/// run (a profile switch in `serve`, `/mcp` in chat) is undefined behaviour, so the
/// environment is only read after start-up and each child gets its own.
static HIDDEN: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Makes the secrets of `specs` the values children never inherit (see [`HIDDEN`]).
/// Values shorter than 8 characters are not secrets worth the collateral.
pub fn hide_secret_variables(specs: &[ServerSpec]) {
    let mut secrets: Vec<String> = Vec::new();
    for spec in specs {
        if let Transport::Http {
            headers, bearer, ..
        } = &spec.transport
        {
            secrets.extend(bearer.as_ref().map(|b| b.expose().to_string()));
            secrets.extend(headers.iter().map(|(_, v)| v.clone()));
        }
    }
    secrets.retain(|s| s.len() >= 8);
    *HIDDEN
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = secrets;
}

/// Values hidden for good (the model's API key of every profile loaded), beside the
/// servers' secrets that [`hide_secret_variables`] replaces on each reload.
static HIDDEN_KEYS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Adds a value no unconfined child may inherit (an API key), for the rest of the run.
pub fn hide_value(value: &str) {
    if value.len() < 8 {
        return;
    }
    let mut keys = HIDDEN_KEYS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !keys.iter().any(|k| k == value) {
        keys.push(value.to_string());
    }
}

/// Evolve's environment without the variables holding a hidden value: what an
/// unconfined stdio server starts with (before its own `env`).
pub(crate) fn inherited_env() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let hidden = HIDDEN
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let keys = HIDDEN_KEYS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::env::vars_os()
        .filter(|(_, value)| {
            let value = value.to_string_lossy();
            !hidden
                .iter()
                .chain(keys.iter())
                .any(|s| value.contains(s.as_str()))
        })
        .collect()
}

/// A `notifications/progress` a server sent about a running call: how far it is, of
/// how much if it knows, and what it is doing (one line, controls escaped).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

impl Progress {
    /// It says it reached its total (the last notice, always shown).
    pub fn finished(&self) -> bool {
        self.total.is_some_and(|t| self.progress >= t)
    }

    /// `3/10 copying` as chat and the trace show it.
    pub fn line(&self) -> String {
        let number = |n: f64| {
            if n.fract() == 0.0 && n.abs() < 1e15 {
                format!("{}", n as i64)
            } else {
                format!("{n:.2}")
            }
        };
        let mut line = match self.total {
            Some(total) => format!("{}/{}", number(self.progress), number(total)),
            None => number(self.progress),
        };
        if let Some(message) = self.message.as_deref().filter(|m| !m.is_empty()) {
            line.push(' ');
            line.push_str(message);
        }
        line
    }
}

/// What a running call tells its caller: the server's progress, and its questions for a
/// person (`elicitation/create`), which the caller asks its person — never the model.
pub trait CallEvents {
    fn progress(&mut self, _progress: &Progress) {}
    /// Declined unless a person can be asked.
    fn elicit(&mut self, _question: &elicit::Elicitation) -> elicit::ElicitReply {
        elicit::ElicitReply::Decline
    }
}

/// A caller with nobody to ask and nothing to show.
pub struct NoEvents;

impl CallEvents for NoEvents {}

/// What a tool call gave back.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// Its content as text (text parts joined; images and other parts described).
    pub content: String,
    /// The server said `isError: true`.
    pub is_error: bool,
}

/// What went wrong talking to a server. The text is what the user (and the model, as a
/// tool error) sees: it names the server and what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum McpError {
    /// No server of that name is configured (or it is disabled).
    UnknownServer(String),
    /// The server could not be started or did not complete the handshake.
    Start { server: String, detail: String },
    /// The call did not finish within the server's timeout (it was cancelled; the
    /// server is restarted only if it seems hung, see [`hub`]).
    Timeout {
        server: String,
        tool: String,
        secs: u64,
    },
    /// The server died or the connection broke during the call.
    Broken { server: String, detail: String },
    /// The server is waiting out its restart backoff.
    Backoff { server: String, secs: u64 },
    /// The server answered with a JSON-RPC error.
    Server { server: String, detail: String },
    /// An HTTP server refused evolve's authorization and its OAuth login could not mend
    /// it (`detail` says to run `evolve mcp login`).
    Login { server: String, detail: String },
    /// Ctrl-C.
    Cancelled,
    /// The hub was shut down (evolve is exiting).
    Shutdown,
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McpError::UnknownServer(s) => write!(
                f,
                "no MCP server named {s:?} is configured (see `evolve mcp list`)"
            ),
            McpError::Start { server, detail } => write!(
                f,
                "MCP server {server:?} could not be started: {detail} (check it with `evolve mcp tools {server}`)"
            ),
            McpError::Timeout { server, tool, secs } => write!(
                f,
                "MCP tool {tool:?} of server {server:?} did not answer within {secs} s; the call was cancelled"
            ),
            McpError::Broken { server, detail } => write!(
                f,
                "MCP server {server:?} stopped during the call ({detail}); it will be restarted on next use"
            ),
            McpError::Backoff { server, secs } => write!(
                f,
                "MCP server {server:?} keeps failing; next restart attempt in {secs} s"
            ),
            McpError::Server { server, detail } => {
                write!(f, "MCP server {server:?} refused the request: {detail}")
            }
            McpError::Login { server, detail } => write!(f, "MCP server {server:?}: {detail}"),
            McpError::Cancelled => f.write_str("cancelled"),
            McpError::Shutdown => f.write_str("the MCP connections are shutting down"),
        }
    }
}

impl std::error::Error for McpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_values_never_reach_an_unconfined_child_and_the_environment_is_not_written() {
        const KEY: &str = "sk-hidden-unit-4242";
        std::env::set_var("EVOLVE_UNIT_HIDDEN_KEY", format!("Bearer {KEY}"));
        std::env::set_var("EVOLVE_UNIT_PLAIN", "kept");
        hide_value(KEY);
        let names: Vec<String> = inherited_env()
            .into_iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n == "EVOLVE_UNIT_HIDDEN_KEY"));
        assert!(names.iter().any(|n| n == "EVOLVE_UNIT_PLAIN"));
        // The process's own environment is left as it was: only children are spared.
        assert!(std::env::var("EVOLVE_UNIT_HIDDEN_KEY").is_ok());
        std::env::remove_var("EVOLVE_UNIT_HIDDEN_KEY");
        std::env::remove_var("EVOLVE_UNIT_PLAIN");
    }
}
