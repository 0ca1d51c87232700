//! The Memory agent: chooses the memories for a question (core's selection over the
//! store's cache) and, after the reply, extracts new memories with the cheap model and
//! saves them through the core's ingest rule.

use std::sync::atomic::AtomicBool;

use evolve_core::json::{extract_items, Value};
use evolve_core::memory::{self, format_block, Category, Memory, Selection};
use evolve_core::text::{KeywordSet, Lang};
use evolve_core::Timestamp;

use super::describe_agent;
use super::prompts;
use super::record::MemoryUsed;
use super::runtime::Runtime;
use crate::llm::{ChatRequest, ModelRole, Usage};
use crate::store::Ingested;
use evolve_core::history::Message;

/// Memory search and memory saving.
pub struct MemoryAgent;

describe_agent!(
    MemoryAgent,
    "memory",
    "Memory",
    "finds the memories relevant to a question and saves what the user wants remembered"
);

/// The memories chosen for one question.
pub struct Recall {
    /// The block for the system prompt (empty when nothing was chosen).
    pub block: String,
    /// What was chosen, for the turn record.
    pub used: Vec<MemoryUsed>,
    /// How many were scored.
    pub considered: usize,
    /// Ids to mark as accessed (off the answer path).
    pub ids: Vec<u64>,
}

/// At most this many characters of an exchange go to the extractor.
const EXTRACT_INPUT_CHARS: usize = 6_000;
/// At most this many memories are taken from one extraction reply.
const EXTRACT_MAX: usize = 5;

impl MemoryAgent {
    /// Scores every live memory against `query` and formats the chosen ones.
    pub fn recall(&self, rt: &Runtime, query: &str, now: Timestamp) -> Recall {
        let keywords = KeywordSet::of(&rt.tokenizer, query);
        let lang = Lang::guess(query);
        rt.store.with_memories(|all| {
            let Selection { chosen, considered } =
                memory::select(all, &keywords, now, &rt.config.core.memory);
            let picked: Vec<&Memory> = chosen.iter().map(|c| &all[c.index]).collect();
            let used = chosen
                .iter()
                .map(|c| MemoryUsed {
                    id: c.id,
                    content: all[c.index].content.clone(),
                    score: c.score,
                    relevance: c.relevance,
                    reason: c.reason,
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

    /// Asks the cheap model what of this exchange is worth remembering and ingests it.
    /// Returns how many memories were saved (inserted or merged). An unusable reply is
    /// reported in `problems` and skipped.
    pub fn extract_and_save(
        &self,
        rt: &Runtime,
        question: &str,
        answer: &str,
        now: Timestamp,
        usage: &mut Usage,
        problems: &mut Vec<String>,
    ) -> usize {
        let exchange = format!(
            "User: {}\n\nAssistant: {}",
            evolve_core::text::clip_chars(question, EXTRACT_INPUT_CHARS / 2),
            evolve_core::text::clip_chars(answer, EXTRACT_INPUT_CHARS / 2)
        );
        let Some(text) = cheap_call(rt, prompts::EXTRACT, &exchange, usage, problems, &NEVER)
        else {
            return 0;
        };
        let items = match extract_items(&text) {
            Ok(items) => items,
            Err(e) => {
                let problem =
                    format!("memory extraction: the model's reply is not usable JSON ({e})");
                log::info!("{problem}");
                problems.push(problem);
                return 0;
            }
        };
        let mut saved = 0;
        for item in items.iter().take(EXTRACT_MAX) {
            let Some(m) = memory_from_item(item, now, rt) else {
                continue;
            };
            match rt
                .store
                .ingest_memory(m, &rt.config.core.memory, now, &rt.tokenizer)
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

/// A cancel flag nobody sets, for background calls (they are waited for, not stopped).
pub(super) static NEVER: AtomicBool = AtomicBool::new(false);

/// One cheap-model call with a task prompt; the reply text, or `None` (logged, added to
/// `problems`) when the call failed or `cancel` was set.
pub(super) fn cheap_call(
    rt: &Runtime,
    system: &str,
    user: &str,
    usage: &mut Usage,
    problems: &mut Vec<String>,
    cancel: &AtomicBool,
) -> Option<String> {
    cheap_call_sized(rt, system, user, CHEAP_MAX_TOKENS, usage, problems, cancel)
}

/// The answer budget of a cheap-model task: its replies are one small JSON object.
const CHEAP_MAX_TOKENS: u32 = 512;

/// [`cheap_call`] with its own answer budget, for tasks whose reply grows with the
/// input (the classification of every tool of an MCP server).
pub(crate) fn cheap_call_sized(
    rt: &Runtime,
    system: &str,
    user: &str,
    max_tokens: u32,
    usage: &mut Usage,
    problems: &mut Vec<String>,
    cancel: &AtomicBool,
) -> Option<String> {
    let req = ChatRequest {
        role: ModelRole::Cheap,
        messages: vec![Message::system(system), Message::user(user)],
        tools: Vec::new(),
        stream: false,
        max_tokens: Some(max_tokens),
        temperature: Some(0.2),
        // Summaries and skill drafts are plain text; every other task replies JSON.
        json: system != prompts::SUMMARIZE && system != prompts::CRYSTALLIZE,
        tool_choice: None,
    };
    match rt.model.chat(&req, &mut |_| {}, cancel) {
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
