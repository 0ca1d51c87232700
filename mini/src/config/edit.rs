//! Changing one setting of `config.toml` in place — "set key K in table T" — keeping
//! every comment, every other key and their order, so a file the user wrote (or the
//! commented template of `config init`) reads the same afterwards but for that line.
//!
//! The `toml` crate only parses, so this reads the text line by line with just enough
//! of TOML's lexical rules (basic and literal strings, their multi-line forms, arrays
//! and inline tables over several lines, comments) to tell which lines are table
//! headers and which start a `key = value`. What it decides: where the line goes (the
//! key's own line, else after the template's `#key = …` line, else after the table's
//! last key, else a new table at the end) and how the value is written. What it leaves
//! to the caller: checking the result — a table written inline (`model = {…}`) or with
//! dotted keys (`model.main = …`) is not found here, and the caller sees that when the
//! result does not parse to the value it asked for.

/// A value to write.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Str(&'a str),
    Int(u64),
}

impl Value<'_> {
    /// The value as TOML: strings as basic strings with every character TOML does not
    /// allow raw escaped.
    fn to_toml(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Str(s) => {
                let mut out = String::with_capacity(s.len() + 2);
                out.push('"');
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\t' => out.push_str("\\t"),
                        '\r' => out.push_str("\\r"),
                        c if c < ' ' || c == '\u{7f}' => {
                            out.push_str(&format!("\\u{:04X}", c as u32));
                        }
                        c => out.push(c),
                    }
                }
                out.push('"');
                out
            }
        }
    }
}

/// `text` with `key` in table `table` (its dotted path, e.g. `["profiles", "work",
/// "model"]`) set to `value`, or removed when `value` is `None`.
pub fn set(text: &str, table: &[&str], key: &str, value: Option<&Value>) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let kinds = classify(&lines);
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let header = kinds
        .iter()
        .position(|k| matches!(k, Kind::Header(p) if *p == table));
    let Some(header) = header else {
        let Some(value) = value else {
            return text.to_string();
        };
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(nl);
        }
        if !out.trim().is_empty() {
            out.push_str(nl);
        }
        let path: Vec<String> = table.iter().map(|s| key_text(s)).collect();
        out.push_str(&format!(
            "[{}]{nl}{} = {}{nl}",
            path.join("."),
            key_text(key),
            value.to_toml()
        ));
        return out;
    };
    let end = (header + 1..lines.len())
        .find(|i| matches!(kinds[*i], Kind::Header(_)))
        .unwrap_or(lines.len());
    let range = header + 1..end;
    let found = range.clone().find_map(|i| match &kinds[i] {
        Kind::Key { path, last, .. } if path.len() == 1 && path[0] == key => Some((i, *last)),
        _ => None,
    });
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    match (found, value) {
        (None, None) => return text.to_string(),
        (Some((first, last)), None) => {
            out.drain(first..=last);
        }
        (Some((first, last)), Some(value)) => {
            let line = lines[first];
            let indent = &line[..line.len() - line.trim_start().len()];
            let written = line[..line.find('=').unwrap_or(0)].trim();
            let comment = match &kinds[last] {
                Kind::Key { comment, .. } | Kind::Rest { comment } => *comment,
                _ => None,
            }
            .map(|at| {
                let before = &lines[last][..at];
                let gap = &before[before.trim_end().len()..];
                let gap = if gap.is_empty() { " " } else { gap };
                format!("{gap}{}", strip_eol(&lines[last][at..]))
            })
            .unwrap_or_default();
            let eol = &lines[last][strip_eol(lines[last]).len()..];
            let new = format!("{indent}{written} = {}{comment}{eol}", value.to_toml());
            out.splice(first..=last, [new]);
        }
        (None, Some(value)) => {
            let hinted = range.clone().rev().find(|i| {
                matches!(kinds[*i], Kind::Other) && commented_key(lines[*i]) == Some(key)
            });
            let after_keys = range.clone().rev().find_map(|i| match kinds[i] {
                Kind::Key { last, .. } => Some(last),
                _ => None,
            });
            let at = hinted.or(after_keys).unwrap_or(header);
            if !out[at].ends_with('\n') {
                out[at].push_str(nl);
            }
            out.insert(
                at + 1,
                format!("{} = {}{nl}", key_text(key), value.to_toml()),
            );
        }
    }
    out.concat()
}

/// A line without its line ending.
fn strip_eol(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r'])
}

/// A key or table name as TOML writes it: bare when it can be, else quoted.
fn key_text(name: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.chars().all(bare) {
        name.to_string()
    } else {
        Value::Str(name).to_toml()
    }
}

/// The key of a commented-out setting, `#key = …` or `# key = …` (the template's way of
/// showing a default or an example).
fn commented_key(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let (key, _) = rest.split_once('=')?;
    let key = key.trim();
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (!key.is_empty() && key.chars().all(bare)).then_some(key)
}

/// What a line is.
#[derive(Debug, PartialEq)]
enum Kind {
    /// `[a.b]`: its path.
    Header(Vec<String>),
    /// `key = value` starting here; its value ends on line `last`; `comment`: where a
    /// comment starts on this line.
    Key {
        path: Vec<String>,
        last: usize,
        comment: Option<usize>,
    },
    /// A line inside a value that started above (`comment` as for `Key`).
    Rest { comment: Option<usize> },
    /// Blank, a comment, `[[array]]` headers, anything else.
    Other,
}

/// Where the lexer is at the end of a line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lex {
    Code,
    MultiBasic,
    MultiLiteral,
}

fn classify(lines: &[&str]) -> Vec<Kind> {
    let mut kinds = Vec::with_capacity(lines.len());
    let (mut lex, mut depth) = (Lex::Code, 0i32);
    let mut open: Option<usize> = None; // the key line whose value is still open
    for (i, line) in lines.iter().enumerate() {
        let at_start = lex == Lex::Code && depth == 0;
        let comment = scan(line, &mut lex, &mut depth);
        let closed = lex == Lex::Code && depth <= 0;
        if closed {
            depth = 0;
        }
        let kind = if !at_start {
            Kind::Rest { comment }
        } else if let Some(path) = header(line) {
            Kind::Header(path)
        } else if let Some(path) = key_line(line) {
            Kind::Key {
                path,
                last: i,
                comment,
            }
        } else {
            Kind::Other
        };
        if matches!(kind, Kind::Key { .. }) && !closed {
            open = Some(i);
        }
        kinds.push(kind);
        if closed {
            if let Some(start) = open.take() {
                if let Kind::Key { last, .. } = &mut kinds[start] {
                    *last = i;
                }
            }
        }
    }
    kinds
}

/// Runs the lexer over one line; returns where a comment starts on it.
fn scan(line: &str, lex: &mut Lex, depth: &mut i32) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match *lex {
            Lex::MultiBasic => match b[i] {
                b'\\' => i += 2,
                b'"' if b[i..].starts_with(b"\"\"\"") => {
                    *lex = Lex::Code;
                    i += 3;
                }
                _ => i += 1,
            },
            Lex::MultiLiteral => {
                if b[i..].starts_with(b"'''") {
                    *lex = Lex::Code;
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Lex::Code => match b[i] {
                b'#' => return Some(i),
                b'"' if b[i..].starts_with(b"\"\"\"") => {
                    *lex = Lex::MultiBasic;
                    i += 3;
                }
                b'\'' if b[i..].starts_with(b"'''") => {
                    *lex = Lex::MultiLiteral;
                    i += 3;
                }
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                b'\'' => {
                    i += 1;
                    while i < b.len() && b[i] != b'\'' && b[i] != b'\n' {
                        i += 1;
                    }
                    i += 1;
                }
                b'[' | b'{' => {
                    *depth += 1;
                    i += 1;
                }
                b']' | b'}' => {
                    *depth -= 1;
                    i += 1;
                }
                _ => i += 1,
            },
        }
    }
    None
}

/// A dotted key at the start of `s` (`a."b c".d`), and the text after it.
fn key_path(s: &str) -> Option<(Vec<String>, &str)> {
    let mut path = Vec::new();
    let mut rest = s.trim_start();
    loop {
        let (part, after) = if let Some(r) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = r.char_indices();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        c => out.push(c),
                    },
                    (_, c) => out.push(c),
                }
            };
            (out, &r[end + 1..])
        } else if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'')?;
            (r[..end].to_string(), &r[end + 1..])
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            if end == 0 {
                return None;
            }
            (rest[..end].to_string(), &rest[end..])
        };
        path.push(part);
        rest = after.trim_start();
        match rest.strip_prefix('.') {
            Some(r) => rest = r.trim_start(),
            None => return Some((path, rest)),
        }
    }
}

/// The path of a `[table]` header line (not `[[array]]`).
fn header(line: &str) -> Option<Vec<String>> {
    let inner = line.trim_start().strip_prefix('[')?;
    if inner.starts_with('[') {
        return None;
    }
    let (path, rest) = key_path(inner)?;
    let rest = rest.strip_prefix(']')?.trim();
    (rest.is_empty() || rest.starts_with('#')).then_some(path)
}

/// The key of a `key = value` line.
fn key_line(line: &str) -> Option<Vec<String>> {
    let (path, rest) = key_path(line)?;
    rest.starts_with('=').then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &[&str] = &["model"];

    /// The table at `path` of the parsed text.
    fn table<'a>(doc: &'a toml::Table, path: &[&str]) -> &'a toml::Table {
        path.iter().fold(doc, |t, k| {
            t.get(*k).and_then(toml::Value::as_table).expect(k)
        })
    }

    fn parsed(text: &str) -> toml::Table {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn the_template_gets_the_key_under_its_commented_default_and_keeps_the_rest() {
        let template = super::super::CONFIG_TEMPLATE;
        let text = set(
            template,
            MODEL,
            "base_url",
            Some(&Value::Str("http://127.0.0.1:8081/v1")),
        );
        let text = set(&text, MODEL, "context_window", Some(&Value::Int(32768)));
        let doc = parsed(&text);
        let model = table(&doc, MODEL);
        assert_eq!(model["base_url"].as_str(), Some("http://127.0.0.1:8081/v1"));
        assert_eq!(model["context_window"].as_integer(), Some(32768));
        assert!(text.contains(
            "#base_url = \"http://127.0.0.1:11434/v1\"\nbase_url = \"http://127.0.0.1:8081/v1\"\n"
        ));
        assert!(text.contains("#context_window = 8192\ncontext_window = 32768\n#reserved_output"));
        // Nothing else changed: removing the two new lines gives the template back.
        let back: String = text
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("base_url =") && !l.starts_with("context_window ="))
            .collect();
        assert_eq!(back, template);
        // [model.timeouts] and the profiles' examples are untouched.
        assert_eq!(
            set(&text, MODEL, "base_url", None),
            set(template, MODEL, "context_window", Some(&Value::Int(32768)))
        );
    }

    #[test]
    fn a_present_key_is_replaced_in_place_with_its_comment() {
        let text = "# mine\n[model]\n  main = \"a\"   # the big one\ncheap = 'b'\n\n[agent]\nmax_steps = 3\n";
        let out = set(text, MODEL, "main", Some(&Value::Str("qwen2.5:7b")));
        assert_eq!(
            out,
            "# mine\n[model]\n  main = \"qwen2.5:7b\"   # the big one\ncheap = 'b'\n\n[agent]\nmax_steps = 3\n"
        );
        let out = set(text, MODEL, "cheap", None);
        assert_eq!(
            out,
            "# mine\n[model]\n  main = \"a\"   # the big one\n\n[agent]\nmax_steps = 3\n"
        );
    }

    #[test]
    fn a_missing_key_goes_after_the_tables_last_key_not_into_the_next_table() {
        let text = "[model]\nmain = \"a\"\n# about agent\n\n[agent]\nmax_steps = 3\n";
        let out = set(text, MODEL, "context_window", Some(&Value::Int(4096)));
        assert_eq!(
            out,
            "[model]\nmain = \"a\"\ncontext_window = 4096\n# about agent\n\n[agent]\nmax_steps = 3\n"
        );
        // An empty table: right after its header.
        assert_eq!(
            set("[model]\n[agent]\n", MODEL, "main", Some(&Value::Str("m"))),
            "[model]\nmain = \"m\"\n[agent]\n"
        );
    }

    #[test]
    fn a_missing_table_is_appended_with_a_quoted_name_when_needed() {
        let text = "[model]\nmain = \"a\"";
        let path = ["profiles", "my work", "model"];
        let out = set(text, &path, "main", Some(&Value::Str("b")));
        assert_eq!(
            out,
            "[model]\nmain = \"a\"\n\n[profiles.\"my work\".model]\nmain = \"b\"\n"
        );
        assert_eq!(table(&parsed(&out), &path)["main"].as_str(), Some("b"));
        // Written again, the table is found by its quoted name.
        let again = set(&out, &path, "main", Some(&Value::Str("c")));
        assert_eq!(again, out.replace("\"b\"", "\"c\""));
        assert_eq!(
            set("", MODEL, "main", Some(&Value::Str("m"))),
            "[model]\nmain = \"m\"\n"
        );
        assert_eq!(set("x = 1\n", MODEL, "main", None), "x = 1\n");
    }

    #[test]
    fn headers_and_keys_inside_strings_and_arrays_are_not_taken_for_real_ones() {
        let text = concat!(
            "note = \"\"\"\n[model]\nmain = \"fake\"\n\"\"\"\n",
            "lit = '''\n[model]\n'''\n",
            "[agent]\nlist = [\n  \"[model]\",\n  [1, 2],\n]\n",
            "[model] # the real one\n",
            "main = \"\"\"multi\nline\"\"\" # old\n",
            "cheap = \"c # not a comment\"\n",
        );
        let out = set(text, MODEL, "main", Some(&Value::Str("new")));
        let doc = parsed(&out);
        assert_eq!(table(&doc, MODEL)["main"].as_str(), Some("new"));
        assert_eq!(
            table(&doc, MODEL)["cheap"].as_str(),
            Some("c # not a comment")
        );
        assert!(
            out.ends_with(
                "[model] # the real one\nmain = \"new\" # old\ncheap = \"c # not a comment\"\n"
            ),
            "{out}"
        );
        assert!(
            out.starts_with("note = \"\"\"\n[model]\nmain = \"fake\"\n"),
            "{out}"
        );
        let out = set(text, &["agent"], "max_steps", Some(&Value::Int(4)));
        assert!(
            out.contains("  [1, 2],\n]\nmax_steps = 4\n[model]"),
            "{out}"
        );
        parsed(&out);
    }

    #[test]
    fn line_endings_and_a_missing_final_newline_are_kept() {
        let text = "[model]\r\nmain = \"a\"\r\n";
        assert_eq!(
            set(text, MODEL, "cheap", Some(&Value::Str("b"))),
            "[model]\r\nmain = \"a\"\r\ncheap = \"b\"\r\n"
        );
        assert_eq!(
            set(
                "[model]\nmain = \"a\"",
                MODEL,
                "main",
                Some(&Value::Str("b"))
            ),
            "[model]\nmain = \"b\""
        );
        assert_eq!(
            set(
                "[model]\nmain = \"a\"",
                MODEL,
                "cheap",
                Some(&Value::Str("b"))
            ),
            "[model]\nmain = \"a\"\ncheap = \"b\"\n"
        );
    }

    #[test]
    fn any_string_is_written_so_that_it_parses_back_to_itself() {
        let odd = [
            "",
            "plain",
            "quote \" and backslash \\ and \\\"",
            "new\nline\r\ttab",
            "\u{0}\u{1f}\u{7f}",
            "密钥 ünïcödé 🚀",
            "''' and \"\"\"",
            "# not a comment",
        ];
        for s in odd {
            let out = set(
                "[model]\nmain = \"x\"\n",
                MODEL,
                "api_key",
                Some(&Value::Str(s)),
            );
            assert_eq!(
                table(&parsed(&out), MODEL)["api_key"].as_str(),
                Some(s),
                "{out}"
            );
            let out = set("[model]\n", MODEL, "main", Some(&Value::Str(s)));
            let again = set(&out, MODEL, "main", Some(&Value::Str("y")));
            assert_eq!(again, "[model]\nmain = \"y\"\n", "{s:?}");
        }
    }

    /// Many generated values (a fixed LCG over characters TOML treats specially), each
    /// set into the template under a profile: it parses back to the value, and taking
    /// the added table away gives the template back.
    #[test]
    fn generated_values_round_trip_and_leave_the_rest_of_the_file_alone() {
        const PALETTE: &[char] = &[
            'a', 'Z', '0', ' ', '"', '\'', '\\', '#', '=', '[', ']', '{', '}', '\n', '\r', '\t',
            '\u{0}', '\u{7f}', '\u{1b}', '.', '密', '🚀', '\u{2028}',
        ];
        let template = super::super::CONFIG_TEMPLATE;
        let path = ["profiles", "p", "model"];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..300 {
            let mut s = String::new();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(seed >> 59) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push(PALETTE[(seed >> 33) as usize % PALETTE.len()]);
            }
            let out = set(template, &path, "main", Some(&Value::Str(&s)));
            assert_eq!(
                table(&parsed(&out), &path)["main"].as_str(),
                Some(s.as_str())
            );
            assert_eq!(
                out.strip_suffix(&format!(
                    "\n[profiles.p.model]\nmain = {}\n",
                    Value::Str(&s).to_toml()
                )),
                Some(template)
            );
        }
    }

    #[test]
    fn profile_tables_are_told_apart_from_the_top_level() {
        let text = "[model]\nmain = \"top\"\n\n[profiles.work.model]\nmain = \"w\"\n\n[profiles.work.model.timeouts]\nconnect = 5\n";
        let out = set(
            text,
            &["profiles", "work", "model"],
            "cheap",
            Some(&Value::Str("c")),
        );
        assert!(
            out.contains("main = \"w\"\ncheap = \"c\"\n\n[profiles.work.model.timeouts]"),
            "{out}"
        );
        let out = set(text, MODEL, "main", Some(&Value::Str("t2")));
        assert!(out.starts_with("[model]\nmain = \"t2\"\n\n[profiles.work.model]\nmain = \"w\""));
    }
}
