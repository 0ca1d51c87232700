//! `evolve memory …`: long-term memory management. For now `rank`, an offline look at
//! what the core would inject for a query, given memories in a JSON file.

use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use argh::FromArgs;
use evolve_core::memory::{self, Memory, MemoryConfig, Selection};
use evolve_core::text::{one_line, FallbackTokenizer, KeywordSet};
use evolve_core::Timestamp;

use crate::error::Error;

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
    Rank(Rank),
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

pub fn run(cmd: MemoryCmd) -> Result<(), Error> {
    match cmd.action {
        Action::Rank(r) => rank(r),
    }
}

/// Reads memories from a JSON file: an array of records or an object holding one under
/// `memories`. Keywords and hashes are recomputed, so hand-written files only need
/// `content` (and whatever else they want to set).
fn load_memories(path: &PathBuf) -> Result<Vec<Memory>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.clone(),
        source,
    })?;
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum File {
        List(Vec<Memory>),
        Wrapped { memories: Vec<Memory> },
    }
    let invalid = |message: String| Error::Invalid {
        path: path.clone(),
        message,
    };
    let parsed: File = serde_json::from_str(&text).map_err(|e| {
        // Untagged enums hide the real cause; re-parse as a list to name it.
        let detail = serde_json::from_str::<Vec<Memory>>(&text)
            .err()
            .unwrap_or(e);
        invalid(format!("not a list of memories: {detail}"))
    })?;
    let mut memories = match parsed {
        File::List(m) | File::Wrapped { memories: m } => m,
    };
    for (i, m) in memories.iter_mut().enumerate() {
        if m.id == 0 {
            m.id = i as u64 + 1;
        }
        m.refresh_derived(&FallbackTokenizer);
    }
    Ok(memories)
}

fn unix_now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as Timestamp)
        .unwrap_or(0)
}

fn rank(r: Rank) -> Result<(), Error> {
    let mut memories = load_memories(&r.from)?;
    let now = r.now.unwrap_or_else(unix_now);
    let mut cfg = MemoryConfig::default();
    if let Some(limit) = r.limit {
        cfg.max_selected = limit;
    }
    if r.max_chars.is_some() {
        cfg.max_chars = r.max_chars;
    }
    let decayed = memory::apply_decay(&mut memories, now, &cfg);
    let query = KeywordSet::of(&FallbackTokenizer, &r.query);
    let selection = memory::select(&memories, &query, now, &cfg);

    let mut out = std::io::stdout().lock();
    if r.json {
        let chosen: Vec<_> = selection
            .chosen
            .iter()
            .map(|c| {
                let m = &memories[c.index];
                serde_json::json!({
                    "id": c.id, "reason": c.reason, "score": c.score, "relevance": c.relevance,
                    "priority": m.priority, "category": m.category, "content": m.content,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "query": r.query, "now": now, "considered": selection.considered,
            "decayed": decayed.len(), "chosen": chosen,
        });
        writeln!(out, "{doc:#}")?;
    } else {
        print_table(&mut out, &memories, &selection, decayed.len())?;
    }
    if r.block {
        let chosen: Vec<&Memory> = selection
            .chosen
            .iter()
            .map(|c| &memories[c.index])
            .collect();
        writeln!(
            out,
            "\n{}",
            memory::format_block(&chosen, memory::Lang::guess(&r.query))
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
        "#", "reason", "score", "F1", "priority", "category"
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
            one_line(&m.content, 60)
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
