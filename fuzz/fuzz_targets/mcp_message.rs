//! An MCP server's stdout through what evolve reads it with: the line guard
//! (`evolve_mini::lines`, `mini/src/mcp/lines.rs`) and the JSON-RPC peer
//! (`evolve_mini::jsonrpc`, `mini/src/mcp/jsonrpc.rs`). The flow is the stdio transport's
//! (`read_stdout` in `mini/src/mcp/stdio.rs`): evolve sends request 0, the server's output
//! is read line by line, each JSON line is dispatched, and at the end of the output the
//! connection ends.
//!
//! The first byte of the input chooses the line limit (8 to 263 bytes, so that the guard's
//! "message too large" path is reached); the rest is the server's output.
//!
//! Invariants beyond "no panic": no line handed on is longer than the limit unless it is
//! the guard's own error reply; request 0 never hangs once the output ended, and it gets
//! an answer exactly when the output held one for it; every request of the server's is
//! answered once, with its id, in well-formed JSON-RPC.
#![no_main]

use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use evolve_mini::jsonrpc::{Failure, Link, Outgoing, Peer};
use evolve_mini::lines::LineGuard;
use evolve_mini::Cancel;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Formats every log record, so the messages' own code (quoting what a server sent)
/// runs too.
struct FormatAll;

impl log::Log for FormatAll {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        std::hint::black_box(record.args().to_string());
    }
    fn flush(&self) {}
}

/// What the server wrote and what evolve sent back.
#[derive(Default)]
struct Server {
    output: Mutex<Vec<u8>>,
    max: usize,
    /// The lines the guard handed on.
    lines: Mutex<Vec<Vec<u8>>>,
    /// evolve's messages other than request 0.
    sent: Mutex<Vec<Vec<u8>>>,
}

impl Link for Server {
    fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure> {
        if message.id != Some(0) {
            self.sent.lock().unwrap().push(message.body);
            return Ok(());
        }
        let output = std::mem::take(&mut *self.output.lock().unwrap());
        let mut guard = LineGuard::with_max(output.as_slice(), "fuzz", self.max);
        while let Some(line) = guard.next_line().expect("reading memory") {
            self.lines.lock().unwrap().push(line.clone());
            if line.trim_ascii().is_empty() {
                continue;
            }
            if let Ok(message) = serde_json::from_slice::<Value>(&line) {
                peer.dispatch(message);
            }
        }
        peer.end("it closed its output");
        Ok(())
    }
}

/// The messages in one dispatched value (a batch is several).
fn messages(value: &Value, out: &mut Vec<serde_json::Map<String, Value>>) {
    match value {
        Value::Object(map) => out.push(map.clone()),
        Value::Array(batch) => batch.iter().for_each(|m| messages(m, out)),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    static LOGGER: Once = Once::new();
    LOGGER.call_once(|| {
        log::set_logger(&FormatAll).expect("one logger");
        log::set_max_level(log::LevelFilter::Trace);
    });
    let Some((first, output)) = data.split_first() else {
        return;
    };
    let server = Arc::new(Server {
        output: Mutex::new(output.to_vec()),
        max: 8 + usize::from(*first),
        ..Server::default()
    });
    let peer = Peer::new("fuzz", server.clone(), vec!["/tmp/a b".into()]);
    let cancel = Cancel::new();
    let answer = peer.request("tools/list", None, Duration::from_secs(600), &cancel);
    assert!(
        !matches!(answer, Err(Failure::Timeout | Failure::Cancelled)),
        "request 0 still waited after the output ended: {answer:?}"
    );
    assert!(!peer.is_pending(0));
    assert!(peer.ended().is_some());
    assert!(matches!(
        peer.request("ping", None, Duration::from_secs(600), &cancel),
        Err(Failure::Broken(_))
    ));

    // What the server sent, as the peer saw it.
    let mut seen = Vec::new();
    for line in server.lines.lock().unwrap().iter() {
        assert!(!line.contains(&b'\n'), "a line end inside a line");
        let parsed = serde_json::from_slice::<Value>(line).ok();
        if line.len() > server.max {
            let reply = parsed
                .as_ref()
                .expect("only the guard's reply is over the limit");
            assert_eq!(reply["error"]["code"], -32603, "{reply}");
        }
        if let Some(value) = parsed {
            messages(&value, &mut seen);
        }
    }
    let id_of =
        |m: &serde_json::Map<String, Value>| m.get("id").filter(|id| !id.is_null()).cloned();
    let is_request =
        |m: &serde_json::Map<String, Value>| m.get("method").and_then(Value::as_str).is_some();
    let answered = seen.iter().any(|m| {
        !is_request(m)
            && id_of(m).is_some_and(|id| {
                id.as_u64()
                    .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
                    == Some(0)
            })
    });
    assert_eq!(
        answered,
        !matches!(answer, Err(Failure::Broken(_))),
        "the output answered request 0: {answered}, the caller got {answer:?}"
    );

    // Every request of the server's answered once, in order, with its id.
    let asked: Vec<Value> = seen
        .iter()
        .filter(|m| is_request(m))
        .filter_map(id_of)
        .collect();
    let sent = server.sent.lock().unwrap();
    let replies: Vec<Value> = sent
        .iter()
        .map(|body| serde_json::from_slice::<Value>(body).expect("evolve sends JSON"))
        .filter(|m| m.get("method").is_none())
        .collect();
    assert_eq!(
        replies.len(),
        asked.len(),
        "answers {replies:?} to {asked:?}"
    );
    for (reply, id) in replies.iter().zip(&asked) {
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(&reply["id"], id);
        assert!(
            reply.get("result").is_some() != reply.get("error").is_some(),
            "{reply}"
        );
    }
});
