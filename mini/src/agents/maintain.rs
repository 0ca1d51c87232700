//! Memory maintenance (tea-agent's 长期记忆系统: 衰减, CRITICAL FIFO, 反思归纳):
//! `evolve memory maintain`, `POST /v1/memory/maintain`, and once a day inside
//! `evolve serve`.
//!
//! Runs core's memory rules against the live store, in this order, each step's writes
//! in one store transaction:
//!
//! 1. **expiry** — memories past `expires_at` are soft-deleted ([`memory::expired`]);
//! 2. **decay** — priorities lowered by age, pinned exempt ([`memory::apply_decay`]);
//! 3. **CRITICAL FIFO** — beyond `critical_cap` (15) the overflow is retired
//!    ([`memory::critical_overflow`], [`memory::retire`]): summaries and the model's
//!    promotions first (a summary is soft-deleted, a promotion goes back to HIGH), then
//!    the oldest of the user's rules (soft-deleted);
//! 4. **duplicates** — with `[model] embedding_model` set, memories without an embedding
//!    get one from `/v1/embeddings` (stored with them); pairs whose embeddings reach
//!    `duplicate_cosine`
//!    ([`memory::embedding_duplicates`]), then pairs whose keyword similarity reaches
//!    `merge_jaccard` and whose merge keeps every word (pinned memories never merge) ([`memory::merge_similarity`],
//!    [`memory::merge_loses_nothing`]) are merged into the older one
//!    ([`memory::merge`]), the newer soft-deleted, until no pair is left;
//! 5. **summaries** — each category with ≥ 2 memories created since the last summary
//!    (and within `summary_window_days`) gets a CRITICAL summary of importance 5 (of
//!    memories learned from world text, clustered apart: a MEDIUM one of the world's), and
//!    its originals lose 1 importance ([`memory::clusters`], [`memory::draft_summary`],
//!    [`memory::demote_summarised`]); the text is the cheap model's digest, or core's
//!    deterministic keyword draft when the model fails;
//! 6. **priorities** — the cheap model reviews a listing ([`memory::adjustment_listing`])
//!    and proposes changes; core's [`memory::adjust_priorities`] applies at most 3, one
//!    level each, whatever the model says, and never raises a memory learned from world
//!    text. Memories of the world and of the person are never merged with each other.
//!
//! Steps 5 and 6 may add CRITICAL memories, so the cap is enforced again in their own
//! transaction. **A run never retires what it wrote**: a summary or a promotion to
//! CRITICAL is made only while [`memory::critical_room`] has room for it, counting what
//! the run already added, so the cap makes way for it by retiring older summaries and
//! promotions, never the user's rules. A summary with no room is not written (a note
//! says why) and its originals keep their importance: importance is only lowered for
//! memories a live summary covers. A model that fails or answers garbage skips step 6
//! with a note; the rule steps still apply. Running it twice in a row changes nothing
//! the second time (apart from what a model proposes anew): every rule only changes what
//! is out of line, merges run to a fixed point, and the last summary's time bounds the
//! next clustering. Summaries are never merged or summarised again.

use evolve_core::json::{extract, Value};
use evolve_core::memory::{
    self, Category, Memory, MemoryConfig, MemoryId, Priority, Proposal, RejectReason,
};
use evolve_core::text::{clip_chars, one_line, Lang, Tokenizer};
use evolve_core::Timestamp;
use serde::Serialize;

use super::memory::cheap_call;
use super::prompts;
use super::runtime::Runtime;
use crate::cancel::Cancel;
use crate::llm::Usage;
use crate::store::Saved;

/// One priority changed, by age or by the model's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityChange {
    /// The memory.
    pub id: MemoryId,
    /// Priority before (`critical` … `low`).
    pub from: &'static str,
    /// Priority after.
    pub to: &'static str,
}

/// Two memories merged into one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeDone {
    /// The memory kept (the older), now holding the merge.
    pub kept: MemoryId,
    /// The memory merged into it and soft-deleted.
    pub dropped: MemoryId,
    /// Their similarity (cosine or keyword Jaccard with the category bonus).
    pub similarity: f32,
    /// `embedding` or `keywords`.
    pub by: &'static str,
}

/// One importance lowered because the memory was summarised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportanceDrop {
    /// The memory.
    pub id: MemoryId,
    /// Importance before.
    pub from: u8,
    /// Importance after.
    pub to: u8,
}

/// A summary written for a cluster of one category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SummaryDone {
    /// The new summary's id (0 in a dry run: it was not stored).
    pub id: MemoryId,
    /// How to name it to a person: `#18` once stored, `new summary 1` (numbered in
    /// the run) when it is not, as in a dry run.
    pub label: String,
    /// The cluster's category.
    pub category: Category,
    /// The summarised memories.
    pub members: Vec<MemoryId>,
    /// The summary's text.
    pub content: String,
    /// The originals whose importance dropped (pinned ones and those at 1 do not).
    pub importance: Vec<ImportanceDrop>,
}

/// A proposal of the model that core's rule refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refused {
    /// The memory the model named.
    pub id: MemoryId,
    /// Why (`jump`, `pinned`, `limit_reached`, …).
    pub reason: RejectReason,
}

/// What one maintenance run did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MaintainReport {
    /// Nothing was written.
    pub dry_run: bool,
    /// The moment the rules were applied at (Unix seconds).
    pub at: Timestamp,
    /// Live memories before the run.
    pub memories_before: usize,
    /// Live memories after the run.
    pub memories_after: usize,
    /// Step 1: expired memories soft-deleted.
    pub expired: Vec<MemoryId>,
    /// Step 2: priorities lowered by age.
    pub decayed: Vec<PriorityChange>,
    /// Step 3 (and after steps 5 and 6): CRITICAL memories soft-deleted over the cap.
    pub critical_evicted: Vec<MemoryId>,
    /// Step 3 (and after steps 5 and 6): the model's promotions to CRITICAL taken back
    /// over the cap (HIGH again).
    pub critical_demoted: Vec<PriorityChange>,
    /// Step 4: duplicates merged.
    pub merged: Vec<MergeDone>,
    /// Step 5: summaries written.
    pub summaries: Vec<SummaryDone>,
    /// Step 6: priorities changed on the model's proposal.
    pub adjusted: Vec<PriorityChange>,
    /// Step 6: proposals refused by the rule.
    pub refused: Vec<Refused>,
    /// Model tokens used (prompt + completion).
    pub tokens: u64,
    /// Problems that skipped a step (a model that failed or answered garbage, a
    /// cancelled run); the other steps still ran.
    pub problems: Vec<String>,
    /// A store write that failed: the run stopped there; earlier steps are stored.
    pub error: Option<String>,
}

impl MaintainReport {
    /// How many memory records the run changed or added.
    pub fn changes(&self) -> usize {
        self.expired.len()
            + self.decayed.len()
            + self.critical_evicted.len()
            + self.critical_demoted.len()
            + self.merged.len() * 2
            + self
                .summaries
                .iter()
                .map(|s| 1 + s.importance.len())
                .sum::<usize>()
            + self.adjusted.len()
    }
}

/// The daily job of `evolve serve` and the whole of `evolve memory maintain`: runs
/// every step against the store and writes the changes.
pub fn maintain(rt: &Runtime, now: Timestamp, cancel: &Cancel) -> MaintainReport {
    run(rt, now, false, cancel)
}

/// [`maintain`], or with `dry_run` the same decisions without a single write (the model
/// is still asked, so the report shows what it would propose).
pub fn run(rt: &Runtime, now: Timestamp, dry_run: bool, cancel: &Cancel) -> MaintainReport {
    let cfg = &rt.config.core.memory;
    let mut report = MaintainReport {
        dry_run,
        at: now,
        ..MaintainReport::default()
    };
    let all = match rt.store.all_memories() {
        Ok(all) => all,
        Err(e) => {
            report.error = Some(format!("the memories cannot be read: {e}"));
            return report;
        }
    };
    let last_summary = all
        .iter()
        .filter(|m| memory::is_summary(m, cfg))
        .map(|m| m.created_at)
        .max();
    let mems: Vec<Memory> = all.into_iter().filter(|m| !m.deleted).collect();
    let mut run = Run {
        base: mems.iter().cloned().map(Some).collect(),
        mems,
        rt,
        dry_run,
        report,
        new_ids: Vec::new(),
        critical_added: 0,
    };
    run.report.memories_before = run.mems.len();
    for step in STEPS {
        if cancel.is_cancelled() {
            run.report
                .problems
                .push(format!("cancelled before the {step} step"));
            break;
        }
        let changed = match step {
            "expiry" => run.expiry(now),
            "decay" => run.decay(now),
            "CRITICAL cap" => run.critical_cap(now),
            "duplicates" => run.duplicates(now, cancel),
            "summaries" => run.summaries(now, last_summary, cancel),
            _ => run.priorities(now, cancel),
        };
        if let Err(e) = run.save(changed) {
            run.report.error = Some(format!("the {step} step could not be stored: {e}"));
            break;
        }
    }
    run.finish()
}

/// The steps, in order (names for messages).
const STEPS: [&str; 6] = [
    "expiry",
    "decay",
    "CRITICAL cap",
    "duplicates",
    "summaries",
    "priorities",
];

/// New summaries carry provisional ids from here up until they are stored, so the
/// CRITICAL cap can name them; the report shows the stored id (0 in a dry run).
const PROVISIONAL_ID: MemoryId = u64::MAX / 2;

/// The records one step changed or added (indices into `Run::mems`).
type Step = Vec<usize>;

/// The working copy of the live memories and the report being filled.
struct Run<'a> {
    mems: Vec<Memory>,
    /// For each of `mems`, the copy last read from or written to the store (`None`: a
    /// new memory): a write is refused when the stored copy no longer matches it.
    base: Vec<Option<Memory>>,
    rt: &'a Runtime,
    dry_run: bool,
    report: MaintainReport,
    /// Provisional id → stored id of the summaries written so far.
    new_ids: Vec<(MemoryId, MemoryId)>,
    /// CRITICAL memories this run made (summaries, promotions): they use up
    /// [`memory::critical_room`] as they are made.
    critical_added: usize,
}

impl Run<'_> {
    fn cfg(&self) -> &MemoryConfig {
        &self.rt.config.core.memory
    }

    /// Writes a step's records in one transaction (nothing in a dry run) and gives new
    /// records their ids.
    fn save(&mut self, changed: Step) -> Result<(), crate::store::StoreError> {
        if self.dry_run || changed.is_empty() {
            return Ok(());
        }
        let mut indices = changed;
        indices.sort_unstable();
        indices.dedup();
        let records: Vec<(Memory, Option<Memory>)> = indices
            .iter()
            .map(|&i| {
                let mut m = self.mems[i].clone();
                if m.id >= PROVISIONAL_ID {
                    m.id = 0;
                }
                (m, self.base[i].clone())
            })
            .collect();
        let saved = self.rt.store.save_memories(records)?;
        let mut conflicted: Vec<MemoryId> = Vec::new();
        for (&i, outcome) in indices.iter().zip(saved) {
            match outcome {
                Saved::Written(m) => {
                    if self.mems[i].id >= PROVISIONAL_ID {
                        self.new_ids.push((self.mems[i].id, m.id));
                    }
                    self.base[i] = Some(m.clone());
                    self.mems[i] = m;
                }
                Saved::Changed(now_stored) => {
                    let id = self.mems[i].id;
                    conflicted.push(id);
                    self.report.problems.push(format!(
                        "memory #{id} changed while maintenance ran and was left as it is \
                         (the next run looks at it again)"
                    ));
                    match now_stored {
                        Some(m) => {
                            self.base[i] = Some(m.clone());
                            self.mems[i] = m;
                        }
                        None => {
                            self.mems[i].deleted = true;
                            self.base[i] = None;
                        }
                    }
                }
            }
        }
        self.restore_orphans(&conflicted)
    }

    /// A merge whose kept memory could not be written (it changed meanwhile) must not
    /// drop the other one: its text is in no live memory then. Writes it back as it was
    /// and takes the merge out of the report.
    fn restore_orphans(&mut self, conflicted: &[MemoryId]) -> Result<(), crate::store::StoreError> {
        let undone: Vec<MergeDone> = self
            .report
            .merged
            .iter()
            .filter(|m| conflicted.contains(&m.kept) && !conflicted.contains(&m.dropped))
            .cloned()
            .collect();
        for m in undone {
            self.report.merged.retain(|x| x != &m);
            let Some(d) = self.index_of(m.dropped) else {
                continue;
            };
            self.mems[d].deleted = false;
            let record = (self.mems[d].clone(), self.base[d].clone());
            if let Some(Saved::Written(w)) = self
                .rt
                .store
                .save_memories(vec![record])?
                .into_iter()
                .next()
            {
                self.base[d] = Some(w.clone());
                self.mems[d] = w;
            }
            self.report.problems.push(format!(
                "memory #{} was not merged into #{}: #{} changed while maintenance ran",
                m.dropped, m.kept, m.kept
            ));
        }
        Ok(())
    }

    /// The report, with provisional ids replaced by stored ones (0 when not stored).
    fn finish(mut self) -> MaintainReport {
        let new_ids = std::mem::take(&mut self.new_ids);
        let real = |id: MemoryId| {
            if id < PROVISIONAL_ID {
                return id;
            }
            new_ids
                .iter()
                .find(|(p, _)| *p == id)
                .map_or(0, |(_, stored)| *stored)
        };
        for s in &mut self.report.summaries {
            s.id = real(s.id);
            if s.id != 0 {
                s.label = format!("#{}", s.id);
            }
        }
        for id in &mut self.report.critical_evicted {
            *id = real(*id);
        }
        self.report.memories_after = self.mems.iter().filter(|m| !m.deleted).count();
        // Problems are the caller's to show (the CLI prints them as warnings, serve's
        // daily job logs them): logged here only for a detailed log.
        for p in &self.report.problems {
            log::info!("memory maintenance: {p}");
        }
        self.report
    }

    fn index_of(&self, id: MemoryId) -> Option<usize> {
        self.mems.iter().position(|m| m.id == id)
    }

    /// Soft-deletes `ids`; returns their indices.
    fn soft_delete(&mut self, ids: &[MemoryId]) -> Step {
        let mut changed = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(i) = self.index_of(id) {
                self.mems[i].deleted = true;
                changed.push(i);
            }
        }
        changed
    }

    fn expiry(&mut self, now: Timestamp) -> Step {
        let ids = memory::expired(&self.mems, now);
        self.report.expired = ids.clone();
        self.soft_delete(&ids)
    }

    fn decay(&mut self, now: Timestamp) -> Step {
        let cfg = self.rt.config.core.memory.clone();
        let changes = memory::apply_decay(&mut self.mems, now, &cfg);
        self.report.decayed = changes
            .iter()
            .map(|c| PriorityChange {
                id: c.id,
                from: c.from.name(),
                to: c.to.name(),
            })
            .collect();
        changes.iter().map(|c| c.index).collect()
    }

    /// Retires the CRITICAL overflow (also run after the steps that add CRITICAL
    /// memories, so the next run finds nothing to retire).
    fn critical_cap(&mut self, now: Timestamp) -> Step {
        let cfg = self.cfg().clone();
        let mut changed = Vec::new();
        for id in memory::critical_overflow(&self.mems, now, &cfg) {
            let Some(i) = self.index_of(id) else {
                continue;
            };
            let from = self.mems[i].priority;
            match memory::retire(&mut self.mems[i], &cfg) {
                memory::Retired::Deleted => self.report.critical_evicted.push(id),
                memory::Retired::Demoted => self.report.critical_demoted.push(PriorityChange {
                    id,
                    from: from.name(),
                    to: self.mems[i].priority.name(),
                }),
            }
            changed.push(i);
        }
        changed
    }

    /// How many more CRITICAL memories this run may add without the cap retiring one of
    /// them or a rule of the user.
    fn critical_room(&self, now: Timestamp) -> usize {
        memory::critical_room(&self.mems, now, self.cfg()).saturating_sub(self.critical_added)
    }

    /// Embeds the live memories that have no embedding yet, when an embedding model is
    /// configured, in batches; a failure is noted and leaves the rest to keywords.
    fn embed_missing(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
        let cfg = self.cfg().clone();
        // The model the embeddings are stored under (the client itself says whether
        // one is configured: `embed` answers `None` when not).
        let model = self
            .rt
            .config
            .model
            .embedding_model
            .clone()
            .unwrap_or_default();
        // Missing, or made by another model (recomputed when the model changes).
        let missing: Vec<usize> = (0..self.mems.len())
            .filter(|&i| {
                let m = &self.mems[i];
                m.is_active(now) && m.embedding_of(&model).is_none() && !memory::is_summary(m, &cfg)
            })
            .collect();
        let mut changed = Vec::new();
        for batch in missing.chunks(EMBED_BATCH) {
            let inputs: Vec<String> = batch
                .iter()
                .map(|&i| self.mems[i].content.clone())
                .collect();
            match self.rt.model.embed(&inputs, cancel) {
                None => break,
                Some(Err(e)) => {
                    self.report.problems.push(format!(
                        "embeddings skipped, duplicates found by keywords only: {e}"
                    ));
                    break;
                }
                Some(Ok(vectors)) => {
                    for (&i, v) in batch.iter().zip(vectors) {
                        self.mems[i].embedding = Some(v);
                        self.mems[i].embedding_model = Some(model.clone());
                        changed.push(i);
                    }
                }
            }
        }
        changed
    }

    fn duplicates(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
        let mut changed = self.embed_missing(now, cancel);
        let cfg = self.cfg().clone();
        let tokenizer = &self.rt.tokenizer;
        // Stored embeddings first (one pass: each memory is in at most one pair).
        let pairs: Vec<(MemoryId, MemoryId, f32)> =
            memory::embedding_duplicates(&self.mems, now, &cfg)
                .into_iter()
                .map(|p| (p.keep, p.drop, p.cosine))
                .collect();
        changed.extend(self.merge_pairs(&pairs, "embedding", &cfg, tokenizer));
        // Then keywords, until no pair is left (a merged text may match a third one).
        for _ in 0..MERGE_ROUNDS {
            let pairs = keyword_pairs(&self.mems, now, &cfg, tokenizer);
            if pairs.is_empty() {
                break;
            }
            changed.extend(self.merge_pairs(&pairs, "keywords", &cfg, tokenizer));
        }
        changed
    }

    /// Merges each `(keep, drop, similarity)` pair whose two memories are still live and
    /// not summaries.
    fn merge_pairs(
        &mut self,
        pairs: &[(MemoryId, MemoryId, f32)],
        by: &'static str,
        cfg: &MemoryConfig,
        tokenizer: &dyn Tokenizer,
    ) -> Step {
        let mut changed = Vec::new();
        for &(keep, drop, similarity) in pairs {
            let (Some(k), Some(d)) = (self.index_of(keep), self.index_of(drop)) else {
                continue;
            };
            let (a, b) = (&self.mems[k], &self.mems[d]);
            // A pinned memory is the user's own wording: never rewritten nor dropped.
            if a.deleted
                || b.deleted
                || a.pinned
                || b.pinned
                || memory::is_summary(a, cfg)
                || memory::is_summary(b, cfg)
                // What a page said never merges into the person's memory.
                || a.is_world() != b.is_world()
            {
                continue;
            }
            let merged = memory::merge(a, b, tokenizer);
            self.mems[k] = merged;
            self.mems[d].deleted = true;
            changed.extend([k, d]);
            self.report.merged.push(MergeDone {
                kept: keep,
                dropped: drop,
                similarity,
                by,
            });
        }
        changed
    }

    fn summaries(
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

    fn priorities(&mut self, now: Timestamp, cancel: &Cancel) -> Step {
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

/// `#1, #2, #3` (at most 10, then `…`).
fn id_list(ids: &[MemoryId]) -> String {
    let mut s: Vec<String> = ids.iter().take(10).map(|id| format!("#{id}")).collect();
    if ids.len() > 10 {
        s.push("…".into());
    }
    s.join(", ")
}

/// Memories embedded per `/v1/embeddings` request.
const EMBED_BATCH: usize = 64;

/// Keyword merging runs at most this many rounds (each round merges at least one pair,
/// so this only bounds a pathological chain).
const MERGE_ROUNDS: usize = 8;

/// The keyword near-duplicates among live memories that are not summaries: similarity
/// at least `merge_jaccard` and a merge that keeps every word (core's ingest rule), each
/// memory in at most one pair, most similar first, the older kept. The newest
/// `duplicate_scan_limit` are compared with every other one.
fn keyword_pairs(
    mems: &[Memory],
    now: Timestamp,
    cfg: &MemoryConfig,
    tokenizer: &dyn Tokenizer,
) -> Vec<(MemoryId, MemoryId, f32)> {
    let mut live: Vec<&Memory> = mems
        .iter()
        .filter(|m| m.is_active(now) && !m.pinned && !memory::is_summary(m, cfg))
        .collect();
    // Oldest first, so for i < j the older is `live[i]`.
    live.sort_by_key(|m| (m.created_at, m.id));
    let first_scanned = live.len().saturating_sub(cfg.duplicate_scan_limit);
    let mut candidates = Vec::new();
    for j in first_scanned..live.len() {
        for i in 0..j {
            let (older, newer) = (live[i], live[j]);
            // What a page said never merges with the person's memory.
            if older.is_world() != newer.is_world() {
                continue;
            }
            let s = memory::merge_similarity(older, newer, cfg);
            if s > 0.0
                && s + 1e-6 >= cfg.merge_jaccard
                && memory::merge_loses_nothing(older, newer, tokenizer)
            {
                candidates.push((older.id, newer.id, s));
            }
        }
    }
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    let mut used: Vec<MemoryId> = Vec::new();
    let mut pairs = Vec::new();
    for (keep, drop, s) in candidates {
        if used.contains(&keep) || used.contains(&drop) {
            continue;
        }
        used.extend([keep, drop]);
        pairs.push((keep, drop, s));
    }
    pairs
}

/// Characters of one memory in a digest request.
const DIGEST_MEMBER_CHARS: usize = 400;
/// The longest digest kept: a summary stands for its memories in every prompt, so it
/// must be shorter than they are together, not a rewrite of them.
const DIGEST_MAX_CHARS: usize = 400;

/// The summary in a digest reply (`{"summary": "…"}`), checked: one line of plain
/// text, not empty, not the request echoed back, at most [`DIGEST_MAX_CHARS`].
fn parse_digest(text: &str) -> Result<String, String> {
    let value = extract(text).map_err(|e| format!("the model's reply is not usable JSON ({e})"))?;
    let Some(summary) = value.get("summary").and_then(Value::as_str) else {
        return Err("the model's reply has no \"summary\" text".to_string());
    };
    let summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = summary.chars().count();
    if chars == 0 {
        return Err("the model's summary is empty".to_string());
    }
    if summary.contains("[evolve:") {
        return Err("the model repeated the request instead of summarising".to_string());
    }
    if chars > DIGEST_MAX_CHARS {
        return Err(format!(
            "the model's summary has {chars} characters; at most {DIGEST_MAX_CHARS} are kept"
        ));
    }
    Ok(summary)
}

/// The proposals in the model's reply: `{"changes": [...]}`, a bare list, or one
/// proposal object. Items that are not proposals are skipped; a reply without any
/// JSON list or object is an error (the step is skipped).
fn parse_proposals(text: &str) -> Result<Vec<Proposal>, String> {
    let value = extract(text).map_err(|e| format!("the model's reply is not usable JSON ({e})"))?;
    let items: Vec<Value> = match &value {
        Value::Array(items) => items.clone(),
        Value::Object(_) => {
            let list = ["changes", "proposals", "adjustments", "items"]
                .iter()
                .find_map(|k| value.get(k).and_then(Value::as_array));
            match list {
                Some(items) => items.to_vec(),
                None if value.get("id").is_some() => vec![value.clone()],
                None => {
                    return Err("the model's reply has no \"changes\" list of proposals".to_string())
                }
            }
        }
        other => {
            return Err(format!(
                "the model's reply is a {}, not a list of proposals",
                other.kind()
            ))
        }
    };
    Ok(items
        .iter()
        .filter_map(|item| serde_json::from_str::<Proposal>(&item.to_json_string()).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use evolve_core::history::Message;
    use evolve_core::memory::Change;
    use evolve_core::text::FallbackTokenizer;
    use evolve_core::DAY;

    use crate::config::Config;
    use crate::llm::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError, ModelRole};
    use crate::store::Store;
    use crate::testing::TempDir;

    const NOW: Timestamp = 1_800_000_000;

    /// A scripted embedding (`None`: the request fails).
    type Vector = Option<Vec<f32>>;

    /// A cheap model answering the scripted replies in order, then failing; with
    /// `vectors`, an embedding model giving each text the vector of its first word
    /// (`None` in the map: the request fails), counting the texts embedded.
    #[derive(Clone, Default)]
    struct Scripted(
        Arc<Mutex<Vec<String>>>,
        Option<Vec<(&'static str, Vector)>>,
        Arc<Mutex<usize>>,
    );

    impl ChatModel for Scripted {
        fn chat(
            &self,
            _req: &ChatRequest,
            _on_delta: &mut dyn FnMut(Delta<'_>),
            _cancel: &Cancel,
        ) -> Result<ChatResponse, LlmError> {
            let mut replies = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if replies.is_empty() {
                return Err(LlmError::Protocol {
                    url: "http://127.0.0.1:1/v1".into(),
                    detail: "scripted failure".into(),
                });
            }
            Ok(ChatResponse {
                message: Message::assistant(replies.remove(0)),
                finish_reason: Some("stop".into()),
                usage: Usage::default(),
                model: "fake-cheap".into(),
                cut: None,
                images_left_out: 0,
            })
        }
        fn model_name(&self, _role: ModelRole) -> &str {
            "fake"
        }
        fn embed(
            &self,
            inputs: &[String],
            _cancel: &Cancel,
        ) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
            let table = self.1.as_ref()?;
            *self.2.lock().unwrap_or_else(|e| e.into_inner()) += inputs.len();
            let vectors: Option<Vec<Vec<f32>>> = inputs
                .iter()
                .map(|text| {
                    let first = text.split_whitespace().next().unwrap_or("");
                    table
                        .iter()
                        .find(|(w, _)| *w == first)
                        .and_then(|(_, v)| v.clone())
                })
                .collect();
            Some(vectors.ok_or(LlmError::Protocol {
                url: "http://127.0.0.1:1/v1/embeddings".into(),
                detail: "scripted embedding failure".into(),
            }))
        }
    }

    fn runtime(dir: &TempDir, replies: &[&str]) -> Arc<Runtime> {
        runtime_with(dir, replies, Scripted::default())
    }

    fn runtime_with(dir: &TempDir, replies: &[&str], mut model: Scripted) -> Arc<Runtime> {
        let config = Config::defaults(dir.path().to_path_buf());
        let store =
            Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
        model.0 = Arc::new(Mutex::new(replies.iter().map(|s| s.to_string()).collect()));
        Runtime::with_model(
            config,
            store,
            crate::text::ShellTokenizer::new(None),
            Box::new(model),
        )
    }

    fn mem(content: &str, category: Category, priority: Priority, age_days: i64) -> Memory {
        let mut m = Memory::new(content, category, NOW - age_days * DAY, &FallbackTokenizer);
        m.priority = priority;
        m
    }

    fn seed(rt: &Runtime, memories: Vec<Memory>) {
        let new = memories.into_iter().map(|m| (m, None)).collect();
        rt.store.save_memories(new).expect("seed");
    }

    static NEVER: Cancel = Cancel::new();

    #[test]
    fn proposals_are_read_from_the_shapes_models_write_and_garbage_is_an_error() {
        let by = |id, d| Proposal {
            id,
            change: Change::By(d),
        };
        let to = |id, p| Proposal {
            id,
            change: Change::To(p),
        };
        let cases: [(&str, Result<Vec<Proposal>, &str>); 8] = [
            (
                r#"{"changes": [{"id": 3, "priority": "high"}, {"id": 4, "delta": 1}]}"#,
                Ok(vec![to(3, Priority::High), by(4, 1)]),
            ),
            (
                r#"[{"id": 5, "priority": 0}]"#,
                Ok(vec![to(5, Priority::Critical)]),
            ),
            (
                r#"{"id": 6, "delta": -1, "reason": "x"}"#,
                Ok(vec![by(6, -1)]),
            ),
            (
                "Here you go:\n```json\n{\"changes\": [{\"id\": 7, \"delta\": 1}]}\n```",
                Ok(vec![by(7, 1)]),
            ),
            // Items that are not proposals are skipped, the rest kept.
            (
                r#"{"changes": [{"id": 8}, "x", {"id": 9, "delta": 1}]}"#,
                Ok(vec![by(9, 1)]),
            ),
            (r#"{"changes": []}"#, Ok(vec![])),
            ("ok", Err("not usable JSON")),
            (r#"{"verdict": "fine"}"#, Err("no \"changes\" list")),
        ];
        for (text, want) in cases {
            match (parse_proposals(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(e), Err(part)) => assert!(e.contains(part), "{text}: {e}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
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

    #[test]
    fn a_chain_of_restatements_merges_into_one_and_a_second_run_does_nothing() {
        let dir = TempDir::new("maintain-chain");
        let rt = runtime(&dir, &[r#"{"changes": []}"#, r#"{"changes": []}"#]);
        seed(
            &rt,
            vec![
                mem(
                    "The user likes tea",
                    Category::Preference,
                    Priority::High,
                    20,
                ),
                mem(
                    "The user likes green tea",
                    Category::Preference,
                    Priority::High,
                    19,
                ),
                mem(
                    "The user likes green tea brewed hot",
                    Category::Preference,
                    Priority::High,
                    18,
                ),
            ],
        );
        let r = maintain(&rt, NOW, &NEVER);
        assert_eq!(r.merged.len(), 2, "{r:?}");
        let live = rt.store.with_memories(|m| m.to_vec());
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].content, "The user likes green tea brewed hot");
        assert_eq!(live[0].id, 1, "the oldest keeps its id");
        let again = maintain(&rt, NOW + 60, &NEVER);
        assert_eq!(again.changes(), 0, "{again:?}");
    }

    #[test]
    fn a_failing_model_skips_only_the_review_and_a_cancelled_run_writes_nothing() {
        let dir = TempDir::new("maintain-fail");
        let rt = runtime(&dir, &[]);
        seed(
            &rt,
            vec![
                mem(
                    "Always reply in English",
                    Category::Instruction,
                    Priority::Critical,
                    40,
                ),
                mem("Buy milk", Category::Reminder, Priority::High, 1),
                mem("Feed the cat", Category::Reminder, Priority::High, 1),
            ],
        );
        let cancel = Cancel::new();
        cancel.cancel();
        let r = run(&rt, NOW, false, &cancel);
        assert_eq!(
            r.problems,
            vec!["cancelled before the expiry step".to_string()]
        );
        assert_eq!(r.changes(), 0);
        assert_eq!(
            rt.store.with_memories(|m| m[0].priority),
            Priority::Critical
        );

        let r = maintain(&rt, NOW, &NEVER);
        assert_eq!(r.decayed.len(), 1);
        assert_eq!(r.summaries.len(), 1);
        assert!(r.adjusted.is_empty());
        // The summary falls back to the keyword draft; the review is skipped.
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(
            r.problems[0].starts_with("summary written from keywords")
                && r.problems[1].starts_with("priority review skipped"),
            "{:?}",
            r.problems
        );
        assert!(r.summaries[0].content.contains("milk"), "{:?}", r.summaries);
        assert!(r.error.is_none());
    }

    #[test]
    fn a_summary_with_no_room_under_the_cap_is_not_written_but_an_old_one_makes_way() {
        let dir = TempDir::new("maintain-cap");
        let rt = runtime(&dir, &[]);
        let words = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
            "juliett", "kilo", "lima", "mike", "november", "oscar",
        ];
        let mut memories: Vec<Memory> = words
            .iter()
            .map(|w| {
                mem(
                    &format!("Code word {w}"),
                    Category::Instruction,
                    Priority::Critical,
                    20,
                )
            })
            .collect();
        memories.push(mem("Buy milk", Category::Reminder, Priority::High, 1));
        memories.push(mem("Feed the cat", Category::Reminder, Priority::High, 1));
        seed(&rt, memories);
        let r = maintain(&rt, NOW, &NEVER);
        assert!(r.summaries.is_empty(), "{r:?}");
        assert!(r.critical_evicted.is_empty(), "{r:?}");
        assert!(
            r.problems[0].starts_with("the reminder summary of #16, #17 was not written"),
            "{:?}",
            r.problems
        );
        let live = rt.store.with_memories(|m| m.to_vec());
        assert_eq!(live.len(), 17);
        assert!(live.iter().all(|m| m.importance == 3), "{live:?}");

        // One rule gone, an old summary in its place: the new summary takes the place of
        // the old one, never of a rule.
        let mut code = rt.store.memory(1).expect("stored");
        code.deleted = true;
        rt.store.update_memory(&code).expect("delete");
        let mut old = mem("Old summary", Category::Fact, Priority::Critical, 10);
        old.tags.push("summary".into());
        seed(&rt, vec![old]);
        let r = maintain(&rt, NOW + 60, &NEVER);
        assert_eq!(r.summaries.len(), 1, "{r:?}");
        assert_eq!(r.critical_evicted, vec![18], "{r:?}");
        let sid = r.summaries[0].id;
        assert!(!rt.store.memory(sid).expect("stored").deleted);
        let again = maintain(&rt, NOW + 120, &NEVER);
        assert_eq!(again.changes(), 0, "{again:?}");
    }

    #[test]
    fn a_dry_run_reports_without_writing() {
        let dir = TempDir::new("maintain-dry");
        let rt = runtime(&dir, &[r#"{"changes": [{"id": 2, "delta": -1}]}"#]);
        seed(
            &rt,
            vec![
                mem(
                    "Always reply in English",
                    Category::Instruction,
                    Priority::Critical,
                    40,
                ),
                mem(
                    "The printer is on the second floor",
                    Category::Fact,
                    Priority::Medium,
                    20,
                ),
            ],
        );
        let before = rt.store.all_memories().expect("read");
        let r = run(&rt, NOW, true, &NEVER);
        assert!(r.dry_run);
        assert_eq!(r.decayed.len(), 1);
        assert_eq!(r.adjusted.len(), 1);
        assert_eq!(rt.store.all_memories().expect("read"), before);
    }

    #[test]
    fn saving_keeps_a_newer_access_mark_and_never_overwrites_a_change_made_meanwhile() {
        let dir = TempDir::new("maintain-save");
        let rt = runtime(&dir, &[]);
        seed(
            &rt,
            vec![
                mem("Buy milk", Category::Reminder, Priority::High, 1),
                mem("Feed the cat", Category::Reminder, Priority::High, 1),
            ],
        );
        let read = |id| rt.store.memory(id).expect("read");
        let (one, two) = (read(1), read(2));
        // Meanwhile a turn uses #1 and the user edits #2.
        rt.store.mark_accessed(&[1], NOW).expect("mark");
        let mut edited = two.clone();
        edited.content = "Feed the cat twice".into();
        rt.store.update_memory(&edited).expect("edit");

        let mut lowered = one.clone();
        lowered.importance = 2;
        let mut stale = two.clone();
        stale.importance = 2;
        let new = mem("Water the plants", Category::Reminder, Priority::High, 1);
        let saved = rt
            .store
            .save_memories(vec![(lowered, Some(one)), (stale, Some(two)), (new, None)])
            .expect("save");
        match &saved[..] {
            [Saved::Written(a), Saved::Changed(Some(b)), Saved::Written(c)] => {
                assert_eq!((a.importance, a.last_accessed_at), (2, Some(NOW)));
                assert_eq!(
                    (b.content.as_str(), b.importance),
                    ("Feed the cat twice", 3)
                );
                assert_eq!(c.id, 3);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read(2).content, "Feed the cat twice");
    }

    #[test]
    fn embeddings_are_fetched_once_and_find_duplicates_keywords_miss() {
        let dir = TempDir::new("maintain-embed");
        let model = Scripted(
            Default::default(),
            Some(vec![
                ("Espresso", Some(vec![1.0, 0.0, 0.01])),
                ("Strong", Some(vec![1.0, 0.0, 0.0])),
                ("Cycling", Some(vec![0.0, 1.0, 0.0])),
            ]),
            Default::default(),
        );
        let rt = runtime_with(
            &dir,
            &[r#"{"changes": []}"#, r#"{"changes": []}"#],
            model.clone(),
        );
        seed(
            &rt,
            vec![
                mem(
                    "Espresso every morning",
                    Category::Preference,
                    Priority::High,
                    20,
                ),
                mem(
                    "Strong coffee after waking up",
                    Category::Preference,
                    Priority::High,
                    19,
                ),
                mem(
                    "Cycling to work on Fridays",
                    Category::Fact,
                    Priority::Medium,
                    18,
                ),
            ],
        );
        let r = maintain(&rt, NOW, &NEVER);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.merged.len(), 1, "{r:?}");
        assert_eq!(
            (r.merged[0].kept, r.merged[0].dropped, r.merged[0].by),
            (1, 2, "embedding")
        );
        assert!(r.merged[0].similarity >= 0.92);
        assert_eq!(*model.2.lock().unwrap_or_else(|e| e.into_inner()), 3);
        let kept = rt.store.memory(1).expect("kept");
        assert_eq!(kept.content, "Strong coffee after waking up");
        assert_eq!(
            kept.embedding,
            Some(vec![1.0, 0.0, 0.0]),
            "the embedding goes with its text"
        );
        assert!(rt.store.memory(3).expect("stored").embedding.is_some());
        let again = maintain(&rt, NOW + 60, &NEVER);
        assert_eq!(again.changes(), 0, "{again:?}");
        assert_eq!(
            *model.2.lock().unwrap_or_else(|e| e.into_inner()),
            3,
            "stored embeddings are reused"
        );
    }

    #[test]
    fn a_failing_embedding_model_leaves_duplicates_to_keywords() {
        let dir = TempDir::new("maintain-embed-fail");
        let model = Scripted(Default::default(), Some(vec![]), Default::default());
        let rt = runtime_with(&dir, &[r#"{"changes": []}"#], model);
        seed(
            &rt,
            vec![
                mem(
                    "The user likes tea",
                    Category::Preference,
                    Priority::High,
                    20,
                ),
                mem(
                    "The user likes green tea",
                    Category::Preference,
                    Priority::High,
                    19,
                ),
            ],
        );
        let r = maintain(&rt, NOW, &NEVER);
        assert_eq!(r.merged.len(), 1);
        assert_eq!(r.merged[0].by, "keywords");
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(
            r.problems[0].starts_with("embeddings skipped"),
            "{:?}",
            r.problems
        );
    }

    /// An embedding model during whose call the user edits memory #1 (the store is
    /// reached through the runtime set after it is built).
    struct EditsMeanwhile(Arc<Mutex<Option<std::sync::Weak<Runtime>>>>);

    impl ChatModel for EditsMeanwhile {
        fn chat(
            &self,
            _req: &ChatRequest,
            _on_delta: &mut dyn FnMut(Delta<'_>),
            _cancel: &Cancel,
        ) -> Result<ChatResponse, LlmError> {
            Err(LlmError::Protocol {
                url: "http://127.0.0.1:1/v1".into(),
                detail: "scripted failure".into(),
            })
        }
        fn model_name(&self, _role: ModelRole) -> &str {
            "fake"
        }
        fn embed(
            &self,
            inputs: &[String],
            _cancel: &Cancel,
        ) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
            let rt = self.0.lock().ok()?.as_ref()?.upgrade()?;
            let mut one = rt.store.memory(1).ok()?;
            one.content = "The user likes green tea, jasmine above all".into();
            rt.store.update_memory(&one).ok()?;
            // Orthogonal vectors: no pair by embeddings, only by keywords.
            let n = inputs.len();
            Some(Ok((0..n)
                .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
                .collect()))
        }
    }

    #[test]
    fn a_merge_whose_kept_memory_changed_meanwhile_drops_nothing() {
        let dir = TempDir::new("maintain-merge-race");
        let hook = Arc::new(Mutex::new(None));
        let config = Config::defaults(dir.path().to_path_buf());
        let store =
            Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
        let rt = Runtime::with_model(
            config,
            store,
            crate::text::ShellTokenizer::new(None),
            Box::new(EditsMeanwhile(Arc::clone(&hook))),
        );
        *hook.lock().unwrap() = Some(Arc::downgrade(&rt));
        seed(
            &rt,
            vec![
                mem(
                    "The user likes green tea",
                    Category::Preference,
                    Priority::High,
                    9,
                ),
                mem(
                    "The user likes green tea brewed at 80 degrees",
                    Category::Preference,
                    Priority::High,
                    8,
                ),
            ],
        );
        let report = maintain(&rt, NOW, &NEVER);
        let live: Vec<String> = rt
            .store
            .all_memories()
            .expect("read")
            .into_iter()
            .filter(|m| !m.deleted)
            .map(|m| m.content)
            .collect();
        assert!(
            live.iter().any(|c| c.contains("80 degrees")),
            "the restatement was dropped although its merge was not stored: {live:?} {:?}",
            report
        );
        assert!(live.iter().any(|c| c.contains("jasmine")), "{live:?}");
    }
}
