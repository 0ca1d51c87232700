//! Reflection: clustering recent memories by category and drafting their summaries
//! (tea-agent `reflect_and_summarize`).
//!
//! Decides which recent memories form a cluster (same category, at least 2), the
//! deterministic keyword-frequency draft of a summary (tea-agent: 关键词频率生成摘要), the
//! summary memory's attributes (CRITICAL, importance 5, tagged `summary`) and what
//! happens to the originals (importance − 1, never below 1, pinned ones untouched). Whether a model rewrites
//! the draft, and storing the results, are the shell's.
//!
//! "Recent" is our reading of 近期: created within `summary_window_days` (7) and after
//! the previous reflection run when the shell passes it, so a run never summarises the
//! same memories twice. Summary memories themselves (tagged `summary_tag`) are never
//! clustered again.
//!
//! Sources: memories learned from world text are clustered apart from the person's and
//! the store's, and a summary of them is the world's: information at most MEDIUM,
//! never CRITICAL ([`Memory::confine_world`]). A summary of the person's memories is
//! the store's.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde::Serialize;

use super::{Category, Lang, Memory, MemoryConfig, MemoryId, IMPORTANCE_MAX, IMPORTANCE_MIN};
use crate::provenance::Source;
use crate::text::Tokenizer;
use crate::{Timestamp, DAY};

/// Recent memories of one category, to be summarised together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cluster {
    /// The shared category.
    pub category: Category,
    /// Indices into the slice given to [`clusters`], oldest first.
    pub indices: Vec<usize>,
    /// The members' ids, in the same order.
    pub ids: Vec<MemoryId>,
    /// The members were learned from world text (clusters never mix sources).
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub world: bool,
}

/// One importance lowered because the memory was summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ImportanceChange {
    /// Index into the slice given to [`demote_summarised`].
    pub index: usize,
    /// The memory's id.
    pub id: MemoryId,
    /// Importance before.
    pub from: u8,
    /// Importance after.
    pub to: u8,
}

/// True when `memory` is a reflection summary: it carries `summary_tag` (any case,
/// surrounding blanks ignored). An empty tag marks nothing. Summaries are never
/// clustered again, and being regenerable they give way to the user's own CRITICAL
/// memories in the FIFO cap and in the CRITICAL selection slots.
pub fn is_summary(memory: &Memory, cfg: &MemoryConfig) -> bool {
    let tag = cfg.summary_tag.trim();
    !tag.is_empty()
        && memory
            .tags
            .iter()
            .any(|t| t.trim().eq_ignore_ascii_case(tag))
}

/// The clusters of recent active memories: per category (in [`Category::ALL`] order),
/// those created within the window and after `last_run`, not themselves summaries —
/// the person's and the store's first, then those learned from world text, apart;
/// groups with fewer than `summary_min_cluster` (2) such memories are left out.
pub fn clusters(
    memories: &[Memory],
    now: Timestamp,
    last_run: Option<Timestamp>,
    cfg: &MemoryConfig,
) -> Vec<Cluster> {
    let since = now.saturating_sub(cfg.summary_window_days.saturating_mul(DAY));
    let is_summary = |m: &Memory| is_summary(m, cfg);
    let mut recent: Vec<(usize, &Memory)> = memories
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.is_active(now)
                && m.created_at >= since
                && last_run.is_none_or(|t| m.created_at > t)
                && !is_summary(m)
        })
        .collect();
    recent.sort_by(|(ia, a), (ib, b)| {
        a.created_at
            .cmp(&b.created_at)
            .then(a.id.cmp(&b.id))
            .then(ia.cmp(ib))
    });
    let min = cfg.summary_min_cluster.max(1);
    Category::ALL
        .into_iter()
        .flat_map(|category| [(category, false), (category, true)])
        .filter_map(|(category, world)| {
            let members: Vec<(usize, MemoryId)> = recent
                .iter()
                .filter(|(_, m)| m.category == category && m.is_world() == world)
                .map(|(i, m)| (*i, m.id))
                .collect();
            (members.len() >= min).then(|| Cluster {
                category,
                indices: members.iter().map(|(i, _)| *i).collect(),
                ids: members.iter().map(|(_, id)| *id).collect(),
                world,
            })
        })
        .collect()
}

/// The category's name in the summary's language.
fn category_label(category: Category, lang: Lang) -> &'static str {
    match (lang, category) {
        (Lang::En, c) => c.name(),
        (Lang::Zh, Category::Instruction) => "指令",
        (Lang::Zh, Category::Preference) => "偏好",
        (Lang::Zh, Category::Reminder) => "提醒",
        (Lang::Zh, Category::Fact) => "事实",
        (Lang::Zh, Category::General) => "通用",
    }
}

/// The draft summary of a cluster: its most frequent keywords, ranked by the number of
/// members containing them, then total occurrences, then first appearance, at most
/// `summary_keywords` (8). Deterministic, so the same memories always give the same text.
/// `Zh`: `偏好归纳（3 条）：绿茶、早上`; `En`: `Summary of 3 preference memories: tea, morning`.
pub fn draft_summary(
    cluster: &Cluster,
    memories: &[Memory],
    tokenizer: &dyn Tokenizer,
    lang: Lang,
    cfg: &MemoryConfig,
) -> String {
    // keyword → (members containing it, occurrences, first position)
    let mut freq: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    // keyword → the first word it came from (shown instead of the stem)
    let mut shown: BTreeMap<String, String> = BTreeMap::new();
    let mut position = 0usize;
    let mut members = 0usize;
    for (&index, &id) in cluster.indices.iter().zip(&cluster.ids) {
        let Some(m) = memories.get(index).filter(|m| m.id == id) else {
            continue;
        };
        members += 1;
        let mut seen: Vec<String> = Vec::new();
        tokenizer.for_each_word(&m.content, &mut |word, k| {
            shown
                .entry(String::from(k))
                .or_insert_with(|| String::from(word));
            let entry = freq.entry(String::from(k)).or_insert((0, 0, position));
            entry.1 += 1;
            if !seen.iter().any(|s| s == k) {
                entry.0 += 1;
                seen.push(String::from(k));
            }
            position += 1;
        });
    }
    let mut ranked: Vec<(&String, &(usize, usize, usize))> = freq.iter().collect();
    ranked.sort_by(|(_, a), (_, b)| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    let top: Vec<&str> = ranked
        .iter()
        .take(cfg.summary_keywords)
        .map(|(k, _)| shown.get(*k).map_or(k.as_str(), String::as_str))
        .collect();
    let label = category_label(cluster.category, lang);
    match lang {
        Lang::Zh => format!("{label}归纳（{members} 条）：{}", top.join("、")),
        Lang::En => format!("Summary of {members} {label} memories: {}", top.join(", ")),
    }
}

/// The summary memory of a cluster with the given text (the draft or a model's rewrite):
/// the cluster's category, priority `summary_priority` (CRITICAL), importance
/// `summary_importance` (5), tagged `summary_tag` so it is never clustered again. Of a
/// world cluster it is the world's, held to information (at most MEDIUM, importance at
/// most 3); of any other, the store's.
pub fn summary_memory(
    cluster: &Cluster,
    content: &str,
    now: Timestamp,
    tokenizer: &dyn Tokenizer,
    cfg: &MemoryConfig,
) -> Memory {
    let mut m = Memory::new(content, cluster.category, now, tokenizer);
    m.priority = cfg.summary_priority;
    m.importance = cfg.summary_importance.clamp(IMPORTANCE_MIN, IMPORTANCE_MAX);
    if !cfg.summary_tag.trim().is_empty() {
        m.tags.push(cfg.summary_tag.clone());
    }
    m.source = if cluster.world {
        Source::World
    } else {
        Source::Store
    };
    m.confine_world();
    m.refresh_derived(tokenizer);
    m
}

/// Lowers the importance of a cluster's originals by `summary_importance_drop` (1),
/// never below 1, and returns the changes (unchanged ones are not listed). Pinned
/// originals are left alone: pinning is the user's, no automatic rule changes them.
pub fn demote_summarised(
    memories: &mut [Memory],
    cluster: &Cluster,
    cfg: &MemoryConfig,
) -> Vec<ImportanceChange> {
    let mut changes = Vec::new();
    for (&index, &id) in cluster.indices.iter().zip(&cluster.ids) {
        let Some(m) = memories.get_mut(index).filter(|m| m.id == id && !m.pinned) else {
            continue;
        };
        let from = m.importance;
        let to = from
            .saturating_sub(cfg.summary_importance_drop)
            .clamp(IMPORTANCE_MIN, IMPORTANCE_MAX);
        if to != from {
            m.importance = to;
            changes.push(ImportanceChange {
                index,
                id,
                from,
                to,
            });
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Priority;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    const NOW: Timestamp = 100 * DAY;

    fn mem(id: MemoryId, text: &str, category: Category, age: i64) -> Memory {
        let mut m = Memory::new(text, category, NOW - age, &FallbackTokenizer);
        m.id = id;
        m
    }

    fn store() -> Vec<Memory> {
        vec![
            mem(1, "likes green tea", Category::Preference, DAY),
            mem(2, "green tea in the morning", Category::Preference, 2 * DAY),
            mem(3, "prefers tea over coffee", Category::Preference, 3 * DAY),
            mem(4, "project uses rust", Category::Fact, DAY),
            mem(5, "old fact about rust", Category::Fact, 30 * DAY),
            mem(6, "call mom", Category::Reminder, DAY),
            mem(7, "call dad", Category::Reminder, DAY),
        ]
    }

    #[test]
    fn clusters_need_two_recent_active_members_of_a_category() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        let cs = clusters(&ms, NOW, None, &cfg);
        let got: Vec<(Category, Vec<MemoryId>)> =
            cs.iter().map(|c| (c.category, c.ids.clone())).collect();
        assert_eq!(
            got,
            vec![
                (Category::Preference, vec![3, 2, 1]),
                (Category::Reminder, vec![6, 7]),
            ]
        );
        // After a run at NOW − 1.5 d, only memories created since count.
        let cs = clusters(&ms, NOW, Some(NOW - 3 * DAY / 2), &cfg);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].category, Category::Reminder);
        // Deleted members and summaries do not count.
        ms[5].deleted = true;
        ms[0].tags.push("Summary".into());
        let cs = clusters(&ms, NOW, None, &cfg);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].ids, vec![3, 2]);
    }

    #[test]
    fn draft_ranks_keywords_by_members_then_occurrences() {
        let cfg = MemoryConfig::default();
        let ms = store();
        let c = &clusters(&ms, NOW, None, &cfg)[0];
        let en = draft_summary(c, &ms, &FallbackTokenizer, Lang::En, &cfg);
        assert_eq!(
            en,
            // Words as written, counted by stem; "over" is a stop word.
            "Summary of 3 preference memories: tea, green, prefers, coffee, morning, likes"
        );
        let zh = draft_summary(c, &ms, &FallbackTokenizer, Lang::Zh, &cfg);
        assert!(zh.starts_with("偏好归纳（3 条）：tea、green"), "{zh}");
        let short = MemoryConfig {
            summary_keywords: 2,
            ..cfg
        };
        assert_eq!(
            draft_summary(c, &ms, &FallbackTokenizer, Lang::En, &short),
            "Summary of 3 preference memories: tea, green"
        );
    }

    #[test]
    fn summary_is_critical_five_and_originals_lose_one_importance() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        ms[0].importance = 1;
        ms[1].importance = 4;
        let c = clusters(&ms, NOW, None, &cfg)[0].clone();
        let s = summary_memory(&c, "tea lover", NOW, &FallbackTokenizer, &cfg);
        assert_eq!(
            (s.priority, s.importance, s.category),
            (Priority::Critical, 5, Category::Preference)
        );
        assert_eq!(s.tags, vec!["summary"]);
        assert_eq!(s.created_at, NOW);
        let changes = demote_summarised(&mut ms, &c, &cfg);
        assert_eq!(ms[0].importance, 1, "floor 1");
        assert_eq!(ms[1].importance, 3);
        assert_eq!(ms[2].importance, 2);
        assert_eq!(changes.len(), 2);
        // The summary is never clustered again.
        ms.push(s);
        assert!(clusters(&ms, NOW, Some(NOW - 1), &cfg).is_empty());
    }

    #[test]
    fn world_memories_are_summarised_apart_and_their_summary_is_information() {
        use crate::provenance::Source;
        let cfg = MemoryConfig::default();
        let mut ms = store();
        // Two facts from pages beside the person's one recent fact.
        for (id, text) in [(8, "page says rust is fast"), (9, "page says rust is safe")] {
            ms.push(mem(id, text, Category::Fact, DAY).with_source(Source::World));
        }
        let cs = clusters(&ms, NOW, None, &cfg);
        let got: Vec<(Category, Vec<MemoryId>, bool)> = cs
            .iter()
            .map(|c| (c.category, c.ids.clone(), c.world))
            .collect();
        assert_eq!(
            got,
            vec![
                (Category::Preference, vec![3, 2, 1], false),
                (Category::Reminder, vec![6, 7], false),
                (Category::Fact, vec![8, 9], true),
            ],
            "the person's one recent fact (4) is no cluster; the world's two are"
        );
        let world = summary_memory(
            &cs[2],
            "rust is fast and safe",
            NOW,
            &FallbackTokenizer,
            &cfg,
        );
        assert_eq!(
            (world.source, world.priority, world.importance),
            (Source::World, Priority::Medium, 3)
        );
        let person = summary_memory(&cs[0], "tea lover", NOW, &FallbackTokenizer, &cfg);
        assert_eq!(
            (person.source, person.priority),
            (Source::Store, Priority::Critical)
        );
    }

    #[test]
    fn pinned_originals_keep_their_importance() {
        let cfg = MemoryConfig::default();
        let mut ms = store();
        ms[1].pinned = true;
        let c = clusters(&ms, NOW, None, &cfg)[0].clone();
        assert_eq!(c.ids, vec![3, 2, 1], "pinned memories are still summarised");
        let changes = demote_summarised(&mut ms, &c, &cfg);
        assert_eq!(ms[1].importance, 3, "pinned: untouched");
        assert_eq!((ms[0].importance, ms[2].importance), (2, 2));
        assert_eq!(
            changes.iter().map(|ch| ch.id).collect::<Vec<_>>(),
            vec![3, 1]
        );
    }
}
