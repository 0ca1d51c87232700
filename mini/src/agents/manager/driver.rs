//! The one driver of a turn: it polls core's [`Turn`] for its next action and hands
//! each to the agent that does it — the model (steps 5–6), the permission check
//! (step 7), a person (step 8), a tool (step 9), the store (audit, grants) — then
//! reports what happened back to the turn as an event.
//!
//! What it decides: when the tool loop stops on the shell's side (a cancel, a call
//! waiting for a person who is away, which parks the turn), which tools a model step
//! carries and how the prompt is built under the window from the context and the
//! turn's messages, and what the shell knows of each call before its check (cut,
//! unknown, unreadable). The rules of the turn itself are core's.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use evolve_core::history::{self, Budget, BuildInput};
use evolve_core::permission::{CallKey, Decision, PendingCall, Policy, Revoke};
use evolve_core::text::Lang;
use evolve_core::turn::{Action, ModelStep, Precheck, Reply, Turn};

use super::context::{non_empty, see_context, Context};
use super::timing::{Problem, Timing};
use super::Manager;
use crate::agents::io::{Heard, TurnInput, TurnIo};
use crate::agents::runtime::Runtime;
use crate::agents::subtasks::SUBTASKS;
use crate::agents::tool::{ToolAgent, TurnTools, MORE_TOOLS};
use crate::error::Error;
use crate::llm::{AnswerCut, ChatRequest, Delta, ModelRole, ToolSpec};
use crate::mcp::elicit::{ElicitReply, Elicitation};
use crate::store::ParkedTurn;
use crate::tools::RunAs;

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

/// What the driver runs a turn with, besides the turn itself.
pub(super) struct Drive<'a, 'i> {
    /// The session.
    pub(super) sid: &'a str,
    /// The turn's number in the session (0 for a sub-turn).
    pub(super) turn_no: u64,
    /// The prompt parts that do not change during the tool loop.
    pub(super) ctx: &'a Context,
    /// The turn's own snapshot of the tools.
    pub(super) tools: &'a mut TurnTools,
    /// The input: its policy, its cancel, whether the answer streams.
    pub(super) input: &'a TurnInput<'i>,
    /// The front end.
    pub(super) io: &'a mut dyn TurnIo,
    /// The question's language (how a person is asked).
    pub(super) lang: Lang,
    /// What the turn measures.
    pub(super) timing: &'a mut Timing,
    /// A turn that is never parked — a question nobody answers stops it — and whose
    /// tools offered are not the session's: a sub-turn of `subtasks`, or a parked turn
    /// being closed.
    pub(super) nested: bool,
}

/// How the tool loop ended.
pub(super) enum Ended {
    /// With an answer, the last of the turn's messages.
    Answered,
    /// Parked: this call waits for a person who is not there now.
    Parked(PendingCall),
}

impl Manager {
    /// Steps 3–9: gathers the context and drives the turn until it is answered or
    /// parked; returns the context, for the record.
    pub(super) fn answer(
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
            turn,
            Drive {
                sid,
                turn_no,
                ctx: &ctx,
                tools: &mut tools,
                input,
                io,
                lang,
                timing,
                nested: false,
            },
        )?;
        Ok((ctx, ended))
    }

    /// Steps 5–9: the one driver of [`Turn`] for every front end, and for a parked
    /// turn closed by a new message. Each action goes to the agent that does it
    /// (docs/ARCHITECTURE.md § The turn: `CallModel` is steps 5–6, `CheckCall` step 7,
    /// `AskPerson` step 8, `RunTool` step 9); each event gets its own reading of the
    /// clock.
    pub(super) fn drive(&self, turn: &mut Turn, with: Drive<'_, '_>) -> Result<Ended, Error> {
        let Drive {
            sid,
            turn_no,
            ctx,
            tools,
            input,
            io,
            lang,
            timing,
            nested,
        } = with;
        let rt = &*self.rt;
        loop {
            let Some(action) = turn.poll() else {
                // Every action is answered below before the next poll.
                return Err(Error::Internal("the turn stopped without an action"));
            };
            log::trace!(
                "session {sid}, turn {turn_no}: the {} agent acts",
                action.agent().as_str()
            );
            match action {
                Action::CallModel(step) => {
                    if input.cancel.is_cancelled() {
                        return Err(Error::Cancelled);
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
                    timing.person_time += asked.elapsed();
                    match reply {
                        Heard::Reply(text) => turn.handle_answer(&text),
                        Heard::Stop | Heard::Away => {
                            timing.stopped = true;
                            turn.handle_stopped()
                        }
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
                    timing.person_time += asked.elapsed();
                    match reply {
                        Heard::Reply(text) => {
                            rt.store.unpark(sid)?;
                            turn.handle_answer(&text);
                        }
                        Heard::Stop => {
                            rt.store.unpark(sid)?;
                            timing.stopped = true;
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
    pub(super) fn call_model(
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
        timing.chosen = super::context::chosen_to_keep(ctx, &built.messages);
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
        if resp.images_left_out > 0 {
            timing.note(Problem::ImagesLeftOut(resp.images_left_out));
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
