//! Versions and branches of a session's turns: which stored turns the person and the
//! model see.
//!
//! Answering turn N again (its question edited, or its answer regenerated) stores a
//! new turn, a *version* of N: it has N's parent (the turn before it on the branch
//! shown). The turns after N stay on N's branch. The shown branch starts at the
//! session's first turn and goes, at each turn, to the child the person chose last
//! (the newest child unless they chose another): the history the model sees is that
//! branch, nothing else.
//!
//! Turns stored before branches existed carry no parent: each one's parent is the
//! closest earlier turn not superseded (a turn a later one replaced), so a replaced
//! last turn and its replacement are versions of one another.
//!
//! Turns are numbered from 1 in the order they were stored; a parent is always an
//! earlier turn, 0 standing for the start of the session.

use alloc::vec::Vec;

/// A session's turns as far as versions go.
#[derive(Debug, Clone, Copy)]
pub struct Branches<'a> {
    /// Turns stored, numbered 1 to `turns`.
    pub turns: u64,
    /// Turns replaced before branches existed (no parent of their own).
    pub superseded: &'a [u64],
    /// (turn, parent) of each turn stored with its parent (0: the first turn).
    pub parents: &'a [(u64, u64)],
    /// (parent, child) the person chose to show after the parent.
    pub shown: &'a [(u64, u64)],
}

impl Branches<'_> {
    /// The turn `turn` follows on its branch (0: none, the session's first turn).
    pub fn parent(&self, turn: u64) -> u64 {
        if let Some(&(_, p)) = self.parents.iter().find(|(t, _)| *t == turn) {
            return p;
        }
        (1..turn)
            .rev()
            .find(|t| !self.superseded.contains(t))
            .unwrap_or(0)
    }

    /// The turns that follow `parent`, oldest first.
    pub fn children(&self, parent: u64) -> Vec<u64> {
        (parent + 1..=self.turns)
            .filter(|&t| self.parent(t) == parent)
            .collect()
    }

    /// The versions of `turn` (itself included), oldest first: the turns sharing its
    /// parent.
    pub fn versions(&self, turn: u64) -> Vec<u64> {
        self.children(self.parent(turn))
    }

    /// The child shown after `parent`: the one chosen, else the newest.
    pub fn shown_after(&self, parent: u64) -> Option<u64> {
        let children = self.children(parent);
        self.shown
            .iter()
            .rev()
            .find(|(p, c)| *p == parent && children.contains(c))
            .map(|&(_, c)| c)
            .or_else(|| children.last().copied())
    }

    /// The shown branch, first turn first.
    pub fn shown_path(&self) -> Vec<u64> {
        let mut path = Vec::new();
        let mut at = 0;
        while let Some(next) = self.shown_after(at) {
            // A parent is always earlier; anything else is a damaged record.
            if next <= at {
                break;
            }
            path.push(next);
            at = next;
        }
        path
    }

    /// The turns before `turn` on its own branch, first turn first.
    pub fn path_before(&self, turn: u64) -> Vec<u64> {
        let mut path = Vec::new();
        let mut at = self.parent(turn);
        while at != 0 && at < turn && !path.contains(&at) {
            path.push(at);
            at = self.parent(at);
        }
        path.reverse();
        path
    }

    /// Where `turn` stands in the conversation it belongs to, counted from 1: its place
    /// on its own branch (the turns before it there, plus one). This is the number a
    /// person sees ("turn 2"), not the order turns were stored in: a version made of
    /// turn 2 after turns 3 and 4 is stored as turn 5 and is still the second turn.
    pub fn position(&self, turn: u64) -> u64 {
        self.path_before(turn).len() as u64 + 1
    }

    /// The turns the model sees before a new turn: the shown branch, or (when the new
    /// turn is a version of `replaces`) the turns before that one.
    pub fn history_for(&self, replaces: Option<u64>) -> Vec<u64> {
        match replaces {
            Some(n) => self.path_before(n),
            None => self.shown_path(),
        }
    }

    /// The parent a new turn is stored with: `replaces`'s, or the last shown turn.
    pub fn parent_of_new(&self, replaces: Option<u64>) -> u64 {
        match replaces {
            Some(n) => self.parent(n),
            None => self.shown_path().last().copied().unwrap_or(0),
        }
    }
}

/// The `shown` choices after showing `child` after `parent` (one choice a parent).
pub fn choose(shown: &mut Vec<(u64, u64)>, parent: u64, child: u64) {
    shown.retain(|(p, _)| *p != parent);
    shown.push((parent, child));
}

/// The turn each L2 ring entry belongs to. `tags`: the entries' own turn numbers, 0
/// for entries written before they had one; those are the oldest, one a closed turn
/// without a parent of its own and not superseded, aligned to the last of them. An
/// entry that cannot be placed gets 0.
pub fn ring_turns(tags: &[u64], b: &Branches<'_>) -> Vec<u64> {
    let untagged = tags.iter().filter(|&&t| t == 0).count();
    let legacy: Vec<u64> = (1..=b.turns)
        .filter(|t| !b.superseded.contains(t) && !b.parents.iter().any(|(c, _)| c == t))
        .collect();
    let skip = legacy.len().saturating_sub(untagged);
    // When there are more untagged entries than such turns, the first ones get 0.
    let mut missing = untagged.saturating_sub(legacy.len());
    let mut legacy = legacy.into_iter().skip(skip);
    tags.iter()
        .map(|&t| {
            if t != 0 {
                t
            } else if missing > 0 {
                missing -= 1;
                0
            } else {
                legacy.next().unwrap_or(0)
            }
        })
        .collect()
}

/// Which entries leaving the L2 ring the L3 summary takes: `true` for each entry of
/// `turns` (the turn of each leaving entry, see [`ring_turns`]) that is on the branch
/// shown (`shown`, see [`Branches::shown_path`]). The entries of other branches (an older
/// version's follow-ups, the versions not shown) leave the ring unsummarised: the
/// summary is the conversation the person reads and the model continues, and a hidden
/// branch's words never reach its prompt. An entry of unknown turn (0: written before
/// entries said) is taken, as the history shows it.
pub fn summarised(turns: &[u64], shown: &[u64]) -> Vec<bool> {
    turns.iter().map(|t| *t == 0 || shown.contains(t)).collect()
}

#[cfg(test)]
#[path = "branch_tests.rs"]
mod tests;
