//! Benchmarks of `text`: fallback tokenizer throughput (English, Chinese, mixed), keyword
//! sets, English stemming, and the token estimate. Prints medians and MB/s; asserts nothing.
mod harness;

use std::hint::black_box;
use std::time::Duration;

use evolve_core::text::{
    estimate_text_tokens, f1, stem_english, FallbackTokenizer, KeywordSet, Tokenizer,
};
use harness::{bench, Rng};

const EN: &[&str] = &[
    "the",
    "server",
    "backup",
    "memory",
    "agent",
    "runs",
    "nightly",
    "with",
    "restic",
    "and",
    "keeps",
    "seven",
    "snapshots",
    "user",
    "prefers",
    "green",
    "tea",
    "raspberry",
    "pi",
    "debian",
    "config",
    "file",
    "workspace",
    "permission",
    "level",
    "tool",
    "call",
    "model",
];
const ZH: &[&str] = &[
    "用户",
    "喜欢",
    "绿茶",
    "服务器",
    "每晚",
    "备份",
    "记忆",
    "工具",
    "权限",
    "模型",
    "配置",
    "文件",
    "的",
    "了",
    "在",
    "我们",
    "这个",
    "运行",
    "树莓派",
    "系统",
    "提示词",
    "技能",
];

fn text(words: &[&str], sep: &str, bytes: usize, rng: &mut Rng) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(words[rng.below(words.len() as u64) as usize]);
        s.push_str(if rng.below(12) == 0 { ". " } else { sep });
    }
    s
}

fn throughput(name: &str, input: &str) {
    let count = |s: &str| {
        let mut n = 0usize;
        FallbackTokenizer.for_each_keyword(s, &mut |_| n += 1);
        n
    };
    let median = bench(name, Duration::from_secs(2), || count(black_box(input)));
    let mbps = input.len() as f64 / median.as_secs_f64() / 1e6;
    println!("{:<48} {mbps:>8.1} MB/s, {} keywords", "", count(input));
}

fn main() {
    let mut rng = Rng(0x5eed);
    let en = text(EN, " ", 1 << 20, &mut rng);
    let zh = text(ZH, "", 1 << 20, &mut rng);
    let mut cut = 1 << 19;
    while !zh.is_char_boundary(cut) {
        cut -= 1;
    }
    let mixed: String = en[..1 << 19].to_string() + &zh[..cut];

    println!("fallback tokenizer over 1 MiB of text");
    throughput("tokenize English 1 MiB", &en);
    throughput("tokenize Chinese 1 MiB", &zh);
    throughput("tokenize mixed 1 MiB", &mixed);

    let short = "Which tea does the user like? Also check the Raspberry Pi server backup";
    bench(
        "keyword set of a 70-char query",
        Duration::from_secs(1),
        || KeywordSet::of(&FallbackTokenizer, black_box(short)),
    );
    let a = KeywordSet::of(&FallbackTokenizer, &en[..400]);
    let b = KeywordSet::of(&FallbackTokenizer, &en[400..800]);
    bench("f1 of two ~40-keyword sets", Duration::from_secs(1), || {
        f1(black_box(a.as_slice()), black_box(b.as_slice()))
    });

    // The stemmer's test fixture: dictionary words, inflected forms and the tricky cases.
    let words: Vec<&str> = include_str!("../src/text/stem_fixture.txt")
        .lines()
        .filter_map(|line| line.split(' ').next())
        .cycle()
        .take(10_000)
        .collect();
    let median = bench("stem 10 000 English words", Duration::from_secs(2), || {
        words
            .iter()
            .map(|w| stem_english(black_box(w)).len())
            .sum::<usize>()
    });
    println!(
        "{:<48} {:>8.1} ns/word",
        "",
        median.as_secs_f64() * 1e9 / words.len() as f64
    );
    bench(
        "estimate tokens of 1 MiB mixed",
        Duration::from_secs(1),
        || estimate_text_tokens(black_box(&mixed)),
    );
}
