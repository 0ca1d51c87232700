//! What an MCP tool says it is, and whether that changed since the person decided about
//! it. A server may answer `tools/list` anew at any time (after `list_changed`, after a
//! restart), and the same name may then describe another tool: "shows a note" becomes
//! "deletes every note and uploads the folder", with a new argument. Everything a person
//! decided about the tool — an "always" in a session, a level set with `evolve mcp
//! level` — and the cheap model's classification hold for the definition they were made
//! for, and for no other.
//!
//! What it decides:
//! - **What counts** ([`Parts::of`]): the description (trimmed), the input schema as
//!   canonical JSON ([`canonical_json`]: keys sorted, no whitespace, so a server that
//!   reorders keys or reformats changes nothing) and the annotations evolve reads
//!   (`readOnlyHint`, `destructiveHint`, `openWorldHint`; the others bear on no
//!   decision). The name is the key under which all of it is kept. Each part is the
//!   first 64 bits of its SHA-256 (ring), as hex: a server would need some 2^64 tries
//!   to find another text with the same part.
//! - **When a definition is new** ([`observe`]): the parts differ from the ones kept
//!   for the tool. Each definition seen (the first, and each change) gets a fresh random
//!   `seen` tag, so a definition that changes and comes back is a new one: what was
//!   allowed for it before a change is not allowed again by changing back.
//! - **The identity** ([`Observed::key`], `PARTS.SEEN`): what grants and user levels
//!   are bound to. Core compares it as an opaque string (`check_defined_call`); it
//!   never reads it.
//! - **What to tell the person** ([`Change`], [`notice`]): which parts changed, when,
//!   the description before, and a level of theirs the change dropped.
//!
//! What it leaves to others: keeping the records (the store's `mcp_definitions`),
//! dropping a stale user level and classifying again (`agents::mcp_levels::classify`), and showing
//! the notice (chat, the web UI, `evolve mcp tools`).

use evolve_core::permission::Level;
use evolve_core::text::clip_chars;
use evolve_core::Timestamp;
use serde_json::{json, Value};

use crate::mcp_spec::{full_name, McpTool};
use crate::store::{Store, StoreError};

/// The fingerprints of the parts of a tool's definition, each 16 hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    pub description: String,
    pub schema: String,
    pub annotations: String,
}

/// One part of a definition, as the person reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Description,
    InputSchema,
    Annotations,
}

impl Part {
    /// `description`, `input schema`, `annotations`.
    pub fn label(self) -> &'static str {
        match self {
            Part::Description => "description",
            Part::InputSchema => "input schema",
            Part::Annotations => "annotations",
        }
    }

    const ALL: [Part; 3] = [Part::Description, Part::InputSchema, Part::Annotations];

    fn from_label(label: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.label() == label)
    }
}

impl Parts {
    /// The fingerprints of `tool`'s definition.
    pub fn of(tool: &McpTool) -> Parts {
        Parts {
            description: hash(tool.description.trim()),
            schema: hash(&canonical_json(&tool.input_schema)),
            annotations: hash(&annotations_text(tool)),
        }
    }

    /// The parts that differ, in reading order.
    pub fn changed(&self, other: &Parts) -> Vec<Part> {
        let mut out = Vec::new();
        if self.description != other.description {
            out.push(Part::Description);
        }
        if self.schema != other.schema {
            out.push(Part::InputSchema);
        }
        if self.annotations != other.annotations {
            out.push(Part::Annotations);
        }
        out
    }

    /// The whole definition as one text (the classifier's cache is keyed by it).
    pub fn joined(&self) -> String {
        format!("{}{}{}", self.description, self.schema, self.annotations)
    }
}

/// The classifier's cache key for `tool`: its name and [`Parts`], as 64 bits of SHA-256.
pub fn fingerprint(tool: &McpTool) -> u64 {
    let text = format!("{}\n{}", tool.name, Parts::of(tool).joined());
    u64::from_str_radix(&hash(&text), 16).unwrap_or_default()
}

/// The first 64 bits of the SHA-256 of `text`, as 16 hex digits.
fn hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hints evolve reads, in a fixed order (`-` for one the server did not give).
fn annotations_text(tool: &McpTool) -> String {
    let hint = |h: Option<bool>| match h {
        None => "-",
        Some(true) => "true",
        Some(false) => "false",
    };
    let a = tool.annotations;
    format!(
        "readOnlyHint={},destructiveHint={},openWorldHint={}",
        hint(a.read_only_hint),
        hint(a.destructive_hint),
        hint(a.open_world_hint)
    )
}

/// A JSON text in one canonical form: object keys sorted, no whitespace, strings and
/// numbers as serde_json writes them. serde_json is built without `preserve_order`, so
/// its objects are sorted maps and writing a parsed value back is that form (the unit
/// test below fails if a dependency ever turns the feature on). Text that is not JSON
/// is kept as it is (trimmed): it still has a fingerprint, just not a canonical one.
pub fn canonical_json(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => v.to_string(),
        Err(_) => text.trim().to_string(),
    }
}

/// What the store keeps of a tool's definition: its parts as last seen, the tag of
/// that sighting, and the change that led to it. Kept as a JSON object written and
/// read by hand ([`DefinitionRecord::to_json`]), like the store's other small records
/// whose derived serde code would cost the binary more than the rest of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionRecord {
    pub parts: Parts,
    /// Its description (at most 200 characters), to say what it was once it changes.
    pub description: String,
    /// Random, new whenever the parts are first seen or change (8 hex digits).
    pub seen: String,
    /// When this definition was first seen.
    pub since: Timestamp,
    /// How it differs from the definition before, if it replaced one.
    pub change: Option<Change>,
}

impl DefinitionRecord {
    /// The stored object.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "parts": [self.parts.description, self.parts.schema, self.parts.annotations],
            "description": self.description,
            "seen": self.seen,
            "since": self.since,
        });
        if let Some(c) = &self.change {
            v["change"] = json!({
                "parts": c.parts.iter().map(|p| p.label()).collect::<Vec<_>>(),
                "at": c.at,
                "before": c.before,
                "dropped_level": c.dropped_level.map(Level::name),
            });
        }
        v
    }

    /// From the stored object; `None` when it is not one (the tool is then seen anew).
    pub fn from_json(v: &Value) -> Option<DefinitionRecord> {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let parts: Vec<String> = v
            .get("parts")?
            .as_array()?
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        let [description, schema, annotations] = <[String; 3]>::try_from(parts).ok()?;
        let change = v.get("change").filter(|c| c.is_object()).map(|c| Change {
            parts: c
                .get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.as_str().and_then(Part::from_label))
                .collect(),
            at: c.get("at").and_then(Value::as_i64).unwrap_or_default(),
            before: text(c, "before").unwrap_or_default(),
            dropped_level: c
                .get("dropped_level")
                .and_then(Value::as_str)
                .and_then(Level::parse),
        });
        Some(DefinitionRecord {
            parts: Parts {
                description,
                schema,
                annotations,
            },
            description: text(v, "description").unwrap_or_default(),
            seen: text(v, "seen")?,
            since: v.get("since").and_then(Value::as_i64).unwrap_or_default(),
            change,
        })
    }

    /// What grants and user levels are bound to: `PARTS.SEEN`.
    pub fn key(&self) -> String {
        format!("{}.{}", self.parts.joined(), self.seen)
    }
}

/// A change of a tool's definition, for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What differs from the definition before (empty: it changed and came back).
    pub parts: Vec<Part>,
    /// When it was seen.
    pub at: Timestamp,
    /// The description before the change (at most 200 characters).
    pub before: String,
    /// A level the person set (`evolve mcp level`) that stopped applying with it.
    pub dropped_level: Option<Level>,
}

/// Characters of the previous description kept for the notice.
const BEFORE_CHARS: usize = 200;

impl Change {
    /// `description, input schema` (`definition` when the parts are not known: a level
    /// found bound to a definition no longer kept).
    pub fn what(&self) -> String {
        if self.parts.is_empty() {
            "definition".to_string()
        } else {
            self.parts
                .iter()
                .map(|p| p.label())
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    /// The marker `evolve mcp tools` shows: `changed: description, input schema —
    /// grants dropped, classified again` (and the level it dropped).
    pub fn marker(&self) -> String {
        let mut text = format!(
            "changed: {} — grants dropped, classified again",
            self.what()
        );
        if let Some(level) = self.dropped_level {
            text.push_str(&format!(", your level {level} dropped"));
        }
        text
    }

    /// As the API gives it.
    pub fn to_json(&self) -> Value {
        json!({
            "parts": self.parts.iter().map(|p| p.label()).collect::<Vec<_>>(),
            "what": self.what(),
            "at": self.at,
            "before": self.before,
            "dropped_level": self.dropped_level.map(Level::name),
            "marker": self.marker(),
        })
    }
}

/// What the person is told when a call of `tool` is asked about because its definition
/// changed since they allowed it (`granted`: a session grant; `change.dropped_level`: a
/// level of theirs).
pub fn notice(tool: &str, change: &Change, granted: bool) -> String {
    let mut lost = Vec::new();
    if granted {
        lost.push("your \"always\" for it no longer applies".to_string());
    }
    if let Some(level) = change.dropped_level {
        lost.push(format!(
            "the level {level} you set with `evolve mcp level` no longer applies"
        ));
    }
    let before = if change.before.is_empty() {
        String::new()
    } else {
        format!(" (it said: {:?})", change.before)
    };
    format!(
        "MCP tool {tool}: definition changed since you allowed it — {} changed{before}; {}; \
         it was classified again and is asked about again / 定义已变更，之前的允许不再适用，需重新确认",
        change.what(),
        lost.join("; ")
    )
}

/// One tool's definition as observed now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// What grants and levels given now are bound to.
    pub key: String,
    /// The last change of the definition, if it replaced one.
    pub change: Option<Change>,
}

/// Compares each of `server`'s `tools` with the definition kept for it; a new or changed
/// definition is kept (with a fresh tag), the rest is left as it is. A store that cannot
/// be read or written gives every tool a fresh identity (nothing granted before applies).
pub fn observe(store: &Store, server: &str, tools: &[McpTool], now: Timestamp) -> Vec<Observed> {
    let names: Vec<String> = tools.iter().map(|t| full_name(server, &t.name)).collect();
    let kept = read(store, &names).unwrap_or_else(|e| {
        log::warn!("the definitions of the tools of MCP server {server:?} cannot be read: {e}");
        vec![None; names.len()]
    });
    let mut fresh: Vec<(String, DefinitionRecord)> = Vec::new();
    let mut out = Vec::with_capacity(tools.len());
    for ((tool, name), kept) in tools.iter().zip(&names).zip(kept) {
        let parts = Parts::of(tool);
        match kept {
            Some(record) if record.parts == parts => out.push(Observed {
                key: record.key(),
                change: record.change,
            }),
            before => {
                let change = before.map(|b| {
                    let change = Change {
                        parts: b.parts.changed(&parts),
                        at: now,
                        before: b.description,
                        dropped_level: None,
                    };
                    log::warn!(
                        "MCP tool {name} changed its definition ({}): what was allowed for it \
                         no longer applies, and it is classified again",
                        change.what()
                    );
                    change
                });
                let record = DefinitionRecord {
                    parts,
                    description: clip_chars(tool.description.trim(), BEFORE_CHARS),
                    seen: tag(),
                    since: now,
                    change,
                };
                out.push(Observed {
                    key: record.key(),
                    change: record.change.clone(),
                });
                fresh.push((name.clone(), record));
            }
        }
    }
    if !fresh.is_empty() {
        if let Err(e) = write(store, &fresh) {
            log::warn!("the definitions of the tools of MCP server {server:?} cannot be kept: {e}");
        }
    }
    out
}

/// A fresh random tag (8 hex digits); from the clock and a counter if the system has no
/// randomness to give (never the same twice in one process either way).
fn tag() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 4];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        bytes = (nanos ^ n.rotate_left(16)).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Records that a change dropped `level`, a level the person set for `tool`.
pub fn note_dropped_level(store: &Store, tool: &str, level: Level) {
    let result = read(store, &[tool.to_string()]).and_then(|mut kept| match kept.pop().flatten() {
        Some(mut record) => {
            let change = record.change.get_or_insert_with(|| Change {
                parts: Vec::new(),
                at: record.since,
                before: String::new(),
                dropped_level: None,
            });
            change.dropped_level = Some(level);
            write(store, &[(tool.to_string(), record)])
        }
        None => Ok(()),
    });
    if let Err(e) = result {
        log::warn!("that the level of MCP tool {tool} was dropped cannot be kept: {e}");
    }
}

/// The records kept for `tools` (full names), in order.
pub fn read(store: &Store, tools: &[String]) -> Result<Vec<Option<DefinitionRecord>>, StoreError> {
    Ok(store
        .mcp_definitions(tools)?
        .into_iter()
        .map(|v| v.as_ref().and_then(DefinitionRecord::from_json))
        .collect())
}

fn write(store: &Store, records: &[(String, DefinitionRecord)]) -> Result<(), StoreError> {
    let docs: Vec<(String, Value)> = records
        .iter()
        .map(|(t, r)| (t.clone(), r.to_json()))
        .collect();
    store.set_mcp_definitions(&docs)
}

/// Forgets that a change dropped a level of `tool` (the person set one again, or chose
/// `auto`): the notice stops saying so.
pub fn forget_dropped_level(store: &Store, tool: &str) {
    let result = read(store, &[tool.to_string()]).and_then(|mut kept| match kept.pop().flatten() {
        Some(mut record)
            if record
                .change
                .as_ref()
                .is_some_and(|c| c.dropped_level.is_some()) =>
        {
            if let Some(change) = record.change.as_mut() {
                change.dropped_level = None;
            }
            write(store, &[(tool.to_string(), record)])
        }
        _ => Ok(()),
    });
    if let Err(e) = result {
        log::warn!("the definition of MCP tool {tool} cannot be updated: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolve_core::permission::Annotations;

    fn tool(description: &str, schema: &str, annotations: Annotations) -> McpTool {
        McpTool {
            name: "show_note".into(),
            description: description.into(),
            input_schema: schema.into(),
            annotations,
            output_schema: None,
        }
    }

    const SCHEMA: &str =
        r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace_at_every_depth() {
        let cases = [
            (r#"{"b":1,"a":2}"#, r#"{"a":2,"b":1}"#),
            (
                "{ \"type\" : \"object\",\n  \"properties\": {\"z\": {\"type\":\"string\"}, \"a\": {}} }",
                r#"{"properties":{"a":{},"z":{"type":"string"}},"type":"object"}"#,
            ),
            // Arrays keep their order; objects inside them are sorted too.
            (r#"[{"y":1,"x":2},3]"#, r#"[{"x":2,"y":1},3]"#),
            (r#""a\u0041""#, r#""aA""#),
            // Not JSON: the text, trimmed.
            ("  not json ", "not json"),
        ];
        for (given, want) in cases {
            assert_eq!(canonical_json(given), want, "{given}");
        }
    }

    #[test]
    fn the_fingerprint_ignores_form_and_sees_every_change_of_meaning() {
        let base = tool("Shows a note.", SCHEMA, Annotations::default());
        let parts = Parts::of(&base);
        assert_eq!(parts.description.len(), 16);
        // A fixed value: a change here makes every kept definition a changed one.
        assert_eq!(
            parts.description,
            hash("Shows a note."),
            "the description's fingerprint is its text's"
        );
        // The same definition in another form: nothing changed.
        let same = [
            tool(
                "  Shows a note.\n",
                r#"{"required":["name"],"properties":{"name":{"type":"string"}},"type":"object"}"#,
                Annotations::default(),
            ),
            tool(
                "Shows a note.",
                "{\n  \"type\": \"object\",\n  \"properties\": { \"name\": { \"type\": \"string\" } },\n  \"required\": [ \"name\" ]\n}",
                Annotations::default(),
            ),
        ];
        for t in &same {
            assert_eq!(Parts::of(t), parts, "{t:?}");
        }
        // (changed tool, what changed)
        let read_only = Annotations {
            read_only_hint: Some(true),
            ..Annotations::default()
        };
        let cases = [
            (
                tool(
                    "Deletes every note and uploads the folder.",
                    SCHEMA,
                    Annotations::default(),
                ),
                vec![Part::Description],
            ),
            (
                tool(
                    "Shows a note.",
                    r#"{"type":"object","properties":{"name":{"type":"string"},"upload_to":{"type":"string"}},"required":["name"]}"#,
                    Annotations::default(),
                ),
                vec![Part::InputSchema],
            ),
            // An array's order is meaning (`required`, `enum`).
            (
                tool(
                    "Shows a note.",
                    r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name","x"]}"#,
                    Annotations::default(),
                ),
                vec![Part::InputSchema],
            ),
            (
                tool("Shows a note.", SCHEMA, read_only),
                vec![Part::Annotations],
            ),
            (
                tool(
                    "Shows a note.",
                    SCHEMA,
                    Annotations {
                        read_only_hint: Some(false),
                        ..Annotations::default()
                    },
                ),
                vec![Part::Annotations],
            ),
            (
                tool(
                    "Shows a note",
                    "{}",
                    Annotations {
                        destructive_hint: Some(true),
                        ..Annotations::default()
                    },
                ),
                vec![Part::Description, Part::InputSchema, Part::Annotations],
            ),
        ];
        for (t, want) in cases {
            assert_eq!(parts.changed(&Parts::of(&t)), want, "{t:?}");
        }
        // A flipped hint is not the same as no hint.
        assert_ne!(Parts::of(&tool("d", "{}", read_only)), {
            Parts::of(&tool(
                "d",
                "{}",
                Annotations {
                    read_only_hint: Some(false),
                    ..Annotations::default()
                },
            ))
        });
    }

    #[test]
    fn records_are_read_back_as_written() {
        let mut record = DefinitionRecord {
            parts: Parts::of(&tool("d", "{}", Annotations::default())),
            description: "Shows a note.".into(),
            seen: "0a1b2c3d".into(),
            since: 7,
            change: None,
        };
        assert_eq!(
            DefinitionRecord::from_json(&record.to_json()),
            Some(record.clone())
        );
        record.change = Some(Change {
            parts: vec![Part::InputSchema, Part::Annotations],
            at: 9,
            before: "Was.".into(),
            dropped_level: Some(Level::L2),
        });
        assert_eq!(
            DefinitionRecord::from_json(&record.to_json()),
            Some(record.clone())
        );
        for bad in [json!(null), json!({}), json!({"parts": ["a"], "seen": "x"})] {
            assert_eq!(DefinitionRecord::from_json(&bad), None, "{bad}");
        }
    }

    #[test]
    fn sha256_is_the_published_one() {
        // SHA-256("abc") = ba7816bf8f01cfea… (FIPS 180-2, appendix B.1).
        assert_eq!(hash("abc"), "ba7816bf8f01cfea");
    }

    #[test]
    fn a_definition_that_changes_and_comes_back_is_a_new_one() {
        let path = crate::store::tests::temp_path("definitions");
        let store = Store::open(&path, &evolve_core::text::FallbackTokenizer).unwrap();
        let a = tool("Shows a note.", SCHEMA, Annotations::default());
        let b = tool("Deletes every note.", SCHEMA, Annotations::default());
        let first = observe(&store, "notes", std::slice::from_ref(&a), 1);
        assert_eq!(first[0].change, None);
        // Seen again unchanged: the same identity, nothing written.
        let again = observe(&store, "notes", std::slice::from_ref(&a), 2);
        assert_eq!(again[0].key, first[0].key);
        let changed = observe(&store, "notes", std::slice::from_ref(&b), 3);
        assert_ne!(changed[0].key, first[0].key);
        let change = changed[0].change.clone().unwrap();
        assert_eq!(change.parts, vec![Part::Description]);
        assert_eq!(change.before, "Shows a note.");
        assert_eq!(change.at, 3);
        assert_eq!(
            change.marker(),
            "changed: description — grants dropped, classified again"
        );
        let back = observe(&store, "notes", std::slice::from_ref(&a), 4);
        assert_ne!(back[0].key, first[0].key, "changing back is a change");
        assert_ne!(back[0].key, changed[0].key);
        // Other servers' tools of the same name are other tools.
        let other = observe(&store, "other", std::slice::from_ref(&a), 5);
        assert_eq!(other[0].change, None);
        note_dropped_level(&store, "notes__show_note", Level::L2);
        let kept = observe(&store, "notes", std::slice::from_ref(&a), 6);
        assert_eq!(kept[0].key, back[0].key);
        assert_eq!(
            kept[0].change.as_ref().unwrap().dropped_level,
            Some(Level::L2)
        );
        drop(store);
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
