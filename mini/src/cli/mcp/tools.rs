//! `evolve mcp tools` (and `/mcp tools` in chat): the servers started and their tools
//! listed with each tool's level and where it came from; `evolve mcp level` (and
//! `/mcp level`): the user's own level of a tool.

use std::io::Write;

use argh::FromArgs;
use evolve_core::permission::Level;
use evolve_core::text::one_line;
use serde_json::json;

use super::super::app::{now, App};
use super::super::{interrupt, printable};
use super::list::write_servers;
use super::{open, unknown_server, usage};
use crate::agents::mcp_levels::classify::{self, Classified};
use crate::agents::mcp_levels::user_level::{self, LevelError};
use crate::agents::Runtime;
use crate::cancel::Cancel;
use crate::config::Config;
use crate::error::Error;
use crate::mcp_spec::{full_name, McpTool, ServerSpec};
use crate::store::Store;

/// start the MCP servers (or the one named) and list their tools, each with its level and where the level came from
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "tools",
    example = "{command_name}",
    example = "{command_name} files --json",
    note = "Levels: L0-L2 run, L3 asks once, L4 asks twice, L5 never runs. New or changed tools are classified by the cheap model; `evolve mcp level` sets a level yourself. Exits 1 when a server could not be listed (the others are still listed)."
)]
pub(super) struct Tools {
    /// only this server
    #[argh(positional)]
    name: Option<String>,
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// set the permission level of an MCP tool: L0-L5, or auto to go back to the classified level
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "level",
    example = "{command_name} files__read_file L1",
    example = "{command_name} files__write_file L4",
    example = "{command_name} files__write_file auto",
    note = "L0-L2 run without asking, L3 asks once, L4 asks twice, L5 never runs. A level set here wins over [tools.levels] in config.toml and over the classifier."
)]
pub(super) struct LevelCmd {
    /// the tool as the model sees it: SERVER__TOOL (`evolve mcp tools` lists them)
    #[argh(positional)]
    pub(super) tool: String,
    /// L0, L1, L2, L3, L4, L5, or auto
    #[argh(positional)]
    pub(super) level: String,
}

/// One tool in a listing.
struct Row {
    tool: McpTool,
    /// `None`: not offered (enabled/disabled lists, a repeat).
    class: Option<Classified>,
    /// The name the model calls it by (another than `server__tool` for a name model
    /// APIs refuse), when offered.
    offered_as: Option<String>,
}

/// What listing one server gave.
enum Listing {
    Tools(Vec<Row>),
    Disabled,
    Failed(String),
}

/// Starts each server (or the one named), caches its tool list and classifies the
/// offered tools. Servers that fail are reported in their [`Listing`], not as an error.
fn list_tools(
    rt: &Runtime,
    only: Option<&str>,
    cancel: &Cancel,
) -> Result<Vec<(String, Listing)>, Error> {
    let specs: Vec<ServerSpec> = match only {
        Some(name) => match rt.mcp.spec(name) {
            Some(spec) => vec![spec],
            None => return Err(unknown_server(name, &rt.mcp.specs())),
        },
        None => rt.mcp.specs(),
    };
    let mut out = Vec::with_capacity(specs.len());
    for spec in &specs {
        if spec.disabled {
            out.push((spec.name.clone(), Listing::Disabled));
            continue;
        }
        let listing = match rt.mcp.list_tools(&spec.name, cancel) {
            Ok(tools) => {
                if let Err(e) = rt.store.set_mcp_tools(&spec.name, &tools, now()) {
                    log::warn!("the tool list of {} cannot be cached: {e}", spec.name);
                }
                let names = crate::agents::offered_tools(spec, &tools);
                let offered: Vec<McpTool> = tools
                    .iter()
                    .zip(&names)
                    .filter(|(_, o)| o.is_some())
                    .map(|(t, _)| t.clone())
                    .collect();
                let mut classes =
                    classify::explain(&rt.classifier(), spec, &offered, cancel).into_iter();
                let rows = tools
                    .into_iter()
                    .zip(names)
                    .map(|(tool, offered_as)| Row {
                        tool,
                        class: if offered_as.is_some() {
                            classes.next()
                        } else {
                            None
                        },
                        offered_as,
                    })
                    .collect();
                Listing::Tools(rows)
            }
            Err(e) => Listing::Failed(e.to_string()),
        };
        out.push((spec.name.clone(), listing));
    }
    Ok(out)
}

/// Prints listings as text; returns the names of the servers that failed.
fn write_listings(
    out: &mut dyn Write,
    listings: &[(String, Listing)],
) -> std::io::Result<Vec<String>> {
    let mut failed = Vec::new();
    for (server, listing) in listings {
        match listing {
            Listing::Disabled => {
                writeln!(out, "{server}: disabled (`evolve mcp enable {server}`)")?;
            }
            Listing::Failed(e) => {
                writeln!(out, "{server}: could not be listed")?;
                eprintln!("evolve: {}", printable(e, false));
                failed.push(server.clone());
            }
            Listing::Tools(rows) if rows.is_empty() => {
                writeln!(out, "{server}: no tools")?;
            }
            Listing::Tools(rows) => {
                writeln!(out, "{server}: {} tools", rows.len())?;
                let names: Vec<String> = rows
                    .iter()
                    .map(|r| full_name(server, &r.tool.name))
                    .collect();
                let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
                let origins: Vec<String> = rows
                    .iter()
                    .map(|r| match &r.class {
                        Some(c) => c.origin(),
                        None => "not offered".to_string(),
                    })
                    .collect();
                let origin_width = origins.iter().map(|o| o.chars().count()).max().unwrap_or(0);
                for ((row, name), origin) in rows.iter().zip(&names).zip(&origins) {
                    let level = row
                        .class
                        .as_ref()
                        .map_or("off".to_string(), |c| c.class.level.to_string());
                    let mut description = one_line(&row.tool.description, 80);
                    if let Some(model) = row.offered_as.as_deref().filter(|m| *m != name) {
                        description = format!("(the model calls it {model}) {description}");
                    }
                    // A definition that replaced another: what changed, and what of the
                    // person's it dropped.
                    if let Some(change) = row.class.as_ref().and_then(|c| c.change.as_ref()) {
                        description = format!("[{}] {description}", change.marker());
                    }
                    let line = format!(
                        "  {:<width$}  {level:<3}  {origin:<origin_width$}  {}",
                        printable(name, false),
                        printable(&description, false)
                    );
                    writeln!(out, "{}", line.trim_end())?;
                }
            }
        }
    }
    Ok(failed)
}

/// Listings as JSON.
fn listings_json(listings: &[(String, Listing)]) -> serde_json::Value {
    let servers: Vec<serde_json::Value> = listings
        .iter()
        .map(|(server, listing)| match listing {
            Listing::Disabled => {
                json!({"server": server, "ok": true, "disabled": true, "tools": []})
            }
            Listing::Failed(e) => json!({"server": server, "ok": false, "error": e}),
            Listing::Tools(rows) => {
                let tools: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|r| {
                        json!({
                            "name": full_name(server, &r.tool.name),
                            "tool": r.tool.name,
                            "model_name": r.offered_as,
                            "description": r.tool.description,
                            "offered": r.class.is_some(),
                            "level": r.class.as_ref().map(|c| c.class.level.name()),
                            "source": r.class.as_ref().map(|c| c.class.source),
                            "origin": r.class.as_ref().map(|c| c.origin()),
                            "classifier": r.class.as_ref().and_then(|c| c.classifier).map(Level::name),
                            "changed": r.class.as_ref().and_then(|c| c.change.as_ref()).map(|c| c.to_json()),
                        })
                    })
                    .collect();
                json!({"server": server, "ok": true, "disabled": false, "tools": tools})
            }
        })
        .collect();
    json!(servers)
}

pub(super) fn tools(c: Tools, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let App { config, tokenizer } = app;
    let rt = Runtime::new(config, store, tokenizer);
    interrupt::install();
    interrupt::begin_turn();
    let listings = list_tools(&rt, c.name.as_deref(), &interrupt::CANCEL)?;
    let mut out = std::io::stdout().lock();
    let failed: Vec<String> = if c.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&listings_json(&listings)).unwrap_or_default()
        )?;
        listings
            .iter()
            .filter(|(_, l)| matches!(l, Listing::Failed(_)))
            .map(|(s, _)| s.clone())
            .collect()
    } else {
        if listings.is_empty() {
            write_servers(&mut out, &rt.config, &[], None, None)?;
        }
        write_listings(&mut out, &listings)?
    };
    rt.mcp.shutdown();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::PartlyFailed(format!(
            "{} of {} MCP servers could not be listed: {}",
            failed.len(),
            listings.len(),
            failed.join(", ")
        )))
    }
}

/// `/mcp tools [NAME]` in chat: the listing, errors shown, nothing ends.
pub(crate) fn chat_tools(rt: &Runtime, only: Option<&str>, cancel: &Cancel) -> Result<(), Error> {
    let listings = list_tools(rt, only, cancel)?;
    let mut out = std::io::stdout().lock();
    if listings.is_empty() {
        write_servers(&mut out, &rt.config, &[], None, None)?;
    }
    write_listings(&mut out, &listings)?;
    Ok(())
}

/// What a level means in an interactive session.
/// `evolve mcp level TOOL LEVEL` and `/mcp level`: the user's level of an MCP tool, set
/// or removed; returns what to tell the user.
pub(crate) fn set_level(
    config: &Config,
    store: &Store,
    servers: &[ServerSpec],
    tool: &str,
    level: &str,
) -> Result<String, Error> {
    match user_level::set_level(config, store, servers, tool, level, now()) {
        Ok(change) => Ok(change.to_string()),
        Err(LevelError::Store(e)) => Err(Error::Store(e)),
        Err(e) => Err(usage(e.to_string())),
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
