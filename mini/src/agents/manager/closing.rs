//! How a turn is closed and kept: a turn parked on the session for a person and
//! settled by the session's next input (step 2), a turn that failed or was stopped,
//! and a finished turn stored with the session's next L2 ring (step 10); and which
//! turn a new input may answer again (`replaces`: any turn of the branch shown, which
//! makes a new version of it).
//!
//! What it decides: the order of the writes (the history first: what the person saw
//! is never lost) and what a closed turn's record says. What is kept of a turn and
//! its L2 entry are core's rules (`history::unfinished_turn`, `history::l2_entry`,
//! `history::next_l2`); whether an input answers a parked call is core's
//! (`Turn::handle_input`).

use evolve_core::history::{self, KeptTurn, L2Entry, L2Ring, Message, Unfinished};
use evolve_core::permission::{AnswerOutcome, Decision, PendingCall};
use evolve_core::text::Lang;
use evolve_core::turn::{NextInput, Settled, Turn};
use evolve_core::Timestamp;

use super::context::Context;
use super::driver::Drive;
use super::timing::Timing;
use super::Manager;
use crate::agents::io::{Heard, TurnInput, TurnIo};
use crate::agents::record::TurnRecord;
use crate::agents::runtime::Runtime;
use crate::agents::tool::TurnTools;
use crate::error::Error;
use crate::store::{ParkedTurn, Session, Waiting};

impl Manager {
    /// ARCHITECTURE.md § The turn, step 2: the turn parked on the session, settled by this input. A
    /// person's answer (yes, no, always — from an interactive front end) resumes it;
    /// anything else refuses the waiting call and closes that turn. Calls parked in the
    /// older format (a list without its turn) are refused.
    pub(super) fn settle_parked(
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
        let next = NextInput {
            text: input.text,
            policy: input.policy,
            from: input.from,
        };
        if turn.handle_input(next) == Settled::Answered {
            log::info!(
                "the answer {:?} settles the call waiting in session {sid}",
                input.text.trim()
            );
            return Ok(Some((turn, turn_no)));
        }
        log::info!("a new message in session {sid}: the call waiting for an answer is refused");
        let lang = Lang::guess(turn.question());
        // The refusal is audited by the one driver; the turn it closes calls neither
        // the model nor a tool, and the front end hears only of the new message's turn.
        self.drive(
            &mut turn,
            Drive {
                sid,
                turn_no,
                ctx: &Context::none(),
                tools: &mut TurnTools::none(),
                input,
                io: &mut Unheard,
                lang,
                timing: &mut Timing::default(),
                nested: true,
            },
        )?;
        let question = turn.question().to_string();
        // Entries it pushes out of the ring stay there until the next turn's
        // background work summarises them.
        self.store_turn(
            sid,
            turn_no,
            &question,
            &turn.take_messages(),
            &Default::default(),
            None,
            now,
        )?;
        let mut record = TurnRecord::empty(sid, turn_no);
        record.tools = turn.take_calls();
        record.steps = turn.steps();
        record.save(&rt.store);
        Ok(None)
    }

    /// Refuses calls left pending by a run that ended before the answer.
    pub(super) fn settle_stale_pending(
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

    /// After a failed or stopped turn: the question and the tool rounds that ran are
    /// stored as a turn without an answer, with a record that says why. A stopped
    /// answer's text so far (`partial`) is kept as its answer: the person saw it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn keep_failed_turn(
        &self,
        sid: &str,
        turn_no: u64,
        turn: &Turn,
        error: &Error,
        partial: &str,
        chosen: &history::Chosen,
        now: Timestamp,
    ) {
        let store = &self.rt.store;
        let cancelled = matches!(error, Error::Cancelled);
        let ran_tools = turn.calls().iter().any(|r| r.ran);
        let how = if cancelled {
            Unfinished::Stopped
        } else {
            Unfinished::Failed
        };
        // The turn is closed like an answered one, with its L2 entry (each closed turn
        // has one: the history counts on it), which says there was no (whole) answer.
        let KeptTurn {
            messages: keep,
            note,
        } = history::unfinished_turn(turn.messages(), how, partial);
        let m = &self.rt.config.model;
        let budget = m.context_window.saturating_sub(m.reserved_output);
        let stored = self
            .next_l2(
                sid,
                L2Entry {
                    turn: turn_no,
                    ..history::l2_entry(turn.question(), &note, &keep, budget)
                },
            )
            .and_then(|(ring, _)| {
                Ok(store.append_turn(sid, turn_no, &keep, chosen, now, &ring, None)?)
            });
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
        record.save(&self.rt.store);
    }

    /// Stores a closed turn's messages with the session's next L2 ring, in one
    /// transaction; returns the entries that overflowed the ring (to summarise).
    /// ARCHITECTURE.md § The turn, step 10.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn store_turn(
        &self,
        sid: &str,
        turn_no: u64,
        question: &str,
        msgs: &[Message],
        chosen: &history::Chosen,
        replaces: Option<u64>,
        now: Timestamp,
    ) -> Result<Vec<L2Entry>, Error> {
        let rt = &*self.rt;
        let reply = msgs.last().map_or("", |m| m.content.as_str());
        let m = &rt.config.model;
        let budget = m.context_window.saturating_sub(m.reserved_output);
        let entry = L2Entry {
            turn: turn_no,
            ..history::l2_entry(question, reply, msgs, budget)
        };
        // A replaced turn's entry stays: its version can be shown again, and the
        // history shows only the entries of the branch shown.
        let (ring, overflow) = self.next_l2(sid, entry)?;
        rt.store
            .append_turn(sid, turn_no, msgs, chosen, now, &ring, replaces)?;
        Ok(overflow)
    }

    /// The session's L2 ring with the finished turn's `entry` added, and the overflow
    /// to summarise (core's [`history::next_l2`]).
    pub(super) fn next_l2(
        &self,
        sid: &str,
        entry: L2Entry,
    ) -> Result<(L2Ring, Vec<L2Entry>), Error> {
        let rt = &*self.rt;
        let ring = rt.store.l2(sid)?;
        Ok(history::next_l2(
            ring,
            entry,
            false,
            &rt.config.core.history,
        ))
    }
}

/// A new input can answer again any turn of the branch shown (a new version of it,
/// the turns after it left on their branch), with nothing waiting for a person.
pub fn check_replace(rt: &Runtime, session: &Session, created: bool, n: u64) -> Result<(), Error> {
    let shown = session.branches().shown_path();
    if created || !shown.contains(&n) {
        return Err(Error::Conflict(format!(
            "turn {n} is not shown in this session: only a shown turn can be answered again \
             (shown: {shown:?}); reload the chat"
        )));
    }
    if matches!(rt.store.waiting(&session.id)?, Waiting::Parked(_)) {
        return Err(Error::Conflict(
            "a tool call of this session waits for an answer: answer it first".into(),
        ));
    }
    Ok(())
}

/// The front end of a parked turn closed by a new message: nobody hears of it (the
/// person sees the new message's turn), and nobody is asked.
struct Unheard;

impl TurnIo for Unheard {
    fn ask(&mut self, _call: &PendingCall, _lang: Lang) -> Heard {
        Heard::Away
    }
}
