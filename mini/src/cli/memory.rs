//! `evolve memory …`: long-term memory management from the command line — add, list,
//! search, forget, pin, export and import the memories of the store, and `rank`, an
//! offline look at what the core would inject for a query, given memories in a JSON
//! file. Every rule (ingest, merge, selection, decay) is the core's; this file parses
//! arguments, calls the store and prints: readable lines by default, JSON with `--json`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use argh::FromArgs;
use evolve_core::memory::{
    self, content_hash, Category, Memory, MemoryConfig, MemoryId, Priority, RecallQuery, Selection,
    IMPORTANCE_MAX, IMPORTANCE_MIN,
};
use evolve_core::text::{keyword_hash, one_line, FallbackTokenizer, KeywordSet, Tokenizer};
use evolve_core::Timestamp;

use crate::agents::maintain;
use crate::agents::{MemoryAgent, Runtime};
use crate::cli::app::{self, App};
use crate::error::Error;
use crate::store::{self, Export, Ingested, Store, SCHEMA_VERSION};

/// manage long-term memories
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "memory")]
pub struct MemoryCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    Add(Add),
    List(List),
    Search(Search),
    Rm(Rm),
    Pin(Pin),
    Export(ExportCmd),
    Import(ImportCmd),
    Rank(Rank),
    Maintain(MaintainCmd),
    Style(super::style::StyleCmd),
}

/// remember TEXT (a restatement of a stored memory is merged into it, an exact copy is not stored twice)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
struct Add {
    /// what to remember, or - to read it from stdin
    #[argh(positional)]
    text: String,
    /// instruction, preference, reminder, fact or general (default general)
    #[argh(option, from_str_fn(parse_category))]
    category: Option<Category>,
    /// priority: 0-3 or critical/high/medium/low (default: from the category)
    #[argh(option, from_str_fn(parse_priority))]
    priority: Option<Priority>,
    /// importance: 1-5 (default 3)
    #[argh(option, from_str_fn(parse_importance))]
    importance: Option<u8>,
    /// comma-separated tags, e.g. work,linux
    #[argh(option)]
    tags: Option<String>,
    /// exempt it from age decay
    #[argh(switch)]
    pin: bool,
    /// stop using it after this time: Unix seconds or RFC 3339 (2026-05-01T09:00:00Z)
    #[argh(option, from_str_fn(parse_expiry))]
    expires: Option<Timestamp>,
}

/// list the memories (newest id last)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// include deleted memories
    #[argh(switch)]
    all: bool,
    /// print JSON records
    #[argh(switch)]
    json: bool,
}

/// find the stored memories that would enter the prompt for QUERY, with the reason and score of each
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "search")]
struct Search {
    /// the text to search for, as a user message
    #[argh(positional)]
    query: String,
    /// at most this many memories (default: the configured 30)
    #[argh(option)]
    limit: Option<usize>,
    /// the user's message before QUERY, for a follow-up ("and where does she live?"):
    /// its words count at the configured lower weight, as in a chat
    #[argh(option)]
    previous: Option<String>,
    /// print the selection as JSON, with why each memory was chosen (words matched,
    /// BM25, the part passed from the turn it replies to, the speaker boost, F1,
    /// relevance, score)
    #[argh(switch)]
    json: bool,
}

/// forget a memory: it is never used again but kept in the file (--purge removes it for good)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the memory's id (from `evolve memory list`)
    #[argh(positional, from_str_fn(parse_id))]
    id: MemoryId,
    /// delete the record itself
    #[argh(switch)]
    purge: bool,
}

/// pin a memory (exempt from age decay), or unpin it with --off
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pin")]
struct Pin {
    /// the memory's id (from `evolve memory list`)
    #[argh(positional, from_str_fn(parse_id))]
    id: MemoryId,
    /// unpin
    #[argh(switch)]
    off: bool,
}

/// write all memories (deleted ones flagged) as JSON to FILE, or to stdout
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "export")]
struct ExportCmd {
    /// the file to write (stdout when absent)
    #[argh(positional)]
    file: Option<PathBuf>,
}

/// read FILE: an `evolve memory export`, a session from `evolve sessions export ID --format json`, or a JSON list of memory records (bare or under "memories"); records with a "conversation" are dialog turns, each linked to the one before it in that conversation (add "speaker" to name who said it)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "import")]
struct ImportCmd {
    /// the file to read
    #[argh(positional)]
    file: PathBuf,
}

/// run memory maintenance now: expiry, age decay, the CRITICAL cap, duplicate merging, category summaries and the model's priority review (serve runs it daily)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "maintain")]
struct MaintainCmd {
    /// print the report as JSON
    #[argh(switch)]
    json: bool,
    /// show what would change without changing anything
    #[argh(switch)]
    dry_run: bool,
}

/// show which memories would enter the prompt for QUERY, with the reason and score of each
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rank")]
struct Rank {
    /// the user's message to select memories for
    #[argh(positional)]
    query: String,
    /// JSON file of memories: an array of records, or {"memories": [...]}
    #[argh(option)]
    from: PathBuf,
    /// evaluate as of this moment (Unix seconds) instead of now
    #[argh(option)]
    now: Option<Timestamp>,
    /// at most this many memories (default 30)
    #[argh(option)]
    limit: Option<usize>,
    /// drop the lowest-scored choices beyond this many characters of memory text
    #[argh(option)]
    max_chars: Option<usize>,
    /// print the selection as JSON
    #[argh(switch)]
    json: bool,
    /// also print the block that would be injected into the prompt
    #[argh(switch)]
    block: bool,
}

pub fn run(cmd: MemoryCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::Add(c) => add(c, profile),
        Action::List(c) => list(c, profile),
        Action::Search(c) => search(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Pin(c) => pin(c, profile),
        Action::Export(c) => export(c, profile),
        Action::Import(c) => import(c, profile),
        Action::Rank(r) => rank(r),
        Action::Maintain(c) => maintain(c, profile),
        Action::Style(c) => super::style::run(c, profile),
    }
}

/// Reads memories from a JSON file: an array of records or an object holding one under
/// `memories`. Keywords and hashes are recomputed, so hand-written files only need
/// `content` (and whatever else they want to set).
fn load_memories(path: &Path) -> Result<Vec<Memory>, Error> {
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

fn read_file(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses a list of memory records, bare or under `memories`, naming the first problem.
fn parse_memory_list(path: &Path, text: &str) -> Result<Vec<Memory>, Error> {
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

fn rank(r: Rank) -> Result<(), Error> {
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
struct Query<'a> {
    text: &'a str,
    previous: Option<&'a str>,
    recall: RecallQuery,
    words: Vec<(u64, String)>,
    /// The question's embedding and its model, when one is configured and answered.
    vector: Option<(String, Vec<f32>)>,
}

impl<'a> Query<'a> {
    fn new(
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
fn report(
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

fn print_table(
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
            super::printable(&one_line(&m.content, 60), false)
        )?;
    }
    Ok(())
}

fn reason_name(r: memory::Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

// ---- the commands on the store ----

/// The configuration (with `--profile`) and the open store: how every store command
/// starts.
fn parse_category(s: &str) -> Result<Category, String> {
    Category::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Category::ALL.iter().map(|c| c.name()).collect();
        format!("unknown category {s:?}: use one of {}", names.join(", "))
    })
}

fn parse_priority(s: &str) -> Result<Priority, String> {
    Priority::parse(s)
        .ok_or_else(|| format!("unknown priority {s:?}: use 0-3 or critical, high, medium, low"))
}

fn parse_importance(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(n) if (IMPORTANCE_MIN..=IMPORTANCE_MAX).contains(&n) => Ok(n),
        _ => Err(format!(
            "importance {s:?} is not a number from {IMPORTANCE_MIN} to {IMPORTANCE_MAX}"
        )),
    }
}

fn parse_expiry(s: &str) -> Result<Timestamp, String> {
    store::parse_time(s)
}

/// A memory id as listed: `12` or `#12`.
fn parse_id(s: &str) -> Result<MemoryId, String> {
    let digits = s.trim().trim_start_matches('#');
    digits
        .parse()
        .map_err(|_| format!("{s:?} is not a memory id: use the number `evolve memory list` shows"))
}

fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
    let text = super::positional_or_stdin(&c.text)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::Usage("nothing to remember: TEXT is empty".into()));
    }
    let now = app::now();
    if let Some(t) = c.expires.filter(|&t| t <= now) {
        return Err(Error::Usage(format!(
            "--expires {} is in the past",
            store::format_time(t)
        )));
    }
    let (app, store) = App::with_store(profile)?;
    let category = c.category.unwrap_or_default();
    let mut m = Memory::new(text, category, now, &app.tokenizer);
    if let Some(p) = c.priority {
        m.priority = p;
    }
    if let Some(i) = c.importance {
        m.importance = i;
    }
    m.tags = split_tags(c.tags.as_deref());
    m.pinned = c.pin;
    m.expires_at = c.expires;
    m.refresh_derived(&app.tokenizer);
    let outcome = store.ingest_memory(m, &app.config.core.memory, now, &app.tokenizer)?;
    let mut out = std::io::stdout().lock();
    match outcome {
        Ingested::Inserted(id) => writeln!(out, "added memory #{id}")?,
        Ingested::Merged(id) => {
            let merged = store.memory(id)?;
            writeln!(
                out,
                "merged into memory #{id}: {}",
                one_line(&merged.content, 70)
            )?;
        }
        Ingested::Duplicate(id) => writeln!(out, "already remembered as memory #{id}")?,
    }
    drop(out);
    embed_new(app, store, EMBED_AFTER_ADD);
    Ok(())
}

/// Memories `memory add` embeds (the new one, and a few an earlier failure left).
const EMBED_AFTER_ADD: usize = 64;

/// With `[model] embedding_model` set, gives the memories that have no embedding of it
/// one (at most `limit`), so the next turn ranks them by meaning too. A failure is a
/// warning: what was added stays added, and `memory maintain` retries.
fn embed_new(app: App, store: Store, limit: usize) {
    if app.config.model.embedding_model.is_none() {
        return;
    }
    let App { config, tokenizer } = app;
    let rt = Runtime::new(config, store, tokenizer);
    crate::cli::interrupt::install();
    match MemoryAgent.embed_missing(&rt, limit, &crate::cli::interrupt::CANCEL) {
        Ok(0) => {}
        Ok(n) => log::info!("embedded {n} memories"),
        Err(e) => log::warn!("{e}; `evolve memory maintain` embeds them later"),
    }
}

/// `a, b,,c` → `[a, b, c]`.
fn split_tags(tags: Option<&str>) -> Vec<String> {
    tags.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let now = app::now();
    let all = store.all_memories()?;
    let deleted = all.iter().filter(|m| m.deleted).count();
    let shown: Vec<&Memory> = all.iter().filter(|m| c.all || !m.deleted).collect();
    let mut out = std::io::stdout().lock();
    if c.json {
        let records: Vec<serde_json::Value> = shown.iter().map(|m| listing_json(m)).collect();
        writeln!(out, "{:#}", serde_json::Value::Array(records))?;
        return Ok(());
    }
    if shown.is_empty() {
        writeln!(
            out,
            "no memories yet — add one with `evolve memory add TEXT`"
        )?;
    }
    for m in &shown {
        writeln!(out, "{}", super::printable(&listing_line(m, now), false))?;
    }
    if deleted > 0 && !c.all {
        writeln!(out, "({deleted} deleted not shown; --all shows them)")?;
    }
    Ok(())
}

/// A memory as `list --json` prints it: the record without the keyword hashes and the
/// embedding, which mean nothing to a reader (`memory export` keeps them), with its
/// `source` always named (`person`, `store` or `world`).
pub(crate) fn listing_json(m: &Memory) -> serde_json::Value {
    let mut v = serde_json::to_value(m).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("keywords");
        o.remove("subjects");
        o.remove("embedding");
        o.insert("source".into(), m.source.as_str().into());
    }
    v
}

/// `  #12  high      preference   2026-03-01  pinned   likes green tea`; a memory
/// learned from world text (a page, a file, a tool's output) is flagged `world`.
fn listing_line(m: &Memory, now: Timestamp) -> String {
    let mut flags = Vec::new();
    if m.is_world() {
        flags.push("world");
    }
    if m.pinned {
        flags.push("pinned");
    }
    if m.deleted {
        flags.push("deleted");
    } else if m.is_expired(now) {
        flags.push("expired");
    }
    format!(
        "{:>5}  {:<8}  {:<11}  {}  {:<8}  {}",
        format!("#{}", m.id),
        m.priority.name(),
        m.category.name(),
        store::format_date(m.created_at),
        flags.join(","),
        one_line(&m.content, 70)
    )
}

fn search(c: Search, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let mut cfg = app.config.core.memory.clone();
    if let Some(limit) = c.limit {
        cfg.max_selected = limit;
    }
    let mut query = Query::new(&app.tokenizer, &c.query, c.previous.as_deref(), &cfg);
    let memories = store.with_memories(|ms| ms.to_vec());
    if app.config.model.embedding_model.is_some() {
        // As a turn does: the question (and the previous turn) embedded once, fused
        // with the words.
        let App { config, tokenizer } = app;
        let rt = Runtime::new(config, store, tokenizer);
        query.vector = MemoryAgent.question_vector(&rt, &c.query, c.previous.as_deref());
    }
    let mut out = std::io::stdout().lock();
    report(&mut out, &query, memories, app::now(), &cfg, c.json, false)
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let mut m = store.memory(c.id)?;
    let mut out = std::io::stdout().lock();
    if c.purge {
        store.remove_memory(c.id)?;
        writeln!(out, "removed memory #{} for good", c.id)?;
    } else if m.deleted {
        writeln!(
            out,
            "memory #{} was already deleted (--purge removes it for good)",
            c.id
        )?;
    } else {
        m.deleted = true;
        store.update_memory(&m)?;
        writeln!(
            out,
            "deleted memory #{}: {}",
            c.id,
            one_line(&m.content, 70)
        )?;
    }
    Ok(())
}

fn pin(c: Pin, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let mut m = store.memory(c.id)?;
    if m.deleted {
        return Err(Error::Other(format!(
            "memory #{} is deleted; add it again with `evolve memory add` to use it",
            c.id
        )));
    }
    m.pinned = !c.off;
    store.update_memory(&m)?;
    let what = if c.off { "unpinned" } else { "pinned" };
    writeln!(std::io::stdout().lock(), "{what} memory #{}", c.id)?;
    Ok(())
}

fn export(c: ExportCmd, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let doc = Export {
        schema_version: SCHEMA_VERSION,
        memories: store.all_memories()?,
        sessions: Vec::new(),
    };
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Other(format!("cannot encode the export: {e}")))?;
    match &c.file {
        None => writeln!(std::io::stdout().lock(), "{text}")?,
        Some(path) => {
            write_file(path, &text)?;
            eprintln!(
                "exported {} memories to {}",
                doc.memories.len(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Writes `text` (and a final newline) to `path`, naming it on failure.
pub(super) fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    let mut body = String::with_capacity(text.len() + 1);
    body.push_str(text);
    body.push('\n');
    std::fs::write(path, body).map_err(|e| {
        Error::Other(format!(
            "cannot write {}: {e} — check that the directory exists and is writable",
            path.display()
        ))
    })
}

/// What `memory import` found in a file.
enum ImportFile {
    /// An `evolve memory export` (or a full store export): restored with ids kept.
    Export(Export),
    /// Plain records, each with the conversation it is a turn of (if any): added one
    /// by one through the ingest rule, a conversation's turns linked in file order.
    Plain(Vec<Memory>, Vec<Option<String>>),
}

/// The `conversation` of each record of a plain list (bare or under `memories`), in
/// order: a string, or a number written as one.
fn conversations(value: &serde_json::Value) -> Vec<Option<String>> {
    let list = value
        .as_array()
        .or_else(|| value.get("memories").and_then(|m| m.as_array()));
    list.map(|records| {
        records
            .iter()
            .map(|r| match r.get("conversation") {
                Some(serde_json::Value::String(s)) if !s.trim().is_empty() => {
                    Some(s.trim().to_string())
                }
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Memories with no text are not memories: dropped from an import (like `memory add ""`
/// is refused), with a count; `conversations` (one per memory, when given) follow.
fn drop_empty(
    memories: &mut Vec<Memory>,
    conversations: Option<&mut Vec<Option<String>>>,
) -> usize {
    let before = memories.len();
    if let Some(convs) = conversations {
        convs.resize(memories.len(), None);
        let mut keep = memories.iter().map(|m| !m.content.trim().is_empty());
        convs.retain(|_| keep.next().unwrap_or(false));
    }
    memories.retain(|m| !m.content.trim().is_empty());
    before - memories.len()
}

fn read_import(path: &Path) -> Result<ImportFile, Error> {
    let text = read_file(path)?;
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON: {e}")))?;
    if value.get("session").is_some() && value.get("messages").is_some() {
        // One session as `evolve sessions export ID --format json` writes it.
        let session: store::SessionExport = serde_json::from_value(value)
            .map_err(|e| invalid(format!("not an evolve session export: {e}")))?;
        return Ok(ImportFile::Export(Export {
            schema_version: SCHEMA_VERSION,
            memories: Vec::new(),
            sessions: vec![session],
        }));
    }
    if value.get("schema_version").is_none() {
        let convs = conversations(&value);
        return parse_memory_list(path, &text).map(|ms| ImportFile::Plain(ms, convs));
    }
    let doc: Export =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not an evolve export: {e}")))?;
    if doc.schema_version > SCHEMA_VERSION {
        return Err(invalid(format!(
            "written by a newer evolve (schema version {}; this one reads up to \
             {SCHEMA_VERSION}) — upgrade evolve to import it",
            doc.schema_version
        )));
    }
    Ok(ImportFile::Export(doc))
}

/// Counts of memories added through the ingest rule.
#[derive(Default)]
struct Ingests {
    added: usize,
    merged: usize,
    present: usize,
}

impl Ingests {
    /// Ingests `memories`; those with a conversation (`conversations`, one per memory
    /// when given) are its turns, each linked to the one before it in the file
    /// ([`Store::insert_turn`]): a conversation of an import file is whole, so
    /// importing it again adds nothing.
    fn run(
        &mut self,
        store: &Store,
        memories: Vec<Memory>,
        conversations: &[Option<String>],
        cfg: &MemoryConfig,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Result<(), Error> {
        let mut last: HashMap<String, MemoryId> = HashMap::new();
        for (i, mut m) in memories.into_iter().enumerate() {
            if m.deleted {
                continue;
            }
            m.id = 0;
            // A link in a file names ids of another store: the import sets its own.
            m.prev = None;
            if m.created_at == 0 {
                m.created_at = now;
            }
            let ingested = match conversations.get(i).and_then(Option::as_deref) {
                Some(conversation) => {
                    m.prev = last.get(conversation).copied();
                    let ingested = store.insert_turn(m, tokenizer)?;
                    let (Ingested::Inserted(id) | Ingested::Merged(id) | Ingested::Duplicate(id)) =
                        ingested;
                    last.insert(conversation.to_string(), id);
                    ingested
                }
                None => store.ingest_memory(m, cfg, now, tokenizer)?,
            };
            match ingested {
                Ingested::Inserted(_) => self.added += 1,
                Ingested::Merged(_) => self.merged += 1,
                Ingested::Duplicate(_) => self.present += 1,
            }
        }
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "{} added, {} merged into similar ones, {} already present",
            self.added, self.merged, self.present
        )
    }
}

/// Imports a file. An export restores its memories with their ids (and its sessions),
/// except memories whose id is taken by a different memory: those, and plain record
/// lists, go through the ingest rule like `memory add`, so nothing stored is
/// overwritten by a stranger's memory.
fn import(c: ImportCmd, profile: &Option<String>) -> Result<(), Error> {
    let mut file = read_import(&c.file)?;
    let empty = match &mut file {
        ImportFile::Plain(memories, convs) => drop_empty(memories, Some(convs)),
        ImportFile::Export(doc) => drop_empty(&mut doc.memories, None),
    };
    if empty > 0 {
        eprintln!("skipped {empty} memories with no text");
    }
    let (app, store) = App::with_store(profile)?;
    let now = app::now();
    let cfg = &app.config.core.memory;
    let mut out = std::io::stdout().lock();
    let name = c.file.display();
    match file {
        ImportFile::Plain(memories, convs) => {
            let mut counts = Ingests::default();
            let total = memories.len();
            counts.run(&store, memories, &convs, cfg, now, &app.tokenizer)?;
            writeln!(
                out,
                "imported {total} memories from {name}: {}",
                counts.summary()
            )?;
        }
        ImportFile::Export(doc) => {
            let stored: HashMap<MemoryId, u64> = store
                .all_memories()?
                .into_iter()
                .map(|m| (m.id, m.content_hash))
                .collect();
            let (restore, clash): (Vec<Memory>, Vec<Memory>) =
                doc.memories.into_iter().partition(|m| {
                    m.id != 0
                        && stored
                            .get(&m.id)
                            .is_none_or(|&h| h == content_hash(&m.content))
                });
            let restore = Export {
                schema_version: doc.schema_version,
                memories: restore,
                sessions: doc.sessions,
            };
            let (memories, sessions) = store.import(&restore, &app.tokenizer)?;
            write!(out, "restored {memories} memories")?;
            if sessions > 0 {
                write!(out, " and {sessions} sessions")?;
            }
            writeln!(out, " from {name} (ids kept)")?;
            if !clash.is_empty() {
                let mut counts = Ingests::default();
                let total = clash.len();
                counts.run(&store, clash, &[], cfg, now, &app.tokenizer)?;
                writeln!(
                    out,
                    "{total} memories whose ids were taken by others: {}",
                    counts.summary()
                )?;
            }
        }
    }
    drop(out);
    embed_new(app, store, usize::MAX);
    Ok(())
}

/// Runs the maintenance and prints a line per step (or the report as JSON). Model
/// problems are warnings on stderr; only a failed store write is an error.
fn maintain(c: MaintainCmd, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let App { config, tokenizer } = app;
    let rt = Runtime::new(config, store, tokenizer);
    crate::cli::interrupt::install();
    crate::cli::interrupt::begin_turn();
    let report = maintain::run(&rt, app::now(), c.dry_run, &crate::cli::interrupt::CANCEL);
    let mut out = std::io::stdout().lock();
    if c.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::Other(format!("cannot encode the report: {e}")))?;
        writeln!(out, "{text}")?;
    } else {
        for line in maintain_summary(&report) {
            writeln!(out, "{line}")?;
        }
    }
    for p in &report.problems {
        eprintln!("warning: {p}");
    }
    match &report.error {
        Some(e) => Err(Error::Other(format!(
            "{e} — the steps before it are stored; run `evolve memory maintain` again"
        ))),
        None => Ok(()),
    }
}

/// `#1, #2, #3` (at most 10, then `…`).
fn id_list(ids: impl IntoIterator<Item = MemoryId>) -> String {
    let ids: Vec<MemoryId> = ids.into_iter().collect();
    let mut s: Vec<String> = ids.iter().take(10).map(|id| format!("#{id}")).collect();
    if ids.len() > 10 {
        s.push("…".into());
    }
    s.join(", ")
}

/// The human summary of a report: one line per step.
fn maintain_summary(r: &maintain::MaintainReport) -> Vec<String> {
    let verb = |done: &str, would: &str| {
        if r.dry_run {
            would.to_string()
        } else {
            done.to_string()
        }
    };
    let changes = |c: &[maintain::PriorityChange]| {
        c.iter()
            .take(10)
            .map(|c| format!("#{} {}→{}", c.id, c.from, c.to))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = Vec::new();
    if r.dry_run {
        lines.push("dry run: nothing is changed".to_string());
    }
    let count = |n: usize, what: &str, detail: String| {
        if n == 0 {
            format!("{what}: none")
        } else {
            format!("{what}: {n} ({detail})")
        }
    };
    lines.push(count(
        r.expired.len(),
        &verb("expired, soft-deleted", "expired, would be soft-deleted"),
        id_list(r.expired.iter().copied()),
    ));
    lines.push(count(
        r.decayed.len(),
        &verb("decayed by age", "would decay by age"),
        changes(&r.decayed),
    ));
    lines.push(count(
        r.critical_evicted.len(),
        &verb(
            "over the CRITICAL cap, soft-deleted",
            "over the CRITICAL cap, would be soft-deleted",
        ),
        id_list(r.critical_evicted.iter().copied()),
    ));
    if !r.critical_demoted.is_empty() {
        lines.push(count(
            r.critical_demoted.len(),
            &verb(
                "the model's promotions taken back over the CRITICAL cap",
                "the model's promotions the CRITICAL cap would take back",
            ),
            changes(&r.critical_demoted),
        ));
    }
    lines.push(count(
        r.merged.len(),
        &verb("duplicates merged", "duplicates to merge"),
        r.merged
            .iter()
            .take(10)
            .map(|m| format!("#{} into #{}", m.dropped, m.kept))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    lines.push(count(
        r.summaries.len(),
        &verb("summaries written", "summaries to write"),
        r.summaries
            .iter()
            .map(|s| {
                let members = id_list(s.members.iter().copied());
                format!("{}: {} of {members}", s.label, s.category)
            })
            .collect::<Vec<_>>()
            .join("; "),
    ));
    lines.push(count(
        r.adjusted.len(),
        &verb(
            "priorities adjusted by the model's review",
            "priorities the model's review would adjust",
        ),
        changes(&r.adjusted),
    ));
    if !r.refused.is_empty() {
        lines.push(format!(
            "model proposals refused by the rules: {}",
            r.refused.len()
        ));
    }
    lines.push(format!(
        "{} {}; {} live memories before, {} after",
        r.changes(),
        verb("records changed", "records would change"),
        r.memories_before,
        r.memories_after
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_parsers_accept_the_documented_forms_and_name_the_rest() {
        assert_eq!(parse_id("12"), Ok(12));
        assert_eq!(parse_id("#12"), Ok(12));
        assert!(parse_id("twelve").unwrap_err().contains("memory list"));
        assert_eq!(parse_priority("high"), Ok(Priority::High));
        assert_eq!(parse_priority("0"), Ok(Priority::Critical));
        assert!(parse_priority("7").unwrap_err().contains("0-3"));
        assert_eq!(parse_category("Fact"), Ok(Category::Fact));
        assert!(parse_category("food").unwrap_err().contains("preference"));
        assert_eq!(parse_importance("5"), Ok(5));
        assert!(parse_importance("6").is_err());
        assert!(parse_importance("0").is_err());
        assert_eq!(parse_expiry("2026-01-01"), Ok(1_767_225_600));
        assert_eq!(
            split_tags(Some(" work, linux,,")),
            vec!["work".to_string(), "linux".to_string()]
        );
        assert!(split_tags(None).is_empty());
    }

    #[test]
    fn a_listing_line_shows_id_priority_category_date_flags_and_text() {
        let mut m = Memory::new(
            "likes\ngreen tea",
            Category::Preference,
            0,
            &FallbackTokenizer,
        );
        m.id = 12;
        m.pinned = true;
        m.expires_at = Some(10);
        let line = listing_line(&m, 20);
        for part in [
            "#12",
            "high",
            "preference",
            "1970-01-01",
            "pinned,expired",
            "likes green tea",
        ] {
            assert!(line.contains(part), "{line:?} lacks {part:?}");
        }
        let json = listing_json(&m);
        assert!(json.get("keywords").is_none());
        assert_eq!(json["content"], "likes\ngreen tea");
    }

    #[test]
    fn import_files_are_told_apart_by_their_schema_version() {
        let dir = std::env::temp_dir().join(format!("evolve-cli-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let table = [
            (r#"[{"content":"a"}]"#, Some(false)),
            (
                r#"{"memories":[{"content":"a"},{"content":"b"}]}"#,
                Some(false),
            ),
            (
                r#"{"schema_version":1,"memories":[{"content":"a"}],"sessions":[]}"#,
                Some(true),
            ),
            (r#"{"schema_version":99,"memories":[],"sessions":[]}"#, None),
            (r#"{"memories":[{"content":"a","priority":9}]}"#, None),
            ("not json", None),
        ];
        for (i, (text, want)) in table.into_iter().enumerate() {
            let path = dir.join(format!("f{i}.json"));
            std::fs::write(&path, text).unwrap();
            match (read_import(&path), want) {
                (Ok(ImportFile::Export(_)), Some(true))
                | (Ok(ImportFile::Plain(..)), Some(false)) => {}
                (Err(e), None) => {
                    assert_eq!(e.exit_code(), 2, "{e}");
                    assert!(e.to_string().contains(&format!("f{i}.json")), "{e}");
                }
                (got, _) => panic!("{text}: {:?}", got.map(|_| ()).map_err(|e| e.to_string())),
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
