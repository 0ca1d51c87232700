//! Built-in tools: what each does, its JSON schema for the model, its fixed level
//! (core's `builtin_level`), and running it. File tools are confined to the workspace
//! (paths resolved, symlinks followed and checked); `shell` has a timeout and an output
//! cap. Whether a call may run is decided elsewhere (core's `check_call`, called by the
//! Tool agent); a tool here runs only when told to.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use evolve_core::permission::Level;
use evolve_core::Timestamp;

use crate::config::{Config, ToolsConfig};
use crate::llm::ToolSpec;
use crate::skills::Catalog;
use crate::store::Store;
use crate::text::ShellTokenizer;

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model sees (before core's truncation).
    pub content: String,
    /// The tool failed (bad arguments, file missing, non-zero exit …): reported to the
    /// model as an error, not a crash.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }
    /// A failed result; the text says what went wrong.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What a running tool may use.
pub struct ToolContext<'a> {
    /// The workspace (absolute, canonical, created if missing).
    pub workspace: &'a Path,
    /// The store (memory tool, todo list).
    pub store: &'a Store,
    /// The session the call belongs to (todo lists are per session).
    pub session: &'a str,
    /// Now.
    pub now: Timestamp,
    /// The whole configuration (memory config, tool limits).
    pub config: &'a Config,
    /// Tokenizer for memory keywords.
    pub tokenizer: &'a ShellTokenizer,
    /// Skills for `load_skill`.
    pub skills: &'a Catalog,
    /// Set by Ctrl-C: long tools (shell, http_get) stop early.
    pub cancel: &'a AtomicBool,
}

/// The built-in tools.
pub struct Builtins {
    _private: (),
}

impl Builtins {
    /// The tool set for this configuration.
    pub fn new(tools: &ToolsConfig) -> Self {
        let _ = tools;
        Builtins { _private: () }
    }

    /// Specs of every built-in tool, for the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        todo!()
    }

    /// Whether `name` is a built-in tool.
    pub fn has(&self, name: &str) -> bool {
        let _ = name;
        todo!()
    }

    /// The fixed level of a call (the `memory` tool's depends on its `action`), before
    /// argument escalation. `None` for unknown tools.
    pub fn level(&self, name: &str, arguments: &str) -> Option<Level> {
        let _ = (name, arguments);
        todo!()
    }

    /// Argument keys of `name` that hold paths (for core's escalation), and whether the
    /// tool runs its arguments as a shell command.
    pub fn path_keys(&self, name: &str) -> (&'static [&'static str], bool) {
        let _ = name;
        todo!()
    }

    /// Runs a call that was allowed. Bad arguments give an error output, never a panic.
    pub fn run(&self, name: &str, arguments: &str, ctx: &ToolContext<'_>) -> ToolOutput {
        let _ = (name, arguments, ctx);
        todo!()
    }
}
