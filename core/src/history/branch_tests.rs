use super::*;
use alloc::vec;

fn b<'a>(
    turns: u64,
    superseded: &'a [u64],
    parents: &'a [(u64, u64)],
    shown: &'a [(u64, u64)],
) -> Branches<'a> {
    Branches {
        turns,
        superseded,
        parents,
        shown,
    }
}

#[test]
fn the_shown_branch_follows_the_chosen_versions() {
    // (turns, superseded, parents, shown) → shown branch
    type Case = (
        u64,
        &'static [u64],
        &'static [(u64, u64)],
        &'static [(u64, u64)],
    );
    let table: Vec<(Case, Vec<u64>)> = vec![
        // No versions: every turn in order.
        ((3, &[], &[], &[]), vec![1, 2, 3]),
        ((0, &[], &[], &[]), vec![]),
        // An old store's replaced last turn: the replacement is shown.
        ((3, &[2], &[], &[]), vec![1, 3]),
        ((4, &[2, 3], &[], &[]), vec![1, 4]),
        // Turn 1 of a three-turn chat edited (turn 4 is its version): the turns after
        // turn 1 stay on the old branch.
        ((4, &[], &[(4, 0)], &[]), vec![4]),
        // A question after the edit continues the new branch.
        ((5, &[], &[(4, 0), (5, 4)], &[]), vec![4, 5]),
        // Back to version 1: the old branch whole.
        ((5, &[], &[(4, 0), (5, 4)], &[(0, 1)]), vec![1, 2, 3]),
        // Turn 2 regenerated in the middle: 1, then the new 2 (turn 4), turn 3 hidden.
        ((4, &[], &[(4, 1)], &[]), vec![1, 4]),
        // Chosen back, then a newer version made: the newest choice wins.
        ((5, &[], &[(4, 1), (5, 1)], &[(1, 2)]), vec![1, 2, 3]),
        ((5, &[], &[(4, 1), (5, 1)], &[(1, 5)]), vec![1, 5]),
        // A choice naming a turn that is not a child is ignored.
        ((4, &[], &[(4, 1)], &[(1, 3)]), vec![1, 4]),
    ];
    for ((turns, sup, parents, shown), want) in table {
        let got = b(turns, sup, parents, shown).shown_path();
        assert_eq!(got, want, "{turns} {sup:?} {parents:?} {shown:?}");
    }
}

#[test]
fn versions_are_the_turns_that_share_a_parent() {
    let br = b(6, &[], &[(4, 0), (5, 4), (6, 0)], &[]);
    // (turn, versions, parent)
    for (turn, versions, parent) in [
        (1, vec![1, 4, 6], 0),
        (4, vec![1, 4, 6], 0),
        (2, vec![2], 1),
        (5, vec![5], 4),
    ] {
        assert_eq!(br.versions(turn), versions, "{turn}");
        assert_eq!(br.parent(turn), parent, "{turn}");
    }
    // Old store: the replaced turn and its replacement are versions of each other.
    let old = b(4, &[2], &[], &[]);
    assert_eq!(old.versions(3), vec![2, 3]);
    assert_eq!(old.versions(4), vec![4]);
    assert_eq!(old.parent(4), 3);
}

#[test]
fn a_new_version_sees_only_the_turns_before_the_one_it_answers_again() {
    let br = b(3, &[], &[], &[]);
    // (replaces, history the new turn sees, its parent)
    for (replaces, history, parent) in [
        (None, vec![1, 2, 3], 3),
        (Some(1), vec![], 0),
        (Some(2), vec![1], 1),
        (Some(3), vec![1, 2], 2),
    ] {
        assert_eq!(br.history_for(replaces), history, "{replaces:?}");
        assert_eq!(br.parent_of_new(replaces), parent, "{replaces:?}");
    }
    // On a branch: editing turn 5 (after 4, the version of 1) keeps 4 before it.
    let br = b(5, &[], &[(4, 0), (5, 4)], &[]);
    assert_eq!(br.history_for(Some(5)), vec![4]);
    assert_eq!(br.history_for(None), vec![4, 5]);
}

#[test]
fn choosing_keeps_one_choice_a_parent() {
    let mut shown = vec![(0, 1), (1, 2)];
    choose(&mut shown, 0, 4);
    assert_eq!(shown, vec![(1, 2), (0, 4)]);
    choose(&mut shown, 1, 5);
    assert_eq!(shown, vec![(0, 4), (1, 5)]);
}

#[test]
fn old_ring_entries_belong_to_the_last_turns_stored_before_branches() {
    // (tags, turns, superseded, parents) → turns
    type Case = (&'static [u64], u64, &'static [u64], &'static [(u64, u64)]);
    let table: Vec<(Case, Vec<u64>)> = vec![
        // Tagged entries keep their turn.
        ((&[1, 2, 4], 4, &[], &[]), vec![1, 2, 4]),
        // Untagged: the last closed turns, superseded ones left out.
        ((&[0, 0], 3, &[], &[]), vec![2, 3]),
        ((&[0, 0], 4, &[3], &[]), vec![2, 4]),
        // Untagged then tagged: the untagged are the turns without a parent of their own.
        ((&[0, 0, 5], 5, &[], &[(4, 0), (5, 4)]), vec![2, 3, 5]),
        // More untagged entries than turns: the first ones are not placed.
        ((&[0, 0, 0], 2, &[], &[]), vec![0, 1, 2]),
    ];
    for ((tags, turns, sup, parents), want) in table {
        let got = ring_turns(tags, &b(turns, sup, parents, &[]));
        assert_eq!(got, want, "{tags:?}");
    }
}
