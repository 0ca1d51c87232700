//! `GET /v1/search`: finding sessions and memories by their words, each hit with a short
//! preview around the match.

use evolve_core::text::find_words;
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::memories::memory_json;
use super::request::{tri, Reply};
use super::{error, State};

pub(super) fn search(state: &State, req: &Request) -> Reply {
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
        .filter(|s| find_words(&s.title.to_lowercase(), &q).is_some())
        .map(|s| json!(s))
        .collect();
    let mut messages = Vec::new();
    'outer: for s in &all {
        let Ok(export) = store.export_session(&s.id) else {
            continue;
        };
        for m in &export.messages {
            let text = m.message.content.as_str();
            if let Some(at) = find_words(&text.to_lowercase(), &q) {
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
            .filter(|m| find_words(&m.content.to_lowercase(), &q).is_some())
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
pub(super) fn snippet(text: &str, at: usize, len: usize) -> String {
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
