//! The routes: which request goes where, and the JSON API besides the chat endpoint.
//!
//! Every answer is JSON (errors in OpenAI's shape, see [`super::error`]); bad input is a
//! 4xx with a message saying what to send instead, never a 5xx. Store failures are 500s
//! with the store's own message (which never holds a secret).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use evolve_core::memory::{Category, Memory, MemoryId};
use evolve_core::permission::{Decision, Grants, Policy};
use evolve_core::provenance::Provenance;
use evolve_core::text::{f1, KeywordSet, Lang};
use serde_json::{json, Value};

use super::http::{form_value, percent_decode, Request, Response};
use super::memory_patch::{MemoryPatch, EMPTY_CONTENT};
use super::request::{body, field, opt_str, store_error, tri, Reply};
use super::{
    assets, chat, error, grants, mcp_servers, prompt, skill_edit, style, tasks, uploads, State,
};
use crate::agents::mcp_levels::user_level::{set_level, LevelError};
use crate::agents::ToolAgent;
use crate::clock::now;

/// What a route is called with: the server, the request and the path's `{…}` segments
/// in order (percent-decoded).
type Handler = fn(&Arc<State>, &Request, &[&str]) -> Reply;

/// Every route: method, path (`{name}` matches one segment, spelt as in
/// `/openapi.json`) and handler. Dispatch and the 405's `Allow` header both read it; a
/// path is served by the first pattern it matches, so a fixed segment
/// (`/v1/memory/maintain`) comes before the pattern it would also match
/// (`/v1/memory/{id}`). `HEAD` is served as `GET`.
static ROUTES: &[(&str, &str, Handler)] = &[
    ("GET", "/", |_, r, _| assets::serve(r, "index.html")),
    ("GET", "/login", |_, r, _| assets::serve(r, "login.html")),
    ("POST", "/login", |s, r, _| login(s, r)),
    ("GET", "/static/{file}", |_, r, p| assets::serve(r, p[0])),
    ("GET", "/favicon.ico", |_, r, _| {
        assets::serve(r, "favicon.ico")
    }),
    ("GET", "/health", |s, _, _| health(s)),
    ("POST", "/v1/login/code", |s, _, _| login_code(s)),
    ("GET", "/openapi.json", |_, r, _| {
        assets::serve(r, "openapi.json")
    }),
    ("GET", "/docs", |_, r, _| assets::serve(r, "docs.html")),
    ("GET", "/v1/models", |s, _, _| models(s)),
    ("POST", "/v1/chat/completions", |s, r, _| {
        chat::completions(s, r)
    }),
    ("GET", "/v1/sessions", |s, r, _| sessions(s, r)),
    ("POST", "/v1/sessions", |s, r, _| create_session(s, r)),
    ("GET", "/v1/sessions/{id}", |s, _, p| session(s, p[0])),
    ("PATCH", "/v1/sessions/{id}", |s, r, p| {
        rename_session(s, r, p[0])
    }),
    ("DELETE", "/v1/sessions/{id}", |s, _, p| {
        delete_session(s, p[0])
    }),
    ("GET", "/v1/sessions/{id}/messages", |s, _, p| {
        messages(s, p[0])
    }),
    ("GET", "/v1/sessions/{id}/export", |s, r, p| {
        export(s, r, p[0])
    }),
    ("GET", "/v1/sessions/{id}/turns/{n}", |s, _, p| {
        turn(s, p[0], p[1])
    }),
    ("PUT", "/v1/sessions/{id}/turns/{n}/rating", |s, r, p| {
        rate_turn(s, r, p[0], p[1])
    }),
    ("GET", "/v1/sessions/{id}/pending", |s, _, p| {
        pending(s, p[0])
    }),
    ("POST", "/v1/sessions/{id}/pending/{call}", |s, r, p| {
        answer(s, r, p[0], p[1])
    }),
    ("POST", "/v1/sessions/{id}/elicitations/{eid}", |s, r, p| {
        answer_elicitation(s, r, p[0], p[1])
    }),
    ("GET", "/v1/sessions/{id}/grants", |s, _, p| {
        grants::list(s, p[0])
    }),
    ("DELETE", "/v1/sessions/{id}/grants", |s, r, p| {
        grants::revoke(s, r, p[0])
    }),
    ("GET", "/v1/memory", |s, r, _| memories(s, r)),
    ("POST", "/v1/memory", |s, r, _| add_memory(s, r)),
    ("POST", "/v1/memory/maintain", |s, r, _| {
        maintain_memories(s, r)
    }),
    ("GET", "/v1/memory/style", |s, _, _| style::list(s)),
    ("DELETE", "/v1/memory/style", |s, _, _| style::clear(s)),
    ("DELETE", "/v1/memory/style/{n}", |s, r, p| {
        style::remove(s, r, p[0])
    }),
    ("GET", "/v1/memory/{id}", |s, _, p| {
        with_id(p[0], |id| get_memory(s, id))
    }),
    ("PATCH", "/v1/memory/{id}", |s, r, p| {
        with_id(p[0], |id| update_memory(s, r, id))
    }),
    ("DELETE", "/v1/memory/{id}", |s, _, p| {
        with_id(p[0], |id| delete_memory(s, id))
    }),
    ("GET", "/v1/skills", |s, _, _| skills(s)),
    ("POST", "/v1/skills", |s, r, _| skill_edit::create(s, r)),
    ("GET", "/v1/skills/{name}", |s, _, p| skill(s, p[0])),
    ("PUT", "/v1/skills/{name}", |s, r, p| {
        skill_edit::put(s, r, p[0])
    }),
    ("DELETE", "/v1/skills/{name}", |s, _, p| {
        delete_skill(s, p[0])
    }),
    ("GET", "/v1/tools", |s, _, _| tools(s)),
    ("POST", "/v1/tools/{name}/run", |s, r, p| {
        run_tool(s, r, p[0])
    }),
    ("GET", "/v1/mcp", |s, _, _| mcp(s)),
    ("POST", "/v1/mcp/servers", |s, r, _| mcp_servers::add(s, r)),
    ("DELETE", "/v1/mcp/servers/{name}", |s, _, p| {
        mcp_servers::remove(s, p[0])
    }),
    ("POST", "/v1/mcp/servers/{name}/reconnect", |s, _, p| {
        mcp_servers::reconnect(s, p[0])
    }),
    ("GET", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::login_status(s, p[0])
    }),
    ("POST", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::login(s, p[0])
    }),
    ("DELETE", "/v1/mcp/servers/{name}/login", |s, _, p| {
        mcp_servers::logout(s, p[0])
    }),
    ("PUT", "/v1/mcp/tools/{name}/level", |s, r, p| {
        mcp_level(s, r, p[0])
    }),
    ("GET", "/v1/channels", |s, _, _| super::channels::list(s)),
    ("POST", "/v1/channels/pair", |s, r, _| {
        super::channels::pair(s, r)
    }),
    ("PUT", "/v1/channels/{name}", |s, r, p| {
        super::channels::put(s, r, p[0])
    }),
    ("DELETE", "/v1/channels/{name}", |s, _, p| {
        super::channels::delete(s, p[0])
    }),
    ("POST", "/v1/channels/{name}/test", |s, _, p| {
        super::channels::test(s, p[0])
    }),
    ("DELETE", "/v1/channels/{name}/paired/{user}", |s, _, p| {
        super::channels::unpair(s, p[0], p[1])
    }),
    ("GET", "/v1/tasks", |s, _, _| tasks::list(s)),
    ("POST", "/v1/tasks", |s, r, _| tasks::create(s, r)),
    ("GET", "/v1/tasks/{id}", |s, _, p| tasks::get(s, p[0])),
    ("PATCH", "/v1/tasks/{id}", |s, r, p| {
        tasks::update(s, r, p[0])
    }),
    ("DELETE", "/v1/tasks/{id}", |s, _, p| tasks::delete(s, p[0])),
    ("POST", "/v1/tasks/{id}/run", |s, _, p| tasks::run(s, p[0])),
    ("GET", "/v1/tasks/{id}/runs", |s, r, p| {
        tasks::runs(s, r, p[0])
    }),
    ("POST", "/v1/workspace/files", |s, r, _| {
        uploads::upload(s, r)
    }),
    ("GET", "/v1/search", |s, r, _| search(s, r)),
    ("GET", "/v1/prompt", |s, _, _| prompt::list(s)),
    ("POST", "/v1/prompt", |s, r, _| prompt::set(s, r)),
    ("POST", "/v1/prompt/evolve", |s, r, _| prompt::evolve(s, r)),
    ("GET", "/v1/prompt/{version}", |s, _, p| {
        prompt::show(s, p[0])
    }),
    ("POST", "/v1/prompt/{version}/activate", |s, _, p| {
        prompt::activate(s, p[0])
    }),
    ("GET", "/v1/config", |s, _, _| config(s)),
    ("GET", "/v1/settings/model", |s, _, _| {
        super::settings::model(s)
    }),
    ("PUT", "/v1/settings/model", |s, r, _| {
        super::settings::update(s, r)
    }),
    ("POST", "/v1/settings/model/test", |s, r, _| {
        super::settings::test(s, r)
    }),
    ("POST", "/v1/settings/model/import", |s, r, _| {
        super::settings::import(s, r)
    }),
    ("POST", "/v1/config/profile", |s, r, _| switch_profile(s, r)),
    // tea-agent's names, for scripts migrating from it.
    ("POST", "/v1/config/switch", |s, r, _| switch_profile(s, r)),
    ("POST", "/v1/export/pdf", |s, r, _| export_print(s, r)),
    // Internal (not in /openapi.json): how a command run beside serve gets the store.
    ("POST", "/v1/store/lend", |s, r, _| super::lend::lend(s, r)),
];

/// The `{…}` segments of `path` if it has the shape of `pattern`.
fn matches<'p>(pattern: &str, path: &[&'p str]) -> Option<Vec<&'p str>> {
    let fixed: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    if fixed.len() != path.len() {
        return None;
    }
    let mut params = Vec::new();
    for (want, got) in fixed.iter().zip(path) {
        if want.starts_with('{') {
            params.push(*got);
        } else if want != got {
            return None;
        }
    }
    Some(params)
}

/// Dispatches by method and path: the first pattern the path matches decides; a method
/// it does not serve is a 405 naming those it does (RFC 9110 §15.5.6), a path no pattern
/// matches a 404.
pub fn route(state: &Arc<State>, req: &Request) -> Reply {
    let segments: Option<Vec<String>> = req
        .path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let Some(segments) = segments else {
        return error(400, "the path has a malformed %-escape");
    };
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = match req.method.as_str() {
        "HEAD" => "GET",
        m => m,
    };
    let Some((pattern, params)) = ROUTES
        .iter()
        .find_map(|(_, pattern, _)| Some((*pattern, matches(pattern, &segs)?)))
    else {
        return error(404, format!("no route {}", req.path));
    };
    let same_path = || ROUTES.iter().filter(move |(_, p, _)| *p == pattern);
    match same_path().find(|(m, _, _)| *m == method) {
        Some((_, _, handler)) => handler(state, req, &params),
        None => {
            let mut allow: Vec<&str> = Vec::new();
            for (m, _, _) in same_path() {
                allow.push(m);
                if *m == "GET" {
                    allow.push("HEAD");
                }
            }
            error(405, format!("{} is not allowed here", req.method))
                .with("Allow", allow.join(", "))
        }
    }
}

fn health(state: &State) -> Reply {
    Response::json(
        200,
        &json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_secs": state.started.elapsed().as_secs(),
        }),
    )
}

fn models(state: &State) -> Reply {
    let main = &state.rt().config.model.main;
    let model = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "evolve"});
    Response::json(
        200,
        &json!({"object": "list", "data": [model("evolve"), model(main)]}),
    )
}

/// `POST /v1/login/code`: a one-time code that signs a browser in (what `evolve open`
/// puts on a browser's command line instead of the token).
fn login_code(state: &State) -> Reply {
    match state.auth.codes.issue(std::time::Instant::now()) {
        Ok(code) => Response::json(
            200,
            &json!({"code": code, "expires_in": super::auth::CODE_LIFETIME.as_secs()}),
        ),
        Err(e) => error(500, format!("cannot draw a random code: {e}")),
    }
}

/// `POST /login`: the token from the form (pasted, or taken from the sign-in link's
/// fragment by the page), or a one-time code, becomes the HttpOnly cookie.
fn login(state: &State, req: &Request) -> Reply {
    let text = String::from_utf8_lossy(&req.body);
    let token = form_value(&text, "token").unwrap_or_default();
    let code = form_value(&text, "code").unwrap_or_default();
    let signed_in = if code.is_empty() {
        state.auth.token_matches(token.trim())
    } else {
        state
            .auth
            .codes
            .redeem(code.trim(), std::time::Instant::now())
    };
    if !signed_in {
        return Response::bytes(303, "text/plain", &b"wrong token"[..])
            .with("Location", "/login?failed=1");
    }
    // `Secure` only where the browser talks TLS: over plain HTTP it would drop the
    // cookie.
    let secure = if super::auth::came_over_tls(req) {
        "; Secure"
    } else {
        ""
    };
    Response::bytes(303, "text/plain", &b"signed in"[..])
        .with("Location", "/")
        .with("Cache-Control", "no-store")
        .with(
            "Set-Cookie",
            format!(
                "{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000{secure}",
                super::auth::COOKIE,
                state.auth.token()
            ),
        )
}

// ---- sessions -------------------------------------------------------------------

/// Newest first; `?limit=N&offset=M` pages through many (all by default).
fn sessions(state: &State, req: &Request) -> Reply {
    let number = |name: &str| match req.query_param(name).map(|v| v.parse::<usize>()) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(n)),
        Some(Err(_)) => Err(error(400, format!("{name} must be a non-negative number"))),
    };
    let limit = field!(number("limit")).unwrap_or(usize::MAX);
    let offset = field!(number("offset")).unwrap_or(0);
    let all = tri!(state.rt().store.sessions());
    let total = all.len();
    let page: Vec<_> = all.into_iter().skip(offset).take(limit).collect();
    Response::json(200, &json!({ "data": page, "total": total }))
}

fn create_session(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    let title = field!(opt_str(&b, "title")).unwrap_or_default();
    let s = tri!(state.rt().store.create_session(title.trim(), now()));
    Response::json(201, &json!(s))
}

fn session(state: &State, id: &str) -> Reply {
    Response::json(200, &json!(tri!(state.rt().store.session(id))))
}

fn rename_session(state: &State, req: &Request, id: &str) -> Reply {
    let b = field!(body(req));
    let Some(title) = field!(opt_str(&b, "title")) else {
        return error(400, "send {\"title\": \"…\"}");
    };
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    tri!(store.rename_session(id, title.trim()));
    Response::json(200, &json!(tri!(store.session(id))))
}

fn delete_session(state: &State, id: &str) -> Reply {
    if state.turns.lock().is_ok_and(|t| t.contains_key(id)) {
        return error(
            409,
            format!("a turn is running in session {id}; stop it first"),
        );
    }
    tri!(state.rt().store.remove_session(id));
    Response::json(200, &json!({"deleted": true, "id": id}))
}

/// `GET /v1/sessions/{id}/messages`: the messages in order, each tool result with its
/// call's record (`evolve_call`: level, decision, how it was answered, ran, error) so a
/// reloaded page draws the same card as the live one; and which turns failed or were
/// stopped (`failed`: turn → why) or replaced (`superseded`).
fn messages(state: &State, id: &str) -> Reply {
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    let session = tri!(store.session(id));
    let export = tri!(store.export_session(id));
    let mut calls = std::collections::HashMap::new();
    let mut failed = serde_json::Map::new();
    let mut turns = serde_json::Map::new();
    // The person's own grades (👍 / 👎), shown on their answers again.
    let rated: std::collections::HashMap<u64, &str> = tri!(store.evaluations(id))
        .into_iter()
        .filter_map(|e| match e.reason.as_str() {
            RATED_UP => Some((e.turn, "up")),
            RATED_DOWN => Some((e.turn, "down")),
            _ => None,
        })
        .collect();
    for (n, text) in tri!(store.turns(id)) {
        let Ok(mut record) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if let Some(why) = record["failed"].as_str() {
            failed.insert(n.to_string(), json!(why));
        }
        // What the turn card's line says, as it said live.
        let count = |k: &str| record[k].as_array().map_or(0, Vec::len);
        let mut line = json!({
            "memories": count("memories"),
            "tools": count("tools"),
            "score": record["evaluation"]["score"],
            "answer_ms": record["answer_ms"],
        });
        // The sub-turns of its subtasks calls, drawn again as nested cards.
        if let Some(subs) = record.get_mut("subtasks").map(Value::take) {
            line["subtasks"] = subs;
        }
        if let Some(e) = rated.get(&n) {
            line["rating"] = json!(e);
        }
        turns.insert(n.to_string(), line);
        if let Some(Value::Array(tools)) = record.get_mut("tools").map(Value::take) {
            for mut call in tools {
                let key = call["id"].as_str().unwrap_or_default().to_string();
                if let Some(o) = call.as_object_mut() {
                    o.retain(|k, _| {
                        matches!(
                            k.as_str(),
                            "level" | "decision" | "answer" | "ran" | "is_error"
                        )
                    });
                }
                calls.insert((n, key), call);
            }
        }
    }
    let data: Vec<Value> = export
        .messages
        .iter()
        .map(|m| {
            let mut v = serde_json::to_value(&m.message).unwrap_or_default();
            let call = m
                .message
                .tool_call_id
                .as_ref()
                .and_then(|c| calls.remove(&(m.turn, c.clone())));
            if let Some(o) = v.as_object_mut() {
                o.insert("seq".into(), json!(m.seq));
                o.insert("turn".into(), json!(m.turn));
                o.insert("at".into(), json!(m.at));
                if let Some(call) = call {
                    o.insert("evolve_call".into(), call);
                }
            }
            v
        })
        .collect();
    Response::json(
        200,
        &json!({
            "data": data,
            "failed": failed,
            "superseded": session.superseded,
            "turns": turns,
        }),
    )
}

/// `POST /v1/export/pdf {session}` (tea-agent's route): the session as a print-ready
/// HTML page (title, dates, page margins, turns kept whole), shown inline: the browser's
/// Print makes the PDF. A PDF writer with the fonts Chinese needs does not fit the
/// binary's budget.
fn export_print(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    let id = match field!(opt_str(&b, "session")) {
        Some(id) => id,
        None => match field!(opt_str(&b, "session_id")) {
            Some(id) => id,
            None => return error(400, "send {\"session\": \"SESSION_ID\"}"),
        },
    };
    let export = tri!(state.rt().store.export_session(&id));
    Response::bytes(
        200,
        "text/html; charset=utf-8",
        crate::store::transcript::html(&export).into_bytes(),
    )
    .with("Content-Disposition", "inline")
    .with(
        "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'",
    )
}

/// The download's name: the chat's title (`filename*`, UTF-8, for browsers that read it),
/// and a plain ASCII one (`filename`) from the title's letters or else the id. Titles and
/// ids come from people and imported files: only letters, digits, `-` and `_` are kept,
/// so nothing can end the parameter or name a folder.
fn download_name(title: &str, id: &str, ext: &str) -> String {
    let plain = |s: &str| -> String {
        let mut out = String::new();
        for c in s.chars().take(80) {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                out.push(c);
            } else if !out.ends_with('_') {
                out.push('_');
            }
        }
        out.trim_matches('_').to_string()
    };
    let ascii = match plain(title) {
        t if t.len() >= 3 => t,
        _ => format!("evolve-{}", plain(id)),
    };
    let title = title.trim();
    if title.is_empty() {
        return format!("attachment; filename=\"{ascii}.{ext}\"");
    }
    let name: String = title
        .chars()
        .take(80)
        .map(|c| {
            if c.is_control() || "/\\".contains(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    let utf8 = percent_encoding::utf8_percent_encode(&name, percent_encoding::NON_ALPHANUMERIC);
    format!("attachment; filename=\"{ascii}.{ext}\"; filename*=UTF-8''{utf8}.{ext}")
}

fn export(state: &State, req: &Request, id: &str) -> Reply {
    let export = tri!(state.rt().store.export_session(id));
    let format = req.query_param("format").unwrap_or_else(|| "md".into());
    let (text, mime, ext) = match format.as_str() {
        "md" | "markdown" => (
            crate::store::transcript::markdown(&export),
            "text/markdown; charset=utf-8",
            "md",
        ),
        "html" => (
            crate::store::transcript::html(&export),
            "text/html; charset=utf-8",
            "html",
        ),
        "json" => (
            serde_json::to_string_pretty(&export).unwrap_or_default(),
            "application/json",
            "json",
        ),
        other => {
            return error(
                400,
                format!("unknown format {other:?}: use md, html or json"),
            )
        }
    };
    let mut resp = Response::bytes(200, mime, text.into_bytes()).with(
        "Content-Disposition",
        download_name(&export.session.title, id, ext),
    );
    if ext == "html" {
        // The export page has its own inline style and no script.
        resp = resp.with(
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
        );
    }
    resp
}

fn turn(state: &State, id: &str, n: &str) -> Reply {
    let Ok(n) = n.parse::<u64>() else {
        return error(400, "the turn number must be a positive integer");
    };
    let rt = state.rt();
    let Some(json) = tri!(rt.store.turn(id, n)) else {
        return error(404, format!("session {id} has no turn {n}"));
    };
    // Records are stored without their reply (the turn's last message holds it);
    // records stored before that still carry it.
    let mut record: Value = serde_json::from_str(&json).unwrap_or_default();
    drop(json);
    if record
        .get("reply")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let answer = tri!(rt.store.turn_answer(id, n)).unwrap_or_default();
        if let Some(o) = record.as_object_mut() {
            o.insert("reply".into(), Value::String(answer));
        }
    }
    Response::json(200, &record)
}

/// The evaluation's reason when the person graded the answer (👍 / 👎): their grade
/// replaces the evaluator's, and the page shows it as theirs.
const RATED_UP: &str = "rated good by the person";
const RATED_DOWN: &str = "rated not good by the person";

/// `PUT /v1/sessions/{id}/turns/{n}/rating` `{"rating": "up"|"down"}`: the person's own
/// grade of an answer. It is the turn's evaluation from then on (1 or 0: what reflection
/// and the prompt's evolution read), and a 👍 on a turn that read nothing from outside
/// (no tool call) teaches a style note, as a high evaluation does.
fn rate_turn(state: &State, req: &Request, id: &str, n: &str) -> Reply {
    let Ok(n) = n.parse::<u64>() else {
        return error(400, "the turn number must be a positive integer");
    };
    let b = field!(body(req));
    let up = match b.get("rating").and_then(Value::as_str) {
        Some("up") => true,
        Some("down") => false,
        _ => return error(400, "`rating` must be \"up\" or \"down\""),
    };
    let rt = state.rt();
    let Some(json) = tri!(rt.store.turn(id, n)) else {
        return error(404, format!("session {id} has no turn {n}"));
    };
    let record: Value = serde_json::from_str(&json).unwrap_or_default();
    if record["failed"].is_string() {
        return error(409, format!("turn {n} has no answer to rate"));
    }
    let eval = crate::store::Evaluation {
        session: id.to_string(),
        turn: n,
        score: if up { 1.0 } else { 0.0 },
        reason: (if up { RATED_UP } else { RATED_DOWN }).to_string(),
        at: now(),
    };
    tri!(rt.store.add_evaluation(&eval));
    let mut style_note = None;
    if up && record["tools"].as_array().is_none_or(Vec::is_empty) {
        let export = tri!(rt.store.export_session(id));
        let question = export
            .messages
            .iter()
            .find(|m| m.turn == n && m.message.role.name() == "user")
            .map(|m| m.message.content.as_str().to_string())
            .unwrap_or_default();
        let answer = tri!(rt.store.turn_answer(id, n)).unwrap_or_default();
        let (mut usage, mut problems) = (crate::llm::Usage::default(), Vec::new());
        style_note = crate::agents::ReflectionAgent.learn_style(
            &rt,
            &question,
            &answer,
            &mut usage,
            &mut problems,
        );
        for p in problems {
            log::info!("style note from a rating of {id} turn {n}: {p}");
        }
    }
    Response::json(
        200,
        &json!({"turn": n, "rating": if up { "up" } else { "down" }, "score": eval.score, "style_note": style_note}),
    )
}

fn pending(state: &State, id: &str) -> Reply {
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    tri!(store.session(id));
    let calls = tri!(store.pending(id));
    let data: Vec<Value> = calls
        .iter()
        .map(|c| chat::pending_json(c, Lang::En))
        .collect();
    // The waiting turn's question (not among the messages until the turn ends), so a
    // reloaded page shows what the call is for.
    let mut v = json!({ "data": data });
    if let Some(p) = tri!(store.parked(id)) {
        v["question"] = json!(p.state.question());
        v["turn"] = json!(p.turn);
    }
    // An MCP server's question waiting in a running call (a page reloaded meanwhile).
    v["elicitations"] = json!(state.elicitations.of_session(id));
    Response::json(200, &v)
}

/// A person's answer to an MCP server's question: `{"action": "accept", "content":
/// {…}}` (checked against the server's form: a 400 names the field), `decline` or
/// `cancel`.
fn answer_elicitation(state: &Arc<State>, req: &Request, id: &str, eid: &str) -> Reply {
    let b = field!(body(req));
    let action = field!(opt_str(&b, "action")).unwrap_or_default();
    if !matches!(action.as_str(), "accept" | "decline" | "cancel") {
        return error(
            400,
            "send {\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {…}}",
        );
    }
    let content = match b.get("content") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return error(400, "content must be a JSON object"),
    };
    match state.elicitations.answer(id, eid, &action, &content) {
        Ok(()) => Response::json(200, &json!({"accepted": true})),
        Err(chat::ElicitRefusal::NotWaiting) => {
            error(404, format!("no question {eid:?} waits in session {id:?}"))
        }
        Err(chat::ElicitRefusal::Invalid(wrong)) => {
            let text: Vec<String> = wrong.iter().map(|(f, why)| format!("{f} {why}")).collect();
            let mut v = crate::web::error_value(400, &text.join("; "), None);
            v["error"]["param"] = json!(wrong[0].0);
            Response::json(400, &v)
        }
    }
}

fn answer(state: &Arc<State>, req: &Request, id: &str, call: &str) -> Reply {
    let b = field!(body(req));
    let Some(answer) = field!(opt_str(&b, "answer")) else {
        return error(400, "send {\"answer\": \"yes\" | \"no\" | \"always\"}");
    };
    if !matches!(answer.as_str(), "yes" | "no" | "always") {
        return error(400, "the answer must be \"yes\", \"no\" or \"always\"");
    }
    if state.approvals.answer(id, call, answer.clone()) {
        Response::json(200, &json!({"accepted": true}))
    } else {
        chat::answer_parked(state, id, call, &answer)
    }
}

// ---- memory ---------------------------------------------------------------------

/// A memory as the API shows it: without keyword hashes and embedding.
fn memory_json(m: &Memory) -> Value {
    let mut v = serde_json::to_value(m).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        // What the store derives for ranking is not the memory's: keywords, their
        // count and rules version, the embedding and its model, the hash.
        for derived in [
            "keywords",
            "keyword_count",
            "keywords_version",
            "subjects",
            "embedding",
            "embedding_model",
            "content_hash",
        ] {
            o.remove(derived);
        }
        o.insert("priority".into(), json!(m.priority as u8));
        // Where it was learned from: `world` is information from a page or a tool.
        o.insert("source".into(), json!(m.source.as_str()));
    }
    v
}

fn with_id(id: &str, f: impl FnOnce(MemoryId) -> Reply) -> Reply {
    match id.trim_start_matches('#').parse::<MemoryId>() {
        Ok(id) => f(id),
        Err(_) => error(400, format!("{id:?} is not a memory id (a number)")),
    }
}

fn memories(state: &State, req: &Request) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let limit = match req.query_param("limit").map(|l| l.parse::<usize>()) {
        None => 200,
        Some(Ok(n)) => n.clamp(1, 10_000),
        Some(Err(_)) => return error(400, "limit must be a number"),
    };
    let q = req.query_param("q").unwrap_or_default();
    let q = q.trim();
    let data: Vec<Value> = rt.store.with_memories(|all| {
        if q.is_empty() {
            all.iter().rev().take(limit).map(memory_json).collect()
        } else {
            let query = KeywordSet::of(&rt.tokenizer, q);
            let lower = q.to_lowercase();
            let mut scored: Vec<(f32, &Memory)> = all
                .iter()
                .map(|m| {
                    let mut s = f1(query.as_slice(), m.keywords.as_slice());
                    if m.content.to_lowercase().contains(&lower) {
                        s += 1.0;
                    }
                    (s, m)
                })
                .filter(|(s, _)| *s > 0.0)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            scored
                .into_iter()
                .take(limit)
                .map(|(_, m)| memory_json(m))
                .collect()
        }
    });
    Response::json(200, &json!({ "data": data }))
}

fn get_memory(state: &State, id: MemoryId) -> Reply {
    let m = tri!(state.rt().store.memory(id));
    if m.deleted {
        return error(404, format!("memory #{id} was deleted"));
    }
    Response::json(200, &memory_json(&m))
}

/// The body of a memory route as a [`MemoryPatch`], or its 400.
fn memory_patch(req: &Request) -> Result<MemoryPatch, Reply> {
    MemoryPatch::from_body(body(req)?).map_err(|e| error(400, e))
}

fn add_memory(state: &State, req: &Request) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let patch = field!(memory_patch(req));
    let Some(content) = patch.content.as_deref() else {
        return error(400, "send {\"content\": \"what to remember\"}");
    };
    if content.trim().is_empty() {
        return error(400, EMPTY_CONTENT);
    }
    let now = now();
    let mut m = Memory::new(content.trim(), Category::default(), now, &rt.tokenizer);
    // Like `evolve memory add`: the category's priority (instruction 0, preference and
    // reminder 1, fact 2, general 3) unless one is given.
    let given_priority = patch.priority.is_some();
    field!(patch.apply(&mut m).map_err(|e| error(400, e)));
    if !given_priority {
        m.priority = m.category.default_priority();
    }
    m.refresh_derived(&rt.tokenizer);
    let outcome = tri!(rt
        .store
        .ingest_memory(m, &rt.config.core.memory, now, &rt.tokenizer));
    let (id, how) = match outcome {
        crate::store::Ingested::Inserted(id) => (id, "inserted"),
        crate::store::Ingested::Merged(id) => (id, "merged"),
        crate::store::Ingested::Duplicate(id) => (id, "duplicate"),
    };
    let mut v = memory_json(&tri!(rt.store.memory(id)));
    v["outcome"] = json!(how);
    Response::json(201, &v)
}

/// `POST /v1/memory/maintain` (body optional, `{"dry_run": true}`): runs memory
/// maintenance now and answers its report (model problems are in `problems`; a failed
/// store write is a 500 with the report's `error`).
fn maintain_memories(state: &State, req: &Request) -> Reply {
    let body = field!(body(req));
    let dry_run = match body.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return error(400, "dry_run must be true or false"),
    };
    let rt = state.rt();
    let never = AtomicBool::new(false);
    let report = crate::agents::maintain::run(&rt, now(), dry_run, &never);
    match (&report.error, serde_json::to_value(&report)) {
        (Some(e), _) => error(500, format!("memory maintenance stopped: {e}")),
        (None, Ok(v)) => Response::json(200, &v),
        (None, Err(e)) => error(500, format!("the report cannot be encoded: {e}")),
    }
}

fn update_memory(state: &State, req: &Request, id: MemoryId) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let patch = field!(memory_patch(req));
    let mut m = tri!(rt.store.memory(id));
    if m.deleted {
        return error(404, format!("memory #{id} was deleted"));
    }
    // The person rewriting, re-ranking or re-filing a memory makes it theirs.
    if patch.content.is_some() || patch.priority.is_some() || patch.category.is_some() {
        m.source = evolve_core::provenance::Source::Person;
    }
    field!(patch.apply(&mut m).map_err(|e| error(400, e)));
    m.refresh_derived(&rt.tokenizer);
    tri!(rt.store.update_memory(&m));
    Response::json(200, &memory_json(&m))
}

fn delete_memory(state: &State, id: MemoryId) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let m = tri!(rt.store.memory(id));
    if m.deleted {
        return error(404, format!("memory #{id} was already deleted"));
    }
    tri!(rt.store.remove_memory(id));
    Response::json(200, &json!({"deleted": true, "id": id}))
}

// ---- skills, tools, MCP ---------------------------------------------------------

fn skills(state: &State) -> Reply {
    let rt = state.rt();
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    let data: Vec<Value> = rt
        .skills
        .current()
        .all()
        .iter()
        .map(|s| {
            json!({
                "name": s.summary.name,
                "description": s.summary.description,
                "tags": s.summary.tags,
                "source": s.source.name(),
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

/// Removes a user or learned skill (bundled skills cannot be removed: 409); the running
/// server stops offering it at once.
fn delete_skill(state: &State, name: &str) -> Reply {
    if evolve_core::skill::validate_name(name).is_err() {
        return error(404, format!("no skill named {name:?}"));
    }
    let rt = state.rt();
    match crate::skills::remove_user_skill(&rt.config.skills_dir(), name) {
        Ok(_) => {
            rt.skills.reload(&rt.config.skills_dir(), &rt.tokenizer);
            let bundled = rt.skills.current().get(name).is_some();
            Response::json(200, &json!({"deleted": true, "bundled_again": bundled}))
        }
        Err(crate::skills::RemoveError::Bundled) => error(
            409,
            format!("{name} is a bundled skill: it ships in the binary and cannot be removed"),
        ),
        Err(crate::skills::RemoveError::Unknown) => error(404, format!("no skill named {name:?}")),
        Err(crate::skills::RemoveError::Io(dir, e)) => {
            error(500, format!("cannot remove {}: {e}", dir.display()))
        }
    }
}

fn skill(state: &State, name: &str) -> Reply {
    let rt = state.rt();
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    match rt.skills.current().get(name) {
        Some(s) => Response::json(
            200,
            &json!({
                "name": s.summary.name,
                "description": s.summary.description,
                "tags": s.summary.tags,
                "source": s.source.name(),
                "body": s.body,
                // The whole SKILL.md of a user skill, to edit it.
                "text": (s.source != crate::skills::Source::Bundled)
                    .then(|| std::fs::read_to_string(rt.config.skills_dir().join(name).join("SKILL.md")).ok())
                    .flatten(),
            }),
        ),
        None => error(404, format!("no skill named {name:?}")),
    }
}

fn tools(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let cancel = AtomicBool::new(false);
    let grants = Grants::default();
    let policy = Policy::Interactive;
    let set = ToolAgent.for_turn(rt, &cancel);
    let data: Vec<Value> = ToolAgent
        .specs(&set)
        .into_iter()
        .map(|spec| {
            let check = ToolAgent.check(
                rt,
                &set,
                &spec.name,
                "{}",
                &grants,
                &policy,
                &Provenance::default(),
                &[],
            );
            let mcp =
                crate::mcp_spec::split_name(&spec.name).is_some() && !rt.tools.has(&spec.name);
            json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
                "level": check.class.level.to_string(),
                "source": if mcp { "mcp" } else { "builtin" },
                "origin": format!("{:?}", check.class.source).to_lowercase(),
                // An MCP tool whose definition replaced another: what changed.
                "changed": ToolAgent.definition_change(&set, &spec.name).map(|c| c.to_json()),
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

/// Runs one tool call under the same check as a model's call in a headless turn: what
/// the headless policy allows runs, anything that needs a person is refused (403).
fn run_tool(state: &State, req: &Request, name: &str) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let b = field!(body(req));
    let arguments = match b.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return error(400, "arguments must be a JSON object"),
    };
    let cancel = AtomicBool::new(false);
    let set = ToolAgent.for_turn(rt, &cancel);
    if !ToolAgent.has(rt, &set, name) {
        return error(
            404,
            format!("no tool named {name:?} (GET /v1/tools lists them)"),
        );
    }
    let policy = Policy::headless(None, false, &rt.config.core.permission);
    // The arguments are the caller's own: no outside text is in this call.
    let check = ToolAgent.check(
        rt,
        &set,
        name,
        &arguments,
        &Grants::default(),
        &policy,
        &Provenance::default(),
        &[],
    );
    let level = check.level;
    match check.decision {
        Decision::Run | Decision::RunScoped => {}
        Decision::Refuse(reason) => {
            return error(
                403,
                format!(
                    "{name} at {level} is refused: {} — a call that needs a person runs \
                     only from a chat (the UI or `evolve chat`)",
                    reason_text(&reason)
                ),
            )
        }
        _ => {
            return error(
                403,
                format!("{name} at {level} needs a person's approval: run it from a chat"),
            )
        }
    }
    let out = ToolAgent.run(
        rt,
        &set,
        "api",
        name,
        &arguments,
        // The caller's own call: no outside text is in it.
        crate::tools::RunAs {
            level,
            offline: false,
            world: false,
        },
        now(),
        &cancel,
        &mut crate::mcp::NoEvents,
    );
    Response::json(
        200,
        &json!({"output": out.content, "is_error": out.is_error, "level": level.to_string()}),
    )
}

fn reason_text(r: &evolve_core::permission::RefusalReason) -> String {
    use evolve_core::permission::RefusalReason as R;
    match r {
        R::Dangerous => "L5 calls are never run".into(),
        R::NeedsPerson { .. } | R::SendsData { .. } => "it needs a person".into(),
    }
}

fn mcp(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let connected = rt.mcp.connected();
    let cancel = AtomicBool::new(false);
    let set = ToolAgent.for_turn(rt, &cancel);
    let grants = Grants::default();
    let data: Vec<Value> = rt
        .mcp
        .specs()
        .iter()
        .map(|spec| {
            let tools: Vec<Value> = ToolAgent
                .mcp_entries(&set)
                .iter()
                .filter(|e| e.server == spec.name)
                .map(|e| {
                    let check = ToolAgent.check(
                        rt,
                        &set,
                        &e.full_name,
                        "{}",
                        &grants,
                        &Policy::Interactive,
                        &Provenance::default(),
                        &[],
                    );
                    json!({
                        "name": e.full_name,
                        "description": e.tool.description,
                        "level": check.class.level.to_string(),
                        "origin": format!("{:?}", check.class.source).to_lowercase(),
                        "changed": e.change.as_ref().map(|c| c.to_json()),
                    })
                })
                .collect();
            let transport = match &spec.transport {
                crate::mcp_spec::Transport::Stdio { .. } => "stdio",
                crate::mcp_spec::Transport::Http { .. } => "http",
            };
            let login = crate::mcp::oauth::LoginState::of(spec, &rt.store);
            json!({
                "name": spec.name,
                "source": mcp_servers::source(&spec.source),
                "transport": transport,
                "disabled": spec.disabled,
                "connected": connected.contains(&spec.name),
                "can_login": crate::mcp::oauth::applies(spec),
                "login": login.as_ref().map(|l| l.label(now())),
                "login_needed": login == Some(crate::mcp::oauth::LoginState::Needed),
                "tools": tools,
            })
        })
        .collect();
    Response::json(200, &json!({ "data": data }))
}

fn mcp_level(state: &State, req: &Request, name: &str) -> Reply {
    let b = field!(body(req));
    let Some(level) = field!(opt_str(&b, "level")) else {
        return error(400, "send {\"level\": \"L0\" … \"L5\" | \"auto\"}");
    };
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    match set_level(&rt.config, &rt.store, &rt.mcp.specs(), name, &level, now()) {
        Ok(change) => Response::json(
            200,
            &json!({"name": name, "level": level, "message": change.to_string()}),
        ),
        Err(LevelError::Store(e)) => store_error(e),
        Err(e) => error(400, e.to_string()),
    }
}

// ---- search, config -------------------------------------------------------------

fn search(state: &State, req: &Request) -> Reply {
    let q = req.query_param("q").unwrap_or_default();
    let q = q.trim().to_lowercase();
    if q.is_empty() {
        return error(400, "send ?q=words to search for");
    }
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    let all = tri!(store.sessions());
    let sessions: Vec<Value> = all
        .iter()
        .filter(|s| s.title.to_lowercase().contains(&q))
        .map(|s| json!(s))
        .collect();
    let mut messages = Vec::new();
    'outer: for s in &all {
        let Ok(export) = store.export_session(&s.id) else {
            continue;
        };
        for m in &export.messages {
            let text = m.message.content.as_str();
            if let Some(at) = text.to_lowercase().find(&q) {
                messages.push(json!({
                    "session": s.id,
                    "title": s.title,
                    "seq": m.seq,
                    "role": m.message.role.name(),
                    "snippet": snippet(text, at, q.len()),
                }));
                if messages.len() >= 100 {
                    break 'outer;
                }
            }
        }
    }
    let memories: Vec<Value> = store.with_memories(|ms| {
        ms.iter()
            .filter(|m| m.content.to_lowercase().contains(&q))
            .take(100)
            .map(memory_json)
            .collect()
    });
    Response::json(
        200,
        &json!({"sessions": sessions, "messages": messages, "memories": memories}),
    )
}

/// About 60 characters around a match (the lower-cased offset is close enough to the
/// original's for a preview; it is clamped to character boundaries).
fn snippet(text: &str, at: usize, len: usize) -> String {
    let start = text
        .char_indices()
        .map(|(i, _)| i)
        .take_while(|i| *i + 60 <= at)
        .last()
        .unwrap_or(0);
    let tail: String = text[start..].chars().take(120 + len).collect();
    let prefix = if start > 0 { "…" } else { "" };
    format!("{prefix}{}", evolve_core::text::one_line(&tail, 160))
}

fn config(state: &State) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let mut v = rt.config.to_json();
    v["profiles"] = json!(state.profiles);
    v["store"] = json!(rt.store.path().display().to_string());
    v["confinement"] = crate::sandbox::status().to_json();
    Response::json(200, &v)
}

fn switch_profile(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    // `name` and `config` are what tea-agent's /v1/config/switch took.
    let name = match field!(opt_str(&b, "profile")) {
        Some(n) => Some(n),
        None => match field!(opt_str(&b, "name")) {
            Some(n) => Some(n),
            None => field!(opt_str(&b, "config")),
        },
    };
    let Some(name) = name else {
        return error(400, "send {\"profile\": \"NAME\"}");
    };
    if !state.profiles.contains(&name) && name != "default" {
        return error(
            404,
            format!(
                "no profile {name:?} in config.toml (known: {})",
                state.profiles.join(", ")
            ),
        );
    }
    match state.switch_profile(&name) {
        Ok(_) => config(state),
        Err(e) => error(400, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_download_is_named_after_its_chat() {
        for (title, id, want) in [
            (
                "Trip to Kyoto",
                "s1",
                "attachment; filename=\"Trip_to_Kyoto.md\"; filename*=UTF-8''Trip%20to%20Kyoto.md",
            ),
            (
                "去京都 trip",
                "s2",
                "attachment; filename=\"trip.md\"; filename*=UTF-8''%E5%8E%BB%E4%BA%AC%E9%83%BD%20trip.md",
            ),
            (
                "旅行",
                "s-3",
                "attachment; filename=\"evolve-s-3.md\"; filename*=UTF-8''%E6%97%85%E8%A1%8C.md",
            ),
            ("", "a/../b", "attachment; filename=\"evolve-a_b.md\""),
            (
                "../../etc \"x\"",
                "s4",
                "attachment; filename=\"etc_x.md\"; filename*=UTF-8''%2E%2E%5F%2E%2E%5Fetc%20%22x%22.md",
            ),
        ] {
            assert_eq!(download_name(title, id, "md"), want, "{title:?}");
        }
    }

    /// The table and `/openapi.json` name the same routes (the favicon and the internal
    /// store lend aside, see `super::super::lend`), so what the API documents is what is
    /// served and a 405's `Allow` matches the document.
    #[test]
    fn the_route_table_is_the_openapi_document() {
        let doc: Value = serde_json::from_slice(&assets::file("openapi.json").expect("embedded"))
            .expect("openapi.json is JSON");
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                    documented.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        let served: BTreeSet<(String, String)> = ROUTES
            .iter()
            .filter(|(_, path, _)| !["/favicon.ico", "/v1/store/lend"].contains(path))
            .map(|(m, path, _)| (m.to_string(), path.to_string()))
            .collect();
        assert_eq!(served, documented);
    }

    #[test]
    fn the_first_matching_pattern_decides_and_yields_the_segments() {
        fn first<'p>(path: &[&'p str]) -> Option<(&'static str, Vec<&'p str>)> {
            ROUTES
                .iter()
                .find_map(|(_, p, _)| Some((*p, matches(p, path)?)))
        }
        assert_eq!(
            first(&["v1", "memory", "maintain"]),
            Some(("/v1/memory/maintain", vec![]))
        );
        assert_eq!(
            first(&["v1", "memory", "7"]),
            Some(("/v1/memory/{id}", vec!["7"]))
        );
        assert_eq!(
            first(&["v1", "sessions", "s1", "turns", "2"]),
            Some(("/v1/sessions/{id}/turns/{n}", vec!["s1", "2"]))
        );
        assert_eq!(first(&["v1", "nothing", "here"]), None);
    }
}
