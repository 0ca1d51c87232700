//! Whether a finished turn leaves anything for the work after the answer (a grade,
//! memories): small talk does not. It widens the memory module's list of whole
//! greetings and thanks ([`crate::memory::nothing_to_learn`]) by the forms a chat takes
//! around them — a Chinese greeting with a particle ("你好呀", "谢谢啦", "你好吗"), the
//! ones that list lacks ("大家好", "辛苦了", "how are you") — and never says so of a
//! turn that called a tool.
//!
//! And whether a question may hold a memory at all ([`may_hold_a_memory`]): memories
//! come from the person's own words about themselves, their standing instructions and
//! what to remind them of; a question that speaks of none ("What is the capital of
//! France?") is graded, and no memories are asked for.

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

/// English words by which a question speaks of the person, gives a standing
/// instruction or names a time (a reminder's): first person, "always", "remember",
/// "tomorrow" (lower case, whole words; "i'm" is split at the apostrophe).
const PERSONAL_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "our",
    "ours",
    "us",
    "im",
    "ive",
    "always",
    "never",
    "remember",
    "forget",
    "prefer",
    "preference",
    "remind",
    "reminder",
    "don",
    "dont",
    "stop",
    "whenever",
    "use",
    "tomorrow",
    "tonight",
    "today",
    "yesterday",
    "soon",
    "later",
    "due",
    "next",
    "week",
    "weekend",
    "month",
    "morning",
    "evening",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "am",
    "pm",
    "birthday",
    "anniversary",
    "deadline",
    "appointment",
    "meeting",
];

/// Phrases of a standing instruction without a first-person word.
const PERSONAL_PHRASES: &[&str] = &["from now on", "call me", "every time", "each time"];

/// The same in Chinese (substrings).
const PERSONAL_ZH: &[&str] = &[
    "我", "咱", "俺", "本人", "以后", "总是", "永远", "一直", "记住", "记得", "别", "不要", "提醒",
    "叫我", "今天", "明天", "后天", "今晚", "下周", "下个", "每天", "每周", "点钟", "生日", "喜欢",
    "讨厌",
];

/// Words a sentence opens with when it asks for something rather than says
/// something (a question word, an auxiliary, a request verb, a greeting): "Answer in
/// one word.", "Explain how it works."
const REQUEST_OPENERS: &[&str] = &[
    "what",
    "whats",
    "why",
    "how",
    "when",
    "where",
    "who",
    "whom",
    "whose",
    "which",
    "is",
    "are",
    "was",
    "were",
    "do",
    "does",
    "did",
    "can",
    "could",
    "would",
    "should",
    "will",
    "shall",
    "may",
    "might",
    "please",
    "answer",
    "explain",
    "tell",
    "write",
    "give",
    "list",
    "translate",
    "summarize",
    "summarise",
    "sum",
    "describe",
    "show",
    "compare",
    "calculate",
    "compute",
    "find",
    "define",
    "help",
    "make",
    "create",
    "draft",
    "suggest",
    "recommend",
    "reply",
    "respond",
    "name",
    "convert",
    "check",
    "fix",
    "read",
    "search",
    "look",
    "generate",
    "be",
    "keep",
    "thanks",
    "thank",
    "ok",
    "okay",
    "hi",
    "hello",
    "hey",
    "sure",
    "great",
    "yes",
    "no",
    "and",
    "also",
    "then",
    "now",
    "or",
    "but",
    // The form of the answer: "One word.", "In short.", "Briefly, please."
    "one",
    "two",
    "three",
    "in",
    "at",
    "on",
    "for",
    "with",
    "without",
    "as",
    "via",
    "using",
    "briefly",
    "brief",
    "short",
    "shortly",
    "just",
    "only",
    "not",
    "quickly",
    "concisely",
    "simply",
    "exactly",
    "again",
    "more",
    "less",
    "same",
    "like",
];

/// How a Chinese sentence opens when it asks for something.
const REQUEST_OPENERS_ZH: &[&str] = &[
    "请",
    "帮",
    "麻烦",
    "告诉",
    "解释",
    "介绍",
    "翻译",
    "写",
    "给",
    "列出",
    "总结",
    "说说",
    "讲讲",
    "什么",
    "怎么",
    "怎样",
    "为什么",
    "如何",
    "哪",
    "谁",
    "多少",
    "几",
    "是否",
    "能",
    "可以",
    "你",
    "谢谢",
    "好的",
];

/// Whether `question` may hold something to remember: a sentence that says something
/// (a fact about a friend, a due date: "She started in March", "Rent was due
/// yesterday") rather than asks, or words that speak of the person (I, my, 我), give a
/// standing instruction (always, never, remember, 以后, 不要) or name a time a reminder
/// would keep (tomorrow, Friday, 明天). A message that only asks about the world ("What
/// is the capital of France? Answer in one word.") holds no memory, whatever the
/// answer says.
pub fn may_hold_a_memory(question: &str) -> bool {
    if PERSONAL_ZH.iter().any(|w| question.contains(w)) {
        return true;
    }
    let lower = question.to_lowercase();
    let personal = PERSONAL_PHRASES.iter().any(|p| lower.contains(p))
        || lower
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| PERSONAL_WORDS.contains(&w) || clock_time(w));
    personal || says_something(&lower)
}

/// Whether a sentence of `text` (lower case) is a statement: not a question (ending in
/// a question mark, a question particle, or opening with a question word) and not a
/// request (opening with a request verb).
fn says_something(text: &str) -> bool {
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .find(['.', '!', '?', '。', '！', '？', ';', '；', '\n'])
            .unwrap_or(rest.len());
        let sentence = rest[..end].trim();
        let mark = rest[end..].chars().next();
        rest = mark.map_or("", |m| &rest[end + m.len_utf8()..]);
        if sentence.is_empty() || matches!(mark, Some('?' | '？')) {
            continue;
        }
        if sentence.ends_with(['吗', '呢']) {
            continue;
        }
        if REQUEST_OPENERS_ZH.iter().any(|o| sentence.starts_with(o)) {
            continue;
        }
        let first = sentence
            .split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty())
            .unwrap_or("");
        if first.is_empty() || REQUEST_OPENERS.contains(&first) {
            continue;
        }
        // A sentence of symbols or a single Chinese greeting says nothing either.
        if sentence.chars().any(char::is_alphanumeric) {
            return true;
        }
    }
    false
}

/// A time of day written as one word: "9am", "10pm".
fn clock_time(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(&word[digits.len()..], "am" | "pm")
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
    fn a_question_about_the_world_holds_no_memory_one_about_the_person_may() {
        // (question, may hold a memory)
        let table: &[(&str, bool)] = &[
            ("What is the capital of France? Answer in one word.", false),
            ("How far is Lyon from Paris by train?", false),
            ("Explain how a hash map works", false),
            ("请用中文介绍一下里昂的美食。", false),
            ("巴黎有多少人口？", false),
            ("I drink green tea every morning", true),
            ("Hi, I'm vegan", true),
            ("ok, my name is Ana", true),
            ("Where does my sister live?", true),
            ("Always answer in French", true),
            ("From now on, keep answers short", true),
            ("Remind me to renew the passport", true),
            ("Dentist tomorrow at 9", true),
            ("Call the plumber on Friday", true),
            ("Meeting at 10am", true),
            ("Dentist soon; rent was due yesterday.", true),
            ("She started in March", true),
            ("Jon likes jazz.", true),
            ("她三月开始学大提琴。", true),
            // Text handed over for a task is the task's, not the person's.
            ("Summarize this: the sky is blue. Answer briefly.", false),
            ("Explain how a hash map works. Keep it short.", false),
            ("巴黎的人口是多少？请简短回答。", false),
            ("Thanks! Sum up the plan in two sentences.", false),
            ("And of Germany? One word.", false),
            ("Which is bigger? In short, please.", false),
            ("Lyon or Paris? Briefly.", false),
            ("Use metric units", true),
            ("我是素食者", true),
            ("以后用英文回答", true),
            ("明天下午三点开会", true),
            ("不要用表情符号", true),
        ];
        for &(q, want) in table {
            assert_eq!(may_hold_a_memory(q), want, "{q:?}");
        }
    }

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
