//! `/v1/sessions/{id}/grants`: a session's "always allow" list (the Evolve Agent design's tool
//! whitelist) over HTTP — listed, and withdrawn one by one or all at once, as chat's
//! `/permissions revoke` does. Which grants a request names is
//! [`evolve_core::permission::Revoke`]'s rule; the store withdraws them in one
//! transaction. A withdrawn tool is asked about again at its next call.

use evolve_core::permission::{CallKey, Grant, Revoke};
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::{error, State};
use crate::store::StoreError;

type Reply = Response<'static>;

/// A grant as the API shows it: `{"tool", "command" (null but for shell), "level",
/// "label"}`.
pub fn grant_json(g: &Grant) -> Value {
    json!({
        "tool": g.tool,
        "command": g.command,
        "level": g.level.to_string(),
        "label": g.label(),
    })
}

/// `{"data": [grant, …]}`, sorted by tool then command; 404 for an unknown session.
pub fn list(state: &State, id: &str) -> Reply {
    let rt = state.rt();
    let grants = match rt.store.session(id).and_then(|_| rt.store.grants(id)) {
        Ok(g) => g,
        Err(e) => return store_failed(e),
    };
    let data: Vec<Value> = grants.iter().map(grant_json).collect();
    Response::json(200, &json!({ "data": data }))
}

/// What `DELETE` names, in the body or the query: one grant (`tool`, and `command`
/// for shell) or `all`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeRequest {
    tool: Option<String>,
    command: Option<String>,
    all: Option<bool>,
}

impl RevokeRequest {
    fn read(req: &Request) -> Result<RevokeRequest, Reply> {
        let from_body = if req.body.iter().all(u8::is_ascii_whitespace) {
            RevokeRequest::default()
        } else {
            serde_json::from_slice(&req.body).map_err(|e| {
                error(
                    400,
                    format!(
                        "the body must be {{\"tool\": …, \"command\": …}} or {{\"all\": true}}: {e}"
                    ),
                )
            })?
        };
        let all = match (from_body.all, req.query_param("all").as_deref()) {
            (Some(all), _) => Some(all),
            (None, None) => None,
            (None, Some("true" | "1")) => Some(true),
            (None, Some("false" | "0")) => Some(false),
            (None, Some(other)) => {
                return Err(error(
                    400,
                    format!("all={other:?}: use all=true to withdraw every grant"),
                ))
            }
        };
        Ok(RevokeRequest {
            tool: from_body.tool.or_else(|| req.query_param("tool")),
            command: from_body.command.or_else(|| req.query_param("command")),
            all,
        })
    }
}

/// Withdraws one grant or all: `{"revoked": [grant, …], "data": [what is left]}`. 404
/// for an unknown session, or a named grant the session does not hold.
pub fn revoke(state: &State, req: &Request, id: &str) -> Reply {
    let r = match RevokeRequest::read(req) {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let what =
        match (&r.tool, r.all) {
            (Some(_), Some(true)) => {
                return error(400, "send either a tool (and command) or all, not both");
            }
            (None, Some(true)) => Revoke::All,
            (Some(tool), _) if !tool.trim().is_empty() => Revoke::Call(CallKey {
                tool: tool.trim(),
                command: r.command.as_deref(),
                definition: None,
            }),
            _ => return error(
                400,
                "name the grant to withdraw: {\"tool\": \"write_file\"}, {\"tool\": \"shell\", \
                 \"command\": \"…\"} or {\"all\": true} (or ?tool=…&command=…, ?all=true)",
            ),
        };
    let rt = state.rt();
    let gone = match rt.store.revoke_grants(id, what) {
        Ok(gone) => gone,
        Err(e) => return store_failed(e),
    };
    if gone.is_empty() && matches!(what, Revoke::Call(_)) {
        let label = Grant {
            tool: r.tool.unwrap_or_default(),
            command: r.command,
            level: evolve_core::permission::Level::L3,
            definition: None,
        }
        .label();
        return error(
            404,
            format!(
                "session {id} has no grant for {label} — GET /v1/sessions/{id}/grants lists them"
            ),
        );
    }
    let left = match rt.store.grants(id) {
        Ok(g) => g,
        Err(e) => return store_failed(e),
    };
    Response::json(
        200,
        &json!({
            "revoked": gone.iter().map(grant_json).collect::<Vec<_>>(),
            "data": left.iter().map(grant_json).collect::<Vec<_>>(),
        }),
    )
}

fn store_failed(e: StoreError) -> Reply {
    match e {
        StoreError::NotFound(what) => error(404, format!("not found: {what}")),
        other => error(500, format!("the store failed: {other}")),
    }
}
