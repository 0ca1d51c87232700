//! The JSON value produced by the parsers and the serializer that hands it on.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// A JSON number, kept as the text it was written with (validated against the JSON
/// number grammar), so that large integers and exact decimals survive the trip to the
/// shell untouched. Two numbers are equal when their texts are equal (`1.0 != 1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Number(String);

impl Number {
    /// The number when `text` follows the JSON number grammar
    /// (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    pub fn parse(text: &str) -> Option<Number> {
        if is_json_number(text.as_bytes()) {
            Some(Number(String::from(text)))
        } else {
            None
        }
    }

    /// A finite float as a number; `None` for NaN and infinities, which JSON cannot hold.
    pub fn from_f64(value: f64) -> Option<Number> {
        if !value.is_finite() {
            return None;
        }
        let mut text = String::new();
        // `Display` for f64 never uses exponents and always round-trips.
        let _ = write!(text, "{value}");
        Number::parse(&text)
    }

    /// The JSON text of the number.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number as a float (rounded when the text has more precision than f64).
    pub fn as_f64(&self) -> f64 {
        self.0.parse::<f64>().unwrap_or(0.0)
    }

    /// True when the number is too large for an f64 (`1e400`): JSON's grammar allows it,
    /// but `serde_json` and most JSON readers reject it.
    pub fn overflows_f64(&self) -> bool {
        self.0.parse::<f64>().is_ok_and(f64::is_infinite)
    }

    /// The number as an integer, when it is written as one and fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.parse::<i64>().ok()
    }
}

impl From<i64> for Number {
    fn from(value: i64) -> Self {
        let mut text = String::new();
        let _ = write!(text, "{value}");
        Number(text)
    }
}

/// Where the run of number characters (`-+.eE0-9`) starting at `start` ends: what
/// both parsers read as one number before judging it.
pub(crate) fn number_run_end(b: &[u8], start: usize) -> usize {
    let mut i = start;
    while matches!(
        b.get(i),
        Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
    ) {
        i += 1;
    }
    i
}

/// The index after the run of ASCII digits starting at `i`.
fn digits_end(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b'0'..=b'9')) {
        i += 1;
    }
    i
}

/// True when `b` is exactly one JSON number.
pub(crate) fn is_json_number(b: &[u8]) -> bool {
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits_end(b, i),
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        i = digits_end(b, i);
        if i == start {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        i = digits_end(b, i);
        if i == start {
            return false;
        }
    }
    i == b.len()
}

/// A JSON value. Objects keep their members in the order written, duplicates included
/// ([`Value::get`] answers with the last one, as `serde_json` does).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, as written.
    Number(Number),
    /// A string (escapes decoded).
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object: members in order.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object (the last one when the key repeats).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|m| &m.1),
            _ => None,
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of an array value.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The members of an object value.
    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    /// The boolean of a `true`/`false` value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number of a number value.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The JSON type name (`"object"`, `"array"`, …), for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Standard, compact JSON text (RFC 8259): what the shell hands to `serde_json`.
    /// Control characters, quotes and backslashes in strings are escaped; everything
    /// else is written as UTF-8.
    pub fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => out.push_str(n.as_str()),
            Value::String(s) => write_json_string(s, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(key, out);
                    out.push(':');
                    value.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes `s` as a quoted JSON string.
fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn number_grammar_accepts_json_and_rejects_the_rest() {
        for ok in ["0", "-0", "12", "-3.25", "1e9", "1E+2", "2.5e-3"] {
            assert!(Number::parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "", "-", "01", "1.", ".5", "+1", "1e", "1e+", "NaN", "1_000", "0x10",
        ] {
            assert!(Number::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(Number::from_f64(f64::NAN), None);
        assert_eq!(Number::from_f64(0.5).map(|n| n.as_f64()), Some(0.5));
        assert_eq!(Number::from(-42).as_i64(), Some(-42));
    }

    #[test]
    fn serializer_escapes_what_json_requires() {
        let v = Value::Object(vec![
            (
                String::from("k\"ey"),
                Value::String(String::from("a\\b\n\t\u{1}é")),
            ),
            (
                String::from("n"),
                Value::Array(vec![Value::Null, Value::Bool(true)]),
            ),
        ]);
        assert_eq!(
            v.to_json_string(),
            r#"{"k\"ey":"a\\b\n\t\u0001é","n":[null,true]}"#
        );
    }

    #[test]
    fn get_returns_the_last_duplicate_like_serde_json() {
        let v = Value::Object(vec![
            (String::from("a"), Value::Bool(false)),
            (String::from("a"), Value::Bool(true)),
        ]);
        assert_eq!(v.get("a"), Some(&Value::Bool(true)));
        assert_eq!(v.get("b"), None);
    }
}
