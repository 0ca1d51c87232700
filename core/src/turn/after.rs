//! Whether a finished turn leaves anything for the work after the answer (a grade,
//! memories): small talk does not. It widens the memory module's list of whole
//! greetings and thanks ([`crate::memory::nothing_to_learn`]) by the forms a chat takes
//! around them — a Chinese greeting with a particle ("你好呀", "谢谢啦", "你好吗"), the
//! ones that list lacks ("大家好", "辛苦了", "how are you") — and never says so of a
//! turn that called a tool.

use alloc::string::String;

use crate::memory::nothing_to_learn;

/// Sentence-final particles: "你好呀" greets as "你好" does, "哈哈" is only laughter.
const PARTICLES: &[char] = &[
    '呀', '啊', '啦', '哦', '喔', '噢', '嘛', '呢', '吧', '吗', '哈', '嘿', '哇',
];

/// Whole messages (lower case, punctuation gone, particles dropped) that only greet,
/// thank, laugh or say goodbye, beyond the memory module's list.
const MORE_SMALL_TALK: &[&str] = &[
    "大家好",
    "下午好",
    "中午好",
    "早安",
    "午安",
    "感谢",
    "非常感谢",
    "太感谢了",
    "谢谢了",
    "谢谢您",
    "谢了",
    "辛苦了",
    "好的 谢谢",
    "好 谢谢",
    "嗯嗯",
    "收到",
    "没问题",
    "没事了",
    "回见",
    "拜",
    "how are you",
    "how are you doing",
    "how s it going",
    "what s up",
    "whats up",
    "cheers",
    "appreciate it",
    "perfect thanks",
    "great thanks",
    "nice thanks",
];

/// True when `question` is only small talk and the turn called no tool.
pub fn only_small_talk(question: &str, tool_calls: usize) -> bool {
    if tool_calls > 0 {
        return false;
    }
    if nothing_to_learn(question, 0) {
        return true;
    }
    let text = without_particles(question);
    text.is_empty() || MORE_SMALL_TALK.contains(&text.as_str()) || nothing_to_learn(&text, 0)
}

/// Lower case, letters and digits in words separated by one space, each word without
/// the particles it ends with (a word of particles only is dropped).
fn without_particles(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let kept = word.trim_end_matches(PARTICLES);
        if !kept.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(kept);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greetings_thanks_and_laughter_in_either_language_have_nothing_to_learn() {
        // (message, tool calls, only small talk)
        let table: &[(&str, usize, bool)] = &[
            // What the memory module's list already holds.
            ("Hi there!", 0, true),
            ("谢谢。", 0, true),
            ("你好，Evolve！", 0, true),
            // Chinese with a particle, or a form that list lacks.
            ("你好呀！", 0, true),
            ("你好啊～", 0, true),
            ("你好吗？", 0, true),
            ("谢谢啦", 0, true),
            ("大家好", 0, true),
            ("下午好！", 0, true),
            ("好的，谢谢！", 0, true),
            ("哈哈哈", 0, true),
            ("嗯嗯", 0, true),
            ("辛苦了！", 0, true),
            ("你好呀，Evolve", 0, true),
            // English ones.
            ("How are you?", 0, true),
            ("what's up", 0, true),
            ("Cheers!", 0, true),
            // Anything more may carry something to remember or grade.
            ("你好呀，我叫小明", 0, false),
            ("谢谢，明天提醒我开会", 0, false),
            ("你好，请介绍一下里昂", 0, false),
            ("How are you storing my notes?", 0, false),
            ("What is the capital of France?", 0, false),
            ("请用中文介绍一下里昂的美食。", 0, false),
            // A turn that called a tool did work worth grading.
            ("你好呀", 1, false),
            ("How are you?", 2, false),
        ];
        for &(q, calls, want) in table {
            assert_eq!(only_small_talk(q, calls), want, "{q:?} with {calls} calls");
        }
    }
}
