//! Whether a finished exchange has anything to learn from: a greeting, a thanks or a
//! goodbye with no tool call teaches nothing (no memory to extract, no answer worth
//! grading), so the cheap-model calls after it are skipped.

use alloc::string::String;

/// Whole messages that only greet, thank, acknowledge or say goodbye (lower case,
/// punctuation and emoji removed, spaces collapsed).
const SMALL_TALK: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "yo",
    "hiya",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "morning",
    "thanks",
    "thank you",
    "thank you very much",
    "thanks a lot",
    "many thanks",
    "thx",
    "ty",
    "ok",
    "okay",
    "ok thanks",
    "okay thanks",
    "ok thank you",
    "cool",
    "great",
    "nice",
    "got it",
    "bye",
    "goodbye",
    "see you",
    "see you later",
    "你好",
    "您好",
    "嗨",
    "哈喽",
    "早上好",
    "早",
    "晚上好",
    "晚安",
    "谢谢",
    "谢谢你",
    "多谢",
    "好的",
    "好",
    "嗯",
    "知道了",
    "明白了",
    "再见",
    "拜拜",
];

/// Words a greeting may end with and still be only a greeting ("hi there", "thanks
/// evolve").
const ADDRESSEES: &[&str] = &["there", "evolve", "everyone", "all", "again", "so much"];

/// True when `question` is only small talk (a greeting, thanks, an acknowledgement, a
/// goodbye; English or Chinese) and the turn called no tool: nothing to learn from it.
pub fn nothing_to_learn(question: &str, tool_calls: usize) -> bool {
    if tool_calls > 0 {
        return false;
    }
    let text = normalize(question);
    if text.is_empty() {
        return true;
    }
    if SMALL_TALK.contains(&text.as_str()) {
        return true;
    }
    ADDRESSEES.iter().any(|a| {
        text.strip_suffix(a)
            .map(str::trim_end)
            .is_some_and(|head| SMALL_TALK.contains(&head))
    })
}

/// Lower case, letters, digits and spaces only (runs of anything else become one
/// space), trimmed.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with(' ') && !out.is_empty() {
            out.push(' ');
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_talk_without_tools_has_nothing_to_learn() {
        let table: &[(&str, usize, bool)] = &[
            ("Hi", 0, true),
            ("hello!", 0, true),
            ("Hi there 👋", 0, true),
            ("  Thanks, Evolve!  ", 0, true),
            ("thank you so much", 0, true),
            ("Good night.", 0, true),
            ("ok thanks", 0, true),
            ("你好！", 0, true),
            ("谢谢。", 0, true),
            ("", 0, true),
            // Anything more may carry something to remember or grade.
            ("Hi, I'm vegan", 0, false),
            ("Thanks, remind me tomorrow at 9", 0, false),
            ("我是素食者", 0, false),
            ("What is the capital of France?", 0, false),
            ("ok", 0, true),
            ("okay do it", 0, false),
            // A turn that called tools did work worth grading.
            ("hello", 1, false),
            ("thanks", 2, false),
        ];
        for &(q, calls, want) in table {
            assert_eq!(nothing_to_learn(q, calls), want, "{q:?} with {calls} calls");
        }
    }
}
