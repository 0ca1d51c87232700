//! A closed turn in the history, as tables: what the model is sent of unanswered and
//! interrupted turns, what a failed or stopped turn keeps, its L2 entry and ring, and
//! the L1/L2 split.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::history::{window, Role, ToolCall};

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: args.to_string(),
    }
}

/// An assistant message calling `n` tools.
fn calls(n: usize) -> Message {
    let list = (0..n)
        .map(|i| call(&alloc::format!("c{i}"), "read_file", r#"{"path":"a.txt"}"#))
        .collect();
    Message::assistant_calls("", list)
}

fn result(id: &str) -> Message {
    Message::tool_result(id, "read_file", "text")
}

/// The roles of `msgs`, one letter each: u(ser), a(ssistant), t(ool), s(ystem).
fn roles(msgs: &[Message]) -> String {
    msgs.iter()
        .map(|m| match m.role {
            Role::User => 'u',
            Role::Assistant => 'a',
            Role::Tool => 't',
            Role::System => 's',
        })
        .collect()
}

#[test]
fn a_question_without_an_answer_gets_a_note_so_the_roles_alternate() {
    // (history, roles sent, notes added)
    let table: Vec<(Vec<Message>, &str, usize)> = vec![
        // Nothing to fix: an answered turn.
        (vec![Message::user("q1"), Message::assistant("a1")], "ua", 0),
        // A failed turn's question, then the next question: a note between them.
        (
            vec![
                Message::user("q1"),
                Message::user("q2"),
                Message::assistant("a2"),
            ],
            "uaua",
            1,
        ),
        // The last stored turn failed: the note comes before this turn's question.
        (vec![Message::user("q1")], "ua", 1),
        // A failed turn that ran a whole tool round: its result is followed by a note.
        (vec![Message::user("q1"), calls(1), result("c0")], "uata", 1),
        // Two failed turns in a row: one note each.
        (
            vec![
                Message::user("q1"),
                Message::user("q2"),
                Message::user("q3"),
                Message::assistant("a3"),
            ],
            "uauaua",
            2,
        ),
        (Vec::new(), "", 0),
    ];
    for (history, want, notes) in table {
        let out = with_answers(history.clone());
        assert_eq!(roles(&out), want, "{history:?}");
        let added = out.iter().filter(|m| m.content == NO_ANSWER).count();
        assert_eq!(added, notes, "{history:?}");
    }
}

#[test]
fn a_round_is_complete_when_every_call_has_its_result() {
    let table: Vec<(Vec<Message>, bool)> = vec![
        (vec![Message::user("q")], true),
        (vec![Message::user("q"), calls(1)], false),
        (vec![Message::user("q"), calls(1), result("c0")], true),
        (vec![Message::user("q"), calls(2), result("c0")], false),
        (
            vec![Message::user("q"), calls(2), result("c0"), result("c1")],
            true,
        ),
        // Only the last round counts: an earlier whole one does not make it whole.
        (
            vec![Message::user("q"), calls(1), result("c0"), calls(1)],
            false,
        ),
    ];
    for (msgs, whole) in table {
        assert_eq!(round_complete(&msgs), whole, "{}", roles(&msgs));
    }
}

#[test]
fn a_failed_or_stopped_turn_keeps_only_what_the_model_saw_complete() {
    // (messages, how it ended, text streamed so far, roles kept, note)
    let table: Vec<(Vec<Message>, Unfinished, &str, &str, &str)> = vec![
        // The model failed at once: the question alone.
        (
            vec![Message::user("q")],
            Unfinished::Failed,
            "",
            "u",
            NO_ANSWER_FAILED,
        ),
        // A whole round ran, then the model failed: the round is kept.
        (
            vec![Message::user("q"), calls(1), result("c0")],
            Unfinished::Failed,
            "",
            "uat",
            NO_ANSWER_FAILED,
        ),
        // Interrupted half way through a round: the round is not replayed.
        (
            vec![Message::user("q"), calls(2), result("c0")],
            Unfinished::Failed,
            "",
            "u",
            NO_ANSWER_FAILED,
        ),
        // A call without its answer is dropped with the message that made it.
        (
            vec![Message::user("q"), calls(1), result("c0"), calls(1)],
            Unfinished::Stopped,
            "",
            "uat",
            NO_ANSWER_STOPPED,
        ),
        // Stopped while the answer streamed: the person saw it, so it is kept.
        (
            vec![Message::user("q")],
            Unfinished::Stopped,
            "The first half ",
            "ua",
            "The first half (the user stopped the answer here)",
        ),
        // A failed model's half answer is not kept (nobody stopped it on purpose).
        (
            vec![Message::user("q")],
            Unfinished::Failed,
            "half",
            "u",
            NO_ANSWER_FAILED,
        ),
        // Blank text streamed counts as none.
        (
            vec![Message::user("q")],
            Unfinished::Stopped,
            "  \n",
            "u",
            NO_ANSWER_STOPPED,
        ),
    ];
    for (msgs, how, partial, want, note) in table {
        let kept = unfinished_turn(&msgs, how, partial);
        assert_eq!(roles(&kept.messages), want, "{} {how:?}", roles(&msgs));
        assert_eq!(kept.note, note);
    }
    let kept = unfinished_turn(&[Message::user("q")], Unfinished::Stopped, "seen \n");
    assert_eq!(
        kept.messages[1].content, "seen",
        "the kept answer is trimmed"
    );
}

#[test]
fn an_l2_entry_holds_the_rounds_text_and_the_files_touched() {
    let mut round = Message::assistant_calls(
        "  let me look  ",
        vec![
            call("c0", "read_file", r#"{"path":"notes.txt"}"#),
            call("c1", "write_file", r#"{"path":"notes.txt","content":"x"}"#),
            call("c2", "get_time", "{}"),
        ],
    );
    round.reasoning = None;
    let turn = vec![Message::user("q"), round, Message::assistant("done")];
    let e = l2_entry("q", "done", &turn, 1_000);
    assert_eq!(e.user, "q");
    assert_eq!(e.assistant, "done");
    assert!(
        e.thinking.starts_with("let me look\n→ read_file("),
        "{}",
        e.thinking
    );
    assert_eq!(e.thinking.matches('→').count(), 3);
    assert_eq!(e.files, ["notes.txt"], "each file once");
    // A long answer is cut to the budget; a short one is kept whole.
    let long = "word ".repeat(5_000);
    let cut = l2_entry("q", &long, &[], 100);
    assert!(
        cut.assistant.len() < long.len() / 4,
        "{}",
        cut.assistant.len()
    );
    assert_eq!(l2_entry("q", "short", &[], 100).assistant, "short");
    // A turn without tool rounds has no thinking and no files.
    let plain = l2_entry(
        "q",
        "a",
        &[Message::user("q"), Message::assistant("a")],
        100,
    );
    assert!(plain.thinking.is_empty() && plain.files.is_empty());
}

fn entry(name: &str) -> L2Entry {
    L2Entry {
        user: name.to_string(),
        ..L2Entry::default()
    }
}

fn names(ring: &L2Ring) -> Vec<String> {
    ring.entries().iter().map(|e| e.user.clone()).collect()
}

#[test]
fn the_ring_keeps_its_overflow_until_it_is_summarised() {
    let cfg = HistoryConfig {
        l2_capacity: 4,
        l2_overflow: 2,
        ..HistoryConfig::default()
    };
    let ring = |n: &[&str]| L2Ring::from_entries(n.iter().map(|s| entry(s)).collect());
    // (ring, replacing, ring after, overflow)
    let table: Vec<(L2Ring, bool, Vec<&str>, Vec<&str>)> = vec![
        (ring(&[]), false, vec!["new"], vec![]),
        (ring(&["a", "b"]), false, vec!["a", "b", "new"], vec![]),
        // Answered again: the replaced turn's entry leaves first.
        (ring(&["a", "b"]), true, vec!["a", "new"], vec![]),
        // Full: the oldest two are to be summarised, and stay until they are.
        (
            ring(&["a", "b", "c"]),
            false,
            vec!["a", "b", "c", "new"],
            vec!["a", "b"],
        ),
        // Replacing in a full ring makes room: no overflow.
        (ring(&["a", "b", "c"]), true, vec!["a", "b", "new"], vec![]),
    ];
    for (before, replacing, after, overflow) in table {
        let was = names(&before);
        let (next, out) = next_l2(before, entry("new"), replacing, &cfg);
        assert_eq!(names(&next), after, "{was:?} replacing={replacing}");
        let out: Vec<String> = out.into_iter().map(|e| e.user).collect();
        assert_eq!(out, overflow, "{was:?}");
    }
}

/// Two messages (question, answer) of each of `turns`.
fn stored(turns: core::ops::RangeInclusive<u64>) -> Vec<(u64, Message)> {
    turns
        .flat_map(|t| {
            [
                (t, Message::user(alloc::format!("q{t}"))),
                (t, Message::assistant(alloc::format!("a{t}"))),
            ]
        })
        .collect()
}

#[test]
fn l1_holds_the_recent_turns_and_l2_shows_only_the_older_ones() {
    // (branch before the new turn, stored from the window's first turn, ring turns,
    //  questions in L1, placeholder turns, ring entries shown)
    type Case = (Vec<u64>, Vec<(u64, Message)>, Vec<u64>);
    let table: Vec<(Case, Vec<&str>, usize, Vec<usize>)> = vec![
        // The third turn of a session: both earlier turns whole, no L2.
        (
            (vec![1, 2], stored(1..=2), vec![1, 2]),
            vec!["q1", "q2"],
            0,
            vec![],
        ),
        // Turn 9 (window from turn 4, outputs from 7): turns 1–3 come from L2, and
        // turns 4–6 show placeholders for their tool outputs.
        (
            ((1..=8).collect(), stored(4..=8), (1..=8).collect()),
            vec!["q4", "q5", "q6", "q7", "q8"],
            3,
            vec![0, 1, 2],
        ),
        // A turn not on the branch (replaced) is left out of L1 and of L2.
        (
            (vec![1, 3], stored(1..=3), vec![1, 2, 3]),
            vec!["q1", "q3"],
            0,
            vec![],
        ),
        // A new version of turn 2: only turn 1 before it.
        ((vec![1], stored(1..=2), vec![1, 2]), vec!["q1"], 0, vec![]),
        // Turn 1 edited as turn 4 after three turns: nothing of the old branch.
        (
            (vec![4], stored(1..=4), vec![1, 2, 3, 4]),
            vec!["q4"],
            0,
            vec![],
        ),
        // A long branch after an edit: positions count, not turn numbers; the old
        // branch's ring entries (turns 2, 3) stay out of L2.
        (
            (
                vec![1, 4, 5, 6, 7, 8, 9, 10, 11],
                stored(1..=11),
                (1..=11).collect(),
            ),
            vec!["q6", "q7", "q8", "q9", "q10", "q11"],
            3,
            vec![0, 3, 4],
        ),
        // Old entries of unknown turn are shown while older than L1.
        (
            (vec![1, 2], stored(1..=2), vec![0, 1, 2]),
            vec!["q1", "q2"],
            0,
            vec![0],
        ),
    ];
    for ((path, msgs, ring), l1, old, shown) in table {
        let w = window(path.len() as u64 + 1, 6, 3);
        let got = levels(w, &path, msgs, &ring);
        let questions: Vec<&str> = got
            .l1
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(questions, l1, "{path:?}");
        assert_eq!(got.old_user_turns, old, "{path:?}");
        assert_eq!(got.l2_shown, shown, "{path:?}");
    }
    // A failed turn in L1 is followed by a note, so the roles still alternate.
    let mut msgs = stored(1..=2);
    msgs.remove(1);
    let got = levels(window(3, 6, 3), &[1, 2], msgs, &[1, 2]);
    assert_eq!(roles(&got.l1), "uaua");
    assert_eq!(got.l1[1].content, NO_ANSWER);
}
