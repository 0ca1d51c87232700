//! The tools of a turn: which there are (the built-in ones and the MCP servers' tools,
//! listed again when a server changes its list), which a model step carries in full
//! (core's offer rule over each tool's card) and what `more_tools` adds, and what the
//! model is told about a tool that does not exist.

use crate::cancel::Cancel;
use std::sync::Arc;

use evolve_core::permission::Grants;
use evolve_core::text::KeywordSet;
use evolve_core::turn::offer::{choose, grow, Candidate, OfferInput};

use super::{ToolAgent, TurnTools, MORE_TOOLS};
use crate::agents::catalog::{Catalog, Entry};
use crate::agents::runtime::Runtime;
use crate::llm::ToolSpec;
use crate::tools::Builtins;

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
            cards.push(card(
                rt,
                crate::agents::subtasks::spec(rt.config.agent.subtasks),
            ));
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

    /// The MCP tool of that name, if the turn offers one.
    pub(super) fn mcp_entry<'a>(&self, tools: &'a TurnTools, name: &str) -> Option<&'a Entry> {
        crate::mcp::split_name(name)?;
        tools.mcp.as_ref()?.get(name)
    }

    /// Whether a tool of that name exists (built-in, MCP, or [`MORE_TOOLS`]).
    pub fn has(&self, rt: &Runtime, tools: &TurnTools, name: &str) -> bool {
        rt.tools.has(name)
            || self.mcp_entry(tools, name).is_some()
            || name == MORE_TOOLS
            || name == crate::agents::subtasks::SUBTASKS
                && tools.cards.iter().any(|(s, _)| s.name == name)
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
