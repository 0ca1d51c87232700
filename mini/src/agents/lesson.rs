//! Lessons (tea-agent's 经验固化 "失败 → lesson"): a task that went wrong — a tool call
//! failed or was refused, or the reply scored below `[agent] reflect_below` — gets one
//! lesson from the cheap model, saved as a memory through the store's ingest rule (so
//! the same lesson learned twice merges into one), and reaches later prompts on similar
//! tasks through the normal memory selection (relevance), never unrelated ones.
//!
//! What it decides: whether a turn failed ([`failed`]), which tag a lesson carries
//! ([`Tag`]), how it reads in the prompt ([`lesson_text`]) and the memory's category,
//! priority and importance ([`lesson_memory`]). The selection and the ingest rule are
//! the core's.

use evolve_core::json::{extract, Value};
use evolve_core::memory::{Category, Memory, Priority};
use evolve_core::provenance::Source;
use evolve_core::text::{clip_chars, one_line, Lang, Tokenizer};
use evolve_core::Timestamp;

use super::memory::{cheap_call_sized, NEVER, TWO_SENTENCES_TOKENS};
use super::prompts;
use super::record::Scored;
use super::runtime::Runtime;
use super::trace::{Outcome, ToolStep};
use crate::llm::Usage;

/// The tag every lesson memory carries (`evolve memory list` shows it).
pub const LESSON_TAG: &str = "lesson";
/// Characters of a lesson kept: one or two sentences.
const LESSON_CHARS: usize = 300;
/// Tool calls shown to the model, at most.
const STEPS_SHOWN: usize = 12;

/// The kind of a lesson (tea-agent's 经验固化 categories, plus `general`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Dependency,
    Architecture,
    Ui,
    Performance,
    Testing,
    Deployment,
    General,
}

impl Tag {
    const ALL: [Tag; 7] = [
        Tag::Dependency,
        Tag::Architecture,
        Tag::Ui,
        Tag::Performance,
        Tag::Testing,
        Tag::Deployment,
        Tag::General,
    ];

    /// The tag's name.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Dependency => "dependency",
            Tag::Architecture => "architecture",
            Tag::Ui => "ui",
            Tag::Performance => "performance",
            Tag::Testing => "testing",
            Tag::Deployment => "deployment",
            Tag::General => "general",
        }
    }

    /// The model's tag; anything unknown is `general` (a lesson is not lost over a
    /// tag).
    pub fn parse(text: &str) -> Tag {
        let t = text.trim().to_lowercase();
        Tag::ALL
            .into_iter()
            .find(|tag| tag.name() == t)
            .unwrap_or(Tag::General)
    }
}

/// Whether a turn went wrong: a call failed or was refused, or the score is below
/// `below`. No score (the evaluator gave nothing usable) is not a failure.
pub fn failed(steps: &[ToolStep], score: Option<f32>, below: f32) -> bool {
    steps.iter().any(|s| s.outcome != Outcome::Worked) || score.is_some_and(|s| s < below)
}

/// A lesson as the prompt shows it: marked as a lesson in the conversation's language,
/// with its tag, on one line.
pub fn lesson_text(lesson: &str, tag: Tag, lang: Lang) -> String {
    let head = match lang {
        Lang::Zh => "教训",
        Lang::En => "Lesson",
    };
    let colon = match lang {
        Lang::Zh => "：",
        Lang::En => ": ",
    };
    format!(
        "{head} [{}]{colon}{}",
        tag.name(),
        one_line(lesson, LESSON_CHARS)
    )
}

/// The memory of a lesson. Category `general`: a lesson is advice the agent gave
/// itself, not the user's instruction, preference or fact, so it must not be written
/// with the weight of the user's words. Priority MEDIUM (not the `general` default
/// LOW): it should win over trivia when it is relevant, yet never be CRITICAL, which
/// would put it into every prompt whatever the question. Importance 3 of 5 for the same
/// reason. Tags `lesson` and the lesson's kind, so `evolve memory list` can show them
/// and the user can delete them. Source: the store's, or the world's when the turn read
/// outside text (its failures may be what a page made it do): then it is marked as
/// information in later prompts and puts world text in their turns.
pub fn lesson_memory(
    text: String,
    tag: Tag,
    world: bool,
    now: Timestamp,
    tokenizer: &dyn Tokenizer,
) -> Memory {
    let mut m = Memory::new(text, Category::General, now, tokenizer);
    m.priority = Priority::Medium;
    m.importance = 3;
    m.tags = vec![LESSON_TAG.to_string(), tag.name().to_string()];
    m.refresh_derived(tokenizer);
    m.with_source(if world { Source::World } else { Source::Store })
}

/// The lesson's text and tag from the model's JSON reply; `None` when it found none.
pub fn parse_reply(text: &str) -> Result<Option<(String, Tag)>, String> {
    let value = extract(text).map_err(|e| e.to_string())?;
    let lesson = value
        .get("lesson")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if lesson.is_empty() {
        return Ok(None);
    }
    let tag = value
        .get("tag")
        .and_then(Value::as_str)
        .map_or(Tag::General, Tag::parse);
    Ok(Some((lesson.to_string(), tag)))
}

/// The lesson agent's work after a turn that went wrong: the saved lesson (as the
/// prompt shows it), or `None` (the turn did not fail, the model found nothing, or a
/// problem noted in `problems`).
#[allow(clippy::too_many_arguments)]
pub fn learn_lesson(
    rt: &Runtime,
    question: &str,
    reply: &str,
    steps: &[ToolStep],
    evaluation: Option<&Scored>,
    world: bool,
    now: Timestamp,
    usage: &mut Usage,
    problems: &mut Vec<String>,
) -> Option<String> {
    let score = evaluation.map(|e| e.score);
    if !failed(steps, score, rt.config.agent.reflect_below) {
        return None;
    }
    let mut input = format!("User's request:\n{}\n\n", clip_chars(question, 1_500));
    if !steps.is_empty() {
        input.push_str("Tool calls, in order:\n");
        for s in steps.iter().take(STEPS_SHOWN) {
            input.push_str(&s.line());
            input.push('\n');
        }
        input.push('\n');
    }
    input.push_str(&format!("The reply:\n{}\n", clip_chars(reply, 2_000)));
    if let Some(e) = evaluation {
        input.push_str(&format!(
            "\nGrade: {:.2} — {}\n",
            e.score,
            one_line(&e.reason, 300)
        ));
    }
    let text = cheap_call_sized(
        rt,
        prompts::LESSON,
        &input,
        TWO_SENTENCES_TOKENS,
        usage,
        problems,
        &NEVER,
    )?;
    let (lesson, tag) = match parse_reply(&text) {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(e) => {
            super::note(
                problems,
                format!("lesson: the model's reply is not usable JSON ({e})"),
            );
            return None;
        }
    };
    let content = lesson_text(&lesson, tag, Lang::guess(question));
    let memory = lesson_memory(content.clone(), tag, world, now, &rt.tokenizer);
    if let Err(e) = rt
        .store
        .ingest_memory(memory, &rt.config.core.memory, now, &rt.tokenizer)
    {
        super::note(problems, format!("saving the lesson failed: {e}"));
        return None;
    }
    log::info!("learned a lesson: {content}");
    Some(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::text::FallbackTokenizer;

    fn step(outcome: Outcome) -> ToolStep {
        ToolStep {
            name: "read_file".into(),
            arguments: "{}".into(),
            outcome,
            result_head: String::new(),
        }
    }

    #[test]
    fn a_turn_fails_on_a_bad_call_or_a_low_score() {
        use Outcome::*;
        let table: &[(&[Outcome], Option<f32>, bool)] = &[
            (&[], Some(0.9), false),
            (&[], None, false),
            (&[], Some(0.49), true),
            (&[], Some(0.5), false),
            (&[Worked, Worked], Some(0.9), false),
            (&[Worked, Failed], Some(0.9), true),
            (&[Refused], None, true),
        ];
        for (outcomes, score, want) in table {
            let steps: Vec<ToolStep> = outcomes.iter().map(|o| step(*o)).collect();
            assert_eq!(failed(&steps, *score, 0.5), *want, "{outcomes:?} {score:?}");
        }
    }

    #[test]
    fn replies_tags_and_text() {
        /// `Err(())`: the reply is refused.
        type Want = Result<Option<(&'static str, Tag)>, ()>;
        let table: &[(&str, Want)] = &[
            (
                r#"{"lesson": "Check the path exists first.", "tag": "Testing"}"#,
                Ok(Some(("Check the path exists first.", Tag::Testing))),
            ),
            (
                r#"{"lesson": "Pin the version.", "tag": "supply-chain"}"#,
                Ok(Some(("Pin the version.", Tag::General))),
            ),
            (
                r#"{"lesson": "Ask first."}"#,
                Ok(Some(("Ask first.", Tag::General))),
            ),
            (r#"{"lesson": "  "}"#, Ok(None)),
            ("no idea!!!", Err(())),
        ];
        for (reply, want) in table {
            let got = parse_reply(reply);
            match want {
                Ok(w) => assert_eq!(
                    got.as_ref().ok().cloned().flatten(),
                    w.map(|(l, t)| (l.to_string(), t)),
                    "{reply}"
                ),
                Err(()) => assert!(got.is_err(), "{reply}"),
            }
        }
        assert_eq!(
            lesson_text("Check\nfirst.", Tag::Testing, Lang::En),
            "Lesson [testing]: Check first."
        );
        assert_eq!(
            lesson_text("先检查路径。", Tag::General, Lang::Zh),
            "教训 [general]：先检查路径。"
        );
    }

    #[test]
    fn lesson_memories_are_medium_general_and_tagged() {
        for (world, source) in [(false, Source::Store), (true, Source::World)] {
            let m = lesson_memory(
                "Lesson [testing]: x".into(),
                Tag::Testing,
                world,
                0,
                &FallbackTokenizer,
            );
            assert_eq!(m.category, Category::General);
            assert_eq!(m.priority, Priority::Medium);
            assert_eq!(m.importance, 3);
            assert_eq!(m.tags, ["lesson", "testing"]);
            assert_eq!(m.source, source);
        }
    }
}
