//! Evolve's side of the side-by-side benchmark against tea-agent 0.17.6
//! (`bench/side-by-side/run.sh`): memory selection at 1 000 / 10 000 / 100 000 memories
//! and the history build of a 2 000-message session under a 32k window, on the very
//! data tea-agent is seeded with (written by `bench/side-by-side/gen_data.py`).
//!
//! `EVOLVE_SIDE_DATA=DIR cargo bench -p evolve-core --bench sidebyside`; without the
//! variable it says so and does nothing. Prints one `SIDE …` line of key=value pairs per
//! measure (run.sh parses them) besides the harness's human-readable lines.
mod harness;

use std::hint::black_box;
use std::time::Duration;

use evolve_core::history::{build, Budget, BuildInput, HistoryConfig, L2Entry, Message, ToolCall};
use evolve_core::memory::{select, Category, Memory, MemoryConfig, Priority};
use evolve_core::text::{FallbackTokenizer, KeywordSet};
use evolve_core::DAY;
use serde_json::Value;

const NOW: i64 = 20_000 * DAY;

fn read(dir: &str, name: &str) -> String {
    std::fs::read_to_string(format!("{dir}/{name}"))
        .unwrap_or_else(|e| panic!("cannot read {dir}/{name}: {e}"))
}

fn lines(dir: &str, name: &str) -> Vec<Value> {
    read(dir, name)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

fn memory(i: usize, v: &Value) -> Memory {
    let category = match v["category"].as_str().unwrap_or("general") {
        "instruction" => Category::Instruction,
        "preference" => Category::Preference,
        "reminder" => Category::Reminder,
        "fact" => Category::Fact,
        _ => Category::General,
    };
    let created = NOW - v["age_days"].as_i64().unwrap_or(0) * DAY;
    let mut m = Memory::new(text(v, "content"), category, created, &FallbackTokenizer);
    m.id = i as u64 + 1;
    m.priority =
        Priority::from_u8(v["priority"].as_u64().unwrap_or(2) as u8).unwrap_or(Priority::Low);
    m.importance = v["importance"].as_u64().unwrap_or(3) as u8;
    m
}

fn message(v: &Value) -> Message {
    match v["role"].as_str().unwrap_or("") {
        "user" => Message::user(text(v, "content")),
        "tool" => Message::tool_result(text(v, "call_id"), text(v, "name"), text(v, "content")),
        _ => match v["calls"].as_array() {
            Some(calls) => Message::assistant_calls(
                text(v, "content"),
                calls
                    .iter()
                    .map(|c| ToolCall {
                        id: text(c, "id"),
                        name: text(c, "name"),
                        arguments: text(c, "arguments"),
                    })
                    .collect(),
            ),
            None => Message::assistant(text(v, "content")),
        },
    }
}

fn main() {
    let Ok(dir) = std::env::var("EVOLVE_SIDE_DATA") else {
        println!(
            "sidebyside: set EVOLVE_SIDE_DATA (bench/side-by-side/run.sh does); nothing measured"
        );
        return;
    };
    let budget = Duration::from_secs(
        std::env::var("EVOLVE_SIDE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
    );

    let cfg = MemoryConfig::default();
    let query = KeywordSet::of(&FallbackTokenizer, &read(&dir, "query.txt"));
    let all: Vec<Memory> = lines(&dir, "memories.jsonl")
        .iter()
        .enumerate()
        .map(|(i, v)| memory(i, v))
        .collect();
    for n in [1_000, 10_000, 100_000]
        .into_iter()
        .filter(|&n| n <= all.len())
    {
        let ms = &all[..n];
        let sel = select(ms, &query, NOW, &cfg);
        let (median, samples) =
            harness::bench_samples(&format!("select {n} memories"), budget, || {
                select(black_box(ms), &query, NOW, &cfg)
            });
        println!(
            "SIDE product=evolve measure=select n={n} median_ns={} samples={samples} considered={} chosen={}",
            median.as_nanos(),
            sel.considered,
            sel.chosen.len()
        );
    }

    let extras: Value = serde_json::from_str(&read(&dir, "extras.json")).expect("extras.json");
    let l1: Vec<Message> = lines(&dir, "session.jsonl").iter().map(message).collect();
    let l2: Vec<L2Entry> = extras["ring"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|e| L2Entry {
                    user: text(e, "user"),
                    assistant: text(e, "assistant"),
                    thinking: text(e, "thinking"),
                    files: vec![],
                    turn: 0,
                })
                .collect()
        })
        .unwrap_or_default();
    let system = text(&extras, "system");
    let memory_block = text(&extras, "memory_block");
    let summary = text(&extras, "summary");
    let query = l1.last().map(|m| m.content.clone()).unwrap_or_default();
    let input = BuildInput {
        system_prompt: &system,
        memory_block: Some(&memory_block),
        summary: Some(&summary),
        l2: &l2,
        query: &query,
        l1: &l1,
        budget: Budget {
            context_window: 32_768,
            reserved_output: 4_096,
        },
        ..BuildInput::default()
    };
    let hcfg = HistoryConfig::default();
    let built = build(&input, &hcfg, &FallbackTokenizer);
    let (median, samples) = harness::bench_samples(
        &format!("build, {} messages, 32k window", l1.len()),
        budget,
        || build(black_box(&input), &hcfg, &FallbackTokenizer),
    );
    println!(
        "SIDE product=evolve measure=history messages={} median_ns={} samples={samples} out_messages={} tokens={}",
        l1.len(),
        median.as_nanos(),
        built.messages.len(),
        built.estimated_tokens
    );
}
