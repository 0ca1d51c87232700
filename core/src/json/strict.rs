//! The strict parser: RFC 8259 JSON and nothing else, with a nesting limit.
//!
//! It is the judge of every repair: whatever [`repair`](super::repair) returns must pass
//! here. Recursion is bounded by [`MAX_DEPTH`](super::MAX_DEPTH), so a hostile input of
//! a million `[` gets an error instead of overflowing the stack.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{SyntaxError, SyntaxErrorKind};
use super::value::{is_json_number, number_run_end, Number, Value};
use super::MAX_DEPTH;

/// Parses `text` as exactly one JSON value surrounded by optional whitespace.
///
/// Numbers are checked against the grammar only, which sets no range: `1e400` is
/// accepted and kept as written (see [`Number::overflows_f64`]). [`extract`](super::extract)
/// and [`repair`](super::repair), which feed `serde_json`, hand such numbers out as `null`.
pub fn parse_strict(text: &str) -> Result<Value, SyntaxError> {
    let mut p = Strict {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    p.skip_ws();
    if p.pos >= p.bytes.len() {
        return Err(p.err(SyntaxErrorKind::Empty));
    }
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos < p.bytes.len() {
        return Err(p.err(SyntaxErrorKind::TrailingCharacters));
    }
    Ok(value)
}

struct Strict<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Strict<'_> {
    fn err(&self, kind: SyntaxErrorKind) -> SyntaxError {
        SyntaxError {
            offset: self.pos,
            kind,
        }
    }

    /// The error for the character at the cursor (or the end of the text).
    fn unexpected(&self) -> SyntaxError {
        match self
            .text
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
        {
            Some(c) => self.err(SyntaxErrorKind::UnexpectedChar(c)),
            None => self.err(SyntaxErrorKind::UnexpectedEnd),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            _ => Err(self.unexpected()),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, SyntaxError> {
        for expected in word.bytes() {
            if self.peek() != Some(expected) {
                return Err(self.unexpected());
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        self.pos = number_run_end(self.bytes, start);
        let text = self.text.get(start..self.pos).unwrap_or("");
        if !is_json_number(text.as_bytes()) {
            return Err(SyntaxError {
                offset: start,
                kind: SyntaxErrorKind::InvalidNumber,
            });
        }
        Number::parse(text).map(Value::Number).ok_or(SyntaxError {
            offset: start,
            kind: SyntaxErrorKind::InvalidNumber,
        })
    }

    fn array(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err(SyntaxErrorKind::TooDeep));
        }
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.err(SyntaxErrorKind::TooDeep));
        }
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    /// A string at the cursor (which is on the opening quote).
    fn string(&mut self) -> Result<String, SyntaxError> {
        self.pos += 1;
        let mut out = String::new();
        let mut run = self.pos; // start of the pending run of plain characters
        loop {
            match self.peek() {
                None => return Err(self.err(SyntaxErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    out.push_str(self.text.get(run..self.pos).unwrap_or(""));
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(self.text.get(run..self.pos).unwrap_or(""));
                    let c = self.escape()?;
                    out.push(c);
                    run = self.pos;
                }
                Some(b) if b < 0x20 => return Err(self.err(SyntaxErrorKind::ControlCharacter)),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// An escape at the cursor (on the backslash); leaves the cursor after it.
    fn escape(&mut self) -> Result<char, SyntaxError> {
        let at = self.pos;
        let bad = |kind| SyntaxError { offset: at, kind };
        let c = match self.bytes.get(self.pos + 1) {
            None => return Err(bad(SyntaxErrorKind::UnexpectedEnd)),
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let hi =
                    hex4(self.bytes, self.pos + 2).ok_or(bad(SyntaxErrorKind::InvalidEscape))?;
                self.pos += 6;
                return match hi {
                    0xD800..=0xDBFF => {
                        let lo = if self.bytes.get(self.pos) == Some(&b'\\')
                            && self.bytes.get(self.pos + 1) == Some(&b'u')
                        {
                            hex4(self.bytes, self.pos + 2)
                        } else {
                            None
                        };
                        match lo {
                            Some(lo @ 0xDC00..=0xDFFF) => {
                                self.pos += 6;
                                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                char::from_u32(code).ok_or(bad(SyntaxErrorKind::LoneSurrogate))
                            }
                            _ => Err(bad(SyntaxErrorKind::LoneSurrogate)),
                        }
                    }
                    0xDC00..=0xDFFF => Err(bad(SyntaxErrorKind::LoneSurrogate)),
                    code => char::from_u32(code).ok_or(bad(SyntaxErrorKind::InvalidEscape)),
                };
            }
            Some(_) => return Err(bad(SyntaxErrorKind::InvalidEscape)),
        };
        self.pos += 2;
        Ok(c)
    }
}

/// The value of four hex digits at `at`, if they are there.
pub(crate) fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let mut v = 0u32;
    for d in digits {
        v = v * 16 + char::from(*d).to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn kind(text: &str) -> SyntaxErrorKind {
        match parse_strict(text) {
            Err(e) => e.kind,
            Ok(v) => panic!("{text:?} parsed as {v:?}"),
        }
    }

    #[test]
    fn accepts_standard_json() {
        let v = parse_strict(
            " {\"a\": [1, -2.5e3, true, false, null, \"x\\n\\u00e9\\ud83d\\ude00\"]} ",
        )
        .unwrap();
        let expected = Value::Object(vec![(
            String::from("a"),
            Value::Array(vec![
                Value::Number(Number::parse("1").unwrap()),
                Value::Number(Number::parse("-2.5e3").unwrap()),
                Value::Bool(true),
                Value::Bool(false),
                Value::Null,
                Value::String(String::from("x\né😀")),
            ]),
        )]);
        assert_eq!(v, expected);
    }

    #[test]
    fn rejects_each_kind_of_error_with_its_kind() {
        let table: &[(&str, SyntaxErrorKind)] = &[
            ("", SyntaxErrorKind::Empty),
            ("  \n", SyntaxErrorKind::Empty),
            ("[1,", SyntaxErrorKind::UnexpectedEnd),
            ("[1,]", SyntaxErrorKind::UnexpectedChar(']')),
            ("{'a': 1}", SyntaxErrorKind::UnexpectedChar('\'')),
            ("{a: 1}", SyntaxErrorKind::UnexpectedChar('a')),
            ("01", SyntaxErrorKind::InvalidNumber),
            ("1.", SyntaxErrorKind::InvalidNumber),
            ("\"\\x\"", SyntaxErrorKind::InvalidEscape),
            ("\"\\u12\"", SyntaxErrorKind::InvalidEscape),
            ("\"a\nb\"", SyntaxErrorKind::ControlCharacter),
            ("\"\\ud800\"", SyntaxErrorKind::LoneSurrogate),
            ("\"\\udc00\"", SyntaxErrorKind::LoneSurrogate),
            ("[1] x", SyntaxErrorKind::TrailingCharacters),
            ("True", SyntaxErrorKind::UnexpectedChar('T')),
            ("tru", SyntaxErrorKind::UnexpectedEnd),
            ("nul!", SyntaxErrorKind::UnexpectedChar('!')),
        ];
        for (text, expected) in table {
            assert_eq!(kind(text), *expected, "{text:?}");
        }
    }

    #[test]
    fn nesting_limit_is_an_error_not_a_stack_overflow() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_strict(&ok).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(kind(&deep), SyntaxErrorKind::TooDeep);
        let huge = "{\"a\":".repeat(100_000);
        assert_eq!(kind(&huge), SyntaxErrorKind::TooDeep);
    }

    #[test]
    fn agrees_with_serde_json_on_what_is_valid() {
        for text in [
            "[1,2]",
            "{\"a\":{}}",
            "\"\\/\"",
            "-0",
            "1E5",
            "[1,]",
            "{,}",
            "[01]",
            "\"\t\"",
            "[\"\\u0000\"]",
            "nulls",
            "[] []",
        ] {
            let ours = parse_strict(text).is_ok();
            let theirs = serde_json::from_str::<serde_json::Value>(text).is_ok();
            assert_eq!(ours, theirs, "{text:?}");
        }
    }
}
