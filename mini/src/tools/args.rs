//! The arguments of a built-in tool call: their declaration (which becomes the JSON
//! schema the model sees) and their checking (which turns whatever the model sent into
//! typed values or one error message saying what is wrong and what shape was expected).
//!
//! Models send damaged JSON, numbers as strings, `null` for "not given", and sometimes
//! the whole object JSON-encoded a second time. What is unambiguous is accepted
//! (`"10"` for an integer, `"true"` for a boolean, `"a, b"` for a list of strings, a
//! doubly encoded object, JSON that core's `json::repair` can fix); everything else is an
//! error naming the argument. Unknown keys are errors too: a misspelt `recursve` silently
//! ignored would make the tool do something other than what the model asked.

use serde_json::{Map, Value};

/// What kind of value an argument takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Any string.
    Str,
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// `true` or `false`.
    Bool,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A list of strings.
    StrList,
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// The JSON key.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether the call fails without it.
    pub required: bool,
    /// What it means, for the model.
    pub doc: &'static str,
}

/// A required argument.
pub const fn req(name: &'static str, kind: Kind, doc: &'static str) -> Param {
    Param {
        name,
        kind,
        required: true,
        doc,
    }
}

/// An optional argument.
pub const fn opt(name: &'static str, kind: Kind, doc: &'static str) -> Param {
    Param {
        name,
        kind,
        required: false,
        doc,
    }
}

/// The JSON schema of a parameter list: a strict object (`additionalProperties: false`).
pub fn schema(params: &[Param]) -> Value {
    let mut properties = Map::new();
    for p in params {
        let mut prop = Map::new();
        match p.kind {
            Kind::Str => {
                prop.insert("type".into(), "string".into());
            }
            Kind::Int { min, max } => {
                prop.insert("type".into(), "integer".into());
                prop.insert("minimum".into(), min.into());
                prop.insert("maximum".into(), max.into());
            }
            Kind::Bool => {
                prop.insert("type".into(), "boolean".into());
            }
            Kind::OneOf(values) => {
                prop.insert("type".into(), "string".into());
                prop.insert(
                    "enum".into(),
                    Value::Array(values.iter().map(|v| Value::from(*v)).collect()),
                );
            }
            Kind::StrList => {
                prop.insert("type".into(), "array".into());
                prop.insert("items".into(), serde_json::json!({"type": "string"}));
            }
        }
        prop.insert("description".into(), p.doc.into());
        properties.insert(p.name.into(), Value::Object(prop));
    }
    let required: Vec<Value> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| Value::from(p.name))
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The expected shape in one line, for error messages:
/// `{"path": string, "limit_lines"?: integer 1–100000}`.
pub fn shape(params: &[Param]) -> String {
    let fields: Vec<String> = params
        .iter()
        .map(|p| {
            let ty = match p.kind {
                Kind::Str => "string".to_string(),
                Kind::Int { min, max } => format!("integer {min}–{max}"),
                Kind::Bool => "boolean".to_string(),
                Kind::OneOf(values) => values
                    .iter()
                    .map(|v| format!("\"{v}\""))
                    .collect::<Vec<_>>()
                    .join("|"),
                Kind::StrList => "[string, …]".to_string(),
            };
            let mark = if p.required { "" } else { "?" };
            format!("\"{}\"{mark}: {ty}", p.name)
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// Checked arguments: every key is a declared parameter and every value has its kind
/// (integers as `i64`, lists as arrays of strings). Absent and `null` are the same.
#[derive(Debug, Clone, Default)]
pub struct Args {
    values: Map<String, Value>,
}

impl Args {
    /// A string argument.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(Value::as_str)
    }
    /// A required string argument (checked present by [`parse`]; `""` otherwise).
    pub fn text(&self, name: &str) -> &str {
        self.str(name).unwrap_or_default()
    }
    /// An integer argument.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.values.get(name).and_then(Value::as_i64)
    }
    /// A boolean argument.
    pub fn flag(&self, name: &str) -> Option<bool> {
        self.values.get(name).and_then(Value::as_bool)
    }
    /// A list-of-strings argument.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.values
            .get(name)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
    }
}

/// Reads and checks the arguments of `tool`. The error says what is wrong and the
/// expected shape, ready to hand back to the model.
pub fn parse(tool: &str, params: &[Param], text: &str) -> Result<Args, String> {
    let fail = |problem: String| {
        format!(
            "invalid arguments for `{tool}`: {problem}. Expected a JSON object {}",
            shape(params)
        )
    };
    let value = read_json(text).map_err(&fail)?;
    let object = match value {
        Value::Object(map) => map,
        other => {
            return Err(fail(format!(
                "the arguments must be a JSON object, got {}",
                describe(&other)
            )))
        }
    };
    let mut values = Map::new();
    for (key, value) in object {
        let Some(param) = params.iter().find(|p| p.name == key) else {
            let allowed: Vec<&str> = params.iter().map(|p| p.name).collect();
            let allowed = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            };
            return Err(fail(format!(
                "unknown argument `{key}` (allowed: {allowed})"
            )));
        };
        if value.is_null() {
            continue;
        }
        let checked = check(param, value).map_err(&fail)?;
        values.insert(key, checked);
    }
    if let Some(missing) = params
        .iter()
        .find(|p| p.required && !values.contains_key(p.name))
    {
        return Err(fail(format!("`{}` is missing", missing.name)));
    }
    Ok(Args { values })
}

/// The JSON value of the argument text: strict first, then core's repair; empty text is
/// `{}` (models send nothing for tools without arguments); a string holding an object is
/// that object (arguments encoded twice).
pub fn read_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let value = match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => v,
        Err(strict) => evolve_core::json::repair(trimmed)
            .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
            .ok_or_else(|| format!("the arguments are not valid JSON ({strict})"))?,
    };
    if let Value::String(inner) = &value {
        if let Ok(obj @ Value::Object(_)) = serde_json::from_str::<Value>(inner.trim()) {
            return Ok(obj);
        }
    }
    Ok(value)
}

fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let mut text = value.to_string();
    if text.chars().count() > 60 {
        text = text.chars().take(60).collect::<String>() + "…";
    }
    format!("{kind} {text}")
}

/// The value of one argument in its kind, or what is wrong with it.
fn check(param: &Param, value: Value) -> Result<Value, String> {
    let name = param.name;
    match param.kind {
        Kind::Str => match value {
            Value::String(_) => Ok(value),
            Value::Number(n) => Ok(Value::String(n.to_string())),
            other => Err(format!(
                "`{name}` must be a string, got {}",
                describe(&other)
            )),
        },
        Kind::Int { min, max } => {
            let n = match &value {
                Value::Number(n) => n.as_i64().or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                        .map(|f| f as i64)
                }),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            };
            match n {
                Some(n) if (min..=max).contains(&n) => Ok(Value::from(n)),
                _ => Err(format!(
                    "`{name}` must be an integer from {min} to {max}, got {}",
                    describe(&value)
                )),
            }
        }
        Kind::Bool => match &value {
            Value::Bool(_) => Ok(value),
            Value::String(s) if s.trim().eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            Value::String(s) if s.trim().eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            Value::Number(n) if n.as_i64() == Some(1) => Ok(Value::Bool(true)),
            Value::Number(n) if n.as_i64() == Some(0) => Ok(Value::Bool(false)),
            _ => Err(format!(
                "`{name}` must be true or false, got {}",
                describe(&value)
            )),
        },
        Kind::OneOf(allowed) => {
            let found = value
                .as_str()
                .map(str::trim)
                .and_then(|s| allowed.iter().find(|a| a.eq_ignore_ascii_case(s)));
            match found {
                Some(a) => Ok(Value::from(*a)),
                None => Err(format!(
                    "`{name}` must be one of {}, got {}",
                    allowed.join(", "),
                    describe(&value)
                )),
            }
        }
        Kind::StrList => match value {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) => out.push(Value::String(s)),
                        Value::Number(n) => out.push(Value::String(n.to_string())),
                        other => {
                            return Err(format!(
                                "`{name}` must be a list of strings, found {}",
                                describe(&other)
                            ))
                        }
                    }
                }
                Ok(Value::Array(out))
            }
            Value::String(s) => Ok(Value::Array(
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(Value::from)
                    .collect(),
            )),
            other => Err(format!(
                "`{name}` must be a list of strings, got {}",
                describe(&other)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[Param] = &[
        req("path", Kind::Str, "a path"),
        opt("limit", Kind::Int { min: 1, max: 100 }, "how many"),
        opt("all", Kind::Bool, "everything"),
        opt("action", Kind::OneOf(&["add", "list"]), "what"),
        opt("tags", Kind::StrList, "labels"),
    ];

    #[test]
    fn accepted_arguments_come_out_typed() {
        let cases: &[(&str, &str, Option<i64>, Option<bool>)] = &[
            (r#"{"path": "a.txt"}"#, "a.txt", None, None),
            (
                r#"{"path": "a", "limit": 5, "all": true}"#,
                "a",
                Some(5),
                Some(true),
            ),
            (
                r#"{"path": "a", "limit": "5", "all": "false"}"#,
                "a",
                Some(5),
                Some(false),
            ),
            (
                r#"{"path": "a", "limit": 5.0, "all": null}"#,
                "a",
                Some(5),
                None,
            ),
            // Repaired: single quotes, trailing comma, unclosed object.
            (r#"{'path': 'b.md', 'limit': 3,"#, "b.md", Some(3), None),
            // Encoded twice.
            (r#""{\"path\": \"c\"}""#, "c", None, None),
        ];
        for (text, path, limit, all) in cases {
            let args = parse("t", PARAMS, text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(args.text("path"), *path, "{text}");
            assert_eq!(args.int("limit"), *limit, "{text}");
            assert_eq!(args.flag("all"), *all, "{text}");
        }
    }

    #[test]
    fn lists_and_choices_are_normalised() {
        let args = parse(
            "t",
            PARAMS,
            r#"{"path":"p","tags":"a, b,,c","action":"ADD"}"#,
        )
        .expect("valid");
        assert_eq!(
            args.list("tags"),
            Some(vec!["a".to_string(), "b".into(), "c".into()])
        );
        assert_eq!(args.str("action"), Some("add"));
    }

    #[test]
    fn bad_arguments_say_what_is_wrong_and_the_expected_shape() {
        let cases: &[(&str, &str)] = &[
            ("not json at all", "not valid JSON"),
            ("[1, 2]", "must be a JSON object, got an array"),
            ("{}", "`path` is missing"),
            (r#"{"path": "a", "limt": 3}"#, "unknown argument `limt`"),
            (
                r#"{"path": "a", "limit": 0}"#,
                "`limit` must be an integer from 1 to 100",
            ),
            (
                r#"{"path": "a", "limit": "many"}"#,
                "`limit` must be an integer",
            ),
            (r#"{"path": ["a"]}"#, "`path` must be a string"),
            (
                r#"{"path": "a", "all": "yes"}"#,
                "`all` must be true or false",
            ),
            (
                r#"{"path": "a", "action": "drop"}"#,
                "`action` must be one of add, list",
            ),
            (
                r#"{"path": "a", "tags": [{"x": 1}]}"#,
                "`tags` must be a list of strings",
            ),
        ];
        for (text, expected) in cases {
            let err = parse("read_file", PARAMS, text).expect_err(text);
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("`read_file`"), "{err}");
            assert!(err.contains(r#""path": string"#), "shape missing: {err}");
        }
    }

    #[test]
    fn the_schema_is_strict() {
        let s = schema(PARAMS);
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], serde_json::json!(["path"]));
        assert_eq!(s["properties"]["limit"]["type"], "integer");
        assert_eq!(
            s["properties"]["action"]["enum"],
            serde_json::json!(["add", "list"])
        );
        assert_eq!(s["properties"]["tags"]["items"]["type"], "string");
    }
}
