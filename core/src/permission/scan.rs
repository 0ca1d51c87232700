//! Pulling every string out of the raw argument text of a tool call.
//!
//! The core has no JSON parser, and the arguments come from a model: they may be valid
//! JSON, damaged JSON (which the shell's repair could still turn into a call), or plain
//! text. This scanner never fails and never panics. It decides which pieces of text the
//! escalation rules look at; it does not decide what they mean.
//!
//! What it returns, in order of appearance:
//! - every string literal, decoded (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`,
//!   `\uXXXX` including surrogate pairs; a lone surrogate becomes U+FFFD; an unknown or
//!   malformed escape is kept as written), marked as an object key or a value, values
//!   carrying the key they belong to (through arrays: `{"paths": ["a", "b"]}` gives `a`
//!   and `b` under `paths`). An unterminated literal runs to the end of the text.
//! - every bare run of text outside literals (`{cmd: rm -rf /}` gives key `cmd` and value
//!   `rm -rf /`; numbers and `true` come out as text too), because a repair step could
//!   quote them later;
//! - for every array holding two or more string values, their concatenation with single
//!   spaces ([`StringKind::Joined`]), so an argv-style `["rm", "-rf", "/"]` is seen as
//!   the command it is.
//!
//! Text whose first non-blank character is not `{`, `[` or `"` is not JSON: it comes back
//! whole as one [`StringKind::Whole`] string.
//!
//! A key repeated in one object (`{"command": "ls", "command": "rm -rf ."}`) is noted
//! ([`duplicate_key`]): the escalation refuses such a call, because a reader that keeps
//! the first value and one that keeps the last (serde_json) would run different things.

use alloc::collections::BTreeSet;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;

/// Where a string sat in the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringKind {
    /// An object key.
    Key,
    /// A value (in an object, an array or at the top level).
    Value,
    /// The string values of one array joined by spaces.
    Joined,
    /// The arguments were not JSON: the whole text.
    Whole,
}

/// One string found in the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgString {
    /// The decoded text.
    pub text: String,
    /// Key, value, joined array or whole text.
    pub kind: StringKind,
    /// For values and joined arrays: the key of the nearest enclosing object member.
    /// Shared (`Rc`) by every value under it, so a long key over many values is held
    /// once: the scan stays linear in memory and time on hostile input.
    pub key: Option<Rc<str>>,
    /// How many objects and arrays enclose it: 1 for a member of the top-level object.
    pub depth: usize,
}

enum Frame {
    Object {
        /// The key of the member being read: the owner of its values.
        key: Option<Rc<str>>,
        expect_key: bool,
        /// The keys seen so far in this object.
        keys: BTreeSet<String>,
    },
    Array {
        /// The key owning this array's values, taken when it opened (so finding it
        /// never walks the stack).
        owner: Option<Rc<str>>,
        joined: String,
        count: usize,
    },
}

/// Every string in `raw` (see the module docs). Never panics, whatever the input.
pub fn arg_strings(raw: &str) -> Vec<ArgString> {
    scan(raw).0
}

/// The first key that appears twice in one object of `raw`, if any (see the module
/// docs). Tolerant like [`arg_strings`].
pub fn duplicate_key(raw: &str) -> Option<String> {
    scan(raw).1
}

/// The strings of `raw` and its first repeated key.
pub(crate) fn scan(raw: &str) -> (Vec<ArgString>, Option<String>) {
    let mut out = Vec::new();
    let first = raw.trim_start().chars().next();
    if !matches!(first, Some('{' | '[' | '"')) {
        out.push(ArgString {
            text: String::from(raw),
            kind: StringKind::Whole,
            key: None,
            depth: 0,
        });
        return (out, None);
    }
    let mut scanner = Scanner {
        stack: Vec::new(),
        out,
        duplicate: None,
    };
    let mut bare = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                scanner.flush(&mut bare);
                let text = read_literal(&mut chars);
                scanner.emit(text);
            }
            '{' => {
                scanner.flush(&mut bare);
                scanner.stack.push(Frame::Object {
                    key: None,
                    expect_key: true,
                    keys: BTreeSet::new(),
                });
            }
            '[' => {
                scanner.flush(&mut bare);
                let owner = scanner.owner_key();
                scanner.stack.push(Frame::Array {
                    owner,
                    joined: String::new(),
                    count: 0,
                });
            }
            '}' | ']' => {
                scanner.flush(&mut bare);
                scanner.pop();
            }
            ':' => {
                scanner.flush(&mut bare);
                if let Some(Frame::Object { expect_key, .. }) = scanner.stack.last_mut() {
                    *expect_key = false;
                }
            }
            ',' => {
                scanner.flush(&mut bare);
                if let Some(Frame::Object { expect_key, .. }) = scanner.stack.last_mut() {
                    *expect_key = true;
                }
            }
            c if c.is_whitespace() => {
                if !bare.is_empty() {
                    bare.push(' ');
                }
            }
            c => bare.push(c),
        }
    }
    scanner.flush(&mut bare);
    while !scanner.stack.is_empty() {
        scanner.pop();
    }
    (scanner.out, scanner.duplicate)
}

/// The value under `key`, decoded — e.g. the `action` of a `memory` call for
/// [`builtin_level`](super::builtin_level), or the `command` of a `shell` call for
/// [`shell_command_level`](super::shell_command_level). The shallowest occurrence wins
/// (`{"command": …}` at the top before one inside `opts`), and of a key repeated at that
/// depth the LAST value, as serde_json keeps it — so the level is computed on what the
/// shell will run (a repeated key is refused anyway, see [`duplicate_key`]). Tolerant
/// like [`arg_strings`]; `None` when the key has no value.
pub fn string_arg(raw: &str, key: &str) -> Option<String> {
    let mut best: Option<ArgString> = None;
    for s in arg_strings(raw) {
        if s.kind == StringKind::Value
            && s.key.as_deref() == Some(key)
            && best.as_ref().is_none_or(|b| s.depth <= b.depth)
        {
            best = Some(s);
        }
    }
    best.map(|s| s.text)
}

struct Scanner {
    stack: Vec<Frame>,
    out: Vec<ArgString>,
    duplicate: Option<String>,
}

impl Scanner {
    /// The key owning a value at the current position: the nearest object's key, which
    /// the innermost frame holds (an array copies it when it opens). O(1): a shared
    /// pointer, never a copy of the text.
    fn owner_key(&self) -> Option<Rc<str>> {
        match self.stack.last()? {
            Frame::Object { key, .. } => key.clone(),
            Frame::Array { owner, .. } => owner.clone(),
        }
    }

    fn emit(&mut self, text: String) {
        let owner = self.owner_key();
        let depth = self.stack.len();
        match self.stack.last_mut() {
            Some(Frame::Object {
                key,
                expect_key: true,
                keys,
            }) => {
                *key = Some(Rc::from(text.as_str()));
                if !keys.insert(text.clone()) && self.duplicate.is_none() {
                    self.duplicate = Some(text.clone());
                }
                self.out.push(ArgString {
                    text,
                    kind: StringKind::Key,
                    key: None,
                    depth,
                });
            }
            Some(Frame::Array { joined, count, .. }) => {
                if *count > 0 {
                    joined.push(' ');
                }
                joined.push_str(&text);
                *count += 1;
                self.out.push(ArgString {
                    text,
                    kind: StringKind::Value,
                    key: owner,
                    depth,
                });
            }
            _ => self.out.push(ArgString {
                text,
                kind: StringKind::Value,
                key: owner,
                depth,
            }),
        }
    }

    fn flush(&mut self, bare: &mut String) {
        let text = bare.trim();
        if !text.is_empty() {
            let text = String::from(text);
            self.emit(text);
        }
        bare.clear();
    }

    fn pop(&mut self) {
        if let Some(Frame::Array {
            owner,
            joined,
            count,
        }) = self.stack.pop()
        {
            if count >= 2 {
                let key = owner;
                let depth = self.stack.len() + 1;
                self.out.push(ArgString {
                    text: joined,
                    kind: StringKind::Joined,
                    key,
                    depth,
                });
            }
        }
    }
}

/// Reads a string literal after its opening quote, decoding escapes.
fn read_literal(chars: &mut core::iter::Peekable<core::str::Chars<'_>>) -> String {
    let mut text = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return text,
            '\\' => match chars.next() {
                Some('"') => text.push('"'),
                Some('\\') => text.push('\\'),
                Some('/') => text.push('/'),
                Some('b') => text.push('\u{8}'),
                Some('f') => text.push('\u{c}'),
                Some('n') => text.push('\n'),
                Some('r') => text.push('\r'),
                Some('t') => text.push('\t'),
                Some('u') => read_unicode_escape(chars, &mut text),
                Some(other) => {
                    text.push('\\');
                    text.push(other);
                }
                None => text.push('\\'),
            },
            c => text.push(c),
        }
    }
    text
}

/// Four hex digits after `\u`, or `None` (consuming nothing) if they are not there.
fn read_hex4(chars: &mut core::iter::Peekable<core::str::Chars<'_>>) -> Option<u32> {
    let rest = chars.clone();
    let mut value = 0u32;
    let mut taken = 0;
    for c in rest.take(4) {
        value = value * 16 + c.to_digit(16)?;
        taken += 1;
    }
    if taken < 4 {
        return None;
    }
    for _ in 0..4 {
        chars.next();
    }
    Some(value)
}

fn read_unicode_escape(chars: &mut core::iter::Peekable<core::str::Chars<'_>>, text: &mut String) {
    let Some(unit) = read_hex4(chars) else {
        text.push_str("\\u");
        return;
    };
    match unit {
        0xD800..=0xDBFF => {
            // A high surrogate: combine with a following `\uDC00`–`\uDFFF`.
            let mut look = chars.clone();
            if look.next() == Some('\\') && look.next() == Some('u') {
                if let Some(low @ 0xDC00..=0xDFFF) = read_hex4(&mut look) {
                    let scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    text.push(char::from_u32(scalar).unwrap_or('\u{FFFD}'));
                    *chars = look;
                    return;
                }
            }
            text.push('\u{FFFD}');
        }
        0xDC00..=0xDFFF => text.push('\u{FFFD}'),
        other => text.push(char::from_u32(other).unwrap_or('\u{FFFD}')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn texts(raw: &str) -> Vec<(String, StringKind, Option<String>)> {
        arg_strings(raw)
            .into_iter()
            .map(|s| (s.text, s.kind, s.key.as_deref().map(String::from)))
            .collect()
    }

    /// Bytes the scan holds: every text, and every distinct key allocation once.
    fn held_bytes(raw: &str) -> usize {
        let strings = arg_strings(raw);
        let mut keys = alloc::collections::BTreeMap::new();
        for s in &strings {
            if let Some(k) = &s.key {
                keys.insert(Rc::as_ptr(k) as *const u8 as usize, k.len());
            }
        }
        strings.iter().map(|s| s.text.len()).sum::<usize>() + keys.values().sum::<usize>()
    }

    /// A long key over many values, and deep arrays over many
    /// strings, were quadratic (the key copied into every value; the stack walked per
    /// value). 1 MB of each now holds a bounded amount of text.
    #[test]
    fn hostile_input_keeps_the_scan_linear() {
        const MB: usize = 1 << 20;
        let key = "k".repeat(MB / 2);
        let long_key = alloc::format!("{{\"{key}\": [{}\"a\"]}}", "\"a\",".repeat(MB / 8));
        let deep = alloc::format!("{}{}", "[".repeat(MB / 2), "\"a\",".repeat(MB / 8));
        let nested_keys = alloc::format!(
            "{{\"{}\": {}{}",
            "k".repeat(MB / 4),
            "[{\"x\": [\"a\", \"b\"]}, ".repeat(MB / 64),
            "]}"
        );
        for raw in [&long_key, &deep, &nested_keys] {
            let held = held_bytes(raw);
            assert!(
                held <= 3 * raw.len(),
                "input {} bytes, held {held}",
                raw.len()
            );
        }
        // The values still carry their key.
        let strings = arg_strings(&long_key);
        assert!(strings
            .iter()
            .filter(|s| s.kind == StringKind::Value)
            .all(|s| s.key.as_deref() == Some(key.as_str())));
    }

    fn s(t: &str) -> String {
        String::from(t)
    }

    #[test]
    fn keys_and_values_with_their_keys() {
        assert_eq!(
            texts(r#"{"path": "notes/a.md", "n": 3, "ok": true}"#),
            vec![
                (s("path"), StringKind::Key, None),
                (s("notes/a.md"), StringKind::Value, Some(s("path"))),
                (s("n"), StringKind::Key, None),
                (s("3"), StringKind::Value, Some(s("n"))),
                (s("ok"), StringKind::Key, None),
                (s("true"), StringKind::Value, Some(s("ok"))),
            ]
        );
    }

    #[test]
    fn arrays_belong_to_their_key_and_are_joined() {
        assert_eq!(
            texts(r#"{"argv": ["rm", "-rf", "/"], "o": {"p": "x"}}"#),
            vec![
                (s("argv"), StringKind::Key, None),
                (s("rm"), StringKind::Value, Some(s("argv"))),
                (s("-rf"), StringKind::Value, Some(s("argv"))),
                (s("/"), StringKind::Value, Some(s("argv"))),
                (s("rm -rf /"), StringKind::Joined, Some(s("argv"))),
                (s("o"), StringKind::Key, None),
                (s("p"), StringKind::Key, None),
                (s("x"), StringKind::Value, Some(s("p"))),
            ]
        );
    }

    #[test]
    fn escapes_are_decoded() {
        let cases = [
            (r#"["a\"b"]"#, "a\"b"),
            (r#"["a\\b"]"#, "a\\b"),
            (r#"["\/etc\/passwd"]"#, "/etc/passwd"),
            (r#"["l1\nl2\tx\r"]"#, "l1\nl2\tx\r"),
            (r#"["\u0041\u00e9\u4e2d"]"#, "Aé中"),
            (r#"["\ud83d\ude00"]"#, "😀"),
            (r#"["\ud83dx"]"#, "\u{FFFD}x"),
            (r#"["\ude00"]"#, "\u{FFFD}"),
            (r#"["\u12"]"#, "\\u12"),
            (r#"["\u0000"]"#, "\0"),
            (r#"["\q"]"#, "\\q"),
            (r#"["rm -rf \u002f"]"#, "rm -rf /"),
        ];
        for (raw, want) in cases {
            let got = arg_strings(raw);
            assert_eq!(got.first().map(|a| a.text.as_str()), Some(want), "{raw}");
        }
    }

    #[test]
    fn damaged_json_still_yields_its_text() {
        assert_eq!(
            texts("{cmd: rm -rf /}"),
            vec![
                (s("cmd"), StringKind::Key, None),
                (s("rm -rf /"), StringKind::Value, Some(s("cmd"))),
            ]
        );
        assert_eq!(
            texts(r#"{"command": "sudo reboot"#),
            vec![
                (s("command"), StringKind::Key, None),
                (s("sudo reboot"), StringKind::Value, Some(s("command"))),
            ]
        );
        assert_eq!(
            texts(r#"{'cmd': 'rm -rf /'}"#)
                .into_iter()
                .map(|t| t.0)
                .collect::<Vec<_>>(),
            vec![s("'cmd'"), s("'rm -rf /'")]
        );
    }

    #[test]
    fn string_arg_finds_the_value_of_a_key() {
        let raw = r#"{"action": "search", "query": "tea", "opts": {"command": "ls -la"}}"#;
        assert_eq!(string_arg(raw, "action"), Some(s("search")));
        assert_eq!(string_arg(raw, "command"), Some(s("ls -la")));
        assert_eq!(string_arg(raw, "missing"), None);
        assert_eq!(string_arg(r#"{"action": }"#, "action"), None);
        assert_eq!(string_arg("search", "action"), None);
    }

    #[test]
    fn string_arg_takes_the_last_of_a_repeated_key_like_serde_json() {
        let cases = [
            (
                r#"{"command": "git status", "command": "python3 x.py"}"#,
                "python3 x.py",
            ),
            (r#"{"command": "a", "command": "b", "command": "c"}"#, "c"),
            (r#"{"command": "top", "opts": {"command": "inner"}}"#, "top"),
            (r#"{"opts": {"command": "inner"}, "command": "top"}"#, "top"),
        ];
        for (raw, want) in cases {
            let ours = string_arg(raw, "command");
            assert_eq!(ours.as_deref(), Some(want), "{raw}");
            let v: serde_json::Value = serde_json::from_str(raw).unwrap();
            assert_eq!(v["command"].as_str(), Some(want), "{raw}");
        }
    }

    #[test]
    fn repeated_keys_are_noticed() {
        let cases = [
            (
                r#"{"command": "ls", "command": "rm -rf ."}"#,
                Some("command"),
            ),
            (r#"{"a": {"p": 1, "p": 2}}"#, Some("p")),
            (r#"{cmd: 1, cmd: 2}"#, Some("cmd")),
            (r#"{"a": 1, "b": {"a": 2}}"#, None),
            (r#"[{"a": 1}, {"a": 2}]"#, None),
            (r#"{"a": "a", "b": "a"}"#, None),
            ("a a", None),
        ];
        for (raw, want) in cases {
            assert_eq!(duplicate_key(raw).as_deref(), want, "{raw}");
        }
    }

    #[test]
    fn non_json_is_one_whole_string() {
        assert_eq!(
            texts("rm -rf / now"),
            vec![(s("rm -rf / now"), StringKind::Whole, None)]
        );
        assert_eq!(texts(""), vec![(s(""), StringKind::Whole, None)]);
    }
}
