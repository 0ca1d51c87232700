//! The lenient parser behind [`repair`]: reads what models actually write and returns
//! the value they meant, or gives up.
//!
//! Fixes, each seen in real model output (tea-agent: "智能修复截断JSON、控制字符、单引号、尾逗号"):
//! - trailing and doubled commas (`[1,2,]`, `[1,,2]`); missing commas between items,
//!   including two strings side by side (`["a""b"]` is two items);
//! - single-quoted strings and keys (`{'a': 'b'}`), unquoted keys (`{name: "x"}`);
//! - raw control characters inside strings (kept as characters, escaped on output),
//!   unknown escapes such as `\d` (the backslash is kept as a character);
//!   unescaped quotes inside a string, when the quote is not followed by `,` `:` `}` `]`,
//!   a comment, the end, or another quote (`"he said "hi" to me"`);
//! - Python and JavaScript literals in any letter case: `True` `FALSE` `None` `Null`,
//!   and `NaN` `Infinity` `inf` `undefined`, the last four (`NaN` and the infinities
//!   also signed, `-Infinity`) becoming `null`, which is what JSON can say about them;
//! - loose numbers: `+1`, `.5`, `5.`, `007`; a number beyond the range of f64 (`1e400`)
//!   becomes `null` like an infinity, since JSON readers such as `serde_json` reject it;
//! - comments: `// …` and `/* … */`; a BOM; stray closers after the value (`{…}}`);
//! - truncation: an unclosed string is closed, unclosed arrays and objects are closed,
//!   a dangling `"key":` or half-written key, literal or trailing comma is dropped.
//!
//! It never guesses structure beyond that: prose, unquoted string values or a key not
//! followed by a colon (`{a 1}`) make it give up, so that [`extract`](super::extract)
//! can look elsewhere in the text.

use alloc::string::String;
use alloc::vec::Vec;

use super::strict::hex4;
use super::value::{number_run_end, Number, Value};
use super::MAX_DEPTH;

/// The repaired text: standard JSON that [`parse_strict`](super::parse_strict) and
/// `serde_json` accept, or `None` when `text` is not (damaged) JSON. `text` must be the
/// JSON alone, possibly followed by stray closing brackets; [`extract`](super::extract)
/// finds it in prose.
pub fn repair(text: &str) -> Option<String> {
    parse_lenient(text).map(|r| r.value.to_json_string())
}

/// What the lenient parser read: the value, and how far the end of the text cut into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repaired {
    /// The value the text most plausibly meant.
    pub(crate) value: Value,
    /// How many arrays, objects and strings the text ended inside, which the repair
    /// closed: 0 for a complete text, 1 when only the outermost container was left open
    /// (`[{"a":1}, {"b":2}`), 3 for `[{"a":1}, {"b":"cu`. The unclosed ones are nested
    /// in each other, each the last member of the one before, so a list at nesting depth
    /// `d` (the outermost being 1) lost the end of its last item when this exceeds `d`.
    pub(crate) unclosed: usize,
}

/// The value `text` most plausibly meant (see the module docs for what is fixed).
pub(crate) fn parse_lenient(text: &str) -> Option<Repaired> {
    let mut p = Lenient {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        unclosed: 0,
    };
    p.skip_ws();
    let value = p.value(0).ok()??;
    // Stray closers and separators after a complete value are noise (`{…}}`, `[…];`).
    loop {
        p.skip_ws();
        match p.peek() {
            Some(b']' | b'}' | b',' | b';') => p.pos += 1,
            None => {
                return Some(Repaired {
                    value,
                    unclosed: p.unclosed,
                })
            }
            Some(_) => return None,
        }
    }
}

/// The parse cannot continue: the text is not JSON we can make sense of.
struct Fail;

struct Lenient<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Deepest nesting level (strings counted) that the end of the text cut off.
    unclosed: usize,
}

/// What a literal word means.
#[derive(Clone, Copy)]
enum Literal {
    Bool(bool),
    Null,
    /// NaN or an infinity: `null` in JSON, and the only words that may carry a sign.
    NotFinite,
}

/// Literal words accepted in value position (compared without regard to ASCII case),
/// and what they mean.
const LITERALS: &[(&str, Literal)] = &[
    ("true", Literal::Bool(true)),
    ("false", Literal::Bool(false)),
    ("null", Literal::Null),
    ("none", Literal::Null),
    ("undefined", Literal::Null),
    ("nan", Literal::NotFinite),
    ("infinity", Literal::NotFinite),
    ("inf", Literal::NotFinite),
];

impl<'a> Lenient<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Notes that the text ended inside a container or string at nesting `depth`.
    fn cut_at(&mut self, depth: usize) {
        self.unclosed = self.unclosed.max(depth);
    }

    fn char_at(&self, at: usize) -> Option<char> {
        self.text.get(at..).and_then(|rest| rest.chars().next())
    }

    /// Skips whitespace (any Unicode space, BOM, stray control characters) and comments.
    fn skip_ws(&mut self) {
        loop {
            match self.peek() {
                Some(b) if b <= b' ' || b == 0x7f => self.pos += 1,
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.pos += 1;
                    }
                }
                Some(b'/') if self.bytes.get(self.pos + 1) == Some(&b'*') => {
                    self.pos += 2;
                    while self.pos < self.bytes.len()
                        && !(self.peek() == Some(b'*')
                            && self.bytes.get(self.pos + 1) == Some(&b'/'))
                    {
                        self.pos += 1;
                    }
                    self.pos = (self.pos + 2).min(self.bytes.len());
                }
                Some(b) if b >= 0x80 => match self.char_at(self.pos) {
                    Some(c) if c.is_whitespace() || c == '\u{feff}' => self.pos += c.len_utf8(),
                    _ => return,
                },
                _ => return,
            }
        }
    }

    fn skip_ws_and_commas(&mut self) {
        loop {
            self.skip_ws();
            if self.peek() == Some(b',') {
                self.pos += 1;
            } else {
                return;
            }
        }
    }

    /// One value; `Ok(None)` when the text ends before a usable value starts (or inside
    /// a literal), so the caller drops the member and closes up.
    /// `depth` is the nesting of the container holding the value (0 at the top).
    fn value(&mut self, depth: usize) -> Result<Option<Value>, Fail> {
        match self.peek() {
            None => Ok(None),
            Some(b'{') => self.object(depth + 1).map(Some),
            Some(b'[') => self.array(depth + 1).map(Some),
            Some(q @ (b'"' | b'\'')) => {
                let (text, closed) = self.string(q);
                if let Closed::CutOff = closed {
                    self.cut_at(depth + 1);
                }
                Ok(Some(Value::String(text)))
            }
            // `-Infinity`, `+NaN`
            Some(b'-' | b'+')
                if self
                    .bytes
                    .get(self.pos + 1)
                    .is_some_and(u8::is_ascii_alphabetic) =>
            {
                self.pos += 1;
                self.literal(Signed::Yes)
            }
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            Some(_) => self.literal(Signed::No),
        }
    }

    /// A literal word at the cursor (after its sign, if any); `Ok(None)` when the text
    /// ends inside one.
    fn literal(&mut self, signed: Signed) -> Result<Option<Value>, Fail> {
        let word = self.identifier().ok_or(Fail)?;
        let meaning = LITERALS
            .iter()
            .find(|(w, _)| w.eq_ignore_ascii_case(word))
            .map(|(_, meaning)| *meaning);
        match (meaning, signed) {
            (Some(Literal::Bool(b)), Signed::No) => return Ok(Some(Value::Bool(b))),
            (Some(Literal::Null), Signed::No) | (Some(Literal::NotFinite), _) => {
                return Ok(Some(Value::Null))
            }
            _ => {}
        }
        let cut_short = self.pos >= self.bytes.len()
            && LITERALS.iter().any(|(w, meaning)| {
                let may_be = matches!(signed, Signed::No) || matches!(meaning, Literal::NotFinite);
                may_be
                    && w.as_bytes()
                        .get(..word.len())
                        .is_some_and(|start| start.eq_ignore_ascii_case(word.as_bytes()))
            });
        if cut_short {
            Ok(None)
        } else {
            Err(Fail)
        }
    }

    /// A run of identifier characters (letters, digits, `_`, `$`, `-`), if any.
    fn identifier(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while let Some(c) = self.char_at(self.pos) {
            if c.is_alphanumeric() || matches!(c, '_' | '$' | '-') {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        if self.pos == start {
            None
        } else {
            self.text.get(start..self.pos)
        }
    }

    fn number(&mut self) -> Result<Option<Value>, Fail> {
        let start = self.pos;
        self.pos = number_run_end(self.bytes, start);
        let raw = self.text.get(start..self.pos).unwrap_or("");
        match normalize_number(raw) {
            Some(number) if number.overflows_f64() => Ok(Some(Value::Null)),
            Some(number) => Ok(Some(Value::Number(number))),
            // A number cut off by the end of the text (`-`, `1.e`): drop it.
            None if self.pos >= self.bytes.len() => Ok(None),
            None => Err(Fail),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, Fail> {
        if depth > MAX_DEPTH {
            return Err(Fail);
        }
        self.pos += 1; // '['
        let mut items = Vec::new();
        loop {
            self.skip_ws_and_commas();
            match self.peek() {
                None => break,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                // A mismatched closer ends this array; the enclosing object takes it.
                Some(b'}') => break,
                Some(_) => match self.value(depth)? {
                    Some(v) => items.push(v),
                    None => break,
                },
            }
        }
        if self.pos >= self.bytes.len() {
            self.cut_at(depth);
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self, depth: usize) -> Result<Value, Fail> {
        if depth > MAX_DEPTH {
            return Err(Fail);
        }
        self.pos += 1; // '{'
        let mut members = Vec::new();
        loop {
            self.skip_ws_and_commas();
            let key = match self.peek() {
                None => break,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                Some(b']') => break,
                Some(q @ (b'"' | b'\'')) => match self.string(q) {
                    (key, Closed::Yes) => key,
                    (_, Closed::CutOff) => break,
                },
                Some(_) => String::from(self.identifier().ok_or(Fail)?),
            };
            self.skip_ws();
            match self.peek() {
                None => break,
                Some(b':') => self.pos += 1,
                Some(_) => return Err(Fail),
            }
            self.skip_ws();
            match self.value(depth)? {
                Some(v) => members.push((key, v)),
                None => break,
            }
        }
        if self.pos >= self.bytes.len() {
            self.cut_at(depth);
        }
        Ok(Value::Object(members))
    }

    /// A string opened by `quote` at the cursor; a string cut off by the end of the text
    /// is closed there.
    fn string(&mut self, quote: u8) -> (String, Closed) {
        self.pos += 1;
        let mut out = String::new();
        let mut run = self.pos;
        loop {
            let Some(b) = self.peek() else {
                out.push_str(self.text.get(run..).unwrap_or(""));
                return (out, Closed::CutOff);
            };
            if b == quote {
                out.push_str(self.text.get(run..self.pos).unwrap_or(""));
                self.pos += 1;
                if quote_closes(self.bytes, self.pos) {
                    return (out, Closed::Yes);
                }
                out.push(char::from(quote));
                run = self.pos;
            } else if b == b'\\' {
                out.push_str(self.text.get(run..self.pos).unwrap_or(""));
                self.escape(&mut out);
                run = self.pos;
            } else {
                self.pos += 1;
            }
        }
    }

    /// Decodes the escape at the cursor into `out`; an escape JSON does not know keeps
    /// its backslash as a character, a backslash at the very end is dropped.
    fn escape(&mut self, out: &mut String) {
        let decoded = match self.bytes.get(self.pos + 1) {
            None => {
                self.pos += 1;
                return;
            }
            Some(b'"') => '"',
            Some(b'\'') => '\'',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => match hex4(self.bytes, self.pos + 2) {
                Some(hi) => {
                    self.pos += 6;
                    out.push(self.unicode_escape(hi));
                    return;
                }
                None => {
                    out.push('\\');
                    self.pos += 1;
                    return;
                }
            },
            Some(_) => {
                out.push('\\');
                self.pos += 1;
                return;
            }
        };
        out.push(decoded);
        self.pos += 2;
    }

    /// The character of a `\u` escape whose four digits were `hi` (cursor after them);
    /// consumes the low half of a surrogate pair; an unpaired half becomes U+FFFD.
    fn unicode_escape(&mut self, hi: u32) -> char {
        if (0xD800..=0xDBFF).contains(&hi)
            && self.bytes.get(self.pos) == Some(&b'\\')
            && self.bytes.get(self.pos + 1) == Some(&b'u')
        {
            if let Some(lo @ 0xDC00..=0xDFFF) = hex4(self.bytes, self.pos + 2) {
                self.pos += 6;
                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return char::from_u32(code).unwrap_or('\u{fffd}');
            }
        }
        char::from_u32(hi).unwrap_or('\u{fffd}')
    }
}

/// Whether a string was closed by its quote or cut off by the end of the text.
enum Closed {
    Yes,
    CutOff,
}

/// Whether a literal word was written with a sign (`-Infinity`).
#[derive(Clone, Copy)]
enum Signed {
    Yes,
    No,
}

/// True when a quote just before `after` ends its string: what follows (after
/// whitespace) is `,` `:` `}` `]`, a comment, the end of the text, or another quote
/// (the next item, its comma missing: `["a" "b"]`, `["a""b"]`). Otherwise the quote is
/// taken as part of the text (`"he said "hi" to me"`).
pub(crate) fn quote_closes(bytes: &[u8], after: usize) -> bool {
    let mut i = after;
    while let Some(&b) = bytes.get(i) {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b',' | b':' | b'}' | b']' => return true,
            b'/' => return matches!(bytes.get(i + 1), Some(b'/' | b'*')),
            b'"' | b'\'' => return true,
            _ => return false,
        }
        i += 1;
    }
    true
}

/// A loose number made standard: `+1` → `1`, `.5` → `0.5`, `5.` → `5`, `007` → `7`,
/// `1e` → `1`. `None` when it is not a number at all.
fn normalize_number(raw: &str) -> Option<Number> {
    if let Some(n) = Number::parse(raw) {
        return Some(n);
    }
    let (sign, body) = match raw.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", raw.strip_prefix('+').unwrap_or(raw)),
    };
    let body = body.trim_end_matches(['.', 'e', 'E', '+', '-']);
    if body.is_empty() {
        return None;
    }
    let int_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let integer = body.get(..int_end)?.trim_start_matches('0');
    let rest = body.get(int_end..)?;
    let mut text = String::from(sign);
    text.push_str(if integer.is_empty() { "0" } else { integer });
    text.push_str(rest);
    Number::parse(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse_strict;

    /// (damaged input, expected repaired JSON)
    const FIXES: &[(&str, &str)] = &[
        // trailing / doubled / missing commas
        ("[1, 2, 3,]", "[1,2,3]"),
        ("{\"a\": 1,}", "{\"a\":1}"),
        ("[1,,2]", "[1,2]"),
        ("[1 2]", "[1,2]"),
        ("[\"a\" \"b\" 'c']", "[\"a\",\"b\",\"c\"]"),
        ("{\"a\": \"x\" \"b\": 1}", "{\"a\":\"x\",\"b\":1}"),
        ("{\"a\": 1\n \"b\": 2}", "{\"a\":1,\"b\":2}"),
        // quotes
        ("{'a': 'b'}", "{\"a\":\"b\"}"),
        (
            "{'say': 'it\\'s \"fine\"'}",
            "{\"say\":\"it's \\\"fine\\\"\"}",
        ),
        ("['it's ok']", "[\"it's ok\"]"),
        (
            "{\"q\": \"he said \"hi\" to me\"}",
            "{\"q\":\"he said \\\"hi\\\" to me\"}",
        ),
        (
            "{name: \"x\", _id2: 1, $ref: 2, 名字: 3}",
            "{\"name\":\"x\",\"_id2\":1,\"$ref\":2,\"名字\":3}",
        ),
        // control characters and escapes
        (
            "{\"a\": \"line1\nline2\ttab\u{1}\"}",
            "{\"a\":\"line1\\nline2\\ttab\\u0001\"}",
        ),
        ("[\"C:\\dir\\x\"]", "[\"C:\\\\dir\\\\x\"]"),
        ("[\"\\ud800x\"]", "[\"\u{fffd}x\"]"),
        ("[\"\\ud83d\\ude00\"]", "[\"😀\"]"),
        // two strings side by side are two items, their comma missing
        ("[\"a\"\"b\"]", "[\"a\",\"b\"]"),
        ("{\"a\": \"x\"\"b\": 1}", "{\"a\":\"x\",\"b\":1}"),
        ("['a''b']", "[\"a\",\"b\"]"),
        ("{\"a\": \"\", \"b\": \"\"}", "{\"a\":\"\",\"b\":\"\"}"),
        // literals and numbers
        (
            "[True, False, None, NaN, undefined]",
            "[true,false,null,null,null]",
        ),
        // literals in any case
        (
            "{\"a\": Null, \"b\": NULL, \"c\": none, \"d\": TRUE, \"e\": fAlSe}",
            "{\"a\":null,\"b\":null,\"c\":null,\"d\":true,\"e\":false}",
        ),
        ("[NAN, INFINITY, Undefined, inf]", "[null,null,null,null]"),
        // infinities, signed or not, and numbers beyond f64 become null: JSON (and
        // serde_json) cannot hold them
        ("[Infinity, -Infinity, NaN]", "[null,null,null]"),
        (
            "{\"a\": -Infinity, \"b\": +Infinity, \"c\": -NaN}",
            "{\"a\":null,\"b\":null,\"c\":null}",
        ),
        ("[1e400, -1e400, 1E+309, 2e308]", "[null,null,null,null]"),
        (
            "[1e308, 1.7976931348623157e308, 1e-400, -0]",
            "[1e308,1.7976931348623157e308,1e-400,-0]",
        ),
        ("[+1e400, .5e999, 1e400., .1E310]", "[null,null,null,null]"),
        (
            "[+1, .5, -.5, 5., 007, -00.25, 1e, 2E+]",
            "[1,0.5,-0.5,5,7,-0.25,1,2]",
        ),
        // comments, BOM, stray closers
        ("\u{feff}// memories\n[1, /* two */ 2]", "[1,2]"),
        (
            "{\"a\": \"x\" // note\n, \"b\": 'y' /* c */}",
            "{\"a\":\"x\",\"b\":\"y\"}",
        ),
        ("{\"a\": [1, 2]}}", "{\"a\":[1,2]}"),
        ("{\"a\": [1, 2}", "{\"a\":[1,2]}"),
        ("[{\"a\": 1]", "[{\"a\":1}]"),
        // truncation
        ("[1, 2", "[1,2]"),
        (
            "[{\"content\": \"user likes te",
            "[{\"content\":\"user likes te\"}]",
        ),
        ("{\"a\": 1, \"b\":", "{\"a\":1}"),
        ("{\"a\": 1, \"b\"", "{\"a\":1}"),
        ("{\"a\": 1, \"b", "{\"a\":1}"),
        ("{\"a\": 1, bee", "{\"a\":1}"),
        ("{\"a\": [1, tr", "{\"a\":[1]}"),
        ("{\"a\": -", "{}"),
        ("[\"abc\\", "[\"abc\"]"),
        ("[1, 2,", "[1,2]"),
        ("{", "{}"),
        ("'half", "\"half\""),
        ("[-Infin", "[]"),
        ("{\"a\": NU", "{}"),
    ];

    #[test]
    fn each_fix_produces_the_intended_json() {
        for (input, expected) in FIXES {
            let repaired = repair(input);
            assert_eq!(repaired.as_deref(), Some(*expected), "{input:?}");
            assert!(parse_strict(expected).is_ok(), "{expected}");
            assert!(
                serde_json::from_str::<serde_json::Value>(expected).is_ok(),
                "{expected}"
            );
        }
    }

    #[test]
    fn prose_and_unrepairable_text_give_none() {
        for input in [
            "",
            "   ",
            "Sure! Here is the list:",
            "true story",
            "[see above]",
            "{a 1}",
            "{1: 2: 3}",
            "{\"a\": 1} and more",
            "{\"a\": nope}",
            "1. First item",
            "/",
            "[1] and [2]",
            "[-true]",
            "[-foo]",
        ] {
            assert_eq!(repair(input), None, "{input:?}");
        }
    }

    #[test]
    fn nesting_beyond_the_limit_gives_up_instead_of_overflowing() {
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(repair(&deep), None);
        let ok = "[".repeat(MAX_DEPTH);
        let repaired = repair(&ok).unwrap();
        assert!(parse_strict(&repaired).is_ok());
        // and serde_json, which stops at 127 levels, accepts what we hand on
        assert!(serde_json::from_str::<serde_json::Value>(&repaired).is_ok());
    }
}
