//! Step 6, priorities: the cheap model reviews a listing of the memories (with the
//! topics of recent sessions) and proposes changes; core's rule applies at most a few,
//! one level each, and refuses the rest. A model that fails or answers garbage skips
//! the step with a note.

use crate::cancel::Cancel;

use evolve_core::memory::{self, MemoryConfig, Priority};
use evolve_core::text::{clip_chars, one_line};
use evolve_core::Timestamp;

use super::replies::parse_proposals;
use super::report::{PriorityChange, Refused};
use super::working_copy::{Run, Step};
use crate::agents::memory::cheap_call;
use crate::agents::prompts;
use crate::agents::runtime::Runtime;
use crate::llm::Usage;

impl Run<'_> {
    /// Step 6: applies what core's rule accepts of the model's proposals, then enforces
    /// the CRITICAL cap again when one was a promotion to CRITICAL.
    pub(super) fn priorities(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
        let cfg = self.cfg().clone();
        let listing = memory::adjustment_listing(&self.mems, now, &cfg);
        if listing.is_empty() {
            return Vec::new();
        }
        let topics = recent_topics(self.rt, now, &cfg);
        let input = if topics.is_empty() {
            listing
        } else {
            format!("{listing}\nRecent conversation topics: {topics}")
        };
        let mut usage = Usage::default();
        let mut problems = Vec::new();
        let reply = cheap_call(
            self.rt,
            prompts::PRIORITY,
            &input,
            &mut usage,
            &mut problems,
            cancel,
        );
        self.report.tokens += usage.prompt_tokens + usage.completion_tokens;
        let proposals = reply.ok_or(()).and_then(|text| {
            parse_proposals(&text).map_err(|e| {
                problems.push(format!("priority review skipped: {e}"));
            })
        });
        self.report.problems.extend(problems.into_iter().map(|p| {
            if p.starts_with("priority review") {
                p
            } else {
                format!("priority review skipped: {p}")
            }
        }));
        let Ok(proposals) = proposals else {
            return Vec::new();
        };
        let room = self.critical_room(now);
        let outcome = memory::adjust_priorities(&mut self.mems, &proposals, now, room, &cfg);
        self.critical_added += outcome
            .applied
            .iter()
            .filter(|a| a.to == Priority::Critical)
            .count();
        self.report.adjusted = outcome
            .applied
            .iter()
            .map(|a| PriorityChange {
                id: a.id,
                from: a.from.name(),
                to: a.to.name(),
            })
            .collect();
        self.report.refused = outcome
            .rejected
            .iter()
            .map(|r| Refused {
                id: r.proposal.id,
                reason: r.reason,
            })
            .collect();
        let mut changed: Step = outcome.applied.iter().map(|a| a.index).collect();
        if outcome.applied.iter().any(|a| a.to == Priority::Critical) {
            changed.extend(self.critical_cap(now));
        }
        changed
    }
}

/// The titles of the sessions active within `summary_window_days`, newest first, cut to
/// `adjust_topics_chars` (tea-agent: 最近对话主题摘要 ≤ 2000 字符), so the review knows what
/// the user is busy with. Empty when there are none or the sessions cannot be read.
fn recent_topics(rt: &Runtime, now: Timestamp, cfg: &MemoryConfig) -> String {
    let since = now.saturating_sub(cfg.summary_window_days.saturating_mul(evolve_core::DAY));
    let sessions = rt.store.sessions().unwrap_or_else(|e| {
        log::warn!("memory maintenance: the sessions cannot be read for the review: {e}");
        Vec::new()
    });
    let titles: Vec<String> = sessions
        .iter()
        .filter(|s| s.updated_at >= since && !s.title.trim().is_empty())
        .map(|s| one_line(&s.title, 200))
        .collect();
    clip_chars(&titles.join("; "), cfg.adjust_topics_chars)
}
