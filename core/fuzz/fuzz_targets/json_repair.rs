//! Fuzzes the JSON readers: no input may panic, whatever `repair` returns must be
//! standard JSON that the strict parser and `serde_json` accept and that serializes
//! back unchanged, and whatever `extract`/`extract_items` hand out `serde_json` reads.
#![no_main]

use evolve_core::json::{extract, extract_items, parse_strict, repair, Value};
use libfuzzer_sys::fuzz_target;

/// Panics unless `serde_json` reads the JSON text of `value`.
fn serde_reads(value: &Value, from: &str) {
    let text = value.to_json_string();
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
        panic!("serde_json rejects {text:?} ({e}), handed out for {from:?}");
    }
}

/// True when `value` holds a number too large for f64 (depth is at most `MAX_DEPTH`).
fn has_overflow(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.overflows_f64(),
        Value::Array(items) => items.iter().any(has_overflow),
        Value::Object(members) => members.iter().any(|(_, v)| has_overflow(v)),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(value) = parse_strict(&text) {
        // A valid document survives serialization unchanged, and extraction too, but
        // for numbers beyond f64, which extraction hands out as null.
        let again = value.to_json_string();
        assert_eq!(parse_strict(&again).as_ref(), Ok(&value));
        let extracted = extract(&again);
        if has_overflow(&value) {
            assert!(extracted.is_ok());
        } else {
            assert_eq!(extracted.as_ref(), Ok(&value));
        }
    }
    if let Some(repaired) = repair(&text) {
        let value = parse_strict(&repaired)
            .unwrap_or_else(|e| panic!("repair gave invalid JSON ({e}): {repaired:?}"));
        assert_eq!(value.to_json_string(), repaired);
        serde_reads(&value, &text);
    }
    if let Ok(value) = extract(&text) {
        serde_reads(&value, &text);
    }
    if let Ok(items) = extract_items(&text) {
        for item in &items {
            serde_reads(item, &text);
        }
    }
});
