//! Selection of the memories that enter the prompt.
//!
//! Decides which active memories are injected for a query, in which order and why:
//! CRITICAL rules first (newest first, at most 10), then strong matches (seed 002:
//! token-overlap F1 ≥ 0.7, at most 10), then the tier floors (HIGH ≥ 3, MEDIUM ≥ 2,
//! LOW ≥ 1) and the rest by score (tea-agent), at most 30 in all, optionally within a
//! character budget. Decay and expiry must have been applied before (see
//! [`super::apply_decay`]); writing `last_accessed_at` is the shell's (see
//! [`mark_accessed`]).
//!
//! Only CRITICAL memories are always in: they are rules to follow. Every other memory
//! must share at least one keyword with the query — an unrelated memory never enters the
//! prompt just to fill a quota, and a score of 0 is never chosen.
//!
//! **At most `max_critical` (10) CRITICAL memories in all** (seed 000: CRITICAL 优先入选，
//! 上限 10 条，FIFO 取最新). The CRITICAL memories past the first ten never compete as
//! strong matches or by score, however related: the limit is what keeps rules from
//! crowding out everything else (分层保底策略：确保不会全选 CRITICAL).
//!
//! **The user's rules before reflection summaries.** Reflection stores its summaries as
//! CRITICAL too (seed 000 §8 反思归纳: 摘要作为 CRITICAL/importance=5 存储), so the ten
//! slots go first to the CRITICAL memories that are not summaries ([`super::is_summary`]),
//! newest first, and only the slots left to summaries, newest first. Otherwise a few
//! reflection runs would push every instruction of the user out of the prompt.
//!
//! Speed: every memory is scored in one pass with no allocation per memory (the keyword
//! overlap is a 256-bit prefilter plus a binary search in the short query). Only the best
//! few candidates of each tier survive a partial selection (`select_nth_unstable_by`), so
//! the final ordering sorts at most a hundred-odd candidates however large the store.

use alloc::vec::Vec;
use core::cmp::Ordering;
use serde::Serialize;

use super::{at_least, is_summary, Memory, MemoryConfig, MemoryId, Priority, IMPORTANCE_MAX};
use crate::text::KeywordSet;
use crate::{Timestamp, DAY};

/// Why a memory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// One of the `max_critical` CRITICAL slots, the only way a CRITICAL memory enters.
    Critical,
    /// Token-overlap F1 with the query at or above the strong-match threshold.
    StrongMatch,
    /// Taken to fill its priority tier's floor.
    TierFloor,
    /// Taken by score among the rest.
    Ranked,
}

/// One chosen memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chosen {
    /// Index into the slice given to [`select`].
    pub index: usize,
    /// The memory's id.
    pub id: MemoryId,
    /// relevance × importance/5 × recency × priority factor.
    pub score: f32,
    /// Token-overlap F1 with the query.
    pub relevance: f32,
    /// Why it was chosen.
    pub reason: Reason,
    /// The memory's priority when it was chosen (for logs and the block order).
    pub priority: Priority,
}

/// The outcome of one selection.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Selection {
    /// Chosen memories in prompt order: CRITICAL (rules newest first, then summaries
    /// newest first), then by priority and score.
    pub chosen: Vec<Chosen>,
    /// How many active memories were scored.
    pub considered: usize,
}

impl Selection {
    /// The ids whose `last_accessed_at` the shell should set, in prompt order.
    pub fn accessed_ids(&self) -> Vec<MemoryId> {
        self.chosen.iter().map(|c| c.id).collect()
    }

    /// The chosen memories themselves, in prompt order, ready for
    /// [`super::format_block`]. Indices that no longer fit `memories` are skipped.
    pub fn memories<'a>(&self, memories: &'a [Memory]) -> Vec<&'a Memory> {
        self.chosen
            .iter()
            .filter_map(|c| memories.get(c.index))
            .collect()
    }
}

/// Sets `last_accessed_at = now` on the chosen memories (matched by index and id, so a
/// stale selection touches nothing). The shell persists the same ids in one transaction.
pub fn mark_accessed(memories: &mut [Memory], selection: &Selection, now: Timestamp) {
    for c in &selection.chosen {
        if let Some(m) = memories.get_mut(c.index) {
            if m.id == c.id {
                m.last_accessed_at = Some(now);
            }
        }
    }
}

/// The recency factor of a memory created at `created_at` (tea-agent: 1.0 up to 1 day,
/// 0.9 up to 7, 0.7 up to 30, 0.5 up to 90, 0.3 after). Bounds are inclusive; a
/// creation time in the future counts as age 0.
pub fn recency_factor(created_at: Timestamp, now: Timestamp, cfg: &MemoryConfig) -> f32 {
    let age = now.saturating_sub(created_at).max(0);
    for step in &cfg.recency_steps {
        if age <= step.max_age_days.saturating_mul(DAY) {
            return step.factor;
        }
    }
    cfg.recency_after
}

/// The selection score of a memory with the given relevance (tea-agent):
/// `relevance × importance/5 × recency × (4 − priority)/4`. Importance is clamped to
/// 1–5 so a hand-edited record cannot outscore the scale.
pub fn score(memory: &Memory, relevance: f32, now: Timestamp, cfg: &MemoryConfig) -> f32 {
    let importance = memory.importance.clamp(1, IMPORTANCE_MAX);
    relevance
        * (f32::from(importance) / f32::from(IMPORTANCE_MAX))
        * recency_factor(memory.created_at, now, cfg)
        * memory.priority.factor()
}

/// A scored memory, small and `Copy` so the one pass never allocates per memory.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    index: usize,
    id: MemoryId,
    created_at: Timestamp,
    score: f32,
    relevance: f32,
    priority: Priority,
    strong: bool,
    /// A reflection summary (only computed for CRITICAL memories).
    summary: bool,
}

/// Best first: higher score, then newer, then higher id, then lower index (the last one
/// only matters for records with duplicate ids; it keeps the order total).
fn best_first(a: &Candidate, b: &Candidate) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// The order of the CRITICAL slots: the user's rules before reflection summaries, each
/// newest first (tea-agent: FIFO 取最新).
fn critical_order(a: &Candidate, b: &Candidate) -> Ordering {
    a.summary
        .cmp(&b.summary)
        .then(b.created_at.cmp(&a.created_at))
        .then(b.id.cmp(&a.id))
        .then(a.index.cmp(&b.index))
}

/// Keeps only the `k` best of `v` (unordered), in O(len).
fn keep_best(v: &mut Vec<Candidate>, k: usize) {
    if v.len() > k {
        if k == 0 {
            v.clear();
            return;
        }
        v.select_nth_unstable_by(k - 1, best_first);
        v.truncate(k);
    }
}

/// The query's keywords plus a 256-bit mask of their top hash bits, so that most memory
/// keywords are rejected with one bit test.
struct Query<'a> {
    hashes: &'a [u64],
    mask: [u64; 4],
}

impl<'a> Query<'a> {
    fn new(query: &'a KeywordSet) -> Self {
        let hashes = query.as_slice();
        let mut mask = [0u64; 4];
        for &h in hashes {
            let bit = (h >> 56) as usize;
            if let Some(word) = mask.get_mut(bit >> 6) {
                *word |= 1u64 << (bit & 63);
            }
        }
        Query { hashes, mask }
    }

    /// Number of the memory's keywords present in the query (as `intersection_len`,
    /// but robust to a record whose stored set is not sorted).
    fn shared(&self, keywords: &[u64]) -> usize {
        if self.hashes.is_empty() {
            return 0;
        }
        let mut n = 0usize;
        for &k in keywords {
            let bit = (k >> 56) as usize;
            let hit = self
                .mask
                .get(bit >> 6)
                .is_some_and(|w| w & (1u64 << (bit & 63)) != 0);
            if hit && self.hashes.binary_search(&k).is_ok() {
                n += 1;
            }
        }
        n.min(self.hashes.len()).min(keywords.len())
    }

    /// Token-overlap F1 (`text::f1`): `2·shared / (|query| + |memory|)`.
    fn f1(&self, shared: usize, memory_len: usize) -> f32 {
        let total = self.hashes.len() + memory_len;
        if total == 0 {
            return 0.0;
        }
        (2 * shared) as f32 / total as f32
    }
}

/// Chooses the memories for a prompt; see the module documentation for the rules.
pub fn select(
    memories: &[Memory],
    query: &KeywordSet,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Selection {
    let q = Query::new(query);
    let mut considered = 0usize;
    let mut criticals: Vec<Candidate> = Vec::new();
    let mut strong: Vec<Candidate> = Vec::new();
    let mut tiers: [Vec<Candidate>; 4] = Default::default();

    // One pass: score every active memory; keep the related ones.
    for (index, m) in memories.iter().enumerate() {
        if !m.is_active(now) {
            continue;
        }
        considered += 1;
        let keywords = m.keywords.as_slice();
        let shared = q.shared(keywords);
        let (relevance, s) = if shared == 0 {
            (0.0, 0.0)
        } else {
            let r = q.f1(shared, keywords.len());
            (r, score(m, r, now, cfg))
        };
        let c = Candidate {
            index,
            id: m.id,
            created_at: m.created_at,
            score: s,
            relevance,
            priority: m.priority,
            strong: shared > 0 && at_least(relevance, cfg.strong_match_f1),
            summary: false,
        };
        if m.priority == Priority::Critical {
            // CRITICAL memories enter only through their own slots, never by matching.
            criticals.push(Candidate {
                summary: is_summary(m, cfg),
                ..c
            });
            continue;
        }
        // Related and scoring above zero: may compete.
        if s > 0.0 {
            if c.strong {
                strong.push(c);
            }
            if let Some(tier) = tiers.get_mut(usize::from(m.priority.as_u8())) {
                tier.push(c);
            }
        }
    }

    let limit = cfg.max_selected;
    let mut chosen: Vec<Chosen> = Vec::new();
    let take = |chosen: &mut Vec<Chosen>, c: &Candidate, reason: Reason| {
        chosen.push(Chosen {
            index: c.index,
            id: c.id,
            score: c.score,
            relevance: c.relevance,
            reason,
            priority: c.priority,
        });
    };

    // 1. CRITICAL: rules newest first, then summaries newest first; the rest never
    //    enter.
    criticals.sort_unstable_by(critical_order);
    for c in criticals.iter().take(cfg.max_critical.min(limit)) {
        take(&mut chosen, c, Reason::Critical);
    }

    // Partial selection: an entry chosen by strong match is among the best max_strong
    // strong candidates; an entry chosen for a floor or by rank is among the best
    // `limit` of its tier (everything better in its tier was taken before it). Nothing
    // else can be chosen, so nothing else needs ordering. The pool holds no CRITICAL.
    keep_best(&mut strong, cfg.max_strong);
    let mut pool: Vec<Candidate> = strong;
    for tier in &mut tiers {
        keep_best(tier, limit);
        pool.append(tier);
    }
    pool.sort_unstable_by_key(|c| c.index);
    pool.dedup_by_key(|c| c.index);
    pool.sort_unstable_by(best_first);
    let mut taken = alloc::vec![false; pool.len()];

    // 2. Strong matches, best score first.
    let mut strong_taken = 0usize;
    for (c, t) in pool.iter().zip(taken.iter_mut()) {
        if chosen.len() >= limit || strong_taken >= cfg.max_strong {
            break;
        }
        if c.strong {
            take(&mut chosen, c, Reason::StrongMatch);
            *t = true;
            strong_taken += 1;
        }
    }

    // 3. Tier floors, counting what the tier already has.
    for tier in [Priority::High, Priority::Medium, Priority::Low] {
        let have = chosen.iter().filter(|x| x.priority == tier).count();
        let mut need = cfg.floor(tier).saturating_sub(have);
        for (c, t) in pool.iter().zip(taken.iter_mut()) {
            if need == 0 || chosen.len() >= limit {
                break;
            }
            if !*t && c.priority == tier {
                take(&mut chosen, c, Reason::TierFloor);
                *t = true;
                need -= 1;
            }
        }
    }

    // 4. The rest by score.
    for (c, t) in pool.iter().zip(taken.iter_mut()) {
        if chosen.len() >= limit {
            break;
        }
        if !*t {
            take(&mut chosen, c, Reason::Ranked);
            *t = true;
        }
    }

    if let Some(budget) = cfg.max_chars {
        fit_budget(&mut chosen, memories, budget);
    }

    // Prompt order: CRITICAL in slot order (already), then by priority, then score.
    let n_critical = chosen
        .iter()
        .take_while(|c| c.reason == Reason::Critical)
        .count();
    if let Some(rest) = chosen.get_mut(n_critical..) {
        let created = |c: &Chosen| memories.get(c.index).map(|m| m.created_at);
        rest.sort_by(|a, b| {
            a.priority
                .cmp(&b.priority)
                .then(b.score.total_cmp(&a.score))
                .then(created(b).cmp(&created(a)))
                .then(b.id.cmp(&a.id))
                .then(a.index.cmp(&b.index))
        });
    }
    Selection { chosen, considered }
}

/// Drops choices until the contents fit `budget` characters: the lowest-scored
/// non-critical first, then (only if the CRITICAL ones alone overflow) the last
/// CRITICAL in slot order: the oldest summary, then the oldest rule.
fn fit_budget(chosen: &mut Vec<Chosen>, memories: &[Memory], budget: usize) {
    let chars = |c: &Chosen| -> usize {
        memories
            .get(c.index)
            .map_or(0, |m| m.content.chars().count())
    };
    let mut total: usize = chosen.iter().map(chars).sum();
    while total > budget {
        // The worst non-critical (lowest score, then older, then lower id).
        let worst = chosen
            .iter()
            .enumerate()
            .filter(|(_, c)| c.reason != Reason::Critical)
            .min_by(|(_, a), (_, b)| {
                a.score
                    .total_cmp(&b.score)
                    .then(
                        memories
                            .get(a.index)
                            .map(|m| m.created_at)
                            .cmp(&memories.get(b.index).map(|m| m.created_at)),
                    )
                    .then(a.id.cmp(&b.id))
                    .then(b.index.cmp(&a.index))
            })
            .map(|(i, _)| i);
        // Otherwise the last CRITICAL: the oldest summary, else the oldest rule.
        let Some(drop) = worst.or(chosen.len().checked_sub(1)) else {
            break;
        };
        let removed = chosen.remove(drop);
        total = total.saturating_sub(chars(&removed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    const NOW: Timestamp = 1_000 * DAY;

    fn mem(id: MemoryId, text: &str, priority: Priority, age_secs: i64) -> Memory {
        let mut m = Memory::new(text, Category::General, NOW - age_secs, &FallbackTokenizer);
        m.id = id;
        m.priority = priority;
        m
    }

    fn query(text: &str) -> KeywordSet {
        KeywordSet::of(&FallbackTokenizer, text)
    }

    fn ids(sel: &Selection) -> Vec<MemoryId> {
        sel.accessed_ids()
    }

    /// `n` distinct filler words, w0 w1 …, with a prefix so sets can be kept apart.
    fn words(prefix: &str, n: usize) -> String {
        (0..n)
            .map(|i| format!("{prefix}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn recency_steps_at_and_just_past_each_boundary() {
        let cfg = MemoryConfig::default();
        let table = [
            (0, 1.0),
            (DAY, 1.0),
            (DAY + 1, 0.9),
            (7 * DAY, 0.9),
            (7 * DAY + 1, 0.7),
            (30 * DAY, 0.7),
            (30 * DAY + 1, 0.5),
            (90 * DAY, 0.5),
            (90 * DAY + 1, 0.3),
            (10_000 * DAY, 0.3),
            (-5 * DAY, 1.0), // created in the future: as new
        ];
        for (age, want) in table {
            assert_eq!(recency_factor(NOW - age, NOW, &cfg), want, "age {age}");
        }
    }

    #[test]
    fn score_multiplies_the_four_factors() {
        let cfg = MemoryConfig::default();
        let mut m = mem(1, "tea", Priority::Medium, 10 * DAY);
        m.importance = 4;
        // 0.5 × 4/5 × 0.7 × 2/4
        assert!((score(&m, 0.5, NOW, &cfg) - 0.14).abs() < 1e-6);
        m.importance = 0; // hand-edited record: clamped to 1
        assert!((score(&m, 1.0, NOW, &cfg) - 0.2 * 0.7 * 0.5).abs() < 1e-6);
    }

    #[test]
    fn strong_match_f1_boundary_at_point_seven() {
        let cfg = MemoryConfig::default();
        let q = query(&words("q", 10));
        // 7 shared of 10 + 10 → F1 = 14/20 = 0.7: strong.
        // 7 shared of 10 + 11 → F1 = 14/21 ≈ 0.667: not strong.
        let table = [(0usize, true), (1, false)];
        for (extra, strong) in table {
            let text = format!("{} {}", words("q", 7), words("x", 3 + extra));
            let m = mem(1, &text, Priority::Low, 200 * DAY);
            let sel = select(core::slice::from_ref(&m), &q, NOW, &cfg);
            let c = &sel.chosen[0];
            assert!(
                (c.relevance - crate::text::f1(q.as_slice(), m.keywords.as_slice())).abs() < 1e-7
            );
            let want = if strong {
                Reason::StrongMatch
            } else {
                Reason::TierFloor
            };
            assert_eq!(c.reason, want, "extra {extra}");
        }
    }

    #[test]
    fn strong_match_is_taken_over_better_scored_weak_matches() {
        let cfg = MemoryConfig::default();
        let q = query("alpha beta gamma delta");
        // 40 fresh, important HIGH memories with one keyword in common.
        let mut ms: Vec<Memory> = (0..40)
            .map(|i| {
                let mut m = mem(i, &format!("alpha filler{i}"), Priority::High, 0);
                m.importance = 5;
                m
            })
            .collect();
        // One old, trivial LOW memory matching the whole query (F1 = 1).
        let mut strong = mem(99, "alpha beta gamma delta", Priority::Low, 400 * DAY);
        strong.importance = 1;
        ms.push(strong);
        let sel = select(&ms, &q, NOW, &cfg);
        assert_eq!(sel.chosen.len(), 30);
        let c = sel
            .chosen
            .iter()
            .find(|c| c.id == 99)
            .expect("strong match chosen");
        assert_eq!(c.reason, Reason::StrongMatch);
    }

    #[test]
    fn at_most_ten_strong_matches_the_rest_compete_by_score() {
        let cfg = MemoryConfig {
            floor_high: 0,
            floor_medium: 0,
            floor_low: 0,
            max_selected: 12,
            ..MemoryConfig::default()
        };
        let q = query("alpha beta");
        let ms: Vec<Memory> = (0..15)
            .map(|i| {
                mem(
                    i,
                    "alpha beta",
                    Priority::Medium,
                    i64::try_from(i).unwrap() * DAY,
                )
            })
            .collect();
        let sel = select(&ms, &q, NOW, &cfg);
        let strong = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::StrongMatch)
            .count();
        assert_eq!(strong, 10);
        assert_eq!(sel.chosen.len(), 12);
        // The newest (best recency) are the strong ones; ids 10 and 11 come by rank.
        let ranked: Vec<_> = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::Ranked)
            .map(|c| c.id)
            .collect();
        assert_eq!(ranked, vec![10, 11]);
    }

    #[test]
    fn critical_first_newest_first_at_most_ten_even_if_unrelated() {
        let cfg = MemoryConfig::default();
        let ms: Vec<Memory> = (0..12)
            .map(|i| {
                mem(
                    i,
                    &format!("rule{i}"),
                    Priority::Critical,
                    i64::try_from(i).unwrap() * 3600,
                )
            })
            .collect();
        let sel = select(&ms, &query("something else"), NOW, &cfg);
        assert_eq!(ids(&sel), (0..10).collect::<Vec<_>>());
        assert!(sel.chosen.iter().all(|c| c.reason == Reason::Critical));
        assert_eq!(sel.considered, 12);
    }

    #[test]
    fn critical_beyond_ten_never_enters_even_when_related() {
        // Review case (rv_critical_cap_10): 15 CRITICAL rules, all strongly related to
        // the query. Only the 10 newest enter; the other 5 do not compete as strong
        // matches or by rank (seed: CRITICAL 优先入选，上限 10 条，FIFO 取最新).
        let cfg = MemoryConfig::default();
        let ms: Vec<Memory> = (0..15)
            .map(|i| {
                mem(
                    i,
                    &format!("always answer deploy questions rule{i}"),
                    Priority::Critical,
                    i64::try_from(i).unwrap() * 3600,
                )
            })
            .collect();
        let sel = select(&ms, &query("deploy questions answer always"), NOW, &cfg);
        assert_eq!(ids(&sel), (0..10).collect::<Vec<_>>());
        assert!(sel.chosen.iter().all(|c| c.reason == Reason::Critical));

        // An 11th rule related to the query stays out; with a cap of 11 it is in.
        let mut ms: Vec<Memory> = (0..10)
            .map(|i| mem(i, &format!("rule{i}"), Priority::Critical, 0))
            .collect();
        ms.push(mem(50, "tea green", Priority::Critical, 5 * DAY));
        let sel = select(&ms, &query("green tea"), NOW, &cfg);
        assert!(!ids(&sel).contains(&50), "{:?}", ids(&sel));
        let eleven = MemoryConfig {
            max_critical: 11,
            ..cfg
        };
        assert!(ids(&select(&ms, &query("green tea"), NOW, &eleven)).contains(&50));
    }

    /// A reflection summary: CRITICAL, tagged `summary`.
    fn summary(id: MemoryId, text: &str, age_secs: i64) -> Memory {
        let mut m = mem(id, text, Priority::Critical, age_secs);
        m.tags.push("summary".into());
        m.refresh_derived(&FallbackTokenizer);
        m
    }

    #[test]
    fn critical_slots_go_to_rules_before_summaries() {
        // Review case (rv_summaries_evict_instructions): 3 rules 5 days old, 15 newer
        // summaries. The rules take 3 of the 10 slots, newest first; then the 7 newest
        // summaries, newest first.
        let cfg = MemoryConfig::default();
        let mut ms: Vec<Memory> = (1..=3)
            .map(|id| {
                let age = 5 * DAY + i64::try_from(id).unwrap() * 60;
                mem(
                    id,
                    &format!("always answer in Chinese rule {id}"),
                    Priority::Critical,
                    age,
                )
            })
            .collect();
        for k in 0..15 {
            let age = 4 * DAY - i64::try_from(k).unwrap() * 3600; // 114 is the newest
            ms.push(summary(100 + k, &format!("偏好归纳（2 条）：绿茶{k}"), age));
        }
        let sel = select(&ms, &query("hello"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![1, 2, 3, 114, 113, 112, 111, 110, 109, 108]);
        // With fewer slots than rules, only rules are in.
        let two = MemoryConfig {
            max_critical: 2,
            ..cfg
        };
        assert_eq!(ids(&select(&ms, &query("hello"), NOW, &two)), vec![1, 2]);
    }

    #[test]
    fn a_character_budget_drops_summaries_before_rules() {
        let ms = vec![
            mem(1, "rule old", Priority::Critical, DAY), // 8 chars
            summary(2, "summary new", 0),                // 11 chars
        ];
        let cfg = MemoryConfig {
            max_chars: Some(10),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &query("x"), NOW, &cfg)), vec![1]);
    }

    #[test]
    fn unrelated_memories_never_fill_quotas() {
        let cfg = MemoryConfig::default();
        let ms = vec![
            mem(1, "green tea morning", Priority::High, 0),
            mem(2, "rust compiler", Priority::High, 0),
            mem(3, "python snakes", Priority::Medium, 0),
            mem(4, "jazz music", Priority::Low, 0),
        ];
        let sel = select(&ms, &query("tea please"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![1]);
        let sel = select(&ms, &query(""), NOW, &cfg);
        assert!(sel.chosen.is_empty());
        assert_eq!(sel.considered, 4);
    }

    #[test]
    fn tier_floors_beat_better_scores_of_other_tiers() {
        // 3 slots after the floors would all go to HIGH by score; floors keep a MEDIUM
        // and a LOW in.
        let cfg = MemoryConfig {
            max_selected: 6,
            ..MemoryConfig::default()
        };
        let q = query("tea");
        let mut ms: Vec<Memory> = (0..10)
            .map(|i| mem(i, &format!("tea h{i}"), Priority::High, 0))
            .collect();
        ms.push(mem(20, "tea m0 old", Priority::Medium, 400 * DAY));
        ms.push(mem(21, "tea m1 old", Priority::Medium, 400 * DAY));
        ms.push(mem(22, "tea m2 old", Priority::Medium, 400 * DAY));
        ms.push(mem(30, "tea l0 old", Priority::Low, 400 * DAY));
        let sel = select(&ms, &q, NOW, &cfg);
        let count = |p| sel.chosen.iter().filter(|c| c.priority == p).count();
        assert_eq!(
            (
                count(Priority::High),
                count(Priority::Medium),
                count(Priority::Low)
            ),
            (3, 2, 1)
        );
        let floors = sel
            .chosen
            .iter()
            .filter(|c| c.reason == Reason::TierFloor)
            .count();
        assert_eq!(floors, 6);

        // Without floors, HIGH takes everything.
        let no_floors = MemoryConfig {
            floor_high: 0,
            floor_medium: 0,
            floor_low: 0,
            ..cfg
        };
        let sel = select(&ms, &q, NOW, &no_floors);
        assert!(sel.chosen.iter().all(|c| c.priority == Priority::High));
    }

    #[test]
    fn deleted_and_expired_are_skipped_even_when_critical() {
        let cfg = MemoryConfig::default();
        let mut a = mem(1, "tea", Priority::Critical, 0);
        a.deleted = true;
        let mut b = mem(2, "tea", Priority::High, 0);
        b.expires_at = Some(NOW);
        let mut c = mem(3, "tea", Priority::High, 0);
        c.expires_at = Some(NOW + 1);
        let sel = select(&[a, b, c], &query("tea"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![3]);
        assert_eq!(sel.considered, 1);
    }

    #[test]
    fn ties_are_broken_by_newer_then_higher_id() {
        let cfg = MemoryConfig {
            max_selected: 2,
            floor_high: 0,
            ..MemoryConfig::default()
        };
        let q = query("tea cup");
        // Same score (same age step, same F1): newer wins, then the higher id.
        let ms = vec![
            mem(1, "tea pot", Priority::High, 3 * DAY),
            mem(2, "tea pot", Priority::High, 2 * DAY),
            mem(3, "tea pot", Priority::High, 2 * DAY),
        ];
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![3, 2]);
        let mut rev = ms.clone();
        rev.reverse();
        assert_eq!(ids(&select(&rev, &q, NOW, &cfg)), vec![3, 2]);
    }

    #[test]
    fn character_budget_drops_lowest_scored_non_critical_first() {
        let q = query("tea");
        let ms = vec![
            mem(1, "rule keep tea", Priority::Critical, 0), // 13 chars
            mem(2, "tea best", Priority::High, 0),          // 8
            mem(3, "tea worst old one", Priority::Low, 400 * DAY), // 17
        ];
        let cfg = MemoryConfig {
            max_chars: Some(25),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![1, 2]);
        let cfg = MemoryConfig {
            max_chars: Some(12),
            ..MemoryConfig::default()
        };
        // Even the rule does not fit: nothing is better than a broken budget.
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), Vec::<MemoryId>::new());
        let cfg = MemoryConfig {
            max_chars: Some(13),
            ..MemoryConfig::default()
        };
        assert_eq!(ids(&select(&ms, &q, NOW, &cfg)), vec![1]);
    }

    #[test]
    fn prompt_order_is_critical_then_priority_then_score() {
        let cfg = MemoryConfig::default();
        let ms = vec![
            mem(1, "tea low", Priority::Low, 0),
            mem(2, "tea medium", Priority::Medium, 0),
            mem(3, "tea high", Priority::High, 0),
            mem(4, "rule", Priority::Critical, 0),
        ];
        let sel = select(&ms, &query("tea"), NOW, &cfg);
        assert_eq!(ids(&sel), vec![4, 3, 2, 1]);
        let picked: Vec<_> = sel.memories(&ms).iter().map(|m| m.id).collect();
        assert_eq!(picked, vec![4, 3, 2, 1]);
    }

    #[test]
    fn mark_accessed_touches_exactly_the_chosen() {
        let cfg = MemoryConfig::default();
        let mut ms = vec![
            mem(1, "tea", Priority::High, 0),
            mem(2, "jazz", Priority::High, 0),
        ];
        let sel = select(&ms, &query("tea"), NOW, &cfg);
        mark_accessed(&mut ms, &sel, NOW + 5);
        assert_eq!(ms[0].last_accessed_at, Some(NOW + 5));
        assert_eq!(ms[1].last_accessed_at, None);
    }

    #[test]
    fn reason_serialises_snake_case() {
        assert_eq!(
            serde_json::to_string(&Reason::StrongMatch).unwrap(),
            "\"strong_match\""
        );
        assert_eq!(
            serde_json::to_string(&Reason::TierFloor).unwrap(),
            "\"tier_floor\""
        );
    }

    #[test]
    fn unsorted_stored_keywords_do_not_panic_or_inflate_relevance() {
        let cfg = MemoryConfig::default();
        let mut m = mem(1, "tea", Priority::High, 0);
        let h = crate::text::keyword_hash("tea");
        m.keywords = serde_json::from_str(&format!("[{h},{h},{h}]")).unwrap();
        let sel = select(&[m], &query("tea"), NOW, &cfg);
        assert!(sel.chosen[0].relevance <= 1.0);
    }
}
