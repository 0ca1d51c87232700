//! Finding the JSON in a model's answer (tea-agent's 容错解析 1–4).
//!
//! Models wrap JSON in prose and code fences, and cut it off at the token limit.
//! [`extract`] looks in the places tea-agent lists, in its order, and passes every
//! candidate through the strict parser and then through [`repair`](super::repair);
//! [`extract_items`] then turns the value into the list a caller asked for, without
//! the item the token limit cut in half, and with every object of a JSON-lines answer.
//!
//! Whatever comes out serializes to JSON that `serde_json` reads: a number beyond the
//! range of f64 (`1e400`, valid JSON grammar that [`parse_strict`] keeps as written)
//! is handed out as `null`, as the repair does.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use super::error::{JsonError, SyntaxError};
use super::repair::{parse_lenient, quote_closes, Repaired};
use super::strict::parse_strict;
use super::value::Value;
use super::MAX_CANDIDATES;

/// Keys under which models put the list when they answer with an object instead
/// (tea-agent 容错解析 4: 对象型 → 从常见键名 memories/items/results/data 提取数组),
/// in order of preference; compared without regard to ASCII case.
pub const LIST_KEYS: [&str; 4] = ["memories", "items", "results", "data"];

/// The JSON value in a model's answer. Looks, in order, at:
/// 1. the whole text (repaired only when it starts with `[` or `{`);
/// 2. each fenced code block (```` ```json … ``` ```` or plain ```` ``` ````; a block
///    cut off by the end of the text runs to the end);
/// 3. each `[` or `{` in turn with its balanced span (brackets inside strings ignored;
///    an unbalanced one runs to the end of the text), up to [`MAX_CANDIDATES`] opening
///    brackets.
///
/// The first candidate that parses strictly wins, unless an earlier one needed repair
/// and holds it (an item of a list the end of the text cut off): then the earlier,
/// repaired one wins. Otherwise the first candidate that could be repaired wins. So
/// prose in braces before the answer (`{thinking: none} [{"content": "x"}]`) loses to
/// the answer, while `[{"a": 1}, {"b": "cu` stays one list.
/// A value cut off by the end of the text comes back closed, its last item included
/// (`[{"a":1},{"b":"cu"}]`); [`extract_items`] is the one that drops such an item.
/// Numbers beyond the range of f64 become `null`.
pub fn extract(text: &str) -> Result<Value, JsonError> {
    find(text).map(|found| found.value)
}

/// A value found in an answer.
struct Found {
    /// The value, numbers beyond f64 made `null`.
    value: Value,
    /// How far the end of the text cut into it ([`Repaired::unclosed`]).
    unclosed: usize,
    /// Where its candidate ends in the text, for the JSON-lines search; the text's
    /// length when nothing can follow (the whole text, a code block).
    end: usize,
}

/// [`extract`], with what [`extract_items`] needs to know besides the value.
fn find(text: &str) -> Result<Found, JsonError> {
    let whole = text.trim();
    if whole.is_empty() {
        return Err(JsonError::Empty);
    }
    let mut search = Search {
        text,
        first_error: None,
        repaired: None,
        empty: None,
    };
    // Only a text that starts like a document is worth repairing as a whole (and its
    // error worth reporting): a leading quote or word is more likely prose.
    let repair = if whole.starts_with(['[', '{']) {
        Repair::Allowed
    } else {
        Repair::StrictOnly
    };
    if let Some(found) = search.offer(whole, text.len(), repair) {
        return Ok(found);
    }
    for block in (FencedBlocks { text, pos: 0 }).take(MAX_CANDIDATES) {
        if let Some(found) = search.offer(block, text.len(), Repair::Allowed) {
            return Ok(found);
        }
    }
    let bytes = text.as_bytes();
    let mut from = 0;
    let mut tried = 0;
    while tried < MAX_CANDIDATES {
        let Some(open) = bytes
            .get(from..)
            .and_then(|rest| rest.iter().position(|b| matches!(b, b'[' | b'{')))
            .map(|i| from + i)
        else {
            break;
        };
        // What starts inside the repaired candidate is part of it: skip past it in one
        // step (and without spending the budget on its inner brackets).
        if let Some(span) = search.repaired_span().filter(|s| s.contains(&open)) {
            from = span.end;
            continue;
        }
        tried += 1;
        let end = balanced_end(bytes, open).unwrap_or(bytes.len());
        if let Some(found) = text
            .get(open..end)
            .and_then(|c| search.offer(c, end, Repair::Allowed))
        {
            return Ok(found);
        }
        from = open + 1;
    }
    search.finish()
}

/// Whether a candidate may be repaired when it does not parse strictly.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repair {
    /// Strict, then repaired; its strict error is worth reporting.
    Allowed,
    /// Strict only, its error not worth reporting (a whole text that starts like prose).
    StrictOnly,
}

/// The candidates looked at so far: the first strict error for the final report, and
/// the first candidate that needed repair, which a later strict one may still beat.
struct Search<'t> {
    /// The answer; every candidate is a slice of it.
    text: &'t str,
    /// The first error of a candidate that may be repaired.
    first_error: Option<SyntaxError>,
    /// The first candidate that needed repair, and where it lies in the text.
    repaired: Option<(Found, Range<usize>)>,
    /// The first empty `[]` or `{}` that parsed strictly: the answer only if nothing
    /// else is found.
    empty: Option<Found>,
}

/// An empty array or object.
fn is_empty_container(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty()) || matches!(v, Value::Object(o) if o.is_empty())
}

impl<'t> Search<'t> {
    /// Looks at one candidate (a slice of the text); `Some` when it settles the search:
    /// it parses strictly and does not lie inside the repaired candidate. `end` is
    /// [`Found::end`].
    fn offer(&mut self, candidate: &'t str, end: usize, repair: Repair) -> Option<Found> {
        let span = self.span_of(candidate);
        if let Some(repaired) = self.repaired_span() {
            // Inside the repaired candidate: one of its items, already read.
            if repaired.start <= span.start && span.end <= repaired.end {
                return None;
            }
        }
        match parse_strict(candidate) {
            // An empty `[]` or `{}` settles nothing: answers say "(or [] if none)" next
            // to the real list. It is the answer only when nothing else is found.
            Ok(v) if is_empty_container(&v) => {
                if self.empty.is_none() {
                    self.empty = Some(Found::complete(v, end));
                }
                return None;
            }
            Ok(v) => return Some(Found::complete(v, end)),
            Err(e) if repair == Repair::Allowed => {
                self.first_error.get_or_insert(e);
            }
            Err(_) => return None,
        }
        if self.repaired.is_none() {
            self.repaired = parse_lenient(candidate).map(|r| (Found::repaired(r, end), span));
        }
        None
    }

    /// Where the repaired candidate lies in the text, if there is one.
    fn repaired_span(&self) -> Option<Range<usize>> {
        self.repaired.as_ref().map(|(_, span)| span.clone())
    }

    /// Where `candidate`, a slice of the text, lies in it.
    fn span_of(&self, candidate: &str) -> Range<usize> {
        let start = (candidate.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize);
        start..start + candidate.len()
    }

    /// No non-empty candidate parsed strictly: the repaired one unless it is empty,
    /// then an empty one that parsed strictly, or why there is none.
    fn finish(self) -> Result<Found, JsonError> {
        match (self.repaired, self.empty) {
            (Some((found, _)), empty) if !is_empty_container(&found.value) || empty.is_none() => {
                Ok(found)
            }
            (_, Some(empty)) => Ok(empty),
            (_, None) => Err(self
                .first_error
                .map_or(JsonError::NotFound, JsonError::Invalid)),
        }
    }
}

/// The list in a model's answer that should be one: an array as it is; an object with
/// an array under one of [`LIST_KEYS`] → that array; any other object → a list of that
/// one object; `null` → an empty list. A string, number or boolean is an error.
///
/// Two things differ from [`extract`]:
/// - The last item is dropped when the end of the text cut into it (the repair had to
///   close a string, array or object inside it): `[{"content": "likes tea"},
///   {"content": "daughter is cal` is one memory, not two, the second a half-sentence.
///   A lone object cut off is such an item too. An item that ends before the cut
///   (`[{"a":1}, {"b":2}`) is kept; so is a number or literal written up to the end.
/// - A JSON-lines answer — objects one after another, separated only by whitespace or
///   commas — gives every object (up to [`MAX_CANDIDATES`]), each as one item, unless
///   the first one wraps a list (an array under one of [`LIST_KEYS`]): then that list is
///   the answer and what follows it is not read.
pub fn extract_items(text: &str) -> Result<Vec<Value>, JsonError> {
    let first = find(text)?;
    if matches!(&first.value, Value::Object(members) if list_position(members).is_none()) {
        let mut lines = following_objects(text, first.end);
        if !lines.is_empty() {
            lines.insert(0, first);
            let cut_last = lines.last().is_some_and(|l| l.unclosed > 0);
            if cut_last {
                lines.pop();
            }
            return Ok(lines.into_iter().map(|l| l.value).collect());
        }
    }
    match first.value {
        Value::Array(mut items) => {
            if first.unclosed > 1 {
                items.pop();
            }
            Ok(items)
        }
        Value::Object(mut members) => {
            if let Some(i) = list_position(&members) {
                // The list is cut only when it is the object's last member.
                let cut_last = i + 1 == members.len() && first.unclosed > 2;
                if let Value::Array(mut items) = members.swap_remove(i).1 {
                    if cut_last {
                        items.pop();
                    }
                    return Ok(items);
                }
            }
            if first.unclosed > 0 {
                Ok(Vec::new())
            } else {
                Ok(alloc::vec![Value::Object(members)])
            }
        }
        Value::Null => Ok(Vec::new()),
        other => Err(JsonError::NotAList(other.kind())),
    }
}

/// Where the list sits in an object that wraps one: the member under the first of
/// [`LIST_KEYS`] that holds an array (the last such member when the key repeats).
fn list_position(members: &[(String, Value)]) -> Option<usize> {
    LIST_KEYS.iter().find_map(|key| {
        members
            .iter()
            .rposition(|(k, v)| k.eq_ignore_ascii_case(key) && matches!(v, Value::Array(_)))
    })
}

/// The objects that follow the one ending at `from`, separated from it and from each
/// other only by whitespace and commas (JSON lines), at most [`MAX_CANDIDATES`] − 1.
fn following_objects(text: &str, mut from: usize) -> Vec<Found> {
    let mut objects = Vec::new();
    while objects.len() + 1 < MAX_CANDIDATES {
        let Some(rest) = text.get(from..) else { break };
        let gap = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_whitespace() || c == ',')
                .len();
        let open = from + gap;
        if text.as_bytes().get(open) != Some(&b'{') {
            break;
        }
        let end = balanced_end(text.as_bytes(), open).unwrap_or(text.len());
        match text.get(open..end).and_then(|c| try_candidate(c, end)) {
            Some(found) if matches!(found.value, Value::Object(_)) => objects.push(found),
            _ => break,
        }
        from = end;
    }
    objects
}

impl Found {
    /// A value parsed strictly.
    fn complete(mut value: Value, end: usize) -> Found {
        null_numbers_beyond_f64(&mut value);
        Found {
            value,
            unclosed: 0,
            end,
        }
    }

    /// A value the repair produced (it already turned such numbers into `null`).
    fn repaired(r: Repaired, end: usize) -> Found {
        Found {
            value: r.value,
            unclosed: r.unclosed,
            end,
        }
    }
}

/// Replaces every number too large for f64 with `null`, which is what the repair makes
/// of them and what `serde_json` can read. Iterative: no recursion on deep values.
fn null_numbers_beyond_f64(value: &mut Value) {
    let mut stack = alloc::vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if n.overflows_f64() => *v = Value::Null,
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(members) => stack.extend(members.iter_mut().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Strict, then repaired. `end` is where the candidate ends in the answer.
fn try_candidate(candidate: &str, end: usize) -> Option<Found> {
    match parse_strict(candidate) {
        Ok(v) => Some(Found::complete(v, end)),
        Err(_) => parse_lenient(candidate).map(|r| Found::repaired(r, end)),
    }
}

/// The code blocks of a Markdown text, as [`FencedBlocks`] finds them, each with where
/// the whole block lies in the text (from its opening fence to after its closing one, or
/// to the end of a block the text cut off). For the tool-plan reader, which removes a
/// plan's block from the answer.
pub(crate) fn fenced_spans(text: &str) -> impl Iterator<Item = (Range<usize>, &str)> {
    let mut blocks = FencedBlocks { text, pos: 0 };
    core::iter::from_fn(move || {
        let from = blocks.pos;
        let open = from + text.get(from..)?.find("```")?;
        let content = blocks.next()?;
        Some((open..blocks.pos, content))
    })
}

/// The code blocks of a Markdown text: the text between an opening ```` ``` ```` (and
/// its language tag) and the next ```` ``` ```` — after the balanced document when the
/// block starts with `[` or `{` — or the end.
struct FencedBlocks<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for FencedBlocks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.text.get(self.pos..)?;
        let open = rest.find("```")?;
        let after_fence = rest.get(open + 3..)?;
        // The language tag: `json`, `JSON`, `json5`, `jsonc`, …
        let tag_len = after_fence
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '.')))
            .unwrap_or(after_fence.len());
        let body = after_fence.get(tag_len..)?;
        // A block that holds a whole JSON document ends after it: "```" inside one of
        // its strings does not close the fence.
        let lead = body.len() - body.trim_start().len();
        let search_from = match body.as_bytes().get(lead) {
            Some(b'[' | b'{') => balanced_end(body.as_bytes(), lead).unwrap_or(0),
            _ => 0,
        };
        let (content, consumed) = match body.get(search_from..).and_then(|r| r.find("```")) {
            Some(close) => (body.get(..search_from + close)?, search_from + close + 3),
            None => (body, body.len()),
        };
        self.pos += open + 3 + tag_len + consumed;
        Some(content)
    }
}

/// The index just after the bracket that closes the one at `open`, skipping strings
/// (with the same closing-quote rule as the repair); `None` when the text ends first.
pub(crate) fn balanced_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' | b'\'' => i = string_end(bytes, i)?,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string opened at `open`.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let quote = *bytes.get(open)?;
    let mut i = open + 1;
    while let Some(&b) = bytes.get(i) {
        if b == b'\\' {
            i += 2;
            continue;
        }
        if b == quote && quote_closes(bytes, i + 1) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
