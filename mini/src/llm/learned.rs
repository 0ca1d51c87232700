//! What `[model] tools = "auto"` learned: the models whose server said they have no tool
//! calling, so that they are asked in prompt mode at once — for the rest of the process,
//! and by the next process through a small file in `$EVOLVE_HOME`
//! (`model-tools.json`, 0600).
//!
//! A model is known by its server's URL (without credentials) and its name: the same name
//! on another server may well support tools. The file is read on first use and merged
//! with what is on disk before each write, so processes running side by side add to it
//! rather than overwrite each other's entries (one lost in a race is learned again with
//! one refused request). A file that cannot be read or written is logged and otherwise
//! ignored: the cost is one refused request per process. Forgetting is the user's:
//! delete the file, or set `tools = "native"` to send tools regardless.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Value};

/// The key under which the file lists the models.
const KEY: &str = "models_without_native_tools";

/// The learned models of one client.
pub(super) struct Learned {
    file: Option<PathBuf>,
    /// `None` until the file was read.
    models: Mutex<Option<BTreeSet<(String, String)>>>,
}

impl Learned {
    /// Remembered in `file`, or in memory only.
    pub(super) fn new(file: Option<PathBuf>) -> Learned {
        Learned {
            file,
            models: Mutex::new(None),
        }
    }

    /// Whether `model` at `base_url` is known to have no native tool calling.
    pub(super) fn lacks_tools(&self, base_url: &str, model: &str) -> bool {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let known =
            models.get_or_insert_with(|| self.file.as_deref().map(read).unwrap_or_default());
        known.contains(&(base_url.to_string(), model.to_string()))
    }

    /// Remembers that `model` at `base_url` has no native tool calling.
    pub(super) fn remember(&self, base_url: &str, model: &str) {
        let entry = (base_url.to_string(), model.to_string());
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models
            .get_or_insert_with(BTreeSet::new)
            .insert(entry.clone());
        let Some(file) = &self.file else { return };
        let mut on_disk = read(file);
        if !on_disk.insert(entry) {
            return;
        }
        if let Err(e) = write(file, &on_disk) {
            log::warn!(
                "cannot record in {} that {model} has no tool calling: {e} — the next run asks it with tools once more",
                file.display()
            );
        }
    }
}

/// The models listed in the file; none when it is missing or unreadable (logged).
fn read(file: &Path) -> BTreeSet<(String, String)> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return BTreeSet::new(),
        Err(e) => {
            log::warn!("cannot read {}: {e}", file.display());
            return BTreeSet::new();
        }
    };
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        log::warn!(
            "{} is not JSON; it is written anew when a model refuses tools",
            file.display()
        );
        return BTreeSet::new();
    };
    doc[KEY]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some((
                m["base_url"].as_str()?.to_string(),
                m["model"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Writes the list through a private temporary file renamed over the old one.
fn write(file: &Path, models: &BTreeSet<(String, String)>) -> std::io::Result<()> {
    let list: Vec<Value> = models
        .iter()
        .map(|(base_url, model)| json!({"base_url": base_url, "model": model}))
        .collect();
    let text = serde_json::to_string_pretty(&json!({ KEY: list }))?;
    let tmp = file.with_extension("json.tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    std::io::Write::write_all(&mut opts.open(&tmp)?, format!("{text}\n").as_bytes())?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_learned_model_is_known_to_the_next_client_and_the_file_is_private() {
        let dir = crate::testing::TempDir::new("learned");
        let file = dir.path().join("model-tools.json");
        let first = Learned::new(Some(file.clone()));
        assert!(!first.lacks_tools("http://h/v1", "small"));
        first.remember("http://h/v1", "small");
        assert!(first.lacks_tools("http://h/v1", "small"));
        assert!(!first.lacks_tools("http://other/v1", "small"));
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let next = Learned::new(Some(file.clone()));
        assert!(next.lacks_tools("http://h/v1", "small"));
        // A second process adds to the file rather than replacing it.
        let other = Learned::new(Some(file.clone()));
        other.remember("http://h/v1", "tiny");
        let last = Learned::new(Some(file));
        assert!(last.lacks_tools("http://h/v1", "small"));
        assert!(last.lacks_tools("http://h/v1", "tiny"));
    }

    #[test]
    fn a_damaged_file_or_none_at_all_leaves_it_in_memory() {
        let dir = crate::testing::TempDir::new("learned-bad");
        let file = dir.path().join("model-tools.json");
        std::fs::write(&file, "not json").unwrap();
        let learned = Learned::new(Some(file));
        assert!(!learned.lacks_tools("u", "m"));
        learned.remember("u", "m");
        assert!(learned.lacks_tools("u", "m"));
        let memory = Learned::new(None);
        memory.remember("u", "m");
        assert!(memory.lacks_tools("u", "m"));
    }
}
