//! Checking a tool's `structuredContent` against the `outputSchema` it listed, as the
//! MCP specification asks clients to: the JSON Schema keywords servers use for results
//! (`type`, `properties`, `required`, `additionalProperties`, `items`, `enum`,
//! `const`, bounds on numbers, strings and arrays, `anyOf`/`oneOf`/`allOf`). Keywords it
//! does not know (`$ref`, `format`, `pattern`) pass: a result is refused only for what
//! is surely wrong. Depth is bounded, so a hostile schema cannot exhaust the stack.

use serde_json::Value;

/// How deep schemas and values are followed.
const MAX_DEPTH: usize = 32;

/// The first way `value` breaks `schema`, as `path: problem` (`$.sum: must be a
/// number`); `None` when it conforms.
pub fn violation(schema: &Value, value: &Value) -> Option<String> {
    check(schema, value, "$", 0)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits_type(want: &str, v: &Value) -> bool {
    let got = kind_of(v);
    want == got || (want == "number" && got == "integer")
}

fn check(schema: &Value, value: &Value, path: &str, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    let schema = match schema {
        Value::Bool(false) => return Some(format!("{path}: is not allowed")),
        Value::Object(s) => s,
        _ => return None,
    };
    let fail = |what: String| Some(format!("{path}: {what}"));
    match schema.get("type") {
        Some(Value::String(t)) if !fits_type(t, value) => {
            return fail(format!(
                "must be {} {t}, not {}",
                article(t),
                kind_of(value)
            ))
        }
        Some(Value::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() && !names.iter().any(|t| fits_type(t, value)) {
                return fail(format!(
                    "must be one of {}, not {}",
                    names.join(", "),
                    kind_of(value)
                ));
            }
        }
        _ => {}
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            return fail(format!("must be {c}"));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            return fail("is not one of the allowed values".to_string());
        }
    }
    if let Some(n) = value.as_f64() {
        let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
        if bound("minimum").is_some_and(|m| n < m)
            || bound("exclusiveMinimum").is_some_and(|m| n <= m)
        {
            return fail(format!("{n} is below the minimum"));
        }
        if bound("maximum").is_some_and(|m| n > m)
            || bound("exclusiveMaximum").is_some_and(|m| n >= m)
        {
            return fail(format!("{n} is above the maximum"));
        }
    }
    let count = |k: &str| schema.get(k).and_then(Value::as_u64);
    if let Value::String(s) = value {
        let len = s.chars().count() as u64;
        if count("minLength").is_some_and(|m| len < m)
            || count("maxLength").is_some_and(|m| len > m)
        {
            return fail(format!("its length {len} is out of bounds"));
        }
    }
    if let Value::Array(items) = value {
        let len = items.len() as u64;
        if count("minItems").is_some_and(|m| len < m) || count("maxItems").is_some_and(|m| len > m)
        {
            return fail(format!("{len} items are out of bounds"));
        }
        if let Some(item) = schema.get("items") {
            for (i, v) in items.iter().enumerate() {
                if let Some(e) = check(item, v, &format!("{path}[{i}]"), depth + 1) {
                    return Some(e);
                }
            }
        }
    }
    if let Value::Object(map) = value {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    return fail(format!("lacks {key:?}"));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, v) in map {
            let sub = format!("{path}.{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(s) => {
                    if let Some(e) = check(s, v, &sub, depth + 1) {
                        return Some(e);
                    }
                }
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return fail(format!("has {key:?}, which it may not"))
                    }
                    Some(extra @ Value::Object(_)) => {
                        if let Some(e) = check(extra, v, &sub, depth + 1) {
                            return Some(e);
                        }
                    }
                    _ => {}
                },
            }
        }
    }
    if let Some(Value::Array(all)) = schema.get("allOf") {
        for s in all {
            if let Some(e) = check(s, value, path, depth + 1) {
                return Some(e);
            }
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = schema.get(key) {
            let fitting = list
                .iter()
                .filter(|s| check(s, value, path, depth + 1).is_none())
                .count();
            let ok = if key == "anyOf" {
                fitting > 0
            } else {
                fitting == 1
            };
            if !list.is_empty() && !ok {
                return fail(format!("matches {fitting} of the {key} choices"));
            }
        }
    }
    None
}

fn article(t: &str) -> &'static str {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_checked_against_their_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "sum": {"type": "number"},
                "count": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "kind": {"enum": ["a", "b"]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["sum", "count"],
            "additionalProperties": false
        });
        let cases = [
            (json!({"sum": 3, "count": 2}), None),
            (
                json!({"sum": 2.5, "count": 0, "tags": ["x"], "kind": "a", "note": null}),
                None,
            ),
            (
                json!({"sum": "3", "count": 2}),
                Some("$.sum: must be a number, not string"),
            ),
            (json!({"sum": 3}), Some("$: lacks \"count\"")),
            (
                json!({"sum": 3, "count": 1.5}),
                Some("$.count: must be an integer, not number"),
            ),
            (
                json!({"sum": 3, "count": -1}),
                Some("$.count: -1 is below the minimum"),
            ),
            (
                json!({"sum": 3, "count": 1, "tags": [1]}),
                Some("$.tags[0]: must be a string, not integer"),
            ),
            (
                json!({"sum": 3, "count": 1, "tags": ["a", "b", "c"]}),
                Some("$.tags: 3 items are out of bounds"),
            ),
            (
                json!({"sum": 3, "count": 1, "kind": "z"}),
                Some("$.kind: is not one of the allowed values"),
            ),
            (
                json!({"sum": 3, "count": 1, "x": 1}),
                Some("$: has \"x\", which it may not"),
            ),
            (json!([1]), Some("$: must be an object, not array")),
        ];
        for (value, want) in cases {
            assert_eq!(violation(&schema, &value).as_deref(), want, "{value}");
        }
        let choice = json!({"oneOf": [{"type": "string"}, {"type": "integer"}]});
        assert_eq!(violation(&choice, &json!(1)), None);
        assert!(violation(&choice, &json!(true)).is_some());
        // Unknown keywords and odd schemas pass; deep nesting does not overflow.
        assert_eq!(
            violation(&json!({"$ref": "#/x", "format": "email"}), &json!("a")),
            None
        );
        assert_eq!(violation(&json!(true), &json!({"any": 1})), None);
        let mut deep = json!({"type": "object"});
        for _ in 0..200 {
            deep = json!({"properties": {"a": deep}});
        }
        let mut value = json!(1);
        for _ in 0..100 {
            value = json!({"a": value});
        }
        let _ = violation(&deep, &value);
    }
}
