//! The sub-turns of a `subtasks` call: each subtask is answered by a turn of its own —
//! its own question, memories, skills and tools (not `subtasks`), no history, the
//! parent's policy, sources and grants — at most `[agent] subtask_parallel` at a time,
//! on threads of their own, while the parent's thread alone talks to the front end.
//!
//! What it decides: the order the subtasks start in (the model's), that a sub-turn is
//! never parked (a question nobody answers stops it), and what the parent's model is
//! told of them (`agents::subtasks::output`).

use std::sync::mpsc;
use std::time::Instant;

use evolve_core::history::Role;
use evolve_core::text::{KeywordSet, Lang};
use evolve_core::turn::{Limits, Turn};

use super::context::{match_skills, see_context, system_prompt, Context};
use super::driver::Drive;
use super::timing::Timing;
use super::Manager;
use crate::agents::io::{SubEvent, TurnInput, TurnIo};
use crate::agents::memory::MemoryAgent;
use crate::agents::record::SubtaskRun;
use crate::agents::subtasks::{self, SubIo, ToParent, SUBTASKS};
use crate::agents::tool::{ToolAgent, TurnTools};
use crate::cancel::Cancel;
use crate::error::Error;

impl Manager {
    /// A `subtasks` call: each subtask answered by a sub-turn of its own, at most
    /// `[agent] subtask_parallel` at a time on threads of their own, while this thread
    /// alone talks to the front end (their questions, one at a time, and their events).
    /// Returns the tool's output and whether it is an error.
    pub(super) fn run_subtasks(
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
    pub(super) fn sub_turn(
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
                t,
                Drive {
                    sid,
                    turn_no: 0,
                    ctx: &ctx,
                    tools: &mut tools,
                    input: &input,
                    io,
                    lang,
                    timing: &mut timing,
                    nested: true,
                },
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
            Err(Error::Cancelled) => Some("stopped".to_string()),
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
    pub(super) fn sub_context(
        &self,
        task: &str,
        cancel: &Cancel,
    ) -> Result<(Context, TurnTools), Error> {
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
            kept_world: false,
        };
        Ok((ctx, tools))
    }
}
