//! Property tests: no input makes the JSON readers panic, whatever `repair` returns is
//! standard JSON, and valid JSON comes back unchanged.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

use super::*;

fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(Number::from(n))),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((any::<String>(), inner), 0..8).prop_map(Value::Object),
        ]
    })
}

fn any_container() -> impl Strategy<Value = Value> {
    any_value().prop_map(|v| match v {
        v @ (Value::Array(_) | Value::Object(_)) => v,
        leaf => Value::Array(alloc::vec![leaf]),
    })
}

/// Text made of the characters JSON and its damaged forms are made of.
fn jsonish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
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
            Just("\\u"),
            Just("/"),
            Just("*"),
            Just("a"),
            Just("1"),
            Just("-"),
            Just("."),
            Just("e"),
            Just("true"),
            Just("None"),
            Just("NULL"),
            Just("Infinity"),
            Just("9e999"),
            Just("```"),
            Just("```json\n"),
            Just("\u{1}"),
            Just("茶"),
        ],
        0..64,
    )
    .prop_map(|parts| parts.concat())
}

/// Everything the module offers, on one input; panics only through a broken invariant.
fn exercise(text: &str) {
    let _ = parse_strict(text);
    // Whatever `extract` hands out, the shell's serde_json must read.
    if let Ok(value) = extract(text) {
        let out = value.to_json_string();
        assert!(
            serde_json::from_str::<serde_json::Value>(&out).is_ok(),
            "extract of {text:?} gave {out:?}, which serde_json rejects"
        );
    }
    if let Ok(items) = extract_items(text) {
        for item in items {
            let out = item.to_json_string();
            assert!(
                serde_json::from_str::<serde_json::Value>(&out).is_ok(),
                "extract_items of {text:?} gave {out:?}, which serde_json rejects"
            );
        }
    }
    if let Some(repaired) = repair(text) {
        assert!(
            parse_strict(&repaired).is_ok(),
            "repair of {text:?} gave {repaired:?}"
        );
        assert!(
            serde_json::from_str::<serde_json::Value>(&repaired).is_ok(),
            "serde_json rejects {repaired:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        exercise(&text);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn jsonish_text_never_panics_and_repairs_parse(text in jsonish()) {
        exercise(&text);
    }

    #[test]
    fn numbers_of_any_size_come_out_as_serde_json_reads_them(
        number in "[+-]?[0-9]{0,40}(\\.[0-9]{0,40})?([eE][+-]?[0-9]{0,4})?",
    ) {
        let text = ["[", &number, "]"].concat();
        exercise(&text);
        // Strict-valid numbers are always repaired into something, null at worst.
        if parse_strict(&text).is_ok() {
            prop_assert!(repair(&text).is_some());
            prop_assert!(extract(&text).is_ok());
        }
    }

    #[test]
    fn valid_json_round_trips_through_extract(value in any_value()) {
        let text = value.to_json_string();
        prop_assert_eq!(parse_strict(&text), Ok(value.clone()));
        prop_assert_eq!(extract(&text), Ok(value.clone()));
        prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        let fenced = ["Here it is:\n```json\n", &text, "\n```\nDone."].concat();
        prop_assert_eq!(extract(&fenced), Ok(value));
    }

    #[test]
    fn every_truncation_of_valid_json_is_repaired(value in any_container()) {
        let text = value.to_json_string();
        let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
        for cut in cuts {
            let prefix = text.get(..cut).unwrap_or_default().to_owned();
            let repaired = repair(&prefix);
            prop_assert!(repaired.is_some(), "no repair for {:?}", prefix);
            let repaired = repaired.unwrap_or_default();
            prop_assert!(parse_strict(&repaired).is_ok(), "{:?}", repaired);
        }
        prop_assert_eq!(repair(&text), Some(text.clone()));
    }
}
