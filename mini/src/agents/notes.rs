//! Two short notes the cheap model keeps per session, after the answer (tea-agent:
//! 标题摘要 auto_summary and 工具链摘要): the session's one-line title, written after its
//! first answer, and the tool-chain review L3 injects under its own heading (历史工具调用
//! 链回顾), updated after each turn with tool calls. Both are parts of the one call
//! after the answer (`post_turn`), never on the answer's path: this module says when
//! each is wanted, what the model reads for it, and how its reply is cleaned and kept;
//! a failed or unusable part leaves the previous note and says why.

use evolve_core::text::{clip_chars, one_line};

use super::runtime::Runtime;
use super::trace::ToolStep;
use crate::store::{TitleFrom, TITLE_CHARS};

/// The tool-chain review is kept to this many characters (about 300 tokens of L3).
pub const TOOL_CHAIN_CHARS: usize = 1_200;

/// Turns after which a session still titled from its question asks for a title again
/// (the first answer's call failed): the third turn is the last try.
const TITLE_TRIES: u64 = 3;

/// Whether the session wants a title from this turn: it has none but its question's,
/// the user has not renamed it, the answer is not empty, and the first answer's try (or
/// a retry after a failed one, up to [`TITLE_TRIES`]) is due.
pub fn title_wanted(rt: &Runtime, session: &str, turn: u64, reply: &str) -> bool {
    if turn > TITLE_TRIES || reply.trim().is_empty() {
        return false;
    }
    rt.store
        .session(session)
        .is_ok_and(|s| s.title_from == TitleFrom::Question)
}

/// Saves the title the model gave (`text`, cleaned). The title, or `None`: none given
/// (the question's stays, and the next turn asks again), none usable (in `problems`), or
/// the user renamed the session meanwhile.
pub fn apply_title(
    rt: &Runtime,
    session: &str,
    text: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    if text.trim().is_empty() {
        log::info!("title: the model gave none; the question stays the title");
        return None;
    }
    let Some(title) = clean_title(text) else {
        let problem = format!(
            "title: no usable title in the model's reply {:?}",
            clip_chars(text, 120)
        );
        log::info!("{problem}");
        problems.push(problem);
        return None;
    };
    match rt.store.set_model_title(session, &title) {
        Ok(true) => Some(title),
        Ok(false) => None,
        Err(e) => {
            problems.push(format!("saving the title failed: {e}"));
            None
        }
    }
}

/// One line of the model's reply as a title: quotes, a `Title:` label, Markdown marks
/// and a final full stop taken off, cut to [`TITLE_CHARS`]. `None` when nothing is left.
pub fn clean_title(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut t = line.trim_start_matches(['#', '*', '-', ' ']).trim();
    for label in ["Title:", "title:", "TITLE:", "标题：", "标题:"] {
        if let Some(rest) = t.strip_prefix(label) {
            t = rest.trim();
        }
    }
    let t = t
        .trim_matches(|c: char| {
            matches!(
                c,
                '"' | '\'' | '`' | '*' | '“' | '”' | '「' | '」' | '《' | '》'
            )
        })
        .trim()
        .trim_end_matches(['.', '。'])
        .trim();
    let t = one_line(t, TITLE_CHARS);
    (!t.is_empty()).then_some(t)
}

/// What the model needs to update the session's tool-chain review: the previous review
/// and this turn's calls. `None` when the turn made no call, or the previous review
/// could not be read (in `problems`: the review is left as it is).
pub fn review_input(
    rt: &Runtime,
    session: &str,
    question: &str,
    steps: &[ToolStep],
    problems: &mut Vec<String>,
) -> Option<String> {
    if steps.is_empty() {
        return None;
    }
    let previous = match rt.store.tool_chain(session) {
        Ok(p) => p.unwrap_or_default(),
        Err(e) => {
            problems.push(format!("reading the tool-chain review failed: {e}"));
            return None;
        }
    };
    let mut input = String::new();
    if !previous.trim().is_empty() {
        input.push_str("Previous tool-call review:\n");
        input.push_str(previous.trim());
        input.push_str("\n\n");
    }
    input.push_str("This turn's request: ");
    input.push_str(&clip_chars(question, 500));
    input.push_str("\nIts tool calls:\n");
    for step in steps.iter().take(24) {
        input.push_str("- ");
        input.push_str(&step.line());
        input.push('\n');
    }
    Some(input)
}

/// Saves the review the model wrote (`text`, cleaned). The new review, or `None` (an
/// empty one, or a failure to save, in `problems`: the previous review stays).
pub fn apply_review(
    rt: &Runtime,
    session: &str,
    text: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let review = clean_review(text);
    if review.is_empty() {
        let problem = "tool-chain review: the model's reply was empty".to_string();
        log::info!("{problem}");
        problems.push(problem);
        return None;
    }
    if let Err(e) = rt.store.set_tool_chain(session, &review) {
        problems.push(format!("saving the tool-chain review failed: {e}"));
        return None;
    }
    Some(review)
}

/// The review as stored: code fences taken off, blank lines dropped, cut to
/// [`TOOL_CHAIN_CHARS`] at a line's end where one is near.
pub fn clean_review(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("```"))
        .collect();
    let joined = lines.join("\n");
    if joined.chars().count() <= TOOL_CHAIN_CHARS {
        return joined;
    }
    let cut = clip_chars(&joined, TOOL_CHAIN_CHARS);
    let cut = cut.trim_end_matches('…');
    match cut.rfind('\n') {
        Some(i) if i > TOOL_CHAIN_CHARS / 2 => cut[..i].to_string(),
        _ => format!("{cut}…"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cleaned_to_one_plain_line() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Fix the failing build", Some("Fix the failing build")),
            ("\"Rust build cache setup\"", Some("Rust build cache setup")),
            (
                "Title: Weekly report draft.\nMore text",
                Some("Weekly report draft"),
            ),
            ("## **Disk usage check**", Some("Disk usage check")),
            ("标题：翻译产品说明。", Some("翻译产品说明")),
            ("  \n\n", None),
            ("\"\"", None),
        ];
        for (text, want) in cases {
            assert_eq!(clean_title(text).as_deref(), *want, "{text:?}");
        }
        let long = clean_title(&"word ".repeat(40)).unwrap();
        assert!(long.chars().count() <= TITLE_CHARS, "{long}");
    }

    #[test]
    fn reviews_are_bounded_and_cut_at_a_line() {
        assert_eq!(
            clean_review("```\n- read_file(a.txt): worked\n\n- shell(make): failed\n```"),
            "- read_file(a.txt): worked\n- shell(make): failed"
        );
        let long = (0..200)
            .map(|i| format!("- step {i} worked"))
            .collect::<Vec<_>>()
            .join("\n");
        let cut = clean_review(&long);
        assert!(cut.chars().count() <= TOOL_CHAIN_CHARS, "{}", cut.len());
        assert!(cut.ends_with("worked"), "cut at a line's end: {cut:?}");
    }
}
