//! The level of each MCP tool: the user's override, else the cheap model's classification
//! (cached in the store with a fingerprint of the description and schema, redone when
//! they change), never below the floor of the tool's MCP annotations; core's `classify`
//! combines them. A tool nobody could classify is L4.
//!
//! What it decides: which inputs count (a level set with `evolve mcp level` over one in
//! `[tools.levels]` of `config.toml`, over the classifier), when the cheap model is asked
//! (only for tools without a cached answer for their current fingerprint, all of one
//! server's in one request), and how its reply is read (tolerantly: any JSON the core can
//! repair, levels as `"L3"`, `3` or `{"level": "L3"}`). How the inputs combine is the
//! core's: the classifier reads what the server wrote, so its answer may raise a tool
//! above the floor (L3 without `readOnlyHint: true`, L4 with `destructiveHint: true`,
//! L2 read-only) but never lower it below; only the user's level goes lower. The cache
//! keeps the classifier's own answer, so the floor applies to answers cached before it
//! existed too.

use evolve_core::history::Message;
use evolve_core::json::Value;
use evolve_core::permission::{
    classify, ClassSource, ClassifyInput, Level, ToolClass, DESTRUCTIVE_FLOOR, READ_ONLY_FLOOR,
};
use evolve_core::text::clip_chars;

use crate::cancel::Cancel;
use crate::llm::{ChatModel, ChatRequest, ModelRole};
use crate::mcp_spec::{full_name, McpTool, ServerSpec};
use crate::store::{
    Store, ToolClassRecord, CLASS_BY_CLASSIFIER, CLASS_BY_USER, CLASS_UNCLASSIFIED,
};

/// What classifying needs, and no more: the store that caches levels (and holds the
/// user's `evolve mcp level`), the user's `[tools.levels]`, and the model client whose
/// cheap model classifies.
#[derive(Clone, Copy)]
pub struct Classifier<'a> {
    /// Where classifications are cached.
    pub store: &'a Store,
    /// `[tools.levels]` of the configuration in use.
    pub levels: &'a [(String, Level)],
    /// The model client (asked with the cheap role).
    pub model: &'a dyn ChatModel,
}

/// The class of each of a server's tools, in order. Cached classifications with the same
/// fingerprint are reused; the rest are classified by the cheap model (one request for
/// the server's unclassified tools) and cached; user overrides win. Never fails: what
/// cannot be classified is L4 (`Unclassified`), and the failure is logged.
#[cfg(test)]
pub fn classes(
    rt: &Classifier<'_>,
    spec: &ServerSpec,
    tools: &[McpTool],
    cancel: &Cancel,
) -> Vec<ToolClass> {
    explain(rt, spec, tools, cancel)
        .into_iter()
        .map(|c| c.class)
        .collect()
}

/// Where a level the user chose was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserLevel {
    /// `evolve mcp level` / `/mcp level` (kept in the store).
    Command,
    /// `[tools.levels]` of `config.toml`.
    ConfigFile,
}

/// A tool's class and the inputs it came from, for `evolve mcp tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// The level and core's source.
    pub class: ToolClass,
    /// The user's level, if any, and where it was set.
    pub user: Option<(Level, UserLevel)>,
    /// The classifier's level (`None`: not classified).
    pub classifier: Option<Level>,
    /// The identity of the definition it was classified for, which a grant of a call
    /// of it is bound to ([`crate::mcp::definition`]).
    pub definition: String,
    /// The last change of its definition, if it replaced one (what the person is told).
    pub change: Option<crate::mcp::definition::Change>,
}

impl Classified {
    /// Where the level came from, in words: `user (evolve mcp level)`, `classifier`,
    /// `floor, not read-only (classifier L0)`, `floor, destructive (classifier L1)`,
    /// `read-only, trusted server (classifier L3)`, `unclassified`, …
    pub fn origin(&self) -> String {
        let classifier = match self.classifier {
            Some(level) => format!("classifier {level}"),
            None => "unclassified".to_string(),
        };
        match (self.class.source, self.user) {
            (ClassSource::UserOverride, Some((_, UserLevel::Command))) => {
                "user (evolve mcp level)".to_string()
            }
            (ClassSource::UserOverride, _) => "user (config.toml [tools.levels])".to_string(),
            (ClassSource::Floor, _) => {
                // Each floor is its own level, so the level says which one held.
                let why = match self.class.level {
                    l if l == READ_ONLY_FLOOR => "read-only",
                    l if l == DESTRUCTIVE_FLOOR => "destructive",
                    _ => "not read-only",
                };
                format!("floor, {why} ({classifier})")
            }
            (ClassSource::Annotations, _) => {
                format!("read-only, trusted server ({classifier})")
            }
            (ClassSource::Classifier, _) => "classifier".to_string(),
            (ClassSource::Unclassified, _) => "unclassified".to_string(),
            (ClassSource::BuiltIn, _) => "built-in".to_string(),
        }
    }
}

/// [`classes`] with the inputs of each level.
pub fn explain(
    rt: &Classifier<'_>,
    spec: &ServerSpec,
    tools: &[McpTool],
    cancel: &Cancel,
) -> Vec<Classified> {
    let names: Vec<String> = tools
        .iter()
        .map(|t| full_name(&spec.name, &t.name))
        .collect();
    let fingerprints: Vec<u64> = tools.iter().map(fingerprint).collect();
    let mut observed = crate::mcp::definition::observe(rt.store, &spec.name, tools, now());
    let mut records: Vec<Option<ToolClassRecord>> = names
        .iter()
        .map(|name| {
            rt.store.tool_class(name).unwrap_or_else(|e| {
                log::warn!("the cached level of MCP tool {name} cannot be read: {e}");
                None
            })
        })
        .collect();

    let mut user: Vec<Option<(Level, UserLevel)>> = Vec::with_capacity(tools.len());
    let mut classifier: Vec<Option<Level>> = Vec::with_capacity(tools.len());
    let mut to_ask: Vec<usize> = Vec::new();
    // `[tools.levels]` may name a tool the server's way or the model's (a name with `.`
    // or `/` is offered as another).
    let raw: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let models = crate::mcp_spec::model_names(&spec.name, &raw);
    for (i, name) in names.iter().enumerate() {
        if let Some(r) = records[i].as_mut().filter(|r| r.source == CLASS_BY_USER) {
            if !bind_user_level(rt.store, name, r, &mut observed[i]) {
                records[i] = None;
            }
        }
        let record = records[i].as_ref();
        let from_command = record
            .filter(|r| r.source == CLASS_BY_USER)
            .map(|r| (r.level, UserLevel::Command));
        let from_file = rt
            .levels
            .iter()
            .find(|(t, _)| t == name)
            .or_else(|| {
                let model = models[i].as_deref()?;
                rt.levels.iter().find(|(t, _)| t == model)
            })
            .map(|(_, l)| (*l, UserLevel::ConfigFile));
        let chosen = from_command.or(from_file);
        user.push(chosen);
        let cached = record.filter(|r| r.fingerprint == fingerprints[i]);
        match cached.map(|r| r.source.as_str()) {
            Some(CLASS_BY_CLASSIFIER) => classifier.push(cached.map(|r| r.level)),
            // The classifier gave no level last time: asked again once that is old.
            Some(CLASS_UNCLASSIFIED)
                if cached.is_some_and(|r| now().saturating_sub(r.at) < RETRY_UNCLASSIFIED) =>
            {
                classifier.push(None)
            }
            // A level the user chose needs no classification; anything else is asked.
            _ if chosen.is_some() => classifier.push(None),
            _ => {
                classifier.push(None);
                to_ask.push(i);
            }
        }
    }

    if !to_ask.is_empty() {
        let asked: Vec<&McpTool> = to_ask.iter().map(|&i| &tools[i]).collect();
        if let Some(levels) = ask_classifier(rt, &spec.name, &asked, cancel) {
            let now = now();
            let mut fresh = Vec::with_capacity(to_ask.len());
            for (&i, level) in to_ask.iter().zip(levels) {
                classifier[i] = level;
                // A user level set meanwhile is never overwritten.
                if records[i]
                    .as_ref()
                    .is_some_and(|r| r.source == CLASS_BY_USER)
                {
                    continue;
                }
                fresh.push((
                    names[i].clone(),
                    ToolClassRecord {
                        level: level.unwrap_or(evolve_core::permission::UNCLASSIFIED_LEVEL),
                        fingerprint: fingerprints[i],
                        definition: None,
                        source: if level.is_some() {
                            CLASS_BY_CLASSIFIER
                        } else {
                            CLASS_UNCLASSIFIED
                        }
                        .to_string(),
                        at: now,
                    },
                ));
            }
            if let Err(e) = rt.store.set_tool_classes(&fresh) {
                log::warn!(
                    "the levels of the tools of MCP server {:?} cannot be cached: {e}",
                    spec.name
                );
            }
        }
    }

    tools
        .iter()
        .zip(observed)
        .enumerate()
        .map(|(i, (tool, seen))| {
            let mut c = combine(tool, spec, user[i], classifier[i]);
            c.definition = seen.key;
            c.change = seen.change;
            c
        })
        .collect()
}

/// Whether the level the user set for `name` applies to the definition `seen`: one set
/// for it does; one set before levels were bound to definitions (or before the tool was
/// ever listed) is bound to it now; one set for another definition no longer applies —
/// it is removed (the tool is classified again) and the change keeps it to say so.
fn bind_user_level(
    store: &Store,
    name: &str,
    record: &mut ToolClassRecord,
    seen: &mut crate::mcp::definition::Observed,
) -> bool {
    match record.definition.as_deref() {
        Some(key) if key == seen.key => true,
        None => {
            record.definition = Some(seen.key.clone());
            log::info!(
                "the level {} you set for MCP tool {name} now holds for its current \
                 definition only (a change of its description, schema or annotations drops it)",
                record.level
            );
            if let Err(e) = store.set_tool_class(name, record) {
                log::warn!("the level of MCP tool {name} cannot be bound to its definition: {e}");
            }
            true
        }
        Some(_) => {
            log::warn!(
                "MCP tool {name} changed its definition since you set its level {}: that \
                 level no longer applies and the tool is classified again (set it again with \
                 `evolve mcp level {name} {}` if the new definition deserves it)",
                record.level,
                record.level
            );
            if let Err(e) = store.remove_tool_class(name) {
                log::warn!("the stale level of MCP tool {name} cannot be removed: {e}");
            }
            crate::mcp::definition::note_dropped_level(store, name, record.level);
            if let Some(change) = seen.change.as_mut() {
                change.dropped_level = Some(record.level);
            } else {
                seen.change = Some(crate::mcp::definition::Change {
                    parts: Vec::new(),
                    at: now(),
                    before: String::new(),
                    dropped_level: Some(record.level),
                });
            }
            false
        }
    }
}

/// Core's rule over what was found for one tool.
fn combine(
    tool: &McpTool,
    spec: &ServerSpec,
    user: Option<(Level, UserLevel)>,
    classifier: Option<Level>,
) -> Classified {
    let class = classify(&ClassifyInput {
        builtin: None,
        user_override: user.map(|(l, _)| l),
        classifier,
        annotations: tool.annotations,
        trusted_server: spec.trusted,
    });
    Classified {
        class,
        user,
        classifier,
        definition: String::new(),
        change: None,
    }
}

/// A tool the classifier gave no level is asked about again after this many seconds
/// (not at every step of a turn), or at once after `evolve mcp level TOOL auto`.
const RETRY_UNCLASSIFIED: i64 = 3600;

/// At most this many characters of a tool's description go to the classifier.
const DESCRIPTION_CHARS: usize = 600;
/// At most this many characters of a tool's schema go to the classifier.
const SCHEMA_CHARS: usize = 1200;

/// The marker of the classification of MCP tools (the tests' fake server routes on it).
pub const CLASSIFY_MARKER: &str = "[evolve:classify]";

/// What each level covers, with examples (ARCHITECTURE.md § Permission levels), for the
/// classifier; the meanings themselves are the core's (`Level::meaning`).
const LEVEL_EXAMPLES: [&str; 6] = [
    "touches nothing: pure computation on its arguments (arithmetic, formatting, echo)",
    "reads public information only (web search, weather, public documentation, the time)",
    "reads private information without changing it (local files, local status, a \
     read-only database query)",
    "changes something in a way that can be undone (create or edit a file, a draft, open \
     a page, a test request)",
    "acts where it cannot be taken back or where others see it (send mail or messages, \
     submit forms, write a database, git push, delete a file)",
    "dangerous (mass deletion, running arbitrary commands or code, reading secrets or \
     credentials, any path on the machine)",
];

/// The system prompt of the classification of one server's tools: the L0–L5 table and
/// the reply format (a JSON object, tool name → level).
pub fn classify_prompt() -> String {
    let mut table = String::new();
    for (level, example) in Level::ALL.iter().zip(LEVEL_EXAMPLES) {
        table.push_str(&format!("{level} {}: {example}\n", level.meaning()));
    }
    format!(
        "{CLASSIFY_MARKER} You classify the tools of an MCP server by risk, for a personal \
         assistant that runs them on its user's machine. The levels:\n{table}\
         Judge each tool by the worst it can do with any arguments its schema allows, not by \
         its intended use. The hints (readOnlyHint, destructiveHint, openWorldHint) come \
         from the server and may be wrong. When unsure between two levels, choose the \
         higher. Reply with JSON only: an object with every tool's name as a key and its \
         level as the value, e.g. {{\"read_file\": \"L2\", \"send_email\": \"L4\"}}."
    )
}

/// One cheap-model request for these tools; per tool its level, `None` where the reply
/// had none. `None` altogether when the call failed (nothing is cached: it is tried
/// again next time).
fn ask_classifier(
    rt: &Classifier<'_>,
    server: &str,
    tools: &[&McpTool],
    cancel: &Cancel,
) -> Option<Vec<Option<Level>>> {
    let system = classify_prompt();
    let user = describe_tools(server, tools);
    // About 12 tokens per `"name": "L3",` and room for the braces.
    let max_tokens = (64 + 16 * tools.len()).clamp(256, 4096) as u32;
    let req = ChatRequest {
        known_tools: Vec::new(),
        role: ModelRole::Cheap,
        messages: vec![Message::system(&system), Message::user(&user)],
        tools: Vec::new(),
        stream: false,
        max_tokens: Some(max_tokens),
        temperature: Some(0.2),
        json: true,
        tool_choice: None,
    };
    let reply = match rt.model.chat(&req, &mut |_| {}, cancel) {
        Ok(resp) => resp.message.content,
        Err(e) => {
            log::warn!(
                "the tools of MCP server {server:?} could not be classified \
                 ({CLASSIFY_MARKER} call failed: {e}): they are L4 until they are"
            );
            return None;
        }
    };
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let levels = parse_levels(&reply, server, &names);
    let missing: Vec<&str> = names
        .iter()
        .zip(&levels)
        .filter(|(_, l)| l.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        log::warn!(
            "the cheap model gave no usable level for {} of MCP server {server:?}: L4 \
             (unclassified) — set one with `evolve mcp level {server}__TOOL L0-L5`",
            missing.join(", ")
        );
    }
    Some(levels)
}

/// The user message of the classification: each tool's name, description, schema and
/// hints.
fn describe_tools(server: &str, tools: &[&McpTool]) -> String {
    let mut out = format!("MCP server: {server}\nTools ({}):\n", tools.len());
    for tool in tools {
        out.push_str(&format!("\n- name: {}\n", tool.name));
        let description = tool.description.trim();
        if !description.is_empty() {
            out.push_str(&format!(
                "  description: {}\n",
                clip_chars(description, DESCRIPTION_CHARS)
            ));
        }
        out.push_str(&format!(
            "  arguments schema: {}\n",
            clip_chars(tool.input_schema.trim(), SCHEMA_CHARS)
        ));
        let a = tool.annotations;
        let hints: Vec<String> = [
            ("readOnlyHint", a.read_only_hint),
            ("destructiveHint", a.destructive_hint),
            ("openWorldHint", a.open_world_hint),
        ]
        .iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name}={v}")))
        .collect();
        if !hints.is_empty() {
            out.push_str(&format!("  hints: {}\n", hints.join(", ")));
        }
    }
    out
}

/// The level of each of `names` in the model's reply; `None` where it gave none. Read
/// tolerantly: `{"tool": "L3"}`, with the levels as `"L3"`, `"l3"`, `3`, `"L3 (side
/// effects)"` or `{"level": "L3"}`; the object may sit under `tools`, `levels` or
/// `classification`, or be a list of `{"name", "level"}`; names may carry the server's
/// prefix or differ in case.
pub fn parse_levels(reply: &str, server: &str, names: &[&str]) -> Vec<Option<Level>> {
    let Ok(doc) = evolve_core::json::extract(reply) else {
        return vec![None; names.len()];
    };
    let mut pairs: Vec<(String, Level)> = Vec::new();
    collect_pairs(&doc, &mut pairs, 0);
    let prefix = full_name(server, "");
    names
        .iter()
        .map(|name| {
            let matches = |key: &str| {
                let key = key.trim();
                let key = key.strip_prefix(prefix.as_str()).unwrap_or(key);
                key == *name || key.eq_ignore_ascii_case(name)
            };
            pairs
                .iter()
                .find(|(k, _)| k.trim() == *name)
                .or_else(|| pairs.iter().find(|(k, _)| matches(k)))
                .map(|(_, l)| *l)
        })
        .collect()
}

/// Every `name → level` found in `v`, looking into wrappers a few levels deep.
fn collect_pairs(v: &Value, out: &mut Vec<(String, Level)>, depth: usize) {
    if depth > 3 {
        return;
    }
    match v {
        Value::Object(entries) => {
            for (key, value) in entries {
                match level_of(value) {
                    Some(level) => out.push((key.clone(), level)),
                    None => collect_pairs(value, out, depth + 1),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                let name = item
                    .get("name")
                    .or_else(|| item.get("tool"))
                    .and_then(Value::as_str);
                match (name, item.get("level").and_then(level_of)) {
                    (Some(name), Some(level)) => out.push((name.to_string(), level)),
                    _ => collect_pairs(item, out, depth + 1),
                }
            }
        }
        _ => {}
    }
}

/// A level written as `"L3"`, `"3"`, `3`, `"L3 - side effects"` or `{"level": …}`.
fn level_of(v: &Value) -> Option<Level> {
    match v {
        Value::String(s) => Level::parse(s).or_else(|| {
            let first = s
                .trim()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()?;
            Level::parse(first)
        }),
        Value::Number(n) => n
            .as_i64()
            .and_then(|i| u8::try_from(i).ok())
            .and_then(Level::from_u8),
        Value::Object(_) => v.get("level").and_then(level_of),
        _ => None,
    }
}

/// The fingerprint of what the classification was made from: the tool's name and its
/// definition as [`crate::mcp::definition`] reads it (description, canonical input schema,
/// annotations), the first 64 bits of their SHA-256. A server cannot craft another
/// definition that keeps a cached level (as it could with a non-cryptographic hash),
/// and a schema only reformatted is not classified again.
pub fn fingerprint(tool: &McpTool) -> u64 {
    crate::mcp::definition::fingerprint(tool)
}

use crate::clock::now;

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
