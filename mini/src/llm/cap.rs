//! The cap on one answer (`[model] max_answer_bytes`): how much of what a model sends
//! is kept.
//!
//! Decides: every piece of an answer — reasoning, text, tool-call names and arguments —
//! counts in bytes against one [`Budget`]; the piece that crosses it is cut at a
//! character boundary and nothing after it is kept; a cut answer ends with a [`note`]
//! saying where and why. It also sets how many bytes of the wire one answer may take
//! ([`wire_limit`]). Reading incrementally and stopping at the cap is the client's and
//! the transport's; what a turn does with a cut tool call is the manager's.

use evolve_core::history::{floor_char_boundary, Message};

use super::AnswerCut;

/// Room on the wire for the JSON around an answer (the completion's or each event's
/// envelope, usage, ids).
const ENVELOPE: u64 = 64 * 1024;

/// The bytes of the wire read for one answer (a body, or one line of a stream) with a
/// cap of `max_answer` bytes of text: twice the text — JSON may escape it (`\"`, `\n`,
/// `\u4e2d` for a CJK character of three bytes) — and the envelope.
pub(crate) fn wire_limit(max_answer: usize) -> u64 {
    (max_answer as u64)
        .saturating_mul(2)
        .saturating_add(ENVELOPE)
}

/// The note that ends a cut answer.
pub(crate) fn note(max_answer: usize) -> String {
    format!("[answer cut at {}: max_answer_bytes]", size(max_answer))
}

/// `n` bytes as people read it: `1 MiB`, `512 KiB`, `5000 bytes`.
pub(crate) fn size(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n % MIB == 0 {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n % KIB == 0 {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// `n` bytes to one decimal, for a measured size: `3.4 MiB`, `12.0 KiB`, `900 bytes`.
pub(crate) fn size_approx(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB {
        format!("{:.1} MiB", f / KIB / KIB)
    } else if f >= KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// Bytes of an answer kept so far, and where it was cut.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    limit: usize,
    used: usize,
    cut: Option<AnswerCut>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            used: 0,
            cut: None,
        }
    }

    /// Where the answer was cut, once it was.
    pub fn cut(&self) -> Option<AnswerCut> {
        self.cut
    }

    /// How many bytes of `piece` fit (at a character boundary); once a piece did not fit
    /// whole, none of any later piece does. `at` is where the piece goes, for the record.
    pub fn admit(&mut self, piece: &str, at: AnswerCut) -> usize {
        if self.cut.is_some() {
            return 0;
        }
        let left = self.limit - self.used;
        if piece.len() <= left {
            self.used += piece.len();
            return piece.len();
        }
        let keep = floor_char_boundary(piece, left);
        self.used += keep;
        self.cut = Some(at);
        keep
    }

    /// Marks the answer cut at `at` although the budget is not spent: the wire held more
    /// than [`wire_limit`] (a line or a body too long to read whole).
    pub fn force_cut(&mut self, at: AnswerCut) {
        self.cut.get_or_insert(at);
    }

    /// Cuts a whole message in place, in the order a stream brings it: reasoning, text,
    /// then each tool call; the calls after a cut one are dropped (never seen whole).
    /// Nothing is copied.
    pub fn cut_message(&mut self, m: &mut Message) {
        if let Some(r) = m.reasoning.as_mut() {
            let keep = self.admit(r, AnswerCut::Text);
            r.truncate(keep);
        }
        let keep = self.admit(&m.content, AnswerCut::Text);
        m.content.truncate(keep);
        let mut whole = 0;
        for (i, c) in m.tool_calls.iter_mut().enumerate() {
            if self.cut.is_some() {
                break;
            }
            let keep = self.admit(&c.name, AnswerCut::ToolArguments(i));
            c.name.truncate(keep);
            let keep = self.admit(&c.arguments, AnswerCut::ToolArguments(i));
            c.arguments.truncate(keep);
            whole = i + 1;
        }
        m.tool_calls.truncate(whole);
    }
}

impl Default for Budget {
    /// No cap (a completion that was already cut, tests).
    fn default() -> Budget {
        Budget::new(usize::MAX)
    }
}

/// Adds the note to a cut message's text (after a blank line when there is text) and
/// returns the text added, for a stream to show.
pub(crate) fn add_note(m: &mut Message, max_answer: usize) -> String {
    let sep = if m.content.trim().is_empty() {
        ""
    } else {
        "\n\n"
    };
    let added = format!("{sep}{}", note(max_answer));
    m.content.push_str(&added);
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::history::ToolCall;

    #[test]
    fn pieces_are_kept_until_the_cap_then_cut_at_a_character() {
        // (limit, pieces, kept, cut)
        let cases: &[(usize, &[&str], &[&str], bool)] = &[
            (10, &["abc", "def"], &["abc", "def"], false),
            (6, &["abc", "def"], &["abc", "def"], false),
            (5, &["abc", "def", "ghi"], &["abc", "de", ""], true),
            // "中" is three bytes: a cut inside it keeps none of it.
            (4, &["ab", "中文"], &["ab", ""], true),
            (5, &["ab", "中文"], &["ab", "中"], true),
            (0, &["a"], &[""], true),
            (3, &["", "abc", ""], &["", "abc", ""], false),
        ];
        for (limit, pieces, kept, cut) in cases {
            let mut b = Budget::new(*limit);
            let got: Vec<&str> = pieces
                .iter()
                .map(|p| &p[..b.admit(p, AnswerCut::Text)])
                .collect();
            assert_eq!(&got, kept, "limit {limit}, {pieces:?}");
            assert_eq!(b.cut().is_some(), *cut, "limit {limit}, {pieces:?}");
        }
    }

    #[test]
    fn a_whole_message_is_cut_in_stream_order_without_later_calls() {
        let call = |name: &str, args: &str| ToolCall {
            id: format!("id-{name}"),
            name: name.into(),
            arguments: args.into(),
        };
        let mut m = Message::assistant("0123456789");
        m.reasoning = Some("think".into());
        m.tool_calls = vec![call("one", "{\"a\":1}"), call("two", "{\"b\":2}")];
        // 5 + 10 + 3 + 7 = 25 bytes fit whole; the second call's arguments do not.
        let mut b = Budget::new(30);
        b.cut_message(&mut m);
        assert_eq!(b.cut(), Some(AnswerCut::ToolArguments(1)));
        assert_eq!(m.tool_calls.len(), 2);
        assert_eq!(m.tool_calls[1].arguments, "{\"");
        // A cut in the text drops every call.
        let mut m2 = Message::assistant("0123456789");
        m2.tool_calls = vec![call("one", "{}")];
        let mut b = Budget::new(4);
        b.cut_message(&mut m2);
        assert_eq!((m2.content.as_str(), m2.tool_calls.len()), ("0123", 0usize));
        assert_eq!(b.cut(), Some(AnswerCut::Text));
        // The calls after a cut call are dropped.
        let mut m3 = Message::assistant("");
        m3.tool_calls = vec![call("one", "{\"long\":true}"), call("two", "{}")];
        let mut b = Budget::new(6);
        b.cut_message(&mut m3);
        assert_eq!(m3.tool_calls.len(), 1);
        assert_eq!(b.cut(), Some(AnswerCut::ToolArguments(0)));
    }

    #[test]
    fn the_note_follows_the_text_after_a_blank_line() {
        let mut m = Message::assistant("too ");
        assert_eq!(
            add_note(&mut m, 4),
            "\n\n[answer cut at 4 bytes: max_answer_bytes]"
        );
        assert_eq!(
            m.content,
            "too \n\n[answer cut at 4 bytes: max_answer_bytes]"
        );
        let mut empty = Message::assistant("");
        add_note(&mut empty, 4096);
        assert_eq!(empty.content, "[answer cut at 4 KiB: max_answer_bytes]");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        let cases = [
            (1024 * 1024, "1 MiB"),
            (16 * 1024 * 1024, "16 MiB"),
            (512 * 1024, "512 KiB"),
            (4096, "4 KiB"),
            (5000, "5000 bytes"),
            (1536 * 1024, "1536 KiB"),
        ];
        for (n, text) in cases {
            assert_eq!(size(n), text);
        }
        assert_eq!(note(1024 * 1024), "[answer cut at 1 MiB: max_answer_bytes]");
        assert_eq!(wire_limit(1024 * 1024), 2 * 1024 * 1024 + 64 * 1024);
    }
}
