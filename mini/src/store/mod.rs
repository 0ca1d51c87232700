//! The store: one redb file holding everything Evolve must not lose. It owns the
//! tables, the schema version and its migrations, and the in-RAM cache of memories
//! (with their precomputed keywords) that selection reads. Every logical change is one
//! write transaction, committed before the call returns (redb's default durability,
//! `Immediate`: an acknowledged write survives kill -9).
//!
//! Tables (keys → values; values are JSON unless said otherwise):
//! - `meta`: `schema_version` → u64 (also `active_prompt`, `next_memory_id`)
//! - `memories`: id u64 → [`Memory`]
//! - `sessions`: id → [`Session`]
//! - `messages`: (session, seq u64) → [`StoredMessage`]
//! - `l2`: session → [`L2Ring`] entries; `l3`: session → summary text
//! - `prompts`: version u64 → [`PromptVersion`]; `meta.active_prompt` → version
//! - `style_notes`: "all" → `Vec<String>`
//! - `evaluations`: (session, turn u64) → [`Evaluation`]
//! - `tool_classes`: tool name → [`ToolClassRecord`]
//! - `grants`: session → [`Grants`](evolve_core::permission::Grants)
//! - `pending`: session → Vec<[`PendingCall`](evolve_core::permission::PendingCall)>
//! - `audit`: seq u64 → [`AuditEntry`](evolve_core::permission::AuditEntry)
//! - `turns`: (session, turn u64) → the turn record JSON (opaque to the store)
//! - `todos`: session → Vec<[`Todo`]>
//! - `mcp_servers`: server name → [`ServerSpec`](crate::mcp_spec::ServerSpec) (added at run time)
//! - `mcp_tools`: server name → its last tool list ([`McpTool`](crate::mcp_spec::McpTool)s)
//!   and when it was fetched
//! - `mcp_logins`: server name → [`McpLogin`] (an HTTP server's OAuth client and tokens;
//!   never exported)
//! - `mcp_definitions`: full tool name → its definition as last seen (what grants and
//!   user levels are bound to; `mcp::definition`)
//! - `tasks`: task id u64 → [`Task`]; `task_runs`: (task, seq u64) → [`TaskRun`];
//!   `meta.next_task_id`
//! - `channels`: `PLATFORM/…` → what a chat channel keeps (paired chats, pairing
//!   codes, each chat's session, the last update acknowledged); made by its first
//!   write, so stores from before it need no migration
//! - `conversation_tails`: conversation (a session id, or an import's `conversation`)
//!   → u64 id of its newest memory, the one the next turn's memory replies to
//!
//! What it decides: record layout and ids (memory ids are never reused; session ids
//! are time-ordered), what a session owns (removing it removes all of that), and how
//! the memory cache follows the file (updated only after a successful commit, under a
//! lock that orders memory writes, so readers never see a change the file does not
//! hold). What to remember, merge, forget or select is decided by `evolve_core::memory`;
//! the store applies those decisions atomically.
//!
//! The file is opened by one process at a time (redb's exclusive-writer lock); inside
//! the process the [`Store`] is shared by reference: redb serialises write transactions
//! and readers see committed snapshots. A process that holds it for long (`serve`) lends
//! it to the commands run beside it (`lend.rs`).
//!
//! Opening is `open.rs`: the header read first (`header.rs`), a missing file created whole
//! and moved into place, an existing one checked page by page through a dry run that
//! writes nothing (`dry_run.rs`). A file that cannot be the store (empty, cut, damaged,
//! another program's, a newer evolve's) is refused with what is wrong and what to do, and
//! its bytes are left as they were.

mod channels;
mod chosen;
mod dates;
mod dry_run;
mod error;
mod export;
mod header;
mod lend;
pub use lend::{Lease, Lender, LENT_WAIT};
mod mcp;
pub use mcp::McpLogin;
mod memories;
mod migrate;
mod open;
mod permissions;
pub use permissions::{ParkedTurn, Waiting};
mod prompts;
mod schema;
mod sessions;
mod tasks;
pub mod transcript;
mod usage;
pub use usage::{local_date, today_start, Ledger, Sum, Tokens};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};

use evolve_core::history::{L2Ring, Message};
use evolve_core::memory::{Memory, MemoryId};
use evolve_core::permission::Level;
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;
use redb::{Database, Durability, ReadTransaction, ReadableDatabase, WriteTransaction};
use serde::{Deserialize, Serialize};

pub use dates::{format_date, format_time, parse_time};
use error::Fail;
pub use error::StoreError;
pub use memories::Saved;
pub use sessions::TITLE_CHARS;
pub use tasks::{RunEnd, RunStatus, Task, TaskRun, Trigger};

/// The schema this build writes. Opening an older store migrates it in one write
/// transaction; a newer one is refused with a clear error.
pub const SCHEMA_VERSION: u64 = 6;

/// A session's id: `s` + 12 lowercase base-36 characters (time + counter), URL-safe.
pub type SessionId = String;

/// A conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// A title: the first question cut to 60 characters, then the one line the cheap
    /// model writes after the first answer, or the user's (see [`TitleFrom`]).
    pub title: String,
    /// Who wrote the title; a user's is never overwritten.
    #[serde(default, skip_serializing_if = "TitleFrom::is_question")]
    pub title_from: TitleFrom,
    /// Created.
    pub created_at: Timestamp,
    /// Last message.
    pub updated_at: Timestamp,
    /// Completed turns.
    pub turns: u64,
    /// Messages stored.
    pub messages: u64,
    /// Turns whose answer a later turn replaced (regenerated, or its question edited):
    /// kept for the person, left out of the model's history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<u64>,
    /// (turn, parent) of each turn stored since turns have versions: the turn it
    /// follows on its branch (0: the session's first). A turn answered again gets the
    /// parent of the turn it answers again (see [`evolve_core::history::Branches`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<(u64, u64)>,
    /// (parent, child): the version the person chose to show after a turn; the newest
    /// is shown otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown: Vec<(u64, u64)>,
    /// The chat this session answers on a channel (`telegram:CHAT`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The tools offered to the model in full in this session, in the order first
    /// offered: offered again in its later turns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offered_tools: Vec<String>,
    /// Kept at the top of the person's chat list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// Put away by the person: listed apart, kept whole (nothing is deleted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
}

impl Session {
    /// Its turns' versions and the branch shown.
    pub fn branches(&self) -> evolve_core::history::Branches<'_> {
        evolve_core::history::Branches {
            turns: self.turns,
            superseded: &self.superseded,
            parents: &self.parents,
            shown: &self.shown,
        }
    }
}

/// Who wrote a session's title.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TitleFrom {
    /// Cut from the first question (until the model's title comes).
    #[default]
    Question,
    /// Written by the cheap model after the first answer.
    Model,
    /// Set by the user (rename): kept whatever comes later.
    User,
}

impl TitleFrom {
    fn is_question(&self) -> bool {
        *self == TitleFrom::Question
    }
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
    /// Hash of the definition it was made from; redone when it changes.
    pub fingerprint: u64,
    /// For a level the user set: the identity of the definition it was set for
    /// (`mcp::definition`); it applies to no other. `None`: set before levels were
    /// bound, or before the tool was ever listed — bound at the next listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// [`CLASS_BY_USER`], [`CLASS_BY_CLASSIFIER`] or [`CLASS_UNCLASSIFIED`].
    pub source: String,
    /// When.
    pub at: Timestamp,
}

/// [`ToolClassRecord::source`] of a level the user set (`evolve mcp level`); it wins
/// over everything else and is never replaced by the classifier.
pub const CLASS_BY_USER: &str = "user";
/// [`ToolClassRecord::source`] of the cheap model's classification.
pub const CLASS_BY_CLASSIFIER: &str = "classifier";
/// [`ToolClassRecord::source`] of a tool the cheap model answered for without a usable
/// level: remembered (with its fingerprint) so it is not asked about on every turn;
/// the tool is L4.
pub const CLASS_UNCLASSIFIED: &str = "unclassified";

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
    /// The tool-chain review the cheap model keeps (L3's second part).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_chain: Option<String>,
    /// Evaluations.
    #[serde(default)]
    pub evaluations: Vec<Evaluation>,
    /// The turns that did not finish, from their records: turn → why (`stopped` when the
    /// person stopped the answer, else the error). Shown in the transcripts; not imported.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failed: std::collections::BTreeMap<u64, String>,
}

/// redb's page cache. Its default (1 GiB) would let a long `serve` grow far past the
/// 8 MB idle target; the hot data (memories) lives in our own cache anyway.
const CACHE_BYTES: usize = 4 * 1024 * 1024;

/// The open store. Cheap to share by reference across threads (`Sync`).
///
/// A store opened for sharing ([`Store::share`]) can let go of the file while its
/// process waits — for the model, or for a person's answer — so that other evolve
/// processes (a cron `ask`, another `chat`) get their turn; the next read or write opens
/// it again, waiting for the lock, and reloads the memory cache if another process
/// changed the file meanwhile.
pub struct Store {
    path: PathBuf,
    /// `None` while released.
    db: RwLock<Option<Database>>,
    /// How long a reopen waits for another process; `None`: this store is not shared
    /// and [`Store::release`] does nothing.
    share_wait: Option<std::time::Duration>,
    /// The file's length and modification time when it was released, to tell on reopen
    /// whether another process wrote to it.
    released_stamp: Mutex<Option<(u64, std::time::SystemTime)>>,
    /// Live memories (not deleted), ids ascending, keywords precomputed, and their
    /// inverted index. Changed only after a commit, while `memory_writer` is held.
    memories: RwLock<memories::Cache>,
    /// Held by every write that changes memories, from reading the cache to deciding
    /// (ingest, merge, cap) to updating it after the commit: two writers never decide
    /// on the same stale view, and the cache ends in the order the commits happened.
    memory_writer: Mutex<()>,
    /// The last I/O error (e.g. "No space left on device"): what redb's later "Previous
    /// I/O error" means, said to the user instead.
    last_io_error: Mutex<Option<String>>,
    /// The lends running ([`Store::lend`]): while any does, uses wait instead of
    /// opening the file.
    lends: lend::Lends,
    /// How this store asks for the file when another process holds it
    /// ([`Store::borrow_with`]).
    lender: Option<Lender>,
    /// The lease it holds the file under, while it does.
    lease: Mutex<Option<Lease>>,
}

impl Store {
    /// Opens or creates the file (and its parent directory), migrates older schemas,
    /// loads the memory cache. A file that cannot be opened (damaged, another program's,
    /// a newer evolve's) is refused with what is wrong, and nothing is written to it.
    /// `tokenizer` recomputes keywords of memories whose stored keywords are empty
    /// (imported or migrated).
    pub fn open(path: &Path, tokenizer: &dyn Tokenizer) -> Result<Store, StoreError> {
        let open_err = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                open_err(format!(
                    "cannot create the directory {}: {e} — check its permissions or set \
                     EVOLVE_HOME to a writable directory",
                    dir.display()
                ))
            })?;
        }
        let db = open::open(path).map_err(|e| e.at(path))?;
        let migrated = migrate::migrate(&db).map_err(|e| e.at(path))?;
        if migrated.from != migrated.to {
            log::info!(
                "store {}: schema {} → {}",
                path.display(),
                migrated.from,
                migrated.to
            );
        }
        let store = Store {
            path: path.to_path_buf(),
            db: RwLock::new(Some(db)),
            share_wait: None,
            released_stamp: Mutex::new(None),
            memories: RwLock::new(memories::Cache::default()),
            memory_writer: Mutex::new(()),
            last_io_error: Mutex::new(None),
            lends: lend::Lends::default(),
            lender: None,
            lease: Mutex::new(None),
        };
        store.load_memories(tokenizer)?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lets [`Store::release`] close the file between uses; a reopen waits up to
    /// `wait` for another process to let go of it.
    pub fn share(&mut self, wait: std::time::Duration) {
        self.share_wait = Some(wait);
    }

    /// Closes the file (a shared store only) until the next read or write: call it
    /// before waiting for something slow. Waits for transactions in flight. A borrowed
    /// file is given back once closed.
    pub fn release(&self) {
        if self.share_wait.is_none() {
            return;
        }
        self.shut();
        self.give_back();
    }

    /// The open database, reopening a released one first.
    fn handle(&self) -> Result<RwLockReadGuard<'_, Option<Database>>, StoreError> {
        loop {
            let guard = self.db.read().unwrap_or_else(PoisonError::into_inner);
            if guard.is_some() {
                return Ok(guard);
            }
            drop(guard);
            self.reopen()?;
        }
    }

    /// Opens a released (or lent) file again, waiting while it is lent and for another
    /// process's lock (asking its lender, if this store has one), and reloads the memory
    /// cache when the file changed meanwhile.
    fn reopen(&self) -> Result<(), StoreError> {
        // A store that is not shared is closed only by a lend or an I/O error: it waits
        // as long as a use waits for a lend, for the borrower to let go of the lock.
        let wait = self.share_wait.unwrap_or(LENT_WAIT);
        let started = std::time::Instant::now();
        let refreshed = loop {
            // Waited for before the lock below, which every use of the file takes.
            self.lends
                .wait_returned(started + wait)
                .map_err(|lent| self.lent_error(lent.to, wait))?;
            let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
            if slot.is_some() {
                return Ok(());
            }
            if self.lends.any() {
                continue; // lent again meanwhile
            }
            let before = *self
                .released_stamp
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Read before opening: opening writes to the file itself.
            let mut now_stamp = file_stamp(&self.path);
            let mut asked = false;
            let db = loop {
                match open::open(&self.path) {
                    Ok(db) => break db,
                    Err(Fail::Db(redb::Error::DatabaseAlreadyOpen)) if started.elapsed() < wait => {
                        // Another process has it: whatever it does, read the file anew.
                        now_stamp = None;
                        if !asked {
                            asked = true;
                            if self.borrow() {
                                continue;
                            }
                        }
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    // Opening after a failed write repairs the file, which writes too:
                    // redb may then answer just "Previous I/O error".
                    Err(Fail::Db(redb::Error::PreviousIo)) => return Err(self.previous_io_error()),
                    Err(e) => return Err(e.at(&self.path)),
                }
            };
            // The cache is reloaded before the file is seen open: no use in between
            // reads memories from before another process changed them.
            let mut refreshed = Vec::new();
            if before.is_none() || before != now_stamp {
                log::debug!(
                    "{} changed while released; reloading memories",
                    self.path.display()
                );
                refreshed = self.fill_cache(&db, &evolve_core::text::FallbackTokenizer)?;
            }
            *slot = Some(db);
            break refreshed;
        };
        self.write_refreshed(refreshed)
    }

    /// Carries every lazy write ([`Store::write_lazy`]) to disk now: for a process about
    /// to exit while a background thread still holds the store, so the file is not
    /// closed cleanly (`ask --no-wait`).
    pub fn sync(&self) -> Result<(), StoreError> {
        self.write(|_| Ok(()))
    }

    /// Runs `f` in one write transaction and commits it; an error anywhere aborts the
    /// whole change. The change is on disk when this returns (with every lazy one
    /// before it).
    fn write<R>(
        &self,
        f: impl FnOnce(&WriteTransaction) -> Result<R, Fail>,
    ) -> Result<R, StoreError> {
        self.commit(false, f)
    }

    /// Like [`Store::write`], without waiting for the disk: for what no one was told
    /// is saved (a turn's figures), on the answer's path. The next durable commit, or
    /// closing the file (redb's clean shutdown), carries it to disk; a killed process
    /// may lose it.
    fn write_lazy<R>(
        &self,
        f: impl FnOnce(&WriteTransaction) -> Result<R, Fail>,
    ) -> Result<R, StoreError> {
        self.commit(true, f)
    }

    fn commit<R>(
        &self,
        lazy: bool,
        f: impl FnOnce(&WriteTransaction) -> Result<R, Fail>,
    ) -> Result<R, StoreError> {
        let mut guard = self.handle()?;
        let mut reopened = false;
        let begun = loop {
            let db = guard.as_ref().ok_or_else(|| closed(&self.path))?;
            match db.begin_write() {
                // Another thread's write just failed on this file (see below): open it
                // again and try once more, so this one fails (or not) for its own reason.
                Err(redb::TransactionError::Storage(redb::StorageError::PreviousIo))
                    if !reopened =>
                {
                    drop(guard);
                    self.close();
                    reopened = true;
                    guard = self.handle()?;
                }
                other => break other,
            }
        };
        let run = || -> Result<R, Fail> {
            let mut txn = begun?;
            if lazy {
                // Refused only for a transaction that made a savepoint: this one
                // has not; it then commits durably, which is never wrong.
                let _ = txn.set_durability(Durability::None);
            }
            let out = f(&txn)?;
            txn.commit()?;
            Ok(out)
        };
        let result = run();
        drop(guard);
        self.close_after_io_error(result)
    }

    /// Runs `f` on a consistent snapshot.
    /// `f` may run twice (see below): it starts from scratch each time.
    fn read<R>(
        &self,
        mut f: impl FnMut(&ReadTransaction) -> Result<R, Fail>,
    ) -> Result<R, StoreError> {
        let mut attempt = || -> Result<Result<R, Fail>, StoreError> {
            let guard = self.handle()?;
            let db = guard.as_ref().ok_or_else(|| closed(&self.path))?;
            Ok(db.begin_read().map_err(Fail::from).and_then(|txn| f(&txn)))
        };
        let result = match attempt()? {
            // Another thread's write just failed on this file (see below): open it again
            // and read once more.
            Err(Fail::Db(redb::Error::PreviousIo)) => {
                self.close();
                attempt()?
            }
            other => other,
        };
        self.close_after_io_error(result)
    }

    /// After an I/O error (a full disk) redb refuses every later transaction ("Previous
    /// I/O error … close and re-open the database"): the file is closed here, so that
    /// the next read or write opens it again (redb repairs it then) and works once the
    /// cause is gone, instead of a long-running `serve` failing until it is restarted.
    /// The memory cache is reloaded on that reopen.
    fn close_after_io_error<R>(&self, result: Result<R, Fail>) -> Result<R, StoreError> {
        match result {
            Err(Fail::Db(redb::Error::Io(e))) => {
                *self
                    .last_io_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(e.to_string());
                self.close();
                Err(Fail::Db(redb::Error::Io(e)).at(&self.path))
            }
            Err(Fail::Db(redb::Error::PreviousIo)) => {
                self.close();
                Err(self.previous_io_error())
            }
            other => other.map_err(|e| e.at(&self.path)),
        }
    }

    /// redb's "Previous I/O error" in the words of that error (e.g. "No space left on
    /// device").
    fn previous_io_error(&self) -> StoreError {
        let last = self
            .last_io_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        StoreError::Io {
            path: self.path.clone(),
            message: match last.as_deref() {
                Some(cause) => format!("an earlier write failed: {cause}"),
                None => "an earlier write failed".into(),
            },
        }
    }

    /// Closes the file until the next use, which opens it again and reloads the memory
    /// cache.
    fn close(&self) {
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if slot.take().is_some() {
            log::info!(
                "{}: closed after an I/O error; the next use opens it again",
                self.path.display()
            );
            *self
                .released_stamp
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = None;
        }
    }

    fn lock_writer(&self) -> MutexGuard<'_, ()> {
        // The guard protects no data: a panic elsewhere leaves nothing half-done here.
        self.memory_writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn cache(&self) -> RwLockReadGuard<'_, memories::Cache> {
        self.memories.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Store {
    /// Closes the file and seals it: the next open knows it is as this process left it.
    /// A borrowed file is given back after that.
    fn drop(&mut self) {
        let slot = self.db.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(db) = slot.take() {
            drop(db); // redb writes its clean-shutdown header here
            open::seal(&self.path);
        }
        self.give_back();
    }
}

/// The length and modification time of `path`, if it can be read.
fn file_stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn closed(path: &Path) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        message: "the store was closed while in use".into(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
