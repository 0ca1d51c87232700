//! The permission state the store keeps: cached tool classifications, per-session
//! "always allow" grants and pending calls, and the append-only audit log of every
//! decision. What is allowed is decided by `evolve_core::permission`; this file only
//! keeps its inputs and its record.

use evolve_core::permission::{AuditEntry, Grant, Grants, PendingCall, Revoke};
use evolve_core::turn::Turn;
use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::schema::*;
use super::sessions::require_session;
use super::{Store, StoreError, ToolClassRecord};

/// A turn parked on its session while one of its calls waits for a person: its whole
/// state, so the session's next input — in any front end, in any process — settles it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParkedTurn {
    /// The turn's number in the session.
    pub turn: u64,
    /// The turn.
    pub state: Turn,
}

/// What waits on a session ([`Store::waiting`]).
pub enum Waiting {
    /// Nothing.
    Nothing,
    /// A turn, whole.
    Parked(Box<ParkedTurn>),
    /// Calls parked before turns were parked whole: they can only be refused.
    Stale(Vec<PendingCall>),
}

/// A row of [`PENDING`]: a parked turn, or (written before turns were parked whole) a
/// list of calls, which can only be refused.
enum StoredPending {
    Parked(Box<ParkedTurn>),
    Calls(Vec<PendingCall>),
}

impl<'de> Deserialize<'de> for StoredPending {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Told apart by shape (a list or an object), without serde's untagged buffering.
        let v = serde_json::Value::deserialize(d)?;
        let row = if v.is_array() {
            serde_json::from_value(v).map(StoredPending::Calls)
        } else {
            serde_json::from_value(v).map(|p| StoredPending::Parked(Box::new(p)))
        };
        row.map_err(serde::de::Error::custom)
    }
}

impl Store {
    /// A cached tool classification.
    pub fn tool_class(&self, tool: &str) -> Result<Option<ToolClassRecord>, StoreError> {
        self.read(|txn| get_json(&txn.open_table(TOOL_CLASSES)?, "tool_classes", tool))
    }

    /// Caches a tool classification.
    pub fn set_tool_class(&self, tool: &str, record: &ToolClassRecord) -> Result<(), StoreError> {
        self.write(|txn| {
            put_json(
                &mut txn.open_table(TOOL_CLASSES)?,
                "tool_classes",
                tool,
                record,
            )
        })
    }

    /// Caches several classifications in one transaction.
    pub fn set_tool_classes(
        &self,
        records: &[(String, ToolClassRecord)],
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        self.write(|txn| {
            let mut table = txn.open_table(TOOL_CLASSES)?;
            for (tool, record) in records {
                put_json(&mut table, "tool_classes", tool.as_str(), record)?;
            }
            Ok(())
        })
    }

    /// Forgets a tool's classification; `true` when there was one.
    pub fn remove_tool_class(&self, tool: &str) -> Result<bool, StoreError> {
        self.write(|txn| Ok(txn.open_table(TOOL_CLASSES)?.remove(tool)?.is_some()))
    }

    /// A session's "always allow" grants.
    pub fn grants(&self, session: &str) -> Result<Grants, StoreError> {
        self.read(|txn| {
            Ok(get_json(&txn.open_table(GRANTS)?, "grants", session)?.unwrap_or_default())
        })
    }

    /// Adds one grant to a session's, in one transaction (grants given or revoked at
    /// the same time elsewhere are kept). Fails with `NotFound` for a session that does
    /// not exist.
    pub fn add_grant(&self, session: &str, grant: &Grant) -> Result<(), StoreError> {
        self.write(|txn| {
            require_session(txn, session)?;
            let mut table = txn.open_table(GRANTS)?;
            let mut grants: Grants = get_json(&table, "grants", session)?.unwrap_or_default();
            let key = evolve_core::permission::CallKey {
                tool: &grant.tool,
                command: grant.command.as_deref(),
                definition: grant.definition.as_deref(),
            };
            // Only L3 and below are ever granted; the core refuses the rest.
            if grants.grant_call(key, grant.level).is_ok() {
                put_json(&mut table, "grants", session, &grants)?;
            }
            Ok(())
        })
    }

    /// Withdraws the grants `what` names from a session's, in one transaction (an
    /// "always" given at the same time is kept); returns what was withdrawn. Fails
    /// with `NotFound` for a session that does not exist.
    pub fn revoke_grants(&self, session: &str, what: Revoke<'_>) -> Result<Vec<Grant>, StoreError> {
        self.write(|txn| {
            require_session(txn, session)?;
            let mut table = txn.open_table(GRANTS)?;
            let mut grants: Grants = get_json(&table, "grants", session)?.unwrap_or_default();
            let gone = grants.withdraw(what);
            if gone.is_empty() {
                return Ok(gone);
            }
            if grants.is_empty() {
                table.remove(session)?;
            } else {
                put_json(&mut table, "grants", session, &grants)?;
            }
            Ok(gone)
        })
    }

    /// A session's calls waiting for a person.
    pub fn pending(&self, session: &str) -> Result<Vec<PendingCall>, StoreError> {
        Ok(match self.pending_row(session)? {
            None => Vec::new(),
            Some(StoredPending::Calls(calls)) => calls,
            Some(StoredPending::Parked(p)) => p.state.pending().cloned().into_iter().collect(),
        })
    }

    fn pending_row(&self, session: &str) -> Result<Option<StoredPending>, StoreError> {
        self.read(|txn| get_json(&txn.open_table(PENDING)?, "pending", session))
    }

    /// The turn parked on a session, if any.
    pub fn parked(&self, session: &str) -> Result<Option<ParkedTurn>, StoreError> {
        Ok(match self.waiting(session)? {
            Waiting::Parked(p) => Some(*p),
            _ => None,
        })
    }

    /// What waits on a session, read once: a parked turn, calls parked in the older
    /// format, or nothing.
    pub fn waiting(&self, session: &str) -> Result<Waiting, StoreError> {
        Ok(match self.pending_row(session)? {
            Some(StoredPending::Parked(p)) => Waiting::Parked(p),
            Some(StoredPending::Calls(calls)) if !calls.is_empty() => Waiting::Stale(calls),
            _ => Waiting::Nothing,
        })
    }

    /// Parks a turn on its session (replacing what was parked there).
    pub fn park(&self, session: &str, turn: &ParkedTurn) -> Result<(), StoreError> {
        self.write(|txn| {
            require_session(txn, session)?;
            put_json(&mut txn.open_table(PENDING)?, "pending", session, turn)
        })
    }

    /// Removes what is parked on a session.
    pub fn unpark(&self, session: &str) -> Result<(), StoreError> {
        self.set_pending(session, &[])
    }

    /// Replaces a session's pending calls (empty = none).
    pub fn set_pending(&self, session: &str, calls: &[PendingCall]) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(PENDING)?;
            if calls.is_empty() {
                table.remove(session)?;
                return Ok(());
            }
            require_session(txn, session)?;
            put_json(&mut table, "pending", session, calls)
        })
    }

    /// Appends audit entries in one transaction.
    pub fn audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        self.write(|txn| {
            let mut table = txn.open_table(AUDIT)?;
            let first = match table.last()? {
                Some((k, _)) => k.value() + 1,
                None => 1,
            };
            for (seq, entry) in (first..).zip(entries) {
                put_json(&mut table, "audit", seq, entry)?;
            }
            Ok(())
        })
    }

    /// The last `limit` audit entries, oldest first.
    pub fn audit_log(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(AUDIT)?;
            let mut out = Vec::with_capacity(limit.min(1024));
            for row in table.iter()?.rev().take(limit) {
                let (key, value) = row?;
                out.push(decode("audit", &key.value(), value.value())?);
            }
            out.reverse();
            Ok(out)
        })
    }
}
