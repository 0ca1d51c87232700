use super::*;
use alloc::string::String;
use alloc::vec;

fn json(text: &str) -> Value {
    parse_strict(text).unwrap()
}

#[test]
fn a_fence_inside_a_string_does_not_close_the_block() {
    let text = "Here:\n```json\n{\"code\": \"```sh\\nls\\n```\"}\n```\nDone.";
    assert_eq!(extract(text), Ok(json(r#"{"code": "```sh\nls\n```"}"#)));
    // A truncated block still ends at the next fence, and is repaired.
    let cut = "```json\n[{\"a\": 1}, {\"b\": \n```\nmore text";
    assert_eq!(extract(cut), Ok(json(r#"[{"a": 1}, {}]"#)));
}

#[test]
fn finds_json_in_the_seed_order() {
    let table: &[(&str, &str)] = &[
        // 1. the whole text, strict or repaired
        ("[1, 2]", "[1,2]"),
        ("  {\"a\": 1}\n", "{\"a\":1}"),
        ("42", "42"),
        ("[{'a': 1},]", "[{\"a\":1}]"),
        ("\"Sure\", I said. [1]", "[1]"),
        // 2. fenced code blocks
        (
            "Here you go:\n```json\n[1, 2]\n```\nAnything else?",
            "[1,2]",
        ),
        ("```\n{\"a\": true}\n```", "{\"a\":true}"),
        ("```JSON [3]```", "[3]"),
        ("```python\nprint(1)\n```\n```json\n[4]\n```", "[4]"),
        // (`extract` closes what truncation left open; `extract_items` then drops
        // the cut-off last item, see `a_list_cut_off_inside_its_last_item_…`)
        (
            "Sure:\n```json\n[{\"content\": \"likes tea\"}, {\"content\": \"trunc",
            "[{\"content\":\"likes tea\"},{\"content\":\"trunc\"}]",
        ),
        // 3. the first balanced array or object in prose
        ("I found these: [\"a\", \"b\"]. Done.", "[\"a\",\"b\"]"),
        (
            "Result: {\"x\": \"has ] and } inside\"} ok",
            "{\"x\":\"has ] and } inside\"}",
        ),
        ("Use {name} as a placeholder. Answer: [1]", "[1]"),
        ("[note: see {\"a\": 1}]", "{\"a\":1}"),
        ("Answer: [{\"a\": 1}, {\"b\": 2", "[{\"a\":1},{\"b\":2}]"),
        // a later candidate that parses strictly beats an earlier one that needed
        // repair: prose in braces is not the answer
        (
            "{thinking: none} [{\"content\":\"likes tea\"}]",
            "[{\"content\":\"likes tea\"}]",
        ),
        ("Plan: {step: 'list them'}\n{\"a\": 1}", "{\"a\":1}"),
        ("{note: 1}\n```json\n[2]\n```", "[2]"),
        (
            "```json\n{'a': 1}\n```\n```json\n{\"b\": 2}\n```",
            "{\"b\":2}",
        ),
        // … but not when it lies inside the repaired one: it is one of its items
        ("[{'a': 1}, {\"b\": 2}]", "[{\"a\":1},{\"b\":2}]"),
        ("Answer: [{'a': 1}, {\"b\": 2}] ok", "[{\"a\":1},{\"b\":2}]"),
        (
            "Answer: [{\"a\": 1}, {\"b\": \"tr",
            "[{\"a\":1},{\"b\":\"tr\"}]",
        ),
        (
            "```json\n[{\"a\": 1}, {\"b\": [2]}, {'c\n```\nok",
            "[{\"a\":1},{\"b\":[2]},{}]",
        ),
    ];
    for (text, expected) in table {
        assert_eq!(extract(text), Ok(json(expected)), "{text:?}");
    }
}

#[test]
fn a_damaged_memory_extraction_answer_yields_every_item() {
    let answer = "Sure! Here are the memories:\n\n```json\n[\n\
        {'content': 'prefers green tea', 'category': 'preference', 'priority': 1,},\n\
        {content: \"line\nbreak\ttab\", category: \"fact\", pinned: True}\n\
        // the last one was cut off\n\
        {\"content\": \"report due mon";
    let items = extract_items(answer).unwrap();
    // The third memory was cut off mid-sentence: it is dropped, not ingested as
    // "report due mon".
    let expected = [
        "{\"content\":\"prefers green tea\",\"category\":\"preference\",\"priority\":1}",
        "{\"content\":\"line\\nbreak\\ttab\",\"category\":\"fact\",\"pinned\":true}",
    ];
    assert_eq!(items.len(), expected.len());
    for (item, json_text) in items.iter().zip(expected) {
        assert_eq!(item.to_json_string(), json_text);
    }
}

/// `(answer, the items extract_items gives, as JSON)`
fn assert_items(table: &[(&str, &[&str])]) {
    for (text, expected) in table {
        let items = extract_items(text);
        let got: Result<Vec<String>, _> =
            items.map(|v| v.iter().map(Value::to_json_string).collect());
        let want: Vec<String> = expected.iter().map(|e| String::from(*e)).collect();
        assert_eq!(got, Ok(want), "{text:?}");
    }
}

#[test]
fn a_list_cut_off_inside_its_last_item_loses_that_item() {
    const A: &str = "{\"a\":1}";
    const B: &str = "{\"b\":2}";
    assert_items(&[
        // the reviewer's case: a half-sentence must not become a memory
        (
            r#"[{"content": "User likes green tea", "category": "preference"}, {"content": "User's daughter is cal"#,
            &[r#"{"content":"User likes green tea","category":"preference"}"#],
        ),
        // cut in a key, after a colon, in a literal, in a nested list or object:
        // all inside the last item
        (r#"[{"a": 1}, {"b": 2, "c"#, &[A]),
        (r#"[{"a": 1}, {"b": 2, "c": "#, &[A]),
        (r#"[{"a": 1}, {"b": tr"#, &[A]),
        (r#"[{"a": 1}, {"b": [1, 2"#, &[A]),
        (r#"[{"a": 1}, {"b": {"c": 1}"#, &[A]),
        (r#"[{"a": 1}, {"#, &[A]),
        (r#"["tea", "cof"#, &[r#""tea""#]),
        (r#"[{"a": 1}, ["x""#, &[A]),
        // cut between items: every item is whole
        (r#"[{"a": 1}, {"b": 2}"#, &[A, B]),
        (r#"[{"a": 1}, {"b": 2},"#, &[A, B]),
        (r#"[{"a": 1}, {"b": 2} "#, &[A, B]),
        (r#"[{"a": 1}, tru"#, &[A]),
        (r#"[{"a": 1}, 2"#, &[A, "2"]),
        // the list under a list key: only its own last item counts
        (r#"{"memories": [{"a": 1}, {"b": "x"#, &[A]),
        (r#"{"memories": [{"a": 1}, {"b": 2}]"#, &[A, B]),
        (r#"{"memories": [{"a": 1}, {"b": 2}], "note": "cu"#, &[A, B]),
        (r#"{"memories": [{"a": 1}, {"b": 2}], "no"#, &[A, B]),
        (r#"{"memories": [{"a": 1}, {"b": 2}"#, &[A, B]),
        // a lone object cut off is itself the cut item
        (r#"{"content": "User's daughter is cal"#, &[]),
        (r#"{"a": 1, "b"#, &[]),
        // fenced or in prose
        ("```json\n[{\"a\": 1}, {\"b\": \"x", &[A]),
        ("Here:\n```json\n[{\"a\": 1}, {\"b\": \"x\n```\nOops.", &[A]),
        ("Here: [{\"a\": 1}, {\"b\": \"x", &[A]),
        // complete answers keep every item
        (r#"[{"a": 1}, {"b": 2}]"#, &[A, B]),
        (r#"{"content": "whole"}"#, &[r#"{"content":"whole"}"#]),
    ]);
    // `extract` hands out the whole repaired value: truncation is for callers of a
    // single value to judge.
    assert_eq!(
        extract(r#"[{"a": 1}, {"b": "x"#),
        Ok(json(r#"[{"a": 1}, {"b": "x"}]"#))
    );
}

#[test]
fn an_empty_list_beside_the_answer_does_not_replace_it() {
    let tea = || json(r#"[{"content": "likes tea"}]"#);
    // "(or [] if none)" after a list that needed repair.
    assert_eq!(
        extract("[{'content': 'likes tea'}] (or [] if none)"),
        Ok(tea())
    );
    // ... and before one that parses.
    assert_eq!(
        extract(r#"If none, return []. Found: [{"content": "likes tea"}]"#),
        Ok(tea())
    );
    assert_eq!(
        extract_items("```json\n[{'content': 'likes tea',}]\n```\nOtherwise reply []."),
        Ok(vec![json(r#"{"content": "likes tea"}"#)])
    );
    // When it is all there is, it is the answer.
    assert_eq!(extract("[]"), Ok(Value::Array(Vec::new())));
    assert_eq!(extract_items("Nothing to remember: []"), Ok(Vec::new()));
    assert_eq!(extract("{} and [}"), Ok(Value::Object(Vec::new())));
}

#[test]
fn prose_in_braces_before_the_answer_is_not_an_item() {
    assert_items(&[
        (
            "{thinking: none} [{\"content\":\"likes tea\"}]",
            &["{\"content\":\"likes tea\"}"],
        ),
        // a truncated list still loses only its cut-off item, though its first item
        // parses strictly on its own
        (
            "[{\"content\": \"likes tea\"}, {\"content\": \"trunc",
            &["{\"content\":\"likes tea\"}"],
        ),
        (
            "Sure:\n```json\n[{\"content\": \"likes tea\"}, {\"content\": \"trunc",
            &["{\"content\":\"likes tea\"}"],
        ),
    ]);
}

#[test]
fn json_lines_answers_yield_every_object() {
    const A: &str = "{\"a\":1}";
    const B: &str = "{\"b\":2}";
    assert_items(&[
        ("{\"a\":1}\n{\"b\":2}", &[A, B]),
        ("{\"a\": 1}\r\n\r\n{\"b\": 2}\n", &[A, B]),
        ("{\"a\":1},\n{\"b\":2},", &[A, B]),
        ("{\"a\":1} {\"b\":2}{\"c\":3}", &[A, B, "{\"c\":3}"]),
        ("{'a': 1}\n{b: 2,}", &[A, B]),
        ("```json\n{\"a\": 1}\n{\"b\": 2}\n```\nDone.", &[A, B]),
        ("Here:\n{\"a\": 1}\n{\"b\": 2}\nThat's all.", &[A, B]),
        // the last line cut off is dropped like any cut-off last item
        ("{\"a\":1}\n{\"b\":2}\n{\"c\": \"cu", &[A, B]),
        // a first object with a list key holding an array is a wrapper: its list is
        // the answer, whatever follows
        ("{\"memories\": [1]}\n{\"b\": 2}", &["1"]),
        (
            "{\"memories\": [{\"content\":\"a\"}]}\n{\"note\": 1}",
            &["{\"content\":\"a\"}"],
        ),
        ("{\"Items\": [{\"a\": 1}]},\n{\"b\": 2}", &[A]),
        // a list key holding something else does not make a wrapper
        (
            "{\"memories\": \"none\"}\n{\"b\": 2}",
            &["{\"memories\":\"none\"}", B],
        ),
        ("{\"data\": null}\n{\"b\": 2}", &["{\"data\":null}", B]),
        // only objects side by side: prose or another kind of value ends the run
        ("{\"a\": 1} and {\"b\": 2}", &[A]),
        ("{\"a\": 1}\n[{\"b\": 2}]", &[A]),
        ("{\"a\": 1}\n{oops}\n{\"b\": 2}", &[A]),
    ]);
    // `extract` still answers with the first object.
    assert_eq!(extract("{\"a\":1}\n{\"b\":2}"), Ok(json(A)));
    // At most MAX_CANDIDATES objects are collected.
    let many = "{\"a\":1}\n".repeat(MAX_CANDIDATES + 10);
    assert_eq!(extract_items(&many).map(|v| v.len()), Ok(MAX_CANDIDATES));
}

#[test]
fn numbers_beyond_f64_are_handed_out_as_null() {
    // The text is valid JSON, but serde_json (and every f64 reader) rejects it.
    for (text, expected) in [
        ("[1e400]", "[null]"),
        (
            "{\"n\": -1e400, \"m\": [2e308, 1e308]}",
            "{\"n\":null,\"m\":[null,1e308]}",
        ),
        ("```json\n[1E+999]\n```", "[null]"),
        ("Here: {\"n\": 1e400} ok", "{\"n\":null}"),
        ("`````````,``````json\n9e999", "null"),
        (
            "[1e-400, 12345678901234567890]",
            "[1e-400,12345678901234567890]",
        ),
    ] {
        let value = extract(text).unwrap();
        assert_eq!(value.to_json_string(), expected, "{text:?}");
        assert!(serde_json::from_str::<serde_json::Value>(expected).is_ok());
    }
    // `parse_strict` follows the grammar, which has no range.
    assert!(parse_strict("[1e400]").is_ok());
}

#[test]
fn says_why_when_there_is_nothing() {
    assert_eq!(extract(""), Err(JsonError::Empty));
    assert_eq!(extract(" \n\t"), Err(JsonError::Empty));
    assert_eq!(
        extract("I could not find any memories."),
        Err(JsonError::NotFound)
    );
    assert!(matches!(extract("[see above]"), Err(JsonError::Invalid(_))));
    assert!(matches!(
        extract("```json\nnot json\n```"),
        Err(JsonError::Invalid(_))
    ));
}

#[test]
fn items_come_from_arrays_list_keys_or_single_objects() {
    let s = |t: &str| Value::String(String::from(t));
    let table: &[(&str, Vec<Value>)] = &[
        ("[\"a\", \"b\"]", vec![s("a"), s("b")]),
        ("{\"memories\": [\"a\"]}", vec![s("a")]),
        ("{\"count\": 1, \"Items\": [\"b\"]}", vec![s("b")]),
        ("{\"results\": [\"c\"], \"data\": [\"d\"]}", vec![s("c")]),
        ("{\"data\": [\"d\"]}", vec![s("d")]),
        (
            "{\"memories\": \"none\"}",
            vec![json("{\"memories\":\"none\"}")],
        ),
        ("{\"content\": \"x\"}", vec![json("{\"content\":\"x\"}")]),
        ("null", vec![]),
        ("```json\n[]\n```", vec![]),
    ];
    for (text, expected) in table {
        assert_eq!(extract_items(text).as_ref(), Ok(expected), "{text:?}");
    }
    assert_eq!(
        extract_items("\"just text\""),
        Err(JsonError::NotAList("string"))
    );
    assert_eq!(extract_items("3"), Err(JsonError::NotAList("number")));
}

#[test]
fn candidate_search_is_bounded_on_bracket_storms() {
    let storm = "[x".repeat(50_000);
    assert!(extract(&storm).is_err());
    let storm = "{".repeat(50_000);
    assert!(extract(&storm).is_err());
}
