//! Step 5, summaries: a summary for each category's cluster of new memories, written
//! while the CRITICAL cap has room for it, its originals one importance lower. Decides
//! the text: the cheap model's digest, or core's keyword draft when the model fails or
//! answers something unusable.

use crate::cancel::Cancel;

use evolve_core::memory::{self, MemoryId, Priority};
use evolve_core::text::{one_line, Lang};
use evolve_core::Timestamp;

use super::replies::parse_digest;
use super::report::{ImportanceDrop, SummaryDone};
use super::working_copy::{Run, Step, PROVISIONAL_ID};
use crate::agents::memory::cheap_call;
use crate::agents::prompts;
use crate::llm::Usage;

/// Characters of one memory in a digest request.
const DIGEST_MEMBER_CHARS: usize = 400;

impl Run<'_> {
    /// Step 5: writes a summary for each cluster that has room under the CRITICAL cap
    /// (`last_summary` bounds the clustering), then enforces the cap again.
    pub(super) fn summaries(
        &mut self,
        now: Timestamp,
        last_summary: Option<Timestamp>,
        cancel: &Cancel,
    ) -> Step {
        let cfg = self.cfg().clone();
        let tokenizer = &self.rt.tokenizer;
        let clusters = memory::clusters(&self.mems, now, last_summary, &cfg);
        let mut changed = Vec::new();
        let mut made = Vec::new();
        let mut room = self.critical_room(now);
        for (k, cluster) in clusters.iter().enumerate() {
            // A summary of world memories is information, never CRITICAL: it takes no room.
            let critical = cfg.summary_priority == Priority::Critical && !cluster.world;
            if critical && room == 0 {
                self.report.problems.push(format!(
                    "the {} summary of {} was not written: the CRITICAL cap ({}) is held \
                     by the user's own rules and pinned memories, and a summary never \
                     pushes one out",
                    cluster.category,
                    id_list(&cluster.ids),
                    cfg.critical_cap
                ));
                continue;
            }
            if critical {
                room -= 1;
                self.critical_added += 1;
            }
            let text: Vec<String> = cluster
                .indices
                .iter()
                .map(|&i| self.mems[i].content.clone())
                .collect();
            let lang = Lang::guess(&text.join("\n"));
            let draft = memory::draft_summary(cluster, &self.mems, tokenizer, lang, &cfg);
            let content = self.digest(&text, &draft, cancel);
            let mut summary = memory::summary_memory(cluster, &content, now, tokenizer, &cfg);
            summary.id = PROVISIONAL_ID + k as MemoryId;
            let drops = memory::demote_summarised(&mut self.mems, cluster, &cfg);
            changed.extend(drops.iter().map(|c| c.index));
            self.report.summaries.push(SummaryDone {
                id: summary.id,
                label: format!("new summary {}", made.len() + 1),
                category: cluster.category,
                members: cluster.ids.clone(),
                content,
                importance: drops
                    .iter()
                    .map(|c| ImportanceDrop {
                        id: c.id,
                        from: c.from,
                        to: c.to,
                    })
                    .collect(),
            });
            made.push(summary);
        }
        let wrote = !made.is_empty();
        for summary in made {
            changed.push(self.mems.len());
            self.mems.push(summary);
            self.base.push(None);
        }
        if wrote {
            changed.extend(self.critical_cap(now));
        }
        changed
    }

    /// The summary of a cluster in the cheap model's words (one or two sentences that
    /// keep every rule and fact), or the core's keyword draft when the model fails or
    /// answers something unusable: a keyword list is a poor memory to put before the
    /// model in every prompt, so it is only the fallback.
    fn digest(&mut self, members: &[String], draft: &str, cancel: &Cancel) -> String {
        let input: String = members
            .iter()
            .map(|m| format!("- {}\n", one_line(m, DIGEST_MEMBER_CHARS)))
            .collect();
        let mut usage = Usage::default();
        let mut problems = Vec::new();
        let reply = cheap_call(
            self.rt,
            prompts::DIGEST,
            &input,
            &mut usage,
            &mut problems,
            cancel,
        );
        self.report.tokens += usage.prompt_tokens + usage.completion_tokens;
        let digest = reply
            .ok_or(())
            .and_then(|text| parse_digest(&text).map_err(|e| problems.push(e)));
        match digest {
            Ok(d) => d,
            Err(()) => {
                self.report.problems.extend(
                    problems
                        .into_iter()
                        .map(|p| format!("summary written from keywords: {p}")),
                );
                draft.to_string()
            }
        }
    }
}

/// `#1, #2, #3` (at most 10, then `…`).
fn id_list(ids: &[MemoryId]) -> String {
    let mut s: Vec<String> = ids.iter().take(10).map(|id| format!("#{id}")).collect();
    if ids.len() > 10 {
        s.push("…".into());
    }
    s.join(", ")
}
