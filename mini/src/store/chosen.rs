//! What a turn's request chose for its question (the earlier exchanges picked from the
//! L2 ring and the context block: memories, skills, the tool-chain review), kept with
//! the turn in one table, `turn_chosen`, under `(session, turn)`. The next turns' requests
//! put it back before the turn's question, so each repeats the one before as its prefix
//! and a model server's prompt cache reuses it; nothing shows it to a person (the
//! session's messages, its export and the interfaces read `messages`). The table is made
//! by its first write; a store that has none reads nothing, so older stores need no
//! migration. Removing a session removes its rows.

use evolve_core::history::Chosen;
use redb::{TableDefinition, TableError, WriteTransaction};

use super::error::Fail;
use super::schema::{decode, put_json, session_keys, Json};
use super::{Store, StoreError};

/// (session, turn) → [`Chosen`].
const TURN_CHOSEN: TableDefinition<(&str, u64), Json> = TableDefinition::new("turn_chosen");

/// Keeps `chosen` for `turn` (nothing when empty), in the turn's own transaction.
pub(super) fn keep_in(
    txn: &WriteTransaction,
    session: &str,
    turn: u64,
    chosen: &Chosen,
) -> Result<(), Fail> {
    if chosen.messages.is_empty() {
        return Ok(());
    }
    let mut table = txn.open_table(TURN_CHOSEN)?;
    put_json(&mut table, "turn_chosen", (session, turn), chosen)
}

/// Removes a session's rows (with the session).
pub(super) fn delete_in(txn: &WriteTransaction, session: &str) -> Result<(), Fail> {
    txn.open_table(TURN_CHOSEN)?
        .retain_in(session_keys(session), |_, _| false)?;
    Ok(())
}

impl Store {
    /// What the requests of a session's turns from `since_turn` on chose for their
    /// questions, by turn (turns that chose nothing are left out).
    pub fn chosen_since(
        &self,
        session: &str,
        since_turn: u64,
    ) -> Result<Vec<(u64, Chosen)>, StoreError> {
        self.read(|txn| {
            let table = match txn.open_table(TURN_CHOSEN) {
                Ok(t) => t,
                Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            };
            let mut out = Vec::new();
            for row in table.range((session, since_turn)..=(session, u64::MAX))? {
                let (key, value) = row?;
                let turn = key.value().1;
                out.push((turn, decode("turn_chosen", &key.value(), value.value())?));
            }
            Ok(out)
        })
    }
}
