//! The memory routes: list (filtered), read, add, change, delete and maintain memories.
//! Bad input is a 400 naming the field; store failures are 500s.

use evolve_core::memory::{Category, Memory, MemoryId};
use evolve_core::text::{f1, find_words, KeywordSet};
use serde_json::{json, Value};

use super::http::{Request, Response};
use super::memory_patch::{MemoryPatch, EMPTY_CONTENT};
use super::request::{body, field, tri, Reply};
use super::{error, State};
use crate::cancel::Cancel;
use crate::clock::now;

/// A memory as the API shows it: without keyword hashes and embedding.
pub(super) fn memory_json(m: &Memory) -> Value {
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

pub(super) fn with_id(id: &str, f: impl FnOnce(MemoryId) -> Reply) -> Reply {
    match id.trim_start_matches('#').parse::<MemoryId>() {
        Ok(id) => f(id),
        Err(_) => error(400, format!("{id:?} is not a memory id (a number)")),
    }
}

pub(super) fn memories(state: &State, req: &Request) -> Reply {
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
                    // The words searched for, whole ("tea" is not in "teacher").
                    if find_words(&m.content.to_lowercase(), &lower).is_some() {
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

pub(super) fn get_memory(state: &State, id: MemoryId) -> Reply {
    let m = tri!(state.rt().store.memory(id));
    if m.deleted {
        return error(404, format!("memory #{id} was deleted"));
    }
    Response::json(200, &memory_json(&m))
}

/// The body of a memory route as a [`MemoryPatch`], or its 400.
pub(super) fn memory_patch(req: &Request) -> Result<MemoryPatch, Reply> {
    MemoryPatch::from_body(body(req)?).map_err(|e| error(400, e.to_string()))
}

pub(super) fn add_memory(state: &State, req: &Request) -> Reply {
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
pub(super) fn maintain_memories(state: &State, req: &Request) -> Reply {
    let body = field!(body(req));
    let dry_run = match body.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return error(400, "dry_run must be true or false"),
    };
    let rt = state.rt();
    let never = Cancel::new();
    let report = crate::agents::maintain::run(&rt, now(), dry_run, &never);
    match (&report.error, serde_json::to_value(&report)) {
        (Some(e), _) => error(500, format!("memory maintenance stopped: {e}")),
        (None, Ok(v)) => Response::json(200, &v),
        (None, Err(e)) => error(500, format!("the report cannot be encoded: {e}")),
    }
}

pub(super) fn update_memory(state: &State, req: &Request, id: MemoryId) -> Reply {
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

pub(super) fn delete_memory(state: &State, id: MemoryId) -> Reply {
    let rt_arc = state.rt();
    let rt = &*rt_arc;
    let m = tri!(rt.store.memory(id));
    if m.deleted {
        return super::said_error(
            404,
            format!("memory #{id} was already deleted"),
            crate::said::Said::new(
                crate::said::Code::MemoryDeleted,
                serde_json::json!({ "id": id }),
            ),
        );
    }
    tri!(rt.store.remove_memory(id));
    Response::json(200, &json!({"deleted": true, "id": id}))
}
