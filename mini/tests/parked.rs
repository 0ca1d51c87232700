//! A call waiting for a person is parked with its whole turn on the session, and the
//! session's next input settles it — in whichever front end the person comes back
//! with (ARCHITECTURE.md § The turn, step 2: the manager first settles the session's
//! blocked calls at the next input).

mod support;
use std::time::Duration;

use serde_json::json;
use support::serve::{asking, chat_body, next_event, stream_events, Server};
use support::{tool_call, Chat, Reply, World};

fn write_then_answer(w: &World, file: &str) {
    w.config("[agent]\nlearn = false\n");
    w.fake.push(tool_call(
        "write_file",
        &format!(r#"{{"path":"{file}","content":"x"}}"#),
    ));
    w.fake.push(Reply::text(format!("Wrote {file}.")));
}

/// The only session of the home.
fn the_session(w: &World) -> String {
    let run = w.run(&["sessions", "list", "--json"]).expect(0);
    let v = run.json();
    let list = v
        .as_array()
        .or_else(|| v["data"].as_array())
        .expect("a list");
    assert_eq!(list.len(), 1, "{v}");
    list[0]["id"].as_str().unwrap().to_string()
}

/// Ctrl-D at the question or a closed terminal (SIGHUP): the call waits, and the next
/// `chat --session` answers it with "yes" — the turn goes on where it was. Ctrl-C at
/// the question refuses the call and keeps the turn (the question is not lost).
#[test]
fn in_chat_the_question_survives_ctrl_d_and_sighup_and_ctrl_c_keeps_the_message() {
    for how in ["ctrl-d", "sighup", "ctrl-c"] {
        let w = World::new(&format!("parked-chat-{how}"));
        let file = format!("{how}.txt");
        write_then_answer(&w, &file);
        let mut chat = Chat::start(&w);
        chat.send(&format!("please write {file}"));
        chat.wait_for("[yes/no/always]");
        match how {
            "ctrl-d" => {
                chat.finish();
            }
            "sighup" => {
                chat.signal("-HUP");
                chat.finish();
            }
            _ => {
                // Ctrl-C at the question: refused, the turn ends and is kept; a "yes"
                // afterwards is a new message, not an answer.
                chat.interrupt();
                chat.wait_for("was refused at its question");
                chat.finish();
                assert!(!w.workspace().join(&file).exists(), "ran after Ctrl-C");
                let sid = the_session(&w);
                let msgs = w
                    .run(&["sessions", "show", &sid, "--json"])
                    .expect(0)
                    .json();
                assert!(
                    msgs.to_string().contains(&format!("please write {file}")),
                    "{msgs}"
                );
                continue;
            }
        }
        {
            assert!(!w.workspace().join(&file).exists(), "{how}: ran unanswered");
            let sid = the_session(&w);
            let mut again = Chat::start_with(&w, &["chat", "--session", &sid]);
            // The waiting question is shown when the session is opened.
            again.wait_for("this call waits for your answer");
            again.send("yes");
            again.wait_for(&format!("Wrote {file}."));
            again.finish();
        }
        assert_eq!(
            std::fs::read_to_string(w.workspace().join(&file)).unwrap(),
            "x",
            "{how}"
        );
        // One turn in the session: the question's, answered — not a new one for "yes".
        let sid = the_session(&w);
        let msgs = w
            .run(&["sessions", "show", &sid, "--json"])
            .expect(0)
            .json();
        let text = msgs.to_string();
        assert!(
            text.contains(&format!("please write {file}")),
            "{how}: {text}"
        );
    }
}

/// In `serve`, a question nobody answers does not block the session: the next message
/// settles it — "yes" runs the call and finishes that turn, anything else refuses it
/// and is answered as a turn of its own.
#[test]
fn in_serve_the_next_message_settles_the_waiting_call() {
    for (reply, runs) in [("yes", true), ("never mind, what is 2+2?", false)] {
        let w = World::new("parked-serve");
        w.config("[agent]\nlearn = false\n");
        w.fake
            .push(tool_call("write_file", r#"{"path":"s.txt","content":"x"}"#));
        w.fake
            .push(Reply::text(if runs { "Wrote s.txt." } else { "4." }));
        let s = Server::start(&w, &[]);
        let (_first, sid, _ask) = asking(&s, "write s.txt", json!({}));
        // The page that asked is still open (or gone, it does not matter): a new
        // message in the session comes.
        let rx = stream_events(
            &s,
            &chat_body(
                reply,
                json!({"stream": true, "evolve_events": true, "session": sid}),
            ),
        );
        let turn = next_event(&rx, "evolve.turn");
        assert!(turn.get("error").is_none(), "{turn}");
        assert_eq!(
            w.workspace().join("s.txt").exists(),
            runs,
            "{reply}: {turn}"
        );
        let pending = s.get(&format!("/v1/sessions/{sid}/pending")).json();
        assert_eq!(pending["data"], json!([]), "{pending}");
        let msgs = s
            .get(&format!("/v1/sessions/{sid}/messages"))
            .json()
            .to_string();
        if runs {
            assert_eq!(turn["turn"], 1, "{turn}");
            assert!(msgs.contains("Wrote s.txt."), "{msgs}");
        } else {
            assert_eq!(turn["turn"], 2, "{turn}");
            assert!(msgs.contains("went on with a new message"), "{msgs}");
            assert!(msgs.contains("4."), "{msgs}");
        }
    }
}

/// A server restart does not lose the question: after it, the call is still listed,
/// and the answer through the API runs it and finishes the turn.
#[test]
fn a_question_survives_a_restart_of_serve() {
    let w = World::new("parked-restart");
    write_then_answer(&w, "r.txt");
    let s = Server::start(&w, &[]);
    let (first, sid, ask) = asking(&s, "write r.txt", json!({}));
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    drop(first);
    drop(s);
    let s = Server::start(&w, &[]);
    let pending = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(pending["data"][0]["id"], call.as_str(), "{pending}");
    let ok = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "yes"}).to_string(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    let mut stored = String::new();
    for _ in 0..100 {
        stored = s
            .get(&format!("/v1/sessions/{sid}/messages"))
            .json()
            .to_string();
        if stored.contains("Wrote r.txt.") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(stored.contains("Wrote r.txt."), "{stored}");
    assert!(w.workspace().join("r.txt").exists());
}
