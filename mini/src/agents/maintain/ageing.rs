//! Steps 1–3, core's rules that need no model: expiry, decay by age and the CRITICAL
//! cap, applied to the working copy. Also the room left under the cap, which the steps
//! that add CRITICAL memories (summaries, the model's promotions) use up as they go.

use evolve_core::memory;
use evolve_core::Timestamp;

use super::report::PriorityChange;
use super::working_copy::{Run, Step};

impl Run<'_> {
    /// Step 1: soft-deletes the memories past their `expires_at`.
    pub(super) fn expiry(&mut self, now: Timestamp) -> Step {
        let ids = memory::expired(&self.mems, now);
        self.report.expired = ids.clone();
        self.soft_delete(&ids)
    }

    /// Step 2: lowers priorities by age (pinned memories keep theirs).
    pub(super) fn decay(&mut self, now: Timestamp) -> Step {
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
    pub(super) fn critical_cap(&mut self, now: Timestamp) -> Step {
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
    pub(super) fn critical_room(&self, now: Timestamp) -> usize {
        memory::critical_room(&self.mems, now, self.cfg()).saturating_sub(self.critical_added)
    }
}
