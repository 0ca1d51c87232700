//! Memory recall, measured on generated conversation stores (figures printed, never
//! asserted): for each relevance system, the share of the evidence it puts in the prompt
//! (recall@10 and @30, questions with any evidence found), what it injects (characters
//! per question, and for questions nothing answers), follow-ups apart, and its median
//! time per query.
//!
//! The stores (`data/`): 1 000 and 10 000 memories, English and Chinese, each a long
//! conversation history about a few fictional people, generated from a fixed seed — the
//! same figures on every run. Memories are built as the store builds them:
//! `Memory::new` with the shell's tokenizer (`evolve_mini::text`, jieba for Chinese).
//!
//! The systems (`system/`): a list behind one trait; `today` (the product's selection)
//! is the reference whose injected characters the `@chars` rows are held to.
//!
//! Then the dialog stores (`dialog.rs`): every memory a turn linked to the one before
//! it, questions answered by the reply to a turn and questions naming who said
//! something, with the reply and subject rules before and after and both fusions.
//!
//! Run: `cargo bench -p evolve-mini --bench recall`. `EVOLVE_BENCH_RECALL_SAMPLES=N`
//! also prints N questions of each store with their previous turn and evidence, to see
//! what the data looks like.

mod data;
mod dialog;
mod report;
mod rng;
mod system;

use std::time::Instant;

// The shell's tokenizer, as the store uses it (`crate::text` for the modules below).
use evolve_mini::text;

use data::{Language, Mix};
use report::Measured;
use system::{held_to, Cut, MAX_CHOSEN};
use text::ShellTokenizer;

/// (memories, people): the people stay few; the larger store has more chit-chat around
/// each of them, as a store does after years.
const SIZES: [(usize, usize); 2] = [(1_000, 8), (10_000, 24)];

/// Questions per store: 900 + 150 + 150.
const MIX: Mix = Mix {
    direct: 900,
    follow_ups: 150,
    no_answer: 150,
};

const LANGUAGES: [&Language; 2] = [&data::en::ENGLISH, &data::zh::CHINESE];

fn main() {
    let started = Instant::now();
    let tokenizer = ShellTokenizer::new(None);
    let samples: usize = std::env::var("EVOLVE_BENCH_RECALL_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for (size, people) in SIZES {
        let mut stores = Vec::new();
        let mut results = Vec::new();
        for (l, lang) in LANGUAGES.into_iter().enumerate() {
            let seed = 0x5eed_0000 ^ ((size as u64) << 8) ^ l as u64;
            let data = data::generate(lang, size, people, &MIX, &tokenizer, seed);
            stores.push(report::describe(&data));
            if samples > 0 {
                report::print_samples(&data, samples);
            }
            // The characters the reference (the first entry) injected, per question.
            let mut budgets: Vec<usize> = Vec::with_capacity(data.cases.len());
            for (e, mut entry) in system::lineup(&tokenizer).into_iter().enumerate() {
                assert!(e > 0 || entry.cut == Cut::None, "the reference is not cut");
                entry.system.prepare(&data.memories);
                let mut measured = Measured::new(entry.name(), data.lang);
                // Warm-up (caches, the dictionary's pages).
                if let Some(case) = data.cases.first() {
                    std::hint::black_box(entry.system.recall(&case.question, &data.memories));
                }
                for (c, case) in data.cases.iter().enumerate() {
                    let t = Instant::now();
                    let mut chosen = entry.system.recall(&case.question, &data.memories);
                    let took = t.elapsed();
                    chosen.truncate(MAX_CHOSEN);
                    if entry.cut == Cut::TodaysChars {
                        chosen = held_to(&chosen, &data.memories, budgets[c]);
                    }
                    if e == 0 {
                        budgets.push(report::chars(&chosen, &data.memories));
                    }
                    measured.add(case, &chosen, &data, took);
                }
                results.push(measured);
            }
        }
        report::print_tables(size, &stores, &results);
    }
    dialog::run(&tokenizer);
    println!("\n(whole run: {:.1} s)", started.elapsed().as_secs_f64());
}
