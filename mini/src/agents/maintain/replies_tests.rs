use evolve_core::memory::{Change, Priority, Proposal};

use super::{parse_digest, parse_proposals};

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
fn a_digest_is_one_line_of_summary_and_an_unusable_one_says_why() {
    let long = "tea ".repeat(100); // 400 characters, 399 once the last space goes
    let too_long = format!(r#"{{"summary": "{}"}}"#, "x".repeat(401));
    let cjk = format!(r#"{{"summary": "{}"}}"#, "记".repeat(400));
    let cases: [(&str, Result<String, &str>); 10] = [
        (
            r#"{"summary": "The user likes green tea, brewed hot."}"#,
            Ok("The user likes green tea, brewed hot.".into()),
        ),
        // Fenced, with the line breaks and runs of spaces models write: one line.
        (
            "Sure:\n```json\n{\"summary\": \"Buy milk  and\\n feed the cat\"}\n```",
            Ok("Buy milk and feed the cat".into()),
        ),
        (
            &format!(r#"{{"summary": "{long}"}}"#),
            Ok(long.trim_end().to_string()),
        ),
        // Characters are counted, not bytes: 400 CJK characters are kept.
        (&cjk, Ok("记".repeat(400))),
        (&too_long, Err("401 characters")),
        (r#"{"summary": "  \n "}"#, Err("empty")),
        (r#"{"text": "Buy milk"}"#, Err("no \"summary\" text")),
        (r#"{"summary": 5}"#, Err("no \"summary\" text")),
        (
            r#"{"summary": "[evolve:digest] - Buy milk"}"#,
            Err("repeated the request"),
        ),
        ("ok", Err("not usable JSON")),
    ];
    for (text, want) in cases {
        match (parse_digest(text), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
            (Err(e), Err(part)) => assert!(e.contains(part), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }
}
