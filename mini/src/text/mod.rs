//! Chinese word segmentation for the core's [`Tokenizer`]: jieba-rs with an embedded
//! trimmed dictionary (or a full one from config), loaded lazily on the first text that
//! contains Han characters. Text without them never loads it: it goes through the core's
//! fallback tokenizer, so an English-only user pays nothing.
//!
//! What it decides: which parts of a text jieba sees (runs of Han characters; everything
//! else — ASCII, other alphabets, kana, Hangul — keeps the core's rules, so English
//! keywords are exactly the core's), and which of jieba's words are keywords (not the
//! function words and single stop characters below). Why jieba rather than the core's
//! bigrams: "我喜欢喝绿茶" gives 喜欢/喝/绿茶 instead of 我喜/喜欢/欢喝/喝绿/绿茶, so a
//! Chinese fact and a Chinese question share real words and fewer accidental bigrams.
//! jieba runs in search mode, so a long word also gives its dictionary sub-words
//! (上海浦东 → 上海, 浦东, 上海浦东): a fact about 上海浦东 is found by a question about 上海.
//!
//! The dictionary: jieba's full one costs 2.36 MB of binary and 32 MB of RSS (measured
//! when it was chosen); the embedded one keeps the 40 785 words with frequency ≥ 80
//! (`mini/dict/`, 0.14 MB deflated; `mini/dict/README.md` says why). A full `dict.txt` can be named in `[text] dict_path`.

mod dict;

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

#[cfg(test)]
use evolve_core::text::FallbackTokenizer;
use evolve_core::text::{keyword_hash, KeywordSet, RuledTokenizer, Rules, Tokenizer};
use jieba_rs::Jieba;

/// jieba's HMM joins runs of characters the dictionary does not know into words. Off,
/// for three measured reasons: keywords are more stable when the same words appear in
/// another context (84.7% of a shortened clause's keywords found in the whole clause vs
/// 83.4% with HMM, on the project's Chinese design documents — see the ignored tests below), because HMM
/// also glues stop characters to their neighbours, differently from text to text
/// (我用Rust → 我用, 阿里云上 → 云上); with the constant off, jieba's HMM tables are
/// left out of the binary (516 KB smaller, release x86_64); and unknown names still
/// match between a fact and a question as single characters (张伟 → 张/伟). With HMM
/// the cut agrees a little more with the full dictionary's (96.4% vs 94.3% of its
/// keywords), but retrieval needs stability more.
const HMM: bool = false;

/// Single characters that carry no topic on their own: particles, pronouns, the
/// commonest verbs of being and having, conjunctions, adverbs of degree, measure
/// words. The core's fallback drops particles; a segmenter also produces these alone.
/// Sorted, for binary search.
const STOP_CHARS: &[char] = &[
    '一', '不', '与', '且', '个', '么', '之', '也', '了', '些', '从', '他', '们', '你', '又', '及',
    '向', '吗', '吧', '呀', '呗', '呢', '和', '哈', '哎', '哦', '哪', '啊', '啥', '啦', '嗯', '嘛',
    '噢', '在', '地', '太', '她', '它', '对', '就', '很', '得', '您', '我', '或', '把', '是', '有',
    '的', '着', '给', '而', '被', '谁', '过', '还', '这', '那', '都',
];

/// Function words: the core's Chinese stop bigrams (evolve-core `text/tokenize.rs`
/// `ZH_STOP_BIGRAMS`, which are whole words too) and the longer question words,
/// pronouns and fillers a segmenter keeps whole (为什么, 哪里). Sorted by bytes.
const STOP_WORDS: &[&str] = &[
    "一下",
    "一个",
    "一些",
    "不是",
    "为了",
    "为什",
    "为什么",
    "什么",
    "什么样",
    "他们",
    "但是",
    "你们",
    "可以",
    "咱们",
    "哪个",
    "哪儿",
    "哪里",
    "因为",
    "她们",
    "如何",
    "如果",
    "它们",
    "就是",
    "已经",
    "怎么",
    "怎么样",
    "我们",
    "或者",
    "所以",
    "是不",
    "是不是",
    "是否",
    "没有",
    "然后",
    "而且",
    "自己",
    "请问",
    "还是",
    "这个",
    "这么",
    "这些",
    "这儿",
    "这样",
    "这里",
    "那个",
    "那么",
    "那些",
    "那儿",
    "那样",
    "那里",
];

/// The characters handed to jieba: the CJK ideograph ranges of the core's
/// [`evolve_core::text::is_cjk`] (kana and Hangul stay with the core's bigrams: jieba's
/// dictionary has no words in them). Every one is also Han to jieba.
pub fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2EBEF)
}

/// True for a word of jieba's output that is a keyword.
fn is_keyword(word: &str) -> bool {
    let mut chars = word.chars();
    match (chars.next(), chars.next()) {
        (None, _) => false,
        (Some(c), None) => STOP_CHARS.binary_search(&c).is_err(),
        _ => STOP_WORDS.binary_search(&word).is_err(),
    }
}

/// The shell's tokenizer: jieba for Han runs, the core's fallback rules for the rest
/// (same ASCII words and stop lists, so keywords of English text are identical).
///
/// Clones share the loaded dictionary (`chat` opens a runtime per turn).
#[derive(Clone)]
pub struct ShellTokenizer {
    dict_path: Option<PathBuf>,
    jieba: Arc<OnceLock<Jieba>>,
    rules: Rules,
}

impl ShellTokenizer {
    /// No I/O: the dictionary loads on the first CJK text. `dict_path`: a full jieba
    /// dictionary file (`word freq [tag]` lines) instead of the embedded one; if it
    /// cannot be read, a warning is logged and the embedded one is used.
    pub fn new(dict_path: Option<PathBuf>) -> Self {
        ShellTokenizer {
            dict_path,
            jieba: Arc::new(OnceLock::new()),
            rules: Rules::CURRENT,
        }
    }

    /// The same segmentation with other word rules for the text outside Han runs (to
    /// measure what each rule adds; stored keywords always use [`Rules::CURRENT`]).
    pub fn with_rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// Whether the dictionary has been loaded (for tests and RSS figures).
    #[cfg(test)]
    pub fn is_loaded(&self) -> bool {
        self.jieba.get().is_some()
    }

    /// The keyword set of words already separated by spaces (curated word lists): a
    /// word with Han characters is one keyword as it stands — what jieba makes of a
    /// question's words — so the dictionary is not loaded for it; other words go
    /// through the usual rules.
    pub fn keywords_of_words(&self, words: &str) -> KeywordSet {
        let mut hashes = Vec::new();
        for word in words.split_whitespace() {
            if word.chars().any(is_han) {
                if is_keyword(word) {
                    hashes.push(keyword_hash(word));
                }
            } else {
                RuledTokenizer(self.rules).for_each_keyword(word, &mut |k| {
                    hashes.push(keyword_hash(k));
                });
            }
        }
        KeywordSet::from_hashes(hashes)
    }

    /// The segmenter, loading the dictionary on first use (once, even when several
    /// threads ask at the same time).
    fn jieba(&self) -> &Jieba {
        self.jieba
            .get_or_init(|| load_dictionary(self.dict_path.as_deref()))
    }
}

/// The configured full dictionary if it can be read, else the embedded one.
fn load_dictionary(path: Option<&Path>) -> Jieba {
    if let Some(path) = path {
        match File::open(path)
            .map_err(|e| e.to_string())
            .and_then(|f| Jieba::with_dict(&mut BufReader::new(f)).map_err(|e| e.to_string()))
        {
            Ok(jieba) => {
                log::debug!("Chinese dictionary loaded from {}", path.display());
                return jieba;
            }
            Err(e) => log::warn!(
                "cannot use the Chinese dictionary {} ({e}); using the built-in one — \
                 fix [text] dict_path in config.toml or remove it",
                path.display()
            ),
        }
    }
    embedded_dictionary()
}

/// The embedded trimmed dictionary. It is part of the binary and checked by the tests,
/// so a decoding error means a corrupted build: logged, and segmentation goes on with
/// what was decoded (unknown runs come out as single characters).
fn embedded_dictionary() -> Jieba {
    let mut jieba = Jieba::empty();
    match dict::decode(&dict::trimmed(), |word, freq| {
        jieba.add_word(word, Some(freq), None);
    }) {
        Ok(n) => log::debug!("built-in Chinese dictionary loaded: {n} words"),
        Err(e) => log::error!("the built-in Chinese dictionary is damaged: {e}"),
    }
    jieba
}

impl Tokenizer for ShellTokenizer {
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        self.for_each_word(text, &mut |_, k| emit(k));
    }

    fn for_each_word(&self, text: &str, emit: &mut dyn FnMut(&str, &str)) {
        if text.is_ascii() || !text.chars().any(is_han) {
            RuledTokenizer(self.rules).for_each_word(text, emit);
            return;
        }
        let jieba = self.jieba();
        let mut start = 0;
        let mut han = false;
        for (at, c) in text.char_indices() {
            let now_han = is_han(c);
            if now_han != han && at > start {
                segment(jieba, &text[start..at], han, self.rules, emit);
                start = at;
            }
            han = now_han;
        }
        segment(jieba, &text[start..], han, self.rules, emit);
    }
}

/// The keywords of one run: jieba's words for Han, the core's rules otherwise.
fn segment(jieba: &Jieba, run: &str, han: bool, rules: Rules, emit: &mut dyn FnMut(&str, &str)) {
    if run.is_empty() {
        return;
    }
    if !han {
        RuledTokenizer(rules).for_each_word(run, emit);
        return;
    }
    // Search mode: a long word also gives its dictionary sub-words (上海浦东 → 上海,
    // 浦东, 上海浦东), so a fact about 上海浦东 is found by a question about 上海.
    for token in jieba.cut_for_search(run, HMM) {
        if is_keyword(token.word) {
            emit(token.word, token.word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(t: &ShellTokenizer, text: &str) -> Vec<String> {
        t.keywords(text)
    }

    #[test]
    fn one_tokenizer_can_be_shared_between_threads() {
        fn shared<T: Send + Sync>(_: &T) {}
        let t = ShellTokenizer::new(None);
        shared(&t);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert!(kw(&t, "我喜欢喝绿茶").iter().any(|k| k == "绿茶")));
            }
        });
        assert!(t.is_loaded());
    }

    #[test]
    fn a_word_list_is_read_without_the_dictionary_and_a_question_finds_its_words() {
        let t = ShellTokenizer::new(None);
        let list = t.keywords_of_words("Time date today 时间 今天 几点 的");
        assert!(!t.is_loaded(), "a word list must not load the dictionary");
        for question in ["what time is it today", "现在几点", "今天的时间"] {
            let q = KeywordSet::of(&t, question);
            assert!(list.overlaps(&q), "{question:?} finds nothing in the list");
        }
        // The stop word is no keyword, as in a question.
        assert!(!list.contains(keyword_hash("的")));
        assert!(list.contains(keyword_hash("时间")));
    }

    #[test]
    fn stop_lists_are_sorted_for_binary_search() {
        assert!(STOP_CHARS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn chinese_is_cut_into_words_not_bigrams() {
        let t = ShellTokenizer::new(None);
        let cases: &[(&str, &[&str], &[&str])] = &[
            // (text, must contain, must not contain)
            (
                "我喜欢喝绿茶",
                &["喜欢", "绿茶"],
                &["我", "我喜", "欢喝", "喝绿"],
            ),
            ("用户住在上海浦东", &["用户", "上海"], &["在", "住在上"]),
            ("我住在哪里？上海", &["上海"], &["哪里", "我", "在"]),
            (
                "为什么天空是蓝色的",
                &["天空", "蓝色"],
                &["为什么", "的", "是"],
            ),
            ("这个目的很重要", &["目的", "重要"], &["这个", "很"]),
        ];
        for (text, has, hasnt) in cases {
            let words = kw(&t, text);
            for w in *has {
                assert!(words.iter().any(|k| k == w), "{text}: {w} not in {words:?}");
            }
            for w in *hasnt {
                assert!(!words.iter().any(|k| k == w), "{text}: {w} in {words:?}");
            }
        }
    }

    #[test]
    fn a_chinese_fact_and_a_chinese_question_share_keywords() {
        let t = ShellTokenizer::new(None);
        let memory = KeywordSet::of(&t, "用户住在上海浦东");
        let query = KeywordSet::of(&t, "我住在哪里？上海");
        assert!(memory.overlaps(&query));
        assert!(memory.contains(evolve_core::text::keyword_hash("上海")));
        assert!(query.contains(evolve_core::text::keyword_hash("上海")));
        // An unrelated Chinese question shares nothing.
        assert!(!memory.overlaps(&KeywordSet::of(&t, "明天北京的天气怎么样")));
    }

    #[test]
    fn text_without_han_never_loads_the_dictionary() {
        let t = ShellTokenizer::new(None);
        for text in [
            "The Rust compiler is FAST",
            "",
            "Grüße aus Köln",
            "カタカナ 한국어",
            "1,2,3 ✓",
        ] {
            let _ = kw(&t, text);
            assert!(!t.is_loaded(), "{text:?} loaded the dictionary");
        }
        let _ = kw(&t, "茶");
        assert!(t.is_loaded());
    }

    #[test]
    fn non_chinese_keywords_are_the_cores() {
        let t = ShellTokenizer::new(None);
        for text in [
            "The Rust compiler is FAST, a 1 x",
            "read_file src/main.rs and cargo build --release",
            "Grüße aus Köln, ÉCOLE",
            "カタカナのテスト",
            "What is the capital of France? PARIS.",
        ] {
            assert_eq!(kw(&t, text), FallbackTokenizer.keywords(text), "{text}");
        }
    }

    #[test]
    fn mixed_text_keeps_english_words_and_chinese_words() {
        let t = ShellTokenizer::new(None);
        assert_eq!(
            kw(&t, "我用Rust写代码，RUST_LOG=debug"),
            ["用", "rust", "写", "代码", "rust_log", "debug"]
        );
        let words = kw(&t, "部署到Docker容器里, then run `evolve serve`");
        // English words stemmed as the core does (evolve → evolv, serve → serv).
        for w in ["部署", "docker", "容器", "run", "evolv", "serv"] {
            assert!(words.iter().any(|k| k == w), "{w} not in {words:?}");
        }
        assert!(
            !words.iter().any(|k| k == "then"),
            "English stop words dropped"
        );
    }

    #[test]
    fn an_unreadable_dictionary_path_falls_back_to_the_embedded_one() {
        let missing = std::env::temp_dir().join("evolve-no-such-dir/dict.txt");
        let t = ShellTokenizer::new(Some(missing));
        assert!(kw(&t, "我喜欢喝绿茶").iter().any(|k| k == "绿茶"));
    }

    #[test]
    fn a_configured_dictionary_replaces_the_embedded_one() {
        let dir = std::env::temp_dir().join(format!("evolve-dict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("dict.txt");
        // A dictionary that knows 喝绿 as a word and nothing else: the cut follows it.
        std::fs::write(&path, "喝绿 100000 n\n").expect("write dict");
        let t = ShellTokenizer::new(Some(path));
        let words = kw(&t, "喝绿");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(words, ["喝绿"]);
    }

    /// `/proc/self/status` VmRSS in KiB (Linux only).
    fn rss_kib() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// Figures for the report, not assertions: load time and RSS of the embedded
    /// dictionary. `cargo test -p evolve-mini --release -- --ignored --nocapture dictionary_cost`
    #[test]
    #[ignore]
    fn dictionary_cost() {
        let before = rss_kib();
        let started = std::time::Instant::now();
        let t = ShellTokenizer::new(None);
        let _ = kw(&t, "茶");
        let took = started.elapsed();
        let after = rss_kib();
        println!(
            "embedded dictionary: {} bytes, loaded in {took:?}, VmRSS {before:?} → {after:?} KiB",
            dict::trimmed().len()
        );
    }

    /// The full jieba dictionary: `JIEBA_DICT`, else jieba-rs's copy in the cargo registry.
    fn full_dictionary_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("JIEBA_DICT") {
            return Some(PathBuf::from(p));
        }
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        std::fs::read_dir(home.join("registry/src"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path().join("jieba-rs-0.11.0/src/data/dict.txt"))
            .find(|p| p.is_file())
    }

    /// Chinese text to measure on: `SEGMENT_CORPUS` (a file), else the project's Chinese design documents (outside this repository).
    fn corpus() -> String {
        if let Some(text) = std::env::var("SEGMENT_CORPUS")
            .ok()
            .and_then(|p| std::fs::read_to_string(p).ok())
        {
            return text;
        }
        let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/seeds");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&seeds)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        files
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// How close the trimmed dictionary cuts to the full one, with and without HMM: the
    /// share of the full dictionary's keywords (with HMM) found at the same place.
    /// Figures for choosing the threshold and HMM, not assertions.
    /// `cargo test -p evolve-mini --release -- --ignored --nocapture segmentation_agrees`
    #[test]
    #[ignore]
    fn segmentation_agrees_with_the_full_dictionary() {
        let Some(full_path) = full_dictionary_path() else {
            println!("no full dictionary found; set JIEBA_DICT");
            return;
        };
        let corpus = corpus();
        let started = std::time::Instant::now();
        let full = load_dictionary(Some(&full_path));
        println!("full dictionary loaded in {:?}", started.elapsed());
        let trimmed = embedded_dictionary();
        let cuts = |j: &Jieba, hmm: bool| -> Vec<(usize, String)> {
            let mut out = Vec::new();
            let mut at = 0;
            for token in j.cut(&corpus, hmm) {
                if token.word.chars().all(is_han) && is_keyword(token.word) {
                    out.push((at, token.word.to_string()));
                }
                at += token.word.len();
            }
            out
        };
        let reference = cuts(&full, true);
        for (name, j, hmm) in [
            ("full, no HMM", &full, false),
            ("trimmed, HMM", &trimmed, true),
            ("trimmed, no HMM", &trimmed, false),
        ] {
            let got: std::collections::HashSet<(usize, String)> =
                cuts(j, hmm).into_iter().collect();
            let same = reference.iter().filter(|w| got.contains(*w)).count();
            println!(
                "{name}: {same}/{} keywords of the full dictionary with HMM ({:.1}%)",
                reference.len(),
                100.0 * same as f64 / reference.len().max(1) as f64,
            );
        }
    }

    /// Whether the same words give the same keywords in another context: each clause
    /// of at least 6 Han characters is cut whole and with 1–3 characters taken off
    /// either end; the figure is the share of the shortened clause's keywords found in
    /// the whole clause's. Retrieval depends on it (a fact and a question word things
    /// differently). `cargo test -p evolve-mini -- --ignored --nocapture keywords_are_stable`
    #[test]
    #[ignore]
    fn keywords_are_stable_across_contexts() {
        let corpus = corpus();
        let jieba = embedded_dictionary();
        for hmm in [true, false] {
            let keywords = |s: &str| -> std::collections::HashSet<String> {
                jieba
                    .cut_for_search(s, hmm)
                    .into_iter()
                    .map(|t| t.word)
                    .filter(|w| is_keyword(w))
                    .map(String::from)
                    .collect()
            };
            let (mut shared, mut total) = (0usize, 0usize);
            for clause in corpus.split(|c: char| !is_han(c)) {
                let chars: Vec<char> = clause.chars().collect();
                if chars.len() < 6 {
                    continue;
                }
                let whole = keywords(clause);
                for cut in 1..=3 {
                    let tail: String = chars[cut..].iter().collect();
                    let head: String = chars[..chars.len() - cut].iter().collect();
                    for part in [tail, head] {
                        let k = keywords(&part);
                        total += k.len();
                        shared += k.iter().filter(|w| whole.contains(*w)).count();
                    }
                }
            }
            println!(
                "HMM {hmm}: {shared}/{total} keywords kept in context ({:.1}%)",
                100.0 * shared as f64 / total.max(1) as f64
            );
        }
    }
}
