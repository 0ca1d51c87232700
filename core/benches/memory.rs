//! Benchmarks of `memory`: selection at 1 000 / 10 000 / 100 000 memories, decay over
//! 10 000, ingest against 10 000, formatting the block, and the embedding dedup scan of
//! 10 000 memories with 384-dimensional embeddings (newest 1 000 against all).
//!
//! Embeddings are shaped like sentence embeddings: a shared component plus a random
//! one, so unrelated pairs have cosines around 0.3 rather than 0, and 1 % of the memories
//! are near-copies (cosine ≈ 0.99) of an older one, so the scan has pairs to find.
//!
//! Content is realistic in shape: 10–20 words per memory drawn with a skew (common words
//! are common) from a generated vocabulary of 3 000 words, keywords precomputed as the
//! store keeps them, mixed priorities (15 CRITICAL, as the FIFO cap allows), categories,
//! importances and ages up to a year; the query has about 8 keywords.
mod harness;

use std::time::Duration;

use evolve_core::memory::{
    apply_decay, decide_ingest, embedding_duplicates, format_block, select, select_query, Category,
    Lang, Memory, MemoryConfig, MemoryIndex, Priority, RecallQuery,
};
use evolve_core::text::{FallbackTokenizer, KeywordSet};
use evolve_core::DAY;
use harness::{bench, Rng};

const VOCABULARY: usize = 3_000;
const NOW: i64 = 20_000 * DAY;

fn vocabulary(rng: &mut Rng) -> Vec<String> {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    let mut words = Vec::with_capacity(VOCABULARY);
    while words.len() < VOCABULARY {
        let len = 3 + rng.below(7) as usize;
        let w: String = (0..len)
            .map(|_| LETTERS[rng.below(LETTERS.len() as u64) as usize] as char)
            .collect();
        if !words.contains(&w) {
            words.push(w);
        }
    }
    words
}

/// A word index skewed towards the start of the vocabulary (product of two uniforms).
fn word<'a>(rng: &mut Rng, vocab: &'a [String]) -> &'a str {
    let v = vocab.len() as u64;
    let i = rng.below(v) * rng.below(v) / v;
    &vocab[i as usize]
}

fn sentence(rng: &mut Rng, vocab: &[String], min: u64, max: u64) -> String {
    let n = min + rng.below(max - min + 1);
    (0..n)
        .map(|_| word(rng, vocab))
        .collect::<Vec<_>>()
        .join(" ")
}

fn store(n: usize, rng: &mut Rng, vocab: &[String]) -> Vec<Memory> {
    (0..n)
        .map(|i| {
            let category = Category::ALL[rng.below(5) as usize];
            let created = NOW - rng.below(365 * DAY as u64) as i64;
            let mut m = Memory::new(
                sentence(rng, vocab, 10, 20),
                category,
                created,
                &FallbackTokenizer,
            );
            m.id = i as u64 + 1;
            m.priority = if i < 15 {
                Priority::Critical
            } else {
                Priority::from_u8(1 + rng.below(3) as u8).unwrap_or(Priority::Low)
            };
            m.importance = 1 + rng.below(5) as u8;
            if rng.below(20) == 0 {
                m.expires_at = Some(NOW + rng.below(20 * DAY as u64) as i64 - 10 * DAY);
            }
            m
        })
        .collect()
}

const EMBEDDING_DIMS: usize = 384;

/// A value in [-1, 1).
fn unit(rng: &mut Rng) -> f32 {
    (rng.below(2_000_001) as f32 - 1_000_000.0) / 1_000_000.0
}

/// Embeddings for `ms`: a shared component plus a random one; every hundredth memory
/// (from the second hundred on) is a near-copy of a random older one.
fn embed(ms: &mut [Memory], rng: &mut Rng) {
    let shared: Vec<f32> = (0..EMBEDDING_DIMS).map(|_| unit(rng)).collect();
    // Oldest first, so a copy always has an older original.
    ms.sort_by_key(|m| m.created_at);
    for i in 0..ms.len() {
        let e: Vec<f32> = if i >= 100 && i % 100 == 0 {
            let original = ms[rng.below(i as u64) as usize].embedding.clone().unwrap();
            original.iter().map(|x| x + 0.05 * unit(rng)).collect()
        } else {
            shared.iter().map(|s| 0.6 * s + unit(rng)).collect()
        };
        ms[i].embedding = Some(e);
    }
}

/// A question of words from the less common half of the vocabulary (names, places): what
/// a real question's content words are, unlike the skewed filler of the memories.
fn rare_query(rng: &mut Rng, vocab: &[String]) -> String {
    (0..6)
        .map(|_| vocab[vocab.len() / 2 + rng.below(vocab.len() as u64 / 2) as usize].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let vocab = vocabulary(&mut rng);
    let cfg = MemoryConfig::default();
    let query = KeywordSet::of(&FallbackTokenizer, &sentence(&mut rng, &vocab, 8, 8));
    println!("query keywords: {}", query.len());

    for n in [1_000, 10_000, 100_000] {
        let ms = store(n, &mut rng, &vocab);
        let sel = select(&ms, &query, NOW, &cfg);
        let related = ms
            .iter()
            .filter(|m| m.is_active(NOW) && m.keywords.overlaps(&query))
            .count();
        println!(
            "  {n} memories: {related} related, {} chosen",
            sel.chosen.len()
        );
        bench(
            &format!("select {n} memories (scan)"),
            Duration::from_secs(2),
            || select(&ms, &query, NOW, &cfg),
        );
        let index = MemoryIndex::build(&ms);
        let recall = RecallQuery::new(&query);
        assert_eq!(
            select_query(&ms, Some(&index), &recall, None, NOW, &cfg),
            sel,
            "the index selects what the scan selects"
        );
        bench(
            &format!("select {n} memories (inverted index)"),
            Duration::from_secs(2),
            || select_query(&ms, Some(&index), &recall, None, NOW, &cfg),
        );
        let rare = KeywordSet::of(&FallbackTokenizer, &rare_query(&mut rng, &vocab));
        let rare = RecallQuery::new(&rare);
        bench(
            &format!("select {n} memories (index, a question of rarer words)"),
            Duration::from_secs(2),
            || select_query(&ms, Some(&index), &rare, None, NOW, &cfg),
        );
        // The same store as one long dialog: every memory replies to the one before,
        // so each match passes a share to its reply (the worst case of propagation).
        let mut dialog = ms.clone();
        for (i, m) in dialog.iter_mut().enumerate().skip(1) {
            m.prev = Some(i as u64);
        }
        let dialog_index = MemoryIndex::build(&dialog);
        assert_eq!(
            select_query(&dialog, Some(&dialog_index), &recall, None, NOW, &cfg),
            select_query(&dialog, None, &recall, None, NOW, &cfg),
            "the index selects what the scan selects, replies included"
        );
        bench(
            &format!("select {n} memories (index, every memory a reply)"),
            Duration::from_secs(2),
            || select_query(&dialog, Some(&dialog_index), &recall, None, NOW, &cfg),
        );
        if n == 100_000 {
            bench(
                "build the index of 100000 memories",
                Duration::from_secs(2),
                || MemoryIndex::build(&ms),
            );
        }
    }

    let mut ms = store(10_000, &mut rng, &vocab);
    let priorities: Vec<Priority> = ms.iter().map(|m| m.priority).collect();
    let changed = apply_decay(&mut ms.clone(), NOW, &cfg).len();
    println!("  decay: {changed} of 10000 change");
    bench("apply_decay 10000 memories", Duration::from_secs(2), || {
        for (m, p) in ms.iter_mut().zip(&priorities) {
            m.priority = *p;
        }
        apply_decay(&mut ms, NOW, &cfg).len()
    });

    let incoming = Memory::new(
        sentence(&mut rng, &vocab, 10, 20),
        Category::Fact,
        NOW,
        &FallbackTokenizer,
    );
    bench(
        "decide_ingest against 10000",
        Duration::from_secs(2),
        || decide_ingest(&incoming, &ms, NOW, &cfg, &FallbackTokenizer),
    );

    let mut embedded = ms.clone();
    embed(&mut embedded, &mut rng);
    let pairs = embedding_duplicates(&embedded, NOW, &cfg).len();
    println!(
        "  dedup: {pairs} pairs among 10000 memories, {} scanned against all",
        cfg.duplicate_scan_limit
    );
    bench(
        "embedding_duplicates 10000 × 384 dims",
        Duration::from_secs(3),
        || embedding_duplicates(&embedded, NOW, &cfg).len(),
    );

    let chosen: Vec<&Memory> = ms.iter().take(30).collect();
    bench("format_block 30 memories", Duration::from_secs(1), || {
        format_block(&chosen, Lang::En).len()
    });
}
