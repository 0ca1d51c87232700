//! Reading a SKILL.md: the YAML-style front matter and the Markdown body.
//!
//! Only the small part of YAML that skill files use is understood: `key: value` lines;
//! plain, `"double"` and `'single'` quoted values; `|` and `>` block scalars; `[a, b]`
//! flow lists and `- a` block lists; indented continuation lines; `#` comments. Nested
//! mappings (such as `metadata:`) are kept as their indented text. Anything else is a
//! [`SkillError::MalformedLine`] with its line number, never a guess.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{NameProblem, SkillError};
use super::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};

/// A parsed SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    /// The skill's name: valid per the Agent Skills rule (see [`validate_name`]). The
    /// shell checks that it matches the skill's directory name.
    pub name: String,
    /// What the skill does and when to use it: what the model sees before loading it.
    pub description: String,
    /// Optional `tags`, as written (list, block list or comma-separated).
    pub tags: Vec<String>,
    /// Every other front-matter key with its value as text (`license`,
    /// `allowed-tools`, `metadata`, …), in file order. Lists are joined with `, `;
    /// nested mappings keep their lines, dedented, joined with `\n`.
    pub extra: Vec<(String, String)>,
    /// Everything after the closing `---` line, untouched: the instructions the
    /// `load_skill` tool returns.
    pub body: String,
}

/// Reads a SKILL.md: front matter between `---` lines at the very top (a BOM and CRLF
/// line ends are fine), then the body. Requires a valid `name` and a non-empty
/// `description` of at most [`MAX_DESCRIPTION_CHARS`] characters.
pub fn parse_skill_md(text: &str) -> Result<SkillDoc, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.is_empty() {
        return Err(SkillError::NoFrontMatter);
    }
    let mut front = Vec::new();
    let mut offset = 0;
    let mut body_start = None;
    for (index, raw) in text.split_inclusive('\n').enumerate() {
        offset += raw.len();
        let content = raw.strip_suffix('\n').unwrap_or(raw);
        let content = content.strip_suffix('\r').unwrap_or(content);
        let is_fence = content.trim_end() == "---";
        if index == 0 {
            if !is_fence {
                return Err(SkillError::NoFrontMatter);
            }
        } else if is_fence {
            body_start = Some(offset);
            break;
        } else {
            front.push(Line {
                number: index + 1,
                text: content,
            });
        }
    }
    let body = body_start
        .and_then(|at| text.get(at..))
        .ok_or(SkillError::UnclosedFrontMatter)?;
    build(parse_fields(&front)?, body)
}

/// Checks a skill name against the Agent Skills rule: 1–64 characters of `a-z`, `0-9`
/// and `-`, no hyphen at either end, never two in a row. Names become directory names
/// and tool arguments, hence the small alphabet.
pub fn validate_name(name: &str) -> Result<(), NameProblem> {
    let chars = name.chars().count();
    if chars == 0 {
        return Err(NameProblem::Empty);
    }
    if chars > MAX_NAME_CHARS {
        return Err(NameProblem::TooLong(chars));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(NameProblem::InvalidChar(c));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(NameProblem::EdgeHyphen);
    }
    if name.contains("--") {
        return Err(NameProblem::DoubleHyphen);
    }
    Ok(())
}

/// One line of the front matter, numbered as in the file.
struct Line<'a> {
    number: usize,
    text: &'a str,
}

/// One `key: value` of the front matter.
struct Field<'a> {
    key: &'a str,
    line: usize,
    value: FieldValue,
}

enum FieldValue {
    /// A scalar: plain, quoted or block.
    Text(String),
    /// A flow or block list.
    List(Vec<String>),
    /// Indented lines under an empty value that are not a list (a nested mapping),
    /// dedented.
    Nested(Vec<String>),
}

impl FieldValue {
    /// The value as one line of text, lists joined with `sep`.
    fn joined(self, sep: &str) -> String {
        match self {
            FieldValue::Text(s) => s,
            FieldValue::List(items) | FieldValue::Nested(items) => items.join(sep),
        }
    }
}

fn is_blank_or_comment(text: &str) -> bool {
    let t = text.trim();
    t.is_empty() || t.starts_with('#')
}

fn is_indented(text: &str) -> bool {
    text.starts_with([' ', '\t'])
}

fn is_list_item(text: &str) -> bool {
    let t = text.trim_start();
    t == "-" || t.starts_with("- ")
}

fn parse_fields<'a>(lines: &[Line<'a>]) -> Result<Vec<Field<'a>>, SkillError> {
    let mut fields = Vec::new();
    let mut i = 0;
    while let Some(line) = lines.get(i) {
        i += 1;
        if is_blank_or_comment(line.text) {
            continue;
        }
        let malformed = SkillError::MalformedLine { line: line.number };
        if is_indented(line.text) || line.text.starts_with('-') {
            return Err(malformed);
        }
        let (key, rest) = split_key(line.text).ok_or(malformed)?;
        // The lines that belong to this key: indented ones, blank ones, and `- item`
        // lines at the margin under an empty value (YAML allows both list styles).
        let start = i;
        while let Some(next) = lines.get(i) {
            let belongs = next.text.trim().is_empty()
                || is_indented(next.text)
                || (rest.is_empty() && is_list_item(next.text));
            if !belongs {
                break;
            }
            i += 1;
        }
        let continuation: Vec<&str> = lines
            .get(start..i)
            .unwrap_or_default()
            .iter()
            .map(|l| l.text)
            .collect();
        let value = parse_value(rest, &continuation, line.number)?;
        fields.push(Field {
            key,
            line: line.number,
            value,
        });
    }
    Ok(fields)
}

/// `key: rest` → (key, rest trimmed). The colon must be followed by a space or end
/// the line (so `url: http://x` splits at the first colon only).
fn split_key(text: &str) -> Option<(&str, &str)> {
    let colon = text
        .char_indices()
        .find(|&(i, c)| {
            c == ':'
                && text
                    .get(i + 1..)
                    .is_some_and(|r| r.is_empty() || r.starts_with([' ', '\t']))
        })?
        .0;
    let key = unquote_key(text.get(..colon)?.trim());
    if key.is_empty() {
        return None;
    }
    Some((key, text.get(colon + 1..)?.trim()))
}

fn unquote_key(key: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = key.strip_prefix(q).and_then(|k| k.strip_suffix(q)) {
            return inner;
        }
    }
    key
}

/// Cuts a ` # comment` off a plain value.
fn strip_comment(text: &str) -> &str {
    if text.starts_with('#') {
        return "";
    }
    match text.find(" #").or_else(|| text.find("\t#")) {
        Some(at) => text.get(..at).unwrap_or(text).trim_end(),
        None => text,
    }
}

fn parse_value(rest: &str, continuation: &[&str], line: usize) -> Result<FieldValue, SkillError> {
    if let Some(style) = block_indicator(rest) {
        return Ok(FieldValue::Text(block_scalar(style, continuation)));
    }
    let content: Vec<&str> = continuation
        .iter()
        .copied()
        .filter(|l| !is_blank_or_comment(l))
        .collect();
    if rest.is_empty() {
        if content.is_empty() {
            return Ok(FieldValue::Text(String::new()));
        }
        if content.iter().all(|l| is_list_item(l)) {
            let mut items = Vec::new();
            for l in content {
                let item = l.trim_start().strip_prefix('-').unwrap_or("").trim();
                let item = scalar_item(item, line)?;
                if !item.is_empty() {
                    items.push(item);
                }
            }
            return Ok(FieldValue::List(items));
        }
        return Ok(FieldValue::Nested(dedent(continuation)));
    }
    // A value may continue on indented lines: fold them in with spaces.
    let mut joined = String::from(rest);
    for l in &content {
        joined.push(' ');
        joined.push_str(l.trim());
    }
    if joined.starts_with('[') {
        return flow_list(&joined, line).map(FieldValue::List);
    }
    if joined.starts_with(['"', '\'']) {
        let (value, after) = quoted(&joined, line)?;
        if !is_blank_or_comment(after) {
            return Err(SkillError::MalformedLine { line });
        }
        return Ok(FieldValue::Text(value));
    }
    let plain: Vec<&str> = core::iter::once(rest)
        .chain(content.iter().map(|l| l.trim()))
        .map(strip_comment)
        .filter(|s| !s.is_empty())
        .collect();
    Ok(FieldValue::Text(plain.join(" ")))
}

/// How a block scalar joins its lines.
#[derive(Clone, Copy)]
enum BlockStyle {
    /// `|`: line breaks kept.
    Literal,
    /// `>`: lines of a paragraph joined with spaces, paragraphs with a line break.
    Folded,
}

/// `|`, `>`, optionally with chomping/indent indicators (`|-`, `>+`, `|2`) and a comment.
fn block_indicator(rest: &str) -> Option<BlockStyle> {
    let style = match rest.chars().next()? {
        '|' => BlockStyle::Literal,
        '>' => BlockStyle::Folded,
        _ => return None,
    };
    let after = rest
        .get(1..)?
        .trim_start_matches(|c: char| c == '-' || c == '+' || c.is_ascii_digit());
    is_blank_or_comment(after).then_some(style)
}

/// The text of a block scalar; trailing line breaks are dropped (the values are
/// single fields, not files).
fn block_scalar(style: BlockStyle, lines: &[&str]) -> String {
    let lines = dedent(lines);
    let mut out = String::new();
    match style {
        BlockStyle::Literal => out = lines.join("\n"),
        BlockStyle::Folded => {
            let mut at_paragraph_start = true;
            for l in &lines {
                if l.is_empty() {
                    out.push('\n');
                    at_paragraph_start = true;
                } else {
                    if !at_paragraph_start {
                        out.push(' ');
                    }
                    out.push_str(l);
                    at_paragraph_start = false;
                }
            }
        }
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Lines with their common indentation removed; blank lines become empty; leading and
/// trailing blank lines are dropped.
fn dedent(lines: &[&str]) -> Vec<String> {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                String::from(l.get(indent..).unwrap_or(l.trim_start()).trim_end())
            }
        })
        .skip_while(|l| l.is_empty())
        .collect();
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// A list item or flow-list element: quoted or plain.
fn scalar_item(item: &str, line: usize) -> Result<String, SkillError> {
    if item.starts_with(['"', '\'']) {
        let (value, after) = quoted(item, line)?;
        if !is_blank_or_comment(after) {
            return Err(SkillError::MalformedLine { line });
        }
        Ok(value)
    } else {
        Ok(String::from(strip_comment(item)))
    }
}

/// `[a, "b, c", 'd']` → the items; the text must start with `[`.
fn flow_list(text: &str, line: usize) -> Result<Vec<String>, SkillError> {
    let mut items = Vec::new();
    let mut rest = text.get(1..).unwrap_or("");
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(']') {
            if !is_blank_or_comment(after) {
                return Err(SkillError::MalformedLine { line });
            }
            return Ok(items);
        }
        let (item, after) = if rest.starts_with(['"', '\'']) {
            quoted(rest, line)?
        } else {
            let end = rest
                .find([',', ']'])
                .ok_or(SkillError::MalformedLine { line })?;
            let (item, after) = rest.split_at(end);
            (String::from(item.trim()), after)
        };
        if !item.is_empty() {
            items.push(item);
        }
        rest = after.trim_start();
        if let Some(after_comma) = rest.strip_prefix(',') {
            rest = after_comma;
        } else if !rest.starts_with(']') {
            return Err(SkillError::MalformedLine { line });
        }
    }
}

/// A quoted scalar at the start of `text` → (its value, the text after the closing
/// quote). `"…"` knows the YAML escapes; `'…'` only `''` for a quote.
fn quoted(text: &str, line: usize) -> Result<(String, &str), SkillError> {
    let unclosed = SkillError::UnclosedQuote { line };
    let mut chars = text.char_indices();
    let quote = chars.next().map(|(_, c)| c).ok_or(unclosed.clone())?;
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            if quote == '\'' && text.get(i + 1..).is_some_and(|r| r.starts_with('\'')) {
                chars.next();
                out.push('\'');
                continue;
            }
            return Ok((out, text.get(i + 1..).unwrap_or("")));
        }
        if c == '\\' && quote == '"' {
            let Some((_, e)) = chars.next() else { break };
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '"' | '\\' | '/' => out.push(e),
                'x' | 'u' | 'U' => {
                    let len = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let digits: String = chars.clone().take(len).map(|(_, d)| d).collect();
                    match u32::from_str_radix(&digits, 16)
                        .ok()
                        .and_then(char::from_u32)
                    {
                        Some(decoded) if digits.len() == len => {
                            out.push(decoded);
                            for _ in 0..len {
                                chars.next();
                            }
                        }
                        _ => {
                            out.push('\\');
                            out.push(e);
                        }
                    }
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
            continue;
        }
        out.push(c);
    }
    Err(unclosed)
}

/// Turns the fields into a [`SkillDoc`], checking the required ones.
fn build(fields: Vec<Field<'_>>, body: &str) -> Result<SkillDoc, SkillError> {
    let mut name = None;
    let mut description = None;
    let mut tags = Vec::new();
    let mut extra: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for field in fields {
        if seen.contains(&field.key) {
            return Err(SkillError::DuplicateKey {
                line: field.line,
                key: String::from(field.key),
            });
        }
        seen.push(field.key);
        match field.key {
            "name" => name = Some((field.line, String::from(field.value.joined(" ").trim()))),
            "description" => {
                description = Some((field.line, String::from(field.value.joined(" ").trim())))
            }
            "tags" => {
                tags = match field.value {
                    FieldValue::List(items) => items,
                    other => other
                        .joined(",")
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect(),
                }
            }
            key => {
                let text = match field.value {
                    v @ FieldValue::Nested(_) => v.joined("\n"),
                    v => v.joined(", "),
                };
                extra.push((String::from(key), text));
            }
        }
    }
    let (name_line, name) = name.ok_or(SkillError::MissingName)?;
    if let Err(problem) = validate_name(&name) {
        return Err(SkillError::InvalidName {
            line: name_line,
            name,
            problem,
        });
    }
    let (description_line, description) = description
        .filter(|(_, d)| !d.is_empty())
        .ok_or(SkillError::MissingDescription)?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::DescriptionTooLong {
            line: description_line,
            chars,
        });
    }
    Ok(SkillDoc {
        name,
        description,
        tags,
        extra,
        body: String::from(body),
    })
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
