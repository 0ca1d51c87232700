//! The tables of the store and how records are written in them: keys are native redb
//! types (`u64`, `&str`, `(&str, u64)`) so ranges and order come for free; values are
//! JSON text, so a record stays readable with any redb viewer and a field added later
//! (with a serde default) does not need a migration.

use std::fmt::Debug;
use std::ops::RangeInclusive;

use redb::{Key, ReadableTable, Table, TableDefinition};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::Fail;

/// A JSON value column.
pub(super) type Json = &'static str;

/// `schema_version`, `active_prompt`, `next_memory_id` → u64. Its type never changes:
/// it is how any build learns which schema the file holds.
pub(super) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// id → [`evolve_core::memory::Memory`].
pub(super) const MEMORIES: TableDefinition<u64, Json> = TableDefinition::new("memories");
/// session id → [`super::Session`].
pub(super) const SESSIONS: TableDefinition<&str, Json> = TableDefinition::new("sessions");
/// (session, seq) → [`super::StoredMessage`].
pub(super) const MESSAGES: TableDefinition<(&str, u64), Json> = TableDefinition::new("messages");
/// session → [`evolve_core::history::L2Ring`].
pub(super) const L2: TableDefinition<&str, Json> = TableDefinition::new("l2");
/// session → the L3 summary, plain text; `session/tools` → its tool-chain review.
pub(super) const L3: TableDefinition<&str, &str> = TableDefinition::new("l3");
/// version → [`super::PromptVersion`].
pub(super) const PROMPTS: TableDefinition<u64, Json> = TableDefinition::new("prompts");
/// `all` → the style notes (a JSON list of strings).
pub(super) const STYLE_NOTES: TableDefinition<&str, Json> = TableDefinition::new("style_notes");
/// (session, turn) → [`super::Evaluation`].
pub(super) const EVALUATIONS: TableDefinition<(&str, u64), Json> =
    TableDefinition::new("evaluations");
/// tool name → [`super::ToolClassRecord`].
pub(super) const TOOL_CLASSES: TableDefinition<&str, Json> = TableDefinition::new("tool_classes");
/// session → [`evolve_core::permission::Grants`].
pub(super) const GRANTS: TableDefinition<&str, Json> = TableDefinition::new("grants");
/// session → a list of [`evolve_core::permission::PendingCall`].
pub(super) const PENDING: TableDefinition<&str, Json> = TableDefinition::new("pending");
/// seq → [`evolve_core::permission::AuditEntry`].
pub(super) const AUDIT: TableDefinition<u64, Json> = TableDefinition::new("audit");
/// (session, turn) → the turn record, JSON opaque to the store.
pub(super) const TURNS: TableDefinition<(&str, u64), &str> = TableDefinition::new("turns");
/// session → a list of [`super::Todo`].
pub(super) const TODOS: TableDefinition<&str, Json> = TableDefinition::new("todos");
/// server name → [`crate::mcp_spec::ServerSpec`]: the servers added with `evolve mcp add` or
/// `import` (schema 2).
pub(super) const MCP_SERVERS: TableDefinition<&str, Json> = TableDefinition::new("mcp_servers");
/// server name → its last tool list and when it was fetched (schema 2).
pub(super) const MCP_TOOLS: TableDefinition<&str, Json> = TableDefinition::new("mcp_tools");
/// server name → [`super::McpLogin`]: an HTTP server's OAuth login (schema 4).
pub(super) const MCP_LOGINS: TableDefinition<&str, Json> = TableDefinition::new("mcp_logins");
/// Full MCP tool name → its definition as last seen
/// ([`DefinitionRecord`](crate::mcp::definition::DefinitionRecord) JSON).
pub(super) const MCP_DEFINITIONS: TableDefinition<&str, Json> =
    TableDefinition::new("mcp_definitions");
/// task id → [`super::Task`]: the scheduled tasks (schema 3).
pub(super) const TASKS: TableDefinition<u64, Json> = TableDefinition::new("tasks");
/// (task id, seq) → [`super::TaskRun`] (schema 3).
pub(super) const TASK_RUNS: TableDefinition<(u64, u64), Json> = TableDefinition::new("task_runs");

/// conversation → the id of its newest memory (schema 6): the memory the next turn of
/// that conversation replies to ([`evolve_core::memory::Memory::prev`]). A conversation
/// is a session id, or the `conversation` an import names.
pub(super) const CONVERSATION_TAILS: TableDefinition<&str, u64> =
    TableDefinition::new("conversation_tails");

/// Keys of [`META`].
pub(super) const SCHEMA_VERSION_KEY: &str = "schema_version";
pub(super) const ACTIVE_PROMPT_KEY: &str = "active_prompt";
/// Memory ids are never reused, even after a memory is removed for good: an export or
/// a log line that names `#12` keeps meaning the same memory.
pub(super) const NEXT_MEMORY_ID_KEY: &str = "next_memory_id";

/// The key of the single row of [`STYLE_NOTES`].
pub(super) const STYLE_NOTES_KEY: &str = "all";

/// All keys of one session in a `(session, n)` table.
pub(super) fn session_keys(session: &str) -> RangeInclusive<(&str, u64)> {
    (session, 0)..=(session, u64::MAX)
}

/// Decodes one stored value; a value that is not the expected JSON is reported with
/// its table and key, never a panic.
pub(super) fn decode<T: DeserializeOwned>(
    table: &'static str,
    key: &dyn Debug,
    json: &str,
) -> Result<T, Fail> {
    serde_json::from_str(json).map_err(|e| Fail::Corrupt {
        table,
        key: format!("{key:?}"),
        detail: e.to_string(),
    })
}

/// Encodes one value for `table`.
pub(super) fn encode<T: Serialize + ?Sized>(
    table: &'static str,
    value: &T,
) -> Result<String, Fail> {
    serde_json::to_string(value).map_err(|e| Fail::Encode {
        table,
        detail: e.to_string(),
    })
}

/// Reads and decodes the value at `key`, `None` when there is none.
pub(super) fn get_json<'k, K, T>(
    table: &impl ReadableTable<K, Json>,
    name: &'static str,
    key: K::SelfType<'k>,
) -> Result<Option<T>, Fail>
where
    K: Key + 'static,
    T: DeserializeOwned,
{
    match table.get(&key)? {
        Some(guard) => Ok(Some(decode(name, &key, guard.value())?)),
        None => Ok(None),
    }
}

/// Encodes and writes `value` at `key`.
pub(super) fn put_json<'k, K, T>(
    table: &mut Table<'_, K, Json>,
    name: &'static str,
    key: K::SelfType<'k>,
    value: &T,
) -> Result<(), Fail>
where
    K: Key + 'static,
    T: Serialize + ?Sized,
{
    let text = encode(name, value)?;
    table.insert(key, text.as_str())?;
    Ok(())
}
