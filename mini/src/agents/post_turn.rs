//! The work after an answer, off the answer's path on the background worker: memories
//! marked accessed, the session's title and tool-chain review, memory extraction, the
//! grade, and what the grade leads to (reflection, a style note, a learned skill or a
//! lesson, the L3 summary of turns leaving L2). The record of the turn is completed
//! with what it did and saved again.

use std::sync::Arc;

use evolve_core::history::L2Entry;
use evolve_core::text::clip_chars;
use evolve_core::Timestamp;

use super::evaluate::EvaluateAgent;
use super::manager::save_record;
use super::memory::{MemoryAgent, NEVER};
use super::record::{PostTurn, ToolRun, TurnRecord};
use super::reflect::ReflectionAgent;
use super::runtime::Runtime;
use super::trace::ToolStep;
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
        if rt.config.agent.titles {
            post.title = super::notes::title_session(
                rt,
                &self.session,
                self.turn,
                &self.question,
                &self.reply,
                &mut usage,
                &mut problems,
            );
        }
        if rt.config.agent.tool_chain {
            post.tool_chain = super::notes::review_tool_chain(
                rt,
                &self.session,
                &self.question,
                &self.steps,
                &mut usage,
                &mut problems,
            )
            .is_some();
        }
        // Small talk (a greeting, a thanks) teaches nothing: no extraction, no grade.
        let small_talk =
            evolve_core::memory::nothing_to_learn(&self.question, self.record.tools.len());
        if small_talk {
            log::info!("nothing to learn from small talk: no extraction, no grade");
        }
        if rt.config.agent.learn && !self.reply.trim().is_empty() && !small_talk {
            post.memories_saved = MemoryAgent.extract_and_save(
                rt,
                &self.session,
                &self.question,
                &self.person,
                &self.reply,
                self.world.as_deref(),
                self.now,
                &mut usage,
                &mut problems,
            );
            if post.memories_saved > 0 {
                // New memories get their embedding now, not on some later turn's path.
                if let Err(e) = MemoryAgent.embed_missing(rt, EMBED_AFTER_TURN, &NEVER) {
                    super::note(&mut problems, format!("{e}; memories ranked by words only"));
                }
            }
            post.evaluation = EvaluateAgent.evaluate(
                rt,
                &self.question,
                &self.reply,
                &self.tools_summary,
                &mut usage,
                &mut problems,
            );
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
            if let Some(why) = ReflectionAgent::due(rt, self.turn, score) {
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
                post.style_note = ReflectionAgent.learn_style(
                    rt,
                    &self.question,
                    &self.reply,
                    &mut usage,
                    &mut problems,
                );
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
        if !self.overflow.is_empty() {
            ReflectionAgent.summarize(rt, &self.session, &self.overflow, &mut usage, &mut problems);
        }
        post.usage = usage;
        post.problems = problems;
        self.record.absorb(&post);
        save_record(rt, &self.record);
        post
    }
}
