//! The ranges the memory and history constants (`[memory]`, `[history]`) must stay in for
//! the agent to keep working: one table of keys and bounds, checked by one function.

use evolve_core::CoreConfig;

/// The memory and history constants within the ranges where the agent still works: a
/// value outside them would, for example, delete every new CRITICAL memory at once
/// (`critical_cap = 0`) or never select a memory (`max_selected = 0`).
pub(super) fn check_core(core: &CoreConfig) -> Result<(), String> {
    let m = &core.memory;
    let h = &core.history;
    let unit = |v: f32| v > 0.0 && v <= 1.0;
    let share = |v: f32| (0.0..=1.0).contains(&v);
    let problems: [(bool, &str, String, &str); 19] = [
        (
            m.max_selected >= 1,
            "memory.max_selected",
            m.max_selected.to_string(),
            "at least 1",
        ),
        (
            share(m.context_weight),
            "memory.context_weight",
            m.context_weight.to_string(),
            "between 0 and 1",
        ),
        (
            share(m.min_relevance),
            "memory.min_relevance",
            m.min_relevance.to_string(),
            "between 0 and 1",
        ),
        (
            (0.5..=4.0).contains(&m.relevance_exponent),
            "memory.relevance_exponent",
            m.relevance_exponent.to_string(),
            "between 0.5 and 4",
        ),
        (
            share(m.reply_share),
            "memory.reply_share",
            m.reply_share.to_string(),
            "between 0 and 1",
        ),
        (
            (1.0..=4.0).contains(&m.subject_boost),
            "memory.subject_boost",
            m.subject_boost.to_string(),
            "between 1 and 4",
        ),
        (
            share(m.vector_weight),
            "memory.vector_weight",
            m.vector_weight.to_string(),
            "between 0 and 1",
        ),
        (
            m.vector_candidates <= 10_000,
            "memory.vector_candidates",
            m.vector_candidates.to_string(),
            "at most 10000",
        ),
        (
            m.critical_cap >= 1,
            "memory.critical_cap",
            m.critical_cap.to_string(),
            "at least 1",
        ),
        (
            unit(m.merge_jaccard),
            "memory.merge_jaccard",
            m.merge_jaccard.to_string(),
            "above 0 and at most 1",
        ),
        (
            (1.0..=2.0).contains(&m.same_category_bonus),
            "memory.same_category_bonus",
            m.same_category_bonus.to_string(),
            "between 1 and 2",
        ),
        (
            unit(m.strong_match_f1),
            "memory.strong_match_f1",
            m.strong_match_f1.to_string(),
            "above 0 and at most 1",
        ),
        (
            unit(m.duplicate_cosine),
            "memory.duplicate_cosine",
            m.duplicate_cosine.to_string(),
            "above 0 and at most 1",
        ),
        (
            h.l2_capacity >= 2,
            "history.l2_capacity",
            h.l2_capacity.to_string(),
            "at least 2",
        ),
        (
            h.l2_overflow >= 1 && h.l2_overflow < h.l2_capacity,
            "history.l2_overflow",
            h.l2_overflow.to_string(),
            "at least 1 and below history.l2_capacity",
        ),
        (
            unit(h.trim_threshold),
            "history.trim_threshold",
            h.trim_threshold.to_string(),
            "above 0 and at most 1",
        ),
        (
            h.max_tool_output_bytes >= 1024,
            "history.max_tool_output_bytes",
            h.max_tool_output_bytes.to_string(),
            "at least 1024",
        ),
        (
            h.keep_user_turns >= 1,
            "history.keep_user_turns",
            h.keep_user_turns.to_string(),
            "at least 1",
        ),
        (
            (0.0..=1.0).contains(&h.relevance_digest) && h.relevance_digest <= h.relevance_full,
            "history.relevance_digest",
            h.relevance_digest.to_string(),
            "between 0 and history.relevance_full",
        ),
    ];
    match problems.iter().find(|(ok, ..)| !ok) {
        None => Ok(()),
        Some((_, key, value, range)) => Err(format!("{key} = {value} must be {range}")),
    }
}
