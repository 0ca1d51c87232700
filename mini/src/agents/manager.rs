//! The Manager agent: runs one turn from input to answer (DESIGN.md "One turn", steps
//! 1–13) and hands the post-reply work to the background worker.
//!
//! What it decides itself: the order of the steps, which of them run side by side,
//! when the tool loop stops (a step limit, a repeated identical call, a cancel), and
//! how a refused call is explained to the model. What it leaves to others: the rules
//! (core), the I/O (the other agents, the store, the model), and how a person is asked
//! (the interface, through [`TurnIo`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::history::{
    self, entry_keywords, Budget, BuildInput, L2Entry, L2Ring, Message, Role,
};
use evolve_core::permission::{AnswerOutcome, Decision, Level, PendingCall, Policy, RefusalReason};
use evolve_core::skill::{rank, summary_block, SkillSummary};
use evolve_core::text::{clip_chars, KeywordSet, Lang};
use evolve_core::Timestamp;

use super::describe_agent;
use super::evaluate::EvaluateAgent;
use super::memory::{MemoryAgent, Recall, NEVER};
use super::prompts::DEFAULT_SYSTEM_PROMPT;
use super::record::{PostTurn, ToolRun, TurnRecord, TurnUsage};
use super::reflect::{ReflectWhy, ReflectionAgent};
use super::runtime::Runtime;
use super::tool::ToolAgent;
use super::trace::ToolStep;
use super::worker::Worker;
use crate::cli::app::now;
use crate::error::Error;
use crate::llm::{AnswerCut, ChatRequest, Delta, ModelRole, Usage};

/// Turns whose messages are sent in full (L1); older ones come from the L2 ring.
const L1_TURNS: u64 = 6;
/// Skill summaries in the prompt, at most.
const SKILLS_IN_PROMPT: usize = 3;
/// The same call (tool and arguments) this many times in one turn ends the tool loop.
const REPEAT_LIMIT: usize = 3;
/// Characters of the answer the background work gets: each of its agents reads at most
/// 4 000 (evaluation; extraction, style, skills and lessons fewer) and marks a longer
/// text cut, so twice that is enough and a long answer is not copied whole.
const POST_REPLY_CHARS: usize = 8_000;
/// At most this many memories are embedded after a turn (the new ones, and a few a
/// failed earlier run left).
const EMBED_AFTER_TURN: usize = 64;

/// One input to the agent.
pub struct TurnInput<'a> {
    /// Continue this session; `None` starts a new one.
    pub session: Option<&'a str>,
    /// The user's message.
    pub text: &'a str,
    /// Interactive (a person can be asked) or headless (`ask`, cron).
    pub policy: Policy,
    /// Stream the answer through [`TurnIo::on_delta`].
    pub stream: bool,
    /// Set (e.g. by Ctrl-C) to stop the answer.
    pub cancel: &'a AtomicBool,
    /// Make the first model call use this tool (`evolve ask --tool NAME`).
    pub force_tool: Option<&'a str>,
}

/// A person's settled answer about a parked call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Run,
    /// Run it, and the same tool without asking for the rest of the session (L1–L3).
    AlwaysForSession,
    /// Do not run it.
    Refused,
}

/// What the interface does during a turn.
pub trait TurnIo {
    /// A streamed piece of the answer.
    fn on_delta(&mut self, _delta: &Delta<'_>) {}
    /// A tool call is about to run (after the permission check).
    fn on_tool_start(&mut self, _name: &str, _arguments: &str, _level: Level) {}
    /// A tool call finished (ran or was refused).
    fn on_tool_end(&mut self, _run: &ToolRun) {}
    /// A person decides about a call that needs one. Called only under
    /// [`Policy::Interactive`]; the call's `prompt` says what to show (the second
    /// question of an L4 call repeats the exact arguments).
    fn approve(&mut self, call: &mut PendingCall, lang: Lang) -> Approval;
}

/// Runs turns.
pub struct Manager {
    rt: Arc<Runtime>,
    worker: Worker,
    last_session: std::sync::Mutex<Option<String>>,
}

/// What the tool loop has done so far (kept when it fails, so nothing is lost).
struct LoopState {
    turn_msgs: Vec<Message>,
    runs: Vec<ToolRun>,
    seen: HashMap<(String, String), usize>,
    usage_main: Usage,
    needs_person: bool,
    steps: usize,
    /// Time spent waiting for the model or for a person (not the agent's overhead).
    model_time: Duration,
}

describe_agent!(
    Manager,
    "manager",
    "Manager",
    "runs each turn: memory, skills, prompt, tools under permissions, answer, then learning in the background"
);

/// The prompt parts that do not change during the tool loop.
struct Context {
    system: String,
    skills_block: String,
    skills: Vec<String>,
    todo_block: String,
    recall: Recall,
    l1: Vec<Message>,
    l2: Vec<L2Entry>,
    l2_keywords: Vec<KeywordSet>,
    l3: Option<String>,
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
    /// When the model fails mid-turn nothing acknowledged is lost: the question and the
    /// tool rounds that ran are stored in the session (the turn stays open), and the
    /// error is returned. A new session that would stay empty is removed.
    pub fn turn(
        &self,
        input: TurnInput<'_>,
        io: &mut dyn TurnIo,
    ) -> Result<(TurnRecord, Receiver<PostTurn>), Error> {
        let rt = &*self.rt;
        let started = Instant::now();
        let now = now();

        // 1. The session.
        let (session, created) = match input.session {
            Some(id) => (rt.store.session(id)?, false),
            None => (
                rt.store
                    .create_session(&evolve_core::text::one_line(input.text, 60), now)?,
                true,
            ),
        };
        let sid = session.id.clone();
        let turn_no = session.turns + 1;
        self.set_last_session(Some(sid.clone()));

        let mut state = LoopState {
            turn_msgs: vec![Message::user(input.text)],
            runs: Vec::new(),
            seen: HashMap::new(),
            usage_main: Usage::default(),
            needs_person: false,
            steps: 0,
            model_time: Duration::ZERO,
        };
        let outcome = self.answer(&sid, turn_no, &input, io, now, &mut state);
        let ctx = match outcome {
            Ok(ctx) => ctx,
            Err(e) => {
                self.keep_failed_turn(&sid, turn_no, created, &state, &e, now);
                return Err(e);
            }
        };
        let LoopState {
            turn_msgs,
            runs,
            usage_main,
            needs_person,
            steps,
            model_time,
            ..
        } = state;

        // 10. Save the turn (history first: what the user saw is never lost).
        let answered = Instant::now();
        let mut turn_msgs = turn_msgs;
        let reply = turn_msgs.last().map_or("", |m| m.content.as_str());
        let m = &rt.config.model;
        let budget = m.context_window.saturating_sub(m.reserved_output);
        let entry = l2_entry(input.text, reply, &turn_msgs, budget);
        let (ring, overflow) = self.next_l2(&sid, entry)?;
        rt.store
            .append_turn(&sid, turn_no, &turn_msgs, now, &ring)?;
        drop(ring);
        // The answer is moved, not copied, from the stored message into the record: one
        // copy for the interface, one for the background work below.
        let reply = turn_msgs
            .last_mut()
            .map(|m| std::mem::take(&mut m.content))
            .unwrap_or_default();

        let mut record = TurnRecord {
            session: sid.clone(),
            turn: turn_no,
            reply,
            memories: ctx.recall.used,
            memories_considered: ctx.recall.considered,
            skills: ctx.skills,
            tools: runs,
            steps,
            needs_person,
            evaluation: None,
            reflection: None,
            learned_skill: None,
            lesson: None,
            usage: TurnUsage {
                main: usage_main,
                cheap: Usage::default(),
            },
            answer_ms: answered.duration_since(started).as_millis() as u64,
            overhead_ms: 0.0,
            problems: Vec::new(),
        };
        let total = answered.duration_since(started) + answered.elapsed();
        record.overhead_ms = total.saturating_sub(model_time).as_secs_f64() * 1000.0;
        // The record is stored, and handed to the background job, without its reply:
        // the turn's last message holds it (`Store::turn_answer`).
        let reply = std::mem::take(&mut record.reply);
        save_record(rt, &record);
        let job_record = record.clone();
        record.reply = reply;

        // 10–12 after the reply: the background worker.
        let (tx, rx) = mpsc::channel();
        let job = PostJob {
            rt: Arc::clone(&self.rt),
            session: sid,
            turn: turn_no,
            question: input.text.to_string(),
            reply: evolve_core::history::char_prefix(&record.reply, POST_REPLY_CHARS).to_string(),
            tools_summary: tools_summary(&record.tools),
            steps: super::trace::steps(&record.tools, &turn_msgs),
            accessed: ctx.recall.ids,
            overflow,
            record: job_record,
            now,
        };
        drop(turn_msgs);
        let big = record.reply.len() >= crate::heap::BIG_ANSWER;
        self.worker.submit(move || {
            let post = job.run();
            let _ = tx.send(post);
            if big {
                crate::heap::give_back();
            }
        });
        Ok((record, rx))
    }

    /// Steps 2–9: settles stale approvals, gathers the context, runs the tool loop and
    /// leaves the answer as the last of the turn's messages; returns the context, for
    /// the record.
    fn answer(
        &self,
        sid: &str,
        turn_no: u64,
        input: &TurnInput<'_>,
        io: &mut dyn TurnIo,
        now: Timestamp,
        state: &mut LoopState,
    ) -> Result<Context, Error> {
        let rt = &*self.rt;
        let lang = Lang::guess(input.text);

        // 2. Calls parked by an earlier run that ended before the person answered are
        //    settled as refused: nothing runs without an answer.
        self.settle_stale_pending(sid, now)?;

        // 3–4. Memory search and skill match side by side; history loads meanwhile.
        let ctx = self.context(sid, turn_no, input.text, now)?;

        // 5–9. Prompt, tool loop, answer.
        let mut specs = ToolAgent.specs(rt, input.cancel);
        let mut tools_generation = rt.mcp.generation();
        let mut grants = rt.store.grants(sid)?;
        let max_steps = rt.config.agent.max_steps.max(1);
        loop {
            state.steps += 1;
            // An MCP server that changed its tools during the last step (it sent
            // tools/list_changed) is listed again: the model sees the new list now.
            // (A list fetched during a call counts too: the generation moved.)
            if state.steps > 1
                && (rt.mcp.refresh_changed() || rt.mcp.generation() != tools_generation)
            {
                specs = ToolAgent.specs(rt, input.cancel);
                tools_generation = rt.mcp.generation();
            }
            let last_step = state.steps >= max_steps;
            let mut l1 = ctx.l1.clone();
            l1.extend(state.turn_msgs.iter().cloned());
            let built = history::build(
                &BuildInput {
                    system_prompt: &ctx.system,
                    skills_block: non_empty(&ctx.skills_block),
                    todo_block: non_empty(&ctx.todo_block),
                    memory_block: non_empty(&ctx.recall.block),
                    summary: ctx.l3.as_deref(),
                    tool_chain_summary: None,
                    l2: &ctx.l2,
                    l2_keywords: &ctx.l2_keywords,
                    query: input.text,
                    l1: &l1,
                    budget: Budget {
                        context_window: rt.config.model.context_window,
                        reserved_output: rt.config.model.reserved_output,
                    },
                },
                &rt.config.core.history,
                &rt.tokenizer,
            );
            if !built.trimmed.is_empty() {
                log::debug!("history trimmed: {:?}", built.trimmed);
            }
            let req = ChatRequest {
                role: ModelRole::Main,
                messages: built.messages,
                tools: if last_step { Vec::new() } else { specs.clone() },
                stream: input.stream,
                max_tokens: None,
                temperature: None,
                json: false,
                tool_choice: input
                    .force_tool
                    .filter(|_| state.steps == 1 && !last_step)
                    .map(str::to_string),
            };
            // Other evolve processes may use the store while the model thinks.
            rt.store.release();
            let t = Instant::now();
            let resp = rt.model.chat(&req, &mut |d| io.on_delta(&d), input.cancel);
            state.model_time += t.elapsed();
            let resp = resp?;
            state.usage_main.add(resp.usage);
            let cut = resp.cut;
            let mut msg = resp.message;
            if msg.tool_calls.is_empty() || last_step {
                let mut text = std::mem::take(&mut msg.content);
                if text.trim().is_empty() {
                    text = if msg.tool_calls.is_empty() {
                        log::warn!("the model returned an empty answer");
                        String::new()
                    } else {
                        format!(
                            "(stopped after {} steps without a final answer)",
                            state.steps
                        )
                    };
                }
                let mut fin = Message::assistant(text);
                fin.reasoning = msg.reasoning.take();
                state.turn_msgs.push(fin);
                return Ok(ctx);
            }
            // A call whose arguments the answer cap cut is never run; its arguments
            // (incomplete, up to the cap in size) are not kept or sent back.
            let cut_call = match cut {
                Some(AnswerCut::ToolArguments(i)) if i < msg.tool_calls.len() => {
                    msg.tool_calls[i].arguments = "{}".to_string();
                    Some(i)
                }
                _ => None,
            };
            // The arguments every later step sees (check, tool, audit, history) are the
            // tool's own reading of them, as strict JSON.
            let canonical: Vec<Result<String, String>> = msg
                .tool_calls
                .iter()
                .map(|c| rt.tools.canonical_arguments(&c.arguments))
                .collect();
            for (call, args) in msg.tool_calls.iter_mut().zip(&canonical) {
                if let Ok(a) = args {
                    call.arguments = a.clone();
                }
            }
            state.turn_msgs.push(msg.clone());
            let mut stop = false;
            for (i, (call, args)) in msg.tool_calls.iter().zip(canonical).enumerate() {
                let (content, mut run) = match args {
                    _ if cut_call == Some(i) => cut_arguments(rt, call),
                    _ if !ToolAgent.has(rt, &call.name) => unknown_tool(rt, call),
                    Err(problem) => (
                        format!(
                            "error: not run: {problem}. Send the arguments as one JSON object."
                        ),
                        ToolRun::not_run(call, "unreadable arguments"),
                    ),
                    Ok(_) => {
                        let key = (call.name.clone(), call.arguments.clone());
                        let count = state.seen.entry(key).or_insert(0);
                        *count += 1;
                        if *count > 1 {
                            if *count >= REPEAT_LIMIT {
                                stop = true;
                            }
                            (
                                format!(
                                    "not run: you already called {} with exactly these arguments in this turn; use that result instead of calling it again",
                                    call.name
                                ),
                                ToolRun::not_run(call, "repeated"),
                            )
                        } else {
                            self.one_call(
                                sid,
                                call,
                                input,
                                &mut grants,
                                lang,
                                now,
                                io,
                                &mut state.needs_person,
                                &mut state.model_time,
                            )?
                        }
                    }
                };
                run.output_chars = content.chars().count();
                io.on_tool_end(&run);
                state
                    .turn_msgs
                    .push(Message::tool_result(&call.id, &call.name, content));
                state.runs.push(run);
            }
            if stop {
                log::warn!(
                    "the model repeated the same tool call {REPEAT_LIMIT} times; asking for an answer"
                );
                // One last round without tools so the model answers with what it has.
                state.steps = max_steps.saturating_sub(1);
            }
            if input.cancel.load(Ordering::Relaxed) {
                return Err(Error::Model(crate::llm::LlmError::Cancelled));
            }
        }
    }

    /// After a failed turn: the question and the tool rounds that ran are stored (the
    /// turn stays open); a cancelled turn that ran nothing is dropped; a session made
    /// for this turn that would stay empty is removed.
    fn keep_failed_turn(
        &self,
        sid: &str,
        turn_no: u64,
        created: bool,
        state: &LoopState,
        error: &Error,
        now: Timestamp,
    ) {
        let store = &self.rt.store;
        let cancelled = matches!(error, Error::Model(crate::llm::LlmError::Cancelled));
        let ran_tools = state.runs.iter().any(|r| r.ran);
        if cancelled && !ran_tools {
            if created {
                match store.remove_session(sid) {
                    Ok(()) => self.set_last_session(None),
                    Err(e) => log::warn!("removing the empty session {sid} failed: {e}"),
                }
            }
            return;
        }
        // Only what the model saw complete: the question, and whole tool rounds.
        let mut keep = state.turn_msgs.clone();
        while keep.len() > 1 && keep.last().is_some_and(|m| m.role == Role::Assistant) {
            keep.pop();
        }
        match store.append_messages(sid, turn_no, &keep, now, false) {
            Ok(_) => log::info!(
                "the question{} is kept in session {sid}",
                if ran_tools {
                    " and the tool calls that ran"
                } else {
                    ""
                }
            ),
            Err(e) => log::warn!("keeping the failed turn in session {sid} failed: {e}"),
        }
    }

    /// The L2 ring with the finished turn added (saved with the turn's messages in one
    /// transaction). When the ring overflows, the overflowing entries stay in it until
    /// the background summary has folded them into L3 (which then trims the ring and
    /// writes the summary in one transaction): if the summary fails, they are summarised
    /// after a later turn, never dropped.
    fn next_l2(&self, sid: &str, entry: L2Entry) -> Result<(L2Ring, Vec<L2Entry>), Error> {
        let rt = &*self.rt;
        let ring = rt.store.l2(sid)?;
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
            now(),
            &mut usage,
            &mut problems,
            cancel,
        );
        (lesson, problems)
    }

    /// Checks, asks about and runs one call. Returns the tool message text and the run.
    #[allow(clippy::too_many_arguments)]
    fn one_call(
        &self,
        sid: &str,
        call: &evolve_core::history::ToolCall,
        input: &TurnInput<'_>,
        grants: &mut evolve_core::permission::Grants,
        lang: Lang,
        now: Timestamp,
        io: &mut dyn TurnIo,
        needs_person: &mut bool,
        waited: &mut Duration,
    ) -> Result<(String, ToolRun), Error> {
        let rt = &*self.rt;
        let check = ToolAgent.check(rt, &call.name, &call.arguments, grants, &input.policy);
        let mut audit = check.audit(now, sid, &call.name);
        let mut run = ToolRun {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            level: Some(check.level),
            decision: Some(check.decision),
            answer: None,
            ran: false,
            is_error: false,
            output_chars: 0,
        };
        let allowed = match check.decision {
            Decision::Run | Decision::RunScoped => true,
            Decision::AskOnce | Decision::AskTwice => {
                let mut pending =
                    match PendingCall::new(&call.id, &call.name, &call.arguments, check.level, now)
                    {
                        Ok(p) => p,
                        Err(e) => {
                            log::warn!("cannot ask about {}: {e}", call.name);
                            rt.store.audit(&[audit])?;
                            return Ok((format!("refused: {e}"), run));
                        }
                    };
                // Parked in the store while the person thinks: a crash meanwhile
                // leaves a record, and the next turn settles it as refused.
                rt.store.set_pending(sid, std::slice::from_ref(&pending))?;
                rt.store.release();
                // A person's time to answer is not the agent's overhead.
                let asked = Instant::now();
                let approval = io.approve(&mut pending, lang);
                *waited += asked.elapsed();
                rt.store.set_pending(sid, &[])?;
                let (outcome, runs) = match approval {
                    Approval::Run => (AnswerOutcome::Run, true),
                    Approval::AlwaysForSession => {
                        match grants.grant_call(check.grant_key(&call.name), check.level) {
                            Ok(_) => rt.store.set_grants(sid, grants)?,
                            Err(e) => log::warn!("{e}"),
                        }
                        (AnswerOutcome::Run, true)
                    }
                    Approval::Refused => (AnswerOutcome::Refused, false),
                };
                audit = audit.with_answer(outcome);
                run.answer = Some(if runs { "run" } else { "refused" }.into());
                runs
            }
            Decision::Refuse(_) => false,
        };
        rt.store.audit(&[audit])?;
        if !allowed {
            let text = match check.decision {
                Decision::Refuse(RefusalReason::Dangerous) => format!(
                    "refused: this call is level L5 (dangerous: {}) and Evolve never runs it. Do not retry it; tell the user what you wanted to do.",
                    reasons(&check)
                ),
                Decision::Refuse(RefusalReason::NeedsPerson { level, max_auto }) => {
                    *needs_person = true;
                    format!(
                        "refused: this call is level {level} and needs a person's approval, but nobody can be asked in this run (it allows up to {max_auto} without one). Answer without it and say what you would have done."
                    )
                }
                _ => "refused: the user said no to this call. Do not retry it; answer without it.".to_string(),
            };
            return Ok((text, run));
        }
        io.on_tool_start(&call.name, &call.arguments, check.level);
        let out = ToolAgent.run(
            rt,
            sid,
            &call.name,
            &call.arguments,
            check.level,
            now,
            input.cancel,
        );
        run.ran = true;
        run.is_error = out.is_error;
        let text = if out.is_error {
            format!("error: {}", out.content)
        } else {
            out.content
        };
        Ok((text, run))
    }

    /// Refuses calls left pending by a run that ended before the answer.
    fn settle_stale_pending(&self, sid: &str, now: Timestamp) -> Result<(), Error> {
        let stale = self.rt.store.pending(sid)?;
        if stale.is_empty() {
            return Ok(());
        }
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
        now: Timestamp,
    ) -> Result<Context, Error> {
        let rt = &*self.rt;
        let lang = Lang::guess(query);
        let (recall, (skills_block, skills), loaded) = std::thread::scope(|s| {
            let recall = s.spawn(|| {
                let previous = previous_question(rt, sid, turn_no);
                MemoryAgent.recall(rt, query, previous.as_deref(), now)
            });
            let skills = s.spawn(|| match_skills(rt, query, lang));
            let loaded = self.load_history(sid, turn_no);
            (
                recall.join().unwrap_or_else(|_| Recall {
                    block: String::new(),
                    used: Vec::new(),
                    considered: 0,
                    ids: Vec::new(),
                }),
                skills.join().unwrap_or_default(),
                loaded,
            )
        });
        let (l1, l2, l3, system, todo_block) = loaded?;
        let l2_keywords = l2
            .iter()
            .map(|e| entry_keywords(e, &rt.tokenizer))
            .collect();
        Ok(Context {
            system,
            skills_block,
            skills,
            todo_block,
            recall,
            l1,
            l2,
            l2_keywords,
            l3,
        })
    }

    #[allow(clippy::type_complexity)]
    fn load_history(
        &self,
        sid: &str,
        turn_no: u64,
    ) -> Result<(Vec<Message>, Vec<L2Entry>, Option<String>, String, String), Error> {
        let rt = &*self.rt;
        let since = turn_no.saturating_sub(L1_TURNS).max(1);
        let l1: Vec<Message> = rt
            .store
            .messages(sid, since)?
            .into_iter()
            .map(|m| m.message)
            .collect();
        // The ring's last entries are the turns already in L1: leave them out.
        let in_l1 = turn_no.saturating_sub(since) as usize;
        let ring = rt.store.l2(sid)?;
        let entries = ring.entries();
        let l2 = entries[..entries.len().saturating_sub(in_l1)].to_vec();
        let l3 = rt.store.l3(sid)?;
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
        let todos = rt.store.todos(sid)?;
        let open: Vec<_> = todos.iter().filter(|t| !t.done).collect();
        let mut todo_block = String::new();
        if !open.is_empty() {
            todo_block.push_str("Open TODO items of this session:\n");
            for t in open {
                todo_block.push_str(&format!("[ ] {}. {}\n", t.id, t.text));
            }
        }
        Ok((l1, l2, l3, system, todo_block))
    }
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
    let summaries: Vec<SkillSummary> = all.iter().map(|s| s.summary.clone()).collect();
    let keywords = KeywordSet::of(&rt.tokenizer, query);
    let ranked = rank(&summaries, &keywords, SKILLS_IN_PROMPT);
    let picked: Vec<&SkillSummary> = ranked.iter().map(|&(i, _)| &summaries[i]).collect();
    let names = picked.iter().map(|s| s.name.clone()).collect();
    (summary_block(&picked, lang), names)
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.trim().is_empty()).then_some(s)
}

/// A call whose arguments passed `[model] max_answer_bytes`: not run, and the model is
/// told why and what to do instead.
fn cut_arguments(rt: &Runtime, call: &evolve_core::history::ToolCall) -> (String, ToolRun) {
    let cap = crate::llm::answer_size(rt.config.model.max_answer_bytes);
    log::warn!(
        "the arguments of {} passed max_answer_bytes = {cap}; the call is not run",
        call.name
    );
    (
        format!(
            "error: not run: the arguments were longer than the {cap} an answer may take \
             (max_answer_bytes), so they were cut and are incomplete. Send smaller \
             arguments — write a long text in several calls, or answer without the tool."
        ),
        ToolRun::not_run(call, "arguments over max_answer_bytes"),
    )
}

/// The answer to a call of a tool that does not exist: no permission question (there
/// is nothing to allow), the model is told which tools there are.
fn unknown_tool(rt: &Runtime, call: &evolve_core::history::ToolCall) -> (String, ToolRun) {
    log::info!("the model called {:?}, which does not exist", call.name);
    (
        format!("error: {}", ToolAgent.unknown(rt, &call.name)),
        ToolRun::not_run(call, "no such tool"),
    )
}

fn reasons(check: &evolve_core::permission::CallCheck) -> String {
    if check.escalation.reasons.is_empty() {
        "the tool itself".to_string()
    } else {
        check
            .escalation
            .reasons
            .iter()
            .map(|r| format!("{r:?}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
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
fn save_record(rt: &Runtime, record: &TurnRecord) {
    if let Ok(json) = serde_json::to_string(record) {
        if let Err(e) = rt.store.put_turn(&record.session, record.turn, &json) {
            log::warn!("saving the turn record failed: {e}");
        }
    }
}

fn tools_summary(runs: &[ToolRun]) -> String {
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
struct PostJob {
    rt: Arc<Runtime>,
    session: String,
    turn: u64,
    question: String,
    /// The beginning of the answer ([`POST_REPLY_CHARS`]).
    reply: String,
    tools_summary: String,
    /// The tool calls as crystallization and lessons see them.
    steps: Vec<ToolStep>,
    accessed: Vec<u64>,
    overflow: Vec<L2Entry>,
    record: TurnRecord,
    now: Timestamp,
}

impl PostJob {
    fn run(mut self) -> PostTurn {
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
        if rt.config.agent.learn && !self.reply.trim().is_empty() {
            post.memories_saved = MemoryAgent.extract_and_save(
                rt,
                &self.question,
                &self.reply,
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
            if score.is_some_and(|s| s >= rt.config.agent.style_above) {
                post.style_note = ReflectionAgent.learn_style(
                    rt,
                    &self.question,
                    &self.reply,
                    &mut usage,
                    &mut problems,
                );
            }
            // Seed 000 §经验固化: a task that worked becomes a skill, one that went
            // wrong a lesson.
            post.learned_skill = super::crystallize::crystallize(
                rt,
                &self.question,
                &self.reply,
                &self.steps,
                score,
                &mut usage,
                &mut problems,
            );
            post.lesson = super::lesson::learn_lesson(
                rt,
                &self.question,
                &self.reply,
                &self.steps,
                post.evaluation.as_ref(),
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
