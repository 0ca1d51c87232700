//! Reading `config.toml` as TOML: the text (UTF-8 or a message), TOML errors as messages
//! naming the line, the table and the key, and a profile merged over the top level key by
//! key.

use std::path::{Path, PathBuf};

use super::ConfigError;

/// The file's text; `None` when it does not exist.
pub(super) fn read_file(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| ConfigError::Invalid {
                path: path.to_path_buf(),
                key: None,
                message: format!(
                    "the file is not UTF-8 text (byte {}) — save it as UTF-8",
                    e.utf8_error().valid_up_to()
                ),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// A TOML error as a message naming the line, the table and the key.
pub(super) fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
    let mut message = String::new();
    if let Some(span) = e.span() {
        let before = text.get(..span.start).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        message.push_str(&format!("line {line}"));
        if let Some(table) = table_at(text, line) {
            message.push_str(&format!(", in [{table}]"));
        }
        message.push_str(": ");
    }
    let what = e.message().trim().replace("unknown field", "unknown key");
    // Type errors point at the value and do not name the key: take it from the line.
    if !what.starts_with("unknown key") {
        if let Some(key) = e.span().and_then(|span| key_on_line(text, span.start)) {
            message.push_str(&format!("`{key}`: "));
        }
    }
    message.push_str(&what);
    message.push_str(if what.starts_with("unknown key") {
        " — fix the spelling or remove it, then run `evolve config check`"
    } else {
        " — fix the value, then run `evolve config check`"
    });
    ConfigError::Invalid {
        path: path.to_path_buf(),
        key: None,
        message,
    }
}

/// A profile that sets `profile` or `profiles` itself, told as serde tells an unknown
/// key (only the top level has them), with the line when it can be found.
pub(super) fn nested_profile_error(path: PathBuf, text: &str, name: &str) -> ConfigError {
    let table = format!("profiles.{name}");
    let mut offset = 0;
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let key = key_on_line(text, offset);
        offset += line.len() + 1;
        let key = match key.as_deref() {
            Some(k @ ("profile" | "profiles")) => k.to_string(),
            _ => continue,
        };
        if table_at(text, i + 1).as_deref() == Some(table.as_str()) {
            found = Some((i + 1, key));
            break;
        }
    }
    let (place, key) = match found {
        Some((line, key)) => (format!("line {line}, in [{table}]: "), key),
        None => (
            format!("in [{table}]: "),
            "profile` or `profiles".to_string(),
        ),
    };
    ConfigError::Invalid {
        path,
        key: None,
        message: format!(
            "{place}unknown key `{key}` (only the top level names the profile and holds \
             the profiles) — fix the spelling or remove it, then run `evolve config check`"
        ),
    }
}

/// The key of the `key = value` line holding byte `at`, if that line is one.
pub(super) fn key_on_line(text: &str, at: usize) -> Option<String> {
    let start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(start..)?.lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"');
    (!key.is_empty() && key.chars().all(bare)).then(|| key.to_string())
}

/// The table a line belongs to: the last `[header]` above it, or the parent of the
/// header on the line itself (an unknown `[modle]` is a key of the top level).
pub(super) fn table_at(text: &str, line: usize) -> Option<String> {
    let header = |l: &str| -> Option<String> {
        let l = l.trim();
        let inner = l.strip_prefix("[[").or_else(|| l.strip_prefix('['))?;
        let end = inner.find(']')?;
        Some(inner[..end].trim().to_string())
    };
    let mut table = None;
    for (i, l) in text.lines().enumerate() {
        if i + 1 == line {
            if let Some(own) = header(l) {
                return own.rsplit_once('.').map(|(parent, _)| parent.to_string());
            }
            break;
        }
        if let Some(h) = header(l) {
            table = Some(h);
        }
    }
    table
}

/// `[profiles.NAME]` as a table.
pub(super) fn profile_table<'a>(doc: &'a toml::Table, name: &str) -> Option<&'a toml::Table> {
    doc.get("profiles")?.as_table()?.get(name)?.as_table()
}

/// True when the dotted key is set in `table`.
pub(super) fn has_key(table: &toml::Table, keys: &[&str]) -> bool {
    match keys {
        [] => true,
        [last] => table.contains_key(*last),
        [first, rest @ ..] => table
            .get(*first)
            .and_then(toml::Value::as_table)
            .is_some_and(|t| has_key(t, rest)),
    }
}

/// Merges a profile over the top level, key by key; `api_key` and `api_key_env` are one
/// setting (a profile naming either replaces both of the top level), and an MCP server
/// is one setting too (a profile's `[profiles.P.mcp.servers.NAME]` replaces the top
/// level's server NAME as a whole: a `url` in the profile and a `command` in the top
/// level would otherwise make a server that is both).
pub(super) fn merge_layer(base: &mut toml::Table, overlay: &toml::Table) {
    let overlay_servers = overlay
        .get("mcp")
        .and_then(toml::Value::as_table)
        .and_then(|m| m.get("servers"))
        .and_then(toml::Value::as_table);
    if let (Some(names), Some(toml::Value::Table(mcp))) = (overlay_servers, base.get_mut("mcp")) {
        if let Some(toml::Value::Table(servers)) = mcp.get_mut("servers") {
            for name in names.keys() {
                servers.remove(name);
            }
        }
    }
    let overlay_model = overlay.get("model").and_then(toml::Value::as_table);
    if overlay_model.is_some_and(|m| m.contains_key("api_key") || m.contains_key("api_key_env")) {
        if let Some(toml::Value::Table(model)) = base.get_mut("model") {
            model.remove("api_key");
            model.remove("api_key_env");
        }
    }
    merge_tables(base, overlay);
}

pub(super) fn merge_tables(base: &mut toml::Table, overlay: &toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}
