//! `/v1/mcp/servers…`: add, reconnect and remove MCP servers from the web UI, as
//! `evolve mcp add|rm` and `/mcp` in chat do. A server added here is kept in the store
//! (source "added"); one defined in `config.toml` is changed by editing the file, so it
//! is refused here with where it is. The running hub takes the new list at once.

use std::sync::atomic::AtomicBool;

use serde_json::{json, Map, Value};

use super::http::Request;
use super::http::Response;
use super::request::{body, store_error, Reply};
use super::{error, State};
use crate::mcp::servers;
use crate::mcp_spec::{server_name_problem, SpecSource};

/// `POST /v1/mcp/servers`: `{name, command, args?, env?, cwd?}` (a program) or `{name,
/// url, headers?}` (streamable HTTP), the fields of one `mcpServers` entry; `replace`
/// replaces a server added before. 201 with the server and notes on what was not taken.
pub fn add(state: &State, req: &Request) -> Reply {
    let mut b = match body(req) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let name = match b.remove("name") {
        Some(Value::String(n)) => n.trim().to_string(),
        _ => {
            return error(
                400,
                "send {\"name\": …, \"command\": …} or {\"name\": …, \"url\": …}",
            )
        }
    };
    if let Some(problem) = server_name_problem(&name) {
        return error(400, format!("name: {problem}"));
    }
    let replace = match b.remove("replace") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(r)) => r,
        Some(_) => return error(400, "`replace` must be true or false"),
    };
    if !b.contains_key("command") && !b.contains_key("url") {
        return error(400, "say how to reach it: `command` (a program) or `url`");
    }
    let mut entry = Map::new();
    entry.insert(name.clone(), Value::Object(b));
    let doc = json!({ "mcpServers": entry }).to_string();
    let import = match servers::read_mcp_json(&doc) {
        Ok(i) => i,
        Err(e) => return error(400, e),
    };
    let Some(spec) = import.servers.into_iter().next() else {
        return error(400, "no server in the request");
    };
    let rt = state.rt();
    if rt.config.mcp.servers.iter().any(|s| s.name == name) {
        return error(
            409,
            format!("the MCP server {name} is defined in config.toml: change it there"),
        );
    }
    match rt.store.mcp_server(&name) {
        Ok(Some(_)) if !replace => {
            return error(
                409,
                format!("an MCP server {name} was already added (send \"replace\": true)"),
            )
        }
        Ok(_) => {}
        Err(e) => return store_error(e),
    }
    if let Err(e) = rt.store.put_mcp_server(&spec) {
        return store_error(e);
    }
    if let Err(e) = reload(state) {
        return e;
    }
    Response::json(201, &json!({"name": name, "notes": import.notes}))
}

/// `DELETE /v1/mcp/servers/{name}`: removes a server added at run time (with its
/// cached tools and levels).
pub fn remove(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    if rt.config.mcp.servers.iter().any(|s| s.name == name) {
        return error(
            409,
            format!(
                "the MCP server {name} is defined in config.toml: delete its [mcp.servers.{name}] \
                 table there (or set disabled = true)"
            ),
        );
    }
    match rt.store.remove_mcp_server(name) {
        Ok(true) => {}
        Ok(false) => return error(404, format!("no MCP server {name} was added")),
        Err(e) => return store_error(e),
    }
    if let Err(e) = reload(state) {
        return e;
    }
    Response::json(200, &json!({"deleted": true, "name": name}))
}

/// `POST /v1/mcp/servers/{name}/reconnect`: stops the connection and starts it again
/// now; says whether it answered and how many tools it lists.
pub fn reconnect(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    let Some(spec) = rt.mcp.spec(name) else {
        return error(404, format!("no MCP server {name}"));
    };
    if spec.disabled {
        return error(
            409,
            format!("the MCP server {name} is switched off (disabled)"),
        );
    }
    rt.mcp.restart(name);
    let cancel = AtomicBool::new(false);
    match rt.mcp.list_tools(name, &cancel) {
        Ok(tools) => Response::json(
            200,
            &json!({"name": name, "connected": true, "tools": tools.len()}),
        ),
        Err(e) => Response::json(
            200,
            &json!({"name": name, "connected": false, "error": e.to_string()}),
        ),
    }
}

/// The hub takes the store's and the file's servers anew.
fn reload(state: &State) -> Result<(), Reply> {
    let rt = state.rt();
    let specs = servers::load(&rt.config, &rt.store).map_err(store_error)?;
    rt.mcp.reload(specs);
    Ok(())
}

/// Where a server of the list comes from, as the UI shows it.
pub fn source(source: &SpecSource) -> &'static str {
    match source {
        SpecSource::ConfigFile => "config",
        SpecSource::Store => "added",
    }
}
