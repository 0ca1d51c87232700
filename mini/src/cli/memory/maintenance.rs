//! `evolve memory maintain`: runs the memory maintenance now (or as a dry run) and prints
//! a line per step, or the report as JSON.

use std::io::Write;

use evolve_core::memory::MemoryId;

use super::MaintainCmd;
use crate::agents::maintain;
use crate::agents::Runtime;
use crate::cli::app::{self, App};
use crate::error::Error;

/// Runs the maintenance and prints a line per step (or the report as JSON). Model
/// problems are warnings on stderr; only a failed store write is an error.
pub(super) fn maintain(c: MaintainCmd, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let App { config, tokenizer } = app;
    let rt = Runtime::new(config, store, tokenizer);
    crate::cli::interrupt::install();
    crate::cli::interrupt::begin_turn();
    let report = maintain::run(&rt, app::now(), c.dry_run, &crate::cli::interrupt::CANCEL);
    let mut out = std::io::stdout().lock();
    if c.json {
        let text = serde_json::to_string_pretty(&report).map_err(|source| Error::Encode {
            what: "report",
            source,
        })?;
        writeln!(out, "{text}")?;
    } else {
        for line in maintain_summary(&report) {
            writeln!(out, "{line}")?;
        }
    }
    for p in &report.problems {
        eprintln!("warning: {p}");
    }
    match &report.error {
        Some(e) => Err(Error::PartlyFailed(format!(
            "{e} — the steps before it are stored; run `evolve memory maintain` again"
        ))),
        None => Ok(()),
    }
}

/// `#1, #2, #3` (at most 10, then `…`).
pub(super) fn id_list(ids: impl IntoIterator<Item = MemoryId>) -> String {
    let ids: Vec<MemoryId> = ids.into_iter().collect();
    let mut s: Vec<String> = ids.iter().take(10).map(|id| format!("#{id}")).collect();
    if ids.len() > 10 {
        s.push("…".into());
    }
    s.join(", ")
}

/// The human summary of a report: one line per step.
pub(super) fn maintain_summary(r: &maintain::MaintainReport) -> Vec<String> {
    let verb = |done: &str, would: &str| {
        if r.dry_run {
            would.to_string()
        } else {
            done.to_string()
        }
    };
    let changes = |c: &[maintain::PriorityChange]| {
        c.iter()
            .take(10)
            .map(|c| format!("#{} {}→{}", c.id, c.from, c.to))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = Vec::new();
    if r.dry_run {
        lines.push("dry run: nothing is changed".to_string());
    }
    let count = |n: usize, what: &str, detail: String| {
        if n == 0 {
            format!("{what}: none")
        } else {
            format!("{what}: {n} ({detail})")
        }
    };
    lines.push(count(
        r.expired.len(),
        &verb("expired, soft-deleted", "expired, would be soft-deleted"),
        id_list(r.expired.iter().copied()),
    ));
    lines.push(count(
        r.decayed.len(),
        &verb("decayed by age", "would decay by age"),
        changes(&r.decayed),
    ));
    lines.push(count(
        r.critical_evicted.len(),
        &verb(
            "over the CRITICAL cap, soft-deleted",
            "over the CRITICAL cap, would be soft-deleted",
        ),
        id_list(r.critical_evicted.iter().copied()),
    ));
    if !r.critical_demoted.is_empty() {
        lines.push(count(
            r.critical_demoted.len(),
            &verb(
                "the model's promotions taken back over the CRITICAL cap",
                "the model's promotions the CRITICAL cap would take back",
            ),
            changes(&r.critical_demoted),
        ));
    }
    lines.push(count(
        r.merged.len(),
        &verb("duplicates merged", "duplicates to merge"),
        r.merged
            .iter()
            .take(10)
            .map(|m| format!("#{} into #{}", m.dropped, m.kept))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    lines.push(count(
        r.summaries.len(),
        &verb("summaries written", "summaries to write"),
        r.summaries
            .iter()
            .map(|s| {
                let members = id_list(s.members.iter().copied());
                format!("{}: {} of {members}", s.label, s.category)
            })
            .collect::<Vec<_>>()
            .join("; "),
    ));
    lines.push(count(
        r.adjusted.len(),
        &verb(
            "priorities adjusted by the model's review",
            "priorities the model's review would adjust",
        ),
        changes(&r.adjusted),
    ));
    if !r.refused.is_empty() {
        lines.push(format!(
            "model proposals refused by the rules: {}",
            r.refused.len()
        ));
    }
    lines.push(format!(
        "{} {}; {} live memories before, {} after",
        r.changes(),
        verb("records changed", "records would change"),
        r.memories_before,
        r.memories_after
    ));
    lines
}
