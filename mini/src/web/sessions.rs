//! The session routes: list, create, rename, delete and read sessions, their messages,
//! turns and pending calls, export and print them, rate a turn, and answer a waiting call
//! or an MCP server's question.

use std::sync::Arc;

use evolve_core::text::Lang;
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::request::{body, field, opt_str, tri, Reply};
use super::{chat, error, said_error, waiting, State};
use crate::clock::now;
use crate::said::{Code, Said};

/// Newest first; `?limit=N&offset=M` pages through many (all by default).
pub(super) fn sessions(state: &State, req: &Request) -> Reply {
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

pub(super) fn create_session(state: &State, req: &Request) -> Reply {
    let b = field!(body(req));
    let title = field!(opt_str(&b, "title")).unwrap_or_default();
    let s = tri!(state.rt().store.create_session(title.trim(), now()));
    Response::json(201, &json!(s))
}

pub(super) fn session(state: &State, id: &str) -> Reply {
    Response::json(200, &json!(tri!(state.rt().store.session(id))))
}

/// `PATCH /v1/sessions/{id}`: a new title, pinned or not, archived or not — any of them.
pub(super) fn patch_session(state: &State, req: &Request, id: &str) -> Reply {
    let b = field!(body(req));
    if b.get("title").is_some_and(|v| !v.is_string()) {
        return error(400, "`title` must be a string");
    }
    let title = field!(opt_str(&b, "title"));
    let flag = |name: &str| match b.get(name) {
        None => Ok(None),
        Some(Value::Bool(v)) => Ok(Some(*v)),
        Some(_) => Err(error(400, format!("`{name}` must be true or false"))),
    };
    let (pinned, archived) = (field!(flag("pinned")), field!(flag("archived")));
    if title.is_none() && pinned.is_none() && archived.is_none() {
        return error(
            400,
            "send {\"title\": \"…\"}, {\"pinned\": true|false} or {\"archived\": true|false}",
        );
    }
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    if let Some(title) = title {
        tri!(store.rename_session(id, title.trim()));
    }
    if pinned.is_some() || archived.is_some() {
        tri!(store.mark_session(id, pinned, archived));
    }
    Response::json(200, &json!(tri!(store.session(id))))
}

pub(super) fn delete_session(state: &State, id: &str) -> Reply {
    if state.turns.lock().is_ok_and(|t| t.contains_key(id)) {
        return said_error(
            409,
            format!("a turn is running in session {id}; stop it first"),
            Said::new(Code::SessionBusy, json!({ "session": id })),
        );
    }
    tri!(state.rt().store.remove_session(id));
    Response::json(200, &json!({"deleted": true, "id": id}))
}

/// `GET /v1/sessions/{id}/messages`: the messages of the branch shown, in order, each
/// with its turn's `version` (from 1) and `versions` (how many the turn has: more than
/// one after an edit or a regenerate), each tool result with its call's record
/// (`evolve_call`: level, decision, how it was answered, ran, error) so a reloaded page
/// draws the same card as the live one; and which turns failed or were stopped
/// (`failed`: turn → why); `stored`: the messages of all branches. `superseded` stays
/// empty (older clients read it).
pub(super) fn messages(state: &State, id: &str) -> Reply {
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
    let branches = session.branches();
    let shown = branches.shown_path();
    // (version, versions, position): the number a person sees is the turn's place in
    // the conversation shown, not the order turns were stored in.
    let versions: std::collections::HashMap<u64, (usize, usize, usize)> = shown
        .iter()
        .enumerate()
        .map(|(at, &t)| {
            let all = branches.versions(t);
            let k = all.iter().position(|&v| v == t).map_or(1, |i| i + 1);
            (t, (k, all.len(), at + 1))
        })
        .collect();
    let data: Vec<Value> = export
        .messages
        .iter()
        .filter(|m| versions.contains_key(&m.turn))
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
                let (k, of, at) = versions.get(&m.turn).copied().unwrap_or((1, 1, 1));
                o.insert("version".into(), json!(k));
                o.insert("versions".into(), json!(of));
                o.insert("position".into(), json!(at));
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
            "superseded": [],
            // Every branch's: what the session's `messages` counts.
            "stored": export.messages.len(),
            "turns": turns,
        }),
    )
}

/// `POST /v1/export/pdf {session}` (tea-agent's route): the session as a print-ready
/// HTML page (title, dates, page margins, turns kept whole), shown inline: the browser's
/// Print makes the PDF. A PDF writer with the fonts Chinese needs does not fit the
/// binary's budget.
pub(super) fn export_print(state: &State, req: &Request) -> Reply {
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
pub(super) fn download_name(title: &str, id: &str, ext: &str) -> String {
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

pub(super) fn export(state: &State, req: &Request, id: &str) -> Reply {
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

pub(super) fn turn(state: &State, id: &str, n: &str) -> Reply {
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
    // Its place in its conversation (`turn` is the order it was stored in).
    let session = tri!(rt.store.session(id));
    if let Some(o) = record.as_object_mut() {
        o.insert("position".into(), json!(session.branches().position(n)));
    }
    Response::json(200, &record)
}

/// The evaluation's reason when the person graded the answer (👍 / 👎): their grade
/// replaces the evaluator's, and the page shows it as theirs.
pub(super) const RATED_UP: &str = "rated good by the person";
pub(super) const RATED_DOWN: &str = "rated not good by the person";

/// `PUT /v1/sessions/{id}/turns/{n}/rating` `{"rating": "up"|"down"}`: the person's own
/// grade of an answer. It is the turn's evaluation from then on (1 or 0: what reflection
/// and the prompt's evolution read), and a 👍 on a turn that read nothing from outside
/// (no tool call) teaches a style note, as a high evaluation does.
/// `PUT /v1/sessions/{id}/turns/{n}/shown {"version": k}`: shows version k (from 1) of
/// turn n (any of its versions' numbers) and the branch after it; the next turn's
/// history follows it. 200 with the messages shown (as `GET …/messages`).
pub(super) fn show_version(state: &State, req: &Request, id: &str, n: &str) -> Reply {
    let Ok(n) = n.parse::<u64>() else {
        return error(400, "the turn number must be a positive integer");
    };
    let b = field!(body(req));
    let Some(k) = b.get("version").and_then(Value::as_u64) else {
        return error(
            400,
            "send {\"version\": K}, K from 1 to the turn's versions",
        );
    };
    if state.turns.lock().is_ok_and(|t| t.contains_key(id)) {
        return said_error(
            409,
            format!("a turn is running in session {id}; wait for it or stop it first"),
            Said::new(Code::SessionBusy, json!({ "session": id })),
        );
    }
    let rt = state.rt();
    let session = tri!(rt.store.session(id));
    // A parked call's turn was built on the branch shown: it is settled first.
    if matches!(tri!(rt.store.waiting(id)), crate::store::Waiting::Parked(_)) {
        return error(
            409,
            "a tool call of this chat waits for an answer: answer it first",
        );
    }
    if n == 0 || n > session.turns {
        return error(404, format!("session {id} has no turn {n}"));
    }
    let versions = session.branches().versions(n);
    let Some(&turn) = (k as usize).checked_sub(1).and_then(|i| versions.get(i)) else {
        return error(
            400,
            format!(
                "turn {n} has {} version(s): choose a version from 1 to {}",
                versions.len(),
                versions.len()
            ),
        );
    };
    tri!(rt.store.show_turn(id, turn));
    drop(rt);
    messages(state, id)
}

pub(super) fn rate_turn(state: &State, req: &Request, id: &str, n: &str) -> Reply {
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
        // Named by its place in the conversation shown, as the page numbers it.
        let at = tri!(rt.store.session(id)).branches().position(n);
        return said_error(
            409,
            format!("turn {at} has no answer to rate"),
            Said::new(Code::NothingToRate, json!({ "turn": at })),
        );
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

pub(super) fn pending(state: &State, id: &str) -> Reply {
    let rt_arc = state.rt();
    let store = &rt_arc.store;
    tri!(store.session(id));
    let calls = tri!(store.pending(id));
    let data: Vec<Value> = calls
        .iter()
        .map(|c| waiting::pending_json(c, Lang::En))
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
pub(super) fn answer_elicitation(state: &Arc<State>, req: &Request, id: &str, eid: &str) -> Reply {
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
        Err(waiting::ElicitRefusal::NotWaiting) => {
            error(404, format!("no question {eid:?} waits in session {id:?}"))
        }
        Err(waiting::ElicitRefusal::Invalid(wrong)) => {
            let text: Vec<String> = wrong.iter().map(|(f, why)| format!("{f} {why}")).collect();
            let mut v = crate::web::error_value(400, &text.join("; "), None);
            v["error"]["param"] = json!(wrong[0].0);
            Response::json(400, &v)
        }
    }
}

pub(super) fn answer(state: &Arc<State>, req: &Request, id: &str, call: &str) -> Reply {
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
