//! The configuration as others may see it: JSON for `config show --json` and the web
//! API, and TOML-like text for `config show`. API keys appear only masked; durations
//! in seconds, as in the file.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{Config, Loaded};

/// A float as JSON with the digits it was written with (`0.7`, not the `0.699999988…`
/// an `f32` widened to `f64` prints as).
fn float(x: f32) -> Value {
    x.to_string()
        .parse::<serde_json::Number>()
        .map_or(Value::Null, Value::Number)
}

fn secs(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        json!(d.as_secs())
    } else {
        json!(d.as_secs_f64())
    }
}

/// Any serialisable value as JSON, floats written as `f32` prints them (the core's
/// settings are `f32`). `Null` if it cannot be serialised, which these types always can.
fn via_text<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null)
}

impl Config {
    /// Every setting as JSON, the API key masked. Keys as in `config.toml`, plus
    /// `home`, `file` and `profile`.
    pub fn to_json(&self) -> Value {
        let m = &self.model;
        let t = &m.timeouts;
        let levels: Map<String, Value> = self
            .tools
            .levels
            .iter()
            .map(|(name, level)| (name.clone(), json!(level.name())))
            .collect();
        json!({
            "home": self.home.display().to_string(),
            "file": self.file.display().to_string(),
            "profile": self.profile,
            "workspace": self.workspace.display().to_string(),
            "log": self.log,
            "model": {
                "base_url": crate::secret::display_url(&m.base_url),
                "base_url_is_default": m.base_url_is_default,
                "api_key": m.api_key.as_ref().map(|k| k.masked()),
                "main": m.main,
                "cheap": m.cheap,
                "embedding_model": m.embedding_model,
                "transcription_model": m.transcription.as_ref().map(|t| &t.model),
                "transcription_base_url": m
                    .transcription
                    .as_ref()
                    .map(|t| crate::secret::display_url(&t.base_url)),
                "transcription_api_key": m
                    .transcription
                    .as_ref()
                    .and_then(|t| t.api_key.as_ref())
                    .map(|k| k.masked()),
                "context_window": m.context_window,
                "reserved_output": m.reserved_output,
                "max_answer_bytes": m.max_answer_bytes,
                "stream": m.stream,
                "temperature": m.temperature.map(float),
                "tools": m.tools.name(),
                "max_retries": m.max_retries,
                "timeouts": {
                    "connect": secs(t.connect),
                    "first_byte": secs(t.first_byte),
                    "per_read": secs(t.per_read),
                    "overall": secs(t.overall),
                },
            },
            "agent": {
                "max_steps": self.agent.max_steps,
                "reflect_every": self.agent.reflect_every,
                "reflect_below": float(self.agent.reflect_below),
                "style_above": float(self.agent.style_above),
                "crystallize_above": float(self.agent.crystallize_above),
                "style_notes_max": self.agent.style_notes_max,
                "background_wait": secs(self.agent.background_wait),
                "learn": self.agent.learn,
                "tool_schemas": self.agent.tool_schemas,
                "turn_line": self.agent.turn_line,
                "titles": self.agent.titles,
                "tool_chain": self.agent.tool_chain,
                "subtasks": self.agent.subtasks,
                "subtask_parallel": self.agent.subtask_parallel,
            },
            "tools": {
                "shell_timeout": secs(self.tools.shell_timeout),
                "shell_idle_stop": secs(self.tools.shell_idle_stop),
                "output_cap": self.tools.output_cap,
                "http_allow_private": self.tools.http_allow_private,
                "http_timeout": secs(self.tools.http_timeout),
                "http_hosts": self.tools.http_hosts,
                "levels": levels,
            },
            "text": {
                "dict_path": self.text.dict_path.as_ref().map(|p| p.display().to_string()),
            },
            "memory": via_text(&self.core.memory),
            "history": via_text(&self.core.history),
            "permission": via_text(&self.core.permission),
            "limits": via_text(&self.limits),
            "mcp": {
                "timeout_secs": secs(self.mcp.timeout),
                "servers": super::mcp::servers_json(&self.mcp.servers),
            },
            "scheduler": {
                "time_zone": self.scheduler.resolve().name,
            },
            "channels": self.channels.to_json(),
        })
    }
}

impl Loaded {
    /// [`Config::to_json`] plus the file's state, the profiles and the origins.
    pub fn to_json(&self) -> Value {
        let mut doc = self.config.to_json();
        if let Value::Object(map) = &mut doc {
            map.insert("file_exists".into(), json!(self.file_exists));
            map.insert("profiles".into(), json!(self.profiles));
            let origins: Map<String, Value> = self
                .origins
                .iter()
                .map(|(k, o)| (k.to_string(), json!(o.to_string())))
                .collect();
            map.insert("origins".into(), Value::Object(origins));
            let ignored: Vec<String> = self
                .config
                .ignored_env
                .iter()
                .map(ToString::to_string)
                .collect();
            map.insert("ignored_env".into(), json!(ignored));
        }
        doc
    }

    /// The effective configuration as TOML-like text, each traced setting followed by
    /// where it came from. Not meant to be pasted back as is (it shows every key).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let c = &self.config;
        let _ = writeln!(
            out,
            "# {} ({}), profile {}",
            c.file.display(),
            if self.file_exists {
                "found"
            } else {
                "not found: defaults"
            },
            c.profile
        );
        if !self.profiles.is_empty() {
            let _ = writeln!(out, "# profiles: {}", self.profiles.join(", "));
        }
        for ignored in &c.ignored_env {
            let _ = writeln!(out, "# {ignored}");
        }
        let mut doc = self.config.to_json();
        if let Value::Object(map) = &mut doc {
            map.remove("file");
            map.remove("profile");
            if let Some(Value::Object(model)) = map.get_mut("model") {
                model.remove("base_url_is_default");
            }
        }
        if let Value::Object(map) = &doc {
            self.write_table(&mut out, "", map);
        }
        out
    }

    fn write_table(&self, out: &mut String, path: &str, map: &Map<String, Value>) {
        for (key, value) in map {
            if value.is_object() && !inline_table(path, key) {
                continue;
            }
            let dotted = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            let line = match value {
                Value::Null => format!("# {} = (not set)", toml_key(key)),
                v => format!("{} = {}", toml_key(key), toml_value(v)),
            };
            let origin = self.origins.iter().find(|(k, _)| *k == dotted);
            match origin {
                Some((_, o)) => {
                    let _ = writeln!(out, "{line:<44} # {o}");
                }
                None => {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        // The model first: it is what people look for; then the file's order.
        let order = |key: &str| SECTION_ORDER.iter().position(|k| *k == key);
        let mut tables: Vec<(&String, &Value)> = map
            .iter()
            .filter(|(k, v)| v.is_object() && !inline_table(path, k))
            .collect();
        tables.sort_by_key(|(k, _)| (order(k).unwrap_or(usize::MAX), k.as_str()));
        for (key, value) in tables {
            if let Value::Object(inner) = value {
                let dotted = if path.is_empty() {
                    toml_key(key)
                } else {
                    format!("{path}.{}", toml_key(key))
                };
                let _ = writeln!(out, "\n[{dotted}]");
                self.write_table(out, &dotted, inner);
            }
        }
    }
}

/// Tables of `config show`, in the order of the template.
const SECTION_ORDER: &[&str] = &[
    "model",
    "timeouts",
    "agent",
    "tools",
    "levels",
    "text",
    "memory",
    "history",
    "permission",
    "mcp",
    "scheduler",
    "channels",
];

/// A server's `env` and `headers` are printed as inline tables, as they are written.
fn inline_table(path: &str, key: &str) -> bool {
    path.starts_with("mcp.servers.") && matches!(key, "env" | "headers")
}

/// A key, quoted when it is not a bare TOML key (MCP tool names can be anything).
fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

/// A value in TOML syntax (JSON strings are valid TOML basic strings).
fn toml_value(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(toml_value).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_key(k), toml_value(v)))
                .collect();
            if inner.is_empty() {
                "{}".to_string()
            } else {
                format!("{{ {} }}", inner.join(", "))
            }
        }
        Value::Null => "\"\"".to_string(),
        other => other.to_string(),
    }
}
