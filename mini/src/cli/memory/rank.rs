//! `evolve memory rank`: an offline look at what the core would inject for a query, given
//! memories in a JSON file (no store, no model): the selection, each memory's score and
//! why it was kept or left out.

use std::io::Write;
use std::path::Path;

use evolve_core::memory::{self, Memory, MemoryConfig, RecallQuery, Selection};
use evolve_core::text::{keyword_hash, one_line, FallbackTokenizer, KeywordSet, Tokenizer};
use evolve_core::Timestamp;

use super::Rank;
use crate::error::Error;

/// Reads memories from a JSON file: an array of records or an object holding one under
/// `memories`. Keywords and hashes are recomputed, so hand-written files only need
/// `content` (and whatever else they want to set).
pub(super) fn load_memories(path: &Path) -> Result<Vec<Memory>, Error> {
    let text = read_file(path)?;
    let mut memories = parse_memory_list(path, &text)?;
    for (i, m) in memories.iter_mut().enumerate() {
        if m.id == 0 {
            m.id = i as u64 + 1;
        }
        m.refresh_derived(&FallbackTokenizer);
    }
    Ok(memories)
}

pub(super) fn read_file(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses a list of memory records, bare or under `memories`, naming the first problem.
pub(super) fn parse_memory_list(path: &Path, text: &str) -> Result<Vec<Memory>, Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum File {
        List(Vec<Memory>),
        Wrapped { memories: Vec<Memory> },
    }
    let parsed: File = serde_json::from_str(text).map_err(|e| {
        // Untagged enums hide the real cause; re-parse as a list to name it.
        let detail = serde_json::from_str::<Vec<Memory>>(text).err().unwrap_or(e);
        Error::Invalid {
            path: path.to_path_buf(),
            message: format!("not a list of memories: {detail}"),
        }
    })?;
    Ok(match parsed {
        File::List(m) | File::Wrapped { memories: m } => m,
    })
}

pub(super) fn rank(r: Rank) -> Result<(), Error> {
    let memories = load_memories(&r.from)?;
    let now = r.now.unwrap_or_else(crate::clock::now);
    let mut cfg = MemoryConfig::default();
    if let Some(limit) = r.limit {
        cfg.max_selected = limit;
    }
    if r.max_chars.is_some() {
        cfg.max_chars = r.max_chars;
    }
    let mut out = std::io::stdout().lock();
    let query = Query::new(&FallbackTokenizer, &r.query, None, &cfg);
    report(&mut out, &query, memories, now, &cfg, r.json, r.block)
}

/// A query as the agent makes it, with the words behind its keyword hashes (to say
/// which words a memory matched).
pub(super) struct Query<'a> {
    text: &'a str,
    previous: Option<&'a str>,
    recall: RecallQuery,
    words: Vec<(u64, String)>,
    /// The question's embedding and its model, when one is configured and answered.
    pub(super) vector: Option<(String, Vec<f32>)>,
}

impl<'a> Query<'a> {
    pub(super) fn new(
        tokenizer: &dyn Tokenizer,
        text: &'a str,
        previous: Option<&'a str>,
        cfg: &MemoryConfig,
    ) -> Self {
        let mut recall = RecallQuery::new(&KeywordSet::of(tokenizer, text));
        let mut words: Vec<(u64, String)> = Vec::new();
        let mut learn = |t: &str| {
            tokenizer.for_each_word(t, &mut |word, k| {
                let h = keyword_hash(k);
                if !words.iter().any(|x| x.0 == h) {
                    words.push((h, word.to_string()));
                }
            });
        };
        learn(text);
        if let Some(p) = previous {
            recall = recall.with_context(&KeywordSet::of(tokenizer, p), cfg.context_weight);
            learn(p);
        }
        Query {
            text,
            previous,
            recall,
            words,
            vector: None,
        }
    }

    /// The query's words found in the memory, in query order.
    fn matched(&self, m: &Memory) -> Vec<&str> {
        let hashes = self.recall.matched(m);
        self.words
            .iter()
            .filter(|(h, _)| hashes.contains(h))
            .map(|(_, w)| w.as_str())
            .collect()
    }
}

/// Decays (a copy of) `memories` as of `now`, selects for `query` with core's rules and
/// prints the choice: a table, or JSON; `block` adds the text injected into the prompt.
#[allow(clippy::too_many_arguments)]
pub(super) fn report(
    out: &mut impl Write,
    query: &Query<'_>,
    mut memories: Vec<Memory>,
    now: Timestamp,
    cfg: &MemoryConfig,
    json: bool,
    block: bool,
) -> Result<(), Error> {
    let query_text = query.text;
    let decayed = memory::apply_decay(&mut memories, now, cfg);
    let vector = query.vector.as_ref().map(|(model, e)| memory::QueryVector {
        model,
        embedding: e,
    });
    let selection = memory::select_query(&memories, None, &query.recall, vector, now, cfg);
    if json {
        let chosen: Vec<_> = selection
            .chosen
            .iter()
            .map(|c| {
                let m = &memories[c.index];
                serde_json::json!({
                    "id": c.id, "reason": c.reason, "score": c.score, "relevance": c.relevance,
                    "bm25": c.bm25, "propagated": c.propagated, "boost": c.boost,
                    "reply_to": m.prev, "speaker": m.speaker,
                    "f1": c.f1, "cosine": c.cosine,
                    "matched": query.matched(m),
                    "priority": m.priority, "category": m.category, "content": m.content,
                })
            })
            .collect();
        let chars: usize = selection
            .chosen
            .iter()
            .map(|c| memories[c.index].content.chars().count())
            .sum();
        let doc = serde_json::json!({
            "query": query_text, "previous": query.previous, "now": now,
            "ranking": cfg.ranking, "considered": selection.considered,
            "embedding_model": query.vector.as_ref().map(|(m, _)| m),
            "decayed": decayed.len(), "characters": chars, "chosen": chosen,
        });
        writeln!(out, "{doc:#}")?;
    } else {
        print_table(out, &memories, &selection, decayed.len())?;
    }
    if block {
        let chosen: Vec<&Memory> = selection
            .chosen
            .iter()
            .map(|c| &memories[c.index])
            .collect();
        writeln!(
            out,
            "\n{}",
            memory::format_block(&chosen, memory::Lang::guess(query_text))
        )?;
    }
    Ok(())
}

pub(super) fn print_table(
    out: &mut impl Write,
    memories: &[Memory],
    sel: &Selection,
    decayed: usize,
) -> Result<(), Error> {
    writeln!(
        out,
        "{} of {} active memories chosen ({} demoted by age)",
        sel.chosen.len(),
        sel.considered,
        decayed
    )?;
    if sel.chosen.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "{:>3}  {:<12}  {:>6}  {:>6}  {:<8}  {:<11}  content",
        "#", "reason", "score", "rel", "priority", "category"
    )?;
    for (i, c) in sel.chosen.iter().enumerate() {
        let m = &memories[c.index];
        writeln!(
            out,
            "{:>3}  {:<12}  {:>6.3}  {:>6.3}  {:<8}  {:<11}  {}",
            i + 1,
            reason_name(c.reason),
            c.score,
            c.relevance,
            m.priority.name(),
            m.category.name(),
            crate::cli::printable(&one_line(&m.content, 60), false)
        )?;
    }
    Ok(())
}

pub(super) fn reason_name(r: memory::Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}
