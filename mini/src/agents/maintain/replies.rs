//! What the cheap model's replies to maintenance are read as: a digest (one checked line
//! of summary) and priority proposals (from the shapes models write). Pure: a reply
//! that cannot be used is an error whose text says why, and the step falls back or is
//! skipped. Tested by a table in `replies_tests.rs`.

use evolve_core::json::{extract, Value};
use evolve_core::memory::Proposal;

/// The longest digest kept: a summary stands for its memories in every prompt, so it
/// must be shorter than they are together, not a rewrite of them.
const DIGEST_MAX_CHARS: usize = 400;

/// The summary in a digest reply (`{"summary": "…"}`), checked: one line of plain
/// text, not empty, not the request echoed back, at most [`DIGEST_MAX_CHARS`].
pub(super) fn parse_digest(text: &str) -> Result<String, String> {
    let value = extract(text).map_err(|e| format!("the model's reply is not usable JSON ({e})"))?;
    let Some(summary) = value.get("summary").and_then(Value::as_str) else {
        return Err("the model's reply has no \"summary\" text".to_string());
    };
    let summary = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars = summary.chars().count();
    if chars == 0 {
        return Err("the model's summary is empty".to_string());
    }
    if summary.contains("[evolve:") {
        return Err("the model repeated the request instead of summarising".to_string());
    }
    if chars > DIGEST_MAX_CHARS {
        return Err(format!(
            "the model's summary has {chars} characters; at most {DIGEST_MAX_CHARS} are kept"
        ));
    }
    Ok(summary)
}

/// The proposals in the model's reply: `{"changes": [...]}`, a bare list, or one
/// proposal object. Items that are not proposals are skipped; a reply without any
/// JSON list or object is an error (the step is skipped).
pub(super) fn parse_proposals(text: &str) -> Result<Vec<Proposal>, String> {
    let value = extract(text).map_err(|e| format!("the model's reply is not usable JSON ({e})"))?;
    let items: Vec<Value> = match &value {
        Value::Array(items) => items.clone(),
        Value::Object(_) => {
            let list = ["changes", "proposals", "adjustments", "items"]
                .iter()
                .find_map(|k| value.get(k).and_then(Value::as_array));
            match list {
                Some(items) => items.to_vec(),
                None if value.get("id").is_some() => vec![value.clone()],
                None => {
                    return Err("the model's reply has no \"changes\" list of proposals".to_string())
                }
            }
        }
        other => {
            return Err(format!(
                "the model's reply is a {}, not a list of proposals",
                other.kind()
            ))
        }
    };
    Ok(items
        .iter()
        .filter_map(|item| serde_json::from_str::<Proposal>(&item.to_json_string()).ok())
        .collect())
}

#[cfg(test)]
#[path = "replies_tests.rs"]
mod tests;
