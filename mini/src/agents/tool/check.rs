//! The permission check of one call: its class raised by its arguments (core's
//! `check_call`; for an MCP tool, the class its server's definition was given), then the
//! decision for this interface and session, then the egress rule over the turn's
//! provenance for what a call would send off the machine.

use evolve_core::history::{Message, Role};
use evolve_core::permission::{
    arg_strings, check_call, check_defined_call, check_egress, confined_shell_level, string_arg,
    CallCheck, ClassSource, Egress, EscalationContext, Grants, Level, Policy, StringKind,
    ToolClass,
};
use evolve_core::provenance::Provenance;

use super::{ToolAgent, TurnTools, MORE_TOOLS};
use crate::agents::catalog::Entry;
use crate::agents::runtime::Runtime;

impl ToolAgent {
    /// The permission check of one call: its class raised by its arguments, then — for a
    /// call that sends data off the machine — the egress rule with the turn's
    /// `provenance` (core's `check_egress`: `http_get`'s URL; every value of an MCP tool
    /// that is not closed-world, where what the same server returned in the turn's
    /// `earlier` messages may go back to it).
    #[allow(clippy::too_many_arguments)]
    pub fn check(
        &self,
        rt: &Runtime,
        tools: &TurnTools,
        name: &str,
        arguments: &str,
        grants: &Grants,
        policy: &Policy,
        provenance: &Provenance,
        earlier: &[Message],
    ) -> CallCheck {
        let check = self.check_alone(rt, tools, name, arguments, grants, policy);
        if !provenance.has_world() {
            return check;
        }
        let mut returned: Vec<&str> = Vec::new();
        let (parts, host) = if name == "http_get" && rt.tools.has(name) {
            let url = string_arg(arguments, "url").unwrap_or_default();
            let host = url_host(&url);
            (vec![url], host)
        } else if let Some(entry) = self.mcp_entry(tools, name).filter(|_| !rt.tools.has(name)) {
            if entry.tool.annotations.open_world_hint == Some(false) {
                return check;
            }
            let same_server = |m: &&Message| {
                m.role == Role::Tool
                    && m.name
                        .as_deref()
                        .and_then(|n| self.mcp_entry(tools, n))
                        .is_some_and(|e| e.server == entry.server)
            };
            returned.extend(
                earlier
                    .iter()
                    .filter(same_server)
                    .map(|m| m.content.as_str()),
            );
            (sent_values(arguments), None)
        } else {
            return check;
        };
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        check_egress(
            check,
            name,
            &Egress {
                parts: &parts,
                host: host.as_deref(),
                returned: &returned,
            },
            provenance,
            &rt.config.tools.http_hosts,
            grants,
            policy,
        )
    }

    /// The check of one call on its own (class and arguments). Unknown tools are
    /// classed L4 (unclassified): they cannot run anyway, and the check says so in the
    /// audit log.
    fn check_alone(
        &self,
        rt: &Runtime,
        tools: &TurnTools,
        name: &str,
        arguments: &str,
        grants: &Grants,
        policy: &Policy,
    ) -> CallCheck {
        if name == MORE_TOOLS || name == crate::agents::subtasks::SUBTASKS {
            // more_tools only describes tools: L0, nothing runs. subtasks runs nothing
            // itself: each of its sub-turns' calls is checked on its own (L1: it costs
            // model calls).
            let level = if name == MORE_TOOLS {
                Level::L0
            } else {
                Level::L1
            };
            let class = ToolClass {
                level,
                source: ClassSource::BuiltIn,
            };
            let ctx = EscalationContext {
                workspace_root: "",
                path_keys: &[],
                is_shell: false,
                extra_roots: &[],
            };
            return check_call(name, class, "{}", &ctx, grants, policy);
        }
        if !rt.tools.has(name) {
            if let Some(entry) = self.mcp_entry(tools, name) {
                return self.check_mcp(rt, entry, arguments, grants, policy);
            }
        }
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

    /// An MCP call: the tool's class (see `agents::mcp_levels::classify`) raised by its arguments
    /// like any tool's — paths outside the workspace and the server's roots, secrets,
    /// dangerous commands anywhere in the arguments.
    fn check_mcp(
        &self,
        rt: &Runtime,
        entry: &Entry,
        arguments: &str,
        grants: &Grants,
        policy: &Policy,
    ) -> CallCheck {
        let roots: Vec<String> = rt
            .mcp
            .spec(&entry.server)
            .map(|s| {
                s.roots
                    .iter()
                    .map(|r| r.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
        let workspace = rt.workspace.to_string_lossy();
        let ctx = EscalationContext {
            workspace_root: &workspace,
            path_keys: &[],
            is_shell: false,
            extra_roots: &roots,
        };
        // An "always" holds for the definition it was given for, no other.
        check_defined_call(
            &entry.full_name,
            &entry.definition,
            entry.class,
            arguments,
            &ctx,
            grants,
            policy,
        )
    }
}

/// The host of an `http`/`https` URL, lower-cased, without user info, port or brackets.
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host_port.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// What an MCP call sends: every value of its arguments (strings and numbers; not the
/// keys, which the tool's schema names, nor `true`, `false` and `null`).
fn sent_values(arguments: &str) -> Vec<String> {
    arg_strings(arguments)
        .into_iter()
        .filter(|s| matches!(s.kind, StringKind::Value | StringKind::Whole))
        .map(|s| s.text)
        .filter(|t| !matches!(t.trim(), "true" | "false" | "null"))
        .collect()
}

/// The level the core gives a shell command line (for the `shell` tool), given whether
/// the kernel confines what it runs (without that, L4 at least).
fn shell_level(rt: &Runtime, arguments: &str) -> Level {
    let command = evolve_core::permission::string_arg(arguments, "command").unwrap_or_default();
    confined_shell_level(
        &command,
        &rt.config.core.permission,
        crate::sandbox::status().kernel(),
    )
}
