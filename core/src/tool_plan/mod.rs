//! Tool calls written as text: the plan of a model without native tool calling (ARCHITECTURE.md
//! § The turn, step 6: "for models without tool calling, a JSON list parsed tolerantly").
//!
//! Small local models (and every model asked to in the prompt) write their calls into the
//! answer instead of `tool_calls`: a fenced ```` ```json ```` block, Qwen's and Hermes'
//! `<tool_call>{…}</tool_call>`, or a bare JSON object or list as the whole answer, in one
//! of a few shapes (`{"name", "arguments"}`, `{"tool", "args"|"parameters"|"input"}`,
//! `{"function": {"name", "arguments"}}`, lists of those, arguments as an object or as a
//! JSON string), sometimes slightly broken. [`parse`] finds them, through the JSON
//! module's extraction and repair, and hands back the calls and the prose around them.
//! [`write`] is the other direction: the plan text an earlier call is shown as to a model
//! that reads plans, in the format the prompt asks for ([`FORMAT`]).
//!
//! What counts, decided here: only a call naming one of the offered tools; a block is a
//! plan only when everything in it is call-shaped (so an answer with a JSON block of data
//! keeps it); a call the end of the answer cut off is dropped, never run half-written.
//! What the calls do, whether they may run, and how the prompt describes the tools are
//! the shell's. [`gate`] decides what of a streamed answer may be shown while it could
//! still turn out to be a plan.

mod gate;

pub use gate::PlanGate;

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ops::Range;

use crate::json::{
    balanced_end, extract, extract_items, fenced_spans, parse_strict, repair, Value, MAX_CANDIDATES,
};

/// The format the prompt asks for, and what [`write`] produces for one call.
pub const FORMAT: &str = "```json\n{\"name\": \"TOOL_NAME\", \"arguments\": {…}}\n```";

/// Qwen's and Hermes' tags around one call (compared without regard to ASCII case).
const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";

/// Keys that name the tool, in order of preference.
const NAME_KEYS: [&str; 4] = ["name", "tool", "tool_name", "function"];
/// Keys that hold the arguments, in order of preference.
const ARGUMENT_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];
/// Other keys a call may carry (OpenAI's own shape, Llama's `"type": "function"`).
const OTHER_CALL_KEYS: [&str; 3] = ["type", "id", "call_id"];
/// Keys under which a list of calls is wrapped (`{"tool_calls": [...]}`).
const WRAPPER_KEYS: [&str; 2] = ["tool_calls", "calls"];

/// One call found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedCall {
    /// An offered tool's name.
    pub name: String,
    /// The arguments as compact, standard JSON: always an object (`{}` when none given).
    pub arguments: String,
}

/// What [`parse`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPlan {
    /// The calls, in the order written; empty when the text holds no plan.
    pub calls: Vec<PlannedCall>,
    /// The text without the plan's blocks (the prose around them), trimmed; the whole
    /// text, trimmed, when there is no plan.
    pub rest: String,
}

/// The tool calls written in `text`, among the `offered` tool names.
///
/// Looks at, in order: `<tool_call>` tags (an unclosed one runs to the next tag or the
/// end); fenced code blocks outside them; and, only when neither held a plan, the text
/// itself when it starts with `{` or `[` (the JSON values at its start, one after another
/// as JSON lines, and the prose after them). Each place is read with
/// [`extract_items`](crate::json::extract_items) (repaired, the item the end cut off
/// dropped, wrappers such as `{"tool_calls": [...]}` opened) and is a plan when it holds
/// at least one call of an offered tool and nothing that is not call-shaped; calls of
/// tools not offered are left out. At most [`MAX_CANDIDATES`] places and calls.
pub fn parse<S: AsRef<str>>(text: &str, offered: &[S]) -> ToolPlan {
    let is_offered = |name: &str| offered.iter().any(|o| o.as_ref() == name);
    let mut calls = Vec::new();
    let mut removed: Vec<Range<usize>> = Vec::new();
    let mut take = |span: Range<usize>, content: &str, closed, calls: &mut Vec<PlannedCall>| {
        if let Some(found) = plan_in(content, closed, &is_offered) {
            calls.extend(found);
            calls.truncate(MAX_CANDIDATES);
            removed.push(span);
        }
    };
    let tags = tag_spans(text);
    for (span, content, closed) in &tags {
        take(span.clone(), content, *closed, &mut calls);
    }
    let outside_tags = |span: &Range<usize>| {
        !tags
            .iter()
            .any(|(t, _, _)| t.start < span.end && span.start < t.end)
    };
    for (span, content) in fenced_spans(text)
        .filter(|(span, _)| outside_tags(span))
        .take(MAX_CANDIDATES)
    {
        let content_end = offset_in(text, content) + content.len();
        let closed = text.get(content_end..span.end) == Some("```");
        take(span, content, closed, &mut calls);
    }
    if calls.is_empty() {
        if let Some(span) = leading_json(text) {
            if let Some(content) = text.get(span.clone()) {
                take(span, content, false, &mut calls);
            }
        }
    }
    if calls.is_empty() {
        return ToolPlan {
            calls,
            rest: text.trim().to_string(),
        };
    }
    removed.sort_by_key(|r| r.start);
    ToolPlan {
        calls,
        rest: without(text, &removed),
    }
}

/// The plan text of these calls `(name, arguments JSON)`: one call as the object of
/// [`FORMAT`] in a ```` ```json ```` block, several as a list of them. Empty arguments
/// are `{}`; arguments that are not JSON are repaired, or written as a string.
pub fn write<'a>(calls: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut objects: Vec<Value> = calls
        .into_iter()
        .map(|(name, arguments)| {
            let arguments = if arguments.trim().is_empty() {
                Value::Object(Vec::new())
            } else {
                arguments_value(arguments).unwrap_or_else(|| Value::String(arguments.to_string()))
            };
            Value::Object(alloc::vec![
                ("name".to_string(), Value::String(name.to_string())),
                ("arguments".to_string(), arguments),
            ])
        })
        .collect();
    let plan = if objects.len() == 1 {
        objects.swap_remove(0)
    } else {
        Value::Array(objects)
    };
    let mut out = String::from("```json\n");
    out.push_str(&plan.to_json_string());
    out.push_str("\n```");
    out
}

/// The calls of one place, when it is a plan. In a place that was `closed` (by a tag or a
/// fence) a brace left open is a slip, not the end of the answer cutting a call off.
fn plan_in(
    content: &str,
    closed: bool,
    is_offered: &dyn Fn(&str) -> bool,
) -> Option<Vec<PlannedCall>> {
    let mut items = extract_items(content).ok()?;
    if items.is_empty() && closed {
        items = match extract(content).ok()? {
            Value::Array(items) => items,
            one => alloc::vec![one],
        };
    }
    let mut calls = Vec::new();
    for item in items.iter().flat_map(unwrap_calls) {
        // Anything not call-shaped makes the place data, not a plan.
        let (name, arguments) = read_call(item)?;
        if is_offered(&name) {
            calls.push(PlannedCall { name, arguments });
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// The calls an item stands for: the list under a wrapper key, or the item itself.
fn unwrap_calls(item: &Value) -> &[Value] {
    let wrapped = item.as_object().and_then(|members| {
        if members.iter().any(|(k, _)| NAME_KEYS.contains(&k.as_str())) {
            return None;
        }
        WRAPPER_KEYS
            .iter()
            .find_map(|key| item.get(key).and_then(Value::as_array))
    });
    wrapped.unwrap_or(core::slice::from_ref(item))
}

/// `(name, arguments)` of a call-shaped item (whatever its name); `None` when the item is
/// not a call: not an object, no string name, arguments neither an object nor a JSON
/// string holding one, or keys a call does not have while no arguments key says it is one.
fn read_call(item: &Value) -> Option<(String, String)> {
    let members = item.as_object()?;
    // OpenAI's shape: `{"type": "function", "function": {"name": …, "arguments": …}}`.
    if let Some(inner) = item.get("function").filter(|f| f.as_object().is_some()) {
        let only_known = members
            .iter()
            .all(|(k, _)| k == "function" || OTHER_CALL_KEYS.contains(&k.as_str()));
        return if only_known { read_call(inner) } else { None };
    }
    let name = NAME_KEYS
        .iter()
        .find_map(|key| item.get(key))?
        .as_str()?
        .trim();
    if name.is_empty() {
        return None;
    }
    let arguments = ARGUMENT_KEYS.iter().find_map(|key| item.get(key));
    let only_known = members.iter().all(|(k, _)| {
        let k = k.as_str();
        NAME_KEYS.contains(&k) || ARGUMENT_KEYS.contains(&k) || OTHER_CALL_KEYS.contains(&k)
    });
    if arguments.is_none() && !only_known {
        return None;
    }
    let arguments = match arguments {
        None | Some(Value::Null) => "{}".to_string(),
        Some(v @ Value::Object(_)) => v.to_json_string(),
        Some(Value::String(s)) if s.trim().is_empty() => "{}".to_string(),
        Some(Value::String(s)) => arguments_value(s)
            .filter(|v| v.as_object().is_some())?
            .to_json_string(),
        Some(_) => return None,
    };
    Some((name.to_string(), arguments))
}

/// A JSON text read strictly, else repaired.
fn arguments_value(text: &str) -> Option<Value> {
    parse_strict(text)
        .ok()
        .or_else(|| repair(text).and_then(|r| parse_strict(&r).ok()))
}

/// Where `part`, a slice of `text`, starts in it.
pub(crate) fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// The `<tool_call>` tags: each one's span (from the tag to after its closing tag, or to
/// the next opening tag or the end), its content, and whether something closed it.
fn tag_spans(text: &str) -> Vec<(Range<usize>, &str, bool)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while spans.len() < MAX_CANDIDATES {
        let Some(open) = find_ignore_case(text, TAG_OPEN, from) else {
            break;
        };
        let body = open + TAG_OPEN.len();
        let close = find_ignore_case(text, TAG_CLOSE, body);
        let next_open = find_ignore_case(text, TAG_OPEN, body);
        let (content_end, end) = match (close, next_open) {
            (Some(c), Some(n)) if n < c => (n, n),
            (Some(c), _) => (c, c + TAG_CLOSE.len()),
            (None, Some(n)) => (n, n),
            (None, None) => (text.len(), text.len()),
        };
        if let Some(content) = text.get(body..content_end) {
            spans.push((open..end, content, content_end < text.len()));
        }
        from = end.max(body);
    }
    spans
}

/// Where `needle` (ASCII) first occurs in `text` at or after `from`, ignoring ASCII case.
fn find_ignore_case(text: &str, needle: &str, from: usize) -> Option<usize> {
    let hay = text.as_bytes().get(from..)?;
    let needle = needle.as_bytes();
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|i| from + i)
}

/// The JSON values at the start of a text that starts with `{` or `[`: from there to the
/// end of the last of the values that follow each other with only whitespace or commas
/// between them (an unbalanced one runs to the end).
fn leading_json(text: &str) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let start = text.len() - text.trim_start().len();
    if !matches!(bytes.get(start), Some(b'{' | b'[')) {
        return None;
    }
    let mut end = start;
    let mut open = start;
    for _ in 0..MAX_CANDIDATES {
        end = balanced_end(bytes, open).unwrap_or(text.len());
        let gap = text.get(end..)?;
        let skipped = gap.len()
            - gap
                .trim_start_matches(|c: char| c.is_whitespace() || c == ',')
                .len();
        match bytes.get(end + skipped) {
            Some(b'{' | b'[') => open = end + skipped,
            _ => break,
        }
    }
    Some(start..end)
}

/// `text` without the `removed` spans (sorted, not overlapping), the pieces joined by a
/// blank line, trimmed.
fn without(text: &str, removed: &[Range<usize>]) -> String {
    let mut out = String::new();
    let mut push = |piece: Option<&str>| {
        let piece = piece.unwrap_or_default().trim();
        if piece.is_empty() {
            return;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(piece);
    };
    let mut at = 0;
    for r in removed {
        if r.start > at {
            push(text.get(at..r.start));
        }
        at = at.max(r.end);
    }
    push(text.get(at..));
    out
}

#[cfg(test)]
mod tests;
