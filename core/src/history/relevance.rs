//! Which L2 entries (earlier turns of the session) are worth showing for the new user
//! message, and in how much detail (tea-agent `filter_level2_by_relevance`).
//!
//! Decides the score of each entry and its [`Relevance`], which of the tokenizer's
//! keywords count (ASCII ones need 3 letters, tea-agent: "3字母英文") and when a query names
//! an entry's file; leaves the wording of the injected messages to the builder and the
//! splitting of text into keywords to the [`Tokenizer`].

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::{HistoryConfig, L2Entry};
use crate::text::{is_cjk, jaccard, keyword_hash, one_line, KeywordSet, Tokenizer};

/// How much of an L2 entry goes into the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relevance {
    /// The whole user + assistant pair (score ≥ 0.15, or the best entry when none
    /// reached the digest threshold).
    Full,
    /// A one-line digest "User: … → Assistant: …" (0.05 ≤ score < 0.15).
    Digest,
}

/// One L2 entry chosen for the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct L2Pick {
    /// Index into the ring's entries (0 = oldest).
    pub index: usize,
    /// Jaccard score, raised by the file bonus.
    pub score: f32,
    /// Full pair or digest.
    pub relevance: Relevance,
}

/// How many of the entry's files the query names: a file counts when the query
/// contains its whole path, or its last path component if that looks like a file name
/// (has a dot and at least 3 characters, e.g. `main.rs`). Each distinct path counts once.
///
/// Matches are case-sensitive and whole: the text found must not continue a longer
/// name on either side, so `a.rs` is not named by `data.rs`, `b.a.rs`, `a.rsx` or
/// `a.rs.bak`, but is by `src/a.rs`, `` `a.rs` ``, `(a.rs)`, `a.rs:42`, `a.rs.` at the
/// end of a sentence, or `看看a.rs的内容` (Chinese is written without spaces, so a CJK
/// character bounds a name too). See [`continues_name`].
pub fn file_overlap(entry: &L2Entry, query: &str) -> usize {
    let mut n = 0;
    for (i, path) in entry.files.iter().enumerate() {
        let path = path.trim();
        if path.is_empty() || entry.files[..i].iter().any(|p| p.trim() == path) {
            continue;
        }
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let name_counts = name.contains('.') && name.chars().count() >= 3;
        if names_whole(query, path) || (name_counts && names_whole(query, name)) {
            n += 1;
        }
    }
    n
}

/// True when `c` can be part of a file name, so a match next to it is only part of a
/// longer name: letters and digits of alphabetic scripts and `. - _ ~ + @ # $ %`.
/// Whitespace, `/` and `\`, quotes, brackets, other punctuation and CJK characters
/// bound a name.
fn continues_name(c: char) -> bool {
    (c.is_alphanumeric() && !is_cjk(c))
        || matches!(c, '.' | '-' | '_' | '~' | '+' | '@' | '#' | '$' | '%')
}

/// True when `query` contains `needle` as a whole name (see [`file_overlap`]). Dots
/// right after the match count as punctuation when nothing that continues a name
/// follows them ("fix a.rs." names `a.rs`, "a.rs.bak" does not).
fn names_whole(query: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    query.match_indices(needle).any(|(at, _)| {
        let before = query.get(..at).and_then(|s| s.chars().next_back());
        let after = query.get(at + needle.len()..).unwrap_or("");
        let after = after.trim_start_matches('.');
        !before.is_some_and(continues_name) && !after.chars().next().is_some_and(continues_name)
    })
}

/// Adds the hashes of `text`'s keywords that count for relevance: every keyword the
/// tokenizer gives, except ASCII ones shorter than 3 characters. tea-agent
/// extracts "2字中文 + 3字母英文关键词" (Chinese words of 2 characters, English words of
/// at least 3 letters); the tokenizer keeps 2-letter words for other uses (memory
/// selection), but here `go`, `db`, `v2` would make unrelated turns look alike.
fn push_relevance_keywords(tokenizer: &dyn Tokenizer, text: &str, hashes: &mut Vec<u64>) {
    tokenizer.for_each_keyword(text, &mut |k| {
        if !(k.is_ascii() && k.len() < MIN_ASCII_KEYWORD_CHARS) {
            hashes.push(keyword_hash(k));
        }
    });
}

/// Shortest ASCII keyword that counts for relevance (tea-agent: "3字母英文").
const MIN_ASCII_KEYWORD_CHARS: usize = 3;

/// The keyword set of an entry for relevance: user + thinking + assistant, ASCII
/// keywords of at least 3 characters (see [`query_keywords`]).
pub fn entry_keywords(entry: &L2Entry, tokenizer: &dyn Tokenizer) -> KeywordSet {
    let mut hashes = Vec::new();
    for text in [&entry.user, &entry.thinking, &entry.assistant] {
        push_relevance_keywords(tokenizer, text, &mut hashes);
    }
    KeywordSet::from_hashes(hashes)
}

/// The keyword set of the new user message for relevance: the tokenizer's keywords
/// without ASCII ones shorter than 3 characters (tea-agent: "提取 user 消息的
/// 2字中文 + 3字母英文关键词"). Chinese keywords are kept whatever their length.
pub fn query_keywords(query: &str, tokenizer: &dyn Tokenizer) -> KeywordSet {
    let mut hashes = Vec::new();
    push_relevance_keywords(tokenizer, query, &mut hashes);
    KeywordSet::from_hashes(hashes)
}

/// The relevance score of one entry for the query: the Jaccard coefficient of the
/// keyword sets, raised by the file bonus.
///
/// tea-agent writes the bonus as "file_overlap ≥ 1 → min(score, 0.4 + count × 0.1)".
/// Taken literally, `min(score, …)` could only *lower* a score, which contradicts its
/// name ("文件路径额外加权", extra weight for file paths). Our reading: a file named by
/// the query lifts the score to at least `0.4 + 0.1 × count`, capped at 1.0 —
/// `score = max(jaccard, min(0.4 + 0.1 × count, 1.0))` — so an entry that touched a
/// file the user names again is always shown in full.
pub fn score_entry(
    entry_keywords: &KeywordSet,
    query_keywords: &KeywordSet,
    file_overlap: usize,
    cfg: &HistoryConfig,
) -> f32 {
    let mut score = jaccard(query_keywords.as_slice(), entry_keywords.as_slice());
    if file_overlap >= 1 {
        let bonus = cfg.file_bonus_base + cfg.file_bonus_per_file * file_overlap as f32;
        score = score.max(bonus.min(1.0));
    }
    score
}

/// The class of a score: ≥ `relevance_full` (0.15) full pair, ≥ `relevance_digest`
/// (0.05) digest, below: dropped (`None`).
pub fn classify(score: f32, cfg: &HistoryConfig) -> Option<Relevance> {
    if score >= cfg.relevance_full {
        Some(Relevance::Full)
    } else if score >= cfg.relevance_digest {
        Some(Relevance::Digest)
    } else {
        None
    }
}

/// Chooses the L2 entries for the new user message `query`, in ring order (oldest
/// first). When every entry scores below the digest threshold, the best one (the
/// newest among equals) is still shown as a full pair; an empty ring gives nothing.
pub fn select_l2(
    entries: &[L2Entry],
    query: &str,
    tokenizer: &dyn Tokenizer,
    cfg: &HistoryConfig,
) -> Vec<L2Pick> {
    select_l2_cached(entries, &[], query, tokenizer, cfg)
}

/// [`select_l2`] with the entries' keyword sets already computed ([`entry_keywords`]
/// with the same tokenizer, index-aligned with `entries`). Tokenizing the ring is most
/// of the cost of a build and the ring changes by one entry a turn, so the shell can
/// keep these next to the ring. When `keywords` is not as long as `entries` it is
/// ignored and every entry is tokenized here.
pub fn select_l2_cached(
    entries: &[L2Entry],
    keywords: &[KeywordSet],
    query: &str,
    tokenizer: &dyn Tokenizer,
    cfg: &HistoryConfig,
) -> Vec<L2Pick> {
    let query_set = query_keywords(query, tokenizer);
    let cached = keywords.len() == entries.len();
    let mut picks = Vec::new();
    let mut best: Option<(usize, f32)> = None;
    for (index, entry) in entries.iter().enumerate() {
        let computed;
        let keywords = match keywords.get(index).filter(|_| cached) {
            Some(k) => k,
            None => {
                computed = entry_keywords(entry, tokenizer);
                &computed
            }
        };
        let score = score_entry(keywords, &query_set, file_overlap(entry, query), cfg);
        if best.is_none_or(|(_, b)| score >= b) {
            best = Some((index, score));
        }
        if let Some(relevance) = classify(score, cfg) {
            picks.push(L2Pick {
                index,
                score,
                relevance,
            });
        }
    }
    if picks.is_empty() {
        if let Some((index, score)) = best {
            picks.push(L2Pick {
                index,
                score,
                relevance: Relevance::Full,
            });
        }
    }
    picks
}

/// The one-line digest of an entry: "User: xxx… → Assistant: yyy…", each side at most
/// `digest_user_chars` (80) / `digest_assistant_chars` (120) characters.
pub fn digest_line(entry: &L2Entry, cfg: &HistoryConfig) -> String {
    let mut s = String::from("User: ");
    s.push_str(&one_line(&entry.user, cfg.digest_user_chars));
    s.push_str(" → Assistant: ");
    s.push_str(&one_line(&entry.assistant, cfg.digest_assistant_chars));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::FallbackTokenizer;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;

    /// An entry whose keywords are `k0 … k{n-1}` shifted so that exactly `shared` of
    /// them are in the query `k0 … k{q-1}`.
    fn words(range: core::ops::Range<usize>) -> String {
        range
            .map(|i| format!("kw{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn entry_with(user: &str) -> L2Entry {
        L2Entry {
            user: user.to_string(),
            ..L2Entry::default()
        }
    }

    #[test]
    fn thresholds_at_and_around_the_boundaries() {
        let cfg = HistoryConfig::default();
        // (query words, entry words, expected jaccard class)
        // query kw0..kw10 (10 words), entry with `shared` of them plus extras.
        let cases: &[(usize, usize, Option<Relevance>)] = &[
            // shared, entry-only words → union = 10 + extra
            (3, 10, Some(Relevance::Full)),   // 3/20 = 0.15 exactly
            (3, 11, Some(Relevance::Digest)), // 3/21 = 0.143
            (4, 10, Some(Relevance::Full)),   // 4/20 = 0.20
            (1, 10, Some(Relevance::Digest)), // 1/20 = 0.05 exactly
            (1, 11, None),                    // 1/21 = 0.048
            (2, 30, Some(Relevance::Digest)), // 2/40 = 0.05
            (2, 31, None),                    // 2/41
            (0, 5, None),
        ];
        let query = words(0..10);
        for &(shared, extra, want) in cases {
            let text = format!("{} {}", words(0..shared), words(100..100 + extra));
            let e = entry_with(&text);
            let s = score_entry(
                &entry_keywords(&e, &FallbackTokenizer),
                &query_keywords(&query, &FallbackTokenizer),
                0,
                &cfg,
            );
            assert_eq!(
                classify(s, &cfg),
                want,
                "shared {shared} extra {extra} score {s}"
            );
        }
        // Two-letter ASCII words are not keywords (tea-agent: "3字母英文"), on either side:
        // they neither share nor widen the union. (shared, 3+-letter extras,
        // 2-letter extras in the entry, 2-letter extras in the query, class)
        let short: &[(usize, usize, usize, usize, Option<Relevance>)] = &[
            (3, 10, 5, 0, Some(Relevance::Full)),   // 3/20, not 3/25
            (3, 11, 5, 0, Some(Relevance::Digest)), // 3/21
            (1, 10, 0, 3, Some(Relevance::Digest)), // 1/20, not 1/23
            (1, 11, 0, 3, None),                    // 1/21
        ];
        let two = |n: usize, first: u8| -> String {
            (0..n)
                .map(|i| format!("{}{}", first as char, (b'a' + i as u8) as char))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for &(shared, extra, entry_short, query_short, want) in short {
            let text = format!(
                "{} {} {}",
                words(0..shared),
                words(100..100 + extra),
                two(entry_short, b'x')
            );
            let e = entry_with(&text);
            let q = format!("{query} {}", two(query_short, b'q'));
            let s = score_entry(
                &entry_keywords(&e, &FallbackTokenizer),
                &query_keywords(&q, &FallbackTokenizer),
                0,
                &cfg,
            );
            assert_eq!(
                classify(s, &cfg),
                want,
                "shared {shared} extra {extra} short {entry_short}/{query_short} score {s}"
            );
        }
        assert_eq!(classify(0.149_999, &cfg), Some(Relevance::Digest));
        assert_eq!(classify(0.049_999, &cfg), None);
    }

    #[test]
    fn ascii_keywords_need_three_letters_chinese_two_characters() {
        // tea-agent: "2字中文 + 3字母英文关键词".
        // (query, entry text, Jaccard)
        let cases: &[(&str, &str, f32)] = &[
            ("go db", "go db", 0.0), // nothing left to compare
            ("go db api", "go db api", 1.0),
            ("api go", "api db", 1.0), // {api} vs {api}, not {api, go} vs {api, db}
            ("k8s v2", "k8s v3", 1.0), // digits are letters here; "v2" is too short
            ("数据库", "数据库", 1.0), // Chinese bigrams are kept
            ("数据 go", "数据 db", 1.0),
            ("rust io", "rust", 1.0),
            ("rust", "rust cli", 0.5),
        ];
        let cfg = HistoryConfig::default();
        for &(query, text, want) in cases {
            let e = entry_with(text);
            let k = entry_keywords(&e, &FallbackTokenizer);
            let q = query_keywords(query, &FallbackTokenizer);
            let s = score_entry(&k, &q, 0, &cfg);
            assert!((s - want).abs() < 1e-6, "{query:?} vs {text:?}: {s}");
        }
        // select_l2 scores with the same filter: only "db" in common is no match.
        let entries = vec![entry_with("db io tuning"), entry_with("db io")];
        let picks = select_l2(&entries, "db io", &FallbackTokenizer, &cfg);
        assert_eq!(picks.len(), 1); // the fallback, not two full pairs
        assert_eq!(picks[0].score, 0.0);
    }

    #[test]
    fn file_names_match_whole_paths_or_whole_last_components() {
        let e = L2Entry {
            files: vec!["src/a.rs".into(), "lib/Mod.rs".into(), "docs/README".into()],
            ..L2Entry::default()
        };
        // (query, files named)
        let cases: &[(&str, usize)] = &[
            ("fix data.rs", 0), // "a.rs" inside another name
            ("fix src/data.rs", 0),
            ("fix b.a.rs", 0),
            ("fix a.rs.bak", 0),
            ("fix a.rsx", 0),
            ("fix A.rs", 0), // case-sensitive
            ("fix mod.rs", 0),
            ("mydocs/README", 0),
            ("docs/README.md", 0),
            ("fix src/a.rs", 1), // full path
            ("fix a.rs", 1),     // file name
            ("a.rs", 1),
            ("see `a.rs`, then", 1),
            ("\"a.rs\"", 1),
            ("'a.rs'", 1),
            ("(a.rs)", 1),
            ("a.rs:42", 1),
            ("fix a.rs.", 1), // sentence end
            ("fix a.rs!", 1),
            ("/home/me/proj/src/a.rs", 1),
            ("看看a.rs的内容", 1), // Chinese written around the name
            ("修改a.rs，然后", 1),
            ("data.rs and a.rs", 1),
            ("a.rs a.rs src/a.rs", 1), // each path counts once
            ("Mod.rs", 1),
            ("docs/README", 1),
            ("src/a.rs and lib/Mod.rs", 2),
        ];
        for &(query, want) in cases {
            assert_eq!(file_overlap(&e, query), want, "{query:?}");
        }
        let win = L2Entry {
            files: vec!["src\\main.rs".into()],
            ..L2Entry::default()
        };
        assert_eq!(file_overlap(&win, "src\\main.rs"), 1);
        assert_eq!(file_overlap(&win, "main.rs"), 1);
        assert_eq!(file_overlap(&win, "domain.rs"), 0);
    }

    #[test]
    fn keywords_come_from_user_thinking_and_assistant() {
        let e = L2Entry {
            user: "alpha".into(),
            thinking: "beta".into(),
            assistant: "gamma".into(),
            files: vec![],
            turn: 0,
        };
        let k = entry_keywords(&e, &FallbackTokenizer);
        assert_eq!(k.len(), 3);
        assert!(k.contains(keyword_hash("beta")));
    }

    #[test]
    fn file_bonus_lifts_the_score_to_point_four_plus_a_tenth_per_file() {
        let cfg = HistoryConfig::default();
        let none = KeywordSet::default();
        // (files named, score)
        for (n, want) in [(0, 0.0), (1, 0.5), (2, 0.6), (6, 1.0), (9, 1.0)] {
            let s = score_entry(&none, &none, n, &cfg);
            assert!((s - want).abs() < 1e-6, "{n}: {s}");
        }
        // A higher Jaccard is kept.
        let k = KeywordSet::of(&FallbackTokenizer, "alpha beta");
        assert_eq!(score_entry(&k, &k, 1, &cfg), 1.0);

        let e = L2Entry {
            files: vec![
                "src/main.rs".into(),
                "src/main.rs".into(),
                "docs/README".into(),
                "".into(),
            ],
            ..L2Entry::default()
        };
        assert_eq!(file_overlap(&e, "fix src/main.rs again"), 1);
        assert_eq!(file_overlap(&e, "look at main.rs"), 1);
        assert_eq!(file_overlap(&e, "README please"), 0); // no dot: bare name too vague
        assert_eq!(file_overlap(&e, "docs/README and src/main.rs"), 2);
        assert_eq!(file_overlap(&e, "nothing"), 0);
    }

    #[test]
    fn select_keeps_ring_order_and_falls_back_to_the_best_entry() {
        let cfg = HistoryConfig::default();
        let entries = vec![
            entry_with("rust borrow checker lifetimes"),
            entry_with("cooking pasta recipe"),
            entry_with(&format!("rust {}", words(0..19))), // 1/21 with query below: dropped
            entry_with("rust lifetimes question"),
        ];
        let picks = select_l2(&entries, "rust lifetimes", &FallbackTokenizer, &cfg);
        let got: Vec<_> = picks.iter().map(|p| (p.index, p.relevance)).collect();
        assert_eq!(got, vec![(0, Relevance::Full), (3, Relevance::Full)]);

        // Nothing relevant: the best (here all 0, so the newest) as a full pair.
        let picks = select_l2(&entries, "weather tomorrow", &FallbackTokenizer, &cfg);
        assert_eq!(picks.len(), 1);
        assert_eq!((picks[0].index, picks[0].relevance), (3, Relevance::Full));

        // Below the digest threshold but not zero: the best one wins, not the newest.
        let picks = select_l2(
            &entries,
            &format!("pasta {}", words(200..230)),
            &FallbackTokenizer,
            &cfg,
        );
        assert_eq!(picks[0].index, 1);

        assert!(select_l2(&[], "rust", &FallbackTokenizer, &cfg).is_empty());

        // Cached keyword sets give the same picks; a cache of the wrong length is ignored.
        let cache: Vec<KeywordSet> = entries
            .iter()
            .map(|e| entry_keywords(e, &FallbackTokenizer))
            .collect();
        let q = "rust lifetimes";
        let plain = select_l2(&entries, q, &FallbackTokenizer, &cfg);
        assert_eq!(
            select_l2_cached(&entries, &cache, q, &FallbackTokenizer, &cfg),
            plain
        );
        assert_eq!(
            select_l2_cached(&entries, &cache[..1], q, &FallbackTokenizer, &cfg),
            plain
        );
        // The cache is what is scored: an empty set per entry scores nothing.
        let empty = vec![KeywordSet::default(); entries.len()];
        let picks = select_l2_cached(&entries, &empty, q, &FallbackTokenizer, &cfg);
        assert_eq!(picks.len(), 1); // only the fallback
    }

    #[test]
    fn digest_is_one_bounded_line_and_utf8_safe() {
        let cfg = HistoryConfig::default();
        let e = L2Entry {
            user: "第一行\n第二行".repeat(40),
            assistant: "short answer".into(),
            ..L2Entry::default()
        };
        let d = digest_line(&e, &cfg);
        assert!(!d.contains('\n'));
        assert!(d.starts_with("User: 第一行 第二行第一行"));
        assert!(d.contains("… → Assistant: short answer"));
        assert!(d.chars().count() <= 6 + 80 + 1 + 14 + 120 + 1);
        let short = L2Entry {
            user: "hi".into(),
            assistant: "hello".into(),
            ..L2Entry::default()
        };
        assert_eq!(digest_line(&short, &cfg), "User: hi → Assistant: hello");
    }
}
