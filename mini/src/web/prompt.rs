//! `/v1/prompt…`: the system prompt's versions over HTTP, the same as
//! `evolve prompt list|show|set|evolve|rollback` (the rules are
//! [`crate::agents::versions`]). A version set, evolved or activated here is used from
//! the next turn of every session.

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{body, store_error, Reply};
use super::{error, State};
use crate::agents::versions::{self, check_text, EvolveError, Evolved, Listed};
use crate::cancel::Cancel;
use crate::clock::now;
use crate::error::Error;
use evolve_core::text::one_line;

/// The note a version set here is stored with (its first word is its source, `set`).
const SET_NOTE: &str = "set in the web UI";

/// Every version, oldest first, without their texts; `active` names the active one.
pub fn list(state: &State) -> Reply {
    let rt = state.rt();
    match versions::versions(&rt.store) {
        Ok(all) => {
            let active = all.iter().find(|v| v.active).map_or(0, |v| v.version);
            let data: Vec<Value> = all.iter().map(|v| v.json(false)).collect();
            Response::json(200, &json!({ "data": data, "active": active }))
        }
        Err(e) => store_error(e),
    }
}

/// One version with its text: a number (0 = built-in) or `active`.
pub fn show(state: &State, which: &str) -> Reply {
    with_version(state, which, |v| Response::json(200, &v.json(true)))
}

/// `{"text": "…"}` becomes a new active version (201), unless it is the active text
/// already (200, nothing stored).
pub fn set(state: &State, req: &Request) -> Reply {
    let b = match body(req) {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let Some(Value::String(text)) = b.get("text") else {
        return error(400, "send {\"text\": \"the whole system prompt\"}");
    };
    let text = match check_text(text) {
        Ok(t) => t,
        Err(e) => {
            return error(
                400,
                format!("not a usable system prompt: {e}; nothing was stored"),
            )
        }
    };
    let rt = state.rt();
    match versions::active_text(&rt.store) {
        Ok(active) if active == text => return show(state, "active"),
        Ok(_) => {}
        Err(e) => return store_error(e),
    }
    let note = match b.get("note") {
        Some(Value::String(n)) if !n.trim().is_empty() => one_line(n, 200),
        None | Some(Value::Null | Value::String(_)) => SET_NOTE.to_string(),
        Some(_) => return error(400, "`note` must be a string"),
    };
    match rt.store.add_prompt_version(&text, &note, now()) {
        Ok(version) => created(state, version),
        Err(e) => store_error(e),
    }
}

/// Has the cheap model write a new version from what the agent learned (201 with the
/// new version; 200 `{"changed": false}` when the model kept the text; 409 when there
/// is nothing to learn from; 422 when the reply was refused; 502 for model failures).
/// With `{"propose": true}` nothing is stored: 200 `{"changed": true, "current",
/// "text", "note"}`, for a person to compare and confirm (`POST /v1/prompt`).
pub fn evolve(state: &State, req: &Request) -> Reply {
    let propose = if req.body.iter().all(u8::is_ascii_whitespace) {
        false
    } else {
        let b = match body(req) {
            Ok(b) => b,
            Err(resp) => return resp,
        };
        match b.get("propose") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(p)) => *p,
            Some(_) => return error(400, "`propose` must be true or false"),
        }
    };
    let rt = state.rt();
    let cancel = Cancel::new();
    let done = versions::evolve(
        &rt.store,
        &*rt.model,
        rt.config.agent.reflect_below,
        now(),
        &cancel,
        !propose,
    );
    match done {
        Ok(Evolved::Proposed {
            current,
            text,
            note,
        }) => Response::json(
            200,
            &json!({"changed": true, "current": current, "text": text, "note": note}),
        ),
        Ok(Evolved::Unchanged) => Response::json(
            200,
            &json!({"changed": false, "message": "the model kept the system prompt as it is; nothing stored"}),
        ),
        Ok(Evolved::Stored { version, .. }) => created(state, version),
        Err(EvolveError::NothingLearned) => error(409, EvolveError::NothingLearned.to_string()),
        Err(e @ EvolveError::Refused(_)) => error(422, e.to_string()),
        Err(EvolveError::Model(e)) => {
            let (status, body) = super::chat::turn_error(&Error::from(e));
            Response::json(status, &body)
        }
        Err(EvolveError::Store(e)) => store_error(e),
    }
}

/// Makes a version active again (0 = the built-in prompt).
pub fn activate(state: &State, which: &str) -> Reply {
    let rt = state.rt();
    let target = match find(state, which) {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let done = if target.version == 0 {
        rt.store.activate_builtin_prompt()
    } else {
        rt.store.activate_prompt(target.version)
    };
    match done {
        Ok(()) => show(state, &target.version.to_string()),
        Err(e) => store_error(e),
    }
}

fn created(state: &State, version: u64) -> Reply {
    let mut resp = show(state, &version.to_string());
    if resp.status == 200 {
        resp.status = 201;
    }
    resp
}

fn with_version(state: &State, which: &str, f: impl FnOnce(&Listed) -> Reply) -> Reply {
    match find(state, which) {
        Ok(v) => f(&v),
        Err(resp) => resp,
    }
}

/// The version `which` names: a number or `active`.
fn find(state: &State, which: &str) -> Result<Listed, Reply> {
    let all = versions::versions(&state.rt().store).map_err(store_error)?;
    let found = if which == "active" {
        all.into_iter().find(|v| v.active)
    } else {
        let n: u64 = which.parse().map_err(|_| {
            error(
                400,
                format!("{which:?} is not a version: use a number from GET /v1/prompt or `active`"),
            )
        })?;
        all.into_iter().find(|v| v.version == n)
    };
    found.ok_or_else(|| {
        error(
            404,
            format!("there is no system prompt version {which} (GET /v1/prompt lists them)"),
        )
    })
}
