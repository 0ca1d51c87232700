//! Tokenizers and keyword sets.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// Splits text into keywords. Implementations lower-case ASCII, drop stop words and
/// call `emit` once per keyword occurrence (duplicates are allowed; [`KeywordSet`]
/// removes them).
///
/// The shell implements this with jieba for Chinese; [`FallbackTokenizer`] is the
/// dependency-free default.
pub trait Tokenizer {
    /// Calls `emit` with every keyword of `text`, in order.
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str));

    /// Calls `emit(word, keyword)` for every keyword with the word of the text it came
    /// from, lower-cased but not stemmed (to show people words, not stems: "morning",
    /// not "morn"). By default the keyword is its own word.
    fn for_each_word(&self, text: &str, emit: &mut dyn FnMut(&str, &str)) {
        self.for_each_keyword(text, &mut |k| emit(k, k));
    }

    /// The keywords of `text` as owned strings, in order, duplicates kept.
    fn keywords(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_keyword(text, &mut |k| out.push(String::from(k)));
        out
    }
}

/// The set of distinct keywords of a text, each stored as a stable 64-bit hash
/// ([`keyword_hash`]), sorted. Stored on memory records so that selection compares
/// integers instead of re-tokenizing every memory on every turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct KeywordSet(Vec<u64>);

impl KeywordSet {
    /// The keyword set of `text` under `tokenizer`.
    pub fn of(tokenizer: &dyn Tokenizer, text: &str) -> Self {
        let mut hashes = Vec::new();
        tokenizer.for_each_keyword(text, &mut |k| hashes.push(keyword_hash(k)));
        Self::from_hashes(hashes)
    }

    /// Builds a set from hashes in any order, with duplicates.
    pub fn from_hashes(mut hashes: Vec<u64>) -> Self {
        hashes.sort_unstable();
        hashes.dedup();
        KeywordSet(hashes)
    }

    /// The sorted, distinct hashes.
    pub fn as_slice(&self) -> &[u64] {
        &self.0
    }

    /// Number of distinct keywords.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the text had no keyword at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when the keyword (by hash) is in the set.
    pub fn contains(&self, hash: u64) -> bool {
        self.0.binary_search(&hash).is_ok()
    }

    /// The union of two sets.
    pub fn union(&self, other: &KeywordSet) -> KeywordSet {
        let mut v = Vec::with_capacity(self.0.len() + other.0.len());
        v.extend_from_slice(&self.0);
        v.extend_from_slice(&other.0);
        Self::from_hashes(v)
    }

    /// True when the two sets share at least one keyword.
    pub fn overlaps(&self, other: &KeywordSet) -> bool {
        super::intersection_len(&self.0, &other.0) > 0
    }
}

/// FNV-1a 64, fed byte by byte. Keyword and content hashes are persisted with the
/// memories, so this function must never change.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash of everything fed.
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a 64 of the keyword's UTF-8 bytes. Stable across versions and platforms
/// because the hashes are persisted with the memories.
pub fn keyword_hash(keyword: &str) -> u64 {
    let mut h = Fnv1a::default();
    h.write(keyword.as_bytes());
    h.finish()
}

/// True for ideographs and the other scripts that are written without spaces and
/// are counted ≈ 1.5 characters per token (Han, kana, Hangul).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2EBEF  // CJK Extensions B–F
    )
}

/// The dependency-free tokenizer: lower-cased words of at least two characters (or a
/// digit: numbers and dates are words) for alphabetic scripts, English words stemmed
/// (Snowball English: "painted" and "painting" meet "paint"), character bigrams for
/// CJK runs (a lone CJK character stands for itself), and Chinese/English stop lists.
/// Always [`Rules::CURRENT`]; [`RuledTokenizer`] takes other rules, to measure them.
#[derive(Debug, Clone, Copy, Default)]
pub struct FallbackTokenizer;

/// The choices of the word rules, so each can be measured alone (the recall bench).
/// Stored keywords are computed with [`Rules::CURRENT`]
/// ([`crate::memory::KEYWORDS_VERSION`] names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Stem English words (ASCII letters only).
    pub stem: bool,
    /// The full English stop list, not only tea-agent's.
    pub stop_words: bool,
    /// Keep single digits as words.
    pub digits: bool,
}

impl Rules {
    /// The rules this build stores keywords with.
    pub const CURRENT: Rules = Rules {
        stem: true,
        stop_words: true,
        digits: true,
    };
    /// The rules before stemming (keywords version 1).
    pub const SEED: Rules = Rules {
        stem: false,
        stop_words: false,
        digits: false,
    };
}

impl Default for Rules {
    fn default() -> Self {
        Rules::CURRENT
    }
}

/// The fallback tokenizer with chosen [`Rules`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RuledTokenizer(pub Rules);

/// English words too common to say anything about a topic (tea-agent's list).
const EN_STOP: &[&str] = &[
    "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he",
    "her", "him", "his", "how", "if", "in", "into", "is", "it", "its", "just", "me", "my", "no",
    "not", "of", "on", "or", "our", "please", "she", "should", "so", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "up", "us",
    "very", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with",
    "would", "you", "your",
];

/// More function words (the rest of the common English stop lists, the pieces our split
/// at apostrophes leaves of "don't" or "you're", and chat fillers), dropped when
/// [`Rules::stop_words`] is on. Each is at most [`PACK_MAX_LEN`] bytes; the longer ones
/// are in [`EN_STOP_LONG`].
const EN_STOP_MORE: &[&str] = &[
    "above", "again", "against", "ah", "aren", "because", "before", "being", "below", "between",
    "both", "couldn", "didn", "doesn", "doing", "don", "down", "during", "each", "few", "further",
    "hadn", "hasn", "haven", "having", "here", "hers", "herself", "hey", "hi", "himself", "hmm",
    "isn", "itself", "ll", "mightn", "more", "most", "mustn", "myself", "needn", "nor", "now",
    "off", "oh", "ok", "okay", "once", "only", "other", "ours", "out", "over", "own", "re", "same",
    "shan", "shouldn", "some", "such", "theirs", "through", "uh", "um", "under", "until", "ve",
    "wasn", "weren", "whom", "wouldn", "yeah", "yes", "yours",
];

/// Stop words longer than [`PACK_MAX_LEN`] bytes, sorted.
const EN_STOP_LONG: &[&str] = &["ourselves", "themselves", "yourself", "yourselves"];

/// Chinese function bigrams (pronouns, question words, fillers), sorted by bytes.
const ZH_STOP_BIGRAMS: &[&str] = &[
    "一下", "一个", "不是", "为了", "为什", "什么", "他们", "但是", "你们", "可以", "因为", "她们",
    "如何", "如果", "它们", "就是", "已经", "怎么", "我们", "所以", "是不", "是否", "没有", "然后",
    "自己", "请问", "还是", "这个", "这么", "这样", "那个", "那么", "那样",
];

/// Chinese particles: a bigram containing one carries no topic.
const ZH_PARTICLES: &[char] = &['的', '吗', '呢', '吧', '啊', '呀', '嘛', '哦', '么'];

/// Longest entry of [`EN_STOP`] and [`EN_STOP_MORE`], in bytes: longer words skip the
/// packed search.
const EN_STOP_MAX_LEN: usize = 7;

/// Longest text [`pack`] can hold, in bytes.
const PACK_MAX_LEN: usize = 7;

/// A short text as one integer (its bytes, then its length in the top byte), so stop
/// lists are searched with integer compares instead of `memcmp` (which dominated the
/// tokenizer's profile). Only for texts of at most [`PACK_MAX_LEN`] bytes.
const fn pack(text: &str) -> u64 {
    let b = text.as_bytes();
    let mut v = 0u64;
    let mut i = 0;
    while i < b.len() && i < PACK_MAX_LEN {
        v = (v << 8) | b[i] as u64;
        i += 1;
    }
    v | ((b.len() as u64) << 56)
}

/// The packed words of a stop list, sorted at compile time.
const fn packed_sorted<const N: usize>(words: &[&str]) -> [u64; N] {
    let mut out = [0u64; N];
    let mut i = 0;
    while i < N {
        out[i] = pack(words[i]);
        let mut j = i;
        while j > 0 && out[j - 1] > out[j] {
            let t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    out
}

const EN_STOP_PACKED: [u64; EN_STOP.len()] = packed_sorted(EN_STOP);
const EN_STOP_MORE_PACKED: [u64; EN_STOP_MORE.len()] = packed_sorted(EN_STOP_MORE);
const ZH_STOP_PACKED: [u64; ZH_STOP_BIGRAMS.len()] = packed_sorted(ZH_STOP_BIGRAMS);

fn is_en_stop(word: &str, rules: Rules) -> bool {
    if word.len() > EN_STOP_MAX_LEN {
        return rules.stop_words && EN_STOP_LONG.binary_search(&word).is_ok();
    }
    let packed = pack(word);
    EN_STOP_PACKED.binary_search(&packed).is_ok()
        || (rules.stop_words && EN_STOP_MORE_PACKED.binary_search(&packed).is_ok())
}

fn is_zh_stop(bigram: &str) -> bool {
    bigram.len() <= PACK_MAX_LEN && ZH_STOP_PACKED.binary_search(&pack(bigram)).is_ok()
}

/// The word rules for one text: stop lists, digits, stemming.
fn emit_word(word: &str, chars: usize, rules: Rules, emit: &mut dyn FnMut(&str, &str)) {
    let digit = chars == 1 && word.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if (chars < 2 && !(rules.digits && digit)) || is_en_stop(word, rules) {
        return;
    }
    if rules.stem {
        emit(word, &super::stem_english(word));
    } else {
        emit(word, word);
    }
}

impl FallbackTokenizer {
    /// Emits the keywords of a run of CJK characters: `run` holds the byte offset of
    /// each character in `text`, so bigrams are slices of the text (no copying).
    fn emit_cjk_run(text: &str, run: &[(usize, char)], emit: &mut dyn FnMut(&str, &str)) {
        if let [(at, c)] = run {
            if !ZH_PARTICLES.contains(c) {
                let one = &text[*at..*at + c.len_utf8()];
                emit(one, one);
            }
            return;
        }
        for pair in run.windows(2) {
            let ((a, ca), (b, cb)) = (pair[0], pair[1]);
            if ZH_PARTICLES.contains(&ca) || ZH_PARTICLES.contains(&cb) {
                continue;
            }
            let bigram = &text[a..b + cb.len_utf8()];
            if !is_zh_stop(bigram) {
                emit(bigram, bigram);
            }
        }
    }
}

/// The word being read: where it starts in the text and whether it can be emitted as a
/// slice of the text (all ASCII lower-case) or needs the lower-cased copy in `buf`.
struct Word {
    start: usize,
    chars: usize,
    copied: bool,
    buf: String,
    rules: Rules,
}

impl Word {
    fn flush(&mut self, text: &str, end: usize, emit: &mut dyn FnMut(&str, &str)) {
        if self.chars > 0 {
            let word = if self.copied {
                self.buf.as_str()
            } else {
                &text[self.start..end]
            };
            emit_word(word, self.chars, self.rules, emit);
        }
        self.chars = 0;
        self.copied = false;
        self.buf.clear();
    }

    /// Switches from slicing the text to copying, once a character needs lower-casing.
    fn start_copy(&mut self, text: &str, at: usize) {
        if !self.copied {
            self.copied = true;
            self.buf.clear();
            self.buf.push_str(&text[self.start..at]);
        }
    }
}

impl Tokenizer for FallbackTokenizer {
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        RuledTokenizer(Rules::CURRENT).for_each_keyword(text, emit);
    }

    fn for_each_word(&self, text: &str, emit: &mut dyn FnMut(&str, &str)) {
        RuledTokenizer(Rules::CURRENT).for_each_word(text, emit);
    }
}

impl Tokenizer for RuledTokenizer {
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        self.for_each_word(text, &mut |_, k| emit(k));
    }

    fn for_each_word(&self, text: &str, emit: &mut dyn FnMut(&str, &str)) {
        let mut word = Word {
            start: 0,
            chars: 0,
            copied: false,
            buf: String::new(),
            rules: self.0,
        };
        let mut run: Vec<(usize, char)> = Vec::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // ASCII fast path: most text is ASCII, and it needs no decoding.
            if b.is_ascii() {
                if b.is_ascii_alphanumeric() || b == b'_' {
                    if !run.is_empty() {
                        FallbackTokenizer::emit_cjk_run(text, &run, emit);
                        run.clear();
                    }
                    if word.chars == 0 {
                        word.start = i;
                    }
                    if b.is_ascii_uppercase() {
                        word.start_copy(text, i);
                    }
                    if word.copied {
                        word.buf.push(char::from(b.to_ascii_lowercase()));
                    }
                    word.chars += 1;
                } else {
                    word.flush(text, i, emit);
                    if !run.is_empty() {
                        FallbackTokenizer::emit_cjk_run(text, &run, emit);
                        run.clear();
                    }
                }
                i += 1;
                continue;
            }
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            let len = c.len_utf8();
            if is_cjk(c) {
                word.flush(text, i, emit);
                run.push((i, c));
            } else if c.is_alphanumeric() {
                if !run.is_empty() {
                    FallbackTokenizer::emit_cjk_run(text, &run, emit);
                    run.clear();
                }
                if word.chars == 0 {
                    word.start = i;
                }
                word.start_copy(text, i);
                word.buf.extend(c.to_lowercase());
                word.chars += 1;
            } else {
                word.flush(text, i, emit);
                if !run.is_empty() {
                    FallbackTokenizer::emit_cjk_run(text, &run, emit);
                    run.clear();
                }
            }
            i += len;
        }
        word.flush(text, bytes.len(), emit);
        if !run.is_empty() {
            FallbackTokenizer::emit_cjk_run(text, &run, emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn kw(text: &str) -> Vec<String> {
        FallbackTokenizer.keywords(text)
    }

    #[test]
    fn stop_lists_are_sorted_for_binary_search() {
        assert!(EN_STOP.windows(2).all(|w| w[0] < w[1]));
        assert!(EN_STOP.iter().all(|w| w.len() <= EN_STOP_MAX_LEN));
        assert!(EN_STOP_MORE.windows(2).all(|w| w[0] < w[1]));
        assert!(EN_STOP_MORE.iter().all(|w| w.len() <= EN_STOP_MAX_LEN));
        assert!(EN_STOP_MORE.iter().all(|w| !EN_STOP.contains(w)));
        assert!(EN_STOP_LONG.windows(2).all(|w| w[0] < w[1]));
        assert!(EN_STOP_LONG.iter().all(|w| w.len() > EN_STOP_MAX_LEN));
        assert!(ZH_STOP_BIGRAMS.windows(2).all(|w| w[0] < w[1]));
        assert!(ZH_STOP_BIGRAMS.iter().all(|w| w.len() <= PACK_MAX_LEN));
        // The packed lookups agree with the lists, and texts that only share a prefix
        // or differ in length do not collide.
        let all = Rules::CURRENT;
        assert!(EN_STOP.iter().all(|w| is_en_stop(w, Rules::SEED)));
        assert!(EN_STOP_MORE
            .iter()
            .all(|w| is_en_stop(w, all) && !is_en_stop(w, Rules::SEED)));
        assert!(EN_STOP_LONG.iter().all(|w| is_en_stop(w, all)));
        assert!(ZH_STOP_BIGRAMS.iter().all(|w| is_zh_stop(w)));
        for not_stop in ["th", "thee", "wha", "", "whatever", "tea", "用户", "什么么"] {
            assert!(
                !is_en_stop(not_stop, all) && !is_zh_stop(not_stop),
                "{not_stop}"
            );
        }
    }

    #[test]
    fn ascii_words_are_lowercased_and_short_or_stop_words_dropped() {
        assert_eq!(
            kw("The Rust compiler is FAST, a 1 x"),
            vec!["rust", "compil", "fast", "1"]
        );
        let seed = |t: &str| RuledTokenizer(Rules::SEED).keywords(t);
        assert_eq!(
            seed("The Rust compiler is FAST, a 1 x"),
            vec!["rust", "compiler", "fast"]
        );
        assert_eq!(
            kw("read_file src/main.rs"),
            vec!["read_file", "src", "main", "rs"]
        );
    }

    #[test]
    fn inflections_meet_and_numbers_and_dates_are_words() {
        assert_eq!(kw("painted painting paints"), vec!["paint"; 3]);
        assert_eq!(kw("She moved to Lisbon"), vec!["move", "lisbon"]);
        assert_eq!(
            kw("on 2021-05-07, 3 kids"),
            vec!["2021", "05", "07", "3", "kid"]
        );
        assert_eq!(kw("yeah, I don't know ourselves"), vec!["know"]);
        // Not ASCII letters: kept as written.
        assert_eq!(kw("Grüße read_file"), vec!["grüße", "read_file"]);
    }

    #[test]
    fn cjk_runs_become_bigrams_without_particles_or_stop_bigrams() {
        assert_eq!(kw("我喜欢喝茶"), vec!["我喜", "喜欢", "欢喝", "喝茶"]);
        assert_eq!(kw("什么是好的"), vec!["是好"]);
        assert_eq!(kw("茶"), vec!["茶"]);
        assert_eq!(kw("的"), Vec::<String>::new());
    }

    #[test]
    fn mixed_scripts_split_at_script_boundaries() {
        assert_eq!(kw("用Rust写代码"), vec!["用", "rust", "写代", "代码"]);
        assert_eq!(kw("Grüße aus Köln"), vec!["grüße", "aus", "köln"]);
    }

    #[test]
    fn keyword_set_is_sorted_distinct_and_stable() {
        let s = KeywordSet::of(&FallbackTokenizer, "tea tea TEA green");
        assert_eq!(s.len(), 2);
        assert!(s.contains(keyword_hash("tea")));
        // FNV-1a 64 reference value: the hashes are persisted, so they must never change.
        assert_eq!(keyword_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(keyword_hash(""), 0xcbf2_9ce4_8422_2325);
    }

    /// The rules written the plain way (char by char, always copying): the fast path
    /// must emit exactly the same keywords.
    fn reference(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        let mut chars = 0;
        let mut run: Vec<char> = Vec::new();
        let flush_word = |word: &mut String, chars: &mut usize, out: &mut Vec<String>| {
            let stop = EN_STOP.contains(&word.as_str())
                || EN_STOP_MORE.contains(&word.as_str())
                || EN_STOP_LONG.contains(&word.as_str());
            let digit = *chars == 1 && word.chars().all(|c| c.is_ascii_digit());
            if (*chars >= 2 || digit) && !stop {
                out.push(String::from(super::super::stem_english(word)));
            }
            word.clear();
            *chars = 0;
        };
        let flush_run = |run: &mut Vec<char>, out: &mut Vec<String>| {
            if run.len() == 1 && !ZH_PARTICLES.contains(&run[0]) {
                out.push(run.iter().collect());
            }
            if run.len() > 1 {
                for p in run.windows(2) {
                    let bigram: String = p.iter().collect();
                    let particle = ZH_PARTICLES.contains(&p[0]) || ZH_PARTICLES.contains(&p[1]);
                    if !particle && ZH_STOP_BIGRAMS.binary_search(&bigram.as_str()).is_err() {
                        out.push(bigram);
                    }
                }
            }
            run.clear();
        };
        for c in text.chars() {
            if is_cjk(c) {
                flush_word(&mut word, &mut chars, &mut out);
                run.push(c);
            } else if c.is_alphanumeric() || c == '_' {
                flush_run(&mut run, &mut out);
                word.extend(c.to_lowercase());
                chars += 1;
            } else {
                flush_word(&mut word, &mut chars, &mut out);
                flush_run(&mut run, &mut out);
            }
        }
        flush_word(&mut word, &mut chars, &mut out);
        flush_run(&mut run, &mut out);
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn fast_path_matches_the_reference(text in "[a-zA-Z0-9_ .,ÄéßİΣ我喜欢茶的么什么用户-]{0,40}") {
            proptest::prop_assert_eq!(kw(&text), reference(&text));
        }

        #[test]
        fn any_text_tokenizes_like_the_reference(text in proptest::prelude::any::<String>()) {
            proptest::prop_assert_eq!(kw(&text), reference(&text));
        }
    }
}
