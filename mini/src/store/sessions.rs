//! Sessions and everything a session owns: its messages, the L2 ring and L3 summary,
//! evaluations, turn records and the TODO list (grants and pending calls are in
//! `permissions.rs`). Removing a session removes all of it in one transaction.
//!
//! Session ids are `s` + 12 lowercase base-36 digits of the creation time in
//! milliseconds and a 20-bit sequence (a process counter mixed with the process id):
//! URL-safe, sortable by creation time, distinct for sessions made in the same
//! millisecond, and checked against the table before use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use evolve_core::history::{self, L2Ring, Message, Role};
use evolve_core::text::one_line;
use evolve_core::Timestamp;
use redb::{ReadableTable, WriteTransaction};
use serde::Serialize;

use super::error::Fail;
use super::schema::*;
use super::{Evaluation, Session, SessionId, Store, StoreError, StoredMessage, TitleFrom, Todo};

/// A session's title is the first question cut to this many characters (until renamed).
pub const TITLE_CHARS: usize = 60;

/// Bits of the id below the millisecond time.
const SEQUENCE_BITS: u32 = 20;

/// Sessions made by this process so far (the low bits of the id).
static SESSION_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The message for an unknown session id.
pub(super) fn no_session(id: &str) -> String {
    format!("no session {id:?} — `evolve sessions list` shows the ids")
}

/// The id made from `millis` since the epoch and a sequence number.
fn session_id(millis: u64, sequence: u64) -> SessionId {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = (millis << SEQUENCE_BITS) | (sequence & ((1 << SEQUENCE_BITS) - 1));
    let mut out = [b'0'; 12];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    let mut id = String::with_capacity(13);
    id.push('s');
    id.extend(out.iter().map(|&b| char::from(b)));
    id
}

/// A fresh id: this millisecond, and this process's next sequence number offset by
/// its pid so two processes starting together rarely pick the same one.
fn fresh_session_id(now: Timestamp) -> SessionId {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(now.max(0) as u64 * 1000, |d| d.as_millis() as u64);
    let count = SESSION_COUNTER.fetch_add(1, Ordering::Relaxed);
    let salt = u64::from(std::process::id()).wrapping_mul(0x9E37_79B9);
    session_id(millis, count.wrapping_add(salt))
}

/// Reads a session inside a write transaction, or says it does not exist.
fn existing_session(txn: &WriteTransaction, id: &str) -> Result<Session, Fail> {
    get_json(&txn.open_table(SESSIONS)?, "sessions", id)?
        .ok_or_else(|| Fail::NotFound(no_session(id)))
}

/// Fails unless the session exists: nothing is attached to a session that is gone
/// (remove_session could never clean it up).
/// The tool-chain review lives in the L3 table beside the summary, under the session's
/// id and a suffix no id contains (ids are `s` + base 36), so no schema change was needed.
pub(super) fn tool_chain_key(session: &str) -> String {
    format!("{session}/tools")
}

pub(super) fn require_session(txn: &WriteTransaction, id: &str) -> Result<(), Fail> {
    existing_session(txn, id).map(|_| ())
}

/// Deletes the rows of `session` in every table a session owns, except the session
/// record itself.
pub(super) fn delete_session_rows(txn: &WriteTransaction, session: &str) -> Result<(), Fail> {
    txn.open_table(MESSAGES)?
        .retain_in(session_keys(session), |_, _| false)?;
    txn.open_table(EVALUATIONS)?
        .retain_in(session_keys(session), |_, _| false)?;
    txn.open_table(TURNS)?
        .retain_in(session_keys(session), |_, _| false)?;
    txn.open_table(L2)?.remove(session)?;
    txn.open_table(L3)?.remove(session)?;
    txn.open_table(L3)?
        .remove(tool_chain_key(session).as_str())?;
    txn.open_table(GRANTS)?.remove(session)?;
    txn.open_table(PENDING)?.remove(session)?;
    txn.open_table(TODOS)?.remove(session)?;
    super::chosen::delete_in(txn, session)?;
    Ok(())
}

impl Store {
    /// Creates a session.
    pub fn create_session(&self, title: &str, now: Timestamp) -> Result<Session, StoreError> {
        self.new_session(title, now, false)
    }

    /// Creates the session a turn starts, without waiting for the disk: the turn's
    /// first durable write (its messages, or the question of a failed turn) carries it
    /// there; until then it holds nothing to lose.
    pub fn create_session_for_turn(
        &self,
        title: &str,
        now: Timestamp,
    ) -> Result<Session, StoreError> {
        self.new_session(title, now, true)
    }

    fn new_session(&self, title: &str, now: Timestamp, lazy: bool) -> Result<Session, StoreError> {
        self.commit(lazy, |txn| {
            let mut table = txn.open_table(SESSIONS)?;
            let mut id = fresh_session_id(now);
            while table.get(id.as_str())?.is_some() {
                id = fresh_session_id(now);
            }
            let session = Session {
                id,
                title: one_line(title, TITLE_CHARS),
                title_from: TitleFrom::Question,
                created_at: now,
                updated_at: now,
                turns: 0,
                messages: 0,
                superseded: Vec::new(),
                parents: Vec::new(),
                shown: Vec::new(),
                channel: None,
                offered_tools: Vec::new(),
                pinned: false,
                archived: false,
            };
            put_json(&mut table, "sessions", session.id.as_str(), &session)?;
            Ok(session)
        })
    }

    /// One session.
    pub fn session(&self, id: &str) -> Result<Session, StoreError> {
        self.read(|txn| {
            get_json(&txn.open_table(SESSIONS)?, "sessions", id)?
                .ok_or_else(|| Fail::NotFound(no_session(id)))
        })
    }

    /// All sessions, most recently updated first (newest id first on a tie).
    pub fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        let mut all = self.read(|txn| {
            let table = txn.open_table(SESSIONS)?;
            let mut out: Vec<Session> = Vec::new();
            for row in table.iter()? {
                let (key, value) = row?;
                out.push(decode("sessions", &key.value(), value.value())?);
            }
            Ok(out)
        })?;
        all.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
        Ok(all)
    }

    /// Renames a session (flattened to one line, cut to [`TITLE_CHARS`]).
    pub fn rename_session(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut session = existing_session(txn, id)?;
            session.title = one_line(title, TITLE_CHARS);
            session.title_from = TitleFrom::User;
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", id, &session)
        })
    }

    /// Pins or unpins, archives or brings back a session (`None`: left as it is).
    pub fn mark_session(
        &self,
        id: &str,
        pinned: Option<bool>,
        archived: Option<bool>,
    ) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut session = existing_session(txn, id)?;
            session.pinned = pinned.unwrap_or(session.pinned);
            session.archived = archived.unwrap_or(session.archived);
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", id, &session)
        })
    }

    /// Gives a session the title the model wrote, unless the user renamed it meanwhile
    /// (checked in the same transaction, so a rename is never overwritten). `Ok(false)`
    /// when the user's title stays.
    pub fn set_model_title(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        self.write(|txn| {
            let mut session = existing_session(txn, id)?;
            if session.title_from == TitleFrom::User {
                return Ok(false);
            }
            session.title = one_line(title, TITLE_CHARS);
            session.title_from = TitleFrom::Model;
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", id, &session)?;
            Ok(true)
        })
    }

    /// Replaces the list of tools the session has been offered in full.
    pub fn set_offered_tools(&self, id: &str, names: &[String]) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut session = existing_session(txn, id)?;
            session.offered_tools = names.to_vec();
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", id, &session)
        })
    }

    /// The session's tool-chain review (what was called, what came of it, what failed),
    /// kept by the cheap model after turns with tool calls.
    pub fn tool_chain(&self, session: &str) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            Ok(txn
                .open_table(L3)?
                .get(tool_chain_key(session).as_str())?
                .map(|v| v.value().to_string()))
        })
    }

    /// The L3 summary and the tool-chain review together, in one read (the turn's
    /// history).
    pub fn l3_and_tool_chain(
        &self,
        session: &str,
    ) -> Result<(Option<String>, Option<String>), StoreError> {
        self.read(|txn| {
            let table = txn.open_table(L3)?;
            let get = |key: &str| -> Result<Option<String>, Fail> {
                Ok(table.get(key)?.map(|v| v.value().to_string()))
            };
            Ok((get(session)?, get(tool_chain_key(session).as_str())?))
        })
    }

    /// Replaces the session's tool-chain review.
    pub fn set_tool_chain(&self, session: &str, review: &str) -> Result<(), StoreError> {
        self.write(|txn| {
            require_session(txn, session)?;
            txn.open_table(L3)?
                .insert(tool_chain_key(session).as_str(), review)?;
            Ok(())
        })
    }

    /// Deletes a session and everything attached to it (messages, L2, L3, evaluations,
    /// grants, pending calls, turns, what their requests chose, TODOs). One transaction. The audit log keeps its
    /// entries: it records what happened, whatever was deleted later.
    pub fn remove_session(&self, id: &str) -> Result<(), StoreError> {
        self.write(|txn| {
            if txn.open_table(SESSIONS)?.remove(id)?.is_none() {
                return Err(Fail::NotFound(no_session(id)));
            }
            delete_session_rows(txn, id)
        })
    }

    /// Appends the messages of one turn and bumps the session's counters (and `turns`
    /// when `completes_turn`). One transaction. Returns the stored messages.
    ///
    /// Sequence numbers continue from the last stored message. `turns` becomes at
    /// least `turn` when the turn completes (idempotent if a turn is saved twice). A
    /// session created without a title takes its first user message as title.
    #[cfg(test)]
    pub fn append_messages(
        &self,
        session: &str,
        turn: u64,
        messages: &[Message],
        now: Timestamp,
        completes_turn: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        self.write(|txn| {
            let first = append_in(txn, session, turn, messages, now, completes_turn)?;
            Ok((first..)
                .zip(messages)
                .map(|(seq, message)| StoredMessage {
                    seq,
                    turn,
                    at: now,
                    message: message.clone(),
                })
                .collect())
        })
    }

    /// A completed turn's messages and the session's new L2 ring, in one transaction
    /// (one commit, one flush to disk, instead of two). The turn follows the last turn
    /// shown, or, when it `replaces` an earlier turn, is a new version of that one
    /// (the turns after it stay on their branch); either way it is shown. What the
    /// turn's request `chosen` for its question is kept with it
    /// ([`Store::chosen_since`]).
    #[allow(clippy::too_many_arguments)]
    pub fn append_turn(
        &self,
        session: &str,
        turn: u64,
        messages: &[Message],
        chosen: &history::Chosen,
        now: Timestamp,
        ring: &L2Ring,
        replaces: Option<u64>,
    ) -> Result<(), StoreError> {
        self.write(|txn| {
            let before = existing_session(txn, session)?;
            let parent = before.branches().parent_of_new(replaces);
            append_in(txn, session, turn, messages, now, true)?;
            super::chosen::keep_in(txn, session, turn, chosen)?;
            let mut record = existing_session(txn, session)?;
            record.parents.retain(|(t, _)| *t != turn);
            record.parents.push((turn, parent));
            history::choose(&mut record.shown, parent, turn);
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", session, &record)?;
            let mut table = txn.open_table(L2)?;
            if ring.is_empty() {
                table.remove(session)?;
            } else {
                put_json(&mut table, "l2", session, ring)?;
            }
            Ok(())
        })
    }

    /// Shows `turn` instead of its other versions, and so the branch after it (the
    /// turns shown after it last time). Returns the session.
    pub fn show_turn(&self, session: &str, turn: u64) -> Result<Session, StoreError> {
        self.write(|txn| {
            let mut record = existing_session(txn, session)?;
            if turn == 0 || turn > record.turns {
                return Err(Fail::NotFound(format!(
                    "session {session} has no turn {turn} (it has {})",
                    record.turns
                )));
            }
            let parent = record.branches().parent(turn);
            history::choose(&mut record.shown, parent, turn);
            put_json(&mut txn.open_table(SESSIONS)?, "sessions", session, &record)?;
            Ok(record)
        })
    }

    /// Messages of a session in order; `since_turn`: only turns ≥ it.
    pub fn messages(
        &self,
        session: &str,
        since_turn: u64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        self.read(|txn| {
            if txn.open_table(SESSIONS)?.get(session)?.is_none() {
                return Err(Fail::NotFound(no_session(session)));
            }
            let table = txn.open_table(MESSAGES)?;
            let mut out = Vec::new();
            for row in table.range(session_keys(session))? {
                let (key, value) = row?;
                let m: StoredMessage = decode("messages", &key.value(), value.value())?;
                if m.turn >= since_turn {
                    out.push(m);
                }
            }
            Ok(out)
        })
    }

    /// The L2 ring of a session (empty if none).
    pub fn l2(&self, session: &str) -> Result<L2Ring, StoreError> {
        self.read(|txn| Ok(get_json(&txn.open_table(L2)?, "l2", session)?.unwrap_or_default()))
    }

    /// Replaces the L2 ring and, when given, the L3 summary, in one transaction. An
    /// empty ring or summary removes the row.
    pub fn set_l2(&self, session: &str, ring: &L2Ring, l3: Option<&str>) -> Result<(), StoreError> {
        self.write(|txn| {
            require_session(txn, session)?;
            let mut table = txn.open_table(L2)?;
            if ring.is_empty() {
                table.remove(session)?;
            } else {
                put_json(&mut table, "l2", session, ring)?;
            }
            if let Some(summary) = l3 {
                let mut table = txn.open_table(L3)?;
                if summary.is_empty() {
                    table.remove(session)?;
                } else {
                    table.insert(session, summary)?;
                }
            }
            Ok(())
        })
    }

    /// The L3 summary of a session.
    pub fn l3(&self, session: &str) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            Ok(txn
                .open_table(L3)?
                .get(session)?
                .map(|v| v.value().to_string()))
        })
    }

    /// Stores a turn's evaluation (replacing an earlier one of the same turn). A score
    /// outside 0–1 is clamped and a NaN stored as 0, so the record always decodes.
    pub fn add_evaluation(&self, eval: &Evaluation) -> Result<(), StoreError> {
        let mut eval = eval.clone();
        if !eval.score.is_finite() || !(0.0..=1.0).contains(&eval.score) {
            log::warn!(
                "evaluation of {} turn {}: score {} outside 0–1, clamped",
                eval.session,
                eval.turn,
                eval.score
            );
            eval.score = if eval.score.is_nan() {
                0.0
            } else {
                eval.score.clamp(0.0, 1.0)
            };
        }
        self.write(|txn| {
            require_session(txn, &eval.session)?;
            put_json(
                &mut txn.open_table(EVALUATIONS)?,
                "evaluations",
                (eval.session.as_str(), eval.turn),
                &eval,
            )
        })
    }

    /// Evaluations of a session, by turn.
    pub fn evaluations(&self, session: &str) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(EVALUATIONS)?;
            let mut out = Vec::new();
            for row in table.range(session_keys(session))? {
                let (key, value) = row?;
                out.push(decode("evaluations", &key.value(), value.value())?);
            }
            Ok(out)
        })
    }

    /// Stores a turn record (JSON text, opaque here).
    pub fn put_turn(&self, session: &str, turn: u64, record_json: &str) -> Result<(), StoreError> {
        self.write_lazy(|txn| {
            require_session(txn, session)?;
            txn.open_table(TURNS)?
                .insert((session, turn), record_json)?;
            Ok(())
        })
    }

    /// The answer of a turn: its last assistant message (what the turn record's `reply`
    /// was; the record is stored without it, so the answer is stored once). `None` when
    /// the turn has none.
    pub fn turn_answer(&self, session: &str, turn: u64) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(MESSAGES)?;
            // From the end: the turns after it are passed over, the ones before not read.
            for row in table.range(session_keys(session))?.rev() {
                let (key, value) = row?;
                let m: StoredMessage = decode("messages", &key.value(), value.value())?;
                if m.turn < turn {
                    break;
                }
                if m.turn == turn && m.message.role == evolve_core::history::Role::Assistant {
                    return Ok(Some(m.message.content));
                }
            }
            Ok(None)
        })
    }

    /// A turn record.
    pub fn turn(&self, session: &str, turn: u64) -> Result<Option<String>, StoreError> {
        self.read(|txn| {
            Ok(txn
                .open_table(TURNS)?
                .get((session, turn))?
                .map(|v| v.value().to_string()))
        })
    }

    /// Every turn record of a session, by turn.
    pub fn turns(&self, session: &str) -> Result<Vec<(u64, String)>, StoreError> {
        self.read(|txn| {
            let mut out = Vec::new();
            for row in txn.open_table(TURNS)?.range(session_keys(session))? {
                let (key, value) = row?;
                out.push((key.value().1, value.value().to_string()));
            }
            Ok(out)
        })
    }

    /// A session's TODO list.
    pub fn todos(&self, session: &str) -> Result<Vec<Todo>, StoreError> {
        self.read(
            |txn| Ok(get_json(&txn.open_table(TODOS)?, "todos", session)?.unwrap_or_default()),
        )
    }

    /// Replaces a session's TODO list (empty = none).
    pub fn set_todos(&self, session: &str, todos: &[Todo]) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(TODOS)?;
            if todos.is_empty() {
                table.remove(session)?;
                return Ok(());
            }
            require_session(txn, session)?;
            put_json(&mut table, "todos", session, todos)
        })
    }
}

/// [`StoredMessage`] as it is written, borrowing the message: a long answer is encoded
/// from the turn's own copy instead of a clone of it (a 15 MiB answer was held twice
/// more while it was stored: the clone, then its JSON).
#[derive(Serialize)]
struct StoringMessage<'a> {
    seq: u64,
    turn: u64,
    at: Timestamp,
    message: &'a Message,
}

/// Appends messages inside a write transaction (see [`Store::append_messages`]).
/// Returns the sequence number of the first one.
fn append_in(
    txn: &WriteTransaction,
    session: &str,
    turn: u64,
    messages: &[Message],
    now: Timestamp,
    completes_turn: bool,
) -> Result<u64, Fail> {
    let mut record = existing_session(txn, session)?;
    let mut table = txn.open_table(MESSAGES)?;
    let first = match table.range(session_keys(session))?.next_back() {
        Some(row) => row?.0.value().1 + 1,
        None => 0,
    };
    for (seq, message) in (first..).zip(messages) {
        let m = StoringMessage {
            seq,
            turn,
            at: now,
            message,
        };
        put_json(&mut table, "messages", (session, seq), &m)?;
    }
    record.messages += messages.len() as u64;
    record.updated_at = record.updated_at.max(now);
    if completes_turn {
        record.turns = record.turns.max(turn);
    }
    if record.title.trim().is_empty() {
        if let Some(first) = messages.iter().find(|m| m.role == Role::User) {
            record.title = one_line(&first.content, TITLE_CHARS);
        }
    }
    put_json(&mut txn.open_table(SESSIONS)?, "sessions", session, &record)?;
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_13_url_safe_characters_ordered_by_time_then_sequence() {
        let table = [
            (0u64, 0u64, "s000000000000"),
            (0, 1, "s000000000001"),
            (1, 0, "s00000000mh34"),
        ];
        for (millis, seq, want) in table {
            let id = session_id(millis, seq);
            assert_eq!(id.len(), 13);
            assert!(id.starts_with('s'));
            assert!(id[1..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
            assert_eq!(id, want, "({millis}, {seq})");
        }
        // A 2026 time: later millisecond sorts after, whatever the sequence.
        let t = 1_780_000_000_000u64;
        assert!(session_id(t, 0xFFFFF) < session_id(t + 1, 0));
        assert!(session_id(t, 5) < session_id(t, 6));
    }

    #[test]
    fn ids_made_in_the_same_millisecond_differ() {
        let ids: std::collections::BTreeSet<_> = (0..1000).map(|_| fresh_session_id(0)).collect();
        assert_eq!(ids.len(), 1000);
    }
}
