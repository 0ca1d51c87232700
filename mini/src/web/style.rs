//! `/v1/memory/style…`: the style notes over HTTP, the same as `evolve memory style
//! list|rm|clear` (the rules are [`crate::agents::style`]). A note removed here is gone
//! from the next turn's prompt.

use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{store_error, Reply};
use super::{error, State};
use crate::agents::style::{self, Removal};

/// `{"data": [{"n": 1, "note": "…"}, …], "max": 8}`, oldest first.
pub fn list(state: &State) -> Reply {
    let rt = state.rt();
    match style::list(&rt.store) {
        Ok(notes) => {
            let data: Vec<Value> = notes
                .iter()
                .enumerate()
                .map(|(i, note)| json!({"n": i + 1, "note": note}))
                .collect();
            Response::json(
                200,
                &json!({"data": data, "max": rt.config.agent.style_notes_max}),
            )
        }
        Err(e) => store_error(e),
    }
}

/// Removes note `n`; with `?note=TEXT`, only while note `n` still reads so (409
/// otherwise: the notes changed since the page listed them).
pub fn remove(state: &State, req: &Request, n: &str) -> Reply {
    let Some(n) = n.trim().parse::<usize>().ok().filter(|&n| n > 0) else {
        return error(
            400,
            format!("{n:?} is not a style note number (1, 2, … as GET /v1/memory/style lists)"),
        );
    };
    let expect = req.query_param("note");
    let rt = state.rt();
    match style::remove(&rt.store, n, expect.as_deref()) {
        Ok(Removal::Done(note)) => {
            Response::json(200, &json!({"deleted": true, "n": n, "note": note}))
        }
        Ok(Removal::NoSuch(count)) => error(404, format!("no style note {n}: there are {count}")),
        Ok(Removal::Changed(_)) => error(
            409,
            format!(
                "style note {n} is no longer the one given: the notes changed meanwhile — \
                 list them again; nothing was removed"
            ),
        ),
        Err(e) => store_error(e),
    }
}

/// Removes every note: `{"removed": N}`.
pub fn clear(state: &State) -> Reply {
    let rt = state.rt();
    match style::clear(&rt.store) {
        Ok(n) => Response::json(200, &json!({ "removed": n })),
        Err(e) => store_error(e),
    }
}
