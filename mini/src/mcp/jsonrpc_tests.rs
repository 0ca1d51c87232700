use super::*;

use crate::cancel::Cancel;

/// What the scripted server does with each message evolve sends.
type Behaviour = Box<dyn Fn(&Arc<Peer>, &Value) + Send + Sync>;

/// A server in a closure: sees each message evolve sends and may send back.
struct Script {
    sent: Mutex<Vec<Value>>,
    server: Behaviour,
}

impl Link for Script {
    fn send(&self, peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure> {
        let value: Value = serde_json::from_slice(&message.body).expect("JSON sent");
        assert_eq!(value["jsonrpc"], "2.0");
        self.sent.lock().unwrap().push(value.clone());
        (self.server)(peer, &value);
        Ok(())
    }
}

fn peer(server: impl Fn(&Arc<Peer>, &Value) + Send + Sync + 'static) -> (Arc<Peer>, Arc<Script>) {
    let script = Arc::new(Script {
        sent: Mutex::new(Vec::new()),
        server: Box::new(server),
    });
    let roots = vec![PathBuf::from("/srv/data dir"), PathBuf::from("/home/me")];
    (Peer::new("t", script.clone(), roots), script)
}

/// Answers a request from another thread, as a reader thread would.
fn later(peer: &Arc<Peer>, messages: Vec<Value>) {
    let peer = peer.clone();
    std::thread::spawn(move || {
        for m in messages {
            peer.dispatch(m);
        }
    });
}

const LONG: Duration = Duration::from_secs(30);

/// A caller's ear: keeps the progress it hears, answers questions as told.
#[derive(Default)]
struct Ear {
    progress: Vec<Progress>,
    asked: Vec<Elicitation>,
    answer: Option<ElicitReply>,
}

impl CallEvents for Ear {
    fn progress(&mut self, progress: &Progress) {
        self.progress.push(progress.clone());
    }
    fn elicit(&mut self, question: &Elicitation) -> ElicitReply {
        self.asked.push(question.clone());
        self.answer.clone().unwrap_or(ElicitReply::Decline)
    }
}

#[test]
fn server_messages_before_the_answer_are_handled_and_the_answer_reaches_its_caller() {
    let (peer, script) = peer(|peer, msg| {
        if msg["method"] == "tools/list" {
            let id = msg["id"].clone();
            later(
                peer,
                vec![
                    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}),
                    json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}),
                    json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}),
                    json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
                ],
            );
        }
    });
    let never = Cancel::new();
    let result = peer
        .request("tools/list", None, LONG, &never)
        .expect("answered");
    assert_eq!(result, json!({"tools": []}));
    assert!(
        peer.stale().load(Ordering::SeqCst),
        "list_changed marks the list stale"
    );
    let sent = script.sent.lock().unwrap().clone();
    assert_eq!(sent[0]["method"], "tools/list");
    assert!(
        sent[0].get("params").is_none(),
        "no params when none are given"
    );
    let answers: HashMap<String, &Value> =
        sent[1..].iter().map(|m| (m["id"].to_string(), m)).collect();
    assert_eq!(answers["0"]["result"], json!({}), "ping");
    assert_eq!(
        answers["\"r1\""]["result"],
        json!({"roots": [
            {"uri": "file:///srv/data%20dir", "name": "data dir"},
            {"uri": "file:///home/me", "name": "me"}
        ]})
    );
    assert_eq!(answers["7"]["error"]["code"], json!(METHOD_NOT_FOUND));
    assert!(answers["7"].get("result").is_none());
}

#[test]
fn answers_go_to_their_own_callers_whatever_their_order() {
    // The server holds whichever request arrives first until the other arrives,
    // then answers both, the later one first (each with its own `n`).
    let held = Arc::new(Mutex::new(None::<Value>));
    let (peer, _) = peer(move |peer, msg| {
        let mut first = held.lock().unwrap();
        match first.take() {
            None => *first = Some(msg.clone()),
            Some(m1) => later(
                peer,
                vec![
                    json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"n": msg["params"]["n"]}}),
                    json!({"jsonrpc": "2.0", "id": m1["id"], "result": {"n": m1["params"]["n"]}}),
                ],
            ),
        }
    });
    let p = peer.clone();
    let one =
        std::thread::spawn(move || p.request("x", Some(json!({"n": 1})), LONG, &Cancel::new()));
    while !peer.is_pending(0) {
        std::thread::yield_now();
    }
    let two = peer.request("x", Some(json!({"n": 2})), LONG, &Cancel::new());
    assert_eq!(two, Ok(json!({"n": 2})));
    assert_eq!(one.join().unwrap(), Ok(json!({"n": 1})));
}

#[test]
fn an_error_answer_is_the_servers_error() {
    let (peer, _) = peer(|peer, msg| {
        later(
            peer,
            vec![
                json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool \"x\""}}),
            ],
        )
    });
    let got = peer.request("tools/call", None, LONG, &Cancel::new());
    assert_eq!(
        got,
        Err(Failure::Rpc {
            code: -32602,
            message: "unknown tool \"x\"".into()
        })
    );
}

#[test]
fn ctrl_c_and_timeouts_give_up_and_tell_the_server() {
    let (peer, script) = peer(|_, _| {});
    let cancel = Cancel::new();
    cancel.cancel();
    assert_eq!(
        peer.request("tools/call", None, LONG, &cancel),
        Err(Failure::Cancelled)
    );
    let never = Cancel::new();
    assert_eq!(
        peer.request("tools/call", None, Duration::ZERO, &never),
        Err(Failure::Timeout)
    );
    assert_eq!(
        peer.request("initialize", None, Duration::ZERO, &never),
        Err(Failure::Timeout)
    );
    let sent = script.sent.lock().unwrap().clone();
    let cancelled: Vec<(&Value, &Value)> = sent
        .iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .map(|m| (&m["params"]["requestId"], &m["params"]["reason"]))
        .collect();
    assert_eq!(
        cancelled,
        [
            (&json!(0), &json!("cancelled by the user")),
            (&json!(1), &json!("timed out"))
        ],
        "initialize is never cancelled"
    );
    assert!(!peer.is_pending(0) && !peer.is_pending(1) && !peer.is_pending(2));
    // A late answer is dropped without harm.
    peer.dispatch(json!({"jsonrpc": "2.0", "id": 0, "result": {}}));
}

/// A request that wants progress sends its token; each notice that moves forward
/// reaches the caller and starts the timeout again, a repeat or a step back does
/// not, and the cap ends the wait however much progress comes.
#[test]
fn progress_reaches_the_caller_and_stretches_the_timeout_up_to_the_cap() {
    // Progress every 100 ms, forever, with a repeat and a step back early on, and
    // a notice for another token; the answer after 700 ms.
    let (busy, script) = peer(|peer, msg| {
        if msg["method"] != "tools/call" {
            return;
        }
        let (peer, id) = (peer.clone(), msg["id"].clone());
        let token = msg["params"]["_meta"]["progressToken"].clone();
        std::thread::spawn(move || {
            let note = |p: f64| {
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": p, "total": 7, "message": "step\u{1b}[31m"}})
            };
            for (i, p) in [1.0, 1.0, 0.5, 2.0, 3.0, 4.0, 5.0, 6.0]
                .into_iter()
                .enumerate()
            {
                std::thread::sleep(Duration::from_millis(if i < 3 { 10 } else { 100 }));
                peer.dispatch(note(p));
                peer.dispatch(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 999, "progress": 50}}));
            }
            std::thread::sleep(Duration::from_millis(100));
            peer.dispatch(json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}}));
        });
    });
    let never = Cancel::new();
    let mut ear = Ear::default();
    let wait = Wait {
        timeout: Duration::from_millis(300),
        cancel: &never,
        events: Some((&mut ear, Duration::from_secs(30))),
    };
    let got = busy.request_with("tools/call", Some(json!({"name": "x"})), wait);
    assert_eq!(
        got,
        Ok(json!({"ok": true})),
        "700 ms under a 300 ms timeout"
    );
    let seen = ear.progress;
    let steps: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(seen[0].total, Some(7.0));
    assert_eq!(seen[0].line(), "1/7 step\\u{1b}[31m", "controls escaped");
    let sent = script.sent.lock().unwrap()[0].clone();
    assert_eq!(sent["params"]["_meta"]["progressToken"], sent["id"]);
    assert_eq!(sent["params"]["name"], "x");

    // Without progress wanted, no token and no notice.
    let (quiet, script) = peer(|_, _| {});
    assert_eq!(
        quiet.request("tools/call", None, Duration::ZERO, &never),
        Err(Failure::Timeout)
    );
    assert!(script.sent.lock().unwrap()[0]["params"]["_meta"].is_null());

    // The cap: progress every 50 ms, never an answer; a 200 ms timeout capped at
    // 600 ms gives up near the cap, not never.
    let (capped, _) = peer(|peer, msg| {
        if msg["method"] != "tools/call" {
            return;
        }
        let (peer, token) = (
            peer.clone(),
            msg["params"]["_meta"]["progressToken"].clone(),
        );
        std::thread::spawn(move || {
            for p in 1..200 {
                std::thread::sleep(Duration::from_millis(50));
                peer.dispatch(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": p}}));
            }
        });
    });
    let mut ear = Ear::default();
    let wait = Wait {
        timeout: Duration::from_millis(200),
        cancel: &never,
        events: Some((&mut ear, Duration::from_millis(600))),
    };
    assert_eq!(
        capped.request_with("tools/call", None, wait),
        Err(Failure::Timeout)
    );
    let count = ear.progress.len();
    assert!((3..40).contains(&count), "{count} notices before the cap");
}

/// A question for a person reaches the caller of the call it came during, and its
/// answer goes back as the result; with nobody listening it is declined, a form
/// evolve cannot show is refused as invalid params.
#[test]
fn a_servers_question_goes_to_the_listening_caller_and_its_answer_back() {
    let question = json!({"message": "Name?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}, "required": ["name"]}});
    let asked = question.clone();
    let (peer, script) = peer(move |peer, msg| {
        if msg["method"] != "tools/call" {
            return;
        }
        let (peer, id, asked) = (peer.clone(), msg["id"].clone(), asked.clone());
        std::thread::spawn(move || {
            peer.dispatch(json!({"jsonrpc": "2.0", "id": "q1", "method": "elicitation/create", "params": asked}));
            peer.dispatch(
                json!({"jsonrpc": "2.0", "id": "q2", "method": "elicitation/create",
                    "params": {"mode": "url", "url": "https://example.invalid"}}),
            );
            std::thread::sleep(Duration::from_millis(100));
            peer.dispatch(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        });
    });
    let never = Cancel::new();
    let mut content = Map::new();
    content.insert("name".into(), json!("Ada"));
    let mut ear = Ear {
        answer: Some(ElicitReply::Accept(content)),
        ..Ear::default()
    };
    let wait = Wait {
        timeout: LONG,
        cancel: &never,
        events: Some((&mut ear, LONG)),
    };
    assert_eq!(peer.request_with("tools/call", None, wait), Ok(json!({})));
    assert_eq!(ear.asked.len(), 1);
    assert_eq!(ear.asked[0].message, "Name?");
    let sent = script.sent.lock().unwrap().clone();
    let reply = |id: &str| {
        sent.iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no reply to {id}: {sent:?}"))
    };
    assert_eq!(
        reply("q1")["result"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert_eq!(reply("q2")["error"]["code"], json!(INVALID_PARAMS));
    // Nobody listening (no call running): declined at once.
    peer.dispatch(
        json!({"jsonrpc": "2.0", "id": "q3", "method": "elicitation/create", "params": question}),
    );
    let sent = script.sent.lock().unwrap().clone();
    let q3 = sent.iter().find(|m| m["id"] == "q3").expect("answered");
    assert_eq!(q3["result"], json!({"action": "decline"}));
}

#[test]
fn new_roots_are_announced_once_and_answered_after() {
    let (peer, script) = peer(|_, _| {});
    peer.set_roots(vec![
        PathBuf::from("/srv/data dir"),
        PathBuf::from("/home/me"),
    ]);
    assert!(
        script.sent.lock().unwrap().is_empty(),
        "the same roots: no notice"
    );
    peer.set_roots(vec![PathBuf::from("/work")]);
    peer.dispatch(json!({"jsonrpc": "2.0", "id": 5, "method": "roots/list"}));
    let sent = script.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["method"], "notifications/roots/list_changed");
    assert!(sent[0].get("id").is_none());
    assert_eq!(
        sent[1]["result"],
        json!({"roots": [{"uri": "file:///work", "name": "work"}]})
    );
}

#[test]
fn the_end_of_the_connection_fails_waiting_and_later_requests() {
    let (peer, script) = peer(|peer, _| {
        let peer = peer.clone();
        std::thread::spawn(move || peer.end("it exited with code 3"));
    });
    let never = Cancel::new();
    let want = Err(Failure::Broken("it exited with code 3".into()));
    assert_eq!(peer.request("tools/call", None, LONG, &never), want);
    assert_eq!(peer.request("tools/call", None, LONG, &never), want);
    peer.end("a later reason");
    assert_eq!(peer.ended().as_deref(), Some("it exited with code 3"));
    assert_eq!(
        script.sent.lock().unwrap().len(),
        1,
        "nothing sent after the end"
    );
}

#[test]
fn malformed_messages_are_ignored() {
    let (peer, script) = peer(|_, _| {});
    for odd in [
        json!("text"),
        json!(42),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
        json!({"jsonrpc": "2.0", "id": 99, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "abc", "result": {}}),
        json!([{"jsonrpc": "2.0", "method": "notifications/progress"}]),
    ] {
        peer.dispatch(odd);
    }
    assert!(script.sent.lock().unwrap().is_empty());
    assert!(peer.ended().is_none());
}
