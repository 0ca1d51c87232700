//! One turn of the agent as a state machine (ARCHITECTURE.md § The turn, steps 5–9), in the
//! manner of `quinn-proto`: no I/O and no clock. The shell builds a [`Turn`] from the
//! question, asks it what to do next with [`Turn::poll`] and reports what happened with
//! the `handle_*` methods, each with its own `now`.
//!
//! What the turn decides: the step budget and that the last step offers no tools, when
//! an identical call repeats often enough to stop the tool loop, what the model is told
//! about a call that was refused, cut, unknown or unreadable, which calls run, which ask
//! a person and which are refused (core's [`decide`](crate::permission::decide) through
//! the shell's [`CallCheck`]), the session's grants ("always" for an L3 call; for
//! `shell` the exact command), the call waiting for a person, and whether the session's
//! next input answers it ([`Turn::handle_input`]). What it leaves to the
//! shell: the model, the tools, the permission classes (the tool catalog), the store,
//! and how a person is asked.
//!
//! The whole state serialises ([`serde`]), so a turn whose call waits for a person can
//! be parked in the store and resumed by another process.
//!
//! This file is the state machine. Beside it: `action.rs` the words the turn and the
//! shell exchange ([`Action`], [`Reply`]), `record.rs` what happened to each call
//! ([`CallRecord`]), `texts.rs` what the model and a person are told about calls that did
//! not run, `offer.rs` which tools a step carries in full.

mod action;
mod after;
pub mod offer;
mod record;
#[cfg(test)]
mod tests;
mod texts;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use crate::history::{Message, ToolCall};
use crate::permission::{
    AnswerOutcome, AuditEntry, CallCheck, CallKey, Decision, Grant, Grants, Level, PendingCall,
    Policy,
};
use crate::provenance::{Provenance, Source};
use crate::Timestamp;

pub use action::{Action, AgentId, ModelStep, Precheck, Reply};
pub use after::{may_hold_a_memory, only_small_talk};
pub use record::CallRecord;
use texts::Unanswered;
pub use texts::{parse_approval, Approval};

/// The same call (tool and arguments) this many times in one turn ends the tool loop.
pub const REPEAT_LIMIT: usize = 3;

/// The limits a turn runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Model calls per turn at most (`[agent] max_steps`); the last offers no tools.
    pub max_steps: usize,
}

/// A call being checked, asked about or run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Current {
    call: ToolCall,
    record: CallRecord,
    /// The audit entry of the decision (an answer is added before it is written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    audit: Option<AuditEntry>,
    /// What an "always" covers: for `shell` the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    /// … and for a server's tool the definition it was checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    definition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<PendingCall>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Phase {
    /// The model is to be called.
    Model,
    /// Waiting for the model's reply.
    AwaitModel,
    /// The queued calls are next.
    Calls,
    /// Waiting for the check of the current call.
    AwaitCheck { current: Current },
    /// Waiting for a person's answer about the current call.
    AwaitPerson { current: Current },
    /// Waiting for the current call's output.
    AwaitTool { current: Current },
    /// Over.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Queued {
    call: ToolCall,
    precheck: Precheck,
}

/// One turn: the question, the steps so far and the call in hand. See the module doc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    session: String,
    policy: Policy,
    limits: Limits,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    force_tool: Option<String>,
    grants: Grants,
    /// The turn's messages: the question first, then the tool rounds, the answer last.
    messages: Vec<Message>,
    calls: Vec<CallRecord>,
    /// (tool, arguments, times called).
    seen: Vec<(String, String, usize)>,
    steps: usize,
    needs_person: bool,
    /// The tool loop is to end with one more step without tools.
    wrap_up: bool,
    queue: VecDeque<Queued>,
    phase: Phase,
    /// Where the turn's text came from (the egress rule reads it).
    #[serde(default)]
    provenance: Provenance,
    #[serde(skip)]
    outbox: VecDeque<Action>,
}

impl Turn {
    /// A turn of `session` answering `question`, under `policy` with the session's
    /// `grants`.
    pub fn new(
        session: &str,
        question: &str,
        policy: Policy,
        grants: Grants,
        limits: Limits,
    ) -> Turn {
        Turn {
            session: String::from(session),
            policy,
            limits: Limits {
                max_steps: limits.max_steps.max(1),
            },
            force_tool: None,
            grants,
            messages: alloc::vec![Message::user(question)],
            calls: Vec::new(),
            seen: Vec::new(),
            steps: 0,
            needs_person: false,
            wrap_up: false,
            queue: VecDeque::new(),
            phase: Phase::Model,
            provenance: Provenance::new(question),
            outbox: VecDeque::new(),
        }
    }

    /// Text of the context entered the turn before its first step (history, memories,
    /// skills): its links count as given, and world text marks the turn from the start.
    pub fn saw_context(&mut self, source: Source, origin: &str, text: &str) {
        self.provenance.saw(source, origin, text);
    }

    /// A turn asked by another turn (a sub-task the model wrote): its question is the
    /// model's text, not the person's words, so it takes the asking turn's sources.
    pub fn with_provenance(mut self, provenance: Provenance) -> Turn {
        self.provenance = provenance;
        self
    }

    /// Where the turn's text came from so far (for the egress rule of the next check).
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// The question's images (URLs or data URLs), sent with it as image parts.
    pub fn with_images(mut self, images: Vec<String>) -> Turn {
        if let Some(q) = self.messages.first_mut() {
            q.images = images;
        }
        self
    }

    /// The first model call must call this tool.
    pub fn force_tool(mut self, tool: Option<&str>) -> Turn {
        self.force_tool = tool.map(String::from);
        self
    }

    /// What to do next; `None` while the turn waits for the event its last action
    /// asked for.
    pub fn poll(&mut self) -> Option<Action> {
        loop {
            if let Some(a) = self.outbox.pop_front() {
                return Some(a);
            }
            match &self.phase {
                Phase::Model => {
                    self.steps += 1;
                    let last = self.is_last_step();
                    let force_tool = self.force_tool.clone().filter(|_| self.steps == 1 && !last);
                    self.phase = Phase::AwaitModel;
                    return Some(Action::CallModel(ModelStep {
                        step: self.steps,
                        offer_tools: !last,
                        force_tool,
                    }));
                }
                Phase::Calls => self.next_call(),
                Phase::Done => return Some(Action::Done),
                Phase::AwaitModel
                | Phase::AwaitCheck { .. }
                | Phase::AwaitPerson { .. }
                | Phase::AwaitTool { .. } => return None,
            }
        }
    }

    fn is_last_step(&self) -> bool {
        self.steps >= self.limits.max_steps
    }

    /// The model answered the last [`Action::CallModel`].
    pub fn handle_reply(&mut self, reply: Reply) {
        if self.phase != Phase::AwaitModel {
            return;
        }
        let Reply {
            mut message,
            prechecks,
        } = reply;
        if message.tool_calls.is_empty() || self.is_last_step() {
            let mut text = core::mem::take(&mut message.content);
            if text.trim().is_empty() && !message.tool_calls.is_empty() {
                text = texts::stopped_without_answer(self.steps);
            }
            let mut fin = Message::assistant(text);
            fin.reasoning = message.reasoning.take();
            self.messages.push(fin);
            self.phase = Phase::Done;
            return;
        }
        let mut prechecks = prechecks.into_iter();
        for call in &message.tool_calls {
            self.queue.push_back(Queued {
                call: call.clone(),
                precheck: prechecks.next().unwrap_or(Precheck::Ready),
            });
        }
        self.messages.push(message);
        self.phase = Phase::Calls;
    }

    /// The next queued call: answered here (cut, unknown, unreadable, a repeat) or sent
    /// to the check. With none left, the next model step.
    fn next_call(&mut self) {
        let Some(Queued { call, precheck }) = self.queue.pop_front() else {
            if self.wrap_up {
                // One last round without tools so the model answers with what it has.
                self.steps = self.limits.max_steps.saturating_sub(1);
                self.wrap_up = false;
            }
            self.phase = Phase::Model;
            return;
        };
        let answered = match precheck {
            Precheck::Cut(cap) => Some((
                texts::cut_arguments(&cap),
                "arguments over max_answer_bytes",
            )),
            Precheck::Unknown(tools) => Some((alloc::format!("error: {tools}"), "no such tool")),
            Precheck::Unreadable(problem) => {
                Some((texts::unreadable(&problem), "unreadable arguments"))
            }
            Precheck::Ready => {
                let times = self.count_call(&call);
                if times > 1 {
                    if times >= REPEAT_LIMIT {
                        self.wrap_up = true;
                    }
                    Some((texts::repeated(&call.name), "repeated"))
                } else {
                    None
                }
            }
        };
        match answered {
            Some((text, why)) => {
                let record = CallRecord::not_run(&call, why);
                self.settle(&call, record, text);
            }
            None => {
                self.outbox.push_back(Action::CheckCall(call.clone()));
                self.phase = Phase::AwaitCheck {
                    current: Current {
                        record: CallRecord::not_run(&call, ""),
                        call,
                        audit: None,
                        command: None,
                        definition: None,
                        pending: None,
                    },
                };
            }
        }
    }

    fn count_call(&mut self, call: &ToolCall) -> usize {
        if let Some(seen) = self
            .seen
            .iter_mut()
            .find(|(n, a, _)| *n == call.name && *a == call.arguments)
        {
            seen.2 += 1;
            return seen.2;
        }
        self.seen
            .push((call.name.clone(), call.arguments.clone(), 1));
        1
    }

    /// The tool message for a settled call, and the notice for the interface.
    fn settle(&mut self, call: &ToolCall, mut record: CallRecord, text: String) {
        record.output_chars = text.chars().count();
        self.messages
            .push(Message::tool_result(&call.id, &call.name, text));
        self.calls.push(record.clone());
        self.outbox.push_back(Action::CallSettled(record));
        self.phase = Phase::Calls;
    }

    /// The permission check of the call of the last [`Action::CheckCall`].
    pub fn handle_check(&mut self, check: CallCheck, now: Timestamp) {
        let Phase::AwaitCheck { current } = &mut self.phase else {
            return;
        };
        let mut current = current.clone();
        current.record = CallRecord::checked(&current.call, check.level, check.decision);
        let audit = check.audit(now, &self.session, &current.call.name);
        match check.decision {
            Decision::Run | Decision::RunScoped => {
                self.outbox.push_back(Action::Audit(audit));
                self.run(current, check.level);
            }
            Decision::AskOnce | Decision::AskTwice => {
                let call = &current.call;
                match PendingCall::new(&call.id, &call.name, &call.arguments, check.level, now) {
                    Ok(mut pending) => {
                        pending.sends = check.sends.clone();
                        current.audit = Some(audit);
                        current.command = check.command.clone();
                        current.definition = check.definition.clone();
                        current.pending = Some(pending.clone());
                        self.outbox.push_back(Action::AskPerson(pending));
                        self.phase = Phase::AwaitPerson { current };
                    }
                    Err(e) => {
                        self.outbox.push_back(Action::Audit(audit));
                        let text = alloc::format!("refused: {e}");
                        let (call, record) = (current.call, current.record);
                        self.settle(&call, record, text);
                    }
                }
            }
            Decision::Refuse(reason) => {
                self.outbox.push_back(Action::Audit(audit));
                if check.decision.needs_person() {
                    self.needs_person = true;
                }
                let text = texts::refused(reason, &check);
                let (call, record) = (current.call, current.record);
                self.settle(&call, record, text);
            }
        }
    }

    fn run(&mut self, current: Current, level: Level) {
        let approved = current.record.answer.as_deref() == Some("run");
        self.outbox.push_back(Action::RunTool {
            call: current.call.clone(),
            level,
            offline: self.provenance.has_world() && !approved,
        });
        self.phase = Phase::AwaitTool { current };
    }

    /// A person's reply to the last [`Action::AskPerson`]: yes, no, "always" (L3 at
    /// most), or anything else (asked again). The second yes of an L4 call is asked
    /// for with the exact call repeated.
    pub fn handle_answer(&mut self, reply: &str) {
        let Phase::AwaitPerson { current } = &mut self.phase else {
            return;
        };
        let Some(pending) = current.pending.as_mut() else {
            return;
        };
        self.provenance.person_said(reply);
        let outcome = match parse_approval(reply, pending.level) {
            Approval::Always => {
                let key = CallKey {
                    tool: &current.call.name,
                    command: current.command.as_deref(),
                    definition: current.definition.as_deref(),
                };
                // "always" is only read for L3 at most, which can always be granted.
                if self.grants.grant_call(key, pending.level).is_ok() {
                    self.outbox.push_back(Action::SaveGrant(Grant {
                        tool: current.call.name.clone(),
                        command: current.command.clone(),
                        level: pending.level,
                        definition: current.definition.clone(),
                    }));
                }
                AnswerOutcome::Run
            }
            Approval::Other => pending.answer(reply),
        };
        match outcome {
            AnswerOutcome::Run | AnswerOutcome::Refused => {
                let mut current = current.clone();
                let runs = outcome == AnswerOutcome::Run;
                if let Some(audit) = current.audit.take() {
                    self.outbox
                        .push_back(Action::Audit(audit.with_answer(outcome)));
                }
                current.pending = None;
                current.record.answer = Some(String::from(if runs { "run" } else { "refused" }));
                if runs {
                    let level = current.record.level.unwrap_or(Level::L4);
                    self.run(current, level);
                } else {
                    let (call, record) = (current.call, current.record);
                    self.settle(&call, record, String::from(texts::SAID_NO));
                }
            }
            AnswerOutcome::AskAgain | AnswerOutcome::NeedSecondConfirmation => {
                let pending = pending.clone();
                self.outbox.push_back(Action::AskPerson(pending));
            }
        }
    }

    /// The session's next input reached this turn, parked for a person: only the
    /// person's own words in an interactive front end, read as an answer (yes, no, or
    /// "always" where it counts), answer the waiting call ([`Settled::Answered`], the
    /// turn goes on as after [`Turn::handle_answer`]); anything else — a new question,
    /// a headless run's "yes", a group member's words — refuses the call and closes
    /// the turn ([`Settled::MovedOn`], as after [`Turn::handle_moved_on`]). The shell
    /// then drives the turn by [`Turn::poll`] as usual.
    pub fn handle_input(&mut self, input: NextInput<'_>) -> Settled {
        let answers = input.policy == Policy::Interactive
            && input.from == Source::Person
            && self
                .pending()
                .is_some_and(|p| is_answer(input.text, p.level));
        if answers {
            self.handle_answer(input.text);
            Settled::Answered
        } else {
            self.handle_moved_on();
            Settled::MovedOn
        }
    }

    /// The user went on with a new message instead of answering: the waiting call is
    /// refused, the calls queued after it are not run, and the turn ends with a note
    /// (no model call: the new message is a turn of its own).
    pub fn handle_moved_on(&mut self) {
        self.end_unanswered(Unanswered::MovedOn);
    }

    /// The user stopped at the question (Ctrl-C): the call is refused and the turn ends
    /// the same way, kept in the session with its question.
    pub fn handle_stopped(&mut self) {
        self.end_unanswered(Unanswered::Stopped);
    }

    fn end_unanswered(&mut self, why: Unanswered) {
        let Phase::AwaitPerson { current } = &self.phase else {
            return;
        };
        let mut current = current.clone();
        if let Some(audit) = current.audit.take() {
            self.outbox
                .push_back(Action::Audit(audit.with_answer(AnswerOutcome::Refused)));
        }
        current.record.answer = Some(String::from("refused"));
        let tool = current.call.name.clone();
        let (call, record) = (current.call, current.record);
        self.settle(&call, record, String::from(texts::not_answered(why)));
        while let Some(Queued { call, .. }) = self.queue.pop_front() {
            let record = CallRecord::not_run(&call, "turn ended");
            self.settle(&call, record, String::from(texts::TURN_ENDED));
        }
        self.messages
            .push(Message::assistant(texts::unanswered(why, &tool)));
        self.phase = Phase::Done;
    }

    /// The output of the call of the last [`Action::RunTool`].
    pub fn handle_output(&mut self, content: String, is_error: bool) {
        let Phase::AwaitTool { current } = &mut self.phase else {
            return;
        };
        let mut record = current.record.clone();
        let call = current.call.clone();
        record.ran = true;
        record.is_error = is_error;
        self.provenance
            .saw(result_source(&call.name), &call.name, &content);
        let text = if is_error {
            alloc::format!("error: {content}")
        } else {
            content
        };
        self.settle(&call, record, text);
    }

    /// The turn's messages: the question, the tool rounds, and once done the answer.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Takes the messages out (at the end of the turn).
    pub fn take_messages(&mut self) -> Vec<Message> {
        core::mem::take(&mut self.messages)
    }

    /// The question.
    pub fn question(&self) -> &str {
        self.messages.first().map_or("", |m| m.content.as_str())
    }

    /// The calls settled so far.
    pub fn calls(&self) -> &[CallRecord] {
        &self.calls
    }

    /// Takes the call records out (at the end of the turn).
    pub fn take_calls(&mut self) -> Vec<CallRecord> {
        core::mem::take(&mut self.calls)
    }

    /// Model calls so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// A call was refused because nobody could be asked.
    pub fn needs_person(&self) -> bool {
        self.needs_person
    }

    /// The session's grants as the turn holds them.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// The session's grants as they stand now (the shell reads them before each check,
    /// so a grant revoked during the turn counts at once).
    pub fn set_grants(&mut self, grants: Grants) {
        self.grants = grants;
    }

    /// The permission policy of the turn.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The call waiting for a person, if the turn waits for one.
    pub fn pending(&self) -> Option<&PendingCall> {
        match &self.phase {
            Phase::AwaitPerson { current } => current.pending.as_ref(),
            _ => None,
        }
    }

    /// Whether the turn is over.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// A turn read back from the store waits for what it waited for when it was
    /// parked: a person's answer is asked for again.
    pub fn resume(&mut self) {
        self.outbox.clear();
        if let Some(p) = self.pending().cloned() {
            self.outbox.push_back(Action::AskPerson(p));
        }
    }
}

/// The session's next input, as it reaches a parked turn ([`Turn::handle_input`]).
#[derive(Debug, Clone, Copy)]
pub struct NextInput<'a> {
    /// What was written.
    pub text: &'a str,
    /// The input's policy: only an interactive front end answers for a person.
    pub policy: Policy,
    /// Who wrote it: only the person's words answer a question.
    pub from: Source,
}

/// What the next input did to a parked turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// It answered the waiting call: the turn goes on, and the input is not a turn of
    /// its own.
    Answered,
    /// It refused the waiting call and closed the turn: the input is a turn of its own.
    MovedOn,
}

/// Whether a reply to a waiting call's question is an answer (yes, no, or "always"
/// where it counts) rather than a new message.
pub fn is_answer(text: &str, level: Level) -> bool {
    crate::permission::parse_answer(text) != crate::permission::Answer::Unclear
        || parse_approval(text, level) == Approval::Always
}

/// Where a tool's result comes from: the store for the few built-in tools whose output
/// Evolve writes itself (the time, a skill's text, the todo list, the tool list), the
/// world for every other — file contents, pages, command output, memories read back
/// (private data like a file's), MCP results and sub-turns' answers.
pub fn result_source(tool: &str) -> Source {
    match tool {
        "get_time" | "load_skill" | "todo" | "more_tools" => Source::Store,
        _ => Source::World,
    }
}
