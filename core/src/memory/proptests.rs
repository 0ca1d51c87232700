//! Property tests of the memory rules: selection limits and eligibility, tier floors,
//! agreement of the fast selection with a naive full sort, order independence, decay
//! idempotence, the symmetric parts of merge, and that neither merging nor the model's
//! review ever lets a memory learned from world text become or change a rule.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use proptest::prelude::*;

use super::*;
use crate::provenance::Source;
use crate::text::{f1, intersection_len, FallbackTokenizer, KeywordSet};
use crate::{Timestamp, DAY};

const NOW: Timestamp = 10_000 * DAY;

/// (words from a 24-word vocabulary, priority, importance, age in hours, deleted,
/// expires in hours from now, category, pinned, reflection summary, promoted by the model)
type Spec = (
    Vec<u8>,
    u8,
    u8,
    i64,
    bool,
    Option<i64>,
    u8,
    bool,
    bool,
    bool,
);

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::collection::vec(0u8..24, 0..8),
        0u8..4,
        0u8..7,
        0i64..(200 * 24),
        proptest::bool::weighted(0.1),
        proptest::option::weighted(0.2, -48i64..48),
        0u8..5,
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.2),
    )
}

fn build(specs: &[Spec]) -> Vec<Memory> {
    specs
        .iter()
        .enumerate()
        .map(
            |(i, (words, p, imp, age_h, deleted, exp_h, cat, pinned, summary, promoted))| {
                let text: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
                let cat = Category::ALL
                    .get(usize::from(*cat))
                    .copied()
                    .unwrap_or_default();
                let mut m =
                    Memory::new(text.join(" "), cat, NOW - age_h * 3600, &FallbackTokenizer);
                m.id = i as MemoryId + 1;
                m.priority = Priority::from_u8(*p).unwrap_or(Priority::Low);
                m.importance = *imp; // may be out of 1–5, as in a hand-edited file
                m.deleted = *deleted;
                m.expires_at = exp_h.map(|h| NOW + h * 3600);
                m.pinned = *pinned;
                m.promoted = *promoted;
                // Some memories are dialog turns: a speaker (one of the words) and a
                // link to the memory before them.
                if words.len() % 3 == 1 {
                    m.prev = Some(i as MemoryId);
                }
                if let (0, Some(w)) = (words.len() % 2, words.last()) {
                    m.speaker = Some(format!("w{w}"));
                    m.refresh_derived(&FallbackTokenizer);
                    m.importance = *imp;
                }
                if *summary {
                    m.tags.push(String::from("summary"));
                    m.refresh_derived(&FallbackTokenizer);
                    m.importance = *imp;
                }
                m
            },
        )
        .collect()
}

fn query_of(words: &[u8]) -> KeywordSet {
    let text: Vec<String> = words.iter().map(|w| format!("w{w}")).collect();
    KeywordSet::of(&FallbackTokenizer, &text.join(" "))
}

fn small_cfg() -> impl Strategy<Value = MemoryConfig> {
    (
        0usize..12,
        0usize..5,
        0usize..5,
        0usize..4,
        proptest::option::of(0usize..120),
    )
        .prop_map(
            |(max_selected, max_critical, max_strong, floor, max_chars)| MemoryConfig {
                max_selected,
                max_critical,
                max_strong,
                floor_high: floor,
                floor_medium: floor.saturating_sub(1),
                floor_low: floor.saturating_sub(2),
                max_chars,
                ..MemoryConfig::default()
            },
        )
}

/// BM25 written out (terms occur once; statistics over the memories not deleted), plus
/// the reply share of the BM25 of each active memory it replies to, times the subject
/// boost when the question names one of its subjects, divided by the best among the
/// active memories: the relevance of each memory.
fn naive_relevance(ms: &[Memory], q: &KeywordSet, cfg: &MemoryConfig) -> Vec<f32> {
    let live: Vec<&Memory> = ms.iter().filter(|m| !m.deleted).collect();
    let n = live.len();
    let mean = if n == 0 {
        0.0
    } else {
        (live.iter().map(|m| u64::from(m.ranked_len())).sum::<u64>() as f64 / n as f64) as f32
    };
    let bm25: Vec<f32> = ms
        .iter()
        .map(|m| {
            if !m.is_active(NOW) {
                return 0.0;
            }
            let mut sum = 0f32;
            for &t in q.as_slice() {
                if m.keywords.contains(t) {
                    let df = live.iter().filter(|o| o.keywords.contains(t)).count();
                    sum += 1.0 * idf(df, n);
                }
            }
            sum * length_factor(m.ranked_len(), mean)
        })
        .collect();
    let lexical: Vec<f32> = ms
        .iter()
        .map(|m| {
            if !m.is_active(NOW) {
                return 0.0;
            }
            let own = ms
                .iter()
                .position(|x| core::ptr::eq(x, m))
                .map_or(0.0, |i| bm25[i]);
            let mut propagated = 0f32;
            for (p, &b) in ms.iter().zip(&bm25) {
                if b > 0.0 && Some(p.id) == m.prev {
                    propagated += cfg.reply_share * b;
                }
            }
            let named = intersection_len(m.subjects.as_slice(), q.as_slice()) > 0;
            // …and about more than the name: another shared word, or a share passed on.
            let other = q
                .as_slice()
                .iter()
                .any(|&h| m.keywords.contains(h) && !m.subjects.contains(h));
            let boost = if named && (other || propagated > 0.0) {
                cfg.subject_boost
            } else {
                1.0
            };
            (own + propagated) * boost
        })
        .collect();
    let best = lexical.iter().copied().fold(0f32, f32::max);
    lexical
        .iter()
        .map(|&b| if best > 0.0 { b / best } else { 0.0 })
        .collect()
}

/// The rules written the slow, obvious way: every candidate sorted.
fn reference(ms: &[Memory], q: &KeywordSet, cfg: &MemoryConfig) -> Vec<(MemoryId, Reason)> {
    let active: Vec<(usize, &Memory)> = ms
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_active(NOW))
        .collect();
    let mut crit: Vec<&(usize, &Memory)> = active
        .iter()
        .filter(|(_, m)| m.priority == Priority::Critical)
        .collect();
    let cfg_summary = |m: &Memory| !stated_by_user(m, cfg);
    // The user's rules before reflection summaries, each newest first.
    crit.sort_by(|(ia, a), (ib, b)| {
        cfg_summary(a)
            .cmp(&cfg_summary(b))
            .then(b.created_at.cmp(&a.created_at))
            .then(b.id.cmp(&a.id))
            .then(ia.cmp(ib))
    });
    let mut out: Vec<(MemoryId, Reason, Priority)> = crit
        .iter()
        .take(cfg.max_critical.min(cfg.max_selected))
        .map(|(_, m)| (m.id, Reason::Critical, m.priority))
        .collect();
    let relevance = naive_relevance(ms, q, cfg);
    let mut cands: Vec<(usize, &Memory, f32, bool)> = active
        .iter()
        .filter(|(i, m)| {
            intersection_len(q.as_slice(), m.keywords.as_slice()) > 0 || relevance[*i] > 0.0
        })
        .map(|(i, m)| {
            let r = relevance[*i];
            let strong = f1(q.as_slice(), m.keywords.as_slice());
            (
                *i,
                *m,
                score(
                    m,
                    super::select::sharpen(r, cfg.relevance_exponent),
                    NOW,
                    cfg,
                ),
                at_least(strong, cfg.strong_match_f1),
                r,
            )
        })
        // CRITICAL memories enter only through their own slots; weak matches compete
        // only as strong ones.
        .filter(|c| {
            c.1.priority != Priority::Critical
                && (c.3 || (c.2 > 0.0 && at_least(c.4, cfg.min_relevance)))
        })
        .map(|(i, m, s, strong, _)| (i, m, s, strong))
        .collect();
    cands.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then(b.1.created_at.cmp(&a.1.created_at))
            .then(b.1.id.cmp(&a.1.id))
            .then(a.0.cmp(&b.0))
    });
    let mut taken = alloc::vec![false; cands.len()];
    let mut strong = 0;
    for (c, t) in cands.iter().zip(taken.iter_mut()) {
        if c.3 && strong < cfg.max_strong && out.len() < cfg.max_selected {
            out.push((c.1.id, Reason::StrongMatch, c.1.priority));
            *t = true;
            strong += 1;
        }
    }
    for tier in [Priority::High, Priority::Medium, Priority::Low] {
        for (c, t) in cands.iter().zip(taken.iter_mut()) {
            let have = out.iter().filter(|o| o.2 == tier).count();
            if !*t && c.1.priority == tier && have < cfg.floor(tier) && out.len() < cfg.max_selected
            {
                out.push((c.1.id, Reason::TierFloor, tier));
                *t = true;
            }
        }
    }
    for (c, t) in cands.iter().zip(taken.iter_mut()) {
        if !*t && out.len() < cfg.max_selected {
            out.push((c.1.id, Reason::Ranked, c.1.priority));
            *t = true;
        }
    }
    let mut v: Vec<(MemoryId, Reason)> = out.into_iter().map(|(id, r, _)| (id, r)).collect();
    v.sort_by_key(|(id, _)| *id);
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn selection_respects_limits_and_eligibility(
        specs in proptest::collection::vec(spec(), 0..60),
        qw in proptest::collection::vec(0u8..24, 0..6),
        cfg in small_cfg(),
    ) {
        let ms = build(&specs);
        let q = query_of(&qw);
        let sel = select(&ms, &q, NOW, &cfg);
        let count = |r| sel.chosen.iter().filter(|c| c.reason == r).count();
        prop_assert!(sel.chosen.len() <= cfg.max_selected);
        // The CRITICAL limit counts priority, not the reason: no CRITICAL memory may
        // slip in as a strong match or by rank.
        let critical = sel.chosen.iter().filter(|c| c.priority == Priority::Critical).count();
        prop_assert!(critical <= cfg.max_critical, "{} CRITICAL chosen", critical);
        prop_assert_eq!(critical, count(Reason::Critical));
        prop_assert!(count(Reason::StrongMatch) <= cfg.max_strong);
        if let Some(budget) = cfg.max_chars {
            let chars: usize = sel.chosen.iter().map(|c| ms[c.index].content.chars().count()).sum();
            prop_assert!(chars <= budget);
        }
        let mut seen = Vec::new();
        for c in &sel.chosen {
            let m = &ms[c.index];
            prop_assert_eq!(m.id, c.id);
            prop_assert!(!seen.contains(&c.id), "chosen twice");
            seen.push(c.id);
            prop_assert!(m.is_active(NOW), "inactive chosen");
            if c.reason == Reason::Critical {
                prop_assert_eq!(m.priority, Priority::Critical);
            } else {
                // It shares a word, or replies to an active memory that does.
                let replied = ms.iter().any(|p| {
                    Some(p.id) == m.prev && p.is_active(NOW) && q.overlaps(&p.keywords)
                });
                prop_assert!(q.overlaps(&m.keywords) || replied, "unrelated memory chosen");
                prop_assert!(c.propagated == 0.0 || replied, "a share from no matched turn");
                prop_assert!(c.score > 0.0);
            }
            let r = f1(q.as_slice(), m.keywords.as_slice());
            prop_assert!((c.f1 - r).abs() < 1e-6);
            prop_assert!((0.0..=1.0).contains(&c.relevance));
        }
        prop_assert_eq!(sel.considered, ms.iter().filter(|m| !m.deleted).count());
    }

    #[test]
    fn fast_selection_equals_the_naive_full_sort(
        specs in proptest::collection::vec(spec(), 0..80),
        qw in proptest::collection::vec(0u8..24, 0..6),
        cfg in small_cfg(),
    ) {
        let cfg = MemoryConfig { max_chars: None, ..cfg };
        let ms = build(&specs);
        let q = query_of(&qw);
        let mut got: Vec<(MemoryId, Reason)> =
            select(&ms, &q, NOW, &cfg).chosen.iter().map(|c| (c.id, c.reason)).collect();
        got.sort_by_key(|(id, _)| *id);
        prop_assert_eq!(got, reference(&ms, &q, &cfg));
    }

    #[test]
    fn the_index_kept_through_edits_selects_what_a_full_scan_selects(
        specs in proptest::collection::vec(spec(), 0..70),
        edits in proptest::collection::vec((0u8..3, 0usize..80, spec()), 0..12),
        qw in proptest::collection::vec(0u8..24, 0..6),
        context in proptest::collection::vec(0u8..24, 0..6),
        weight in 0.0f32..1.0,
        cfg in small_cfg(),
        ranking in proptest::bool::ANY,
        min_relevance in 0.0f32..0.6,
    ) {
        let cfg = MemoryConfig {
            ranking: if ranking { Ranking::Bm25 } else { Ranking::F1 },
            min_relevance,
            ..cfg
        };
        let mut ms = build(&specs);
        let mut ix = MemoryIndex::build(&ms);
        // Edits as the store's cache makes them: insert, replace, remove at a position.
        for (kind, at, spec) in &edits {
            let new = build(core::slice::from_ref(spec)).remove(0);
            match kind {
                0 => {
                    let at = at % (ms.len() + 1);
                    ix.insert(at, &new);
                    ms.insert(at, new);
                }
                1 if !ms.is_empty() => {
                    let at = at % ms.len();
                    ix.replace(at, &ms[at], &new);
                    ms[at] = new;
                }
                _ if !ms.is_empty() => {
                    let at = at % ms.len();
                    let old = ms.remove(at);
                    ix.remove(at, &old);
                }
                _ => {}
            }
        }
        prop_assert_eq!(&ix, &MemoryIndex::build(&ms));
        // The dense fields ranking reads are each memory's, at its position.
        let fields: Vec<fields::Fields> = ms.iter().map(fields::Fields::of).collect();
        prop_assert_eq!(ix.fields(), &fields[..]);
        let q = RecallQuery::new(&query_of(&qw)).with_context(&query_of(&context), weight);
        let scanned = select_query(&ms, None, &q, None, NOW, &cfg);
        let indexed = select_query(&ms, Some(&ix), &q, None, NOW, &cfg);
        prop_assert_eq!(scanned, indexed);
    }

    #[test]
    fn a_question_of_more_than_32_words_selects_through_the_index_what_a_scan_selects(
        specs in proptest::collection::vec(spec(), 0..70),
        qw in proptest::collection::vec(0u8..24, 0..24),
        context in proptest::collection::vec(0u8..24, 0..12),
        others in 0usize..40,
        cfg in small_cfg(),
    ) {
        // Words no memory has widen the question past the 32 terms one memory's
        // matches are gathered in (and some stay under it).
        let mut text: Vec<String> = qw.iter().map(|w| format!("w{w}")).collect();
        text.extend((0..others).map(|i| format!("other{i}")));
        let question = KeywordSet::of(&FallbackTokenizer, &text.join(" "));
        let ms = build(&specs);
        let ix = MemoryIndex::build(&ms);
        let q = RecallQuery::new(&question).with_context(&query_of(&context), 0.25);
        prop_assert_eq!(
            select_query(&ms, Some(&ix), &q, None, NOW, &cfg),
            select_query(&ms, None, &q, None, NOW, &cfg)
        );
    }

    #[test]
    fn embeddings_only_widen_what_competes_and_keep_the_rules(
        specs in proptest::collection::vec(spec(), 0..60),
        dirs in proptest::collection::vec(proptest::option::weighted(0.7, 0u8..6), 60),
        qw in proptest::collection::vec(0u8..24, 0..6),
        qdir in 0u8..6,
        weighted in proptest::bool::ANY,
    ) {
        let cfg = MemoryConfig {
            fusion: if weighted { Fusion::Weighted } else { Fusion::Rrf },
            ..MemoryConfig::default()
        };
        let mut ms = build(&specs);
        let embed = |d: u8| -> Vec<f32> {
            (0..6).map(|i| if i == d { 1.0 } else { 0.1 }).collect()
        };
        for (m, d) in ms.iter_mut().zip(&dirs) {
            if let Some(d) = d {
                m.embedding = Some(embed(*d));
                m.embedding_model = Some(String::from("e"));
            }
        }
        let q = RecallQuery::new(&query_of(&qw));
        let qv = embed(qdir);
        let v = QueryVector { model: "e", embedding: &qv };
        let ix = MemoryIndex::build(&ms);
        let hybrid = select_query(&ms, Some(&ix), &q, Some(v), NOW, &cfg);
        prop_assert_eq!(&hybrid, &select_query(&ms, None, &q, Some(v), NOW, &cfg));
        prop_assert!(hybrid.chosen.len() <= cfg.max_selected);
        let other = QueryVector { model: "other", embedding: &qv };
        prop_assert_eq!(
            select_query(&ms, None, &q, Some(other), NOW, &cfg),
            select_query(&ms, None, &q, None, NOW, &cfg),
            "another model's embeddings are never compared"
        );
        for c in &hybrid.chosen {
            let m = &ms[c.index];
            prop_assert!(m.is_active(NOW));
            prop_assert!((0.0..=1.0 + 1e-6).contains(&c.relevance));
            if c.reason != Reason::Critical {
                let replied = ms.iter().any(|p| {
                    Some(p.id) == m.prev && p.is_active(NOW) && q.question().overlaps(&p.keywords)
                });
                prop_assert!(
                    q.question().overlaps(&m.keywords)
                        || c.cosine.is_some_and(|x| x > 0.0)
                        || replied,
                    "a memory neither sharing a word, nor near by embedding, nor replying"
                );
            }
        }
    }

    #[test]
    fn tier_floors_hold_when_enough_related_candidates_exist(
        specs in proptest::collection::vec(spec(), 0..80),
        qw in proptest::collection::vec(0u8..24, 1..6),
    ) {
        // Defaults: 10 critical + 10 strong + 3 + 2 + 1 ≤ 30, so the floors always fit.
        // Every memory sharing a keyword counts as related here (by default one far
        // weaker than the best match does not compete at all).
        let cfg = MemoryConfig { min_relevance: 0.0, ..MemoryConfig::default() };
        let ms = build(&specs);
        let q = query_of(&qw);
        let sel = select(&ms, &q, NOW, &cfg);
        for tier in [Priority::High, Priority::Medium, Priority::Low] {
            let related = ms
                .iter()
                .filter(|m| m.is_active(NOW) && m.priority == tier && q.overlaps(&m.keywords))
                .count();
            let chosen = sel.chosen.iter().filter(|c| c.priority == tier).count();
            prop_assert!(chosen >= related.min(cfg.floor(tier)), "{tier}: {chosen} of {related}");
        }
    }

    #[test]
    fn selection_does_not_depend_on_input_order(
        specs in proptest::collection::vec(spec(), 0..50),
        qw in proptest::collection::vec(0u8..24, 0..6),
        cfg in small_cfg(),
        seed in any::<u64>(),
    ) {
        let ms = build(&specs);
        let mut shuffled = ms.clone();
        // Fisher–Yates with a tiny LCG: ids stay, indices change.
        let mut s = seed | 1;
        for i in (1..shuffled.len()).rev() {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        let q = query_of(&qw);
        let a: Vec<(MemoryId, Reason)> = select(&ms, &q, NOW, &cfg).chosen.iter().map(|c| (c.id, c.reason)).collect();
        let b: Vec<(MemoryId, Reason)> = select(&shuffled, &q, NOW, &cfg).chosen.iter().map(|c| (c.id, c.reason)).collect();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn decay_is_idempotent_and_never_promotes(
        specs in proptest::collection::vec(spec(), 0..40),
        later_days in 0i64..200,
    ) {
        let cfg = MemoryConfig::default();
        let mut ms = build(&specs);
        let before = ms.clone();
        let now = NOW + later_days * DAY;
        apply_decay(&mut ms, now, &cfg);
        for (a, b) in before.iter().zip(&ms) {
            prop_assert!(b.priority >= a.priority);
            prop_assert_eq!(a.created_at, b.created_at);
            if a.pinned || a.deleted {
                prop_assert_eq!(a.priority, b.priority);
            }
        }
        prop_assert!(apply_decay(&mut ms, now, &cfg).is_empty());
    }

    #[test]
    fn critical_fifo_evicts_summaries_and_promotions_then_oldest_rules_then_pinned(
        specs in proptest::collection::vec(spec(), 0..60),
        cap in 0usize..20,
    ) {
        let cfg = MemoryConfig { critical_cap: cap, ..MemoryConfig::default() };
        let ms = build(&specs);
        let evicted = critical_overflow(&ms, NOW, &cfg);
        let active: Vec<&Memory> = ms
            .iter()
            .filter(|m| m.priority == Priority::Critical && m.is_active(NOW))
            .collect();
        prop_assert_eq!(evicted.len(), active.len().saturating_sub(cap));
        // Eviction rank: unpinned summaries and promotions, unpinned rules, pinned; each
        // oldest first.
        let rank = |m: &Memory| (m.pinned, stated_by_user(m, &cfg), m.created_at, m.id);
        for gone in active.iter().filter(|m| evicted.contains(&m.id)) {
            for kept in active.iter().filter(|m| !evicted.contains(&m.id)) {
                prop_assert!(rank(gone) < rank(kept), "{} evicted before {}", gone.id, kept.id);
            }
        }
    }

    #[test]
    fn what_fits_in_the_critical_room_is_never_retired_nor_pushes_out_a_rule(
        specs in proptest::collection::vec(spec(), 0..60),
        cap in 0usize..20,
    ) {
        let cfg = MemoryConfig { critical_cap: cap, ..MemoryConfig::default() };
        let mut ms = build(&specs);
        // The cap as the shell enforces it before a run adds anything.
        for id in critical_overflow(&ms, NOW, &cfg) {
            if let Some(m) = ms.iter_mut().find(|m| m.id == id) {
                retire(m, &cfg);
            }
        }
        let held: Vec<MemoryId> = ms
            .iter()
            .filter(|m| m.priority == Priority::Critical && m.is_active(NOW))
            .filter(|m| m.pinned || stated_by_user(m, &cfg))
            .map(|m| m.id)
            .collect();
        // As many new summaries as there is room for.
        let room = critical_room(&ms, NOW, &cfg);
        let first_new = ms.len() as MemoryId + 1;
        for k in 0..room {
            let mut m = Memory::new("new summary", Category::Fact, NOW, &FallbackTokenizer);
            m.id = first_new + k as MemoryId;
            m.priority = Priority::Critical;
            m.tags.push(String::from("summary"));
            ms.push(m);
        }
        for id in critical_overflow(&ms, NOW, &cfg) {
            prop_assert!(id < first_new, "new summary {} retired at once", id);
            prop_assert!(!held.contains(&id), "{} pushed out by a summary", id);
        }
    }

    #[test]
    fn embedding_duplicates_equal_the_naive_scan(
        specs in proptest::collection::vec(
            (
                proptest::option::weighted(0.9, (0usize..4, proptest::collection::vec(-0.3f32..0.3, 8))),
                0i64..50,
                proptest::bool::weighted(0.1),
                proptest::bool::weighted(0.05),
            ),
            0..160, // past one scan block of 64
        ),
        limit in 0usize..170,
        threshold in prop_oneof![Just(0.92f32), 0.5f32..1.0, -0.5f32..0.1],
    ) {
        let cfg = MemoryConfig {
            duplicate_scan_limit: limit,
            duplicate_cosine: threshold,
            ..MemoryConfig::default()
        };
        // Embeddings near one of four directions, so near-threshold pairs are common;
        // some are missing, deleted, or of another length.
        let ms: Vec<Memory> = specs
            .iter()
            .enumerate()
            .map(|(i, (e, created, deleted, short))| {
                let mut m = Memory::new("x", Category::Fact, *created, &FallbackTokenizer);
                m.id = i as MemoryId + 1;
                m.deleted = *deleted;
                m.embedding = e.as_ref().map(|(dir, noise)| {
                    let mut v = noise.clone();
                    if let Some(x) = v.get_mut(*dir) {
                        *x += 1.0;
                    }
                    if *short {
                        v.truncate(5);
                    }
                    v
                });
                m
            })
            .collect();
        let got = embedding_duplicates(&ms, 100, &cfg);

        // Naive: every cosine computed, newest `limit` against every older one.
        let mut with: Vec<&Memory> = ms
            .iter()
            .filter(|m| m.is_active(100) && m.embedding.as_ref().is_some_and(|e| !e.is_empty()))
            .collect();
        with.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        let emb = |m: &Memory| m.embedding.clone().unwrap_or_default();
        let mut cands = Vec::new();
        for i in 0..with.len().min(limit) {
            let mut best: Option<(usize, f32)> = None;
            for j in i + 1..with.len() {
                let c = crate::text::cosine(&emb(with[i]), &emb(with[j]));
                if at_least(c, threshold) && best.is_none_or(|(_, b)| c > b) {
                    best = Some((j, c));
                }
            }
            if let Some((j, c)) = best {
                cands.push((i, j, c));
            }
        }
        cands.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        let mut used = alloc::vec![false; with.len()];
        let mut want = Vec::new();
        for (i, j, c) in cands {
            if used[i] || used[j] {
                continue;
            }
            used[i] = true;
            used[j] = true;
            // with[j] is older (sorted newest first): it is kept.
            want.push(DuplicatePair { keep: with[j].id, drop: with[i].id, cosine: c });
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn merge_is_symmetric_where_it_should_be(
        a in spec(), b in spec(),
        tags_a in proptest::collection::vec("[a-cA-C]{1,2}", 0..4),
        tags_b in proptest::collection::vec("[a-cA-C]{1,2}", 0..4),
        exp_a in proptest::option::of(0i64..100),
        exp_b in proptest::option::of(0i64..100),
    ) {
        let ms = build(&[a, b]);
        let (mut x, mut y) = (ms[0].clone(), ms[1].clone());
        x.tags = tags_a;
        y.tags = tags_b;
        x.expires_at = exp_a;
        y.expires_at = exp_b;
        let xy = merge(&x, &y, &FallbackTokenizer);
        let yx = merge(&y, &x, &FallbackTokenizer);
        prop_assert_eq!(xy.priority, x.priority.min(y.priority));
        prop_assert_eq!(xy.priority, yx.priority);
        prop_assert_eq!(xy.importance, x.importance.max(y.importance).clamp(1, 5));
        prop_assert_eq!(xy.importance, yx.importance);
        prop_assert_eq!(xy.expires_at, yx.expires_at);
        prop_assert_eq!((xy.pinned, xy.created_at), (yx.pinned, yx.created_at));
        prop_assert_eq!(xy.promoted, yx.promoted);
        prop_assert!(!xy.promoted || x.promoted || y.promoted);
        let lower = |m: &Memory| {
            let mut t: Vec<String> = m.tags.iter().map(|s| s.to_ascii_lowercase()).collect();
            t.sort();
            t
        };
        prop_assert_eq!(lower(&xy), lower(&yx));
        for t in x.tags.iter().chain(&y.tags) {
            prop_assert!(xy.tags.iter().any(|s| s.eq_ignore_ascii_case(t)), "tag {} lost", t);
        }
        prop_assert!(!xy.deleted);
        prop_assert_eq!(xy.content_hash, content_hash(&xy.content));
        if let (Some(ea), Some(eb)) = (exp_a, exp_b) {
            prop_assert_eq!(xy.expires_at, Some(ea.min(eb)));
        }
    }

    #[test]
    fn a_flattened_block_always_has_one_line_per_memory(
        texts in proptest::collection::vec(any::<String>(), 1..6),
    ) {
        let ms: Vec<Memory> = texts
            .iter()
            .map(|t| Memory::new(t.as_str(), Category::General, 0, &FallbackTokenizer))
            .collect();
        let refs: Vec<&Memory> = ms.iter().collect();
        let block = format_block(&refs, Lang::En);
        let lines: Vec<&str> = block.split('\n').collect();
        // open, one per memory, close, and the empty piece after the final newline
        prop_assert_eq!(lines.len(), ms.len() + 3);
        prop_assert_eq!(lines[0], BLOCK_OPEN);
        prop_assert_eq!(lines[ms.len() + 1], BLOCK_CLOSE);
        prop_assert_eq!(block.matches(BLOCK_CLOSE).count(), 1);
        prop_assert!(lines.iter().all(|l| !l.contains('\r')));
    }

    #[test]
    fn merging_never_lets_world_text_change_or_become_a_rule(
        a in spec(), b in spec(), world_a: bool, world_b: bool,
    ) {
        let ms = build(&[a, b]);
        let src = |w: bool| if w { Source::World } else { Source::Person };
        let x = ms[0].clone().with_source(src(world_a));
        let y = ms[1].clone().with_source(src(world_b));
        let cfg = MemoryConfig::default();
        for (stored, incoming) in [(&x, &y), (&y, &x)] {
            let m = merge(stored, incoming, &FallbackTokenizer);
            prop_assert_eq!(m.id, stored.id);
            if stored.is_world() != incoming.is_world() {
                // The non-world memory comes out whole.
                let own = if stored.is_world() { incoming } else { stored };
                prop_assert_eq!(&m.content, &own.content);
                prop_assert_eq!((m.priority, m.importance, m.category, m.source),
                    (own.priority, own.importance.clamp(1, 5), own.category, own.source));
                // And they are never merged as similar memories.
                let d = decide_ingest(incoming, core::slice::from_ref(stored), NOW, &cfg,
                    &FallbackTokenizer);
                prop_assert!(!matches!(d, IngestDecision::Merge { .. }), "{:?}", d);
            }
            if m.is_world() {
                prop_assert!(m.priority >= WORLD_MAX_PRIORITY);
                prop_assert!(m.importance <= WORLD_MAX_IMPORTANCE);
                prop_assert!(!m.category.is_rule());
                prop_assert!(!m.promoted);
            }
        }
    }

    #[test]
    fn the_review_never_promotes_a_world_memory(
        specs in proptest::collection::vec(spec(), 1..12),
        worlds in proptest::collection::vec(any::<bool>(), 12),
        proposals in proptest::collection::vec((1u64..14, 0u8..4), 0..8),
    ) {
        let cfg = MemoryConfig { max_adjustments: 8, ..MemoryConfig::default() };
        let mut ms: Vec<Memory> = build(&specs)
            .into_iter()
            .zip(&worlds)
            .map(|(m, &w)| if w { m.with_source(Source::World) } else { m })
            .collect();
        let before = ms.clone();
        let props: Vec<Proposal> = proposals
            .iter()
            .map(|&(id, p)| Proposal {
                id,
                change: Change::To(Priority::from_u8(p).unwrap_or(Priority::Low)),
            })
            .collect();
        let out = adjust_priorities(&mut ms, &props, NOW, usize::MAX, &cfg);
        for (m, old) in ms.iter().zip(&before) {
            if old.is_world() {
                prop_assert!(m.priority >= old.priority, "#{} raised", m.id);
                prop_assert!(m.priority != Priority::Critical);
            }
        }
        for r in &out.rejected {
            if r.reason == RejectReason::FromWorld {
                let m = before.iter().find(|m| m.id == r.proposal.id);
                prop_assert!(m.is_some_and(Memory::is_world));
            }
        }
    }
}
