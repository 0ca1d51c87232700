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

#[test]
fn a_turn_is_numbered_by_its_place_in_its_conversation() {
    // (turns, superseded, parents) → (turn, position) pairs
    type Case = (u64, &'static [u64], &'static [(u64, u64)]);
    let table: Vec<(Case, Vec<(u64, u64)>)> = vec![
        // No versions: the stored order.
        ((3, &[], &[]), vec![(1, 1), (2, 2), (3, 3)]),
        // Turn 1 of three edited (turn 4), then a follow-up (turn 5): 4 is the first
        // turn, 5 the second; the old turns keep their places on their branch.
        (
            (5, &[], &[(4, 0), (5, 4)]),
            vec![(4, 1), (5, 2), (1, 1), (2, 2), (3, 3)],
        ),
        // Turn 2 regenerated after turn 3 (turn 4), then two more: 2nd, 3rd, 4th.
        (
            (6, &[], &[(4, 1), (5, 4), (6, 5)]),
            vec![(4, 2), (5, 3), (6, 4), (3, 3)],
        ),
        // An old store's replaced last turn: its replacement takes its place.
        ((3, &[2], &[]), vec![(1, 1), (3, 2)]),
    ];
    for ((turns, sup, parents), want) in table {
        let br = b(turns, sup, parents, &[]);
        for (turn, pos) in want {
            assert_eq!(br.position(turn), pos, "turn {turn} of {parents:?}");
        }
    }
}

#[test]
fn the_summary_takes_only_the_leaving_entries_of_the_branch_shown() {
    // (turns of the leaving entries, shown branch) → taken
    let table: Vec<(&[u64], &[u64], Vec<bool>)> = vec![
        // No versions: every entry.
        (&[1, 2, 3], &[1, 2, 3, 4], vec![true, true, true]),
        // Turn 1 edited (turn 4 shown): the old turn 1 and its follow-ups are left out.
        (&[1, 2, 3], &[4, 5], vec![false, false, false]),
        (&[1, 2, 3, 4], &[4, 5, 6], vec![false, false, false, true]),
        // Turn 2 regenerated (turn 4): 1 stays, the old 2 and 3 after it do not.
        (&[1, 2, 3, 4], &[1, 4, 5], vec![true, false, false, true]),
        // Switched back to the old branch: its turns are taken, the newer version not.
        (&[1, 2, 3, 4], &[1, 2, 3], vec![true, true, true, false]),
        // Entries of unknown turn are taken, as the history shows them.
        (&[0, 0, 3], &[4], vec![true, true, false]),
        (&[], &[1], vec![]),
    ];
    for (turns, shown, want) in table {
        assert_eq!(summarised(turns, shown), want, "{turns:?} on {shown:?}");
    }
}
