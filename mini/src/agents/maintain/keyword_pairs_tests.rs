use evolve_core::memory::{Category, Memory, MemoryConfig, MemoryId, Priority};
use evolve_core::text::FallbackTokenizer;
use evolve_core::{Timestamp, DAY};

use super::keyword_pairs;

const NOW: Timestamp = 1_800_000_000;

fn mem(content: &str, category: Category, priority: Priority, age_days: i64) -> Memory {
    let mut m = Memory::new(content, category, NOW - age_days * DAY, &FallbackTokenizer);
    m.priority = priority;
    m
}

#[test]
fn keyword_pairs_merge_restatements_only_and_never_summaries() {
    let cfg = MemoryConfig::default();
    let t = &FallbackTokenizer;
    let mut mems = vec![
        mem(
            "The user likes green tea",
            Category::Preference,
            Priority::High,
            9,
        ),
        mem(
            "The user likes green tea brewed hot",
            Category::Preference,
            Priority::High,
            8,
        ),
        mem(
            "Never share my home address",
            Category::Instruction,
            Priority::Critical,
            7,
        ),
        mem(
            "Never share my phone number",
            Category::Instruction,
            Priority::Critical,
            6,
        ),
        mem(
            "Summary of 2 preference memories: user, likes, green, tea",
            Category::Preference,
            Priority::Critical,
            1,
        ),
    ];
    mems[4].tags.push(cfg.summary_tag.clone());
    for (i, m) in mems.iter_mut().enumerate() {
        m.id = i as MemoryId + 1;
        m.refresh_derived(t);
    }
    let pairs = keyword_pairs(&mems, NOW, &cfg, t);
    let ids: Vec<(MemoryId, MemoryId)> = pairs.iter().map(|p| (p.0, p.1)).collect();
    // The restatement merges into the older; two different rules stay apart (a
    // merge would lose a word); the summary is left alone.
    assert_eq!(ids, vec![(1, 2)]);
    // The same restatement learned from a page is not merged into the person's.
    mems[1] = mems[1]
        .clone()
        .with_source(evolve_core::provenance::Source::World);
    assert!(keyword_pairs(&mems, NOW, &cfg, t).is_empty());
}
