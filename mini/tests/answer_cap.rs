//! The cap on one model answer (`[model] max_answer_bytes`) through the built binary: an
//! answer over it is cut at a character with a note and the turn goes on as usual —
//! shown, stored, exit 0 — streamed or not; tool-call arguments count too, and a call
//! they cut is not run but explained to the model; and the OpenAI-compatible response
//! carries the reply once.

mod support;

use serde_json::{json, Value};
use support::serve::Server;
use support::{all_text, tool_call, Reply, World};

const NOTE_4K: &str = "[answer cut at 4 KiB: max_answer_bytes]";
const NOTE_1M: &str = "[answer cut at 1 MiB: max_answer_bytes]";

/// A world keeping at most 4 KiB of an answer.
fn capped(name: &str) -> World {
    let w = World::new(name);
    w.config("[model]\nmax_answer_bytes = 4096\n");
    w
}

/// 10 000 bytes of text whose first 4096 bytes end inside a two-byte character
/// (`é` at byte 4095): a cut there must keep 4095 bytes, not split it.
fn long_answer() -> (String, String) {
    let text = format!("{}é{}", "a".repeat(4095), "b".repeat(5903));
    let kept = format!("{}\n\n{NOTE_4K}", "a".repeat(4095));
    (text, kept)
}

/// The assistant messages of a session, from `evolve sessions export --format json`.
fn stored_answers(w: &World, sid: &str) -> Vec<String> {
    let export = w
        .run(&["sessions", "export", sid, "--format", "json"])
        .expect(0)
        .json();
    export["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in the export: {export}"))
        .iter()
        .map(|m| &m["message"])
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

/// The session's assistant messages through the server's API.
fn served_answers(s: &Server, sid: &str) -> Vec<String> {
    let msgs = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    msgs["data"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn chat_body(text: &str, extra: Value) -> String {
    let mut v = json!({"model": "evolve", "messages": [{"role": "user", "content": text}]});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    v.to_string()
}

/// The content deltas of an SSE response, joined.
fn streamed_content(events: &[(String, String)]) -> String {
    events
        .iter()
        .filter(|(name, data)| name.is_empty() && data.starts_with('{'))
        .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn an_answer_over_the_cap_is_cut_with_a_note_and_the_turn_succeeds() {
    let w = capped("cap-ask");
    let (text, kept) = long_answer();
    w.fake.push(Reply::text(text));
    let run = w.run(&["ask", "--json", "tell me everything"]).expect(0);
    let record = run.json();
    assert_eq!(record["reply"], kept.as_str());
    // The log says what happened and what to set.
    assert!(
        run.stderr.contains("max_answer_bytes = 4 KiB"),
        "{}",
        run.stderr
    );
    let sid = record["session"].as_str().expect("session").to_string();
    assert_eq!(stored_answers(&w, &sid), std::slice::from_ref(&kept));
    // The next turn goes on in the session as usual.
    w.fake.push(Reply::text("Short this time."));
    let run = w.run(&["ask", "--session", &sid, "and briefly?"]).expect(0);
    assert_eq!(run.stdout.trim(), "Short this time.");
}

#[test]
fn the_default_cap_is_one_mib() {
    let w = World::new("cap-default");
    let text = "x".repeat(1024 * 1024 + 300_000);
    w.fake.push(Reply::text(text));
    let run = w.run(&["ask", "a lot please"]).expect(0);
    let out = run.stdout.trim_end();
    assert!(out.ends_with(NOTE_1M), "{}", &out[out.len() - 100..]);
    assert_eq!(out.len(), 1024 * 1024 + 2 + NOTE_1M.len());
}

#[test]
fn a_streamed_answer_over_the_cap_is_cut_as_it_streams() {
    let w = capped("cap-stream");
    let s = Server::start(&w, &[]);
    let (text, kept) = long_answer();
    w.fake.set_chunk_chars(700);
    w.fake.push(Reply::text(text));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("tell me everything", json!({"stream": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let events = r.events();
    assert_eq!(streamed_content(&events), kept);
    assert_eq!(events.last().map(|(_, d)| d.as_str()), Some("[DONE]"));
    let sid = r.header("x-evolve-session").expect("session").to_string();
    assert_eq!(served_answers(&s, &sid), [kept]);
}

#[test]
fn the_openai_response_carries_the_reply_once() {
    let w = capped("cap-once");
    let s = Server::start(&w, &[]);
    let marker = "Unique-reply-7f3a";
    w.fake
        .push(Reply::text(format!("{marker} {}", "c".repeat(10_000))));
    let r = s.post("/v1/chat/completions", &chat_body("hello", json!({})));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body.matches(marker).count(), 1, "{}", r.body);
    let v = r.json();
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    assert!(content.starts_with(marker) && content.ends_with(NOTE_4K));
    assert_eq!(v["evolve"]["turn"], 1);
    assert!(v["evolve"].get("reply").is_none(), "{}", v["evolve"]);
    // The stored turn record keeps its reply.
    let sid = r.header("x-evolve-session").expect("session");
    let turn = s.get(&format!("/v1/sessions/{sid}/turns/1")).json();
    assert_eq!(turn["reply"], content);

    // Streamed with Evolve's events: the record events leave the reply out too.
    w.fake.push(Reply::text(format!("{marker} again")));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("again", json!({"stream": true, "evolve_events": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let events = r.events();
    assert_eq!(streamed_content(&events), format!("{marker} again"));
    // Only the deltas carry it (they cut it in pieces; a repeat would be whole).
    assert_eq!(r.body.matches(marker).count(), 0, "{}", r.body);
    let turns: Vec<Value> = events
        .iter()
        .filter(|(name, _)| name == "evolve.turn")
        .map(|(_, d)| serde_json::from_str(d).expect("a record"))
        .collect();
    assert!(!turns.is_empty());
    assert!(turns.iter().all(|t| t.get("reply").is_none()), "{turns:?}");

    // `ask` through the running server still prints the reply, and `--json` has it.
    w.fake.push(Reply::text("Through the server."));
    let run = w.run(&["ask", "--json", "via serve?"]).expect(0);
    assert_eq!(run.json()["reply"], "Through the server.");
}

#[test]
fn tool_call_arguments_over_the_cap_are_not_run_and_the_model_is_told() {
    let w = capped("cap-tool");
    let ws = w.workspace();
    let args = json!({"path": "big.txt", "content": "w".repeat(10_000)}).to_string();
    w.fake.push(tool_call("write_file", &args));
    w.fake.push(Reply::text("I will write it in parts."));
    let run = w
        .run(&["ask", "--json", "--yes", "write big.txt"])
        .expect(0);
    let record = run.json();
    assert_eq!(record["reply"], "I will write it in parts.");
    assert_eq!(record["tools"][0]["ran"], false, "{record}");
    assert_eq!(
        record["tools"][0]["answer"], "arguments over max_answer_bytes",
        "{record}"
    );
    assert!(!ws.join("big.txt").exists(), "the cut call ran");
    // The model was told why, and got no 4 KiB of broken arguments back.
    let second = w.main_requests().pop().expect("a second model request");
    let told = all_text(&second);
    assert!(told.contains("max_answer_bytes"), "{told}");
    assert!(!second.to_string().contains(&"w".repeat(1000)), "{second}");
}

#[test]
fn streamed_tool_call_arguments_over_the_cap_end_the_call_not_the_turn() {
    let w = capped("cap-tool-stream");
    let s = Server::start(&w, &[]);
    let args = json!({"path": "big.txt", "content": "w".repeat(10_000)}).to_string();
    w.fake.push(tool_call("write_file", &args));
    w.fake.push(Reply::text("Smaller pieces, then."));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("write big.txt", json!({"stream": true, "evolve_yes": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let content = streamed_content(&r.events());
    assert!(content.ends_with("Smaller pieces, then."), "{content}");
    assert!(content.contains(NOTE_4K), "{content}");
    assert!(!w.workspace().join("big.txt").exists(), "the cut call ran");
}
