//! The Tool agent: lists the tools the model may call, checks each call against the
//! permission rules (core's `check_call`: the tool's class raised by its arguments,
//! then the decision for this interface and session), runs the allowed ones and cuts
//! their output by the core's rule. Asking a person is the Manager's (through the
//! interface); the audit entries are written here.

use std::sync::Arc;

use evolve_core::history::{truncate_tool_output, Message, Role};
use evolve_core::permission::{
    arg_strings, check_call, check_defined_call, check_egress, confined_shell_level, redact,
    string_arg, CallCheck, ClassSource, Egress, EscalationContext, Grants, Level, Policy,
    StringKind, ToolClass,
};
use evolve_core::provenance::Provenance;
use evolve_core::text::KeywordSet;
use evolve_core::turn::offer::{choose, grow, Candidate, OfferInput};
use evolve_core::Timestamp;

use super::catalog::{Catalog, Entry};
use super::runtime::Runtime;
use crate::cancel::Cancel;
use crate::llm::ToolSpec;
use crate::tools::{Builtins, RunAs, ToolContext, ToolOutput};

/// Tool listing, permission checks and execution.
pub struct ToolAgent;

impl super::Agent for ToolAgent {
    super::describe!(Tool, "Tool", "offers tools to the model, checks every call against the six permission levels and runs the allowed ones");
    fn close(&self, rt: &Runtime, _wait: std::time::Duration) {
        rt.mcp.shutdown();
    }
}

/// The tools of one turn: the built-in ones and a snapshot of the MCP servers' tools,
/// listed when the turn starts (and again when a server says its list changed). The
/// permission check and the run of a call use the entry the model was shown; turns of
/// other sessions running at the same time have their own.
pub struct TurnTools {
    mcp: Option<Arc<Catalog>>,
    generation: u64,
    /// Every tool's schema and keywords, in the order the model sees them.
    cards: Vec<(ToolSpec, KeywordSet)>,
    /// Tools the model asked for with `more_tools` in this turn.
    requested: Vec<String>,
    /// The tools the session has been offered in full, in the order first offered:
    /// offered again on every step (a later request then repeats the earlier one's
    /// tools as its prefix, which a model server's prompt cache reuses).
    offered: Vec<String>,
    /// How many of `offered` the session had stored when the turn began.
    offered_stored: usize,
}

impl TurnTools {
    /// No tools: for a turn that calls neither the model nor a tool (a parked turn
    /// closed by a new message).
    pub fn none() -> TurnTools {
        TurnTools {
            mcp: None,
            generation: 0,
            cards: Vec::new(),
            requested: Vec::new(),
            offered: Vec::new(),
            offered_stored: 0,
        }
    }

    /// Starts from the tools the session has been offered (its stored list).
    pub fn with_offered(mut self, offered: Vec<String>) -> TurnTools {
        self.offered_stored = offered.len();
        self.offered = offered;
        self
    }

    /// The session's offered tools when this turn offered new ones (to be stored).
    pub fn offered_to_store(&mut self) -> Option<Vec<String>> {
        (self.offered.len() > self.offered_stored).then(|| {
            self.offered_stored = self.offered.len();
            self.offered.clone()
        })
    }
}

/// The tool that names the tools not offered in full, and offers those the model asks
/// for from the next step on.
pub const MORE_TOOLS: &str = "more_tools";

impl ToolAgent {
    /// The tools a turn starts with.
    pub fn for_turn(&self, rt: &Runtime, cancel: &Cancel) -> TurnTools {
        let generation = rt.mcp.generation();
        let mcp = (!rt.mcp.is_empty()).then(|| Arc::new(Catalog::prepare(rt, cancel)));
        // The built-in tools' cards are the same for every turn of the runtime.
        let mut cards: Vec<(ToolSpec, KeywordSet)> = rt
            .builtin_cards
            .get_or_init(|| rt.tools.specs().into_iter().map(|s| card(rt, s)).collect())
            .clone();
        if let Some(c) = &mcp {
            cards.extend(c.specs().into_iter().map(|s| card(rt, s)));
        }
        if rt.config.agent.subtasks > 0 {
            cards.push(card(rt, super::subtasks::spec(rt.config.agent.subtasks)));
        }
        TurnTools {
            mcp,
            generation,
            cards,
            requested: Vec::new(),
            offered: Vec::new(),
            offered_stored: 0,
        }
    }

    /// Lists the MCP tools again when a server changed its tools (it sent
    /// `tools/list_changed`, or a list fetched during a call moved the generation);
    /// `true` when it did.
    pub fn refresh(&self, rt: &Runtime, tools: &mut TurnTools, cancel: &Cancel) -> bool {
        if rt.mcp.refresh_changed() || rt.mcp.generation() != tools.generation {
            let requested = std::mem::take(&mut tools.requested);
            let offered = std::mem::take(&mut tools.offered);
            let stored = tools.offered_stored;
            *tools = self.for_turn(rt, cancel);
            tools.requested = requested;
            tools.offered = offered;
            tools.offered_stored = stored;
            return true;
        }
        false
    }

    /// Before a call of `<server>__<tool>` that the turn's tools lack is refused, the
    /// server's list is fetched anew (the server may have announced the tool too late
    /// for this step) and the turn's tools rebuilt; true when the tool exists now.
    pub fn relist_for(
        &self,
        rt: &Runtime,
        tools: &mut TurnTools,
        name: &str,
        cancel: &Cancel,
    ) -> bool {
        if self.has(rt, tools, name) {
            return true;
        }
        let Some((server, _)) = crate::mcp::split_name(name) else {
            return false;
        };
        if rt.mcp.spec(server).is_none_or(|s| s.disabled) {
            return false;
        }
        if let Err(e) = rt.mcp.relist(server, cancel) {
            log::warn!("{e}");
            return false;
        }
        self.refresh(rt, tools, cancel);
        self.has(rt, tools, name)
    }

    /// Takes a tool out of the turn (a sub-turn has no `subtasks`).
    pub fn leave_out(&self, tools: &mut TurnTools, name: &str) {
        tools.cards.retain(|(s, _)| s.name != name);
    }

    /// The names of every tool of the turn (and [`MORE_TOOLS`]).
    pub fn names(&self, tools: &TurnTools) -> Vec<String> {
        let mut names: Vec<String> = tools.cards.iter().map(|(s, _)| s.name.clone()).collect();
        names.push(MORE_TOOLS.to_string());
        names
    }

    /// Every tool of the turn: the built-in ones, then every enabled MCP tool.
    pub fn specs(&self, tools: &TurnTools) -> Vec<ToolSpec> {
        tools.cards.iter().map(|(s, _)| s.clone()).collect()
    }

    /// The tools one model step carries in full: those the question's words point to
    /// (`[agent] tool_schemas` at most; on a session's first step with the first that
    /// many tools of the catalog besides), those in `wanted` (used in the session or
    /// the turn, forced), those the model asked for, and every tool the session was
    /// offered before, in the order first offered; the rest are named, a line each, by
    /// [`MORE_TOOLS`], last. With `tool_schemas = 0`, every tool.
    pub fn offer(
        &self,
        rt: &Runtime,
        tools: &mut TurnTools,
        query: &KeywordSet,
        wanted: &[&str],
    ) -> Vec<ToolSpec> {
        let max = rt.config.agent.tool_schemas;
        if max == 0 {
            return self.specs(tools);
        }
        let candidates: Vec<Candidate<'_>> = tools
            .cards
            .iter()
            .map(|(s, k)| Candidate {
                name: &s.name,
                keywords: k,
            })
            .collect();
        let mut all_wanted: Vec<&str> = wanted.to_vec();
        all_wanted.extend(tools.requested.iter().map(String::as_str));
        // The tools the question points to are the same on every step of the turn: what
        // is wanted besides (called, asked for) does not push others in.
        let mut chosen = choose(&OfferInput {
            candidates: &candidates,
            query,
            wanted: &[],
            max_relevant: max,
        });
        for (i, c) in candidates.iter().enumerate() {
            if all_wanted.contains(&c.name) && !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        // A session's first offer is its stable set: what the question points to and the
        // first `tool_schemas` tools of the catalog (the built-ins: time, web, files), so
        // the offer seldom grows later — the tools come first in the prompt, and a grown
        // offer changes everything after them for a prompt cache.
        if tools.offered.is_empty() {
            for i in 0..candidates.len().min(max) {
                if !chosen.contains(&i) {
                    chosen.push(i);
                }
            }
        }
        chosen.sort_unstable();
        let chosen: Vec<&str> = chosen
            .iter()
            .map(|&i| tools.cards[i].0.name.as_str())
            .collect();
        let mut offered = std::mem::take(&mut tools.offered);
        grow(&mut offered, &chosen);
        // A tool the session was offered that is gone now (a server removed) is skipped.
        let mut specs: Vec<ToolSpec> = offered
            .iter()
            .filter_map(|name| tools.cards.iter().find(|(s, _)| &s.name == name))
            .map(|(s, _)| s.clone())
            .collect();
        let rest: Vec<&ToolSpec> = tools
            .cards
            .iter()
            .map(|(s, _)| s)
            .filter(|s| !offered.contains(&s.name))
            .collect();
        if !rest.is_empty() {
            specs.push(more_tools_spec(&rest));
        }
        tools.offered = offered;
        specs
    }

    /// `more_tools`: the full descriptions of the tools named, offered from the next
    /// step on.
    pub fn more_tools(&self, tools: &mut TurnTools, arguments: &str) -> (String, bool) {
        let names: Vec<String> = serde_json::from_str::<serde_json::Value>(arguments)
            .ok()
            .and_then(|v| v.get("names").cloned())
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        if names.is_empty() {
            return (
                "send {\"names\": [\"tool\", …]} with the names of the tools you need".into(),
                true,
            );
        }
        let mut text = String::new();
        for name in &names {
            match tools.cards.iter().find(|(s, _)| &s.name == name) {
                Some((spec, _)) => {
                    if !tools.requested.contains(name) {
                        tools.requested.push(name.clone());
                    }
                    text.push_str(&format!(
                        "{}: {}\nparameters: {}\n\n",
                        spec.name, spec.description, spec.parameters
                    ));
                }
                None => text.push_str(&format!("{name}: no such tool\n\n")),
            }
        }
        text.push_str("These tools are offered from your next step on: call them as usual.");
        (text, false)
    }

    /// The MCP tools of the turn.
    pub fn mcp_entries<'a>(&self, tools: &'a TurnTools) -> &'a [Entry] {
        tools.mcp.as_deref().map_or(&[], Catalog::entries)
    }

    /// The MCP tool of that name, if the turn offers one.
    /// What to tell the person before a question about a call of `name`, an MCP tool
    /// whose definition changed since they allowed it: a grant of the session bound to
    /// another definition, or a level of theirs the change dropped.
    pub fn definition_notice(
        &self,
        tools: &TurnTools,
        name: &str,
        grants: &Grants,
    ) -> Option<String> {
        let entry = self.mcp_entry(tools, name)?;
        let change = entry.change.as_ref()?;
        let granted = grants
            .iter()
            .any(|g| g.tool == name && g.definition.as_deref() != Some(entry.definition.as_str()));
        (granted || change.dropped_level.is_some())
            .then(|| crate::mcp::definition::notice(name, change, granted))
    }

    /// The last change of the definition of the MCP tool `name`, if it replaced one.
    pub fn definition_change<'a>(
        &self,
        tools: &'a TurnTools,
        name: &str,
    ) -> Option<&'a crate::mcp::definition::Change> {
        self.mcp_entry(tools, name)?.change.as_ref()
    }

    fn mcp_entry<'a>(&self, tools: &'a TurnTools, name: &str) -> Option<&'a Entry> {
        crate::mcp::split_name(name)?;
        tools.mcp.as_ref()?.get(name)
    }

    /// Whether a tool of that name exists (built-in, MCP, or [`MORE_TOOLS`]).
    pub fn has(&self, rt: &Runtime, tools: &TurnTools, name: &str) -> bool {
        rt.tools.has(name)
            || self.mcp_entry(tools, name).is_some()
            || name == MORE_TOOLS
            || name == super::subtasks::SUBTASKS && tools.cards.iter().any(|(s, _)| s.name == name)
    }

    /// What the model is told when it calls a tool that does not exist: every name it
    /// may use.
    pub fn unknown(&self, tools: &TurnTools, name: &str) -> String {
        let mut text = Builtins::unknown(name);
        for e in self.mcp_entries(tools) {
            text.push_str(", ");
            text.push_str(&e.full_name);
        }
        text
    }

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
        if name == MORE_TOOLS || name == super::subtasks::SUBTASKS {
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

/// A tool's schema with the keywords it is offered by: its name and, for a built-in
/// tool, its topics (curated words, cheaper and more telling than its long
/// description), for an MCP tool its description.
fn card(rt: &Runtime, spec: ToolSpec) -> (ToolSpec, KeywordSet) {
    let topics = crate::tools::topics(&spec.name);
    // The topics are words already: their Chinese ones need no dictionary (an English
    // question then never loads it).
    let keywords = if topics.is_empty() {
        evolve_core::turn::offer::described(&rt.tokenizer, &spec.name, &spec.description)
    } else {
        let name = KeywordSet::of(&rt.tokenizer, &spec.name.replace(['_', '-'], " "));
        name.union(&rt.tokenizer.keywords_of_words(topics))
    };
    (spec, keywords)
}

/// The schema of [`MORE_TOOLS`]: the other tools, named with the first sentence of
/// their description.
fn more_tools_spec(rest: &[&ToolSpec]) -> ToolSpec {
    let mut description =
        String::from("Other tools you can use (not described here in full, to save room): ");
    for (i, s) in rest.iter().enumerate() {
        if i > 0 {
            description.push_str("; ");
        }
        description.push_str(&s.name);
        description.push_str(" — ");
        description.push_str(&first_sentence(&s.description));
    }
    description.push_str(
        ". Call more_tools with their names to get their parameters; they are offered from the next step on.",
    );
    ToolSpec {
        name: MORE_TOOLS.to_string(),
        description,
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"},
                "description": "Names of the tools you need"}},
            "required": ["names"],
        }),
    }
}

/// The first sentence of a description, at most 80 characters.
fn first_sentence(text: &str) -> String {
    let end = text.find(". ").map_or(text.len(), |i| i + 1);
    evolve_core::text::clip_chars(text[..end].trim(), 80)
}
