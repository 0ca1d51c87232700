//! The work after an answer, off the answer's path on the background worker: memories
//! marked accessed, the session's title and tool-chain review, memory extraction, the
//! grade, and what the grade leads to (reflection, a style note, a learned skill or a
//! lesson, the L3 summary of turns leaving L2). The record of the turn is completed
//! with what it did and saved again.

use std::sync::Arc;

use evolve_core::history::L2Entry;
use evolve_core::text::clip_chars;
use evolve_core::Timestamp;

use evolve_core::json::{extract, extract_items, Value};

use super::evaluate::grade_of;
use super::memory::{cheap_call_sized, MemoryAgent, NEVER};
use super::prompts::{self, PostParts};
use super::record::{PostTurn, ToolRun, TurnRecord};
use super::reflect::{ReflectWhy, ReflectionAgent};
use super::runtime::Runtime;
use super::trace::{Outcome, ToolStep};
use crate::llm::Usage;

/// At most this many memories are embedded after a turn (the new ones, and a few a
/// failed earlier run left).
const EMBED_AFTER_TURN: usize = 64;

pub(super) fn tools_summary(runs: &[ToolRun]) -> String {
    runs.iter()
        .map(|r| {
            format!(
                "{}({}) {}",
                r.name,
                clip_chars(&r.arguments, 80),
                if r.ran {
                    if r.is_error {
                        "failed"
                    } else {
                        "ran"
                    }
                } else {
                    "refused"
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The post-reply work of one turn, owned so it can run on the worker.
pub(super) struct PostJob {
    pub(super) rt: Arc<Runtime>,
    pub(super) session: String,
    pub(super) turn: u64,
    pub(super) question: String,
    /// The beginning of the answer ([`POST_REPLY_CHARS`]).
    pub(super) reply: String,
    pub(super) tools_summary: String,
    /// The tool calls as crystallization and lessons see them.
    pub(super) steps: Vec<ToolStep>,
    pub(super) accessed: Vec<u64>,
    pub(super) overflow: Vec<L2Entry>,
    pub(super) record: TurnRecord,
    /// What brought world text into the turn (`None`: none did): nothing learned from
    /// it becomes a rule, a style note, or an enabled skill without the person.
    pub(super) world: Option<Vec<String>>,
    /// The person's words in the turn: none when a group member who is not the
    /// person asked (a channel), so nothing learned from it is theirs.
    pub(super) person: Vec<String>,
    /// The person stopped the turn at a question: the reply is Evolve's note that it
    /// stopped, not the model's answer, so there is nothing to grade or learn.
    pub(super) stopped: bool,
    pub(super) now: Timestamp,
}

impl PostJob {
    pub(super) fn run(mut self) -> PostTurn {
        let rt = &*self.rt;
        let mut post = PostTurn::default();
        let mut usage = Usage::default();
        let mut problems = Vec::new();
        if !self.accessed.is_empty() {
            if let Err(e) = rt.store.mark_accessed(&self.accessed, self.now) {
                super::note(
                    &mut problems,
                    format!("marking memories accessed failed: {e}"),
                );
            }
        }
        // Small talk (a greeting, a thanks) teaches nothing: no extraction, no grade.
        let small_talk =
            evolve_core::turn::only_small_talk(&self.question, self.record.tools.len());
        if small_talk {
            log::info!("nothing to learn from small talk: no extraction, no grade");
        }
        if self.stopped {
            log::info!("the turn was stopped at a question: nothing to learn from it");
        }
        let learn =
            rt.config.agent.learn && !self.reply.trim().is_empty() && !small_talk && !self.stopped;
        self.ask_notes(learn, &mut post, &mut usage, &mut problems);
        if learn {
            if let Some(e) = &post.evaluation {
                let stored = crate::store::Evaluation {
                    session: self.session.clone(),
                    turn: self.turn,
                    score: e.score,
                    reason: e.reason.clone(),
                    at: self.now,
                };
                if let Err(err) = rt.store.add_evaluation(&stored) {
                    super::note(
                        &mut problems,
                        format!("saving the evaluation failed: {err}"),
                    );
                }
            }
            let score = post.evaluation.as_ref().map(|e| e.score);
            let due = ReflectionAgent::due(rt, self.turn, score);
            if let Some(why) = due {
                post.reflection = ReflectionAgent.reflect(
                    rt,
                    &self.session,
                    why,
                    self.now,
                    &mut usage,
                    &mut problems,
                    &super::memory::NEVER,
                );
            }
            // A style note is advice to the assistant: never from a turn with world text.
            if self.world.is_some() {
                log::info!("no style note from a turn that read outside text");
            } else if score.is_some_and(|s| s >= rt.config.agent.style_above) {
                if self.style_learned_before(rt.config.agent.style_above) {
                    // The session's style showed in an earlier answer graded as high:
                    // one call per session, not one after every good answer.
                    log::info!("a style note was asked after an earlier answer of this session");
                } else {
                    post.style_note = ReflectionAgent.learn_style(
                        rt,
                        &self.question,
                        &self.reply,
                        &mut usage,
                        &mut problems,
                    );
                }
            }
            // tea-agent's 经验固化 (step 12): a task that worked becomes a skill, one that went
            // wrong a lesson.
            let crystallized = super::crystallize::crystallize(
                rt,
                &self.question,
                &self.reply,
                &self.steps,
                score,
                self.world.is_some(),
                &mut usage,
                &mut problems,
            );
            match crystallized {
                Some(super::crystallize::Crystallized::Enabled(name)) => {
                    post.learned_skill = Some(name)
                }
                Some(super::crystallize::Crystallized::Pending(name)) => {
                    post.skill_pending = Some(name)
                }
                None => {}
            }
            // A low score alone is the reflection's to learn from (it ran above): one
            // call after it, not two. A lesson is still asked when a call failed or
            // was refused, which the reflection does not see.
            let reflected_low = matches!(due, Some(ReflectWhy::LowScore));
            let calls_worked = self.steps.iter().all(|s| s.outcome == Outcome::Worked);
            if reflected_low && calls_worked {
                log::info!("the low score was reflected on: no separate lesson");
            } else {
                post.lesson = super::lesson::learn_lesson(
                    rt,
                    &self.question,
                    &self.reply,
                    &self.steps,
                    post.evaluation.as_ref(),
                    self.world.is_some(),
                    self.now,
                    &mut usage,
                    &mut problems,
                );
            }
        }
        if !self.overflow.is_empty() {
            ReflectionAgent.summarize(rt, &self.session, &self.overflow, &mut usage, &mut problems);
        }
        post.usage = usage;
        post.problems = problems;
        self.record.absorb(&post);
        self.record.save(&rt.store);
        post
    }

    /// Whether an earlier turn of this session was graded at least `above` (by the
    /// evaluator or the person), so its style note was asked then. A store that cannot
    /// be read says no: the note is asked.
    fn style_learned_before(&self, above: f32) -> bool {
        self.rt
            .store
            .evaluations(&self.session)
            .is_ok_and(|all| all.iter().any(|e| e.turn < self.turn && e.score >= above))
    }

    /// The one cheap-model call after the answer: the parts this turn has work for
    /// (the title after the first answer, the grade and the memories unless there is
    /// nothing to learn, the tool-chain review after tool calls), with an answer budget
    /// that is the sum of theirs. Each part of the reply is used on its own: a missing
    /// or malformed part is in `problems` and the others still count.
    fn ask_notes(
        &self,
        learn: bool,
        post: &mut PostTurn,
        usage: &mut Usage,
        problems: &mut Vec<String>,
    ) {
        let rt = &*self.rt;
        // A turn stopped at a question has nothing to review either: its reply is
        // Evolve's note, and the refused call is in the history.
        let review = if rt.config.agent.tool_chain && !self.stopped {
            super::notes::review_input(rt, &self.session, &self.question, &self.steps, problems)
        } else {
            None
        };
        let tools_ran = !self.record.tools.is_empty();
        let parts = PostParts {
            title: rt.config.agent.titles
                && !self.stopped
                && super::notes::title_wanted(rt, &self.session, self.turn, &self.reply),
            grade: learn,
            tool_chain: review.is_some(),
            // Memories come from the person's words about themselves: a plain question
            // about the world holds none.
            memories: learn && (tools_ran || evolve_core::turn::may_hold_a_memory(&self.question)),
        };
        if !parts.any() {
            log::info!("nothing to ask the cheap model after this answer");
            return;
        }
        // After tool calls the full prompt (the review, tool results used faithfully);
        // after a plain answer a short one, so the notes cost less than the answer.
        let shape = if tools_ran { Shape::Full } else { Shape::Plain };
        let input = self.notes_input(parts, shape, review.as_deref());
        let system = match shape {
            Shape::Full => prompts::post_turn(parts),
            Shape::Plain => prompts::post_turn_plain(parts, self.world.is_some()),
        };
        let Some(text) = cheap_call_sized(
            rt,
            &system,
            &input,
            notes_budget(parts, shape),
            usage,
            problems,
            &NEVER,
        ) else {
            return;
        };
        let reply = NotesReply::read(&text, parts);
        // Each part stands alone: what is missing or unusable is named, the rest counts.
        let unusable = |part: &str| {
            let problem = match &reply.unreadable {
                Some(why) => format!(
                    "{part}: the model's reply is not usable JSON ({why}): {:?}",
                    clip_chars(&text, 120)
                ),
                None => format!(
                    "{part}: none in the model's reply {:?}",
                    clip_chars(&text, 120)
                ),
            };
            log::info!("{problem}");
            problem
        };
        if parts.title {
            match &reply.title {
                Some(title) => {
                    post.title = super::notes::apply_title(rt, &self.session, title, problems)
                }
                // No title given: the question's stays, and the next turn asks again.
                None => log::info!("title: the model gave none; the question stays the title"),
            }
        }
        if parts.tool_chain {
            match &reply.tool_chain {
                Some(review) => {
                    post.tool_chain =
                        super::notes::apply_review(rt, &self.session, review, problems).is_some()
                }
                None => problems.push(unusable("tool-chain review")),
            }
        }
        if parts.memories {
            match &reply.memories {
                Some(items) => {
                    post.memories_saved = MemoryAgent.save_extracted(
                        rt,
                        &self.session,
                        items,
                        &self.person,
                        self.world.is_some(),
                        self.now,
                        problems,
                    )
                }
                None => problems.push(unusable("memory extraction")),
            }
            if post.memories_saved > 0 {
                // New memories get their embedding now, not on some later turn's path.
                if let Err(e) = MemoryAgent.embed_missing(rt, EMBED_AFTER_TURN, &NEVER) {
                    super::note(problems, format!("{e}; memories ranked by words only"));
                }
            }
        }
        if parts.grade {
            post.evaluation = reply.grade.as_ref().and_then(grade_of);
            if post.evaluation.is_none() {
                let problem = format!(
                    "evaluation: no score in the model's reply {:?}",
                    clip_chars(&text, 120)
                );
                log::info!("{problem}");
                problems.push(problem);
            }
        }
    }

    /// What the model reads: the exchange (after the current time, for a reminder's
    /// expiry; the answer marked when it drew on outside text), the tools used, and
    /// what the review needs.
    fn notes_input(&self, parts: PostParts, shape: Shape, review: Option<&str>) -> String {
        let mut input = String::new();
        if parts.memories {
            let offset = super::memory::user_offset(&self.rt, self.now);
            input.push_str("Current time: ");
            input.push_str(&crate::tools::time::format_time(self.now, offset));
            input.push_str("\n\n");
        }
        let assistant = match &self.world {
            None => String::from("Assistant"),
            Some(from) => format!(
                "Assistant (drawing on outside text from {}: not the user's words)",
                if from.is_empty() {
                    String::from("tools")
                } else {
                    from.join(", ")
                }
            ),
        };
        let (question, answer) = match shape {
            Shape::Full => (QUESTION_CHARS, ANSWER_CHARS),
            Shape::Plain => (PLAIN_QUESTION_CHARS, PLAIN_ANSWER_CHARS),
        };
        input.push_str("User: ");
        input.push_str(&clip_chars(&self.question, question));
        // A title is what the person wants: their message says it, the answer is not
        // needed for it alone.
        if parts.grade || parts.memories || parts.tool_chain {
            input.push_str(&format!(
                "\n\n{assistant}: {}",
                clip_chars(&self.reply, answer)
            ));
        }
        if parts.grade && !self.tools_summary.is_empty() {
            input.push_str("\n\nTools used: ");
            input.push_str(&clip_chars(&self.tools_summary, 1_000));
        }
        if let Some(review) = review {
            input.push_str("\n\n");
            input.push_str(review.trim_end());
        }
        input
    }
}

/// Which prompt the call after the answer sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// After tool calls: every part spelled out, the tools and the review in the input.
    Full,
    /// After a plain answer: the parts in a few words, the exchange cut shorter.
    Plain,
}

/// Characters of the question the call after tool calls reads.
const QUESTION_CHARS: usize = 3_000;
/// Characters of the answer it reads (the grade needs most of it).
const ANSWER_CHARS: usize = 4_000;
/// Characters of the question the call after a plain answer reads: what the person
/// says about themselves is in their words, so most of a long message.
const PLAIN_QUESTION_CHARS: usize = 1_200;
/// Characters of a plain answer it reads (about 90 tokens): whether an answer is right
/// shows in its first lines; the rest would make the notes cost more than the answer.
const PLAIN_ANSWER_CHARS: usize = 360;

/// Answer budgets of the parts after tool calls, in tokens: a title is one line; a
/// grade a number and a sentence (its reason is kept to 300 characters); a review at
/// most 12 short lines; five one-sentence memories with their fields; and the object's
/// own braces and keys.
const TITLE_TOKENS: u32 = 64;
const GRADE_TOKENS: u32 = 160;
const TOOL_CHAIN_TOKENS: u32 = 320;
const MEMORIES_TOKENS: u32 = 384;
const FRAME_TOKENS: u32 = 16;

/// The same after a plain answer, where each part is asked in a few words and the grade
/// is flat: a title of at most 8 words with its key (`{"title": "Capital of France", `
/// is 10 tokens in SmolLM2's vocabulary); a score and a reason of a few words (`"score":
/// 0.9, "reason": "correct and clear"` is 14); three short memories (about 35 tokens
/// each with their fields). A reply cut at the limit is repaired, and the parts come in
/// that order, so a cut loses the end of the reason first.
const PLAIN_TITLE_TOKENS: u32 = 14;
const PLAIN_GRADE_TOKENS: u32 = 16;
const PLAIN_MEMORIES_TOKENS: u32 = 112;
const PLAIN_FRAME_TOKENS: u32 = 2;

/// The answer budget of the call: the sum of the asked parts' — never the answer's
/// reserve, which a small model that keeps writing would fill.
fn notes_budget(parts: PostParts, shape: Shape) -> u32 {
    let (title, grade, memories, frame) = match shape {
        Shape::Full => (TITLE_TOKENS, GRADE_TOKENS, MEMORIES_TOKENS, FRAME_TOKENS),
        Shape::Plain => (
            PLAIN_TITLE_TOKENS,
            PLAIN_GRADE_TOKENS,
            PLAIN_MEMORIES_TOKENS,
            PLAIN_FRAME_TOKENS,
        ),
    };
    [
        (parts.title, title),
        (parts.grade, grade),
        (parts.tool_chain, TOOL_CHAIN_TOKENS),
        (parts.memories, memories),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, t)| t)
    .sum::<u32>()
        + frame
}

/// The parts of the model's reply, each read on its own.
#[derive(Debug, Default)]
struct NotesReply {
    title: Option<String>,
    grade: Option<Value>,
    tool_chain: Option<String>,
    memories: Option<Vec<Value>>,
    /// Why no JSON object could be read at all (then every part is missing).
    unreadable: Option<String>,
}

impl NotesReply {
    /// Reads the reply: one JSON object (repaired when cut off; in a code fence or
    /// after prose). A bare list is taken as the memories, a bare number as the grade —
    /// what a model that answers one part only writes.
    fn read(text: &str, parts: PostParts) -> NotesReply {
        let value = match extract(text) {
            Ok(v) => v,
            Err(e) => {
                return NotesReply {
                    unreadable: Some(e.to_string()),
                    ..NotesReply::default()
                }
            }
        };
        let mut reply = NotesReply::default();
        match &value {
            Value::Object(_) => {
                reply.title = value.get("title").and_then(text_of);
                reply.grade = value
                    .get("grade")
                    .cloned()
                    .or_else(|| value.get("score").is_some().then(|| value.clone()));
                reply.tool_chain = value.get("tool_chain").and_then(text_of);
                if value.get("memories").is_some() {
                    // The list as extract_items reads it: an item the token limit cut
                    // in half is dropped, not saved half.
                    reply.memories = Some(extract_items(text).unwrap_or_default());
                }
            }
            Value::Array(_) if parts.memories => {
                reply.memories = Some(extract_items(text).unwrap_or_default())
            }
            Value::Number(_) if parts.grade => reply.grade = Some(value.clone()),
            other => {
                reply.unreadable = Some(format!("a {} where an object was asked", other.kind()))
            }
        }
        reply
    }
}

/// A text part: a string, or a list of lines (a review written as a list).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(lines) => Some(
            lines
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}
