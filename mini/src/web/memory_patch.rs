//! The body of `POST /v1/memory` and `PATCH /v1/memory/{id}`: the fields a client may
//! set on a memory, read into the core's own types ([`Category`], [`Priority`]).
//!
//! Decides what each field accepts and the 400 message a wrong value gets (every one
//! names the field and what to send); an absent or `null` field is left alone, unknown
//! fields are ignored. What an added memory starts as and where it is stored are the
//! routes' ([`super::api`]).

use evolve_core::memory::{Category, Memory, Priority, IMPORTANCE_MAX, IMPORTANCE_MIN};
use serde::de::{Deserializer, Error as _};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The editable fields of a memory, each `None` when the body does not set it.
#[derive(Debug, Default, Deserialize)]
pub struct MemoryPatch {
    /// The text, trimmed; it must not be empty.
    #[serde(default, deserialize_with = "content")]
    pub content: Option<String>,
    /// A category name, any case.
    #[serde(default, deserialize_with = "category")]
    pub category: Option<Category>,
    /// 0–3 or a priority name; set by the user, so no longer the model's promotion.
    #[serde(default, deserialize_with = "priority")]
    pub priority: Option<Priority>,
    /// 1–5.
    #[serde(default, deserialize_with = "importance")]
    pub importance: Option<u8>,
    /// A list of strings or one comma-separated string; blank tags are dropped.
    #[serde(default, deserialize_with = "tags")]
    pub tags: Option<Vec<String>>,
    /// `true` keeps the memory from decay and review.
    #[serde(default, deserialize_with = "pinned")]
    pub pinned: Option<bool>,
}

impl MemoryPatch {
    /// Reads a request body (already a JSON object); the error's text is the 400
    /// message, that of the first wrong field in the body's key order (from a `Value` it
    /// is the field's own message, without a position).
    pub fn from_body(body: Map<String, Value>) -> Result<MemoryPatch, serde_json::Error> {
        serde_json::from_value(Value::Object(body))
    }

    /// Sets the given fields on `m`; `Err` is the 400 message.
    pub fn apply(self, m: &mut Memory) -> Result<(), &'static str> {
        let MemoryPatch {
            content,
            category,
            priority,
            importance,
            tags,
            pinned,
        } = self;
        if let Some(c) = content {
            if c.trim().is_empty() {
                return Err(EMPTY_CONTENT);
            }
            m.content = c.trim().to_string();
        }
        if let Some(c) = category {
            m.category = c;
        }
        if let Some(p) = priority {
            m.priority = p;
            m.promoted = false;
        }
        if let Some(i) = importance {
            m.importance = i;
        }
        if let Some(t) = tags {
            m.tags = t;
        }
        if let Some(p) = pinned {
            m.pinned = p;
        }
        Ok(())
    }
}

/// What a memory whose text is blank gets.
pub const EMPTY_CONTENT: &str = "content must not be empty";

/// An optional `T`, or `message` for anything that is not one (nor `null`).
fn or_say<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
    message: &'static str,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d).map_err(|_| D::Error::custom(message))
}

fn content<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    or_say(d, "`content` must be a string")
}

fn category<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Category>, D::Error> {
    let Some(name) = or_say::<String, _>(d, "`category` must be a string")? else {
        return Ok(None);
    };
    Category::parse(&name).map(Some).ok_or_else(|| {
        let names: Vec<&str> = Category::ALL.iter().map(|c| c.name()).collect();
        D::Error::custom(format!(
            "unknown category {name:?}: use one of {}",
            names.join(", ")
        ))
    })
}

fn priority<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Priority>, D::Error> {
    or_say(d, "priority must be 0 (critical) … 3 (low)")
}

fn importance<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    const MESSAGE: &str = "importance must be 1 … 5";
    match or_say::<u8, _>(d, MESSAGE)? {
        Some(n) if !(IMPORTANCE_MIN..=IMPORTANCE_MAX).contains(&n) => {
            Err(D::Error::custom(MESSAGE))
        }
        n => Ok(n),
    }
}

fn tags<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    /// A number or an object among the tags is a mistake to report, not to drop.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Tags {
        List(Vec<String>),
        Commas(String),
    }
    let tags = or_say::<Tags, _>(d, "tags must be a list of strings")?;
    let clean = |tags: &mut dyn Iterator<Item = &str>| {
        tags.map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect()
    };
    Ok(tags.map(|tags| match tags {
        Tags::List(list) => clean(&mut list.iter().map(String::as_str)),
        Tags::Commas(text) => clean(&mut text.split(',')),
    }))
}

fn pinned<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    or_say(d, "pinned must be true or false")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(body: Value) -> Result<MemoryPatch, String> {
        let Value::Object(map) = body else {
            panic!("not an object: {body}");
        };
        MemoryPatch::from_body(map).map_err(|e| e.to_string())
    }

    #[test]
    fn each_field_says_what_to_send() {
        for (body, message) in [
            (json!({"content": 5}), "`content` must be a string"),
            (json!({"category": 1}), "`category` must be a string"),
            (
                json!({"category": "hobby"}),
                "unknown category \"hobby\": use one of instruction, preference, reminder, fact, general",
            ),
            (json!({"priority": 9}), "priority must be 0 (critical) … 3 (low)"),
            (json!({"priority": -1}), "priority must be 0 (critical) … 3 (low)"),
            (json!({"priority": 1.0}), "priority must be 0 (critical) … 3 (low)"),
            (json!({"priority": "urgent"}), "priority must be 0 (critical) … 3 (low)"),
            (json!({"importance": 0}), "importance must be 1 … 5"),
            (json!({"importance": 6}), "importance must be 1 … 5"),
            (json!({"importance": 300}), "importance must be 1 … 5"),
            (json!({"importance": 3.0}), "importance must be 1 … 5"),
            (json!({"importance": "3"}), "importance must be 1 … 5"),
            (json!({"tags": ["tea", 3]}), "tags must be a list of strings"),
            (json!({"tags": [null]}), "tags must be a list of strings"),
            (json!({"tags": [["nested"]]}), "tags must be a list of strings"),
            (json!({"tags": 3}), "tags must be a list of strings"),
            (json!({"pinned": "yes"}), "pinned must be true or false"),
        ] {
            match patch(body.clone()) {
                Ok(p) => panic!("{body} read as {p:?}"),
                Err(e) => assert_eq!(e, message, "{body}"),
            }
        }
    }

    #[test]
    fn values_are_read_as_before() {
        let p = patch(json!({
            "content": "  tea  ",
            "category": " Fact ",
            "priority": "HIGH",
            "importance": 5,
            "tags": [" tea ", "", "green"],
            "pinned": true,
            "unknown": "ignored",
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.content.as_deref(), Some("  tea  "));
        assert_eq!(p.category, Some(Category::Fact));
        assert_eq!(p.priority, Some(Priority::High));
        assert_eq!(p.importance, Some(5));
        assert_eq!(p.tags, Some(vec!["tea".to_string(), "green".to_string()]));
        assert_eq!(p.pinned, Some(true));
        for (priority, want) in [(json!(0), Priority::Critical), (json!("3"), Priority::Low)] {
            let p = patch(json!({ "priority": priority })).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(p.priority, Some(want));
        }
        let commas = patch(json!({"tags": "a, b,,c "})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(commas.tags, Some(vec!["a".into(), "b".into(), "c".into()]));
        let nulls = patch(json!({
            "content": null, "category": null, "priority": null,
            "importance": null, "tags": null, "pinned": null,
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            nulls.content.is_none()
                && nulls.category.is_none()
                && nulls.priority.is_none()
                && nulls.importance.is_none()
                && nulls.tags.is_none()
                && nulls.pinned.is_none(),
            "{nulls:?}"
        );
    }
}
