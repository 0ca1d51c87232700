//! The Manager agent: runs one turn from input to answer (docs/ARCHITECTURE.md § The
//! turn, steps 1–13) and hands the post-reply work to the background worker.
//!
//! What it decides itself: the order of the steps — the session (1), a parked turn
//! first (2), the context and the tool loop (3–9), the turn stored before anything
//! else (10), the background work after the reply (11–13) — and what the turn's record
//! holds. The steps live beside it: [`closing`] (parked, failed and stored turns),
//! [`context`] (what the prompt is made of), [`driver`] (the one driver of core's
//! [`Turn`]), [`subturns`] (the sub-turns of `subtasks`) and [`timing`] (what a turn
//! measures). What it leaves to others: the rules (core), the I/O (the other agents,
//! the store, the model), and how a person is asked (the interface, through
//! [`TurnIo`]).

mod closing;
mod context;
mod driver;
mod subturns;
mod timing;

use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::turn::{Limits, Turn};

pub use closing::check_replace;
use context::Context;
use driver::Ended;
use timing::Timing;

use super::io::{TurnInput, TurnIo};
use super::post_turn::{tools_summary, PostJob};
use super::record::{PostTurn, TurnRecord, TurnUsage};
use super::reflect::{ReflectWhy, ReflectionAgent};
use super::runtime::Runtime;
use super::worker::Worker;
use crate::cancel::Cancel;
use crate::error::Error;
use crate::llm::Usage;

/// Characters of the answer the background work gets: each of its agents reads at most
/// 4 000 (evaluation; extraction, style, skills and lessons fewer) and marks a longer
/// text cut, so twice that is enough and a long answer is not copied whole.
const POST_REPLY_CHARS: usize = 8_000;

/// Runs turns.
pub struct Manager {
    rt: Arc<Runtime>,
    worker: Worker,
    last_session: std::sync::Mutex<Option<String>>,
}

impl super::Agent for Manager {
    super::describe!(Manager, "Manager", "runs each turn: memory, skills, prompt, tools under permissions, answer, then learning in the background");
    fn close(&self, _rt: &Runtime, wait: std::time::Duration) {
        if !self.flush(wait) {
            log::warn!(
                "the background work did not finish within {} s",
                wait.as_secs()
            );
        }
    }
}

impl Manager {
    /// A manager with its background worker.
    pub fn new(rt: Arc<Runtime>) -> Manager {
        Manager {
            rt,
            worker: Worker::start(),
            last_session: std::sync::Mutex::new(None),
        }
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// Closes the (shared) store once the background work queued so far is done; the
    /// next use opens it again. For interfaces that wait for a person between turns.
    pub fn release_when_idle(&self) {
        let rt = Arc::clone(&self.rt);
        self.worker.submit(move || rt.store.release());
    }

    /// Waits for the background work queued so far, at most `timeout`.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.worker.flush(timeout)
    }

    /// The session the last turn ran in (kept after a failed turn, so an interface can
    /// go on in the same session: the question and any tool rounds are stored there).
    pub fn last_session(&self) -> Option<String> {
        self.last_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_last_session(&self, sid: Option<String>) {
        *self
            .last_session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = sid;
    }

    /// Runs one turn. Returns the record (without the background results) and a
    /// receiver that gets them when the worker is done.
    ///
    /// A turn parked on the session (a call waiting for a person) is settled first: an
    /// answer from a person (yes, no, always) resumes it and the record is that turn's;
    /// any other input refuses the waiting call, closes that turn and is a turn of its
    /// own. A turn whose call waits for a person who is not there is parked and its
    /// record says so (`waiting`).
    ///
    /// When the model fails mid-turn, or the person stops it, nothing acknowledged is
    /// lost: the question and the tool rounds that ran are stored in the session as a
    /// turn without an answer, its record says why (`failed`), and the error is
    /// returned. The next question is a turn of its own.
    pub fn turn(
        &self,
        input: TurnInput<'_>,
        io: &mut dyn TurnIo,
    ) -> Result<(TurnRecord, Receiver<PostTurn>), Error> {
        let rt = &*self.rt;
        let started = Instant::now();
        let now = rt.clock.now();
        // Background model work waits while this turn runs (a one-slot server).
        let answering = super::yield_gate::answering();
        super::budget::check_daily(rt, now)?;

        // 1. The session.
        let (session, created) = match input.session {
            Some(id) => (rt.store.session(id)?, false),
            None => (
                rt.store
                    .create_session_for_turn(&evolve_core::text::one_line(input.text, 60), now)?,
                true,
            ),
        };
        let sid = session.id.clone();
        self.set_last_session(Some(sid.clone()));
        if let Some(n) = input.replaces {
            check_replace(rt, &session, created, n)?;
        }

        // 2. A parked turn first.
        let (mut turn, turn_no) = match self.settle_parked(&sid, &input, now)? {
            Some(resumed) => resumed,
            None => {
                let turns = if created {
                    session.turns
                } else {
                    rt.store.session(&sid)?.turns
                };
                let grants = rt.store.grants(&sid)?;
                let limits = Limits {
                    max_steps: rt.config.agent.max_steps,
                };
                let mut turn = Turn::new(&sid, input.text, input.policy, grants, limits)
                    .force_tool(input.force_tool)
                    .with_images(input.images.to_vec());
                if input.from == evolve_core::provenance::Source::World {
                    // A message from someone who is not the person (a group member on a
                    // channel): world text from the start, none of it the person's words.
                    let mut sources = evolve_core::provenance::Provenance::default();
                    sources.saw(
                        evolve_core::provenance::Source::World,
                        "channel",
                        input.text,
                    );
                    turn = turn.with_provenance(sources);
                }
                (turn, turns + 1)
            }
        };

        let mut timing = Timing::default();
        let (ctx, ended) = match self.answer(&sid, turn_no, &mut turn, &input, io, &mut timing) {
            Ok(done) => done,
            Err(e) => {
                self.keep_failed_turn(
                    &sid,
                    turn_no,
                    &turn,
                    &e,
                    &timing.partial,
                    &timing.chosen,
                    now,
                );
                return Err(e);
            }
        };
        if let Ended::Parked(call) = ended {
            let mut record = self.record(&sid, turn_no, &mut turn, ctx, &timing);
            record.waiting = Some(call);
            record.answer_ms = started.elapsed().as_millis() as u64;
            let (_, rx) = mpsc::channel();
            return Ok((record, rx));
        }
        let question = turn.question().to_string();

        // 10. Save the turn (history first: what the user saw is never lost).
        let answered = Instant::now();
        let mut turn_msgs = turn.take_messages();
        let overflow = self.store_turn(
            &sid,
            turn_no,
            &question,
            &turn_msgs,
            &timing.chosen,
            input.replaces,
            rt.clock.now(),
        )?;
        // The answer is moved, not copied, from the stored message into the record: one
        // copy for the interface, one for the background work below.
        let reply = turn_msgs
            .last_mut()
            .map(|m| std::mem::take(&mut m.content))
            .unwrap_or_default();

        let world = turn
            .provenance()
            .has_world()
            .then(|| turn.provenance().world_origins().to_vec());
        let person = turn.provenance().person_words().to_vec();
        let mut ctx = ctx;
        let accessed = std::mem::take(&mut ctx.recall.ids);
        let mut record = self.record(&sid, turn_no, &mut turn, ctx, &timing);
        record.reply = reply;
        record.answer_ms = answered.duration_since(started).as_millis() as u64;
        let total = answered.duration_since(started) + answered.elapsed();
        record.overhead_ms = total.saturating_sub(timing.waited()).as_secs_f64() * 1000.0;
        // The record is stored, and handed to the background job, without its reply:
        // the turn's last message holds it (`Store::turn_answer`).
        let reply = std::mem::take(&mut record.reply);
        record.save(&rt.store);
        let job_record = record.clone();
        record.reply = reply;

        // 11–12 after the reply: the background worker.
        let (tx, rx) = mpsc::channel();
        let job = PostJob {
            rt: Arc::clone(&self.rt),
            session: sid,
            turn: turn_no,
            question,
            reply: evolve_core::history::char_prefix(&record.reply, POST_REPLY_CHARS).to_string(),
            tools_summary: tools_summary(&record.tools),
            steps: super::trace::steps(&record.tools, &turn_msgs),
            accessed,
            overflow,
            record: job_record,
            world,
            person,
            stopped: timing.stopped,
            now,
        };
        drop(turn_msgs);
        let big = record.reply.len() >= crate::heap::BIG_ANSWER;
        // The answer is given: the background work may go (before the queue, which may
        // wait for it).
        drop(answering);
        self.worker.submit(move || {
            let post = job.run();
            let _ = tx.send(post);
            if big {
                crate::heap::give_back();
            }
        });
        Ok((record, rx))
    }

    /// The record of a turn (its reply and timings are the caller's).
    fn record(
        &self,
        sid: &str,
        turn_no: u64,
        turn: &mut Turn,
        ctx: Context,
        timing: &Timing,
    ) -> TurnRecord {
        TurnRecord {
            session: sid.to_string(),
            turn: turn_no,
            reply: String::new(),
            memories: ctx.recall.used,
            memories_considered: ctx.recall.considered,
            skills: ctx.skills,
            tools: turn.take_calls(),
            steps: turn.steps(),
            needs_person: turn.needs_person() || timing.subtasks.iter().any(|r| r.needs_person),
            waiting: None,
            evaluation: None,
            reflection: None,
            learned_skill: None,
            skill_pending: None,
            lesson: None,
            usage: TurnUsage {
                main: timing.usage_main,
                cheap: Usage::default(),
            },
            answer_ms: 0,
            overhead_ms: 0.0,
            person_ms: timing.person_time.as_millis() as u64,
            problems: timing.problem_texts(),
            failed: None,
            subtasks: timing.subtasks.clone(),
        }
    }

    /// `/reflect`: a reflection over the session's recent turns now.
    pub fn reflect_now(&self, session: &str, cancel: &Cancel) -> (Option<String>, Vec<String>) {
        let mut usage = Usage::default();
        let mut problems = Vec::new();
        let lesson = ReflectionAgent.reflect(
            &self.rt,
            session,
            ReflectWhy::Asked,
            self.rt.clock.now(),
            &mut usage,
            &mut problems,
            cancel,
        );
        (lesson, problems)
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
