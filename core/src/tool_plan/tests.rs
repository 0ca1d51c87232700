//! The plan reader and the stream gate as tables, and a property: no text makes them
//! panic, and every call they hand out names an offered tool with standard JSON.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

use super::*;

const OFFERED: [&str; 3] = ["read_file", "get_time", "write_file"];

/// `(text, calls as "name arguments", rest)`
fn assert_plans(table: &[(&str, &[&str], &str)]) {
    for (text, calls, rest) in table {
        let plan = parse(text, &OFFERED);
        let got: Vec<String> = plan
            .calls
            .iter()
            .map(|c| alloc::format!("{} {}", c.name, c.arguments))
            .collect();
        let want: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
        assert_eq!(got, want, "calls of {text:?}");
        assert_eq!(plan.rest, *rest, "rest of {text:?}");
    }
}

const READ: &str = r#"read_file {"path":"notes.txt"}"#;

#[test]
fn plans_are_found_in_every_place_and_shape_models_write_them() {
    assert_plans(&[
        // fenced blocks, with or without a language tag
        (
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
            &[READ],
            "",
        ),
        (
            "```\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
            &[READ],
            "",
        ),
        // a list in one block
        (
            "```json\n[{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}, {\"name\": \"get_time\", \"arguments\": {}}]\n```",
            &[READ, "get_time {}"],
            "",
        ),
        // Qwen / Hermes tags, several, one unclosed at the end
        (
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}",
            &[READ, "get_time {}"],
            "",
        ),
        ("<TOOL_CALL>{\"name\": \"get_time\"}</TOOL_CALL>", &["get_time {}"], ""),
        // a fence inside a tag is read once
        (
            "<tool_call>```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```</tool_call>",
            &["get_time {}"],
            "",
        ),
        // the bare JSON as the whole answer, or JSON lines, then prose
        (
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}",
            &[READ],
            "",
        ),
        (
            "  [{\"tool\": \"get_time\", \"args\": {}}]  ",
            &["get_time {}"],
            "",
        ),
        (
            "{\"name\": \"get_time\"}\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\nLet me check.",
            &["get_time {}", READ],
            "Let me check.",
        ),
        // the other shapes
        (
            "```json\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}\n```",
            &[READ],
            "",
        ),
        (
            "```json\n{\"tool_name\": \"read_file\", \"input\": {\"path\": \"notes.txt\"}}\n```",
            &[READ],
            "",
        ),
        (
            "```json\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"notes.txt\\\"}\"}}\n```",
            &[READ],
            "",
        ),
        (
            "```json\n{\"function\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
            &[READ],
            "",
        ),
        (
            "```json\n{\"tool_calls\": [{\"id\": \"a\", \"type\": \"function\", \"function\": {\"name\": \"get_time\", \"arguments\": \"\"}}]}\n```",
            &["get_time {}"],
            "",
        ),
        // extra keys are fine beside an arguments key
        (
            "```json\n{\"name\": \"get_time\", \"arguments\": {}, \"reason\": \"the user asked\"}\n```",
            &["get_time {}"],
            "",
        ),
    ]);
}

#[test]
fn slightly_broken_json_is_repaired_and_a_cut_call_is_dropped() {
    assert_plans(&[
        // single quotes, trailing commas, unquoted keys, a missing closing brace
        (
            "```json\n{'name': 'read_file', 'arguments': {'path': 'notes.txt',},}\n```",
            &[READ],
            "",
        ),
        (
            "<tool_call>{name: \"read_file\", arguments: {path: \"notes.txt\"}</tool_call>",
            &[READ],
            "",
        ),
        // arguments as a broken JSON string
        (
            "{\"name\": \"read_file\", \"arguments\": \"{'path': 'notes.txt'}\"}",
            &[READ],
            "",
        ),
        // the answer cut off inside the second call: only the first one runs
        (
            "[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"no",
            &["get_time {}"],
            "",
        ),
        // a lone call cut off is no plan
        (
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"no",
            &[],
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"no",
        ),
    ]);
}

#[test]
fn the_prose_around_a_plan_is_kept() {
    assert_plans(&[
        (
            "I will read the file first.\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```\n\nThen I answer.",
            &[READ],
            "I will read the file first.\n\nThen I answer.",
        ),
        (
            "Checking.<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>",
            &["get_time {}"],
            "Checking.",
        ),
    ]);
}

#[test]
fn ordinary_answers_and_other_tools_are_not_plans() {
    let data = "Here is the data:\n```json\n[{\"name\": \"Alice\", \"age\": 31}]\n```";
    let code = "Run this:\n```sh\nls -la\n```";
    let config = "```json\n{\"name\": \"read_file\", \"size\": 3}\n```";
    let unknown = "```json\n{\"name\": \"delete_everything\", \"arguments\": {}}\n```";
    let mixed = "```json\n[{\"name\": \"get_time\", \"arguments\": {}}, {\"title\": \"x\"}]\n```";
    let mention = "You can call read_file with {\"path\": \"x\"} to read a file.";
    let number = "[1] is the first reference; {curly} ones are placeholders.";
    for text in [
        data, code, config, unknown, mixed, mention, number, "", "   ",
    ] {
        assert_plans(&[(text, &[], text.trim())]);
    }
    // A call of a tool not offered is left out of a plan that has others.
    assert_plans(&[(
        "```json\n[{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"rm\", \"arguments\": {}}]\n```",
        &["get_time {}"],
        "",
    )]);
    // Arguments that are not an object make it no call.
    assert_plans(&[(
        "{\"name\": \"read_file\", \"arguments\": [1]}",
        &[],
        "{\"name\": \"read_file\", \"arguments\": [1]}",
    )]);
}

#[test]
fn a_written_plan_reads_back_as_the_same_calls() {
    let one = write([("read_file", "{\"path\": \"notes.txt\"}")]);
    assert_eq!(
        one,
        "```json\n{\"name\":\"read_file\",\"arguments\":{\"path\":\"notes.txt\"}}\n```"
    );
    assert_plans(&[(&one, &[READ], "")]);
    let two = write([("get_time", "{}"), ("read_file", "{'path': 'notes.txt'}")]);
    assert_plans(&[(&two, &["get_time {}", READ], "")]);
    // Arguments that are not JSON at all are written as a string (and then not read
    // back as a call: they are not an object).
    assert!(write([("get_time", "now please")]).contains("\"now please\""));
}

/// Feeds `pieces` through a gate and returns what was shown before the end, and at it.
fn through_gate(pieces: &[&str]) -> (String, String) {
    let offered = OFFERED.iter().map(|s| s.to_string()).collect();
    let mut gate = PlanGate::new(offered);
    let mut shown = String::new();
    let mut whole = String::new();
    for p in pieces {
        shown.push_str(&gate.push(p));
        whole.push_str(p);
    }
    let is_plan = !parse(&whole, &OFFERED).calls.is_empty();
    (shown, gate.finish(is_plan))
}

#[test]
fn the_gate_shows_prose_as_it_comes_and_never_a_plan() {
    // prose streams through
    assert_eq!(
        through_gate(&["Paris is", " the capital", "."]),
        ("Paris is the capital.".into(), String::new())
    );
    // a plan is never shown, in whatever pieces it comes
    for pieces in [
        &[
            "``",
            "`json\n{\"name\": \"get_",
            "time\", \"arguments\": {}}\n``",
            "`",
        ][..],
        &["{\"name\"", ": \"get_time\"}"][..],
        &["<tool", "_call>{\"name\": \"get_time\"}</tool_call>"][..],
        &["\n\n<tool_call>", "{\"name\": \"get_time\"}"][..],
    ] {
        assert_eq!(
            through_gate(pieces),
            (String::new(), String::new()),
            "{pieces:?}"
        );
    }
    // prose before a plan is shown, the plan and what follows it are not
    assert_eq!(
        through_gate(&[
            "Let me look.\n`",
            "``json\n{\"name\": \"get_time\", \"arguments\": {}}\n```\nok"
        ]),
        ("Let me look.\n".into(), String::new())
    );
    assert_eq!(
        through_gate(&["Let me look. <tool_", "call>{\"name\": \"get_time\"}"]),
        ("Let me look. ".into(), String::new())
    );
}

#[test]
fn the_gate_shows_an_ordinary_answer_whole_and_in_order() {
    let answers: [&[&str]; 5] = [
        &[
            "Data:\n```json\n[{\"name\": \"Alice\"",
            ", \"age\": 31}]\n```\nThat",
            " is all.",
        ],
        &["```sh\nls\n```", " lists files."],
        &["[1] is a reference."],
        &["Use `ls` or ``x`` but ", "not <tool calls>."],
        &["a < b and `", "c`"],
    ];
    for pieces in answers {
        let (shown, end) = through_gate(pieces);
        assert_eq!(
            alloc::format!("{shown}{end}"),
            pieces.concat(),
            "{pieces:?}"
        );
    }
    // A code block of data is shown when it closes, not held to the end.
    let (shown, end) = through_gate(&["```json\n[1, 2]\n```\nMore", " text"]);
    assert_eq!(shown, "```json\n[1, 2]\n```\nMore text");
    assert_eq!(end, "");
}

fn planish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("{"),
        Just("}"),
        Just("["),
        Just("]"),
        Just("\""),
        Just("'"),
        Just(","),
        Just(":"),
        Just(" "),
        Just("\n"),
        Just("\\"),
        Just("```"),
        Just("```json\n"),
        Just("<tool_call>"),
        Just("</tool_call>"),
        Just("<tool_"),
        Just("\"name\""),
        Just("\"arguments\""),
        Just("\"read_file\""),
        Just("\"get_time\""),
        Just("\"function\""),
        Just("\"tool_calls\""),
        Just("\"{}\""),
        Just("null"),
        Just("1"),
        Just("é"),
        Just("中"),
    ];
    let piece = prop_oneof![
        token.prop_map(String::from),
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|parts| parts.concat())
}

proptest! {
    #[test]
    fn no_text_panics_and_every_call_is_offered_with_an_object(text in planish()) {
        let plan = parse(&text, &OFFERED);
        for call in &plan.calls {
            prop_assert!(OFFERED.contains(&call.name.as_str()));
            let args = parse_strict(&call.arguments);
            prop_assert!(matches!(args, Ok(Value::Object(_))), "{:?}", call.arguments);
        }
        if plan.calls.is_empty() {
            prop_assert_eq!(plan.rest, text.trim());
        }
    }

    #[test]
    fn the_gate_never_loses_or_reorders_an_ordinary_answer(
        text in planish(),
        cuts in proptest::collection::vec(0usize..64, 0..6),
    ) {
        let mut at: Vec<usize> = cuts
            .into_iter()
            .map(|c| c.min(text.len()))
            .filter(|&c| text.is_char_boundary(c))
            .collect();
        at.sort_unstable();
        at.push(text.len());
        let mut pieces = vec![];
        let mut from = 0;
        for to in at {
            pieces.push(&text[from..to]);
            from = to;
        }
        let (shown, end) = through_gate(&pieces);
        if parse(&text, &OFFERED).calls.is_empty() {
            prop_assert_eq!(alloc::format!("{shown}{end}"), text);
        } else {
            prop_assert!(text.starts_with(&shown));
        }
    }
}
