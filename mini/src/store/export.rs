//! Export and import: the whole store (memories and sessions with what the agent needs
//! to continue them) as one [`Export`] value, read from one snapshot and written back in
//! one transaction. `import(export())` into an empty store reproduces it: ids,
//! sequence numbers, timestamps and keywords are kept as they were.
//!
//! Not exported: prompts, style notes, tool classifications, grants, pending calls,
//! turn records, TODOs and the audit log — state of the running agent, not the user's
//! data.

use evolve_core::history::L2Ring;
use evolve_core::memory::Memory;
use evolve_core::text::Tokenizer;
use redb::ReadTransaction;

use super::error::Fail;
use super::memories::next_id;
use super::schema::*;
use super::sessions::{delete_session_rows, no_session};
use super::{Export, Session, SessionExport, Store, StoreError};

/// One session with everything exported about it, from a snapshot.
fn session_export(txn: &ReadTransaction, session: Session) -> Result<SessionExport, Fail> {
    let id = session.id.as_str();
    let mut messages = Vec::with_capacity(session.messages as usize);
    for row in txn.open_table(MESSAGES)?.range(session_keys(id))? {
        let (key, value) = row?;
        messages.push(decode("messages", &key.value(), value.value())?);
    }
    let mut evaluations = Vec::new();
    for row in txn.open_table(EVALUATIONS)?.range(session_keys(id))? {
        let (key, value) = row?;
        evaluations.push(decode("evaluations", &key.value(), value.value())?);
    }
    let l2: L2Ring = get_json(&txn.open_table(L2)?, "l2", id)?.unwrap_or_default();
    let l3_table = txn.open_table(L3)?;
    let l3 = l3_table.get(id)?.map(|v| v.value().to_string());
    let tool_chain = l3_table
        .get(super::sessions::tool_chain_key(id).as_str())?
        .map(|v| v.value().to_string());
    let mut failed = std::collections::BTreeMap::new();
    for row in txn.open_table(TURNS)?.range(session_keys(id))? {
        let (key, value) = row?;
        let record = serde_json::from_str::<serde_json::Value>(value.value()).unwrap_or_default();
        if let Some(why) = record["failed"].as_str() {
            failed.insert(key.value().1, why.to_string());
        }
    }
    Ok(SessionExport {
        session,
        messages,
        l2,
        l3,
        tool_chain,
        evaluations,
        failed,
    })
}

impl Store {
    /// Everything at once: the store's tests compare whole stores with it (`memory
    /// export` and `sessions export` read what they show through their own calls).
    #[cfg(test)]
    pub fn export(&self) -> Result<Export, StoreError> {
        use super::memories::read_all_memories;
        use super::SCHEMA_VERSION;
        use redb::ReadableTable;
        self.read(|txn| {
            let memories = read_all_memories(&txn.open_table(MEMORIES)?)?;
            let mut sessions = Vec::new();
            for row in txn.open_table(SESSIONS)?.iter()? {
                let (key, value) = row?;
                let session: Session = decode("sessions", &key.value(), value.value())?;
                sessions.push(session_export(txn, session)?);
            }
            Ok(Export {
                schema_version: SCHEMA_VERSION,
                memories,
                sessions,
            })
        })
    }

    /// One session with its messages, L2/L3 and evaluations (`sessions export`).
    pub fn export_session(&self, id: &str) -> Result<SessionExport, StoreError> {
        self.read(|txn| {
            let session: Session = get_json(&txn.open_table(SESSIONS)?, "sessions", id)?
                .ok_or_else(|| Fail::NotFound(no_session(id)))?;
            session_export(txn, session)
        })
    }

    /// Imports an export: memories by id (existing ids replaced), sessions with their
    /// messages. One transaction. Returns (memories, sessions) imported.
    ///
    /// A memory with id 0 gets a new id; one without keywords gets them from
    /// `tokenizer`. An imported session replaces a stored one of the same id and
    /// everything attached to it.
    pub fn import(
        &self,
        export: &Export,
        tokenizer: &dyn Tokenizer,
    ) -> Result<(usize, usize), StoreError> {
        let mut memories: Vec<Memory> = export.memories.clone();
        let _writer = self.lock_writer();
        self.write(|txn| {
            for s in &export.sessions {
                delete_session_rows(txn, &s.session.id)?;
            }
            let mut table = txn.open_table(MEMORIES)?;
            let mut meta = txn.open_table(META)?;
            let mut next = next_id(&meta, &table)?;
            for m in &mut memories {
                // A record claiming a world memory is a rule is held to information.
                m.confine_world();
                if m.keywords.is_empty() {
                    m.refresh_derived(tokenizer);
                }
                if m.id == 0 {
                    m.id = next;
                }
                next = next.max(m.id + 1);
                put_json(&mut table, "memories", m.id, m)?;
            }
            meta.insert(NEXT_MEMORY_ID_KEY, next)?;

            let mut sessions = txn.open_table(SESSIONS)?;
            let mut messages = txn.open_table(MESSAGES)?;
            let mut evaluations = txn.open_table(EVALUATIONS)?;
            let mut l2 = txn.open_table(L2)?;
            let mut l3 = txn.open_table(L3)?;
            for s in &export.sessions {
                let id = s.session.id.as_str();
                put_json(&mut sessions, "sessions", id, &s.session)?;
                for m in &s.messages {
                    put_json(&mut messages, "messages", (id, m.seq), m)?;
                }
                for e in &s.evaluations {
                    put_json(&mut evaluations, "evaluations", (id, e.turn), e)?;
                }
                if !s.l2.is_empty() {
                    put_json(&mut l2, "l2", id, &s.l2)?;
                }
                if let Some(summary) = s.l3.as_deref().filter(|t| !t.is_empty()) {
                    l3.insert(id, summary)?;
                }
                if let Some(review) = s.tool_chain.as_deref().filter(|t| !t.is_empty()) {
                    l3.insert(super::sessions::tool_chain_key(id).as_str(), review)?;
                }
            }
            Ok(())
        })?;
        let counts = (memories.len(), export.sessions.len());
        self.apply_to_cache(memories);
        Ok(counts)
    }
}
