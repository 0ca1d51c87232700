//! A model's answer through the tool-plan reader and the stream gate
//! (`evolve_core::tool_plan`).
//!
//! Invariants beyond "no panic": every call names an offered tool and carries a JSON
//! object as arguments that `serde_json` reads; an answer that is no plan passes the gate
//! whole and in order, whatever its pieces.
#![no_main]

use evolve_core::tool_plan::{parse, PlanGate};
use libfuzzer_sys::fuzz_target;

const OFFERED: [&str; 2] = ["read_file", "get_time"];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let plan = parse(text, &OFFERED);
    for call in &plan.calls {
        assert!(OFFERED.contains(&call.name.as_str()));
        let args: serde_json::Value =
            serde_json::from_str(&call.arguments).expect("arguments are JSON");
        assert!(args.is_object(), "{:?}", call.arguments);
    }
    let mut gate = PlanGate::new(OFFERED.iter().map(|s| s.to_string()).collect());
    let mut shown = String::new();
    let step = 1 + data.first().map_or(0, |b| usize::from(*b % 16));
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + step).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        shown.push_str(&gate.push(&text[from..to]));
        from = to;
    }
    shown.push_str(&gate.finish(!plan.calls.is_empty()));
    if plan.calls.is_empty() {
        assert_eq!(shown, text);
    }
});
