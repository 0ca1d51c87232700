//! The Memory agent: chooses the memories for a question (core's selection over the
//! store's cache) and, after the reply, saves the memories the cheap model extracted
//! (the memory part of the call after the answer) through the core's ingest rule.

use std::time::Duration;

use evolve_core::json::Value;
use evolve_core::memory::{
    self, format_block, Category, Memory, Priority, QueryVector, RecallQuery, Selection,
};
use evolve_core::provenance::Source;
use evolve_core::text::{KeywordSet, Lang};
use evolve_core::Timestamp;

use super::prompts;
use super::record::MemoryUsed;
use super::runtime::Runtime;
use crate::cancel::Cancel;
use crate::llm::{ChatRequest, ModelRole, Usage};
use crate::store::{Ingested, StoreError};

/// Why memories got no embedding: the embedding model failed, or the store could not
/// keep what it gave.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding memories failed: {0}")]
    Model(#[source] crate::llm::LlmError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
use evolve_core::history::Message;

/// Memory search and memory saving.
pub struct MemoryAgent;

impl super::Agent for MemoryAgent {
    super::describe!(
        Memory,
        "Memory",
        "finds the memories relevant to a question and saves what the user wants remembered"
    );
}

/// The memories chosen for one question.
pub struct Recall {
    /// The block for the system prompt (empty when nothing was chosen). Memories
    /// learned from world text are marked there as information, not rules.
    pub block: String,
    /// What was chosen, for the turn record.
    pub used: Vec<MemoryUsed>,
    /// How many were scored.
    pub considered: usize,
    /// Ids to mark as accessed (off the answer path).
    pub ids: Vec<u64>,
}

impl Recall {
    /// Whether a chosen memory was learned from world text: the turn then starts with
    /// world text in it.
    pub fn has_world(&self) -> bool {
        self.used.iter().any(|u| u.source == Source::World)
    }
}

/// At most this many memories are taken from one extraction reply.
const EXTRACT_MAX: usize = 5;
/// Memories embedded per `/embeddings` request.
const EMBED_BATCH: usize = 32;

impl MemoryAgent {
    /// Ranks the live memories against `query` (and, at a lower weight, `previous`, the
    /// user's turn before, so a follow-up finds what it refers to) through the store's
    /// index, and formats the chosen ones.
    pub fn recall(
        &self,
        rt: &Runtime,
        query: &str,
        previous: Option<&str>,
        now: Timestamp,
    ) -> Recall {
        let cfg = &rt.config.core.memory;
        let mut q = RecallQuery::new(&KeywordSet::of(&rt.tokenizer, query));
        if let Some(p) = previous.filter(|p| !p.trim().is_empty()) {
            q = q.with_context(&KeywordSet::of(&rt.tokenizer, p), cfg.context_weight);
        }
        let lang = Lang::guess(query);
        let embedded = question_embedding(rt, query, previous);
        let vector = embedded.as_ref().map(|(model, e)| QueryVector {
            model,
            embedding: e,
        });
        rt.store.with_indexed_memories(|all, index| {
            let Selection { chosen, considered } =
                memory::select_query(all, Some(index), &q, vector, now, cfg);
            let picked: Vec<&Memory> = chosen.iter().map(|c| &all[c.index]).collect();
            let used = chosen
                .iter()
                .map(|c| MemoryUsed {
                    id: c.id,
                    content: all[c.index].content.clone(),
                    score: c.score,
                    relevance: c.relevance,
                    reason: c.reason,
                    source: all[c.index].source,
                })
                .collect();
            Recall {
                block: format_block(&picked, lang),
                used,
                considered,
                ids: chosen.iter().map(|c| c.id).collect(),
            }
        })
    }

    /// The question's embedding (leaning towards `previous`, the user's turn before,
    /// as a follow-up does) and the model's name, when `[model] embedding_model` is set
    /// and the server answers in time (else `None`, with a warning): what a turn ranks
    /// by meaning with.
    pub fn question_vector(
        &self,
        rt: &Runtime,
        question: &str,
        previous: Option<&str>,
    ) -> Option<(String, Vec<f32>)> {
        question_embedding(rt, question, previous)
    }

    /// Gives every live memory without an embedding of the configured model one (in
    /// batches of [`EMBED_BATCH`], at most `limit` memories), off the answer path: after
    /// extraction, `memory add` and `import`, and in maintenance. A memory changed
    /// meanwhile is left for the next run; a failing server is reported and leaves the
    /// rest to words. Returns how many memories got one.
    pub fn embed_missing(
        &self,
        rt: &Runtime,
        limit: usize,
        cancel: &Cancel,
    ) -> Result<usize, EmbedError> {
        let Some(model) = rt.config.model.embedding_model.clone() else {
            return Ok(0);
        };
        let now = rt.clock.now();
        let missing: Vec<Memory> = rt.store.with_memories(|all| {
            all.iter()
                .filter(|m| m.is_active(now) && m.embedding_of(&model).is_none())
                .filter(|m| !memory::is_summary(m, &rt.config.core.memory))
                .take(limit)
                .cloned()
                .collect()
        });
        let mut done = 0;
        for batch in missing.chunks(EMBED_BATCH) {
            let inputs: Vec<String> = batch.iter().map(|m| m.content.clone()).collect();
            let vectors = match rt.model.embed(&inputs, cancel) {
                None => return Ok(done),
                Some(Err(e)) => return Err(EmbedError::Model(e)),
                Some(Ok(v)) => v,
            };
            let records: Vec<(Memory, Option<Memory>)> = batch
                .iter()
                .zip(vectors)
                .filter(|(_, v)| !v.is_empty())
                .map(|(m, v)| {
                    let mut new = m.clone();
                    new.embedding = Some(v);
                    new.embedding_model = Some(model.clone());
                    (new, Some(m.clone()))
                })
                .collect();
            let saved = rt.store.save_memories(records)?;
            done += saved
                .iter()
                .filter(|s| matches!(s, crate::store::Saved::Written(_)))
                .count();
        }
        Ok(done)
    }

    /// Ingests the memories the model extracted from an exchange (`items`, the
    /// memory part of the call after an answer). Returns how many were saved (inserted
    /// or merged); an unusable item is skipped, a failure to save is in `problems`.
    ///
    /// Each memory is linked to the one saved before it from the same `session`
    /// ([`Memory::prev`]): consecutive turns of one conversation, so a later memory that
    /// answers what an earlier one asked is found through it.
    ///
    /// `world` tells whether outside text came into the turn (`read_file`, `http_get`
    /// …): then the model was told the answer drew on it, and an item is the person's
    /// only when it stands on the question's words (core's `learned_source`); anything
    /// else is kept as information from the world — a fact, never CRITICAL — whatever
    /// category the model gave it. `person` are the person's words in the turn (the
    /// question, unless a group member who is not the person asked it).
    #[allow(clippy::too_many_arguments)]
    pub fn save_extracted(
        &self,
        rt: &Runtime,
        session: &str,
        items: &[Value],
        person: &[String],
        world: bool,
        now: Timestamp,
        problems: &mut Vec<String>,
    ) -> usize {
        let offset = user_offset(rt, now);
        let mut saved = 0;
        for item in items.iter().take(EXTRACT_MAX) {
            let Some(mut m) = memory_from_item(item, now, rt) else {
                continue;
            };
            match extracted_expiry(item, m.category, now, offset) {
                Ok(at) => m.expires_at = at,
                Err(why) => {
                    let problem =
                        format!("memory extraction: {why}; the memory is kept without an expiry");
                    log::info!("{problem}");
                    problems.push(problem);
                }
            }
            let words: Vec<&str> = person.iter().map(String::as_str).collect();
            let source = memory::learned_source(&m.content, world, &words, &rt.tokenizer);
            if source == Source::World && (m.category.is_rule() || m.priority < Priority::Medium) {
                log::info!(
                    "memory extraction: a {} taken from outside text is kept as a fact, not a rule",
                    m.category
                );
            }
            let m = m.with_source(source);
            match rt
                .store
                .ingest_turn(m, session, &rt.config.core.memory, now, &rt.tokenizer)
            {
                Ok(Ingested::Inserted(id)) | Ok(Ingested::Merged(id)) => {
                    log::info!("memory {id} saved from the exchange");
                    saved += 1;
                }
                Ok(Ingested::Duplicate(_)) => {}
                Err(e) => {
                    let problem = format!("saving an extracted memory failed: {e}");
                    log::warn!("{problem}");
                    problems.push(problem);
                }
            }
        }
        saved
    }
}

/// A memory from one extracted item: `{"content", "category", "importance", "tags"}`,
/// or a bare string. Items without content are skipped. A missing or unknown category
/// is `general` (priority LOW): a model's made-up category claims nothing more.
fn memory_from_item(item: &Value, now: Timestamp, rt: &Runtime) -> Option<Memory> {
    let (content, category, importance, tags) = match item {
        Value::String(s) => (s.trim().to_string(), Category::General, None, Vec::new()),
        Value::Object(_) => {
            let content = item
                .get("content")
                .or_else(|| item.get("memory"))
                .or_else(|| item.get("text"))?
                .as_str()?
                .trim()
                .to_string();
            let named = item.get("category").and_then(Value::as_str);
            let category = named.and_then(Category::parse).unwrap_or_else(|| {
                if let Some(name) = named {
                    log::info!("memory extraction: unknown category {name:?}, kept as general");
                }
                Category::General
            });
            let importance = item
                .get("importance")
                .and_then(Value::as_number)
                .map(|n| n.as_f64().round().clamp(1.0, 5.0) as u8);
            let tags = item
                .get("tags")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(|t| t.trim().to_lowercase())
                        .filter(|t| !t.is_empty())
                        .take(8)
                        .collect()
                })
                .unwrap_or_default();
            (content, category, importance, tags)
        }
        _ => return None,
    };
    if content.is_empty() {
        return None;
    }
    let content = evolve_core::text::clip_chars(&content, 500);
    let mut m = Memory::new(content, category, now, &rt.tokenizer);
    if let Some(i) = importance {
        m.importance = i;
    }
    m.tags = tags;
    m.refresh_derived(&rt.tokenizer);
    Some(m)
}

/// How long a turn waits for the question's embedding before it ranks by words alone.
const QUESTION_EMBED_WAIT: Duration = Duration::from_millis(1500);

/// The question's embedding and the model's name, when `[model] embedding_model` is
/// set. With `previous` (the user's turn before) both are embedded in one request and
/// the question's vector leans towards the previous one at `[memory] context_weight`
/// ([`memory::follow_up_vector`]), as the previous turn's keywords join the words: a
/// follow-up ("and her sister?") says little alone. A failing or slow embedding server
/// costs at most [`QUESTION_EMBED_WAIT`] and a warning: the turn goes on with words
/// alone, never fails for it.
fn question_embedding(
    rt: &Runtime,
    query: &str,
    previous: Option<&str>,
) -> Option<(String, Vec<f32>)> {
    let model = rt.config.model.embedding_model.clone()?;
    if query.trim().is_empty() {
        return None;
    }
    let weight = rt.config.core.memory.context_weight;
    let previous = previous.filter(|p| !p.trim().is_empty() && weight > 0.0);
    let cancel = Cancel::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let mut inputs = vec![query.to_string()];
    inputs.extend(previous.map(str::to_string));
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = tx.send(rt.model.embed(&inputs, &cancel));
        });
        let got = rx.recv_timeout(QUESTION_EMBED_WAIT);
        cancel.cancel();
        match got {
            Ok(Some(Ok(v))) if v.len() == inputs.len() && !v[0].is_empty() => {
                let vector = match v.get(1) {
                    Some(p) => memory::follow_up_vector(&v[0], p, weight),
                    None => v[0].clone(),
                };
                Some((model, vector))
            }
            Ok(Some(Ok(_))) => {
                log::warn!("the embedding server gave no vector for the question; memories ranked by words only");
                None
            }
            Ok(Some(Err(e))) => {
                log::warn!("embedding the question failed ({e}); memories ranked by words only");
                None
            }
            Ok(None) => None,
            Err(_) => {
                log::warn!(
                    "the embedding server did not answer within {} ms; memories ranked by words only",
                    QUESTION_EMBED_WAIT.as_millis()
                );
                None
            }
        }
    })
}

/// The offset from UTC of the configured `[scheduler] time_zone` at `now` (0 without
/// one: the model is then told UTC).
pub(super) fn user_offset(rt: &Runtime, now: Timestamp) -> i64 {
    use evolve_core::sched::Zone;
    rt.config
        .scheduler
        .time_zone
        .as_ref()
        .map_or(0, |(_, zone)| i64::from(zone.offset_at_utc(now)))
}

/// The `expires_at` of an extracted item (tea-agent: a reminder 含 expires_at): an RFC 3339
/// date-time, or a date meaning the whole of that day (to its end, at `offset` from UTC,
/// the zone the model was given the time in). `Ok(None)` when there is none; `Err`
/// with the reason for a value that is not kept: unreadable, already past, or on a
/// memory that is not a reminder (the user's rules and facts do not run out).
fn extracted_expiry(
    item: &Value,
    category: Category,
    now: Timestamp,
    offset: i64,
) -> Result<Option<Timestamp>, String> {
    let Some(value) = item.get("expires_at").filter(|v| !matches!(v, Value::Null)) else {
        return Ok(None);
    };
    let Some(text) = value.as_str().map(str::trim) else {
        return Err(format!(
            "expires_at {} is not a date-time text",
            value.to_json_string()
        ));
    };
    if text.is_empty() {
        return Ok(None);
    }
    if category != Category::Reminder {
        return Err(format!(
            "expires_at {text:?} is kept on reminders only, and this memory is a {category}"
        ));
    }
    let at = crate::store::parse_time(text).map_err(|e| format!("expires_at {e}"))?;
    let date_only = text.len() == 10 && text.as_bytes().get(4) == Some(&b'-');
    let at = if date_only {
        at + evolve_core::DAY - offset
    } else {
        at
    };
    if at <= now {
        return Err(format!(
            "expires_at {text:?} is already past ({})",
            crate::store::format_time(at)
        ));
    }
    Ok(Some(at))
}

/// A cancel nobody sets, for background calls (they are waited for, not stopped).
pub(super) static NEVER: Cancel = Cancel::new();

/// One cheap-model call with a task prompt; the reply text, or `None` (logged, added to
/// `problems`) when the call failed or `cancel` was set.
pub(super) fn cheap_call(
    rt: &Runtime,
    system: &str,
    user: &str,
    usage: &mut Usage,
    problems: &mut Vec<String>,
    cancel: &Cancel,
) -> Option<String> {
    cheap_call_sized(rt, system, user, CHEAP_MAX_TOKENS, usage, problems, cancel)
}

/// The answer budget of a cheap-model task: its replies are one small JSON object or a
/// short text. A model that keeps writing (a small local one) stops there instead of
/// at the answer's reserve.
const CHEAP_MAX_TOKENS: u32 = 512;

/// The answer budgets of tasks whose reply is one JSON object holding one short
/// sentence (a reflection's lesson, a style note: about 25 English words or 40 Chinese
/// characters with the key), or one or two (a lesson and its tag). A small model that
/// keeps writing stops there, not at [`CHEAP_MAX_TOKENS`].
pub(super) const ONE_SENTENCE_TOKENS: u32 = 64;
pub(super) const TWO_SENTENCES_TOKENS: u32 = 128;

/// [`cheap_call`] with its own answer budget, for tasks whose reply grows with the
/// input (the classification of every tool of an MCP server).
pub(crate) fn cheap_call_sized(
    rt: &Runtime,
    system: &str,
    user: &str,
    max_tokens: u32,
    usage: &mut Usage,
    problems: &mut Vec<String>,
    cancel: &Cancel,
) -> Option<String> {
    let req = ChatRequest {
        known_tools: Vec::new(),
        role: ModelRole::Cheap,
        messages: vec![Message::system(system), Message::user(user)],
        tools: Vec::new(),
        stream: false,
        max_tokens: Some(max_tokens),
        temperature: Some(0.2),
        // Summaries, skill drafts, titles and tool-chain reviews are plain text; every
        // other task replies JSON.
        json: ![prompts::SUMMARIZE, prompts::CRYSTALLIZE].contains(&system),
        tool_choice: None,
    };
    // The background worker's calls give way to turns (a one-slot server).
    let sent =
        super::yield_gate::yielding(cancel, |cancel| rt.model.chat(&req, &mut |_| {}, cancel));
    match sent {
        Ok(resp) => {
            usage.add(resp.usage);
            Some(resp.message.content)
        }
        Err(e) => {
            let task = system
                .split_whitespace()
                .next()
                .unwrap_or("[evolve]")
                .to_string();
            let problem = format!("{task} call failed: {e}");
            log::info!("{problem}");
            problems.push(problem);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::json::extract;

    #[test]
    fn an_extracted_expiry_is_kept_only_when_readable_future_and_on_a_reminder() {
        // 2026-01-01T00:00:00Z
        let now = 1_767_225_600;
        let day = evolve_core::DAY;
        /// (item, its category, the zone's offset, the expiry or a part of the reason)
        type Case = (
            &'static str,
            Category,
            i64,
            Result<Option<Timestamp>, &'static str>,
        );
        let cases: [Case; 9] = [
            (r#"{}"#, Category::Reminder, 0, Ok(None)),
            (r#"{"expires_at": null}"#, Category::Reminder, 0, Ok(None)),
            (
                r#"{"expires_at": "2026-01-02T09:00:00+01:00"}"#,
                Category::Reminder,
                0,
                Ok(Some(now + day + 8 * 3600)),
            ),
            // A date lasts to its end, in the zone the model was told.
            (
                r#"{"expires_at": "2026-01-02"}"#,
                Category::Reminder,
                0,
                Ok(Some(now + 2 * day)),
            ),
            (
                r#"{"expires_at": "2026-01-02"}"#,
                Category::Reminder,
                8 * 3600,
                Ok(Some(now + 2 * day - 8 * 3600)),
            ),
            (
                r#"{"expires_at": "2025-12-31T23:00:00Z"}"#,
                Category::Reminder,
                0,
                Err("already past"),
            ),
            (
                r#"{"expires_at": "soon"}"#,
                Category::Reminder,
                0,
                Err("RFC 3339"),
            ),
            (
                r#"{"expires_at": 1767300000}"#,
                Category::Reminder,
                0,
                Err("not a date-time text"),
            ),
            (
                r#"{"expires_at": "2026-02-01"}"#,
                Category::Instruction,
                0,
                Err("reminders only"),
            ),
        ];
        for (item, category, offset, want) in cases {
            let value = extract(item).expect("json");
            match (extracted_expiry(&value, category, now, offset), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{item}"),
                (Err(e), Err(part)) => assert!(e.contains(part), "{item}: {e}"),
                (got, want) => panic!("{item}: got {got:?}, want {want:?}"),
            }
        }
    }
}
