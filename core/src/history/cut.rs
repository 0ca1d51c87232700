//! Cutting text without splitting a character: by bytes, by characters, by tokens.
//!
//! Every cut in the history module goes through here so that no rule can produce
//! invalid UTF-8 or a panic on a multi-byte character at the cut.

use alloc::format;
use alloc::string::String;

use crate::text::estimate_text_tokens;

/// The largest char boundary of `s` at or below `i` (clamped to `s.len()`).
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1; // 0 is always a boundary, so this stops
    }
    i
}

/// The smallest char boundary of `s` at or above `i` (clamped to `s.len()`).
pub fn ceil_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i += 1; // s.len() is always a boundary, so this stops
    }
    i
}

/// The first `n` characters of `s` (all of it when shorter).
pub fn char_prefix(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// The longest prefix of `s`, on a char boundary, whose estimate is at most
/// `max_tokens`. The estimate only grows as characters are added, so a binary search
/// over byte positions finds it.
pub fn prefix_within_tokens(s: &str, max_tokens: usize) -> &str {
    if estimate_text_tokens(s) <= max_tokens {
        return s;
    }
    // Invariant: prefix ..lo fits, prefix ..hi does not.
    let (mut lo, mut hi) = (0usize, s.len());
    while hi - lo > 1 {
        let half = lo + (hi - lo) / 2;
        let mut mid = floor_char_boundary(s, half);
        if mid <= lo {
            mid = ceil_char_boundary(s, half);
            if mid >= hi {
                break; // no char boundary strictly between lo and hi
            }
        }
        if estimate_text_tokens(s.get(..mid).unwrap_or("")) <= max_tokens {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    s.get(..lo).unwrap_or("")
}

/// The marker appended to a text cut to its first characters.
pub fn cut_marker(omitted_chars: usize) -> String {
    format!("\n[… {omitted_chars} chars cut]")
}

/// `s` cut to its first `max_chars` characters plus a marker naming how many were
/// cut, or `None` when it is not longer than that.
pub fn cut_to_chars(s: &str, max_chars: usize) -> Option<String> {
    let head = char_prefix(s, max_chars);
    if head.len() == s.len() {
        return None;
    }
    let omitted = s.get(head.len()..).unwrap_or("").chars().count();
    let mut out = String::with_capacity(head.len() + 24);
    out.push_str(head);
    out.push_str(&cut_marker(omitted));
    Some(out)
}

/// `s` cut so that the result, marker included, is estimated at most `max_tokens`
/// (an empty text when not even the marker fits), or `None` when it already fits.
pub fn cut_to_tokens(s: &str, max_tokens: usize) -> Option<String> {
    if estimate_text_tokens(s) <= max_tokens {
        return None;
    }
    // The marker names a count we do not know yet; reserve the widest one.
    let marker_tokens = estimate_text_tokens(&cut_marker(s.len()));
    if marker_tokens > max_tokens {
        return Some(String::new());
    }
    let head = prefix_within_tokens(s, max_tokens - marker_tokens);
    let omitted = s.get(head.len()..).unwrap_or("").chars().count();
    let mut out = String::from(head);
    out.push_str(&cut_marker(omitted));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_never_split_a_character() {
        let s = "a中b"; // bytes: a | e4 b8 ad | b
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(ceil_char_boundary(s, 2), 4);
        assert_eq!(floor_char_boundary(s, 99), 5);
        assert_eq!(ceil_char_boundary(s, 99), 5);
        assert_eq!(char_prefix(s, 2), "a中");
        assert_eq!(char_prefix(s, 9), s);
    }

    #[test]
    fn cut_to_chars_keeps_the_first_chars_and_names_the_rest() {
        assert_eq!(cut_to_chars("abc", 3), None);
        assert_eq!(
            cut_to_chars("中文字符", 2).unwrap(),
            "中文\n[… 2 chars cut]"
        );
    }

    #[test]
    fn cut_to_tokens_fits_the_limit_marker_included() {
        let text = "中文abc".repeat(500);
        for max in [0, 3, 8, 9, 10, 50, 333] {
            let out = cut_to_tokens(&text, max).unwrap();
            assert!(estimate_text_tokens(&out) <= max, "{max}");
        }
        assert_eq!(cut_to_tokens("abcd", 1), None);
        let p = prefix_within_tokens("中中中中", 2);
        assert_eq!(p, "中中中"); // 3 CJK chars = 2 tokens, 4 = 3
                                 // The longest fitting prefix, also when the byte midpoint is inside a char.
        for max in 0..12 {
            let s = "中a中bb中ccc中";
            let p = prefix_within_tokens(s, max);
            assert!(estimate_text_tokens(p) <= max);
            let next = s[p.len()..].chars().next();
            if let Some(c) = next {
                let longer = &s[..p.len() + c.len_utf8()];
                assert!(estimate_text_tokens(longer) > max, "{max}: {p:?}");
            }
        }
    }
}
