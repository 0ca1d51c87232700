//! The `todo` tool: the model keeps a short checklist per session (the plan of a
//! multi-step task), which the prompt's L0 shows back to it each turn. Every change
//! answers with the whole list, so the model always sees the current state.

use super::args::Args;
use super::{ToolContext, ToolOutput};
use crate::store::Todo;

/// The actions, as the schema lists them.
pub const ACTIONS: &[&str] = &["list", "add", "done", "undo", "remove", "clear"];

/// Items a list may hold: a plan, not a backlog.
pub const MAX_ITEMS: usize = 50;

/// `[x] 1. text` lines, or a note that the list is empty.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "(the TODO list is empty)".to_string();
    }
    todos
        .iter()
        .map(|t| format!("[{}] {}. {}", if t.done { 'x' } else { ' ' }, t.id, t.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `todo {action, text?, id?}`.
pub fn run(args: &Args, ctx: &ToolContext<'_>) -> ToolOutput {
    let action = args.text("action");
    // Argument problems first: they need no store.
    let text = args.str("text").map(str::trim).unwrap_or("");
    let id = args.int("id").and_then(|n| u32::try_from(n).ok());
    match action {
        "add" if text.is_empty() => {
            return ToolOutput::error("`add` needs `text`: the step to do, in a few words")
        }
        "done" | "undo" | "remove" if id.is_none() => {
            return ToolOutput::error(format!(
                "`{action}` needs `id`, the item's number in the list"
            ))
        }
        _ => {}
    }
    let mut todos = match ctx.store.todos(ctx.session) {
        Ok(t) => t,
        Err(e) => return ToolOutput::error(format!("reading the TODO list failed: {e}")),
    };
    let note = match apply(&mut todos, action, text, id) {
        Ok(Some(note)) => note,
        Ok(None) => return ToolOutput::ok(render(&todos)),
        Err(e) => return ToolOutput::error(format!("{e}\n{}", render(&todos))),
    };
    if let Err(e) = ctx.store.set_todos(ctx.session, &todos) {
        return ToolOutput::error(format!("saving the TODO list failed: {e}"));
    }
    ToolOutput::ok(format!("{note}\n{}", render(&todos)))
}

/// Applies one action; `Ok(None)` when nothing changed (list), `Ok(Some(note))` after a
/// change.
fn apply(
    todos: &mut Vec<Todo>,
    action: &str,
    text: &str,
    id: Option<u32>,
) -> Result<Option<String>, String> {
    let find = |todos: &mut Vec<Todo>| -> Result<usize, String> {
        let id = id.unwrap_or(0);
        todos
            .iter()
            .position(|t| t.id == id)
            .ok_or_else(|| format!("there is no item {id}"))
    };
    match action {
        "list" => Ok(None),
        "add" => {
            if todos.len() >= MAX_ITEMS {
                return Err(format!(
                    "the list already has {MAX_ITEMS} items; remove or clear finished ones first"
                ));
            }
            let next = todos.iter().map(|t| t.id).max().unwrap_or(0) + 1;
            todos.push(Todo {
                id: next,
                text: text.to_string(),
                done: false,
            });
            Ok(Some(format!("added item {next}")))
        }
        "done" | "undo" => {
            let at = find(todos)?;
            todos[at].done = action == "done";
            let what = if action == "done" { "done" } else { "not done" };
            Ok(Some(format!("marked item {} {what}", todos[at].id)))
        }
        "remove" => {
            let at = find(todos)?;
            let gone = todos.remove(at);
            Ok(Some(format!("removed item {}", gone.id)))
        }
        "clear" => {
            let n = todos.len();
            todos.clear();
            Ok(Some(format!("cleared {n} items")))
        }
        other => Err(format!(
            "unknown action {other:?}; use one of {}",
            ACTIONS.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testing::Harness;
    use serde_json::json;

    #[test]
    fn actions_change_the_list_as_a_user_expects() {
        let mut todos = Vec::new();
        /// (action, text, id, the note or error, the list after it)
        type Step = (
            &'static str,
            &'static str,
            Option<u32>,
            Result<&'static str, &'static str>,
            &'static str,
        );
        let steps: &[Step] = &[
            (
                "add",
                "write tests",
                None,
                Ok("added item 1"),
                "[ ] 1. write tests",
            ),
            (
                "add",
                "run them",
                None,
                Ok("added item 2"),
                "[ ] 1. write tests\n[ ] 2. run them",
            ),
            (
                "done",
                "",
                Some(1),
                Ok("marked item 1 done"),
                "[x] 1. write tests\n[ ] 2. run them",
            ),
            (
                "undo",
                "",
                Some(1),
                Ok("marked item 1 not done"),
                "[ ] 1. write tests\n[ ] 2. run them",
            ),
            (
                "remove",
                "",
                Some(1),
                Ok("removed item 1"),
                "[ ] 2. run them",
            ),
            (
                "add",
                "ship",
                None,
                Ok("added item 3"),
                "[ ] 2. run them\n[ ] 3. ship",
            ),
            (
                "done",
                "",
                Some(9),
                Err("there is no item 9"),
                "[ ] 2. run them\n[ ] 3. ship",
            ),
            (
                "clear",
                "",
                None,
                Ok("cleared 2 items"),
                "(the TODO list is empty)",
            ),
        ];
        for (action, text, id, want, list) in steps {
            let got = apply(&mut todos, action, text, *id);
            match want {
                Ok(note) => assert_eq!(got, Ok(Some(note.to_string())), "{action}"),
                Err(e) => assert_eq!(got, Err(e.to_string()), "{action}"),
            }
            assert_eq!(render(&todos), *list, "{action}");
        }
    }

    #[test]
    fn the_list_has_a_limit() {
        let mut todos: Vec<Todo> = (1..=MAX_ITEMS as u32)
            .map(|id| Todo {
                id,
                text: "x".into(),
                done: false,
            })
            .collect();
        let err = apply(&mut todos, "add", "one more", None).unwrap_err();
        assert!(err.contains("already has 50 items"), "{err}");
    }

    #[test]
    fn missing_arguments_are_reported_before_touching_the_store() {
        let h = Harness::new();
        let cases: &[(serde_json::Value, &str)] = &[
            (json!({"action": "add"}), "`add` needs `text`"),
            (
                json!({"action": "add", "text": "   "}),
                "`add` needs `text`",
            ),
            (json!({"action": "done"}), "`done` needs `id`"),
            (
                json!({"action": "remove", "id": "x"}),
                "`id` must be an integer",
            ),
            (
                json!({"action": "archive"}),
                "`action` must be one of list, add",
            ),
        ];
        for (args, expected) in cases {
            let out = h.call("todo", args.clone());
            assert!(out.is_error, "{args}");
            assert!(out.content.contains(expected), "{args}: {}", out.content);
        }
    }

    #[test]
    fn the_list_is_kept_per_session() {
        let mut h = Harness::new();
        let out = h.call("todo", json!({"action": "add", "text": "plan"}));
        assert_eq!(out.content, "added item 1\n[ ] 1. plan");
        let out = h.call("todo", json!({"action": "done", "id": 1}));
        assert_eq!(out.content, "marked item 1 done\n[x] 1. plan");
        assert_eq!(
            h.call("todo", json!({"action": "list"})).content,
            "[x] 1. plan"
        );
        h.session = h.store.create_session("other", h.now).expect("session").id;
        assert_eq!(
            h.call("todo", json!({"action": "list"})).content,
            "(the TODO list is empty)"
        );
    }
}
