//! Damaged model JSON through the core's JSON reader (`evolve_core::json`): the strict
//! parser, the repair and the extraction from prose.
//!
//! Invariants beyond "no panic": a repair, when there is one, is standard JSON that the
//! strict parser and `serde_json` read, and repairing it again changes nothing; a
//! strictly parsed value writes out as text that parses back to the same value; what
//! `extract` and `extract_items` hand out is JSON that `serde_json` reads.
#![no_main]

use evolve_core::json::{extract, extract_items, parse_strict, repair};
use libfuzzer_sys::fuzz_target;

fn serde_reads(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();

    if let Some(repaired) = repair(text) {
        assert!(
            parse_strict(&repaired).is_ok(),
            "repair of {text:?} gave {repaired:?}"
        );
        assert!(
            serde_reads(&repaired),
            "serde_json rejects the repair {repaired:?}"
        );
        assert_eq!(
            repair(&repaired).as_deref(),
            Some(repaired.as_str()),
            "repairing a repair changed it"
        );
    }

    if let Ok(value) = parse_strict(text) {
        let written = value.to_json_string();
        assert_eq!(
            parse_strict(&written),
            Ok(value),
            "{text:?} wrote {written:?}"
        );
    }

    if let Ok(value) = extract(text) {
        let out = value.to_json_string();
        assert!(serde_reads(&out), "extract of {text:?} gave {out:?}");
    }

    if let Ok(items) = extract_items(text) {
        for item in items {
            let out = item.to_json_string();
            assert!(serde_reads(&out), "extract_items of {text:?} gave {out:?}");
        }
    }
});
