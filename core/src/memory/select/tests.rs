//! Table tests of the selection rules.

use super::*;
use crate::memory::{Category, Fusion};
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
        assert!((c.f1 - crate::text::f1(q.as_slice(), m.keywords.as_slice())).abs() < 1e-7);
        let want = if strong {
            Reason::StrongMatch
        } else {
            Reason::TierFloor
        };
        assert_eq!(c.reason, want, "extra {extra}");
    }
}

#[test]
fn matches_far_weaker_than_the_best_do_not_fill_the_prompt() {
    let cfg = MemoryConfig::default();
    let q = query("alpha beta gamma delta");
    let mut ms: Vec<Memory> = (0..40)
        .map(|i| {
            mem(
                i,
                &format!("alpha filler{i} more words here"),
                Priority::Low,
                0,
            )
        })
        .collect();
    // 39 memories share "alpha" — a word most of them have, so it weighs little.
    ms.push(mem(99, "beta gamma delta", Priority::Low, 0));
    let sel = select(&ms, &q, NOW, &cfg);
    assert_eq!(ids(&sel), vec![99], "{sel:?}");
    let lax = MemoryConfig {
        min_relevance: 0.0,
        ..cfg
    };
    assert_eq!(select(&ms, &q, NOW, &lax).chosen.len(), 30);
}

#[test]
fn strong_match_is_taken_over_better_scored_weak_matches() {
    // Weak matches may compete however weak (the default drops those below 0.2 of
    // the best; see the next test).
    let cfg = MemoryConfig {
        min_relevance: 0.0,
        ..MemoryConfig::default()
    };
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
    // matches or by rank (tea-agent: CRITICAL 优先入选，上限 10 条，FIFO 取最新).
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
    // Every memory not deleted is ranked against (expired ones count in the
    // statistics until the store removes them).
    assert_eq!(sel.considered, 2);
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

/// A dialog turn: `speaker` said `text`, replying to memory `prev`.
fn turn(id: MemoryId, speaker: &str, text: &str, prev: Option<MemoryId>) -> Memory {
    let mut m = mem(id, &format!("{speaker}: {text}"), Priority::Low, DAY);
    m.speaker = Some(speaker.into());
    m.prev = prev;
    m.refresh_derived(&FallbackTokenizer);
    m
}

#[test]
fn a_reply_sharing_no_word_gains_a_share_of_the_turn_it_answers() {
    let ms = vec![
        turn(
            1,
            "Mel",
            "which instrument do you practise these days?",
            None,
        ),
        turn(2, "Anna", "the cello, every evening after dinner", Some(1)),
        turn(3, "Anna", "the garden needs rain", Some(2)),
    ];
    let q = query("what instrument does she practise");
    // (reply share, is the reply chosen, its propagated part ÷ the asked turn's BM25)
    let table = [(0.0, false, 0.0), (0.3, true, 0.3), (0.5, true, 0.5)];
    for (share, chosen, part) in table {
        let cfg = MemoryConfig {
            reply_share: share,
            ..MemoryConfig::default()
        };
        let sel = select(&ms, &q, NOW, &cfg);
        let asked = sel.chosen.iter().find(|c| c.id == 1).expect("the question");
        let reply = sel.chosen.iter().find(|c| c.id == 2);
        assert_eq!(reply.is_some(), chosen, "share {share}: {sel:?}");
        if let Some(r) = reply {
            assert_eq!(r.bm25, 0.0, "the reply shares no word");
            assert!((r.propagated / asked.bm25 - part).abs() < 1e-6);
            assert!((r.relevance - part).abs() < 1e-6, "relative to the best");
        }
        assert!(
            !ids(&sel).contains(&3),
            "only the turn right after a match gains"
        );
    }
}

#[test]
fn a_reply_gains_nothing_from_a_deleted_or_expired_turn() {
    let q = query("which instrument");
    for gone in ["deleted", "expired"] {
        let mut asked = turn(1, "Mel", "which instrument do you practise?", None);
        match gone {
            "deleted" => asked.deleted = true,
            _ => asked.expires_at = Some(NOW - 1),
        }
        let ms = vec![asked, turn(2, "Anna", "the cello", Some(1))];
        let sel = select(&ms, &q, NOW, &MemoryConfig::default());
        assert!(sel.chosen.is_empty(), "{gone}: {sel:?}");
    }
}

#[test]
fn a_question_naming_the_speaker_boosts_their_turn_above_a_shorter_match() {
    // Both share "cello" and "mel"; the plain memory is shorter (BM25 prefers it),
    // but only the other is Mel's own turn.
    let mut own = mem(
        1,
        "I play the cello every day after work",
        Priority::Low,
        DAY,
    );
    own.speaker = Some("Mel".into());
    own.refresh_derived(&FallbackTokenizer);
    let plain = mem(2, "cello mel tuesday evening", Priority::Low, DAY);
    let q = query("mel cello");
    // (subject boost, the first chosen, the speaker's boost factor)
    let table = [(1.0, 2, 1.0), (1.5, 1, 1.5), (2.0, 1, 2.0)];
    for (boost, first, factor) in table {
        let cfg = MemoryConfig {
            subject_boost: boost,
            max_selected: 1,
            floor_low: 0,
            ..MemoryConfig::default()
        };
        let sel = select(&[own.clone(), plain.clone()], &q, NOW, &cfg);
        assert_eq!(ids(&sel), vec![first], "boost {boost}");
        let all = select(
            &[own.clone(), plain.clone()],
            &q,
            NOW,
            &MemoryConfig {
                subject_boost: boost,
                ..MemoryConfig::default()
            },
        );
        let of = |id| all.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
        assert_eq!(of(1), Some(factor));
        assert_eq!(of(2), Some(1.0), "a lower-case word is no name");
    }
}

#[test]
fn a_person_named_inside_a_turn_is_a_subject_too() {
    let cfg = MemoryConfig {
        min_relevance: 0.0,
        ..MemoryConfig::default()
    };
    let ms = vec![
        turn(1, "Anna", "I saw Jon at the concert", None),
        turn(2, "Anna", "the concert was loud", None),
    ];
    let sel = select(&ms, &query("did jon like the concert"), NOW, &cfg);
    let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
    assert_eq!((boost(1), boost(2)), (Some(1.5), Some(1.0)));
    // The speaker named: both are Anna's.
    let sel = select(&ms, &query("anna concert"), NOW, &cfg);
    assert!(sel.chosen.iter().all(|c| c.boost == 1.5), "{sel:?}");
}

#[test]
fn a_turn_sharing_only_the_speakers_name_is_not_boosted() {
    let cfg = MemoryConfig {
        min_relevance: 0.0,
        ..MemoryConfig::default()
    };
    let ms = vec![
        turn(1, "Mel", "see you soon", None),
        turn(2, "Mel", "my cello is out of tune", None),
        turn(3, "Jon", "which instrument do you play?", None),
        turn(4, "Mel", "the flute", Some(3)),
    ];
    let sel = select(&ms, &query("what instrument does mel play"), NOW, &cfg);
    let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
    // (only the name; no other word; a reply to a matched turn)
    assert_eq!(boost(1), Some(1.0), "only her name: {sel:?}");
    assert_eq!(
        boost(2),
        Some(1.0),
        "her turn, no other word of the question"
    );
    assert_eq!(boost(4), Some(1.5), "her reply to the question asked");
    let sel = select(&ms, &query("mel cello"), NOW, &cfg);
    let boost = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.boost);
    assert_eq!((boost(1), boost(2)), (Some(1.0), Some(1.5)));
}

#[test]
fn weighted_fusion_is_the_default_and_rrf_a_setting() {
    // A memory matching the word and one only near by embedding.
    let mut by_word = mem(1, "cello lessons", Priority::Low, DAY);
    by_word.embedding = Some(vec![0.0, 1.0]);
    by_word.embedding_model = Some("e".into());
    let mut by_meaning = mem(2, "she plays strings", Priority::Low, DAY);
    by_meaning.embedding = Some(vec![1.0, 0.0]);
    by_meaning.embedding_model = Some("e".into());
    let ms = [by_word, by_meaning];
    let q = RecallQuery::new(&query("cello"));
    let v = QueryVector {
        model: "e",
        embedding: &[1.0, 0.0],
    };
    assert_eq!(MemoryConfig::default().fusion, Fusion::Weighted);
    // (fusion, vector weight, relevance by word, relevance by meaning)
    let table = [
        (Fusion::Weighted, super::super::VECTOR_WEIGHT, 0.6, 0.4),
        (Fusion::Weighted, 0.3, 0.7, 0.3),
        (Fusion::Weighted, 0.5, 0.5, 0.5),
        (Fusion::Rrf, super::super::VECTOR_WEIGHT, 1.0, 1.0),
    ];
    for (fusion, w, word, meaning) in table {
        let cfg = MemoryConfig {
            fusion,
            vector_weight: w,
            min_relevance: 0.0,
            ..MemoryConfig::default()
        };
        let sel = select_query(&ms, None, &q, Some(v), NOW, &cfg);
        let rel = |id| sel.chosen.iter().find(|c| c.id == id).map(|c| c.relevance);
        let got = (rel(1).unwrap_or(-1.0), rel(2).unwrap_or(-1.0));
        assert!(
            (got.0 - word).abs() < 1e-6 && (got.1 - meaning).abs() < 1e-6,
            "{fusion:?} {w}: {got:?}"
        );
    }
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

#[test]
fn a_follow_up_vector_leans_towards_the_previous_turn_but_the_question_leads() {
    let cos = crate::text::cosine;
    // (question, previous, weight, cosine to the question, cosine to the previous)
    type Row<'a> = (&'a [f32], &'a [f32], f32, f32, f32);
    let half = core::f32::consts::FRAC_1_SQRT_2;
    let table: [Row<'_>; 6] = [
        // Orthogonal: 1/√(1 + w²) and w/√(1 + w²).
        (&[1.0, 0.0], &[0.0, 1.0], 0.25, 0.970_142_5, 0.242_535_6),
        (&[1.0, 0.0], &[0.0, 1.0], 0.5, 0.894_427_2, 0.447_213_6),
        // The previous turn's length does not matter, only its direction.
        (&[2.0, 0.0], &[0.0, 40.0], 0.25, 0.970_142_5, 0.242_535_6),
        // Above 1 counts as 1: never more than the question.
        (&[1.0, 0.0], &[0.0, 1.0], 5.0, half, half),
        // No weight, a previous vector of other dimensions or of zeros: the question.
        (&[1.0, 0.0], &[0.0, 1.0], 0.0, 1.0, 0.0),
        (&[1.0, 0.0], &[0.0, 0.0], 0.25, 1.0, 0.0),
    ];
    for (q, p, w, to_q, to_p) in table {
        let v = follow_up_vector(q, p, w);
        assert_eq!(v.len(), q.len());
        assert!((cos(&v, q) - to_q).abs() < 1e-5, "{q:?} {p:?} {w}: {v:?}");
        assert!((cos(&v, p) - to_p).abs() < 1e-5, "{q:?} {p:?} {w}: {v:?}");
    }
    assert_eq!(
        follow_up_vector(&[1.0, 0.0], &[0.0, 1.0, 0.0], 0.25),
        [1.0, 0.0]
    );
    assert_eq!(
        follow_up_vector(&[1.0, 0.0], &[0.0, 1.0], f32::NAN),
        [1.0, 0.0]
    );
    assert_eq!(follow_up_vector(&[0.0, 0.0], &[0.0, 1.0], 0.25), [0.0, 0.0]);
}

#[test]
fn a_follow_up_ranks_by_meaning_what_the_previous_turn_was_about() {
    // "And where does she live?" after "Tell me about Caroline's sister": alone, the
    // question is nearest the neighbour's line; with the previous turn, the sister's.
    let embedded = |id, text, e: Vec<f32>| {
        let mut m = mem(id, text, Priority::Low, DAY);
        m.embedding = Some(e);
        m.embedding_model = Some("e".into());
        m
    };
    let ms = [
        embedded(1, "the neighbour moved in upstairs", vec![0.9, 0.0, 0.436]),
        embedded(2, "Jolene settled in Lisbon", vec![0.8, 0.6, 0.0]),
    ];
    let (question, previous) = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
    let q = RecallQuery::new(&query("where does she"));
    let cfg = MemoryConfig::default();
    let first = |v: &[f32]| {
        let sel = select_query(
            &ms,
            None,
            &q,
            Some(QueryVector {
                model: "e",
                embedding: v,
            }),
            NOW,
            &cfg,
        );
        sel.chosen.first().map(|c| c.id)
    };
    assert_eq!(first(&question), Some(1));
    let follow = follow_up_vector(&question, &previous, cfg.context_weight);
    assert_eq!(first(&follow), Some(2));
    // A weight of 0 keeps the question alone.
    assert_eq!(first(&follow_up_vector(&question, &previous, 0.0)), Some(1));
}
