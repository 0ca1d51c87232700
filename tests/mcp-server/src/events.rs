//! `--events FILE`: what the server received, one line per event in the order it
//! arrived, so a client's test can see the order of its messages across HTTP requests
//! (a `notifications/cancelled` before the DELETE that ends the session, say) even after
//! the session is gone. The HTTP endpoint writes a line per message before rmcp sees it
//! ([`describe`]); tools write what they did (`slow cancelled`).
//!
//! ```text
//! POST initialize id=0
//! POST notifications/initialized
//! GET
//! POST tools/call id=2 name=slow
//! POST notifications/cancelled requestId=2
//! slow cancelled
//! DELETE
//! ```

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

/// Where events go, if anywhere.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Events(Option<PathBuf>);

impl Events {
    pub fn new(file: Option<PathBuf>) -> Events {
        Events(file)
    }

    pub fn on(&self) -> bool {
        self.0.is_some()
    }

    /// Appends `line` (one write, so lines of concurrent requests do not mix).
    pub fn record(&self, line: &str) {
        let Some(file) = &self.0 else { return };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            eprintln!("evolve-mcp-test-server: --events {}: {e}", file.display());
        }
    }
}

/// The lines for one POST body: a line per JSON-RPC message (a batch gives several),
/// `POST METHOD` with the request's `id`, a call's tool `name` and a cancellation's
/// `requestId`; a client's response to the server is `POST response id=N`.
pub fn describe(body: &[u8]) -> Vec<String> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch,
        Ok(one) => vec![one],
        Err(_) => return vec!["POST (not JSON)".to_string()],
    };
    messages.iter().map(one).collect()
}

fn one(message: &Value) -> String {
    let id = message.get("id").map(|id| format!(" id={id}"));
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return format!("POST response{}", id.unwrap_or_default());
    };
    let mut line = format!("POST {method}{}", id.unwrap_or_default());
    let params = &message["params"];
    match method {
        "tools/call" => {
            if let Some(name) = params["name"].as_str() {
                line.push_str(&format!(" name={name}"));
            }
        }
        "notifications/cancelled" => line.push_str(&format!(" requestId={}", params["requestId"])),
        _ => {}
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_per_message() {
        let cases: [(&str, &[&str]); 6] = [
            (
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
                &["POST initialize id=0"],
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow"}}"#,
                &[r#"POST tools/call id="a" name=slow"#],
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}"#,
                &["POST notifications/cancelled requestId=3"],
            ),
            (
                r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
                &["POST response id=0"],
            ),
            (
                r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                &["POST notifications/initialized", "POST ping id=1"],
            ),
            ("{", &["POST (not JSON)"]),
        ];
        for (body, want) in cases {
            assert_eq!(describe(body.as_bytes()), want, "{body}");
        }
    }

    #[test]
    fn records_in_order_and_nowhere_when_off() {
        let file =
            std::env::temp_dir().join(format!("evolve-mcp-events-unit-{}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let events = Events::new(Some(file.clone()));
        assert!(events.on());
        events.record("one");
        events.record("two");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
        let _ = std::fs::remove_file(&file);
        let off = Events::default();
        assert!(!off.on());
        off.record("nowhere");
    }
}
