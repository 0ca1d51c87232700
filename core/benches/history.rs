//! Benchmarks of `history`: building a 200- and a 2 000-message session under a 32k
//! window (context 32 768, 4 096 reserved for the answer) with a full L2 ring of 50
//! entries, and cutting a 1 MB tool output. Target (ARCHITECTURE.md § Design
//! constants): < 2 ms for 2 000 messages.
mod harness;

use std::hint::black_box;
use std::time::Duration;

use evolve_core::history::{
    build, entry_keywords, estimate_messages_tokens, is_valid_sequence, repair_sequence, select_l2,
    truncate_tool_output, Budget, BuildInput, HistoryConfig, L2Entry, Message, ToolCall,
};
use evolve_core::text::{FallbackTokenizer, KeywordSet};
use harness::Rng;

const EN: &[&str] = &[
    "the", "build", "fails", "when", "cargo", "runs", "tests", "memory", "history", "budget",
    "tokens", "file", "path", "config", "server", "request", "error", "retry", "stream", "model",
    "rust", "trait", "lifetime", "borrow", "async", "thread", "queue", "index", "cache", "hash",
];
const ZH: &[&str] = &[
    "我们", "需要", "检查", "配置", "文件", "内存", "历史", "压缩", "模型", "请求", "错误", "重试",
    "工具", "输出", "记忆", "任务",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let cjk = rng.below(4) == 0;
    let mut s = String::new();
    for i in 0..words {
        if cjk {
            s.push_str(ZH[rng.below(ZH.len() as u64) as usize]);
            if i % 8 == 7 {
                s.push('，');
            }
        } else {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(EN[rng.below(EN.len() as u64) as usize]);
        }
    }
    s
}

fn tool_output(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 80);
    let mut line = 0;
    while s.len() < bytes {
        s.push_str(&format!("{line:5}: {}\n", sentence(rng, 8)));
        line += 1;
    }
    s
}

/// A realistic session of about `n` messages: user questions, tool rounds with
/// outputs of a few KB in one turn out of three, replies; a quarter of the texts CJK.
fn session(n: usize, rng: &mut Rng) -> Vec<Message> {
    let mut m = Vec::with_capacity(n + 8);
    let mut call = 0;
    while m.len() < n {
        let words = 10 + rng.below(40) as usize;
        m.push(Message::user(sentence(rng, words)));
        if rng.below(3) == 0 {
            let calls: Vec<ToolCall> = (0..1 + rng.below(2))
                .map(|_| {
                    call += 1;
                    ToolCall {
                        id: format!("call_{call}"),
                        name: "read_file".into(),
                        arguments: format!("{{\"path\":\"src/mod{call}.rs\"}}"),
                    }
                })
                .collect();
            m.push(Message::assistant_calls(sentence(rng, 12), calls.clone()));
            for c in &calls {
                let size = 1_000 + rng.below(5_000) as usize;
                m.push(Message::tool_result(
                    c.id.clone(),
                    c.name.clone(),
                    tool_output(rng, size),
                ));
            }
        }
        let words = 40 + rng.below(150) as usize;
        m.push(Message::assistant(sentence(rng, words)));
    }
    m.push(Message::user(sentence(rng, 25)));
    m
}

fn ring(rng: &mut Rng) -> Vec<L2Entry> {
    (0..50)
        .map(|i| L2Entry {
            user: sentence(rng, 20),
            assistant: sentence(rng, 80),
            thinking: sentence(rng, 30),
            files: if i % 5 == 0 {
                vec![format!("src/mod{i}.rs")]
            } else {
                vec![]
            },
            turn: 0,
        })
        .collect()
}

fn main() {
    let cfg = HistoryConfig::default();
    let tok = FallbackTokenizer;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let l2 = ring(&mut rng);
    let system = format!(
        "You are Evolve, a personal assistant. {}",
        sentence(&mut rng, 250)
    );
    let memory = (0..30)
        .map(|_| format!("- {}", sentence(&mut rng, 15)))
        .collect::<Vec<_>>()
        .join("\n");
    let summary = sentence(&mut rng, 300);
    let budget = Budget {
        context_window: 32_768,
        reserved_output: 4_096,
    };
    let budget_time = Duration::from_secs(2);

    for n in [200, 2_000] {
        let l1 = session(n, &mut rng);
        let query = l1.last().map(|m| m.content.clone()).unwrap_or_default();
        let input = BuildInput {
            system_prompt: &system,
            memory_block: Some(&memory),
            summary: Some(&summary),
            l2: &l2,
            query: &query,
            l1: &l1,
            budget,
            ..BuildInput::default()
        };
        let built = build(&input, &cfg, &tok);
        assert!(is_valid_sequence(&built.messages).is_ok());
        println!(
            "session of {} messages → {} messages, {} tokens (target {}), steps {:?}",
            l1.len(),
            built.messages.len(),
            built.estimated_tokens,
            built.trim_target,
            built.trimmed
        );
        harness::bench(
            &format!("build, {} messages, 32k window", l1.len()),
            budget_time,
            || build(black_box(&input), &cfg, &tok),
        );
        let keywords: Vec<KeywordSet> = l2.iter().map(|e| entry_keywords(e, &tok)).collect();
        let cached = BuildInput {
            l2_keywords: &keywords,
            ..input
        };
        harness::bench(
            &format!("build, {} messages, ring keywords cached", l1.len()),
            budget_time,
            || build(black_box(&cached), &cfg, &tok),
        );
        harness::bench(
            &format!("estimate only, {} messages", l1.len()),
            budget_time,
            || estimate_messages_tokens(black_box(&l1)),
        );
        harness::bench(
            &format!("repair (clone + check), {} messages", l1.len()),
            budget_time,
            || {
                let mut v = black_box(&l1).clone();
                repair_sequence(&mut v)
            },
        );
    }
    harness::bench("select_l2, 50 entries", budget_time, || {
        select_l2(
            black_box(&l2),
            "the build fails when cargo runs tests 配置文件",
            &tok,
            &cfg,
        )
    });
    let big = tool_output(&mut rng, 1 << 20);
    harness::bench(
        "truncate_tool_output, 1 MB → 128 KiB",
        budget_time,
        || truncate_tool_output(black_box(&big), cfg.max_tool_output_bytes).len(),
    );
}
