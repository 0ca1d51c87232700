//! English stemming: Snowball's English ("Porter2") stemmer.
//!
//! Decides which stem an English word reduces to, so that "connections", "connected" and
//! "connecting" all become the one keyword "connect". The rules are those of Snowball's
//! `english.sbl` as Snowball 3.1 ships it, which the test fixture was made with: whole
//! exceptional words first ("skies" → "sky", "news" stays), a `y` that acts as a consonant
//! marked `Y`, the regions R1 and R2 (with the prefixes `gener`, `commun`, `arsen`, … that
//! end R1 early, so "generously" → "generous", not "gener"), then steps 1a to 5. The words
//! that older write-ups of Porter2 keep after step 1a ("inning", "outing", "herring",
//! "proceed", "exceed", "succeed", …) are stems that step 1b leaves alone here, and
//! "dying", "lying", "tying" reach "die", "lie", "tie" by a step 1b rule, not a list.
//!
//! It takes one word, already lower-cased. Splitting text into words, lower-casing and
//! choosing which words to stem are the tokenizer's business. A word of at most two bytes or
//! with anything but `a`–`z` in it (a digit, `_`, a non-ASCII letter) is not English to
//! this module and comes back as it went in.
//!
//! The word is rewritten in place in a stack buffer (a heap one only past 64 bytes, which
//! no dictionary word reaches). The result borrows the input whenever the stem is a prefix
//! of the word ("hopping" → "hop"), so only a stem with rewritten letters ("happy" →
//! "happi") allocates, once.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;

/// The stem of a word that the rules would cut wrongly ("news" → "new", "skies" →
/// "ski"), looked up before any rule runs (Snowball's `exception1`).
fn exception(word: &str) -> Option<&str> {
    Some(match word {
        "early" => "earli",
        "gently" => "gentl",
        "idly" => "idl",
        "only" => "onli",
        "singly" => "singl",
        "skies" => "sky",
        "skis" => "ski",
        "ugly" => "ugli",
        "andes" | "atlas" | "bias" | "cosmos" | "howe" | "news" | "sky" => word,
        _ => return None,
    })
}

/// An affix and what replaces it, stored inline: the tables hold no pointers, so they
/// need no relocations in a position-independent binary (slices of `&[u8]` cost 16 bytes
/// of pointer and length plus a 24-byte relocation per entry).
struct Rule {
    text: [u8; 7],
    text_len: u8,
    with: [u8; 4],
    with_len: u8,
}

impl Rule {
    fn text(&self) -> &[u8] {
        &self.text[..usize::from(self.text_len)]
    }

    fn with(&self) -> &[u8] {
        &self.with[..usize::from(self.with_len)]
    }
}

/// Builds a [`Rule`] at compile time; a too-long affix fails the build.
const fn rule(text: &str, with: &str) -> Rule {
    let (text, with) = (text.as_bytes(), with.as_bytes());
    let mut rule = Rule {
        text: [0; 7],
        text_len: text.len() as u8,
        with: [0; 4],
        with_len: with.len() as u8,
    };
    let mut i = 0;
    while i < text.len() {
        rule.text[i] = text[i];
        i += 1;
    }
    i = 0;
    while i < with.len() {
        rule.with[i] = with[i];
        i += 1;
    }
    rule
}

/// Word beginnings after which R1 starts, whatever the vowels say: without them
/// "general" and "generous" would both stem to "gener".
static R1_PREFIXES: [Rule; 9] = [
    rule("arsen", ""),
    rule("commun", ""),
    rule("emerg", ""),
    rule("gener", ""),
    rule("inter", ""),
    rule("later", ""),
    rule("organ", ""),
    rule("past", ""),
    rule("univers", ""),
];

/// Step 1b suffixes, longest first, so the first that matches is the one Snowball takes.
/// `eed` and `eedly` become `ee` when in R1 (but "proceed", "exceed", "succeed" stay); the
/// others are dropped when the rest has a vowel, `ing` sparing "dying"-like words (→
/// "die") and the stems "even", "cann", "inn", "earr", "herr", "out".
static STEP_1B: [Rule; 6] = [
    rule("eedly", "ee"),
    rule("ingly", ""),
    rule("edly", ""),
    rule("eed", "ee"),
    rule("ing", ""),
    rule("ed", ""),
];

/// Step 2 suffix → replacement, longest first; each applies only inside R1. `ogi` also
/// needs an `l` before it, `li` one of [`valid_li`].
static STEP_2: [Rule; 25] = [
    rule("ational", "ate"),
    rule("fulness", "ful"),
    rule("iveness", "ive"),
    rule("ization", "ize"),
    rule("ousness", "ous"),
    rule("biliti", "ble"),
    rule("lessli", "less"),
    rule("tional", "tion"),
    rule("alism", "al"),
    rule("aliti", "al"),
    rule("ation", "ate"),
    rule("entli", "ent"),
    rule("fulli", "ful"),
    rule("iviti", "ive"),
    rule("ogist", "og"),
    rule("ousli", "ous"),
    rule("abli", "able"),
    rule("alli", "al"),
    rule("anci", "ance"),
    rule("ator", "ate"),
    rule("enci", "ence"),
    rule("izer", "ize"),
    rule("bli", "ble"),
    rule("ogi", "og"),
    rule("li", ""),
];

/// Step 3 suffix → replacement, longest first, inside R1; `ative` only inside R2.
static STEP_3: [Rule; 9] = [
    rule("ational", "ate"),
    rule("tional", "tion"),
    rule("alize", "al"),
    rule("ative", ""),
    rule("icate", "ic"),
    rule("iciti", "ic"),
    rule("ical", "ic"),
    rule("ness", ""),
    rule("ful", ""),
];

/// Step 4 suffixes, longest first, deleted inside R2; `ion` only after `s` or `t`.
static STEP_4: [Rule; 18] = [
    rule("ement", ""),
    rule("able", ""),
    rule("ance", ""),
    rule("ence", ""),
    rule("ible", ""),
    rule("ment", ""),
    rule("ant", ""),
    rule("ate", ""),
    rule("ent", ""),
    rule("ion", ""),
    rule("ism", ""),
    rule("iti", ""),
    rule("ive", ""),
    rule("ize", ""),
    rule("ous", ""),
    rule("al", ""),
    rule("er", ""),
    rule("ic", ""),
];

/// Longest word that is stemmed on the stack.
const STACK_WORD: usize = 64;

/// The Snowball English stem of `word`, which must already be lower-case.
///
/// Borrows `word` when it is unchanged or the stem is a prefix of it; words of at most
/// two bytes and words with anything but `a`–`z` (`"read_file"`, `"ipv6"`, `"café"`) come
/// back unchanged.
pub fn stem_english(word: &str) -> Cow<'_, str> {
    let bytes = word.as_bytes();
    if bytes.len() <= 2 || !bytes.iter().all(u8::is_ascii_lowercase) {
        return Cow::Borrowed(word);
    }
    if let Some(stem) = exception(word) {
        return Cow::Borrowed(stem);
    }
    let mut stack = [0u8; STACK_WORD];
    let mut heap = Vec::new();
    let buf: &mut [u8] = match stack.get_mut(..bytes.len()) {
        Some(buf) => buf,
        None => {
            heap.resize(bytes.len(), 0);
            &mut heap
        }
    };
    buf.copy_from_slice(bytes);
    let len = stem_in_place(buf);
    let stem = &buf[..len];
    if bytes.starts_with(stem) {
        return Cow::Borrowed(&word[..len]);
    }
    match core::str::from_utf8(stem) {
        Ok(stem) => Cow::Owned(String::from(stem)),
        // Not reached: the buffer only ever holds ASCII letters.
        Err(_) => Cow::Borrowed(word),
    }
}

/// Stems the lower-case ASCII word in `b` in place; returns the stem's length (never more
/// than the word's, so no step writes past the buffer).
fn stem_in_place(b: &mut [u8]) -> usize {
    // A y at the start or after a vowel is a consonant: mark it `Y` until the end.
    let mut after_vowel = true;
    for c in b.iter_mut() {
        if *c == b'y' && after_vowel {
            *c = b'Y';
        }
        after_vowel = is_vowel(*c);
    }
    // Compared byte by byte, as `ends`: most prefixes differ at the first letter, and a
    // `memcmp` call per prefix was a sixth of the stemming time.
    let starts = |p: &[u8]| b.len() >= p.len() && b.iter().zip(p).all(|(x, y)| x == y);
    let p1 = match R1_PREFIXES.iter().find(|p| starts(p.text())) {
        Some(prefix) => prefix.text().len(),
        None => region_after(b, 0),
    };
    let p2 = region_after(b, p1);
    let len = b.len();
    let mut w = Word { b, len, p1, p2 };
    w.step_1a();
    w.step_1b();
    w.step_1c();
    w.step_2();
    w.step_3();
    w.step_4();
    w.step_5();
    for c in &mut w.b[..w.len] {
        if *c == b'Y' {
            *c = b'y';
        }
    }
    w.len
}

/// The vowels of the algorithm: `y` is one, a marked `Y` is not.
fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// The letters that a step 2 `li` may follow ("quickli" → "quick", but "itali" stays).
fn valid_li(c: u8) -> bool {
    matches!(
        c,
        b'c' | b'd' | b'e' | b'g' | b'h' | b'k' | b'm' | b'n' | b'r' | b't'
    )
}

/// Where a region starting at `from` begins: after the first non-vowel that follows a
/// vowel, or the end of the word when there is none.
fn region_after(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() && !is_vowel(b[i]) {
        i += 1;
    }
    while i < b.len() && is_vowel(b[i]) {
        i += 1;
    }
    (i + 1).min(b.len())
}

/// Whether `s` ends in a short syllable: non-vowel, vowel, non-vowel other than `w`, `x`,
/// `Y` ("hop"); or vowel, non-vowel as the whole word ("at"); or `past`.
fn short_v(s: &[u8]) -> bool {
    match s {
        [.., a, v, c]
            if !is_vowel(*a)
                && is_vowel(*v)
                && !is_vowel(*c)
                && !matches!(c, b'w' | b'x' | b'Y') =>
        {
            true
        }
        [v, c] if is_vowel(*v) && !is_vowel(*c) => true,
        _ => s.ends_with(b"past"),
    }
}

/// The word being stemmed: the first `len` bytes of `b`, with its regions R1 (`p1..`) and
/// R2 (`p2..`) as found on the whole word.
struct Word<'b> {
    b: &'b mut [u8],
    len: usize,
    p1: usize,
    p2: usize,
}

impl Word<'_> {
    fn word(&self) -> &[u8] {
        &self.b[..self.len]
    }

    /// `ends_with`, compared from the last byte with an early exit: most table entries
    /// differ there, and `ends_with`'s `memcmp` call per entry made stemming half again as
    /// slow.
    fn ends(&self, suffix: &[u8]) -> bool {
        let word = self.word();
        word.len() >= suffix.len()
            && word
                .iter()
                .rev()
                .zip(suffix.iter().rev())
                .all(|(a, b)| a == b)
    }

    /// Whether the last `n` bytes lie inside R1.
    fn in_r1(&self, n: usize) -> bool {
        self.len - n >= self.p1
    }

    /// Whether the last `n` bytes lie inside R2.
    fn in_r2(&self, n: usize) -> bool {
        self.len - n >= self.p2
    }

    /// The letter just before the last `n` bytes, if any.
    fn before(&self, n: usize) -> Option<u8> {
        self.len.checked_sub(n + 1).map(|i| self.b[i])
    }

    /// Replaces the last `n` bytes with `with` (never longer than `n`, but for the `e`
    /// step 1b appends after dropping at least two bytes).
    fn replace(&mut self, n: usize, with: &[u8]) {
        let start = self.len - n;
        self.b[start..start + with.len()].copy_from_slice(with);
        self.len = start + with.len();
    }

    /// Plurals: `sses` → `ss`, `ies`/`ied` → `i` (or `ie` after one letter), a final `s`
    /// dropped when a vowel comes before the letter it follows ("gaps", not "gas").
    fn step_1a(&mut self) {
        if self.ends(b"sses") {
            self.replace(4, b"ss");
        } else if self.ends(b"ied") || self.ends(b"ies") {
            let with: &[u8] = if self.len > 4 { b"i" } else { b"ie" };
            self.replace(3, with);
        } else if self.ends(b"s")
            && !self.ends(b"ss")
            && !self.ends(b"us")
            && self.b[..self.len.saturating_sub(2)]
                .iter()
                .any(|&c| is_vowel(c))
        {
            self.len -= 1;
        }
    }

    /// `-ed`, `-ing` and their `-ly` forms, then the stem mended: `at`/`bl`/`iz` and short
    /// words get their `e` back ("hoping" → "hope"), a doubled final letter is undoubled
    /// ("hopping" → "hop").
    fn step_1b(&mut self) {
        let Some(rule) = STEP_1B.iter().find(|r| self.ends(r.text())) else {
            return;
        };
        let (suffix, with) = (rule.text(), rule.with());
        let n = suffix.len();
        let stem = &self.b[..self.len - n];
        match suffix {
            b"eed" | b"eedly" => {
                if self.in_r1(n) && !matches!(stem, b"succ" | b"proc" | b"exc") {
                    self.replace(n, with);
                }
                return;
            }
            b"ing" => {
                if let [c, b'y'] = stem {
                    if !is_vowel(*c) {
                        self.replace(4, b"ie");
                        return;
                    }
                }
                if matches!(
                    stem,
                    b"even" | b"cann" | b"inn" | b"earr" | b"herr" | b"out"
                ) {
                    return;
                }
            }
            _ => {}
        }
        if !stem.iter().any(|&c| is_vowel(c)) {
            return;
        }
        self.len -= n;
        if let [.., b'a', b't'] | [.., b'b', b'l'] | [.., b'i', b'z'] = self.word() {
            self.replace(0, b"e");
        } else if let [.., x, y] = *self.word() {
            if x == y
                && matches!(
                    y,
                    b'b' | b'd' | b'f' | b'g' | b'm' | b'n' | b'p' | b'r' | b't'
                )
            {
                // "add", "err", "off" keep their double.
                if !(self.len == 3 && matches!(self.b[0], b'a' | b'e' | b'o')) {
                    self.len -= 1;
                }
            } else if self.len == self.p1 && short_v(self.word()) {
                self.replace(0, b"e");
            }
        }
    }

    /// A final `y` after a non-vowel that is not the first letter becomes `i` ("cry" →
    /// "cri", "by" stays).
    fn step_1c(&mut self) {
        if let [_, .., c, b'y' | b'Y'] = *self.word() {
            if !is_vowel(c) {
                self.b[self.len - 1] = b'i';
            }
        }
    }

    /// Double suffixes reduced to single ones inside R1 ("relational" → "relate").
    fn step_2(&mut self) {
        // The shortest suffix, `li`, must fit in R1; most short words stop here.
        if self.len < self.p1 + 2 {
            return;
        }
        let Some(rule) = STEP_2.iter().find(|r| self.ends(r.text())) else {
            return;
        };
        let (suffix, n) = (rule.text(), rule.text().len());
        if !self.in_r1(n) {
            return;
        }
        let before = self.before(n);
        match suffix {
            b"ogi" if before != Some(b'l') => {}
            b"li" if !before.is_some_and(valid_li) => {}
            _ => self.replace(n, rule.with()),
        }
    }

    /// `-ical`, `-ness`, `-ful`, … inside R1 ("hopeful" → "hope").
    fn step_3(&mut self) {
        if self.len < self.p1 + 3 {
            return;
        }
        let Some(rule) = STEP_3.iter().find(|r| self.ends(r.text())) else {
            return;
        };
        let (suffix, n) = (rule.text(), rule.text().len());
        if self.in_r1(n) && (suffix != b"ative" || self.in_r2(n)) {
            self.replace(n, rule.with());
        }
    }

    /// Plain suffixes deleted inside R2 ("adjustment" → "adjust").
    fn step_4(&mut self) {
        if self.len < self.p2 + 2 {
            return;
        }
        let Some(rule) = STEP_4.iter().find(|r| self.ends(r.text())) else {
            return;
        };
        let n = rule.text().len();
        if self.in_r2(n) && (rule.text() != b"ion" || matches!(self.before(n), Some(b's' | b't'))) {
            self.len -= n;
        }
    }

    /// A final `e` inside R2, or inside R1 after no short syllable, goes; `ll` inside R2
    /// becomes `l`.
    fn step_5(&mut self) {
        let drop_last = match *self.word() {
            [.., b'e'] => self.in_r2(1) || (self.in_r1(1) && !short_v(&self.b[..self.len - 1])),
            [.., b'l', b'l'] => self.in_r2(1),
            _ => false,
        };
        if drop_last {
            self.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    // stem_fixture.txt is Snowball's own output (PyPI `snowballstemmer` 3.1.1) for every
    // 17th word of Debian's `wamerican` list that is three or more letters a–z, plus the
    // exceptional words and tricky suffixes below. Regenerate it, in this folder, with:
    //
    //     import re, snowballstemmer  # pip install snowballstemmer (3.1.1); apt-get install wamerican
    //     stem = snowballstemmer.stemmer("english").stemWord
    //     words = {w.strip().lower() for w in open("/usr/share/dict/words")}
    //     words = {w for w in words if re.fullmatch("[a-z]{3,}", w)}
    //     words = set(sorted(words)[::17]) | set("""
    //     andes atlas bias cosmos early gently howe idly news only singly skies skis sky ugly dying
    //     lying tying vying eying eyeing inning innings outing canning herring earring earrings evening
    //     proceed proceeded exceed exceeds succeed succeeded generous generously general generate
    //     communication community communism arsenal arsenic emergency emergent international interest
    //     lateral later organization organic past paste pasted pasting universal university universe
    //     ties cries flies dies tied cried spied caresses misses passes gas gaps kiwis this bus hopping
    //     hoping filing filed hoped hopped failing controlling rolling added erred offing agreed
    //     agreedly feed feedly heedly bleed speed need freed relational conditional rational national
    //     hopefulness carefulness famously nervously biology geology analogy apology biologist quickly
    //     gladly lovely happily radically carelessly currently possibly reasonably ability formality
    //     sensitivity organizer operator feudalism valency hesitancy effectiveness callousness
    //     duplicate formative normalize electricity electrical hopeful goodness adjustment agreement
    //     dependent adoption decision vision rate create roll hope sayings saying yes enjoying you
    //     yellow toy toys boy player playing yyy ayy yay youth yearly annoyingly employed obeying bye
    //     cry crying crier the was bed ies ied sss ssses luxuriating sized sizing bled troubled
    //     fizzed plastered happy generic commune communal knitting sitting rating
    //     """.split()) | {"pneumonoultramicroscopicsilicovolcanoconiosis" "establishmentarianisms"}
    //     open("stem_fixture.txt", "w").writelines(f"{w} {stem(w)}\n" for w in sorted(words))
    use super::*;
    use alloc::format;
    use alloc::vec::Vec;

    const FIXTURE: &str = include_str!("stem_fixture.txt");

    #[test]
    fn every_fixture_word_stems_as_snowball_does() {
        let mut pairs = 0;
        let mut wrong = Vec::new();
        for line in FIXTURE.lines() {
            let Some((word, want)) = line.split_once(' ') else {
                panic!("fixture line without a space: {line:?}");
            };
            pairs += 1;
            let got = stem_english(word);
            if got != want {
                wrong.push(format!("{word}: got {got}, want {want}"));
            }
        }
        assert!(pairs > 4_000, "fixture has only {pairs} pairs");
        assert!(
            wrong.is_empty(),
            "{} of {pairs} differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn words_that_are_not_plain_english_come_back_borrowed_and_unchanged() {
        for word in [
            "",
            "a",
            "is",
            "ly",
            "read_file",
            "ipv6",
            "x86",
            "mp3s",
            "café",
            "naïve",
            "running-",
            "Running",
            "größe",
            "日本語",
            "2024",
        ] {
            let got = stem_english(word);
            assert!(
                matches!(got, Cow::Borrowed(w) if w == word),
                "{word:?} became {got:?}"
            );
        }
    }

    #[test]
    fn a_stem_that_is_a_prefix_borrows_and_a_rewritten_one_is_owned() {
        let cases = [
            ("hopping", "hop", true),
            ("connections", "connect", true),
            ("happy", "happi", false),
            ("dying", "die", false),
            ("skies", "sky", true),
        ];
        for (word, stem, borrowed) in cases {
            let got = stem_english(word);
            assert_eq!(got, stem, "{word}");
            assert_eq!(matches!(got, Cow::Borrowed(_)), borrowed, "{word}");
        }
    }

    #[test]
    fn a_word_longer_than_the_stack_buffer_is_stemmed_all_the_same() {
        let word = "pneumonoultramicroscopicsilicovolcanoconiosisestablishmentarianisms";
        assert!(word.len() > STACK_WORD);
        assert_eq!(stem_english(word), &word[..word.len() - 4]);
    }
}
