//! The Tool agent: lists the tools the model may call, checks each call against the
//! permission rules (core's `check_call`: the tool's class raised by its arguments,
//! then the decision for this interface and session), runs the allowed ones and cuts
//! their output by the core's rule. Asking a person is the Manager's (through the
//! interface); the audit entries are written here.

use std::sync::atomic::AtomicBool;

use evolve_core::history::truncate_tool_output;
use evolve_core::permission::{
    check_call, CallCheck, ClassSource, EscalationContext, Grants, Level, Policy, ToolClass,
};
use evolve_core::Timestamp;

use super::describe_agent;
use super::runtime::Runtime;
use crate::llm::ToolSpec;
use crate::tools::{ToolContext, ToolOutput};

/// Tool listing, permission checks and execution.
pub struct ToolAgent;

describe_agent!(
    ToolAgent,
    "tool",
    "Tool",
    "offers tools to the model, checks every call against the six permission levels and runs the allowed ones"
);

impl ToolAgent {
    /// The tools offered to the model.
    pub fn specs(&self, rt: &Runtime) -> Vec<ToolSpec> {
        rt.tools.specs()
    }

    /// The permission check of one call. Unknown tools are classed L4 (unclassified):
    /// they cannot run anyway, and the check says so in the audit log.
    pub fn check(
        &self,
        rt: &Runtime,
        name: &str,
        arguments: &str,
        grants: &Grants,
        policy: &Policy,
    ) -> CallCheck {
        let (class, path_keys, is_shell) = match rt.tools.level(name, arguments) {
            Some(fixed) => {
                let (keys, is_shell) = rt.tools.path_keys(name);
                // The shell's level comes from the command line: the configured tool
                // level (L5 by default, L4 at the lowest), lowered only by configured
                // prefixes of read-only commands, dangerous patterns L5 regardless.
                let base = if is_shell {
                    shell_level(rt, arguments)
                } else {
                    fixed
                };
                let user = rt
                    .config
                    .tools
                    .levels
                    .iter()
                    .find(|(t, _)| t == name)
                    .map(|(_, l)| *l);
                let class = match user {
                    // A user level may raise a built-in tool, never lower it.
                    Some(u) if u > base => ToolClass {
                        level: u,
                        source: ClassSource::UserOverride,
                    },
                    _ => ToolClass {
                        level: base,
                        source: ClassSource::BuiltIn,
                    },
                };
                (class, keys, is_shell)
            }
            None => (
                ToolClass {
                    level: Level::L4,
                    source: ClassSource::Unclassified,
                },
                &[][..],
                false,
            ),
        };
        let workspace = rt.workspace.to_string_lossy();
        let ctx = EscalationContext {
            workspace_root: &workspace,
            path_keys,
            is_shell,
            extra_roots: &[],
        };
        check_call(name, class, arguments, &ctx, grants, policy)
    }

    /// Runs an allowed call and cuts its output (128 KiB, head and tail).
    pub fn run(
        &self,
        rt: &Runtime,
        session: &str,
        name: &str,
        arguments: &str,
        now: Timestamp,
        cancel: &AtomicBool,
    ) -> ToolOutput {
        if !rt.workspace.is_dir() {
            return ToolOutput::error(format!(
                "the workspace {} does not exist or is not a directory",
                rt.workspace.display()
            ));
        }
        let ctx = ToolContext {
            workspace: &rt.workspace,
            store: &rt.store,
            session,
            now,
            config: &rt.config,
            tokenizer: &rt.tokenizer,
            skills: &rt.skills,
            cancel,
        };
        let mut out = rt.tools.run(name, arguments, &ctx);
        // Whatever a tool found, the API key never reaches the model (or the history).
        if let Some(key) = rt.config.model.api_key.as_ref().map(|k| k.expose()) {
            if !key.is_empty() && out.content.contains(key) {
                out.content = out.content.replace(key, "[redacted]");
            }
        }
        let max = rt.config.core.history.max_tool_output_bytes;
        if out.content.len() > max {
            out.content = truncate_tool_output(&out.content, max).into_owned();
        }
        out
    }
}

/// The level the core gives a shell command line (for the `shell` tool).
fn shell_level(rt: &Runtime, arguments: &str) -> Level {
    let command = evolve_core::permission::string_arg(arguments, "command").unwrap_or_default();
    evolve_core::permission::shell_command_level(&command, &rt.config.core.permission)
}
