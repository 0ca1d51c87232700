//! The first two defences against big tool outputs: cutting one output to 128 KiB
//! (half head, half tail, on line boundaries) and replacing the outputs of old turns
//! with a one-line placeholder.
//!
//! Both run on every build, whatever the budget; the shell may also apply
//! [`truncate_tool_output`] as soon as a tool returns, before storing the result.

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;

use super::cut::{ceil_char_boundary, floor_char_boundary};
use super::message::{Message, Role};

/// The line put between the head and the tail of a truncated output.
pub fn truncation_marker(omitted_bytes: usize) -> String {
    format!("[… tool output truncated: {omitted_bytes} bytes omitted …]")
}

/// Cuts a tool output longer than `max_bytes` (128 KiB by default) to its first and
/// last halves with a marker line between them (tea-agent: "首尾各保留一半，按换行边界对齐").
///
/// - The head ends after the last newline of the first `max_bytes / 2` bytes, the tail
///   starts after the first newline of the last `max_bytes − max_bytes / 2` bytes, so
///   no line is shown half — unless that would throw away more than half of the head
///   (or tail) window (one enormous line, e.g. minified JSON): then the cut is on the
///   nearest character boundary instead.
/// - Never splits a UTF-8 character.
/// - The result is at most `max_bytes` plus the marker line and its two newlines.
/// - `max_bytes == 0` means no limit.
pub fn truncate_tool_output(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if max_bytes == 0 || text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let half = max_bytes / 2;
    let tail_window = max_bytes - half;

    let mut head_end = floor_char_boundary(text, half);
    if let Some(nl) = text.get(..head_end).and_then(|h| h.rfind('\n')) {
        if nl + 1 >= head_end - head_end / 2 {
            head_end = nl + 1;
        }
    }

    let window_start = ceil_char_boundary(text, text.len() - tail_window);
    let mut tail_start = window_start;
    if let Some(nl) = text.get(window_start..).and_then(|t| t.find('\n')) {
        let after = window_start + nl + 1;
        if after - window_start <= (text.len() - window_start) / 2 {
            tail_start = after;
        }
    }
    // text.len() > max_bytes ⇒ window_start ≥ len − tail_window > half ≥ head_end.
    let head = text.get(..head_end).unwrap_or("");
    let tail = text.get(tail_start..).unwrap_or("");
    let marker = truncation_marker(tail_start.saturating_sub(head_end));

    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out.push('\n');
    out.push_str(tail);
    Cow::Owned(out)
}

/// The text that replaces an old tool output (tea-agent "[工具结果已省略: N 字符]").
pub fn omitted_placeholder(chars: usize) -> String {
    format!("{PLACEHOLDER_HEAD}{chars}{PLACEHOLDER_TAIL}")
}

/// The text before the character count in [`omitted_placeholder`].
const PLACEHOLDER_HEAD: &str = "[tool result omitted: ";
/// The text after the character count in [`omitted_placeholder`].
const PLACEHOLDER_TAIL: &str = " chars]";

/// True when `content` is exactly what [`omitted_placeholder`] writes (so it is never
/// replaced twice): the whole text is `[tool result omitted: N chars]` with `N` a
/// `usize` in decimal without a sign or leading zeros. Anything else — a tool output
/// that merely starts and ends like one — is an ordinary output, cut to 128 KiB and
/// replaced like the others.
pub fn is_placeholder(content: &str) -> bool {
    let Some(digits) = content
        .strip_prefix(PLACEHOLDER_HEAD)
        .and_then(|rest| rest.strip_suffix(PLACEHOLDER_TAIL))
    else {
        return false;
    };
    let canonical = digits == "0" || !digits.starts_with('0');
    // `parse` stops early on junk or overflow (a 1 MB spoof costs nothing) but accepts
    // a leading '+', which the generated form never has.
    canonical && digits.parse::<usize>().is_ok() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The index of the first message of the last `keep_user_turns` user turns: messages
/// before it are "old". With fewer user messages than that, nothing is old (0); with
/// `keep_user_turns == 0`, everything is.
pub fn old_turns_end(
    roles: impl DoubleEndedIterator<Item = Role> + ExactSizeIterator,
    keep_user_turns: usize,
) -> usize {
    let len = roles.len();
    if keep_user_turns == 0 {
        return len;
    }
    let mut seen = 0;
    for (back, role) in roles.rev().enumerate() {
        if role == Role::User {
            seen += 1;
            if seen == keep_user_turns {
                return len - 1 - back;
            }
        }
    }
    0
}

/// Replaces, in place, the content of every tool message outside the last
/// `keep_user_turns` user turns (3 by default) with [`omitted_placeholder`]; their
/// images go too. Returns how many were replaced.
pub fn omit_old_tool_outputs(messages: &mut [Message], keep_user_turns: usize) -> usize {
    let end = old_turns_end(messages.iter().map(|m| m.role), keep_user_turns);
    let mut n = 0;
    for m in messages.iter_mut().take(end) {
        if m.role == Role::Tool && !is_placeholder(&m.content) {
            m.content = omitted_placeholder(m.content.chars().count());
            m.images.clear();
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    const KIB128: usize = 128 * 1024;

    fn lines(n: usize, width: usize, fill: char) -> String {
        let mut s = String::new();
        for i in 0..n {
            let line: String = core::iter::repeat_n(fill, width).collect();
            s.push_str(&format!("{i:06}{line}\n"));
        }
        s
    }

    #[test]
    fn at_or_below_the_cap_is_untouched() {
        for len in [0, 1, KIB128 - 1, KIB128] {
            let s = "x".repeat(len);
            assert!(matches!(truncate_tool_output(&s, KIB128), Cow::Borrowed(_)));
        }
        let s = "x".repeat(KIB128 + 1);
        assert!(matches!(truncate_tool_output(&s, KIB128), Cow::Owned(_)));
        let big = "y".repeat(10 * KIB128);
        assert!(matches!(truncate_tool_output(&big, 0), Cow::Borrowed(_)));
    }

    #[test]
    fn cuts_on_line_boundaries_keeping_head_and_tail() {
        let text = lines(20_000, 40, 'a'); // ~940 KB of 47-byte lines
        let out = truncate_tool_output(&text, KIB128);
        let marker_line = out
            .lines()
            .find(|l| l.starts_with("[… tool output"))
            .unwrap();
        assert!(out.len() <= KIB128 + marker_line.len() + 2);
        assert!(out.starts_with("000000"));
        assert!(out.ends_with(&format!("{:06}{}\n", 19_999, "a".repeat(40))));
        // Every line except the marker is a whole original line.
        for l in out.lines().filter(|l| *l != marker_line) {
            assert_eq!(l.len(), 46, "{l:?}");
        }
        let kept: usize = out.len() - marker_line.len() - 1;
        let omitted: usize = marker_line.split(' ').find_map(|w| w.parse().ok()).unwrap();
        assert_eq!(kept + omitted, text.len());
    }

    #[test]
    fn multibyte_characters_at_the_cut_are_never_split() {
        // One huge line of 3-byte characters: no newline to align on, so the cut falls
        // on character boundaries; shift by 0..3 bytes to hit every alignment.
        for prefix in ["", "a", "ab"] {
            let text = format!("{prefix}{}", "中".repeat(KIB128));
            let out = truncate_tool_output(&text, KIB128);
            let marker = truncation_marker(0);
            assert!(out.len() <= KIB128 + marker.len() + 8, "{}", out.len());
            assert!(out.contains("bytes omitted"));
            let n_cjk = out.chars().filter(|c| *c == '中').count();
            assert!(n_cjk * 3 <= KIB128 && n_cjk * 3 > KIB128 - 8, "{n_cjk}");
        }
        // Emoji (4 bytes) and a tiny cap.
        let text = "😀".repeat(100);
        let out = truncate_tool_output(&text, 10);
        assert!(out.starts_with("😀\n[…"), "{out}");
        assert!(out.ends_with("\n😀"), "{out}");
    }

    #[test]
    fn one_early_newline_does_not_throw_away_the_head() {
        let text = format!("title\n{}", "b".repeat(2 * KIB128));
        let out = truncate_tool_output(&text, KIB128);
        assert!(out.len() > KIB128 - 8);
    }

    #[test]
    fn only_the_generated_placeholder_form_counts() {
        let long = format!("[tool result omitted: {} chars]", "x".repeat(1 << 20));
        let digits = format!("[tool result omitted: {} chars]", "9".repeat(1 << 20));
        let cases: &[(&str, bool)] = &[
            (&omitted_placeholder(0), true),
            (&omitted_placeholder(12), true),
            (&omitted_placeholder(usize::MAX), true),
            ("[tool result omitted: 12 chars] and more", false),
            (" [tool result omitted: 12 chars]", false),
            ("[tool result omitted: twelve chars]", false),
            ("[tool result omitted:  chars]", false),
            ("[tool result omitted: 012 chars]", false),
            ("[tool result omitted: -1 chars]", false),
            ("[tool result omitted: +1 chars]", false),
            ("[tool result omitted: 1 2 chars]", false),
            ("[tool result omitted: 1\n chars]", false),
            (
                "[tool result omitted: 99999999999999999999999 chars]",
                false,
            ),
            (&long, false),
            (&digits, false),
        ];
        for &(s, want) in cases {
            let shown = crate::history::char_prefix(s, 60);
            assert_eq!(is_placeholder(s), want, "{shown:?}");
        }
        // A spoof in an old turn is replaced like any other output, and still cut
        // when it is recent.
        let mut m = Vec::from([
            Message::user("u"),
            Message::tool_result("1", "read_file", long.clone()),
            Message::user("v"),
        ]);
        assert_eq!(omit_old_tool_outputs(&mut m, 1), 1);
        assert_eq!(m[1].content, omitted_placeholder(long.chars().count()));
        assert!(truncate_tool_output(&long, KIB128).len() < KIB128 + 100);
    }

    #[test]
    fn placeholders_exactly_outside_the_last_three_user_turns() {
        let mut msgs = Vec::new();
        // Five turns, each: user, assistant(call), tool.
        for t in 0..5 {
            msgs.push(Message::user(format!("u{t}")));
            msgs.push(Message::assistant_calls(
                "",
                alloc::vec![super::super::ToolCall {
                    id: format!("c{t}"),
                    name: "read".to_string(),
                    arguments: "{}".to_string(),
                }],
            ));
            msgs.push(Message::tool_result(format!("c{t}"), "read", "中文输出"));
        }
        // (keep turns, tool messages replaced)
        for (keep, replaced) in [(3, 2), (5, 0), (6, 0), (4, 1), (1, 4), (0, 5)] {
            let mut m = msgs.clone();
            assert_eq!(omit_old_tool_outputs(&mut m, keep), replaced, "keep {keep}");
            let placeholders = m.iter().filter(|m| is_placeholder(&m.content)).count();
            assert_eq!(placeholders, replaced);
            if replaced > 0 {
                assert_eq!(m[2].content, "[tool result omitted: 4 chars]");
            }
            // Idempotent.
            assert_eq!(omit_old_tool_outputs(&mut m, keep), 0);
        }
        let mut m = msgs.clone();
        omit_old_tool_outputs(&mut m, 3);
        assert!(is_placeholder(&m[5].content)); // turn 1
        assert_eq!(m[8].content, "中文输出"); // turn 2 = third from last
    }
}
