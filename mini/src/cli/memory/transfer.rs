//! `evolve memory export` and `import`: the store's memories to a JSON file and back, and
//! importing conversations (ChatGPT's export, plain lists) as memories through the same
//! ingest rules as a turn.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use evolve_core::memory::{content_hash, Memory, MemoryConfig, MemoryId};
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;

use super::rank::{parse_memory_list, read_file};
use super::{embed_new, ExportCmd, ImportCmd};
use crate::cli::app::{self, App};
use crate::cli::write_file;
use crate::error::Error;
use crate::store::{self, Export, Ingested, Store, SCHEMA_VERSION};

pub(super) fn export(c: ExportCmd, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let doc = Export {
        schema_version: SCHEMA_VERSION,
        memories: store.all_memories()?,
        sessions: Vec::new(),
    };
    let text = serde_json::to_string_pretty(&doc).map_err(|source| Error::Encode {
        what: "export",
        source,
    })?;
    match &c.file {
        None => writeln!(std::io::stdout().lock(), "{text}")?,
        Some(path) => {
            write_file(path, &text)?;
            eprintln!(
                "exported {} memories to {}",
                doc.memories.len(),
                path.display()
            );
        }
    }
    Ok(())
}

/// What `memory import` found in a file.
pub(super) enum ImportFile {
    /// An `evolve memory export` (or a full store export): restored with ids kept.
    Export(Export),
    /// Plain records, each with the conversation it is a turn of (if any): added one
    /// by one through the ingest rule, a conversation's turns linked in file order.
    Plain(Vec<Memory>, Vec<Option<String>>),
}

/// The `conversation` of each record of a plain list (bare or under `memories`), in
/// order: a string, or a number written as one.
pub(super) fn conversations(value: &serde_json::Value) -> Vec<Option<String>> {
    let list = value
        .as_array()
        .or_else(|| value.get("memories").and_then(|m| m.as_array()));
    list.map(|records| {
        records
            .iter()
            .map(|r| match r.get("conversation") {
                Some(serde_json::Value::String(s)) if !s.trim().is_empty() => {
                    Some(s.trim().to_string())
                }
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Memories with no text are not memories: dropped from an import (like `memory add ""`
/// is refused), with a count; `conversations` (one per memory, when given) follow.
pub(super) fn drop_empty(
    memories: &mut Vec<Memory>,
    conversations: Option<&mut Vec<Option<String>>>,
) -> usize {
    let before = memories.len();
    if let Some(convs) = conversations {
        convs.resize(memories.len(), None);
        let mut keep = memories.iter().map(|m| !m.content.trim().is_empty());
        convs.retain(|_| keep.next().unwrap_or(false));
    }
    memories.retain(|m| !m.content.trim().is_empty());
    before - memories.len()
}

pub(super) fn read_import(path: &Path) -> Result<ImportFile, Error> {
    let text = read_file(path)?;
    let invalid = |message: String| Error::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not JSON: {e}")))?;
    if value.get("session").is_some() && value.get("messages").is_some() {
        // One session as `evolve sessions export ID --format json` writes it.
        let session: store::SessionExport = serde_json::from_value(value)
            .map_err(|e| invalid(format!("not an evolve session export: {e}")))?;
        return Ok(ImportFile::Export(Export {
            schema_version: SCHEMA_VERSION,
            memories: Vec::new(),
            sessions: vec![session],
        }));
    }
    if value.get("schema_version").is_none() {
        let convs = conversations(&value);
        return parse_memory_list(path, &text).map(|ms| ImportFile::Plain(ms, convs));
    }
    let doc: Export =
        serde_json::from_str(&text).map_err(|e| invalid(format!("not an evolve export: {e}")))?;
    if doc.schema_version > SCHEMA_VERSION {
        return Err(invalid(format!(
            "written by a newer evolve (schema version {}; this one reads up to \
             {SCHEMA_VERSION}) — upgrade evolve to import it",
            doc.schema_version
        )));
    }
    Ok(ImportFile::Export(doc))
}

/// Counts of memories added through the ingest rule.
#[derive(Default)]
pub(super) struct Ingests {
    added: usize,
    merged: usize,
    present: usize,
}

impl Ingests {
    /// Ingests `memories`; those with a conversation (`conversations`, one per memory
    /// when given) are its turns, each linked to the one before it in the file
    /// ([`Store::insert_turn`]): a conversation of an import file is whole, so
    /// importing it again adds nothing.
    fn run(
        &mut self,
        store: &Store,
        memories: Vec<Memory>,
        conversations: &[Option<String>],
        cfg: &MemoryConfig,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Result<(), Error> {
        let mut last: HashMap<String, MemoryId> = HashMap::new();
        for (i, mut m) in memories.into_iter().enumerate() {
            if m.deleted {
                continue;
            }
            m.id = 0;
            // A link in a file names ids of another store: the import sets its own.
            m.prev = None;
            if m.created_at == 0 {
                m.created_at = now;
            }
            let ingested = match conversations.get(i).and_then(Option::as_deref) {
                Some(conversation) => {
                    m.prev = last.get(conversation).copied();
                    let ingested = store.insert_turn(m, tokenizer)?;
                    let (Ingested::Inserted(id) | Ingested::Merged(id) | Ingested::Duplicate(id)) =
                        ingested;
                    last.insert(conversation.to_string(), id);
                    ingested
                }
                None => store.ingest_memory(m, cfg, now, tokenizer)?,
            };
            match ingested {
                Ingested::Inserted(_) => self.added += 1,
                Ingested::Merged(_) => self.merged += 1,
                Ingested::Duplicate(_) => self.present += 1,
            }
        }
        Ok(())
    }

    fn summary(&self) -> String {
        format!(
            "{} added, {} merged into similar ones, {} already present",
            self.added, self.merged, self.present
        )
    }
}

/// Imports a file. An export restores its memories with their ids (and its sessions),
/// except memories whose id is taken by a different memory: those, and plain record
/// lists, go through the ingest rule like `memory add`, so nothing stored is
/// overwritten by a stranger's memory.
pub(super) fn import(c: ImportCmd, profile: &Option<String>) -> Result<(), Error> {
    let mut file = read_import(&c.file)?;
    let empty = match &mut file {
        ImportFile::Plain(memories, convs) => drop_empty(memories, Some(convs)),
        ImportFile::Export(doc) => drop_empty(&mut doc.memories, None),
    };
    if empty > 0 {
        eprintln!("skipped {empty} memories with no text");
    }
    let (app, store) = App::with_store(profile)?;
    let now = app::now();
    let cfg = &app.config.core.memory;
    let mut out = std::io::stdout().lock();
    let name = c.file.display();
    match file {
        ImportFile::Plain(memories, convs) => {
            let mut counts = Ingests::default();
            let total = memories.len();
            counts.run(&store, memories, &convs, cfg, now, &app.tokenizer)?;
            writeln!(
                out,
                "imported {total} memories from {name}: {}",
                counts.summary()
            )?;
        }
        ImportFile::Export(doc) => {
            let stored: HashMap<MemoryId, u64> = store
                .all_memories()?
                .into_iter()
                .map(|m| (m.id, m.content_hash))
                .collect();
            let (restore, clash): (Vec<Memory>, Vec<Memory>) =
                doc.memories.into_iter().partition(|m| {
                    m.id != 0
                        && stored
                            .get(&m.id)
                            .is_none_or(|&h| h == content_hash(&m.content))
                });
            let restore = Export {
                schema_version: doc.schema_version,
                memories: restore,
                sessions: doc.sessions,
            };
            let (memories, sessions) = store.import(&restore, &app.tokenizer)?;
            write!(out, "restored {memories} memories")?;
            if sessions > 0 {
                write!(out, " and {sessions} sessions")?;
            }
            writeln!(out, " from {name} (ids kept)")?;
            if !clash.is_empty() {
                let mut counts = Ingests::default();
                let total = clash.len();
                counts.run(&store, clash, &[], cfg, now, &app.tokenizer)?;
                writeln!(
                    out,
                    "{total} memories whose ids were taken by others: {}",
                    counts.summary()
                )?;
            }
        }
    }
    drop(out);
    embed_new(app, store, usize::MAX);
    Ok(())
}
