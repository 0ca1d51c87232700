//! The Manager agent: runs one turn from input to answer (ARCHITECTURE.md § The turn,
//! steps 1–13) and hands the post-reply work to the background worker.
//!
//! What it decides itself: the order of the steps, which of them run side by side,
//! when the tool loop stops (a step limit, a repeated identical call, a cancel), and
//! how a refused call is explained to the model. What it leaves to others: the rules
//! (core), the I/O (the other agents, the store, the model), and how a person is asked
//! (the interface, through [`TurnIo`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::history::{
    self, entry_keywords, Budget, BuildInput, L2Entry, L2Ring, Message, Role,
};
use evolve_core::permission::{
    parse_answer, Answer, AnswerOutcome, CallKey, Decision, Level, PendingCall, Policy, Revoke,
};
use evolve_core::skill::{rank, summary_block, SkillSummary};
use evolve_core::text::{clip_chars, KeywordSet, Lang};
use evolve_core::turn::{
    parse_approval, Action, Approval as TurnApproval, Limits, ModelStep, Precheck, Reply, Turn,
};
use evolve_core::Timestamp;

use super::io::{Heard, SubEvent, TurnInput, TurnIo};
use super::memory::{MemoryAgent, Recall};
use super::post_turn::{tools_summary, PostJob};
use super::prompts::DEFAULT_SYSTEM_PROMPT;
use super::record::{PostTurn, SubtaskRun, TurnRecord, TurnUsage};
use super::reflect::{ReflectWhy, ReflectionAgent};
use super::runtime::Runtime;
use super::subtasks::{self, SubIo, ToParent, SUBTASKS};
use super::tool::{ToolAgent, TurnTools, MORE_TOOLS};
use super::worker::Worker;
use crate::error::Error;
use crate::llm::{AnswerCut, ChatRequest, Delta, ModelRole, ToolSpec, Usage};
use crate::mcp::elicit::{ElicitReply, Elicitation};
use crate::store::{ParkedTurn, Session, Waiting};
use crate::tools::RunAs;

/// Turns whose messages are sent in full (L1), the current one included, at least once
/// the session has as many; older ones come from the L2 ring. L1 moves by
/// [`L1_STEP`] turns at a time (`history::window`).
const L1_TURNS: u64 = 6;
/// Turns by which L1 moves: the history sent stays the same from turn to turn in
/// between (a model server's prompt cache reuses it).
const L1_STEP: u64 = 3;
/// Skill summaries in the prompt, at most.
const SKILLS_IN_PROMPT: usize = 3;
/// Characters of the answer the background work gets: each of its agents reads at most
/// 4 000 (evaluation; extraction, style, skills and lessons fewer) and marks a longer
/// text cut, so twice that is enough and a long answer is not copied whole.
const POST_REPLY_CHARS: usize = 8_000;

/// A running tool's events for the turn's front end.
struct ToolEvents<'a> {
    io: &'a mut dyn TurnIo,
    name: &'a str,
    lang: Lang,
    /// A person can be asked (an interactive turn); otherwise questions are declined.
    asks: bool,
}

impl crate::mcp::CallEvents for ToolEvents<'_> {
    fn progress(&mut self, progress: &crate::mcp::Progress) {
        self.io.on_tool_progress(self.name, progress);
    }

    fn elicit(&mut self, question: &Elicitation) -> ElicitReply {
        if !self.asks {
            log::warn!(
                "MCP server {:?} asks for input during {}; declined in a headless run",
                question.server,
                self.name
            );
            return ElicitReply::Decline;
        }
        self.io.elicit(self.name, question, self.lang)
    }
}

/// Runs turns.
pub struct Manager {
    rt: Arc<Runtime>,
    worker: Worker,
    last_session: std::sync::Mutex<Option<String>>,
}

/// Time spent waiting for the model or for a person (not the agent's overhead), and
/// the main model's tokens.
#[derive(Default)]
struct Timing {
    usage_main: Usage,
    /// Waiting for the model *and* for a person's answer: all that is not the agent's
    /// own overhead (the record's `overhead_ms` is the turn's time minus this).
    model_time: Duration,
    /// The answer text streamed by the model step in progress (kept when it is stopped).
    partial: String,
    /// What went wrong on the way without failing the turn (the record's `problems`).
    problems: Vec<String>,
    /// The sub-turns of the turn's `subtasks` calls.
    subtasks: Vec<SubtaskRun>,
}

/// How the tool loop ended.
enum Ended {
    /// With an answer, the last of the turn's messages.
    Answered,
    /// Parked: this call waits for a person who is not there now.
    Parked(PendingCall),
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

/// The prompt parts that do not change during the tool loop.
struct Context {
    system: String,
    skills_block: String,
    skills: Vec<String>,
    todo_block: String,
    recall: Recall,
    l1: Vec<Message>,
    /// How many of the first user turns of `l1` show placeholders for their tool outputs.
    old_user_turns: usize,
    l2: Vec<L2Entry>,
    l2_keywords: Vec<KeywordSet>,
    l3: Option<String>,
    /// The tool-chain review, L3's second part (`agents::notes`).
    tool_chain: Option<String>,
    /// The keywords of the question and the one before it (which tools to offer).
    query: KeywordSet,
    /// Tools called in the turns sent in full (offered in full again).
    used_tools: Vec<String>,
}

/// What the context brings into the turn, by source: the person's earlier messages in
/// the session are their words; the history's tool results (and the turns that had tool
/// rounds) and memories learned from world text are world text; other memories,
/// skills, summaries and the rest of the history are the store's (their links count as
/// given).
fn see_context(turn: &mut Turn, ctx: &Context) {
    use evolve_core::history::Role;
    use evolve_core::provenance::Source;
    for m in &ctx.l1 {
        let source = match m.role {
            Role::User => evolve_core::provenance::history_user_source(&m.content),
            Role::Tool => Source::World,
            _ if !m.tool_calls.is_empty() => Source::World,
            _ => Source::Store,
        };
        turn.saw_context(source, "history", &m.content);
        // What earlier calls already sent (a scheduled task's weather URL, run after run)
        // tells nobody anything new: their links count as given.
        for call in &m.tool_calls {
            turn.saw_context(Source::Store, "history", &call.arguments);
        }
    }
    for e in &ctx.l2 {
        let asker = evolve_core::provenance::history_user_source(&e.user);
        turn.saw_context(asker, "history", &e.user);
        let world = !e.thinking.is_empty() || !e.files.is_empty();
        let source = if world { Source::World } else { Source::Store };
        turn.saw_context(source, "history", &e.assistant);
        turn.saw_context(source, "history", &e.thinking);
    }
    // A memory learned from world text is still world text in a later turn.
    let memories = if ctx.recall.has_world() {
        Source::World
    } else {
        Source::Store
    };
    turn.saw_context(memories, "memory", &ctx.recall.block);
    // The summary of older turns is world text when they read outside text.
    let l3 = ctx.l3.as_deref().unwrap_or("");
    let summary = if l3.starts_with(super::reflect::L3_WORLD_MARK) {
        Source::World
    } else {
        Source::Store
    };
    turn.saw_context(summary, "history", l3);
    let store = [ctx.skills_block.as_str(), ctx.todo_block.as_str()];
    for text in store {
        turn.saw_context(Source::Store, "memory", text);
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
                self.keep_failed_turn(&sid, turn_no, &turn, &e, &timing.partial, now);
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
        record.overhead_ms = total.saturating_sub(timing.model_time).as_secs_f64() * 1000.0;
        // The record is stored, and handed to the background job, without its reply:
        // the turn's last message holds it (`Store::turn_answer`).
        let reply = std::mem::take(&mut record.reply);
        save_record(rt, &record);
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
            problems: timing.problems.clone(),
            failed: None,
            subtasks: timing.subtasks.clone(),
        }
    }

    /// ARCHITECTURE.md § The turn, step 2: the turn parked on the session, settled by this input. A
    /// person's answer (yes, no, always — from an interactive front end) resumes it;
    /// anything else refuses the waiting call and closes that turn. Calls parked in the
    /// older format (a list without its turn) are refused.
    fn settle_parked(
        &self,
        sid: &str,
        input: &TurnInput<'_>,
        now: Timestamp,
    ) -> Result<Option<(Turn, u64)>, Error> {
        let rt = &*self.rt;
        let parked = match rt.store.waiting(sid)? {
            Waiting::Nothing => return Ok(None),
            Waiting::Stale(calls) => {
                self.settle_stale_pending(sid, &calls, now)?;
                return Ok(None);
            }
            Waiting::Parked(p) => *p,
        };
        rt.store.unpark(sid)?;
        let ParkedTurn {
            turn: turn_no,
            state: mut turn,
        } = parked;
        // Only the person's words answer a question; a group member's never do.
        let answers = input.policy == Policy::Interactive
            && input.from == evolve_core::provenance::Source::Person
            && turn
                .pending()
                .is_some_and(|p| is_answer(input.text, p.level));
        if answers {
            log::info!(
                "the answer {:?} settles the call waiting in session {sid}",
                input.text.trim()
            );
            turn.handle_answer(input.text);
            return Ok(Some((turn, turn_no)));
        }
        log::info!("a new message in session {sid}: the call waiting for an answer is refused");
        turn.handle_moved_on();
        while let Some(action) = turn.poll() {
            match action {
                Action::Audit(entry) => rt.store.audit(&[entry])?,
                Action::Done => break,
                _ => {}
            }
        }
        let question = turn.question().to_string();
        // Entries it pushes out of the ring stay there until the next turn's
        // background work summarises them.
        self.store_turn(sid, turn_no, &question, &turn.take_messages(), None, now)?;
        let mut record = TurnRecord::empty(sid, turn_no);
        record.tools = turn.take_calls();
        record.steps = turn.steps();
        save_record(rt, &record);
        Ok(None)
    }

    /// Steps 3–9: gathers the context and drives the turn until it is answered or
    /// parked; returns the context, for the record.
    fn answer(
        &self,
        sid: &str,
        turn_no: u64,
        turn: &mut Turn,
        input: &TurnInput<'_>,
        io: &mut dyn TurnIo,
        timing: &mut Timing,
    ) -> Result<(Context, Ended), Error> {
        let rt = &*self.rt;
        let question = turn.question().to_string();
        let lang = Lang::guess(&question);
        // 3–4. Memory search and skill match side by side; history loads meanwhile.
        let (ctx, mut tools) = self.context(
            sid,
            turn_no,
            &question,
            input.replaces,
            input.cancel,
            rt.clock.now(),
        )?;
        see_context(turn, &ctx);
        let ended = self.drive(
            sid, turn_no, turn, &ctx, &mut tools, input, io, lang, timing, false,
        )?;
        Ok((ctx, ended))
    }

    /// Steps 5–9: the one driver of [`Turn`] for every front end. Each action goes to
    /// the agent that does it (ARCHITECTURE.md § The turn: `CallModel` is steps 5–6,
    /// `CheckCall` step 7, `AskPerson` step 8, `RunTool` step 9); each event gets its
    /// own reading of the clock. A `nested`
    /// turn (a sub-turn of `subtasks`) is never parked: a question nobody answers stops
    /// it.
    #[allow(clippy::too_many_arguments)]
    fn drive(
        &self,
        sid: &str,
        turn_no: u64,
        turn: &mut Turn,
        ctx: &Context,
        tools: &mut TurnTools,
        input: &TurnInput<'_>,
        io: &mut dyn TurnIo,
        lang: Lang,
        timing: &mut Timing,
        nested: bool,
    ) -> Result<Ended, Error> {
        let rt = &*self.rt;
        loop {
            let Some(action) = turn.poll() else {
                // Every action is answered below before the next poll.
                return Err(Error::Other("the turn stopped without an action".into()));
            };
            log::trace!(
                "session {sid}, turn {turn_no}: the {} agent acts",
                action.agent().as_str()
            );
            match action {
                Action::CallModel(step) => {
                    if input.cancel.load(Ordering::Relaxed) {
                        return Err(Error::Model(crate::llm::LlmError::Cancelled));
                    }
                    // An MCP server that changed its tools during the last step is
                    // listed again: the model sees the new list now.
                    if step.step > 1 {
                        ToolAgent.refresh(rt, tools, input.cancel);
                    }
                    let reply = self.call_model(turn, ctx, tools, &step, input, io, timing)?;
                    // The tools offered stay offered in the session's later turns (a
                    // sub-turn's are its own).
                    if let Some(offered) = tools.offered_to_store().filter(|_| !nested) {
                        if let Err(e) = rt.store.set_offered_tools(sid, &offered) {
                            log::warn!("the tools offered in session {sid} cannot be kept: {e}");
                        }
                    }
                    turn.handle_reply(reply);
                }
                Action::CheckCall(call) => {
                    // A server that changed its tools during an earlier call of this
                    // step (a tool redefined after it ran) is listed again first: the
                    // call is checked against what the tool is now.
                    ToolAgent.refresh(rt, tools, input.cancel);
                    // The grants as they stand now: one revoked meanwhile counts.
                    turn.set_grants(rt.store.grants(sid)?);
                    let check = ToolAgent.check(
                        rt,
                        tools,
                        &call.name,
                        &call.arguments,
                        turn.grants(),
                        turn.policy(),
                        turn.provenance(),
                        turn.messages(),
                    );
                    // Asked because the tool is not what the person allowed: say so,
                    // and drop the grants that covered what it was.
                    if matches!(check.decision, Decision::AskOnce | Decision::AskTwice) {
                        if let Some(text) =
                            ToolAgent.definition_notice(tools, &call.name, turn.grants())
                        {
                            io.on_notice(&text);
                            let key = CallKey {
                                tool: &call.name,
                                command: None,
                                definition: check.definition.as_deref(),
                            };
                            if let Err(e) = rt.store.revoke_grants(sid, Revoke::Superseded(key)) {
                                log::warn!("the grants of {} cannot be dropped: {e}", call.name);
                            }
                        }
                    }
                    turn.handle_check(check, rt.clock.now());
                }
                Action::AskPerson(call) if nested => {
                    let asked = Instant::now();
                    let reply = io.ask(&call, lang);
                    timing.model_time += asked.elapsed();
                    match reply {
                        Heard::Reply(text) => turn.handle_answer(&text),
                        Heard::Stop | Heard::Away => turn.handle_stopped(),
                    }
                }
                Action::AskPerson(call) => {
                    // Parked in the store while the person thinks: a crash, a closed
                    // terminal or a client that went away leaves the question there,
                    // and the session's next input settles it.
                    let parked = ParkedTurn {
                        turn: turn_no,
                        state: turn.clone(),
                    };
                    rt.store.park(sid, &parked)?;
                    rt.store.release();
                    let asked = Instant::now();
                    let reply = io.ask(&call, lang);
                    timing.model_time += asked.elapsed();
                    match reply {
                        Heard::Reply(text) => {
                            rt.store.unpark(sid)?;
                            turn.handle_answer(&text);
                        }
                        Heard::Stop => {
                            rt.store.unpark(sid)?;
                            turn.handle_stopped();
                        }
                        Heard::Away => {
                            log::info!(
                                "the call {} ({}) waits for an answer in session {sid}",
                                call.id,
                                call.tool
                            );
                            return Ok(Ended::Parked(call));
                        }
                    }
                }
                Action::RunTool { call, level, .. } if call.name == SUBTASKS && !nested => {
                    io.on_tool_start(&call.name, &call.arguments, level);
                    let (text, is_error) =
                        self.run_subtasks(sid, turn, &call.arguments, input, io, timing);
                    turn.handle_output(text, is_error);
                }
                Action::RunTool { call, .. } if call.name == MORE_TOOLS => {
                    let (text, is_error) = ToolAgent.more_tools(tools, &call.arguments);
                    turn.handle_output(text, is_error);
                }
                Action::RunTool {
                    call,
                    level,
                    offline,
                } => {
                    io.on_tool_start(&call.name, &call.arguments, level);
                    let out = ToolAgent.run(
                        rt,
                        tools,
                        sid,
                        &call.name,
                        &call.arguments,
                        RunAs {
                            level,
                            offline,
                            world: turn.provenance().has_world(),
                        },
                        rt.clock.now(),
                        input.cancel,
                        &mut ToolEvents {
                            io: &mut *io,
                            name: &call.name,
                            lang,
                            asks: matches!(turn.policy(), Policy::Interactive),
                        },
                    );
                    turn.handle_output(out.content, out.is_error);
                }
                Action::Audit(entry) => rt.store.audit(&[entry])?,
                Action::SaveGrant(grant) => rt.store.add_grant(sid, &grant)?,
                Action::CallSettled(run) => {
                    // The call's result is the turn's last message when it settles.
                    let output = turn.messages().last().map_or("", |m| m.content.as_str());
                    io.on_tool_end(&run, output);
                }
                Action::Done => return Ok(Ended::Answered),
            }
        }
    }

    /// One model step: the prompt under the budget (the tool schemas counted in it), the
    /// streamed call, and what the shell knows about each call before its check.
    #[allow(clippy::too_many_arguments)]
    fn call_model(
        &self,
        turn: &Turn,
        ctx: &Context,
        tools: &mut TurnTools,
        step: &ModelStep,
        input: &TurnInput<'_>,
        io: &mut dyn TurnIo,
        timing: &mut Timing,
    ) -> Result<Reply, Error> {
        let rt = &*self.rt;
        let specs = if step.offer_tools {
            // In full: what the question points to, what the session and this turn
            // used, the forced tool and what the model asked for; the rest by name.
            let mut wanted: Vec<&str> = ctx.used_tools.iter().map(String::as_str).collect();
            wanted.extend(turn.calls().iter().map(|c| c.name.as_str()));
            wanted.extend(step.force_tool.as_deref());
            ToolAgent.offer(rt, tools, &ctx.query, &wanted)
        } else {
            Vec::new()
        };
        // The tools array goes out with the messages: it is counted in the window.
        let schema_tokens = schema_tokens(&specs);
        let mut l1 = ctx.l1.clone();
        l1.extend(turn.messages().iter().cloned());
        let built = history::build(
            &BuildInput {
                system_prompt: &ctx.system,
                skills_block: non_empty(&ctx.skills_block),
                todo_block: non_empty(&ctx.todo_block),
                memory_block: non_empty(&ctx.recall.block),
                summary: ctx.l3.as_deref(),
                tool_chain_summary: ctx.tool_chain.as_deref(),
                l2: &ctx.l2,
                l2_keywords: &ctx.l2_keywords,
                query: turn.question(),
                l1: &l1,
                old_user_turns: Some(ctx.old_user_turns),
                budget: Budget {
                    context_window: rt.config.model.context_window.saturating_sub(schema_tokens),
                    reserved_output: rt.config.model.reserved_output,
                },
            },
            &rt.config.core.history,
            &rt.tokenizer,
        );
        if !built.trimmed.is_empty() {
            log::debug!("history trimmed: {:?}", built.trimmed);
        }
        log::debug!(
            "step {}: {} tools ({schema_tokens} tokens of schemas)",
            step.step,
            specs.len()
        );
        let req = ChatRequest {
            known_tools: if step.offer_tools {
                ToolAgent.names(tools)
            } else {
                Vec::new()
            },
            role: ModelRole::Main,
            messages: built.messages,
            tools: specs,
            stream: input.stream,
            max_tokens: None,
            temperature: None,
            json: false,
            tool_choice: step.force_tool.clone(),
        };
        let t = Instant::now();
        let partial = &mut timing.partial;
        partial.clear();
        let resp = while_the_model_thinks(rt, || {
            let mut on_delta = |d: Delta<'_>| {
                if let Delta::Content(text) = d {
                    partial.push_str(text);
                }
                io.on_delta(&d)
            };
            rt.model.chat(&req, &mut on_delta, input.cancel)
        });
        timing.model_time += t.elapsed();
        let resp = resp?;
        // A whole answer is the step's message: nothing is left partial, and the copy
        // streamed so far goes now (a big answer would hold it twice through the rest
        // of the turn).
        timing.partial = String::new();
        timing.usage_main.add(resp.usage);
        let mut message = resp.message;
        if resp.images_left_out > 0 && timing.problems.iter().all(|p| !p.contains("images")) {
            timing.problems.push(format!(
                "the model does not take images: {} left out, the text sent with a note in \
                 their place",
                resp.images_left_out
            ));
        }
        if message.tool_calls.is_empty() && message.content.trim().is_empty() {
            log::warn!("the model returned an empty answer");
        }
        // A call whose arguments the answer cap cut is never run; its arguments
        // (incomplete, up to the cap in size) are not kept or sent back.
        let cut_call = match resp.cut {
            Some(AnswerCut::ToolArguments(i)) if i < message.tool_calls.len() => {
                message.tool_calls[i].arguments = "{}".to_string();
                Some(i)
            }
            _ => None,
        };
        let cap = crate::llm::answer_size(rt.config.model.max_answer_bytes);
        let mut prechecks = Vec::with_capacity(message.tool_calls.len());
        for (i, call) in message.tool_calls.iter_mut().enumerate() {
            let pre = if cut_call == Some(i) {
                log::warn!(
                    "the arguments of {} passed max_answer_bytes = {cap}; the call is not run",
                    call.name
                );
                Precheck::Cut(cap.clone())
            } else if !ToolAgent.relist_for(rt, tools, &call.name, input.cancel) {
                // (A server's tool the turn does not know yet had its list asked for
                // again first.)
                log::info!("the model called {:?}, which does not exist", call.name);
                Precheck::Unknown(ToolAgent.unknown(tools, &call.name))
            } else {
                // The arguments every later step sees (check, tool, audit, history)
                // are the tool's own reading of them, as strict JSON.
                match rt.tools.canonical_arguments(&call.arguments) {
                    Ok(a) => {
                        call.arguments = a;
                        Precheck::Ready
                    }
                    Err(problem) => Precheck::Unreadable(problem),
                }
            };
            prechecks.push(pre);
        }
        Ok(Reply { message, prechecks })
    }

    /// After a failed or stopped turn: the question and the tool rounds that ran are
    /// stored as a turn without an answer, with a record that says why. A stopped
    /// answer's text so far (`partial`) is kept as its answer: the person saw it.
    fn keep_failed_turn(
        &self,
        sid: &str,
        turn_no: u64,
        turn: &Turn,
        error: &Error,
        partial: &str,
        now: Timestamp,
    ) {
        let store = &self.rt.store;
        let cancelled = matches!(error, Error::Model(crate::llm::LlmError::Cancelled));
        let ran_tools = turn.calls().iter().any(|r| r.ran);
        // Only what the model saw complete: the question, and whole tool rounds.
        let mut keep = turn.messages().to_vec();
        while keep.len() > 1
            && keep.last().is_some_and(|m| {
                m.role == Role::Assistant || m.role == Role::Tool && !round_complete(&keep)
            })
        {
            keep.pop();
        }
        let partial = partial.trim_end();
        if cancelled && !partial.trim().is_empty() {
            keep.push(Message::assistant(partial));
        }
        // The turn is closed like an answered one, with its L2 entry (each closed turn
        // has one: the history counts on it), which says there was no (whole) answer.
        let note = match (cancelled, keep.last()) {
            (true, Some(m)) if m.role == Role::Assistant => format!("{partial} {STOPPED_HERE}"),
            (true, _) => NO_ANSWER_STOPPED.to_string(),
            _ => NO_ANSWER_FAILED.to_string(),
        };
        let m = &self.rt.config.model;
        let budget = m.context_window.saturating_sub(m.reserved_output);
        let stored = self
            .next_l2(sid, l2_entry(turn.question(), &note, &keep, budget), false)
            .and_then(|(ring, _)| Ok(store.append_turn(sid, turn_no, &keep, now, &ring, None)?));
        match stored {
            Ok(()) => log::info!(
                "the question{} is kept in session {sid}",
                if ran_tools {
                    " and the tool calls that ran"
                } else {
                    ""
                }
            ),
            Err(e) => {
                log::warn!("keeping the failed turn in session {sid} failed: {e}");
                return;
            }
        }
        // Why there is no answer, for the interface after a reload (not for the model:
        // the next turn's history has the question without an answer).
        let mut record = TurnRecord::empty(sid, turn_no);
        record.tools = turn.calls().to_vec();
        record.steps = turn.steps();
        record.failed = Some(if cancelled {
            "stopped".to_string()
        } else {
            error.to_string()
        });
        save_record(&self.rt, &record);
    }

    /// Stores a closed turn's messages with the session's next L2 ring, in one
    /// transaction; returns the entries that overflowed the ring (to summarise).
    /// ARCHITECTURE.md § The turn, step 10.
    fn store_turn(
        &self,
        sid: &str,
        turn_no: u64,
        question: &str,
        msgs: &[Message],
        replaces: Option<u64>,
        now: Timestamp,
    ) -> Result<Vec<L2Entry>, Error> {
        let rt = &*self.rt;
        let reply = msgs.last().map_or("", |m| m.content.as_str());
        let m = &rt.config.model;
        let budget = m.context_window.saturating_sub(m.reserved_output);
        let entry = l2_entry(question, reply, msgs, budget);
        let (ring, overflow) = self.next_l2(sid, entry, replaces.is_some())?;
        rt.store
            .append_turn(sid, turn_no, msgs, now, &ring, replaces)?;
        Ok(overflow)
    }

    /// The L2 ring with the finished turn's `entry` added (saved with the turn's
    /// messages in one transaction); `replacing`: the last entry is the replaced turn's
    /// and leaves first. When the ring overflows, the overflowing entries stay in it
    /// until the background summary has folded them into L3 (which then trims the ring
    /// and writes the summary in one transaction): if the summary fails, they are
    /// summarised after a later turn, never dropped. Returns the ring and the overflow.
    fn next_l2(
        &self,
        sid: &str,
        entry: L2Entry,
        replacing: bool,
    ) -> Result<(L2Ring, Vec<L2Entry>), Error> {
        let rt = &*self.rt;
        let mut ring = rt.store.l2(sid)?;
        if replacing {
            let mut entries = ring.entries().to_vec();
            entries.pop();
            ring = L2Ring::from_entries(entries);
        }
        let mut trimmed = ring.clone();
        let overflow = trimmed.push(entry.clone(), &rt.config.core.history);
        if overflow.is_empty() {
            Ok((trimmed, overflow))
        } else {
            let mut all = ring.entries().to_vec();
            all.push(entry);
            Ok((L2Ring::from_entries(all), overflow))
        }
    }

    /// `/reflect`: a reflection over the session's recent turns now.
    pub fn reflect_now(&self, session: &str, cancel: &AtomicBool) -> (Option<String>, Vec<String>) {
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

    /// Refuses calls left pending by a run that ended before the answer.
    fn settle_stale_pending(
        &self,
        sid: &str,
        stale: &[PendingCall],
        now: Timestamp,
    ) -> Result<(), Error> {
        let entries: Vec<_> = stale
            .iter()
            .map(|p| {
                log::warn!(
                    "the call {} ({}) was never answered; it is recorded as refused",
                    p.id,
                    p.tool
                );
                evolve_core::permission::AuditEntry::new(
                    now,
                    sid,
                    &p.tool,
                    evolve_core::permission::ToolClass {
                        level: p.level,
                        source: evolve_core::permission::ClassSource::BuiltIn,
                    },
                    &Default::default(),
                    Decision::AskOnce,
                )
                .with_answer(AnswerOutcome::Refused)
            })
            .collect();
        self.rt.store.audit(&entries)?;
        self.rt.store.set_pending(sid, &[])?;
        Ok(())
    }

    /// Steps 3–5 without the model: memories and skills side by side, the history
    /// levels, the system prompt with style notes.
    fn context(
        &self,
        sid: &str,
        turn_no: u64,
        query: &str,
        replaces: Option<u64>,
        cancel: &AtomicBool,
        now: Timestamp,
    ) -> Result<(Context, TurnTools), Error> {
        let rt = &*self.rt;
        let lang = Lang::guess(query);
        let (recall, (skills_block, skills), loaded, tools) = std::thread::scope(|s| {
            let recall = s.spawn(|| {
                let previous = previous_question(rt, sid, turn_no);
                MemoryAgent.recall(rt, query, previous.as_deref(), now)
            });
            let skills = s.spawn(|| match_skills(rt, query, lang));
            let loaded = self.load_history(sid, turn_no, replaces);
            // The turn's own snapshot of the tools (never another session's), while
            // the memories are searched.
            let tools = ToolAgent.for_turn(rt, cancel);
            (
                recall.join().unwrap_or_else(|_| Recall {
                    block: String::new(),
                    used: Vec::new(),
                    considered: 0,
                    ids: Vec::new(),
                }),
                skills.join().unwrap_or_default(),
                loaded,
                tools,
            )
        });
        let Loaded {
            l1,
            old_user_turns,
            l2,
            l3,
            tool_chain,
            system,
            todo_block,
            offered,
        } = loaded?;
        let tools = tools.with_offered(offered);
        let l2_keywords = l2
            .iter()
            .map(|e| entry_keywords(e, &rt.tokenizer))
            .collect();
        let previous = l1
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        let query = KeywordSet::of(&rt.tokenizer, &format!("{query}\n{previous}"));
        let mut used_tools: Vec<String> = Vec::new();
        for call in l1.iter().flat_map(|m| &m.tool_calls) {
            if !used_tools.contains(&call.name) {
                used_tools.push(call.name.clone());
            }
        }
        let ctx = Context {
            system,
            skills_block,
            skills,
            todo_block,
            recall,
            l1,
            old_user_turns,
            l2,
            l2_keywords,
            l3,
            tool_chain,
            query,
            used_tools,
        };
        Ok((ctx, tools))
    }

    /// A `subtasks` call: each subtask answered by a sub-turn of its own, at most
    /// `[agent] subtask_parallel` at a time on threads of their own, while this thread
    /// alone talks to the front end (their questions, one at a time, and their events).
    /// Returns the tool's output and whether it is an error.
    #[allow(clippy::too_many_arguments)]
    fn run_subtasks(
        &self,
        sid: &str,
        turn: &Turn,
        arguments: &str,
        input: &TurnInput<'_>,
        io: &mut dyn TurnIo,
        timing: &mut Timing,
    ) -> (String, bool) {
        let rt = &*self.rt;
        let tasks = match subtasks::parse(arguments, rt.config.agent.subtasks) {
            Ok(t) => t,
            Err(e) => return (e, true),
        };

        let queue = std::sync::Mutex::new(tasks.into_iter().enumerate().collect::<Vec<_>>());
        let workers = rt.config.agent.subtask_parallel.clamp(1, 16);
        let started = Instant::now();
        let (tx, rx) = mpsc::channel::<ToParent>();
        let mut runs: Vec<SubtaskRun> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    let tx = tx.clone();
                    let queue = &queue;
                    s.spawn(move || {
                        let mut done = Vec::new();
                        loop {
                            // The first task first: they start in the model's order.
                            let next = {
                                let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                                (!q.is_empty()).then(|| q.remove(0))
                            };
                            let Some((i, task)) = next else { break };
                            let mut sub_io = SubIo {
                                index: i + 1,
                                to_parent: tx.clone(),
                            };
                            let _ = tx.send(ToParent::Event(SubEvent::Start {
                                index: i + 1,
                                task: task.clone(),
                            }));
                            let run = self.sub_turn(sid, i + 1, &task, turn, input, &mut sub_io);
                            let _ = tx.send(ToParent::Event(SubEvent::End(run.clone())));
                            done.push(run);
                        }
                        done
                    })
                })
                .collect();
            drop(tx);
            // Until every sub-turn has ended (each holds a sender).
            for msg in rx {
                match msg {
                    ToParent::Event(e) => io.on_subtask(&e),
                    ToParent::Ask { call, lang, reply } => {
                        let _ = reply.send(io.ask(&call, lang));
                    }
                    ToParent::Elicit {
                        tool,
                        question,
                        lang,
                        reply,
                    } => {
                        let _ = reply.send(io.elicit(&tool, &question, lang));
                    }
                    ToParent::Progress { name, progress } => io.on_tool_progress(&name, &progress),
                }
            }
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        runs.sort_by_key(|r| r.index);
        for r in &runs {
            timing.usage_main.add(r.usage);
        }
        log::info!(
            "session {sid}: {} subtasks answered in {} ms ({} at a time; {} failed)",
            runs.len(),
            started.elapsed().as_millis(),
            workers,
            runs.iter().filter(|r| r.failed.is_some()).count()
        );
        let text = subtasks::output(&runs);
        let all_failed = runs.iter().all(|r| r.failed.is_some());
        timing.subtasks.extend(runs);
        (text, all_failed)
    }

    /// One sub-turn: its own question, memories, skills and tools (not `subtasks`), no
    /// history, the parent's policy and the session's grants.
    #[allow(clippy::too_many_arguments)]
    fn sub_turn(
        &self,
        sid: &str,
        index: usize,
        task: &str,
        parent_turn: &Turn,
        parent: &TurnInput<'_>,
        io: &mut SubIo,
    ) -> SubtaskRun {
        // The parent's policy, and its sources: the task is the model's text.
        let policy = *parent_turn.policy();
        let rt = &*self.rt;
        let started = Instant::now();
        let mut timing = Timing::default();
        let mut turn: Option<Turn> = None;
        let result = (|| -> Result<(), Error> {
            let grants = rt.store.grants(sid)?;
            let limits = Limits {
                max_steps: rt.config.agent.max_steps,
            };
            let t = turn.insert(
                Turn::new(sid, task, policy, grants, limits)
                    .with_provenance(parent_turn.provenance().clone()),
            );
            let (ctx, mut tools) = self.sub_context(task, parent.cancel)?;
            // Its own memories and skills: a world memory makes it start with world text.
            see_context(t, &ctx);
            let input = TurnInput {
                session: Some(sid),
                text: task,
                policy,
                stream: false,
                cancel: parent.cancel,
                force_tool: None,
                replaces: None,
                images: &[],
                from: parent.from,
            };
            let lang = Lang::guess(task);
            self.drive(
                sid,
                0,
                t,
                &ctx,
                &mut tools,
                &input,
                io,
                lang,
                &mut timing,
                true,
            )?;
            Ok(())
        })();
        let (reply, tools, steps, needs_person) = match turn.as_mut() {
            Some(t) => {
                let reply = match (&result, t.messages().last()) {
                    (Ok(()), Some(m)) if m.role == Role::Assistant => m.content.clone(),
                    _ => String::new(),
                };
                (reply, t.take_calls(), t.steps(), t.needs_person())
            }
            None => (String::new(), Vec::new(), 0, false),
        };
        let failed = match result {
            Err(Error::Model(crate::llm::LlmError::Cancelled)) => Some("stopped".to_string()),
            Err(e) => Some(e.to_string()),
            Ok(()) if reply.trim().is_empty() => Some("it gave no answer".to_string()),
            Ok(()) => None,
        };
        if let Some(why) = &failed {
            log::warn!("session {sid}: subtask {index} failed: {why}");
        }
        SubtaskRun {
            index,
            task: task.to_string(),
            reply,
            tools,
            steps,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            usage: timing.usage_main,
            needs_person,
            failed,
        }
    }

    /// A sub-turn's context: the system prompt, the memories and skills its question
    /// selects, no history; the turn's tools without `subtasks`.
    fn sub_context(&self, task: &str, cancel: &AtomicBool) -> Result<(Context, TurnTools), Error> {
        let rt = &*self.rt;
        let lang = Lang::guess(task);
        let recall = MemoryAgent.recall(rt, task, None, rt.clock.now());
        let (skills_block, skills) = match_skills(rt, task, lang);
        let mut tools = ToolAgent.for_turn(rt, cancel);
        ToolAgent.leave_out(&mut tools, SUBTASKS);
        let ctx = Context {
            system: system_prompt(rt)?,
            skills_block,
            skills,
            todo_block: String::new(),
            recall,
            l1: Vec::new(),
            old_user_turns: 0,
            l2: Vec::new(),
            l2_keywords: Vec::new(),
            l3: None,
            tool_chain: None,
            query: KeywordSet::of(&rt.tokenizer, task),
            used_tools: Vec::new(),
        };
        Ok((ctx, tools))
    }

    fn load_history(
        &self,
        sid: &str,
        turn_no: u64,
        replaces: Option<u64>,
    ) -> Result<Loaded, Error> {
        let rt = &*self.rt;
        let window = history::window(turn_no, L1_TURNS, L1_STEP);
        let since = window.first_turn;
        // Superseded turns are left out (and have no ring entry); the turn this one
        // replaces is left out too, its entry goes when this turn is stored.
        let session = rt.store.session(sid)?;
        let superseded = session.superseded;
        let left_out = |t: u64| superseded.contains(&t) || replaces == Some(t);
        let stored: Vec<_> = rt
            .store
            .messages(sid, since)?
            .into_iter()
            .filter(|m| !left_out(m.turn))
            .collect();
        let old_user_turns = stored
            .iter()
            .filter(|m| m.turn < window.outputs_from && m.message.role == Role::User)
            .count();
        let l1: Vec<Message> = stored.into_iter().map(|m| m.message).collect();
        let l1 = with_answers(l1);
        // The ring's last entries are the turns already in L1 (or replaced): leave
        // them out.
        let in_l1 = (since..turn_no).filter(|t| !superseded.contains(t)).count();
        let ring = rt.store.l2(sid)?;
        let entries = ring.entries();
        let l2 = entries[..entries.len().saturating_sub(in_l1)].to_vec();
        let (l3, tool_chain) = rt.store.l3_and_tool_chain(sid)?;
        let tool_chain = tool_chain.filter(|_| rt.config.agent.tool_chain);
        let system = system_prompt(rt)?;
        let todos = rt.store.todos(sid)?;
        let open: Vec<_> = todos.iter().filter(|t| !t.done).collect();
        let mut todo_block = String::new();
        if !open.is_empty() {
            todo_block.push_str("Open TODO items of this session:\n");
            for t in open {
                todo_block.push_str(&format!("[ ] {}. {}\n", t.id, t.text));
            }
        }
        Ok(Loaded {
            l1,
            old_user_turns,
            l2,
            l3,
            tool_chain,
            system,
            todo_block,
            offered: session.offered_tools,
        })
    }
}

/// What a turn's prompt is built from, as stored.
struct Loaded {
    l1: Vec<Message>,
    old_user_turns: usize,
    l2: Vec<L2Entry>,
    l3: Option<String>,
    tool_chain: Option<String>,
    system: String,
    todo_block: String,
    /// The tools the session has been offered, in the order first offered.
    offered: Vec<String>,
}

/// The system prompt: the active version (or the built-in one) and the style notes
/// learned from well-rated answers.
fn system_prompt(rt: &Runtime) -> Result<String, Error> {
    let mut system = match rt.store.active_prompt()? {
        Some(p) => p.text,
        None => DEFAULT_SYSTEM_PROMPT.to_string(),
    };
    let notes = rt.store.style_notes()?;
    if !notes.is_empty() {
        system.push_str("\n\nWhat this user liked in earlier answers:\n");
        for n in &notes {
            system.push_str("- ");
            system.push_str(n);
            system.push('\n');
        }
    }
    Ok(system)
}

/// A turn can replace only its session's last answered turn, once, with nothing
/// waiting for a person.
pub fn check_replace(rt: &Runtime, session: &Session, created: bool, n: u64) -> Result<(), Error> {
    let last = session.turns;
    if created || n == 0 || n != last || session.superseded.contains(&n) {
        return Err(Error::Conflict(format!(
            "only the last turn of a session can be answered again (turn {n} asked; the last \
             is {last})"
        )));
    }
    if matches!(rt.store.waiting(&session.id)?, Waiting::Parked(_)) {
        return Err(Error::Conflict(
            "a tool call of this session waits for an answer: answer it first".into(),
        ));
    }
    Ok(())
}

/// What the history says in place of the answer of a turn that has none.
const NO_ANSWER_STOPPED: &str = "(no answer: the user stopped this turn)";
const NO_ANSWER_FAILED: &str = "(no answer: the model failed on this turn)";
const NO_ANSWER: &str = "(no answer: this turn was stopped or failed)";
/// After the part of an answer the user stopped, in L2.
const STOPPED_HERE: &str = "(the user stopped the answer here)";

/// The history with a note in place of each missing answer (a stopped or failed turn's
/// question followed by the next question, or by this turn's), so user and assistant messages alternate:
/// strict chat templates (llama.cpp's, some Mistral ones) refuse two user messages in a
/// row.
fn with_answers(msgs: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(msgs.len());
    for m in msgs {
        let unanswered = out
            .last()
            .is_some_and(|p| m.role == Role::User && matches!(p.role, Role::User | Role::Tool));
        if unanswered {
            out.push(Message::assistant(NO_ANSWER));
        }
        out.push(m);
    }
    // The turn's own question comes next.
    if out
        .last()
        .is_some_and(|p| matches!(p.role, Role::User | Role::Tool))
    {
        out.push(Message::assistant(NO_ANSWER));
    }
    out
}

/// The user's question of the turn before `turn_no` in the session, if any (the
/// context a follow-up question leans on). A store error only loses the context.
fn previous_question(rt: &Runtime, sid: &str, turn_no: u64) -> Option<String> {
    let before = turn_no.checked_sub(1).filter(|&t| t >= 1)?;
    let messages = rt.store.messages(sid, before).ok()?;
    messages
        .into_iter()
        .filter(|m| m.turn == before && m.message.role == evolve_core::history::Role::User)
        .map(|m| m.message.content)
        .next_back()
}

/// The summaries of the skills relevant to `query`, and their names.
fn match_skills(rt: &Runtime, query: &str, lang: Lang) -> (String, Vec<String>) {
    rt.skills.refresh(&rt.config.skills_dir(), &rt.tokenizer);
    let catalog = rt.skills.current();
    let all = catalog.all();
    if all.is_empty() {
        return (String::new(), Vec::new());
    }
    let summaries: Vec<SkillSummary> = catalog.summaries_for(query, &rt.tokenizer);
    let keywords = KeywordSet::of(&rt.tokenizer, query);
    let ranked = rank(&summaries, &keywords, SKILLS_IN_PROMPT);
    let picked: Vec<&SkillSummary> = ranked.iter().map(|&(i, _)| &summaries[i]).collect();
    let names = picked.iter().map(|s| s.name.clone()).collect();
    (summary_block(&picked, lang), names)
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.trim().is_empty()).then_some(s)
}

/// Whether a reply to a waiting call's question is an answer (yes, no, or "always"
/// where it counts) rather than a new message.
fn is_answer(text: &str, level: Level) -> bool {
    parse_answer(text) != Answer::Unclear || parse_approval(text, level) == TurnApproval::Always
}

/// Whether every tool call of the last assistant message with calls has its result.
fn round_complete(msgs: &[Message]) -> bool {
    let Some(at) = msgs
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        return true;
    };
    let results = msgs[at + 1..]
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    results >= msgs[at].tool_calls.len()
}

/// Estimated tokens of the tools array of a request (its JSON).
fn schema_tokens(specs: &[ToolSpec]) -> usize {
    if specs.is_empty() {
        return 0;
    }
    let json: Vec<serde_json::Value> = specs
        .iter()
        .map(|s| {
            serde_json::json!({"type": "function", "function": {
                "name": s.name, "description": s.description, "parameters": s.parameters}})
        })
        .collect();
    evolve_core::text::estimate_text_tokens(&serde_json::Value::Array(json).to_string())
}

/// The L2 entry of a finished turn: question, answer, the tool rounds' text, the files
/// the file tools touched.
///
/// The answer is kept up to `max_tokens`, the prompt's input budget: a longer one could
/// never be shown whole from L2 (the history is trimmed to that budget), and the ring is
/// read and written again on every turn, so a long answer is not copied into it whole.
fn l2_entry(question: &str, reply: &str, turn: &[Message], max_tokens: usize) -> L2Entry {
    let mut thinking = String::new();
    let mut files = Vec::new();
    for m in turn {
        if m.role == Role::Assistant && !m.tool_calls.is_empty() {
            if !m.content.trim().is_empty() {
                thinking.push_str(m.content.trim());
                thinking.push('\n');
            }
            for c in &m.tool_calls {
                thinking.push_str(&format!(
                    "→ {}({})\n",
                    c.name,
                    clip_chars(&c.arguments, 200)
                ));
                if let Some(p) = evolve_core::permission::string_arg(&c.arguments, "path") {
                    if !files.contains(&p) {
                        files.push(p);
                    }
                }
            }
        }
    }
    L2Entry {
        user: question.to_string(),
        assistant: history::cut_to_tokens(reply, max_tokens).unwrap_or_else(|| reply.to_string()),
        thinking,
        files,
    }
}

/// Stores a turn record (given without its reply, which is stored once, as the turn's
/// last message).
/// How long a model call runs before the store is released for other evolve
/// processes (a cron `ask`, a second `chat`): a quick answer keeps it open, so the turn
/// does not close and reopen the file (two syncs each) around it.
const RELEASE_AFTER: Duration = Duration::from_millis(250);

/// Runs `call` (a model call); the store is released if it takes longer than
/// [`RELEASE_AFTER`], and opened again by the next read or write.
fn while_the_model_thinks<R>(rt: &Runtime, call: impl FnOnce() -> R) -> R {
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(RELEASE_AFTER) {
                rt.store.release();
            }
        });
        let out = call();
        drop(done);
        out
    })
}

pub(super) fn save_record(rt: &Runtime, record: &TurnRecord) {
    if let Ok(json) = serde_json::to_string(record) {
        if let Err(e) = rt.store.put_turn(&record.session, record.turn, &json) {
            log::warn!("saving the turn record failed: {e}");
        }
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
