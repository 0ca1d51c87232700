//! Fuzzes the SKILL.md parser: no input may panic, and an accepted file has a valid
//! name and a non-empty description within the limits.
#![no_main]

use evolve_core::skill::{parse_skill_md, validate_name, MAX_DESCRIPTION_CHARS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(doc) = parse_skill_md(&text) {
        assert!(validate_name(&doc.name).is_ok(), "{:?}", doc.name);
        assert!(!doc.description.is_empty());
        assert!(doc.description.chars().count() <= MAX_DESCRIPTION_CHARS);
    }
});
