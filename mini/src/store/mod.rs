//! The store: one redb file holding everything Evolve must not lose. It owns the
//! tables, the schema version and its migrations, and the in-RAM cache of memories
//! (with their precomputed keywords) that selection reads. Every logical change is one
//! write transaction, committed before the call returns (redb's default durability:
//! an acknowledged write survives kill -9).
//!
//! Tables (keys → values; values are JSON unless said otherwise):
//! - `meta`: `schema_version` → u64
//! - `memories`: id u64 → [`Memory`]
//! - `sessions`: id → [`Session`]
//! - `messages`: (session, seq u64) → [`StoredMessage`]
//! - `l2`: session → [`L2Ring`] entries; `l3`: session → summary text
//! - `prompts`: version u64 → [`PromptVersion`]; `meta.active_prompt` → version
//! - `style_notes`: "all" → Vec<String>
//! - `evaluations`: (session, turn u64) → [`Evaluation`]
//! - `tool_classes`: tool name → [`ToolClassRecord`]
//! - `grants`: session → [`Grants`]
//! - `pending`: session → Vec<[`PendingCall`]>
//! - `audit`: seq u64 → [`AuditEntry`]
//! - `turns`: (session, turn u64) → the turn record JSON (opaque to the store)
//! - `todos`: session → Vec<[`Todo`]>

use std::fmt;
use std::path::{Path, PathBuf};

use evolve_core::history::{L2Ring, Message};
use evolve_core::memory::{Memory, MemoryConfig, MemoryId};
use evolve_core::permission::{AuditEntry, Grants, Level, PendingCall};
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;
use serde::{Deserialize, Serialize};

/// The schema this build writes. Opening an older store migrates it in one write
/// transaction; a newer one is refused with a clear error.
pub const SCHEMA_VERSION: u64 = 1;

/// A session's id: `s` + 12 lowercase base-36 characters (time + counter), URL-safe.
pub type SessionId = String;

/// A conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// A title (the first question, cut to 60 characters, until renamed).
    pub title: String,
    /// Created.
    pub created_at: Timestamp,
    /// Last message.
    pub updated_at: Timestamp,
    /// Completed turns.
    pub turns: u64,
    /// Messages stored.
    pub messages: u64,
}

/// A message of a session, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Position in the session, from 0.
    pub seq: u64,
    /// The turn it belongs to, from 1.
    pub turn: u64,
    /// When it was stored.
    pub at: Timestamp,
    /// The message.
    pub message: Message,
}

/// A system prompt version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptVersion {
    /// 1, 2, …
    pub version: u64,
    /// The prompt text.
    pub text: String,
    /// When it was written.
    pub created_at: Timestamp,
    /// Why (`initial`, `evolved from 12 reflections`, `set from FILE`, `rollback to 3`).
    pub note: String,
}

/// The evaluation of one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Session.
    pub session: SessionId,
    /// Turn number.
    pub turn: u64,
    /// 0–1.
    pub score: f32,
    /// The evaluator's one-line reason.
    pub reason: String,
    /// When.
    pub at: Timestamp,
}

/// A cached classification of an (MCP) tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolClassRecord {
    /// The level.
    pub level: Level,
    /// Hash of the description and schema it was made from; redone when it changes.
    pub fingerprint: u64,
    /// `classifier` or `user`.
    pub source: String,
    /// When.
    pub at: Timestamp,
}

/// One item of a session's TODO list (the `todo` tool; shown in the prompt's L0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// 1, 2, … within the session.
    pub id: u32,
    /// What to do.
    pub text: String,
    /// Done.
    pub done: bool,
}

/// Why the store cannot do what was asked.
#[derive(Debug)]
pub enum StoreError {
    /// The file cannot be opened or created (permissions, locked by another process, …).
    Open { path: PathBuf, message: String },
    /// The file was written by a newer Evolve.
    TooNew {
        path: PathBuf,
        found: u64,
        supported: u64,
    },
    /// A read or write failed (disk full, I/O error).
    Io { path: PathBuf, message: String },
    /// A record could not be decoded (names table and key).
    Corrupt { path: PathBuf, message: String },
    /// No such memory / session / version.
    NotFound(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, _f: &mut fmt::Formatter<'_>) -> fmt::Result {
        todo!()
    }
}

impl std::error::Error for StoreError {}

/// Result of [`Store::ingest_memory`].
#[derive(Debug, Clone, PartialEq)]
pub enum Ingested {
    /// A new memory with this id.
    Inserted(MemoryId),
    /// Merged into an existing memory (core's rule: Jaccard ≥ 0.3 …).
    Merged(MemoryId),
    /// Exactly the same content was already there.
    Duplicate(MemoryId),
}

/// A full export: memories and sessions with their messages, L2/L3, evaluations.
/// `import(export())` into an empty store gives the same store (ids kept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    /// The schema version it was written by.
    pub schema_version: u64,
    /// Memories (deleted ones included, flagged).
    pub memories: Vec<Memory>,
    /// Sessions with everything attached to them.
    pub sessions: Vec<SessionExport>,
}

/// One session in an [`Export`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionExport {
    /// The session.
    pub session: Session,
    /// Its messages in order.
    pub messages: Vec<StoredMessage>,
    /// L2 ring entries.
    #[serde(default)]
    pub l2: L2Ring,
    /// L3 summary.
    #[serde(default)]
    pub l3: Option<String>,
    /// Evaluations.
    #[serde(default)]
    pub evaluations: Vec<Evaluation>,
}

/// The open store. Cheap to share by reference across threads (`Sync`).
pub struct Store {
    path: PathBuf,
}

impl Store {
    /// Opens or creates the file (and its parent directory), migrates older schemas,
    /// loads the memory cache. `tokenizer` recomputes keywords of memories whose stored
    /// keywords are empty (imported or migrated).
    pub fn open(path: &Path, tokenizer: &dyn Tokenizer) -> Result<Store, StoreError> {
        let _ = tokenizer;
        Ok(Store {
            path: path.to_path_buf(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    // ---- memories (the cache is read; every change is written through) ----

    /// Runs `f` on the cached live memories (not deleted), in id order.
    pub fn with_memories<R>(&self, f: impl FnOnce(&[Memory]) -> R) -> R {
        let _ = f;
        todo!()
    }

    /// One memory by id (deleted ones too).
    pub fn memory(&self, id: MemoryId) -> Result<Memory, StoreError> {
        let _ = id;
        todo!()
    }

    /// Adds a memory through core's ingest rule (exact duplicate → nothing; similar →
    /// merge; else insert), enforcing the CRITICAL cap. One transaction.
    pub fn ingest_memory(
        &self,
        memory: Memory,
        cfg: &MemoryConfig,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Ingested, StoreError> {
        let _ = (memory, cfg, now, tokenizer);
        todo!()
    }

    /// Inserts a memory as given (no merge), assigning a new id. Returns the id.
    pub fn insert_memory(&self, memory: Memory) -> Result<MemoryId, StoreError> {
        let _ = memory;
        todo!()
    }

    /// Replaces a memory (same id).
    pub fn update_memory(&self, memory: &Memory) -> Result<(), StoreError> {
        let _ = memory;
        todo!()
    }

    /// Deletes a memory for good.
    pub fn remove_memory(&self, id: MemoryId) -> Result<(), StoreError> {
        let _ = id;
        todo!()
    }

    /// Sets `last_accessed_at = now` on all of `ids` in one transaction.
    pub fn mark_accessed(&self, ids: &[MemoryId], now: Timestamp) -> Result<(), StoreError> {
        let _ = (ids, now);
        todo!()
    }

    // ---- sessions and messages ----

    /// Creates a session.
    pub fn create_session(&self, title: &str, now: Timestamp) -> Result<Session, StoreError> {
        let _ = (title, now);
        todo!()
    }

    /// One session.
    pub fn session(&self, id: &str) -> Result<Session, StoreError> {
        let _ = id;
        todo!()
    }

    /// All sessions, most recently updated first.
    pub fn sessions(&self) -> Result<Vec<Session>, StoreError> {
        todo!()
    }

    /// Renames a session.
    pub fn rename_session(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let _ = (id, title);
        todo!()
    }

    /// Deletes a session and everything attached to it (messages, L2, L3, evaluations,
    /// grants, pending calls, turns). One transaction.
    pub fn remove_session(&self, id: &str) -> Result<(), StoreError> {
        let _ = id;
        todo!()
    }

    /// Appends the messages of one turn and bumps the session's counters (and `turns`
    /// when `completes_turn`). One transaction. Returns the stored messages.
    pub fn append_messages(
        &self,
        session: &str,
        turn: u64,
        messages: &[Message],
        now: Timestamp,
        completes_turn: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let _ = (session, turn, messages, now, completes_turn);
        todo!()
    }

    /// Messages of a session in order; `since_turn`: only turns ≥ it.
    pub fn messages(
        &self,
        session: &str,
        since_turn: u64,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let _ = (session, since_turn);
        todo!()
    }

    /// The L2 ring of a session (empty if none).
    pub fn l2(&self, session: &str) -> Result<L2Ring, StoreError> {
        let _ = session;
        todo!()
    }

    /// Replaces the L2 ring and, when given, the L3 summary, in one transaction.
    pub fn set_l2(&self, session: &str, ring: &L2Ring, l3: Option<&str>) -> Result<(), StoreError> {
        let _ = (session, ring, l3);
        todo!()
    }

    /// The L3 summary of a session.
    pub fn l3(&self, session: &str) -> Result<Option<String>, StoreError> {
        let _ = session;
        todo!()
    }

    // ---- prompts, style, evaluations, turns ----

    /// All prompt versions, oldest first.
    pub fn prompt_versions(&self) -> Result<Vec<PromptVersion>, StoreError> {
        todo!()
    }

    /// The active prompt version (`None` until one is written: the built-in prompt).
    pub fn active_prompt(&self) -> Result<Option<PromptVersion>, StoreError> {
        todo!()
    }

    /// Writes a new version and makes it active. Returns its number.
    pub fn add_prompt_version(
        &self,
        text: &str,
        note: &str,
        now: Timestamp,
    ) -> Result<u64, StoreError> {
        let _ = (text, note, now);
        todo!()
    }

    /// Makes an existing version active.
    pub fn activate_prompt(&self, version: u64) -> Result<(), StoreError> {
        let _ = version;
        todo!()
    }

    /// The style notes, oldest first.
    pub fn style_notes(&self) -> Result<Vec<String>, StoreError> {
        todo!()
    }

    /// Replaces the style notes.
    pub fn set_style_notes(&self, notes: &[String]) -> Result<(), StoreError> {
        let _ = notes;
        todo!()
    }

    /// Stores a turn's evaluation.
    pub fn add_evaluation(&self, eval: &Evaluation) -> Result<(), StoreError> {
        let _ = eval;
        todo!()
    }

    /// Evaluations of a session, by turn.
    pub fn evaluations(&self, session: &str) -> Result<Vec<Evaluation>, StoreError> {
        let _ = session;
        todo!()
    }

    /// Stores a turn record (JSON text, opaque here).
    pub fn put_turn(&self, session: &str, turn: u64, record_json: &str) -> Result<(), StoreError> {
        let _ = (session, turn, record_json);
        todo!()
    }

    /// A turn record.
    pub fn turn(&self, session: &str, turn: u64) -> Result<Option<String>, StoreError> {
        let _ = (session, turn);
        todo!()
    }

    /// A session's TODO list.
    pub fn todos(&self, session: &str) -> Result<Vec<Todo>, StoreError> {
        let _ = session;
        todo!()
    }

    /// Replaces a session's TODO list.
    pub fn set_todos(&self, session: &str, todos: &[Todo]) -> Result<(), StoreError> {
        let _ = (session, todos);
        todo!()
    }

    // ---- permissions ----

    /// A cached tool classification.
    pub fn tool_class(&self, tool: &str) -> Result<Option<ToolClassRecord>, StoreError> {
        let _ = tool;
        todo!()
    }

    /// Caches a tool classification.
    pub fn set_tool_class(&self, tool: &str, record: &ToolClassRecord) -> Result<(), StoreError> {
        let _ = (tool, record);
        todo!()
    }

    /// A session's "always allow" grants.
    pub fn grants(&self, session: &str) -> Result<Grants, StoreError> {
        let _ = session;
        todo!()
    }

    /// Replaces a session's grants.
    pub fn set_grants(&self, session: &str, grants: &Grants) -> Result<(), StoreError> {
        let _ = (session, grants);
        todo!()
    }

    /// A session's pending calls.
    pub fn pending(&self, session: &str) -> Result<Vec<PendingCall>, StoreError> {
        let _ = session;
        todo!()
    }

    /// Replaces a session's pending calls (empty = none).
    pub fn set_pending(&self, session: &str, calls: &[PendingCall]) -> Result<(), StoreError> {
        let _ = (session, calls);
        todo!()
    }

    /// Appends audit entries in one transaction.
    pub fn audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        let _ = entries;
        todo!()
    }

    /// The last `limit` audit entries, oldest first.
    pub fn audit_log(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let _ = limit;
        todo!()
    }

    // ---- export / import ----

    /// Everything, for `memory export` / `sessions export` / backups.
    pub fn export(&self) -> Result<Export, StoreError> {
        todo!()
    }

    /// Imports an export: memories by id (existing ids replaced), sessions with their
    /// messages. One transaction. Returns (memories, sessions) imported.
    pub fn import(
        &self,
        export: &Export,
        tokenizer: &dyn Tokenizer,
    ) -> Result<(usize, usize), StoreError> {
        let _ = (export, tokenizer);
        todo!()
    }
}
