//! What a turn offers the model from MCP: every enabled tool of every enabled server as
//! `<server>__<tool>` with its schema and level.
//!
//! Where a server's list comes from, cheapest first: the list a connected server sent
//! (kept fresh by `tools/list_changed`); the list cached in the store the last time the
//! server was connected; starting the server and asking it. So an `ask` whose model calls
//! no MCP tool starts no server, once the lists are cached. A server that cannot be
//! listed is left out of the turn (its problem is logged and kept in `problems`); the
//! rest of the turn goes on.

use evolve_core::permission::ToolClass;

use super::Runtime;
use crate::cancel::Cancel;
use crate::llm::ToolSpec;
use crate::mcp::{McpTool, ServerSpec};

/// One MCP tool as a turn sees it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name the model calls it by: `<server>__<tool>`, or for a tool whose name
    /// model APIs refuse (`.`, `/`, too long) the one [`crate::mcp_spec::model_names`]
    /// gave it. Levels (the classifier's and the user's) are kept under the server's
    /// own name (`full_name(server, tool.name)`); a session's grants under this one.
    pub full_name: String,
    /// The server's name.
    pub server: String,
    /// The tool as the server describes it.
    pub tool: McpTool,
    /// Its level before the arguments are looked at.
    pub class: ToolClass,
    /// The identity of its definition, which a grant of a call of it is bound to.
    pub definition: String,
    /// The last change of its definition, if it replaced one.
    pub change: Option<crate::mcp::definition::Change>,
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
    pub fn prepare(rt: &Runtime, cancel: &Cancel) -> Catalog {
        let mut catalog = Catalog::default();
        for spec in rt.mcp.specs().iter().filter(|s| !s.disabled) {
            match tools_of(rt, spec, cancel) {
                Ok(tools) => catalog.add(rt, spec, tools, cancel),
                Err(problem) => {
                    log::warn!("{problem}");
                    catalog.problems.push(problem);
                }
            }
        }
        catalog
    }

    fn add(&mut self, rt: &Runtime, spec: &ServerSpec, tools: Vec<McpTool>, cancel: &Cancel) {
        let names = offered(spec, &tools);
        let (offered, names): (Vec<McpTool>, Vec<String>) = tools
            .into_iter()
            .zip(names)
            .filter_map(|(t, name)| Some((t, name?)))
            .unzip();
        let classes =
            super::mcp_levels::classify::explain(&rt.classifier(), spec, &offered, cancel);
        for ((tool, c), name) in offered.into_iter().zip(classes).zip(names) {
            self.entries.push(Entry {
                full_name: name,
                server: spec.name.clone(),
                tool,
                class: c.class,
                definition: c.definition,
                change: c.change,
            });
        }
    }

    /// The tools, in server then tool order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The tool of that full name.
    pub fn get(&self, full_name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.full_name == full_name)
    }

    /// What the model sees: the server's description, prefixed with the server's name so
    /// the model knows where the tool lives, and the server's schema.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .map(|e| ToolSpec {
                name: e.full_name.clone(),
                description: if e.tool.description.trim().is_empty() {
                    format!("(MCP server {})", e.server)
                } else {
                    format!("(MCP server {}) {}", e.server, e.tool.description.trim())
                },
                parameters: schema(&e.tool.input_schema),
            })
            .collect()
    }
}

/// The name each of a server's tools is offered to the model under, or `None` when it
/// is not offered: those its enabled/disabled lists allow, named as
/// [`crate::mcp_spec::model_names`] says (a name with `.` or `/`, or too long, mapped to
/// one a model API takes; the first of a name listed twice).
pub fn offered(spec: &ServerSpec, tools: &[McpTool]) -> Vec<Option<String>> {
    let raw: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let names = crate::mcp_spec::model_names(&spec.name, &raw);
    let mut seen = std::collections::HashSet::new();
    tools
        .iter()
        .zip(names)
        .map(|(t, name)| {
            let first = seen.insert(t.name.as_str());
            if !first {
                log::warn!(
                    "MCP server {:?} lists the tool {:?} twice; the first is offered",
                    spec.name,
                    t.name
                );
                return None;
            }
            if !spec.offers(&t.name) {
                return None;
            }
            if name.is_none() {
                log::warn!(
                    "MCP tool {:?} of server {:?} is not offered: no name a model API takes is left for it",
                    t.name,
                    spec.name
                );
            }
            name
        })
        .collect()
}

/// A server's schema as the model gets it: an object schema, whatever the server sent.
fn schema(text: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.entry("type").or_insert_with(|| "object".into());
            if map.get("type").and_then(|t| t.as_str()) == Some("object") {
                map.entry("properties")
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
            }
            serde_json::Value::Object(map)
        }
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

/// A server's tools (see the module doc for where they come from). A list fetched from
/// the server replaces the cached one when it differs.
fn tools_of(rt: &Runtime, spec: &ServerSpec, cancel: &Cancel) -> Result<Vec<McpTool>, String> {
    let cached = rt.store.mcp_tools(&spec.name).unwrap_or_else(|e| {
        log::warn!(
            "the cached tool list of MCP server {:?} cannot be read: {e}",
            spec.name
        );
        None
    });
    let fresh = match rt.mcp.live_tools(&spec.name) {
        Some((_, tools)) => tools,
        None => match cached {
            Some((tools, _)) => return Ok(tools),
            None => rt
                .mcp
                .list_tools(&spec.name, cancel)
                .map_err(|e| e.to_string())?,
        },
    };
    let unchanged = matches!(&cached, Some((tools, _)) if *tools == fresh);
    if !unchanged {
        if let Err(e) = rt.store.set_mcp_tools(&spec.name, &fresh, rt.clock.now()) {
            log::warn!(
                "the tool list of MCP server {:?} cannot be cached: {e}",
                spec.name
            );
        }
    }
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_reach_the_model_as_object_schemas() {
        let cases = [
            (
                r#"{"type":"object","properties":{"a":{"type":"number"}}}"#,
                r#"{"properties":{"a":{"type":"number"}},"type":"object"}"#,
            ),
            (
                r#"{"type":"object"}"#,
                r#"{"properties":{},"type":"object"}"#,
            ),
            (r#"{}"#, r#"{"properties":{},"type":"object"}"#),
            ("not json", r#"{"properties":{},"type":"object"}"#),
            ("[1]", r#"{"properties":{},"type":"object"}"#),
        ];
        for (given, want) in cases {
            assert_eq!(schema(given).to_string(), want, "{given}");
        }
    }
}
