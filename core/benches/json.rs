//! Benchmarks of `json`: repairing and extracting a ~100 KB damaged model answer (a
//! memory-extraction reply: prose, then a fenced block holding a large array of
//! objects with single quotes, trailing commas, raw control characters, truncated at
//! the end), and strict parsing of a valid document of the same size.
mod harness;

use std::time::Duration;

use evolve_core::json::{extract, extract_items, parse_strict, repair};
use harness::Rng;

const TARGET_BYTES: usize = 100 * 1024;

const WORDS: &[&str] = &[
    "user", "prefers", "green", "tea", "rust", "project", "deadline", "friday", "uses", "neovim",
    "likes", "short", "answers", "喜欢", "喝茶", "周五", "截止", "架构", "决策",
];
const CATEGORIES: &[&str] = &["instruction", "preference", "reminder", "fact", "general"];

fn sentence(rng: &mut Rng) -> String {
    let n = 4 + rng.below(12) as usize;
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// One extracted memory as a model writes it; `damaged` uses the usual mistakes.
fn item(rng: &mut Rng, i: usize, damaged: bool) -> String {
    let content = sentence(rng);
    let category = CATEGORIES[rng.below(CATEGORIES.len() as u64) as usize];
    let priority = rng.below(4);
    if !damaged {
        return format!(
            "  {{\"content\": \"{content}\", \"category\": \"{category}\", \"priority\": {priority}, \"tags\": [\"t{i}\", \"x\"]}}"
        );
    }
    match i % 4 {
        0 => format!(
            "  {{'content': '{content}', 'category': '{category}', 'priority': {priority}, 'tags': ['t{i}', 'x',],}}"
        ),
        1 => format!(
            "  {{content: \"{content}\tline\nbreak\", category: \"{category}\", priority: {priority}, tags: [\"t{i}\"], pinned: True}}"
        ),
        2 => format!(
            "  {{\"content\": \"{content}\", \"category\": \"{category}\", \"priority\": {priority}, \"expires_at\": None,}}"
        ),
        _ => format!(
            "  // a comment\n  {{\"content\": \"{content}\", \"category\": \"{category}\", \"priority\": {priority}, \"tags\": [\"t{i}\", \"x\"]}}"
        ),
    }
}

fn items(damaged: bool) -> String {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut body = String::from("[\n");
    let mut i = 0;
    while body.len() < TARGET_BYTES {
        body.push_str(&item(&mut rng, i, damaged));
        body.push_str(",\n");
        i += 1;
    }
    if damaged {
        // The model hit its token limit in the middle of an item.
        body.push_str("  {\"content\": \"user wants the report by mon");
    } else {
        body.push_str("  {\"content\": \"last\"}\n]");
    }
    body
}

fn main() {
    let damaged_json = items(true);
    let damaged_answer = format!(
        "Sure! I went through the conversation and found these memories worth keeping:\n\n```json\n{damaged_json}"
    );
    let valid = items(false);
    println!(
        "damaged answer {} bytes, valid document {} bytes",
        damaged_answer.len(),
        valid.len()
    );
    let n_items = extract_items(&damaged_answer).map(|v| v.len()).unwrap_or(0);
    let n_valid = parse_strict(&valid)
        .ok()
        .and_then(|v| v.as_array().map(<[_]>::len))
        .unwrap_or(0);
    println!("damaged answer yields {n_items} items; valid document has {n_valid}");
    assert!(n_items > 0 && n_valid > 0);

    let budget = Duration::from_secs(3);
    harness::bench("extract (100 KB damaged answer)", budget, || {
        extract(&damaged_answer)
    });
    harness::bench("extract_items (100 KB damaged answer)", budget, || {
        extract_items(&damaged_answer)
    });
    harness::bench("repair (100 KB damaged JSON alone)", budget, || {
        repair(&damaged_json)
    });
    harness::bench("parse_strict (100 KB valid)", budget, || {
        parse_strict(&valid)
    });
    harness::bench("extract (100 KB valid)", budget, || extract(&valid));
    let value = parse_strict(&valid).unwrap_or(evolve_core::json::Value::Null);
    harness::bench("to_json_string (100 KB value)", budget, || {
        value.to_json_string()
    });
}
