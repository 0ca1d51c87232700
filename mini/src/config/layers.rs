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
/// setting (a profile naming either replaces both of the top level), so are
/// `transcription_api_key` and `transcription_api_key_env`, and an MCP server
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
    for pair in [
        ["api_key", "api_key_env"],
        ["transcription_api_key", "transcription_api_key_env"],
    ] {
        if overlay_model.is_some_and(|m| pair.iter().any(|k| m.contains_key(*k))) {
            if let Some(toml::Value::Table(model)) = base.get_mut("model") {
                for k in pair {
                    model.remove(k);
                }
            }
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

/// A table as TOML text (every table inline, every key quoted), for reading a merged
/// document back with the reader the file went through.
pub(super) fn toml_text(table: &toml::Table) -> String {
    let mut out = String::new();
    for (key, value) in table {
        quoted(&mut out, key);
        out.push_str(" = ");
        toml_value(&mut out, value);
        out.push('\n');
    }
    out
}

fn toml_value(out: &mut String, value: &toml::Value) {
    use std::fmt::Write;
    match value {
        toml::Value::String(s) => quoted(out, s),
        toml::Value::Integer(n) => {
            let _ = write!(out, "{n}");
        }
        toml::Value::Float(x) if x.is_nan() => out.push_str("nan"),
        toml::Value::Float(x) if x.is_infinite() => {
            out.push_str(if *x > 0.0 { "inf" } else { "-inf" })
        }
        toml::Value::Float(x) => {
            let _ = write!(out, "{x:?}");
        }
        toml::Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        toml::Value::Datetime(d) => {
            let _ = write!(out, "{d}");
        }
        toml::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                toml_value(out, item);
            }
            out.push(']');
        }
        toml::Value::Table(t) => {
            out.push('{');
            for (i, (key, item)) in t.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                quoted(out, key);
                out.push_str(" = ");
                toml_value(out, item);
            }
            out.push('}');
        }
    }
}

/// A TOML basic string.
fn quoted(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod text_tests {
    use super::toml_text;

    #[test]
    fn a_merged_table_reads_back_as_the_same_table() {
        let docs = [
            "a = 1\nb = -2.5\nc = true\nd = \"x \\\" \\\\ \\n \\t \\u0001 ü 中\"",
            "[model]\nbase_url = \"http://127.0.0.1:1/v1\"\nmax_tokens = 4096\n[model.prices]\nin = 0.5",
            "[[mcp.list]]\nname = \"x\"\nargs = [\"-y\", \"pkg\"]\n[[mcp.list]]\nname = \"y\"\nenv = {}",
            "f = 1e300\ng = 1.0\nh = inf\ni = -inf\nwhen = 1979-05-27T07:32:00Z\n\"weird key.x\" = 1",
            "empty = []\nnested = [[1, 2], [\"a\"]]\nt = { a = { b = { c = 1 } } }",
        ];
        for doc in docs {
            let table: toml::Table = toml::from_str(doc).unwrap();
            let back: toml::Table = toml::from_str(&toml_text(&table))
                .unwrap_or_else(|e| panic!("{e}\n{}", toml_text(&table)));
            assert_eq!(back, table, "{doc}");
        }
        let nan: toml::Table =
            toml::from_str(&toml_text(&toml::from_str("x = nan").unwrap())).unwrap();
        assert!(nan["x"].as_float().unwrap().is_nan());
    }
}
