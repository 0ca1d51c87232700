//! What ranking reads of one memory, in a few bytes.
//!
//! Decides nothing: [`Fields`] copies the fields the selection reads for every match
//! (id, times, lengths, importance, priority, whether it is active, whether it has
//! subjects), so the index ([`super::MemoryIndex`]) can keep them in one dense array by
//! position. A match then costs one short read of that array instead of a walk to its
//! record, whose hot fields lie on other cache lines than its text, keywords and
//! embedding: at 100 000 memories the records are tens of megabytes read at random,
//! the array four.

use super::{Memory, MemoryId, Priority};
use crate::Timestamp;

/// The memory is deleted.
const DELETED: u8 = 1;
/// `expires_at` holds the moment the memory expires.
const EXPIRES: u8 = 2;
/// The memory has subjects ([`Memory::subjects`]).
const SUBJECTS: u8 = 4;

/// The fields of one memory that ranking reads, as [`Fields::of`] copies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fields {
    pub(crate) id: MemoryId,
    pub(crate) created_at: Timestamp,
    /// [`Memory::expires_at`] when [`EXPIRES`] is set, else 0.
    expires_at: Timestamp,
    /// [`Memory::ranked_len`].
    pub(crate) ranked_len: u32,
    /// The number of distinct keywords (the memory's side of the strong match's F1).
    pub(crate) keywords: u32,
    pub(crate) importance: u8,
    pub(crate) priority: Priority,
    flags: u8,
}

impl Fields {
    /// The fields of `m`.
    pub(crate) fn of(m: &Memory) -> Self {
        let mut flags = 0;
        if m.deleted {
            flags |= DELETED;
        }
        if m.expires_at.is_some() {
            flags |= EXPIRES;
        }
        if !m.subjects.is_empty() {
            flags |= SUBJECTS;
        }
        Fields {
            id: m.id,
            created_at: m.created_at,
            expires_at: m.expires_at.unwrap_or(0),
            ranked_len: m.ranked_len(),
            keywords: u32::try_from(m.keywords.len()).unwrap_or(u32::MAX),
            importance: m.importance,
            priority: m.priority,
            flags,
        }
    }

    /// [`Memory::is_active`]: not deleted, not expired at `now`.
    pub(crate) fn is_active(&self, now: Timestamp) -> bool {
        self.flags & DELETED == 0 && !(self.flags & EXPIRES != 0 && self.expires_at <= now)
    }

    /// True when the memory has subjects, so the subject boost may apply to it.
    pub(crate) fn has_subjects(&self) -> bool {
        self.flags & SUBJECTS != 0
    }
}

/// Where the selection reads a memory's [`Fields`]: the index's dense array, or the
/// records themselves when there is no index.
#[derive(Clone, Copy)]
pub(crate) enum FieldSource<'a> {
    /// The index's array, by position.
    Table(&'a [Fields]),
    /// The records, copied on each read.
    Records(&'a [Memory]),
}

impl FieldSource<'_> {
    /// The fields of the memory at `slot`, if there is one.
    pub(crate) fn get(&self, slot: u32) -> Option<Fields> {
        match self {
            FieldSource::Table(t) => t.get(slot as usize).copied(),
            FieldSource::Records(ms) => ms.get(slot as usize).map(Fields::of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Category;
    use crate::text::FallbackTokenizer;

    #[test]
    fn a_memory_is_active_in_its_fields_exactly_when_it_is_active() {
        let base = Memory::new(
            "Anna: the banjo",
            Category::General,
            100,
            &FallbackTokenizer,
        );
        let cases: [(bool, Option<Timestamp>); 5] = [
            (false, None),
            (true, None),
            (false, Some(50)),
            (false, Some(200)),
            (true, Some(200)),
        ];
        for (deleted, expires_at) in cases {
            let mut m = base.clone();
            m.deleted = deleted;
            m.expires_at = expires_at;
            let f = Fields::of(&m);
            for now in [0, 49, 50, 51, 199, 200, 201, Timestamp::MAX, Timestamp::MIN] {
                assert_eq!(
                    f.is_active(now),
                    m.is_active(now),
                    "{deleted} {expires_at:?} {now}"
                );
            }
        }
    }
}
