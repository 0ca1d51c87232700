//! Fuzzes the JSON readers: no input may panic, and whatever `repair` returns must be
//! standard JSON that the strict parser accepts and that serializes back unchanged.
#![no_main]

use evolve_core::json::{extract, extract_items, parse_strict, repair};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(value) = parse_strict(&text) {
        // A valid document survives serialization and extraction unchanged.
        let again = value.to_json_string();
        assert_eq!(parse_strict(&again).as_ref(), Ok(&value));
        assert_eq!(extract(&again).as_ref(), Ok(&value));
    }
    if let Some(repaired) = repair(&text) {
        let value = parse_strict(&repaired)
            .unwrap_or_else(|e| panic!("repair gave invalid JSON ({e}): {repaired:?}"));
        assert_eq!(value.to_json_string(), repaired);
    }
    let _ = extract(&text);
    let _ = extract_items(&text);
});
