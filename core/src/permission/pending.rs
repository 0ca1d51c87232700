//! A tool call waiting for the user's answer, and reading that answer.
//!
//! The Evolve Agent design (ARCHITECTURE.md § The turn, step 2): a call that needs permission is parked on the session; at the start of the
//! next turn the manager settles it with the user's reply — yes → run, no → record the
//! refusal, unclear → ask again. L4 needs two separate yes answers, and the second
//! question repeats the exact call. Storing the pending call and running it are the
//! shell's.

use alloc::format;
use alloc::string::String;
use serde::{Deserialize, Serialize};

use super::{Level, PermissionError};
use crate::Timestamp;

/// How many yes answers a call needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirmations {
    /// One (L3, and lower levels when the shell asks anyway).
    One = 1,
    /// Two, separately (L4).
    Two = 2,
}

impl Confirmations {
    /// What `level` needs; `None` for L5, which is never asked.
    pub fn for_level(level: Level) -> Option<Self> {
        match level {
            Level::L5 => None,
            Level::L4 => Some(Confirmations::Two),
            _ => Some(Confirmations::One),
        }
    }

    /// The number of yes answers.
    pub fn count(self) -> u8 {
        self as u8
    }
}

/// What the user's reply meant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Allow.
    Yes,
    /// Refuse.
    No,
    /// Neither: ask again.
    Unclear,
}

/// What happens to a pending call after one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerOutcome {
    /// Enough yes answers: run it.
    Run,
    /// The user said no (now or before): record the refusal, do not run.
    Refused,
    /// The reply was unclear: ask the same question again.
    AskAgain,
    /// The first yes of an L4 call: ask the second question ([`PendingCall::prompt`]).
    NeedSecondConfirmation,
}

pub use crate::text::Lang;

/// A tool call parked on a session until the user answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The tool call's id (from the model's `tool_calls`).
    pub id: String,
    /// The tool name the model used.
    pub tool: String,
    /// The raw arguments text, shown to the user as it will run.
    pub arguments: String,
    /// The call's level (class raised by escalation).
    pub level: Level,
    /// How many yes answers it needs.
    pub needed: Confirmations,
    /// How many it has had.
    pub received: u8,
    /// When the user was first asked.
    pub asked_at: Timestamp,
    /// The user said no: every later answer is a refusal too.
    #[serde(default)]
    refused: bool,
    /// What the call would send off the machine that no one gave (the egress rule);
    /// the question says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends: Option<super::Sends>,
}

impl PendingCall {
    /// Parks a call. L5 calls are refused, never asked: they get
    /// [`PermissionError::NeverAsked`].
    pub fn new(
        id: &str,
        tool: &str,
        arguments: &str,
        level: Level,
        asked_at: Timestamp,
    ) -> Result<Self, PermissionError> {
        let needed =
            Confirmations::for_level(level).ok_or(PermissionError::NeverAsked { level })?;
        Ok(PendingCall {
            id: String::from(id),
            tool: String::from(tool),
            arguments: String::from(arguments),
            level,
            needed,
            received: 0,
            asked_at,
            refused: false,
            sends: None,
        })
    }

    /// The yes answers actually required: the stored `needed`, but never fewer than the
    /// level demands (a call loaded from a damaged store cannot get cheaper).
    fn required(&self) -> u8 {
        let by_level = Confirmations::for_level(self.level).map_or(u8::MAX, Confirmations::count);
        self.needed.count().max(by_level)
    }

    /// Whether the user refused.
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// Settles one reply. A no at any step refuses for good; an unclear reply changes
    /// nothing; each yes counts once, and the call runs when it has enough. An L5 call
    /// (only possible from a damaged store) is always refused.
    pub fn answer(&mut self, text: &str) -> AnswerOutcome {
        if self.refused || self.level == Level::L5 {
            self.refused = true;
            return AnswerOutcome::Refused;
        }
        match parse_answer(text) {
            Answer::No => {
                self.refused = true;
                AnswerOutcome::Refused
            }
            Answer::Unclear => AnswerOutcome::AskAgain,
            Answer::Yes => {
                self.received = self.received.saturating_add(1);
                if self.received >= self.required() {
                    AnswerOutcome::Run
                } else {
                    AnswerOutcome::NeedSecondConfirmation
                }
            }
        }
    }

    /// The question to show now: the first one, or — after the first yes of an L4 call —
    /// the second, which repeats the exact call.
    pub fn prompt(&self, lang: Lang) -> String {
        let mut text = self.question(lang);
        if let Some(sends) = &self.sends {
            let (line, always) = match lang {
                Lang::En => (
                    sends.describe(),
                    "\n(\"always\" allows this host for the session.)",
                ),
                Lang::Zh => (
                    sends.describe_zh(),
                    "\n（回答“总是”则本会话内允许此主机。）",
                ),
            };
            text.push('\n');
            text.push_str(&line);
            if sends.host.is_some() && self.required() < 2 {
                text.push_str(always);
            }
        }
        text
    }

    fn question(&self, lang: Lang) -> String {
        let second = self.received >= 1;
        let (tool, level, args) = (&self.tool, self.level, &self.arguments);
        match (lang, second) {
            (Lang::En, false) => {
                let twice = if self.required() >= 2 {
                    " It needs two confirmations."
                } else {
                    ""
                };
                format!(
                    "Allow the tool `{tool}` to run? Level {level}: {}.{twice}\n\
                     Arguments: {args}\n\
                     Answer yes or no.",
                    level.meaning()
                )
            }
            (Lang::En, true) => format!(
                "Second confirmation. Exactly this call will run:\n\
                 Tool: `{tool}` (level {level}: {})\n\
                 Arguments: {args}\n\
                 Answer yes again to run it, or no to refuse.",
                level.meaning()
            ),
            (Lang::Zh, false) => {
                let twice = if self.required() >= 2 {
                    "需要二次确认。"
                } else {
                    ""
                };
                format!(
                    "是否允许执行工具 `{tool}`？等级 {level}：{}。{twice}\n\
                     参数：{args}\n\
                     请回答 是 或 否。",
                    level.meaning_zh()
                )
            }
            (Lang::Zh, true) => format!(
                "二次确认。将执行以下调用：\n\
                 工具：`{tool}`（等级 {level}：{}）\n\
                 参数：{args}\n\
                 再次回答 是 则执行，回答 否 则拒绝。",
                level.meaning_zh()
            ),
        }
    }
}

/// Whole replies that mean yes (after trimming, lower-cased).
const YES: [&str; 28] = [
    "yes",
    "y",
    "yeah",
    "yep",
    "yup",
    "ok",
    "okay",
    "sure",
    "confirm",
    "confirmed",
    "approve",
    "approved",
    "allow",
    "go",
    "是",
    "是的",
    "好",
    "好的",
    "好吧",
    "确认",
    "确定",
    "同意",
    "可以",
    "可以的",
    "行",
    "没问题",
    "允许",
    "对",
];
/// Whole replies that mean no.
const NO: [&str; 25] = [
    "no",
    "n",
    "nope",
    "nah",
    "cancel",
    "deny",
    "denied",
    "refuse",
    "reject",
    "stop",
    "abort",
    "不",
    "否",
    "取消",
    "拒绝",
    "不要",
    "不行",
    "不用",
    "不可以",
    "别",
    "算了",
    "不同意",
    "不允许",
    "不好",
    "不是",
];
/// Words that may follow a yes without changing it ("yes please", "ok go ahead").
const YES_FILLERS: [&str; 10] = [
    "please", "thanks", "thank", "you", "go", "ahead", "do", "it", "run", "now",
];
/// Words that may follow a no without changing it ("no thanks", "no, don't").
const NO_FILLERS: [&str; 8] = [
    "thanks", "thank", "you", "don't", "dont", "way", "please", "stop",
];

/// Punctuation that may end a reply without changing it. A question mark is not here:
/// "yes?" is a question, not an answer.
fn is_closing(c: char) -> bool {
    matches!(
        c,
        '!' | '.' | ',' | ';' | '~' | '。' | '！' | '，' | '；' | '～' | '、'
    )
}

/// Reads a reply, in English or Chinese. Whitespace and closing punctuation (`!`, `.`,
/// `。`, `！` …, not `?`) are trimmed, case is ignored. A reply is Yes or No when it is
/// one of the words (yes/y/ok/okay/sure/是/好/好的/确认/同意/可以 …;
/// no/n/不/否/取消/拒绝/不要/不行 …), or such an English word followed only by polite
/// filler: "yes please", "ok, go ahead", "no thanks". Anything else — "yes but only the
/// first file", "不确定", "yes?", "yes yes" — is Unclear and the question is asked again:
/// a misread yes would run something the user did not want.
pub fn parse_answer(text: &str) -> Answer {
    let lower = text.trim().to_lowercase();
    let reply = lower.trim_end_matches(|c: char| is_closing(c) || c.is_whitespace());
    if YES.contains(&reply) {
        return Answer::Yes;
    }
    if NO.contains(&reply) {
        return Answer::No;
    }
    let mut words = reply
        .split(|c: char| c.is_whitespace() || is_closing(c))
        .filter(|w| !w.is_empty());
    let Some(first) = words.next() else {
        return Answer::Unclear;
    };
    let rest: alloc::vec::Vec<&str> = words.collect();
    if rest.is_empty() {
        return Answer::Unclear;
    }
    if YES.contains(&first) && first.is_ascii() && rest.iter().all(|w| YES_FILLERS.contains(w)) {
        return Answer::Yes;
    }
    if NO.contains(&first) && first.is_ascii() && rest.iter().all(|w| NO_FILLERS.contains(w)) {
        return Answer::No;
    }
    Answer::Unclear
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_english_and_chinese() {
        use Answer::*;
        let cases = [
            ("yes", Yes),
            ("Yes", Yes),
            ("YES!", Yes),
            ("  y  ", Yes),
            ("ok", Yes),
            ("Okay.", Yes),
            ("sure", Yes),
            ("yes please", Yes),
            ("Yes, please!", Yes),
            ("ok go ahead", Yes),
            ("yes do it", Yes),
            ("是", Yes),
            ("好", Yes),
            ("好的", Yes),
            ("好的！", Yes),
            ("确认", Yes),
            ("同意。", Yes),
            ("可以", Yes),
            (" 是的 ", Yes),
            ("no", No),
            ("N", No),
            ("No!", No),
            ("nope", No),
            ("no thanks", No),
            ("no, don't", No),
            ("不", No),
            ("否", No),
            ("取消", No),
            ("拒绝", No),
            ("不要", No),
            ("不行。", No),
            ("不行！", No),
            ("", Unclear),
            ("   ", Unclear),
            ("!!!", Unclear),
            ("yes?", Unclear),
            ("是吗？", Unclear),
            ("maybe", Unclear),
            ("yes but only the first file", Unclear),
            ("yes yes", Unclear),
            ("yes no", Unclear),
            ("no yes", Unclear),
            ("不确定", Unclear),
            ("我不知道", Unclear),
            ("yesterday", Unclear),
            ("nothing", Unclear),
            ("what does it do", Unclear),
            ("好的 please", Unclear),
        ];
        for (text, want) in cases {
            assert_eq!(parse_answer(text), want, "{text:?}");
        }
    }

    fn call(level: Level) -> PendingCall {
        PendingCall::new(
            "c1",
            "mail__send",
            r#"{"to":"a@b.c"}"#,
            level,
            1_700_000_000,
        )
        .unwrap()
    }

    #[test]
    fn l5_is_never_pending() {
        assert_eq!(
            PendingCall::new("c", "shell", "{}", Level::L5, 0),
            Err(PermissionError::NeverAsked { level: Level::L5 })
        );
    }

    #[test]
    fn confirmations_by_level() {
        assert_eq!(call(Level::L3).needed, Confirmations::One);
        assert_eq!(call(Level::L4).needed, Confirmations::Two);
        assert_eq!(call(Level::L1).needed, Confirmations::One);
    }

    #[test]
    fn l3_runs_on_one_yes() {
        let mut c = call(Level::L3);
        assert_eq!(c.answer("hmm"), AnswerOutcome::AskAgain);
        assert_eq!(c.answer("好的"), AnswerOutcome::Run);
    }

    #[test]
    fn l4_needs_two_separate_yes() {
        let mut c = call(Level::L4);
        assert_eq!(c.answer("yes"), AnswerOutcome::NeedSecondConfirmation);
        assert_eq!(c.answer("what?"), AnswerOutcome::AskAgain);
        assert_eq!(c.answer("确认"), AnswerOutcome::Run);
        assert_eq!(c.received, 2);
    }

    #[test]
    fn no_at_any_step_refuses_for_good() {
        let mut first = call(Level::L4);
        assert_eq!(first.answer("no"), AnswerOutcome::Refused);
        assert_eq!(first.answer("yes"), AnswerOutcome::Refused);
        assert_eq!(first.answer("yes"), AnswerOutcome::Refused);
        let mut second = call(Level::L4);
        assert_eq!(second.answer("yes"), AnswerOutcome::NeedSecondConfirmation);
        assert_eq!(second.answer("取消"), AnswerOutcome::Refused);
        assert_eq!(second.answer("yes"), AnswerOutcome::Refused);
        assert!(second.is_refused());
    }

    #[test]
    fn damaged_store_cannot_make_a_call_cheaper() {
        let mut c = call(Level::L4);
        c.needed = Confirmations::One;
        assert_eq!(c.answer("yes"), AnswerOutcome::NeedSecondConfirmation);
        let mut l5: PendingCall = serde_json::from_str(
            r#"{"id":"x","tool":"shell","arguments":"rm -rf /","level":"L5","needed":"one","received":9,"asked_at":0}"#,
        )
        .unwrap();
        assert_eq!(l5.answer("yes"), AnswerOutcome::Refused);
    }

    #[test]
    fn prompts_name_the_tool_level_and_exact_arguments() {
        let mut c = call(Level::L4);
        let first = c.prompt(Lang::En);
        assert!(first.contains("`mail__send`"), "{first}");
        assert!(first.contains("L4"), "{first}");
        assert!(first.contains(r#"{"to":"a@b.c"}"#), "{first}");
        assert!(first.contains("two confirmations"), "{first}");
        assert!(c.prompt(Lang::Zh).contains("二次确认"));
        c.answer("yes");
        for lang in [Lang::En, Lang::Zh] {
            let second = c.prompt(lang);
            assert!(second.contains("`mail__send`"), "{second}");
            assert!(second.contains("L4"), "{second}");
            assert!(second.contains(r#"{"to":"a@b.c"}"#), "{second}");
        }
        assert!(c.prompt(Lang::En).starts_with("Second confirmation"));
        assert!(c.prompt(Lang::Zh).starts_with("二次确认"));
        let once = call(Level::L3).prompt(Lang::En);
        assert!(!once.contains("two confirmations"), "{once}");
    }

    #[test]
    fn pending_call_round_trips_through_serde() {
        let mut c = call(Level::L4);
        c.answer("yes");
        let json = serde_json::to_string(&c).unwrap();
        let back: PendingCall = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }
}
