//! The working copy of one maintenance run: the live memories as read at its start,
//! the stored copy each was read as, and the report being filled. Decides how a step's
//! changes reach the store: in one transaction, never over a change made meanwhile (a
//! conflicted memory is left as it is for the next run, and a merge whose kept memory
//! conflicted gives the dropped one back), nothing at all in a dry run; and which ids
//! the report shows for summaries once they are stored.

use evolve_core::memory::{Memory, MemoryConfig, MemoryId};

use super::report::{MaintainReport, MergeDone};
use crate::agents::runtime::Runtime;
use crate::store::Saved;

/// New summaries carry provisional ids from here up until they are stored, so the
/// CRITICAL cap can name them; the report shows the stored id (0 in a dry run).
pub(super) const PROVISIONAL_ID: MemoryId = u64::MAX / 2;

/// The records one step changed or added (indices into `Run::mems`).
pub(super) type Step = Vec<usize>;

/// The working copy of the live memories and the report being filled.
pub(super) struct Run<'a> {
    pub(super) mems: Vec<Memory>,
    /// For each of `mems`, the copy last read from or written to the store (`None`: a
    /// new memory): a write is refused when the stored copy no longer matches it.
    pub(super) base: Vec<Option<Memory>>,
    pub(super) rt: &'a Runtime,
    pub(super) dry_run: bool,
    pub(super) report: MaintainReport,
    /// Provisional id → stored id of the summaries written so far.
    pub(super) new_ids: Vec<(MemoryId, MemoryId)>,
    /// CRITICAL memories this run made (summaries, promotions): they use up
    /// [`memory::critical_room`] as they are made.
    pub(super) critical_added: usize,
}

impl Run<'_> {
    /// The memory rules' settings (`[memory]` in the config).
    pub(super) fn cfg(&self) -> &MemoryConfig {
        &self.rt.config.core.memory
    }

    /// Writes a step's records in one transaction (nothing in a dry run) and gives new
    /// records their ids.
    pub(super) fn save(&mut self, changed: Step) -> Result<(), crate::store::StoreError> {
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
    pub(super) fn finish(mut self) -> MaintainReport {
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

    /// Where memory `id` stands in the working copy.
    pub(super) fn index_of(&self, id: MemoryId) -> Option<usize> {
        self.mems.iter().position(|m| m.id == id)
    }

    /// Soft-deletes `ids`; returns their indices.
    pub(super) fn soft_delete(&mut self, ids: &[MemoryId]) -> Step {
        let mut changed = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(i) = self.index_of(id) {
                self.mems[i].deleted = true;
                changed.push(i);
            }
        }
        changed
    }
}
