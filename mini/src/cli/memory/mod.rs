//! `evolve memory …`: long-term memory management from the command line — add, list,
//! search, forget, pin, export and import the memories of the store, and `rank`, an
//! offline look at what the core would inject for a query, given memories in a JSON
//! file. Every rule (ingest, merge, selection, decay) is the core's; this file parses
//! arguments, calls the store and prints: readable lines by default, JSON with `--json`.

use std::io::Write;
use std::path::PathBuf;

use argh::FromArgs;
use evolve_core::memory::{Category, Memory, MemoryId, Priority, IMPORTANCE_MAX, IMPORTANCE_MIN};
use evolve_core::text::one_line;
use evolve_core::Timestamp;

use crate::agents::{MemoryAgent, Runtime};
use crate::cli::app::{self, App};
use crate::error::Error;
use crate::store::{self, Ingested, Store};

mod maintenance;
mod rank;
mod transfer;

use maintenance::maintain;
use rank::{rank, report, Query};
use transfer::{export, import};

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
    store::parse_time(s).map_err(|e| e.to_string())
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
        return Err(Error::Conflict(format!(
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

#[cfg(test)]
mod tests;
