//! Elicitation: a server asking the person for input in the middle of a call
//! (`elicitation/create`, form mode). Evolve never lets the model answer: the request
//! goes to the front end of the turn whose call is running — a form in the web UI,
//! prompts in chat — and a headless run declines.
//!
//! This module reads the request ([`Elicitation::parse`]: the message and the flat
//! object schema the protocol allows — strings with length and format, numbers and
//! integers with bounds, booleans, single and multiple choice), checks what a person
//! gave against it ([`Elicitation::check`], the one check every front end and the API
//! use) and writes the result the server gets ([`ElicitReply::result`]).

use serde_json::{json, Map, Value};

/// At most this many fields are asked for (a schema is meant to be a short form).
const MAX_FIELDS: usize = 32;

/// One request for input.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server's name.
    pub server: String,
    /// What the server says it needs (one paragraph, controls escaped).
    pub message: String,
    pub fields: Vec<Field>,
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The key in the content.
    pub name: String,
    /// What to show: the title, else the name.
    pub title: String,
    pub description: Option<String>,
    pub kind: Kind,
    pub required: bool,
    /// The schema's default, shown and taken when the person gives nothing.
    pub default: Option<Value>,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
        /// `email`, `uri`, `date` or `date-time`.
        format: Option<String>,
    },
    Number {
        integer: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// One of these values (with their titles).
    Choice(Vec<(String, String)>),
    /// Any of these values.
    Multi(Vec<(String, String)>),
}

/// What the person did.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitReply {
    /// Gave this content (checked against the form).
    Accept(Map<String, Value>),
    /// Said no.
    Decline,
    /// Did not answer (closed the form, Ctrl-C, went away, the wait ran out).
    Cancel,
}

impl ElicitReply {
    /// The result of `elicitation/create`.
    pub fn result(&self) -> Value {
        match self {
            ElicitReply::Accept(content) => json!({"action": "accept", "content": content}),
            ElicitReply::Decline => json!({"action": "decline"}),
            ElicitReply::Cancel => json!({"action": "cancel"}),
        }
    }

    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitReply::Accept(_) => "accept",
            ElicitReply::Decline => "decline",
            ElicitReply::Cancel => "cancel",
        }
    }
}

fn shown(text: &str, max: usize) -> String {
    evolve_core::text::escape_controls(&evolve_core::text::clip_chars(text, max), true)
}

fn options(values: &[Value], titles: Option<&Vec<Value>>) -> Vec<(String, String)> {
    values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let value = v.as_str()?.to_string();
            let title = titles
                .and_then(|t| t.get(i))
                .and_then(Value::as_str)
                .map_or_else(|| value.clone(), |t| shown(t, 100));
            Some((value, title))
        })
        .collect()
}

/// `oneOf`/`anyOf` of `{"const": …, "title": …}`, the titled form of an enum.
fn titled(list: &[Value]) -> Vec<(String, String)> {
    list.iter()
        .filter_map(|o| {
            let value = o["const"].as_str()?.to_string();
            let title = o["title"]
                .as_str()
                .map_or_else(|| value.clone(), |t| shown(t, 100));
            Some((value, title))
        })
        .collect()
}

fn kind(schema: &Value) -> Result<Kind, String> {
    let n = |k: &str| schema[k].as_f64();
    let u = |k: &str| schema[k].as_u64();
    if let Some(values) = schema["enum"].as_array() {
        return Ok(Kind::Choice(options(
            values,
            schema["enumNames"].as_array(),
        )));
    }
    if let Some(list) = schema["oneOf"].as_array() {
        return Ok(Kind::Choice(titled(list)));
    }
    match schema["type"].as_str() {
        Some("string") | None => Ok(Kind::Text {
            min: u("minLength"),
            max: u("maxLength"),
            format: schema["format"].as_str().map(str::to_string),
        }),
        Some("number") => Ok(Kind::Number {
            integer: false,
            min: n("minimum"),
            max: n("maximum"),
        }),
        Some("integer") => Ok(Kind::Number {
            integer: true,
            min: n("minimum"),
            max: n("maximum"),
        }),
        Some("boolean") => Ok(Kind::Boolean),
        Some("array") => {
            let items = &schema["items"];
            let list = match (items["enum"].as_array(), items["anyOf"].as_array()) {
                (Some(values), _) => options(values, None),
                (None, Some(list)) => titled(list),
                _ => return Err("a list field without choices".into()),
            };
            Ok(Kind::Multi(list))
        }
        Some(other) => Err(format!("a field of type {other:?}")),
    }
}

impl Elicitation {
    /// Reads `elicitation/create`'s params; `Err` says why it cannot be asked (a URL
    /// request, a schema that is not a flat object of the allowed kinds).
    pub fn parse(server: &str, params: &Value) -> Result<Elicitation, String> {
        if params["mode"].as_str().is_some_and(|m| m != "form") {
            return Err(format!(
                "evolve answers form requests only, not {:?}",
                params["mode"].as_str().unwrap_or_default()
            ));
        }
        let message = shown(params["message"].as_str().unwrap_or_default(), 2000);
        let schema = &params["requestedSchema"];
        let properties = match &schema["properties"] {
            Value::Object(p) => p.clone(),
            Value::Null => Map::new(),
            _ => return Err("requestedSchema has no properties object".into()),
        };
        if properties.len() > MAX_FIELDS {
            return Err(format!("more than {MAX_FIELDS} fields"));
        }
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (name, field) in &properties {
            let kind = kind(field).map_err(|e| format!("field {name:?}: {e}"))?;
            fields.push(Field {
                name: name.clone(),
                title: field["title"]
                    .as_str()
                    .map_or_else(|| shown(name, 100), |t| shown(t, 100)),
                description: field["description"].as_str().map(|d| shown(d, 300)),
                kind,
                required: required.contains(&name.as_str()),
                default: field.get("default").filter(|d| !d.is_null()).cloned(),
            });
        }
        // The schema's order is not kept by the JSON reader: what must be answered
        // first, then the rest, each by name.
        fields.sort_by_key(|f| !f.required);
        Ok(Elicitation {
            server: server.to_string(),
            message,
            fields,
        })
    }

    /// Checks content against the form: every required field there (a missing one
    /// takes its default when it has one), each of its kind; unknown keys dropped.
    /// `Err` names each field that is wrong, in the person's terms.
    pub fn check(
        &self,
        content: &Map<String, Value>,
    ) -> Result<Map<String, Value>, Vec<(String, String)>> {
        let mut out = Map::new();
        let mut wrong = Vec::new();
        for f in &self.fields {
            let given = content.get(&f.name).filter(|v| !v.is_null() && *v != "");
            let value = match (given, &f.default) {
                (Some(v), _) => v.clone(),
                (None, Some(d)) => d.clone(),
                (None, None) if f.required => {
                    wrong.push((f.name.clone(), "is required".to_string()));
                    continue;
                }
                (None, None) => continue,
            };
            match f.value(&value) {
                Ok(v) => {
                    out.insert(f.name.clone(), v);
                }
                Err(e) => wrong.push((f.name.clone(), e)),
            }
        }
        if wrong.is_empty() {
            Ok(out)
        } else {
            Err(wrong)
        }
    }

    /// As JSON for the web UI and the API.
    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> = self
            .fields
            .iter()
            .map(|f| {
                let mut v = json!({
                    "name": f.name,
                    "title": f.title,
                    "description": f.description,
                    "required": f.required,
                    "default": f.default,
                });
                let (kind, extra) = match &f.kind {
                    Kind::Text { min, max, format } => (
                        "text",
                        json!({"min_length": min, "max_length": max, "format": format}),
                    ),
                    Kind::Number { integer, min, max } => (
                        if *integer { "integer" } else { "number" },
                        json!({"minimum": min, "maximum": max}),
                    ),
                    Kind::Boolean => ("boolean", json!({})),
                    Kind::Choice(o) => ("choice", json!({"options": pairs(o)})),
                    Kind::Multi(o) => ("multi", json!({"options": pairs(o)})),
                };
                v["kind"] = json!(kind);
                if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
                    v.extend(extra);
                }
                v
            })
            .collect();
        json!({"server": self.server, "message": self.message, "fields": fields})
    }
}

fn pairs(options: &[(String, String)]) -> Vec<Value> {
    options
        .iter()
        .map(|(value, title)| json!({"value": value, "title": title}))
        .collect()
}

impl Field {
    /// The value as the server wants it, from what a person gave (chat gives text:
    /// `"42"` for a number, `"yes"` for a boolean, `"a, b"` for a list).
    pub fn value(&self, given: &Value) -> Result<Value, String> {
        match &self.kind {
            Kind::Text { min, max, format } => {
                let Some(text) = given.as_str() else {
                    return Err("must be text".into());
                };
                let len = text.chars().count() as u64;
                if min.is_some_and(|m| len < m) {
                    return Err(format!("needs at least {} characters", min.unwrap_or(0)));
                }
                if max.is_some_and(|m| len > m) {
                    return Err(format!("takes at most {} characters", max.unwrap_or(0)));
                }
                if let Some(problem) = format.as_deref().and_then(|f| format_problem(f, text)) {
                    return Err(problem);
                }
                Ok(json!(text))
            }
            Kind::Number { integer, min, max } => {
                let n = match given {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse::<f64>().ok(),
                    _ => None,
                }
                .filter(|n| n.is_finite())
                .ok_or_else(|| "must be a number".to_string())?;
                if *integer && n.fract() != 0.0 {
                    return Err("must be a whole number".into());
                }
                if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                    let bound = |b: Option<f64>| b.map_or("…".to_string(), |b| b.to_string());
                    return Err(format!(
                        "must be between {} and {}",
                        bound(*min),
                        bound(*max)
                    ));
                }
                Ok(if *integer { json!(n as i64) } else { json!(n) })
            }
            Kind::Boolean => match given {
                Value::Bool(b) => Ok(json!(b)),
                Value::String(s) => match s.trim().to_lowercase().as_str() {
                    "y" | "yes" | "true" | "1" | "是" | "对" => Ok(json!(true)),
                    "n" | "no" | "false" | "0" | "否" | "不" => Ok(json!(false)),
                    _ => Err("must be yes or no".into()),
                },
                _ => Err("must be yes or no".into()),
            },
            Kind::Choice(options) => {
                let pick = given.as_str().map(str::trim).unwrap_or_default();
                choose(options, pick)
                    .map(|v| json!(v))
                    .ok_or_else(|| format!("must be one of {}", names(options)))
            }
            Kind::Multi(options) => {
                let picks: Vec<String> = match given {
                    Value::Array(list) => list
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    Value::String(s) => s
                        .split(',')
                        .map(|p| p.trim().to_string())
                        .filter(|p| !p.is_empty())
                        .collect(),
                    _ => return Err(format!("must be some of {}", names(options))),
                };
                let mut chosen = Vec::new();
                for p in &picks {
                    match choose(options, p) {
                        Some(v) if !chosen.contains(&v) => chosen.push(v),
                        Some(_) => {}
                        None => return Err(format!("must be some of {}", names(options))),
                    }
                }
                Ok(json!(chosen))
            }
        }
    }

    /// How chat shows what the field takes.
    pub fn hint(&self) -> String {
        let kind = match &self.kind {
            Kind::Text {
                format: Some(f), ..
            } => f.clone(),
            Kind::Text { .. } => "text".to_string(),
            Kind::Number { integer: true, .. } => "whole number".to_string(),
            Kind::Number { .. } => "number".to_string(),
            Kind::Boolean => "yes/no".to_string(),
            Kind::Choice(o) => format!("one of {}", names(o)),
            Kind::Multi(o) => format!("some of {}, comma-separated", names(o)),
        };
        let mut hint = kind;
        if let Some(d) = &self.default {
            let d = d.as_str().map_or_else(|| d.to_string(), str::to_string);
            hint.push_str(&format!(", default {d}"));
        } else if !self.required {
            hint.push_str(", optional");
        }
        hint
    }
}

/// The value of the option `pick` names (its value or its title, any case).
fn choose(options: &[(String, String)], pick: &str) -> Option<String> {
    options
        .iter()
        .find(|(v, t)| v == pick || t.eq_ignore_ascii_case(pick) || v.eq_ignore_ascii_case(pick))
        .map(|(v, _)| v.clone())
}

fn names(options: &[(String, String)]) -> String {
    options
        .iter()
        .map(|(v, _)| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What is wrong with `text` as a `format` string, if anything (a light check: the
/// server checks again).
fn format_problem(format: &str, text: &str) -> Option<String> {
    let ok = match format {
        "email" => text
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !text.contains(' ')),
        "uri" => text.split_once("://").is_some_and(|(s, r)| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
                && !r.is_empty()
        }),
        "date" => is_date(text),
        "date-time" => text
            .split_once(['T', 't', ' '])
            .is_some_and(|(d, t)| is_date(d) && t.len() >= 5 && t.as_bytes()[2] == b':'),
        _ => true,
    };
    (!ok).then(|| format!("must be a valid {format}"))
}

fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Elicitation {
        Elicitation::parse(
            "t",
            &json!({
                "message": "Who are you?\u{1b}[2J",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "title": "Your name", "minLength": 2},
                        "age": {"type": "integer", "minimum": 0, "maximum": 150},
                        "ok": {"type": "boolean", "default": true},
                        "mail": {"type": "string", "format": "email"},
                        "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}}
                    },
                    "required": ["name", "age"]
                }
            }),
        )
        .expect("a form")
    }

    #[test]
    fn forms_are_read_with_their_kinds_and_controls_escaped() {
        let f = form();
        assert!(!f.message.contains('\u{1b}'), "{}", f.message);
        let names: Vec<&str> = f.fields.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names.len(), 7);
        let field = |n: &str| f.fields.iter().find(|x| x.name == n).unwrap();
        assert_eq!(field("name").title, "Your name");
        assert!(field("name").required && !field("ok").required);
        assert_eq!(
            field("color").kind,
            Kind::Choice(vec![
                ("r".into(), "Red".into()),
                ("g".into(), "Green".into())
            ])
        );
        assert_eq!(field("size").hint(), "one of s, l, optional");
        assert_eq!(field("ok").hint(), "yes/no, default true");
        for bad in [
            json!({"mode": "url", "url": "https://x"}),
            json!({"requestedSchema": {"properties": {"x": {"type": "object"}}}}),
            json!({"requestedSchema": {"properties": 3}}),
        ] {
            assert!(Elicitation::parse("t", &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn content_is_checked_defaults_filled_and_text_from_chat_read() {
        let f = form();
        let given =
            json!({"name": "Li", "age": "41", "color": "Green", "tags": "a, c, a", "junk": 1});
        let ok = f.check(given.as_object().unwrap()).expect("valid");
        assert_eq!(
            Value::Object(ok),
            json!({"name": "Li", "age": 41, "ok": true, "color": "g", "tags": ["a", "c"]})
        );
        let bad = json!({"name": "L", "age": 4.5, "mail": "no", "ok": "perhaps", "size": "xl"});
        let wrong = f.check(bad.as_object().unwrap()).unwrap_err();
        let fields: Vec<&str> = wrong.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(fields.len(), 5, "{wrong:?}");
        for want in ["name", "age", "mail", "ok", "size"] {
            assert!(fields.contains(&want), "{want}: {wrong:?}");
        }
        let missing = f.check(&Map::new()).unwrap_err();
        assert_eq!(
            missing,
            [
                ("age".to_string(), "is required".to_string()),
                ("name".to_string(), "is required".to_string())
            ]
        );
        assert_eq!(
            ElicitReply::Accept(Map::new()).result(),
            json!({"action": "accept", "content": {}})
        );
        assert_eq!(ElicitReply::Decline.result(), json!({"action": "decline"}));
    }
}
