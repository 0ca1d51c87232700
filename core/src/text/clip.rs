//! Cutting texts for display in a prompt or a listing: to a number of characters, on
//! one line, with "…" where something was cut.

use alloc::string::String;
use core::fmt::Write;

/// `text` safe to show on a terminal: control characters (ESC, CR, BEL, C1 codes such
/// as CSI, DEL …) become visible `\u{..}` escapes, so text from a model or a server
/// cannot move the cursor, redraw a question or write the clipboard. Newlines and tabs
/// stay when `keep_lines`.
pub fn escape_controls(text: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && !(keep_lines && (c == '\n' || c == '\t')) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` cut to at most `max` characters; a cut text ends in `…` (counted in `max`).
pub fn clip_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return String::from(text);
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    if max > 0 {
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push('…');
    }
    out
}

/// `text` on one line — every run of white space (newlines included) becomes one
/// space, the ends trimmed — cut to at most `max` characters with `…`
/// ([`clip_chars`]).
pub fn one_line(text: &str, max: usize) -> String {
    let mut flat = String::with_capacity(text.len().min(max.saturating_mul(4) + 4));
    let mut chars = 0usize;
    for word in text.split_whitespace() {
        if !flat.is_empty() {
            flat.push(' ');
            chars += 1;
        }
        flat.push_str(word);
        chars += word.chars().count();
        if chars > max {
            break; // enough to know it is cut
        }
    }
    clip_chars(&flat, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_counts_characters_and_the_ellipsis() {
        assert_eq!(clip_chars("茶茶茶", 3), "茶茶茶");
        assert_eq!(clip_chars("茶茶茶茶", 3), "茶茶…");
        assert_eq!(clip_chars("abc", 0), "");
        assert_eq!(clip_chars("ab cd", 4), "ab…");
        assert_eq!(clip_chars(&"x".repeat(5000), 2000).chars().count(), 2000);
    }

    #[test]
    fn one_line_folds_white_space_then_clips() {
        assert_eq!(one_line("  a\n\n b\tc  ", 10), "a b c");
        assert_eq!(one_line("第一行\n第二行", 5), "第一行…");
        assert_eq!(one_line("hello world", 11), "hello world");
        assert_eq!(one_line("hello world", 8), "hello w…");
        assert_eq!(one_line("hello world", 7), "hello…");
        assert_eq!(one_line("", 3), "");
    }
}

#[cfg(test)]
mod escape_tests {
    use super::escape_controls;

    #[test]
    fn controls_become_visible_and_lines_stay_when_asked() {
        assert_eq!(
            escape_controls("a\u{1b}[2Jb\rc", false),
            "a\\u{1b}[2Jb\\u{d}c"
        );
        assert_eq!(escape_controls("x\ny\tz\u{9b}", true), "x\ny\tz\\u{9b}");
        assert_eq!(escape_controls("x\ny", false), "x\\u{a}y");
        assert_eq!(escape_controls("上海 ok", false), "上海 ok");
    }
}
