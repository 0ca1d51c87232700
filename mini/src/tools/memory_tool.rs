//! The `memory` tool: the model searches, lists, reads, adds, changes and deletes
//! long-term memories. Search uses the core's selection (the same ranking that fills the
//! prompt); adding goes through the store's ingest (exact duplicates dropped, similar
//! memories merged). The level depends on the action (core's `builtin_level`): reading
//! is L1, changing L3. What the model adds or rewrites after world text entered the
//! turn is the world's: kept as information, never a rule (core's `confine_world`).

use evolve_core::memory::{select_query, Category, Memory, MemoryId, Priority, RecallQuery};
use evolve_core::provenance::Source;
use evolve_core::text::KeywordSet;

use super::args::Args;
use super::time::format_time;
use super::{ToolContext, ToolOutput};
use crate::store::Ingested;

/// The actions, as the schema lists them.
pub const ACTIONS: &[&str] = &["search", "list", "get", "add", "update", "delete"];
/// The categories, as the schema lists them.
pub const CATEGORIES: &[&str] = &["instruction", "preference", "fact", "reminder", "general"];
/// Results of `search` and `list` when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 20;

/// One line per memory: `#12 [high preference, importance 4] text (tags: a, b)`; a
/// memory not stated by the person says where it came from (`, from the world`).
pub fn render(m: &Memory) -> String {
    let mut flags = format!("{} {}, importance {}", m.priority, m.category, m.importance);
    if m.source != Source::Person {
        flags.push_str(&format!(", from the {}", m.source.as_str()));
    }
    if m.pinned {
        flags.push_str(", pinned");
    }
    if let Some(exp) = m.expires_at {
        flags.push_str(&format!(", expires {}", format_time(exp, 0)));
    }
    let mut line = format!("#{} [{flags}] {}", m.id, m.content.trim());
    if !m.tags.is_empty() {
        line.push_str(&format!(" (tags: {})", m.tags.join(", ")));
    }
    line
}

/// The source of what the model writes: the world's once the turn has world text in
/// it, else the person's (the model acts on their request and the store).
fn written_by_model(ctx: &ToolContext<'_>) -> Source {
    if ctx.world {
        Source::World
    } else {
        Source::Person
    }
}

fn store_error(what: &str, e: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("{what} failed: {e}"))
}

fn parse_priority(args: &Args) -> Result<Option<Priority>, ToolOutput> {
    match args.str("priority") {
        None => Ok(None),
        Some(p) => Priority::parse(p).map(Some).ok_or_else(|| {
            ToolOutput::error(format!(
                "`priority` must be critical, high, medium or low (or 0–3), got {p:?}"
            ))
        }),
    }
}

fn need_id(args: &Args, action: &str) -> Result<MemoryId, ToolOutput> {
    args.int("id")
        .and_then(|id| MemoryId::try_from(id).ok())
        .ok_or_else(|| {
            ToolOutput::error(format!(
                "`{action}` needs `id`, the number shown as #id by search or list"
            ))
        })
}

fn load(ctx: &ToolContext<'_>, id: MemoryId) -> Result<Memory, ToolOutput> {
    match ctx.store.memory(id) {
        Ok(m) if m.deleted => Err(ToolOutput::error(format!("memory #{id} was deleted"))),
        Ok(m) => Ok(m),
        Err(crate::store::StoreError::NotFound(_)) => Err(ToolOutput::error(format!(
            "there is no memory #{id}; search or list to find its number"
        ))),
        Err(e) => Err(store_error(&format!("reading memory #{id}"), e)),
    }
}

/// `memory {action, …}`.
pub fn run(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let result = match args.text("action") {
        "search" => search(args, ctx),
        "list" => list(args, ctx),
        "get" => need_id(args, "get")
            .and_then(|id| load(ctx, id))
            .map(|m| ToolOutput::ok(details(&m))),
        "add" => add(args, ctx),
        "update" => update(args, ctx),
        "delete" => delete(args, ctx),
        other => Err(ToolOutput::error(format!(
            "unknown action {other:?}; use one of {}",
            ACTIONS.join(", ")
        ))),
    };
    result.unwrap_or_else(|e| e)
}

fn details(m: &Memory) -> String {
    let mut out = render(m);
    out.push_str(&format!("\ncreated {}", format_time(m.created_at, 0)));
    if let Some(at) = m.last_accessed_at {
        out.push_str(&format!(", last used {}", format_time(at, 0)));
    }
    out
}

fn limit(args: &Args) -> usize {
    args.int("limit")
        .map_or(DEFAULT_LIMIT, |n| n.max(1) as usize)
}

fn search(args: &Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolOutput> {
    let query = args.str("query").map(str::trim).unwrap_or("");
    if query.is_empty() {
        return Err(ToolOutput::error(
            "`search` needs `query`: the words to look for",
        ));
    }
    let keywords = KeywordSet::of(ctx.tokenizer, query);
    if keywords.is_empty() {
        return Err(ToolOutput::error(format!(
            "{query:?} has no searchable words (only stop words or punctuation); use content words"
        )));
    }
    let cfg = &ctx.config.core.memory;
    let max = limit(args);
    let query = RecallQuery::new(&keywords);
    let lines: Vec<String> = ctx.store.with_indexed_memories(|memories, index| {
        let selection = select_query(memories, Some(index), &query, None, ctx.now, cfg);
        selection
            .chosen
            .iter()
            // CRITICAL rules are always selected for the prompt; a search shows only
            // what shares words with the query.
            .filter(|c| c.relevance > 0.0)
            .filter_map(|c| memories.get(c.index))
            .take(max)
            .map(render)
            .collect()
    });
    if lines.is_empty() {
        return Ok(ToolOutput::ok(format!("no memory matches {query:?}")));
    }
    Ok(ToolOutput::ok(format!(
        "{} memories match {query:?}, best first:\n{}",
        lines.len(),
        lines.join("\n")
    )))
}

fn list(args: &Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolOutput> {
    let category = args.str("category").and_then(Category::parse);
    let max = limit(args);
    let (total, lines) = ctx.store.with_memories(|memories| {
        let mut chosen: Vec<&Memory> = memories
            .iter()
            .filter(|m| m.is_active(ctx.now))
            .filter(|m| category.is_none_or(|c| m.category == c))
            .collect();
        chosen.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        let total = chosen.len();
        (
            total,
            chosen.into_iter().take(max).map(render).collect::<Vec<_>>(),
        )
    });
    let which = category.map_or(String::new(), |c| format!("{c} "));
    if total == 0 {
        return Ok(ToolOutput::ok(format!("no {which}memories yet")));
    }
    Ok(ToolOutput::ok(format!(
        "{} of {total} {which}memories, newest first:\n{}",
        lines.len(),
        lines.join("\n")
    )))
}

fn add(args: &Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolOutput> {
    let content = args.str("content").map(str::trim).unwrap_or("");
    if content.is_empty() {
        return Err(ToolOutput::error(
            "`add` needs `content`: one short, self-contained sentence to remember",
        ));
    }
    let category = args
        .str("category")
        .and_then(Category::parse)
        .unwrap_or_default();
    let priority = parse_priority(args)?;
    let mut memory = Memory::new(content, category, ctx.now, ctx.tokenizer);
    if let Some(p) = priority {
        memory.priority = p;
    }
    if let Some(i) = args.int("importance") {
        memory.importance = i.clamp(1, 5) as u8;
    }
    if let Some(tags) = args.list("tags") {
        memory.tags = tags;
    }
    memory.refresh_derived(ctx.tokenizer);
    // The model wrote it: after world text, it may be what a page told it to keep.
    let memory = memory.with_source(written_by_model(ctx));
    let cfg = &ctx.config.core.memory;
    match ctx.store.ingest_memory(memory, cfg, ctx.now, ctx.tokenizer) {
        Ok(Ingested::Inserted(id)) => Ok(ToolOutput::ok(format!("remembered as #{id}"))),
        Ok(Ingested::Merged(id)) => Ok(ToolOutput::ok(format!(
            "merged into the similar memory #{id}"
        ))),
        Ok(Ingested::Duplicate(id)) => Ok(ToolOutput::ok(format!("already remembered as #{id}"))),
        Err(e) => Err(store_error("saving the memory", e)),
    }
}

fn update(args: &Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolOutput> {
    let id = need_id(args, "update")?;
    let mut m = load(ctx, id)?;
    let mut changed = Vec::new();
    let mut claims = false;
    if let Some(content) = args.str("content").map(str::trim) {
        if content.is_empty() {
            return Err(ToolOutput::error(
                "`content` is empty; to remove a memory use the delete action",
            ));
        }
        m.content = content.to_string();
        claims = true;
        changed.push("content");
    }
    if let Some(c) = args.str("category").and_then(Category::parse) {
        claims |= c.is_rule();
        m.category = c;
        changed.push("category");
    }
    let raised = |p: Priority, m: &Memory| p < m.priority;
    if let Some(p) = parse_priority(args)? {
        claims |= raised(p, &m);
        m.priority = p;
        // A call the user allowed: the priority is theirs, not the review's promotion.
        m.promoted = false;
        changed.push("priority");
    }
    if let Some(i) = args.int("importance") {
        m.importance = i.clamp(1, 5) as u8;
        changed.push("importance");
    }
    if let Some(tags) = args.list("tags") {
        m.tags = tags;
        changed.push("tags");
    }
    if changed.is_empty() {
        return Err(ToolOutput::error(
            "`update` needs at least one of content, category, priority, importance, tags",
        ));
    }
    // New text, a rule category or a higher priority written after world text is the
    // world's claim, not the person's.
    if claims && ctx.world {
        m = m.with_source(Source::World);
    }
    m.refresh_derived(ctx.tokenizer);
    ctx.store
        .update_memory(&m)
        .map_err(|e| store_error(&format!("updating memory #{id}"), e))?;
    Ok(ToolOutput::ok(format!(
        "updated {} of {}",
        changed.join(", "),
        render(&m)
    )))
}

fn delete(args: &Args, ctx: &ToolContext<'_>) -> Result<ToolOutput, ToolOutput> {
    let id = need_id(args, "delete")?;
    let m = load(ctx, id)?;
    ctx.store
        .remove_memory(id)
        .map_err(|e| store_error(&format!("deleting memory #{id}"), e))?;
    Ok(ToolOutput::ok(format!("deleted {}", render(&m))))
}

#[cfg(test)]
mod tests {
    use crate::tools::testing::Harness;
    use serde_json::json;

    #[test]

    fn memories_are_added_found_changed_and_deleted() {
        let h = Harness::new();
        let added = h.call(
            "memory",
            json!({"action": "add", "content": "The user prefers tabs over spaces", "category": "preference", "tags": ["style"]}),
        );
        assert!(!added.is_error, "{}", added.content);
        assert!(
            added.content.starts_with("remembered as #"),
            "{}",
            added.content
        );
        let id: i64 = added
            .content
            .trim_start_matches("remembered as #")
            .parse()
            .unwrap();
        let again = h.call(
            "memory",
            json!({"action": "add", "content": "The user prefers tabs over spaces"}),
        );
        assert!(
            again.content.contains(&format!("#{id}")),
            "{}",
            again.content
        );

        let found = h.call(
            "memory",
            json!({"action": "search", "query": "tabs or spaces?"}),
        );
        assert!(found.content.contains("prefers tabs"), "{}", found.content);
        assert!(
            found.content.contains("[high preference"),
            "{}",
            found.content
        );
        let none = h.call(
            "memory",
            json!({"action": "search", "query": "kubernetes cluster"}),
        );
        assert!(
            none.content.starts_with("no memory matches"),
            "{}",
            none.content
        );

        let listed = h.call(
            "memory",
            json!({"action": "list", "category": "preference"}),
        );
        assert!(
            listed.content.contains(&format!("#{id} ")),
            "{}",
            listed.content
        );

        let updated = h.call(
            "memory",
            json!({"action": "update", "id": id, "priority": "critical", "importance": 5}),
        );
        assert!(
            updated.content.starts_with("updated priority, importance"),
            "{}",
            updated.content
        );
        let got = h.call("memory", json!({"action": "get", "id": id}));
        assert!(
            got.content.contains("[critical preference, importance 5]"),
            "{}",
            got.content
        );
        assert!(got.content.contains("(tags: style)"), "{}", got.content);

        let deleted = h.call("memory", json!({"action": "delete", "id": id}));
        assert!(
            deleted.content.starts_with("deleted #"),
            "{}",
            deleted.content
        );
        let gone = h.call("memory", json!({"action": "get", "id": id}));
        assert!(gone.is_error, "{}", gone.content);
    }

    #[test]
    fn memory_actions_say_what_they_need() {
        // None of these reach the store or the tokenizer.
        let h = Harness::new();
        let cases: &[(serde_json::Value, &str)] = &[
            (json!({"action": "search"}), "needs `query`"),
            (json!({"action": "search", "query": "  "}), "needs `query`"),
            (json!({"action": "add"}), "needs `content`"),
            (json!({"action": "get"}), "needs `id`"),
            (json!({"action": "update"}), "needs `id`"),
            (json!({"action": "delete"}), "needs `id`"),
            (
                json!({"action": "forget"}),
                "`action` must be one of search, list, get",
            ),
            (
                json!({"action": "add", "importance": 9}),
                "`importance` must be an integer from 1 to 5",
            ),
            (json!({}), "`action` is missing"),
            (
                json!({"action": "add", "content": "x", "priority": "urgent"}),
                "`priority` must be",
            ),
        ];
        for (args, expected) in cases {
            let out = h.call("memory", args.clone());
            assert!(out.is_error, "{args}");
            assert!(out.content.contains(expected), "{args}: {}", out.content);
        }
    }

    #[test]

    fn memory_errors_from_the_store_are_explained() {
        let h = Harness::new();
        let cases: &[(serde_json::Value, &str)] = &[
            (
                json!({"action": "delete", "id": 424242}),
                "no memory #424242",
            ),
            (json!({"action": "get", "id": 424242}), "no memory #424242"),
            (
                json!({"action": "update", "id": 424242, "content": "x"}),
                "no memory #424242",
            ),
        ];
        for (args, expected) in cases {
            let out = h.call("memory", args.clone());
            assert!(out.is_error, "{args}");
            assert!(out.content.contains(expected), "{args}: {}", out.content);
        }
    }
}
