//! System-prompt versions and style notes: the agent's self-evolution state. Versions
//! are numbered 1, 2, … and never rewritten; "rollback" only moves the active pointer
//! (`meta.active_prompt`), so every earlier prompt stays inspectable.

use evolve_core::Timestamp;
use redb::ReadableTable;

use super::error::Fail;
use super::schema::*;
use super::{PromptVersion, Store, StoreError};

fn no_version(version: u64) -> String {
    format!("no system prompt version {version} — `evolve prompt list` shows the versions")
}

impl Store {
    /// All prompt versions, oldest first.
    pub fn prompt_versions(&self) -> Result<Vec<PromptVersion>, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(PROMPTS)?;
            let mut out = Vec::new();
            for row in table.iter()? {
                let (key, value) = row?;
                out.push(decode("prompts", &key.value(), value.value())?);
            }
            Ok(out)
        })
    }

    /// The active prompt version (`None` until one is written: the built-in prompt).
    pub fn active_prompt(&self) -> Result<Option<PromptVersion>, StoreError> {
        self.read(|txn| {
            let Some(version) = txn
                .open_table(META)?
                .get(ACTIVE_PROMPT_KEY)?
                .map(|v| v.value())
            else {
                return Ok(None);
            };
            get_json(&txn.open_table(PROMPTS)?, "prompts", version)
        })
    }

    /// Writes a new version and makes it active. Returns its number.
    pub fn add_prompt_version(
        &self,
        text: &str,
        note: &str,
        now: Timestamp,
    ) -> Result<u64, StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(PROMPTS)?;
            let version = match table.last()? {
                Some((k, _)) => k.value() + 1,
                None => 1,
            };
            let record = PromptVersion {
                version,
                text: text.to_string(),
                created_at: now,
                note: note.to_string(),
            };
            put_json(&mut table, "prompts", version, &record)?;
            txn.open_table(META)?.insert(ACTIVE_PROMPT_KEY, version)?;
            Ok(version)
        })
    }

    /// Makes an existing version active.
    pub fn activate_prompt(&self, version: u64) -> Result<(), StoreError> {
        self.write(|txn| {
            if txn.open_table(PROMPTS)?.get(version)?.is_none() {
                return Err(Fail::NotFound(no_version(version)));
            }
            txn.open_table(META)?.insert(ACTIVE_PROMPT_KEY, version)?;
            Ok(())
        })
    }

    /// Goes back to the built-in prompt (`evolve prompt rollback 0`): the stored
    /// versions stay, none is active.
    pub fn activate_builtin_prompt(&self) -> Result<(), StoreError> {
        self.write(|txn| {
            txn.open_table(META)?.remove(ACTIVE_PROMPT_KEY)?;
            Ok(())
        })
    }

    /// The style notes, oldest first.
    pub fn style_notes(&self) -> Result<Vec<String>, StoreError> {
        self.read(|txn| {
            Ok(get_json(
                &txn.open_table(STYLE_NOTES)?,
                "style_notes",
                STYLE_NOTES_KEY,
            )?
            .unwrap_or_default())
        })
    }

    /// Changes the style notes in one write transaction: `f` gets them, oldest first,
    /// and what it leaves is stored (nothing is written when it changed nothing). A
    /// read followed by a separate write could undo a change made in between (a note
    /// learned, the notes cleared).
    pub fn edit_style_notes<R>(
        &self,
        f: impl FnOnce(&mut Vec<String>) -> R,
    ) -> Result<R, StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(STYLE_NOTES)?;
            let before: Vec<String> =
                get_json(&table, "style_notes", STYLE_NOTES_KEY)?.unwrap_or_default();
            let mut notes = before.clone();
            let out = f(&mut notes);
            if notes != before {
                put_json(&mut table, "style_notes", STYLE_NOTES_KEY, &notes)?;
            }
            Ok(out)
        })
    }

    /// Replaces the style notes (tests set them up this way).
    #[cfg(test)]
    pub fn set_style_notes(&self, notes: &[String]) -> Result<(), StoreError> {
        self.write(|txn| {
            put_json(
                &mut txn.open_table(STYLE_NOTES)?,
                "style_notes",
                STYLE_NOTES_KEY,
                notes,
            )
        })
    }
}
