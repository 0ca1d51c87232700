//! `/v1/mcp/servers…`: add, reconnect and remove MCP servers from the web UI, as
//! `evolve mcp add|rm` and `/mcp` in chat do, and log in to HTTP servers with OAuth as
//! `evolve mcp login` does. A server added here is kept in the store (source "added");
//! one defined in `config.toml` is changed by editing the file, so it is refused here
//! with where it is. The running hub takes the new list at once.
//!
//! A login answers with the URL to open at once; the wait for the browser runs on a
//! thread of its own (its redirect comes to a loopback listener of this machine, so the
//! browser must run here too), and `GET …/login` tells how it went. A new login of the
//! same server cancels the one waiting.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::http::Request;
use super::http::Response;
use super::request::{body, store_error, Reply};
use super::{error, State};
use crate::cancel::Cancel;
use crate::mcp::oauth::{self, LoginError, LoginState};
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
    let cancel = Cancel::new();
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

/// How long a login started here waits for the browser.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The logins started from the web UI, by server (a few at most: a list).
#[derive(Default)]
pub struct Logins(Mutex<Vec<(String, Pending)>>);

/// How a login ended (shared: the status route reads it while the login's thread keeps
/// it).
type Outcome = Result<(), Arc<LoginError>>;

/// One login waiting for the browser, or how it ended.
struct Pending {
    cancel: Arc<Cancel>,
    /// `None` while waiting.
    outcome: Arc<Mutex<Option<Outcome>>>,
}

impl Logins {
    /// Takes the login of `server` out, cancelling it if it still waits.
    fn cancel(&self, server: &str) {
        let mut list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|(name, pending)| {
            let keep = name != server;
            if !keep {
                pending.cancel.cancel();
            }
            keep
        });
    }

    /// How the login of `server` went: `Some(None)` while it waits.
    fn outcome(&self, server: &str) -> Option<Option<Outcome>> {
        let list = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        list.iter().find(|(name, _)| name == server).map(|(_, p)| {
            p.outcome
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        })
    }
}

/// `POST /v1/mcp/servers/{name}/login`: finds the server's authorization server and
/// answers with the URL to open; the tokens are kept when the browser comes back.
pub fn login(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    let Some(spec) = rt.mcp.spec(name) else {
        return error(404, format!("no MCP server {name}"));
    };
    state.logins.cancel(name);
    let started = match oauth::login::start(&spec, &rt.store) {
        Ok(started) => started,
        Err(LoginError::Store(e)) => return store_error(*e),
        Err(e) => {
            let status = if matches!(e, LoginError::Setup(_)) {
                400
            } else {
                502
            };
            return error(status, e.about(name));
        }
    };
    let body = object(&mut [
        ("name", name.into()),
        ("url", started.url.as_str().into()),
        ("redirect_uri", started.redirect_uri.as_str().into()),
        ("wait_secs", LOGIN_WAIT.as_secs().into()),
    ]);
    let pending = Pending {
        cancel: Arc::new(Cancel::new()),
        outcome: Arc::new(Mutex::new(None)),
    };
    let (cancel, outcome, server) = (
        pending.cancel.clone(),
        pending.outcome.clone(),
        name.to_string(),
    );
    let spawned = oauth::in_background(
        "mcp-login",
        Box::new(move || {
            let done = started.finish(&rt.store, Instant::now() + LOGIN_WAIT, &cancel);
            if done.is_ok() {
                // The next use connects with the new token.
                rt.mcp.restart(&server);
            }
            *outcome.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(done.map(|_| ()).map_err(Arc::new));
        }),
    );
    if let Err(e) = spawned {
        return error(500, format!("cannot wait for the login: {e}"));
    }
    state
        .logins
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((name.to_string(), pending));
    Response::json(200, &body)
}

/// A JSON object of `fields`: the login routes' answers are built so rather than with
/// `json!`, whose conversion of each field cost the binary more.
fn object(fields: &mut [(&str, Value)]) -> Value {
    // Inserted one by one: collecting into the map would sort (more code again).
    let mut map = Map::new();
    for (key, value) in fields {
        map.insert(key.to_string(), value.take());
    }
    Value::Object(map)
}

/// `GET /v1/mcp/servers/{name}/login`: where the server's login stands — `waiting` for
/// the browser, `failed` (with why), `logged_in`, `needed`, or `none`.
pub fn login_status(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    let Some(spec) = rt.mcp.spec(name) else {
        return error(404, format!("no MCP server {name}"));
    };
    let outcome = state.logins.outcome(name);
    let kept = LoginState::of(&spec, &rt.store);
    let (word, failed) = match (outcome, &kept) {
        (Some(None), _) => ("waiting", None),
        (Some(Some(Err(why))), _) => ("failed", Some(why)),
        (_, Some(LoginState::LoggedIn { .. })) => ("logged_in", None),
        (_, Some(LoginState::Needed)) => ("needed", None),
        (_, None) => ("none", None),
    };
    let body = object(&mut [
        ("name", name.into()),
        ("state", word.into()),
        ("error", failed.map(|e| e.to_string()).into()),
        ("login", kept.map(|k| k.label(crate::clock::now())).into()),
    ]);
    Response::json(200, &body)
}

/// `DELETE /v1/mcp/servers/{name}/login`: forgets the server's tokens and the client
/// evolve registered, as `evolve mcp logout`.
pub fn logout(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    if rt.mcp.spec(name).is_none() {
        return error(404, format!("no MCP server {name}"));
    }
    state.logins.cancel(name);
    match rt.store.remove_mcp_login(name) {
        Ok(removed) => {
            rt.mcp.restart(name);
            Response::json(
                200,
                &object(&mut [("name", name.into()), ("logged_out", removed.into())]),
            )
        }
        Err(e) => store_error(e),
    }
}
