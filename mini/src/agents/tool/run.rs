//! Running an allowed call: a built-in tool in the workspace, confined by its level
//! ([`RunAs`]), or an MCP tool through its server; the output redacted of secrets and
//! cut by the core's rule before the model sees it.

use crate::cancel::Cancel;

use evolve_core::history::truncate_tool_output;
use evolve_core::permission::redact;
use evolve_core::Timestamp;

use super::{ToolAgent, TurnTools};
use crate::agents::runtime::Runtime;
use crate::tools::{RunAs, ToolContext, ToolOutput};

impl ToolAgent {
    /// Runs an allowed call as its check and the turn's sources say ([`RunAs`]: a shell
    /// command is confined by the level, and started without network when `offline`; a
    /// memory the model adds in a turn with world text is the world's) and cuts its
    /// output (head and tail) to the configured cap (128 KiB) or a third of the model's
    /// window, whichever is smaller. An MCP server's progress notices and questions for a
    /// person go to `events`.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        rt: &Runtime,
        tools: &TurnTools,
        session: &str,
        name: &str,
        arguments: &str,
        run_as: RunAs,
        now: Timestamp,
        cancel: &Cancel,
        events: &mut dyn crate::mcp::CallEvents,
    ) -> ToolOutput {
        let mut out = if rt.tools.has(name) {
            self.run_builtin(rt, session, name, arguments, run_as, now, cancel)
        } else if let Some(entry) = self.mcp_entry(tools, name) {
            let tool = &entry.tool.name;
            match rt.mcp.call(&entry.server, tool, arguments, cancel, events) {
                Ok(outcome) => ToolOutput {
                    content: outcome.content,
                    is_error: outcome.is_error,
                },
                Err(e) => {
                    // What to do about a login is the user's to know, not only the model's.
                    if matches!(e, crate::mcp::McpError::Login { .. }) {
                        log::warn!("{e}");
                    }
                    ToolOutput::error(e.to_string())
                }
            }
        } else {
            ToolOutput::error(self.unknown(tools, name))
        };
        // Whatever a tool found, the API key — or a piece of it long enough to matter —
        // never reaches the model (or the history).
        if let Some(key) = rt.config.model.api_key.as_ref().map(|k| k.expose()) {
            if let Some(clean) = redact(&out.content, key) {
                out.content = clean;
            }
        }
        // At most the configured cap, and at most a third of what the model's window
        // holds (about 4 bytes a token): a result the history would have to drop whole
        // is worth less than its head and tail.
        let window = rt
            .config
            .model
            .context_window
            .saturating_sub(rt.config.model.reserved_output);
        let max = rt
            .config
            .core
            .history
            .max_tool_output_bytes
            .min(window * 4 / 3)
            .max(1024);
        if out.content.len() > max {
            out.content = truncate_tool_output(&out.content, max).into_owned();
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn run_builtin(
        &self,
        rt: &Runtime,
        session: &str,
        name: &str,
        arguments: &str,
        run_as: RunAs,
        now: Timestamp,
        cancel: &Cancel,
    ) -> ToolOutput {
        if !rt.workspace.is_dir() {
            return ToolOutput::error(format!(
                "the workspace {} does not exist or is not a directory",
                rt.workspace.display()
            ));
        }
        let skills = rt.skills.current();
        let ctx = ToolContext {
            workspace: &rt.workspace,
            store: &rt.store,
            session,
            now,
            config: &rt.config,
            tokenizer: &rt.tokenizer,
            skills: &skills,
            cancel,
            level: run_as.level,
            offline: run_as.offline,
            world: run_as.world,
        };
        rt.tools.run(name, arguments, &ctx)
    }
}
