//! The style notes a person sees and takes away: listing, removing one, clearing them,
//! shared by `evolve memory style` and `/v1/memory/style`. Learning a note from a reply
//! that scored high is the [`super::ReflectionAgent`]'s; injecting the notes into every
//! prompt is the manager's. Notes are numbered from 1, oldest first, as they are listed
//! and injected.

use crate::store::{Store, StoreError};

/// What [`remove`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    /// The note with this number is gone; here is its text.
    Done(String),
    /// There is no note with this number; this many are stored.
    NoSuch(usize),
    /// Note `n` is not the text the caller expected (the notes changed since it listed
    /// them: one was learned and the oldest dropped, or one removed); nothing was done.
    /// Here is note `n` as it is now (`None`: no such note any more).
    Changed(Option<String>),
}

/// The notes, oldest first.
pub fn list(store: &Store) -> Result<Vec<String>, StoreError> {
    store.style_notes()
}

/// Removes note `n` (from 1), in one write, only if it still reads `expect` when given.
pub fn remove(store: &Store, n: usize, expect: Option<&str>) -> Result<Removal, StoreError> {
    store.edit_style_notes(|notes| {
        let current = n.checked_sub(1).and_then(|i| notes.get(i));
        match (current, expect) {
            (Some(note), Some(want)) if note != want => Removal::Changed(Some(note.clone())),
            (None, Some(_)) => Removal::Changed(None),
            (None, None) => Removal::NoSuch(notes.len()),
            (Some(_), _) => Removal::Done(notes.remove(n - 1)),
        }
    })
}

/// Removes every note; returns how many there were.
pub fn clear(store: &Store) -> Result<usize, StoreError> {
    store.edit_style_notes(|notes| {
        let n = notes.len();
        notes.clear();
        n
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::text::FallbackTokenizer;

    #[test]
    fn notes_are_removed_by_number_only_when_they_still_read_as_expected() {
        let dir = crate::testing::TempDir::new("style-notes");
        let store = Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).unwrap();
        let notes = ["short", "lists", "metric"].map(String::from);
        store.set_style_notes(&notes).unwrap();
        assert_eq!(remove(&store, 0, None).unwrap(), Removal::NoSuch(3));
        assert_eq!(remove(&store, 4, None).unwrap(), Removal::NoSuch(3));
        assert_eq!(
            remove(&store, 2, Some("short")).unwrap(),
            Removal::Changed(Some("lists".into()))
        );
        assert_eq!(
            remove(&store, 9, Some("short")).unwrap(),
            Removal::Changed(None)
        );
        assert_eq!(list(&store).unwrap(), notes);
        assert_eq!(
            remove(&store, 2, Some("lists")).unwrap(),
            Removal::Done("lists".into())
        );
        assert_eq!(
            remove(&store, 1, None).unwrap(),
            Removal::Done("short".into())
        );
        assert_eq!(list(&store).unwrap(), vec!["metric".to_string()]);
        assert_eq!(clear(&store).unwrap(), 1);
        assert_eq!(clear(&store).unwrap(), 0);
        assert!(list(&store).unwrap().is_empty());
    }
}
