//! The card every answer is: one Markdown element (cards render Markdown, and only
//! cards can be updated, so a streamed answer is `PATCH`ed), and buttons under a
//! question.

use serde_json::{json, Value};

use crate::channels::Button;

/// A card showing `text` (Markdown) with `buttons` under it; `place` rides in each
/// button so a press finds its chat (and thread) again.
pub(super) fn card(text: &str, buttons: &[Button], place: &str) -> String {
    let mut elements = vec![json!({"tag": "markdown", "content": text})];
    if !buttons.is_empty() {
        let actions: Vec<Value> = buttons
            .iter()
            .enumerate()
            .map(|(i, b)| {
                json!({
                    "tag": "button",
                    "text": {"tag": "plain_text", "content": b.label},
                    "type": if i == 0 { "primary" } else { "default" },
                    "value": {"evolve": b.data, "place": place},
                })
            })
            .collect();
        elements.push(json!({"tag": "action", "actions": actions}));
    }
    json!({
        "config": {"wide_screen_mode": true, "update_multi": true},
        "elements": elements,
    })
    .to_string()
}
