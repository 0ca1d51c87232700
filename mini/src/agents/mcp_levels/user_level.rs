//! The user's own level for an MCP tool: `evolve mcp level TOOL LEVEL`, `/mcp level` in
//! chat and `PUT /v1/mcp/tools/{name}/level` all go through [`set_level`], which checks
//! the name against the configured servers and their last tool lists, keeps the level
//! in the store (where it wins over the classifier, for the tool's definition as last
//! seen only: see [`crate::mcp::definition`]) or removes it (`auto`), and says what was done
//! as a [`LevelChange`]. Each front end formats the change its own way
//! (the command line prints it, the API answers JSON with its text).

use std::fmt;
use std::path::PathBuf;

use evolve_core::permission::Level;
use evolve_core::Timestamp;

use crate::config::Config;
use crate::mcp_spec::{split_name, ServerSpec};
use crate::store::{Store, StoreError, ToolClassRecord, CLASS_BY_USER, CLASS_UNCLASSIFIED};

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelChoice {
    /// This level, whatever the classifier says.
    Fixed(Level),
    /// No level of the user's: the file's `[tools.levels]` or the classifier decides.
    Auto,
}

impl LevelChoice {
    /// `L0` … `L5`, or `auto` (also `reset`, `classifier`, `default`).
    pub fn parse(text: &str) -> Option<LevelChoice> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "reset" | "classifier" | "default" => Some(LevelChoice::Auto),
            _ => Level::parse(text).map(LevelChoice::Fixed),
        }
    }
}

/// What [`set_level`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelChange {
    /// `SERVER__TOOL`.
    pub tool: String,
    /// What was asked.
    pub choice: LevelChoice,
    /// For [`LevelChoice::Auto`]: a level of the user's was there and is removed.
    pub removed: bool,
    /// The level `[tools.levels]` in this file sets for the tool, if any.
    pub in_file: Option<(Level, PathBuf)>,
}

impl fmt::Display for LevelChange {
    /// What to tell the user: the level and what it means, or where the level comes from
    /// now, and how the file's own level for the tool fares.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tool = &self.tool;
        let file_note = |then: &str| match &self.in_file {
            Some((l, file)) => format!(
                " ([tools.levels] in {} sets {l}, which {then})",
                file.display()
            ),
            None => String::new(),
        };
        match self.choice {
            LevelChoice::Auto => {
                if self.removed {
                    write!(f, "{tool}: your level is removed")?;
                } else {
                    write!(f, "{tool} had no level set with `evolve mcp level`")?;
                }
                let from = if self.in_file.is_some() {
                    "config.toml"
                } else {
                    "the classifier (`evolve mcp tools` shows it)"
                };
                write!(
                    f,
                    "; its level comes from {from}{}",
                    file_note("applies now")
                )
            }
            LevelChoice::Fixed(level) => write!(
                f,
                "{tool}: {level} ({}, {}){} — `evolve mcp level {tool} auto` undoes it",
                level.meaning(),
                action(level),
                file_note("this level wins over")
            ),
        }
    }
}

/// What a level means when a call comes.
fn action(level: Level) -> &'static str {
    match level {
        Level::L0 | Level::L1 | Level::L2 => "runs without asking",
        Level::L3 => "asks once",
        Level::L4 => "asks twice",
        Level::L5 => "never runs",
    }
}

/// Why [`set_level`] changed nothing.
#[derive(Debug)]
pub enum LevelError {
    /// Not `SERVER__TOOL`.
    NotAToolName(String),
    /// No configured server of that name.
    UnknownServer { name: String, known: Vec<String> },
    /// The server's last tool list has no such tool.
    UnknownTool {
        server: String,
        tool: String,
        known: Vec<String>,
    },
    /// Neither a level nor `auto`.
    NotALevel(String),
    /// The store could not be read or written.
    Store(StoreError),
}

impl fmt::Display for LevelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelError::NotAToolName(tool) => write!(
                f,
                "{tool:?} is not an MCP tool name: use SERVER__TOOL, e.g. files__write_file \
                 (`evolve mcp tools` lists them)"
            ),
            LevelError::UnknownServer { name, known } => f.write_str(&unknown_server(name, known)),
            LevelError::UnknownTool {
                server,
                tool,
                known,
            } => write!(
                f,
                "server {server} has no tool {tool:?} (its tools when last listed: {})",
                list_or_none(known)
            ),
            LevelError::NotALevel(level) => write!(
                f,
                "{level:?} is not a level: use L0, L1, L2, L3, L4, L5, or auto"
            ),
            LevelError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LevelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LevelError::Store(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StoreError> for LevelError {
    fn from(e: StoreError) -> Self {
        LevelError::Store(e)
    }
}

/// The names of the configured servers in an error (shared with `evolve mcp`'s).
pub fn unknown_server(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no MCP server named {name:?}: none is configured")
    } else {
        format!("no MCP server named {name:?} (known: {})", known.join(", "))
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// Sets (or with `auto` removes) the user's level of the MCP tool `tool` among
/// `servers`, at `now`.
pub fn set_level(
    config: &Config,
    store: &Store,
    servers: &[ServerSpec],
    tool: &str,
    level: &str,
    now: Timestamp,
) -> Result<LevelChange, LevelError> {
    let Some((server, name)) = split_name(tool) else {
        return Err(LevelError::NotAToolName(tool.to_string()));
    };
    if !servers.iter().any(|s| s.name == server) {
        return Err(LevelError::UnknownServer {
            name: server.to_string(),
            known: servers.iter().map(|s| s.name.clone()).collect(),
        });
    }
    // The server's own name, or the one the model calls it by (a name with `.` or
    // `/` is offered as another): the level is kept under the server's.
    let mut own = tool.to_string();
    if let Some((tools, _)) = store.mcp_tools(server)? {
        if !tools.iter().any(|t| t.name == name) {
            let raw: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            let models = crate::mcp_spec::model_names(server, &raw);
            match models.iter().position(|m| m.as_deref() == Some(tool)) {
                Some(i) => own = crate::mcp_spec::full_name(server, raw[i]),
                None => {
                    return Err(LevelError::UnknownTool {
                        server: server.to_string(),
                        tool: name.to_string(),
                        known: tools.into_iter().map(|t| t.name).collect(),
                    })
                }
            }
        }
    }
    let tool = own.as_str();
    let in_file = config
        .tools
        .levels
        .iter()
        .find(|(t, _)| t == tool)
        .map(|(_, l)| (*l, config.file.clone()));
    let choice =
        LevelChoice::parse(level).ok_or_else(|| LevelError::NotALevel(level.to_string()))?;
    let mut removed = false;
    match choice {
        LevelChoice::Auto => {
            let record = store.tool_class(tool)?;
            removed = record.as_ref().is_some_and(|r| r.source == CLASS_BY_USER);
            // Back to the classifier: one that found no level before is asked again.
            if removed || record.is_some_and(|r| r.source == CLASS_UNCLASSIFIED) {
                store.remove_tool_class(tool)?;
            }
        }
        LevelChoice::Fixed(level) => {
            // Bound to the definition last seen: the level holds for it and no other
            // (a tool never listed is bound at its first listing).
            let seen = crate::mcp::definition::read(store, &[tool.to_string()])?
                .pop()
                .flatten();
            store.set_tool_class(
                tool,
                &ToolClassRecord {
                    level,
                    fingerprint: 0,
                    definition: seen.map(|d| d.key()),
                    source: CLASS_BY_USER.to_string(),
                    at: now,
                },
            )?
        }
    }
    // The person decided again: a level a change dropped is no longer news.
    crate::mcp::definition::forget_dropped_level(store, tool);
    Ok(LevelChange {
        tool: tool.to_string(),
        choice,
        removed,
        in_file,
    })
}
