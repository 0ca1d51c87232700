//! Finding the JSON in a model's answer (seed 000, 容错解析 1–4).
//!
//! Models wrap JSON in prose and code fences, and cut it off at the token limit.
//! [`extract`] looks in the places the seed lists, in its order, and passes every
//! candidate through the strict parser and then through [`repair`](super::repair);
//! [`extract_items`] then turns the value into the list a caller asked for.

use alloc::vec::Vec;

use super::error::{JsonError, SyntaxError};
use super::repair::{parse_lenient, quote_closes};
use super::strict::parse_strict;
use super::value::Value;
use super::MAX_CANDIDATES;

/// Keys under which models put the list when they answer with an object instead
/// (seed 000 容错解析 4: 对象型 → 从常见键名 memories/items/results/data 提取数组),
/// in order of preference; compared without regard to ASCII case.
pub const LIST_KEYS: [&str; 4] = ["memories", "items", "results", "data"];

/// The JSON value in a model's answer. Tries, in order:
/// 1. the whole text (repaired only when it starts with `[` or `{`);
/// 2. each fenced code block (```` ```json … ``` ```` or plain ```` ``` ````; a block
///    cut off by the end of the text runs to the end);
/// 3. the first `[` or `{` whose balanced span (brackets inside strings ignored; an
///    unbalanced one runs to the end of the text) parses, up to [`MAX_CANDIDATES`]
///    opening brackets.
///
/// Each candidate is parsed strictly, then repaired; the first that yields a value wins.
pub fn extract(text: &str) -> Result<Value, JsonError> {
    let whole = text.trim();
    if whole.is_empty() {
        return Err(JsonError::Empty);
    }
    let mut first_error = None;
    // Only a text that starts like a document is worth repairing as a whole (and its
    // error worth reporting): a leading quote or word is more likely prose.
    let starts_like_json = whole.starts_with(['[', '{']);
    match parse_strict(whole) {
        Ok(v) => return Ok(v),
        Err(e) if starts_like_json => {
            first_error = Some(e);
            if let Some(v) = parse_lenient(whole) {
                return Ok(v);
            }
        }
        Err(_) => {}
    }
    for block in (FencedBlocks { text, pos: 0 }).take(MAX_CANDIDATES) {
        if let Some(v) = try_candidate(block, &mut first_error) {
            return Ok(v);
        }
    }
    let bytes = text.as_bytes();
    let mut from = 0;
    for _ in 0..MAX_CANDIDATES {
        let Some(open) = bytes
            .get(from..)
            .and_then(|rest| rest.iter().position(|b| matches!(b, b'[' | b'{')))
            .map(|i| from + i)
        else {
            break;
        };
        let end = balanced_end(bytes, open).unwrap_or(bytes.len());
        if let Some(v) = text
            .get(open..end)
            .and_then(|c| try_candidate(c, &mut first_error))
        {
            return Ok(v);
        }
        from = open + 1;
    }
    Err(first_error.map_or(JsonError::NotFound, JsonError::Invalid))
}

/// The list in a model's answer that should be one: an array as it is; an object with
/// an array under one of [`LIST_KEYS`] → that array; any other object → a list of that
/// one object; `null` → an empty list. A string, number or boolean is an error.
pub fn extract_items(text: &str) -> Result<Vec<Value>, JsonError> {
    match extract(text)? {
        Value::Array(items) => Ok(items),
        Value::Object(mut members) => {
            for key in LIST_KEYS {
                let found = members.iter().rposition(|(k, v)| {
                    k.eq_ignore_ascii_case(key) && matches!(v, Value::Array(_))
                });
                if let Some(i) = found {
                    if let Value::Array(items) = members.swap_remove(i).1 {
                        return Ok(items);
                    }
                }
            }
            Ok(alloc::vec![Value::Object(members)])
        }
        Value::Null => Ok(Vec::new()),
        other => Err(JsonError::NotAList(other.kind())),
    }
}

/// Strict, then repaired; remembers the first strict error for the final report.
fn try_candidate(candidate: &str, first_error: &mut Option<SyntaxError>) -> Option<Value> {
    match parse_strict(candidate) {
        Ok(v) => return Some(v),
        Err(e) => {
            first_error.get_or_insert(e);
        }
    }
    parse_lenient(candidate)
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
fn balanced_end(bytes: &[u8], open: usize) -> Option<usize> {
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
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    fn json(text: &str) -> Value {
        parse_strict(text).unwrap()
    }

    #[test]
    fn a_fence_inside_a_string_does_not_close_the_block() {
        let text = "Here:\n```json\n{\"code\": \"```sh\\nls\\n```\"}\n```\nDone.";
        assert_eq!(extract(text), Ok(json(r#"{"code": "```sh\nls\n```"}"#)));
        // A truncated block still ends at the next fence, and is repaired.
        let cut = "```json\n[{\"a\": 1}, {\"b\": \n```\nmore text";
        assert_eq!(extract(cut), Ok(json(r#"[{"a": 1}, {}]"#)));
    }

    #[test]
    fn finds_json_in_the_seed_order() {
        let table: &[(&str, &str)] = &[
            // 1. the whole text, strict or repaired
            ("[1, 2]", "[1,2]"),
            ("  {\"a\": 1}\n", "{\"a\":1}"),
            ("42", "42"),
            ("[{'a': 1},]", "[{\"a\":1}]"),
            ("\"Sure\", I said. [1]", "[1]"),
            // 2. fenced code blocks
            (
                "Here you go:\n```json\n[1, 2]\n```\nAnything else?",
                "[1,2]",
            ),
            ("```\n{\"a\": true}\n```", "{\"a\":true}"),
            ("```JSON [3]```", "[3]"),
            ("```python\nprint(1)\n```\n```json\n[4]\n```", "[4]"),
            (
                "Sure:\n```json\n[{\"content\": \"likes tea\"}, {\"content\": \"trunc",
                "[{\"content\":\"likes tea\"},{\"content\":\"trunc\"}]",
            ),
            // 3. the first balanced array or object in prose
            ("I found these: [\"a\", \"b\"]. Done.", "[\"a\",\"b\"]"),
            (
                "Result: {\"x\": \"has ] and } inside\"} ok",
                "{\"x\":\"has ] and } inside\"}",
            ),
            ("Use {name} as a placeholder. Answer: [1]", "[1]"),
            ("[note: see {\"a\": 1}]", "{\"a\":1}"),
            ("Answer: [{\"a\": 1}, {\"b\": 2", "[{\"a\":1},{\"b\":2}]"),
        ];
        for (text, expected) in table {
            assert_eq!(extract(text), Ok(json(expected)), "{text:?}");
        }
    }

    #[test]
    fn a_damaged_memory_extraction_answer_yields_every_item() {
        let answer = "Sure! Here are the memories:\n\n```json\n[\n\
            {'content': 'prefers green tea', 'category': 'preference', 'priority': 1,},\n\
            {content: \"line\nbreak\ttab\", category: \"fact\", pinned: True}\n\
            // the last one was cut off\n\
            {\"content\": \"report due mon";
        let items = extract_items(answer).unwrap();
        let expected = [
            "{\"content\":\"prefers green tea\",\"category\":\"preference\",\"priority\":1}",
            "{\"content\":\"line\\nbreak\\ttab\",\"category\":\"fact\",\"pinned\":true}",
            "{\"content\":\"report due mon\"}",
        ];
        assert_eq!(items.len(), expected.len());
        for (item, json_text) in items.iter().zip(expected) {
            assert_eq!(item.to_json_string(), json_text);
        }
    }

    #[test]
    fn says_why_when_there_is_nothing() {
        assert_eq!(extract(""), Err(JsonError::Empty));
        assert_eq!(extract(" \n\t"), Err(JsonError::Empty));
        assert_eq!(
            extract("I could not find any memories."),
            Err(JsonError::NotFound)
        );
        assert!(matches!(extract("[see above]"), Err(JsonError::Invalid(_))));
        assert!(matches!(
            extract("```json\nnot json\n```"),
            Err(JsonError::Invalid(_))
        ));
    }

    #[test]
    fn items_come_from_arrays_list_keys_or_single_objects() {
        let s = |t: &str| Value::String(String::from(t));
        let table: &[(&str, Vec<Value>)] = &[
            ("[\"a\", \"b\"]", vec![s("a"), s("b")]),
            ("{\"memories\": [\"a\"]}", vec![s("a")]),
            ("{\"count\": 1, \"Items\": [\"b\"]}", vec![s("b")]),
            ("{\"results\": [\"c\"], \"data\": [\"d\"]}", vec![s("c")]),
            ("{\"data\": [\"d\"]}", vec![s("d")]),
            (
                "{\"memories\": \"none\"}",
                vec![json("{\"memories\":\"none\"}")],
            ),
            ("{\"content\": \"x\"}", vec![json("{\"content\":\"x\"}")]),
            ("null", vec![]),
            ("```json\n[]\n```", vec![]),
        ];
        for (text, expected) in table {
            assert_eq!(extract_items(text).as_ref(), Ok(expected), "{text:?}");
        }
        assert_eq!(
            extract_items("\"just text\""),
            Err(JsonError::NotAList("string"))
        );
        assert_eq!(extract_items("3"), Err(JsonError::NotAList("number")));
    }

    #[test]
    fn candidate_search_is_bounded_on_bracket_storms() {
        let storm = "[x".repeat(50_000);
        assert!(extract(&storm).is_err());
        let storm = "{".repeat(50_000);
        assert!(extract(&storm).is_err());
    }
}
