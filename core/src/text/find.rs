//! Where a phrase a person searched for occurs in a text as whole words: "tea" is in
//! "green tea" and "tea-time", not in "teacher" or "steam". Chinese and Japanese text has
//! no spaces between words, so next to an ideograph any position is a word's edge.

use super::tokenize::is_cjk;

/// The byte offset of the first occurrence of `phrase` in `text` that starts and ends on
/// a word's edge, or `None`. Both are compared as given (lowercase them first for a
/// search that ignores case); an empty phrase is found nowhere.
pub fn find_words(text: &str, phrase: &str) -> Option<usize> {
    let (first, last) = (phrase.chars().next()?, phrase.chars().next_back()?);
    let edge = |outside: Option<char>, inside: char| {
        outside.is_none_or(|c| !c.is_alphanumeric() || is_cjk(c) || is_cjk(inside))
            || !inside.is_alphanumeric()
    };
    text.match_indices(phrase).map(|(at, _)| at).find(|&at| {
        edge(text[..at].chars().next_back(), first)
            && edge(text[at + phrase.len()..].chars().next(), last)
    })
}

#[cfg(test)]
mod tests {
    use super::find_words;

    #[test]
    fn a_phrase_is_found_only_as_whole_words() {
        for (text, phrase, want) in [
            ("green tea", "tea", Some(6)),
            ("tea", "tea", Some(0)),
            ("tea-time at five", "tea", Some(0)),
            ("(tea)", "tea", Some(1)),
            ("the teacher likes tea", "tea", Some(18)),
            ("teacher", "tea", None),
            ("steam", "tea", None),
            ("a teapot", "tea", None),
            ("i like green tea a lot", "green tea", Some(7)),
            ("evergreen tea", "green tea", None),
            ("version 3.2", "3", Some(8)),
            ("version 32", "3", None),
            ("c++ and rust", "c++", Some(0)),
            ("e-mail me", "e-mail", Some(0)),
            ("我喜欢喝绿茶", "绿茶", Some(12)),
            ("我喜欢喝绿茶", "喝", Some(9)),
            ("用python写", "python", Some(3)),
            ("用pythonic写", "python", None),
            ("anything", "", None),
            ("", "tea", None),
        ] {
            assert_eq!(find_words(text, phrase), want, "{phrase:?} in {text:?}");
        }
    }
}
