//! Dialog memories: who said a turn and whom it names.
//!
//! Decides a memory's *subjects* ([`Memory::subjects`]): the keywords of its speaker
//! label ([`Memory::speaker`], or a leading `Name:` label of the content when none is
//! kept) and of the people named inside it (capitalised words that do not start a
//! sentence: "Hey Mel!", "Caroline's sister"). Only a dialog turn — a memory with a
//! speaker — has subjects: in a plain fact a capitalised word is as often a thing as a
//! person ("The home server is a Raspberry Pi", "runs Debian"), and boosting it would
//! push the fact's neighbours out of the selection. A question that names one of them boosts
//! the memory ([`super::rank::SUBJECT_BOOST`]): the named person's own statements and
//! the turns about them rank above turns that merely share a common word.
//!
//! The link from a turn to the turn before it in the same conversation
//! ([`Memory::prev`]) is set by the shell at ingest (an import of dialog records, the
//! extraction from a session); the ranking reads it ([`super::rank::REPLY_SHARE`]).
//! Chinese has no capitals: its subjects come from the speaker label alone.

use alloc::vec::Vec;

use crate::text::{is_cjk, keyword_hash, KeywordSet, Tokenizer};

/// A label longer than this many characters is not a speaker's name but a sentence
/// ("The plan for Monday: …").
const LABEL_MAX_CHARS: usize = 32;

/// At most this many words make a label ("Dr Anna Lee").
const LABEL_MAX_WORDS: usize = 3;

/// The speaker label a turn's content starts with — `Caroline: Hey Mel!`, `李娜：我搬家了`
/// — when there is one: at most three capitalised words (or a short run of Han
/// characters) before the first colon.
pub fn leading_label(content: &str) -> Option<&str> {
    let end = content.find([':', '：'])?;
    let label = content[..end].trim();
    if label.is_empty() || label.chars().count() > LABEL_MAX_CHARS {
        return None;
    }
    let words: Vec<&str> = label.split_whitespace().collect();
    if words.len() > LABEL_MAX_WORDS {
        return None;
    }
    let cjk = label.chars().all(is_cjk);
    let named = words.iter().all(|w| {
        let mut cs = w.chars();
        cs.next().is_some_and(char::is_uppercase)
            && cs.all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '\''))
    });
    (cjk && label.chars().count() <= 4 || named).then_some(label)
}

/// The subjects of a memory: the keywords of `speaker` (or of the content's leading
/// label) and of the capitalised words inside `content` that do not start a sentence,
/// "I" aside; none when there is no speaker (not a dialog turn). Hashed like keywords,
/// so a question's keywords are compared directly.
pub fn subjects(speaker: Option<&str>, content: &str, tokenizer: &dyn Tokenizer) -> KeywordSet {
    let mut hashes = Vec::new();
    let mut add = |text: &str| {
        tokenizer.for_each_keyword(text, &mut |k| hashes.push(keyword_hash(k)));
    };
    let label = speaker
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .or_else(|| leading_label(content));
    // The body after a leading label: its first word starts a sentence.
    let body = leading_label(content)
        .and_then(|_| content.split_once([':', '：']))
        .map_or(content, |(_, rest)| rest);
    let Some(l) = label else {
        return KeywordSet::from_hashes(hashes);
    };
    add(l);
    let mut sentence_start = true;
    for raw in body.split_whitespace() {
        let word = raw.trim_start_matches(|c: char| !c.is_alphanumeric());
        let name = word
            .trim_end_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches("'s")
            .trim_end_matches("’s");
        let capital = name.chars().next().is_some_and(char::is_uppercase);
        // "I", "I'm" and the like are no one's name; an all-capital word of two or more
        // letters ("LGBTQ", "NYC") still is a subject worth naming.
        let pronoun = name == "I" || name.starts_with("I'") || name.starts_with("I’");
        if capital && !sentence_start && !pronoun {
            add(name);
        }
        sentence_start = raw.ends_with(['.', '!', '?', ':', ';', '。', '！', '？'])
            || raw.ends_with(".\"")
            || raw.ends_with("!\"")
            || raw.ends_with("?\"");
    }
    KeywordSet::from_hashes(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::FallbackTokenizer;

    fn has(set: &KeywordSet, word: &str) -> bool {
        set.contains(keyword_hash(
            &FallbackTokenizer.keywords(word).pop().unwrap_or_default(),
        ))
    }

    #[test]
    fn a_leading_label_is_a_short_name_before_the_colon() {
        let table = [
            ("Caroline: Hey Mel!", Some("Caroline")),
            ("Dr Anna Lee: the results are in", Some("Dr Anna Lee")),
            ("李娜：我搬到杭州了", Some("李娜")),
            ("the plan for Monday: buy milk", None),
            ("Remember this one thing for me please: tea", None),
            ("no colon here", None),
            (": empty", None),
            ("我们下周去哪里旅行比较好：杭州", None),
        ];
        for (text, want) in table {
            assert_eq!(leading_label(text), want, "{text}");
        }
    }

    #[test]
    fn subjects_are_the_speaker_and_the_people_named_mid_sentence() {
        let t = &FallbackTokenizer;
        let s = subjects(None, "Caroline: Hey Mel! I went to see Jon's band.", t);
        assert!(has(&s, "Caroline"), "the leading label");
        assert!(has(&s, "Mel"), "named mid-sentence");
        assert!(has(&s, "Jon"), "a possessive names its owner");
        assert!(
            !has(&s, "Hey"),
            "the first word of a sentence is not a name"
        );
        assert!(!has(&s, "went"));
        // A kept speaker wins over the content's label; a sentence start after "!" is
        // no name.
        let s = subjects(Some("Melanie"), "Thanks! Painting helps me.", t);
        assert!(has(&s, "Melanie"));
        assert!(!has(&s, "Painting"));
        assert_eq!(s.len(), 1);
        // No capitals, no label: no subjects.
        assert!(subjects(None, "likes green tea", t).is_empty());
        // Not a dialog turn: capitalised things are no one's name.
        for fact in [
            "The home server is a Raspberry Pi 4 running Debian 12",
            "Renew the TLS certificate of the Raspberry Pi server before March",
            "the user met Anna in Berlin",
        ] {
            assert!(subjects(None, fact, t).is_empty(), "{fact}");
        }
        // Chinese: the label only.
        let s = subjects(None, "李娜：我搬到杭州了", t);
        assert!(!s.is_empty());
        assert!(s
            .as_slice()
            .iter()
            .all(|h| KeywordSet::of(t, "李娜").contains(*h)));
    }

    #[test]
    fn the_pronoun_i_is_nobodys_name() {
        let s = subjects(
            Some("Bo"),
            "so I think I'm going, said Anna",
            &FallbackTokenizer,
        );
        assert!(has(&s, "Anna"));
        assert_eq!(s.len(), 2, "{s:?}");
    }
}
