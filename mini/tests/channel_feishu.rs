//! The Feishu/Lark channel through the binary: `evolve serve` with `[channels.feishu]`
//! pointed at a loopback fake of the open platform (`support::feishu`: the HTTP API and
//! the long connection's protobuf frames), answers scripted by the fake model. What a
//! person in Feishu would notice: who gets answered, answers in cards, approvals by card
//! buttons, threads with their own session, deliveries, and a platform that fails or
//! drops the connection without anything lost.

mod support;
use std::time::{Duration, Instant};

use support::feishu::{FakeFeishu, Fault, APP_SECRET};
use support::serve::Server;
use support::{tool_call, Reply, World};

const ANN: &str = "ou_ann";
const DM: &str = "oc_dm_ann";
const GROUP: &str = "oc_team";

fn setup(name: &str, owner: bool, extra: &str) -> (World, FakeFeishu) {
    let w = World::new(name);
    let fs = FakeFeishu::start();
    let owner = if owner {
        format!("owner = \"{ANN}\"\n")
    } else {
        String::new()
    };
    w.config(&format!(
        "{extra}[agent]\nlearn = false\n{}{owner}",
        fs.config()
    ));
    (w, fs)
}

fn code_in(text: &str) -> String {
    let at = text
        .find("evolve channels pair ")
        .unwrap_or_else(|| panic!("no code in {text:?}"));
    text[at + "evolve channels pair ".len()..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect()
}

fn drain(s: &Server) -> String {
    let mut log = Vec::new();
    while let Ok(line) = s.stderr.recv_timeout(Duration::from_millis(300)) {
        log.push(line);
    }
    log.join("\n")
}

#[test]
fn a_stranger_gets_a_pairing_code_and_only_a_mention_is_answered_in_a_group() {
    let (w, fs) = setup("fs-pair", false, "");
    let _s = Server::start(&w, &[]);
    let first = fs.say(DM, true, ANN, "hello?", false);
    let (_, text, _) = fs.wait_for(DM, 20, |m| m.1.contains("evolve channels pair"));
    fs.wait_acked(&first, 10);
    let code = code_in(&text);
    assert_eq!(code.len(), 8, "{text}");
    assert!(w.main_requests().is_empty(), "a stranger reached the model");

    let paired = w.run(&["channels", "pair", &code]).expect(0);
    assert!(paired.stdout.contains("on feishu"), "{}", paired.stdout);
    fs.wait_for(ANN, 10, |m| m.1.contains("You are paired"));
    w.fake.push(Reply::text("Hello **Ann**!"));
    fs.say(DM, true, ANN, "hi again", false);
    let (_, text, buttons) = fs.wait_for(DM, 20, |m| m.1.contains("Hello"));
    // Cards render Markdown as it is.
    assert_eq!(text, "Hello **Ann**!");
    assert!(buttons.is_empty());
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    assert_eq!(list[0]["channel"], format!("feishu:{DM}"), "{list}");

    // A group: silence without a mention of the bot, a code for the group with one.
    let chatter = fs.say(GROUP, false, "ou_bo", "hello all", false);
    fs.wait_acked(&chatter, 10);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        fs.chat(GROUP).is_empty(),
        "answered a message not meant for it"
    );
    fs.say(GROUP, false, "ou_bo", "hi", true);
    let (_, text, _) = fs.wait_for(GROUP, 20, |m| m.1.contains("evolve channels pair"));
    assert!(text.contains("this group"), "{text}");
    assert_eq!(w.main_requests().len(), 1);
}

#[test]
fn an_answer_streams_into_one_card_patched_in_place() {
    let (w, fs) = setup("fs-stream", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.set_chunk_chars(6);
    w.fake.set_chunk_delay(Duration::from_millis(100));
    let answer = "one two three four five six seven eight nine ten ".repeat(4);
    let answer = answer.trim_end().to_string();
    w.fake.push(Reply::text(answer.clone()));
    fs.say(DM, true, ANN, "count", false);
    fs.wait_for(DM, 30, |m| m.1 == answer);
    assert_eq!(fs.chat(DM).len(), 1, "{:#?}", fs.chat(DM));
    assert!(fs.calls_of("patch").len() >= 2, "not streamed");
    assert_eq!(fs.calls_of("send").len(), 1);
}

#[test]
fn l3_and_l4_calls_are_approved_by_card_buttons() {
    let (w, fs) = setup("fs-buttons", true, "[permission]\nshell_level = \"L4\"\n");
    let _s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"a.txt","content":"x"}"#));
    w.fake.push(Reply::text("Wrote a.txt."));
    fs.say(DM, true, ANN, "write a.txt", false);
    let (id, text, buttons) = fs.wait_for(DM, 20, |m| !m.2.is_empty());
    assert!(text.contains("write_file"), "{text}");
    assert_eq!(buttons.len(), 3, "{buttons:?}");
    assert!(
        !w.workspace().join("a.txt").exists(),
        "ran before the answer"
    );
    let press = fs.press(&id, ANN, &buttons[0]);
    fs.wait_for(DM, 20, |m| m.1 == "Wrote a.txt.");
    assert!(fs.acked(&press));
    assert!(w.workspace().join("a.txt").exists());
    // The question card now says what was answered, without buttons.
    let q = fs
        .chat(DM)
        .into_iter()
        .find(|m| m.0 == id)
        .expect("the card");
    assert!(q.1.contains("→ **yes**") && q.2.is_empty(), "{q:?}");

    let marker = w.workspace().join("marker");
    w.fake.push(tool_call(
        "shell",
        &format!(r#"{{"command":"touch {}"}}"#, marker.display()),
    ));
    w.fake.push(Reply::text("Touched."));
    fs.say(DM, true, ANN, "touch the marker", false);
    let (q1, _, b1) = fs.wait_for(DM, 20, |m| m.0 != id && !m.2.is_empty());
    assert_eq!(b1.len(), 2, "L4 offers no always: {b1:?}");
    fs.press(&q1, ANN, &b1[0]);
    let (q2, text2, b2) = fs.wait_for(DM, 20, |m| m.0 != id && m.0 != q1 && !m.2.is_empty());
    assert!(text2.contains("Second confirmation"), "{text2}");
    assert!(!marker.exists(), "ran after one yes");
    // Someone else's press answers nothing.
    let other = fs.press(&q2, "ou_mallory", &b2[0]);
    fs.wait_acked(&other, 10);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "a stranger approved a call");
    fs.press(&q2, ANN, &b2[0]);
    fs.wait_for(DM, 20, |m| m.1 == "Touched.");
    assert!(marker.exists());
}

#[test]
fn a_question_left_unanswered_is_settled_by_the_next_message() {
    let (w, fs) = setup("fs-parked", true, "");
    let _s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"b.txt","content":"x"}"#));
    fs.say(DM, true, ANN, "write b.txt", false);
    fs.wait_for(DM, 20, |m| !m.2.is_empty());
    w.fake.push(Reply::text("It is 4."));
    fs.say(DM, true, ANN, "never mind, what is 2+2?", false);
    fs.wait_for(DM, 20, |m| m.1 == "It is 4.");
    assert!(!w.workspace().join("b.txt").exists());
    // A question answered with a word: "yes" approves it.
    w.fake
        .push(tool_call("write_file", r#"{"path":"c.txt","content":"x"}"#));
    w.fake.push(Reply::text("Wrote c.txt."));
    fs.say(DM, true, ANN, "write c.txt", false);
    fs.wait_for(DM, 20, |m| m.1.contains("c.txt") && !m.2.is_empty());
    fs.say(DM, true, ANN, "yes", false);
    fs.wait_for(DM, 20, |m| m.1 == "Wrote c.txt.");
    assert!(w.workspace().join("c.txt").exists());
}

#[test]
fn a_thread_has_its_own_session_and_the_answer_goes_into_it() {
    let (w, fs) = setup("fs-thread", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("In the group."));
    fs.say(GROUP, false, ANN, "hello", true);
    fs.wait_for(GROUP, 20, |m| m.1 == "In the group.");
    w.fake.push(Reply::text("In the thread."));
    fs.say_in_thread(GROUP, "om_root1", ANN, "and here?");
    let place = format!("{GROUP}/om_root1");
    fs.wait_for(&place, 20, |m| m.1 == "In the thread.");
    assert!(fs.calls_of("reply").len() == 1);
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    let channels: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["channel"].as_str().map(str::to_string))
        .collect();
    assert_eq!(channels.len(), 2, "{channels:?}");
    assert!(
        channels.contains(&format!("feishu:{place}")),
        "{channels:?}"
    );
}

#[test]
fn an_image_reaches_the_model() {
    let (w, fs) = setup("fs-image", true, "");
    let _s = Server::start(&w, &[]);
    const PNG: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];
    w.fake.push(Reply::text("A single pixel."));
    fs.image(DM, ANN, PNG);
    fs.wait_for(DM, 20, |m| m.1 == "A single pixel.");
    let req = w
        .main_requests()
        .last()
        .cloned()
        .expect("a request")
        .to_string();
    assert!(req.contains("data:image/png;base64,iVBORw0KGgo"), "{req}");
}

#[test]
fn a_tasks_answer_is_delivered_to_a_feishu_chat() {
    let (w, fs) = setup("fs-deliver", true, "");
    let _s = Server::start(&w, &[]);
    let bad = w.run(&[
        "tasks",
        "add",
        "--every",
        "1h",
        "--deliver",
        "feishu:oc 1",
        "x",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    w.run(&[
        "tasks",
        "add",
        "--every",
        "1h",
        "--deliver",
        &format!("feishu:{DM}"),
        "brief me",
    ])
    .expect(0);
    w.fake.push(Reply::text("Sunny, 21°C."));
    w.run(&["tasks", "run", "1"]).expect(0);
    let (_, text, _) = fs.wait_for(DM, 20, |m| m.1.contains("Sunny"));
    assert!(text.contains("Task 1"), "{text}");
}

#[test]
fn a_failing_platform_is_logged_plainly_and_a_dropped_connection_comes_back() {
    let (w, fs) = setup("fs-faults", true, "");
    let s = Server::start(&w, &[]);
    fs.fail_next("send", Fault::Status500);
    fs.fail_next("send", Fault::Garbage);
    fs.fail_next("send", Fault::RateLimited);
    w.fake.push(Reply::text("Through at last."));
    fs.say(DM, true, ANN, "hello", false);
    fs.wait_for(DM, 40, |m| m.1 == "Through at last.");
    assert_eq!(fs.chat(DM).len(), 1, "{:#?}", fs.chat(DM));
    let log = drain(&s);
    assert!(log.contains("HTTP 500"), "{log}");
    assert!(log.contains("not its JSON"), "{log}");
    assert!(!log.contains(APP_SECRET), "the secret is in the log: {log}");
    assert!(
        !log.contains("t-tenant-token"),
        "the token is in the log: {log}"
    );

    // The platform drops the connection: the channel opens a new one and answers.
    let before = fs.sockets_opened();
    fs.drop_socket();
    let end = Instant::now() + Duration::from_secs(30);
    while fs.sockets_opened() == before {
        assert!(Instant::now() < end, "no new connection");
        std::thread::sleep(Duration::from_millis(100));
    }
    w.fake.push(Reply::text("Still here."));
    fs.say(DM, true, ANN, "still there?", false);
    fs.wait_for(DM, 20, |m| m.1 == "Still here.");
    assert_eq!(s.get("/health").status, 200);
    assert!(drain(&s).contains("dropped"), "the drop was not logged");
}

#[test]
fn the_channels_api_lists_writes_tests_pairs_and_never_returns_a_secret() {
    let (w, fs) = setup("fs-api", false, "");
    let s = Server::start(&w, &[]);
    // The token is required like every /v1 route.
    assert_eq!(s.anonymous("GET", "/v1/channels", &[], "").status, 401);
    fs.say(DM, true, ANN, "hello?", false);
    fs.wait_for(DM, 20, |m| m.1.contains("evolve channels pair"));
    let list = s.get("/v1/channels");
    assert_eq!(list.status, 200);
    let v = list.json();
    let c = &v["channels"][0];
    assert_eq!(
        (c["name"].clone(), c["kind"].clone()),
        ("feishu".into(), "feishu".into())
    );
    assert_eq!(c["secret_set"], true);
    assert_eq!(c["status"], "running", "{c}");
    assert!(!list.json().to_string().contains(APP_SECRET));
    let pending = c["pending"][0].clone();
    assert_eq!(pending["user"], ANN, "{c}");
    let code = pending["code"].as_str().expect("a code").to_string();

    // `doctor` checks the channel's credentials too.
    let doc = w.run(&["doctor"]);
    let said = format!("{}{}", doc.stdout, doc.stderr);
    assert!(
        said.contains("feishu") && said.contains("Evolve Test"),
        "{said}"
    );
    assert!(!said.contains(APP_SECRET), "{said}");
    let test = s.post("/v1/channels/feishu/test", "").json();
    assert_eq!(test["ok"], true, "{test}");
    assert_eq!(s.post("/v1/channels/slack/test", "").status, 404);

    let bad = s.post("/v1/channels/pair", r#"{"code":"WRONG234"}"#);
    assert_eq!(bad.status, 404);
    let paired = s.post("/v1/channels/pair", &format!(r#"{{"code":"{code}"}}"#));
    assert_eq!(paired.status, 200);
    assert_eq!(paired.json()["user"], ANN);
    let c = s.get("/v1/channels").json()["channels"][0].clone();
    assert_eq!(c["paired"][0]["user"], ANN, "{c}");
    let gone = s.request(
        "DELETE",
        &format!("/v1/channels/feishu/paired/{ANN}"),
        &[],
        "",
    );
    assert_eq!(gone.status, 200);
    assert_eq!(
        s.get("/v1/channels").json()["channels"][0]["paired"],
        serde_json::json!([])
    );

    // A new channel's settings go to config.toml (0600), the secret never back; the
    // running server starts it (here against a closed loopback port).
    let put = s.request(
        "PUT",
        "/v1/channels/dingtalk",
        &[("Content-Type", "application/json")],
        r#"{"kind":"dingtalk","client_id":"dingapp","client_secret":"DT-SECRET-1","base_url":"http://127.0.0.1:9"}"#,
    );
    assert_eq!(put.status, 200, "{}", put.error_message());
    let body = put.json();
    assert_eq!(
        (body["secret_set"].clone(), body["status"].clone()),
        (true.into(), "starting".into())
    );
    assert!(!body.to_string().contains("DT-SECRET-1"));
    let file = std::fs::read_to_string(w.config_path()).expect("config");
    assert!(
        file.contains("[channels.dingtalk]") && file.contains("DT-SECRET-1"),
        "{file}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(w.config_path())
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let wrong = s.request("PUT", "/v1/channels/dingtalk", &[], r#"{"kind":"feishu"}"#);
    assert_eq!(wrong.status, 400);
    // A field of another platform is still text or nothing: refused, naming it.
    for (bad, word) in [
        (r#"{"kind":"dingtalk","app_id":{"x":1}}"#, "app_id"),
        (r#"{"kind":"dingtalk","token":7}"#, "token"),
        (
            r#"{"kind":"dingtalk","client_secret":null}"#,
            "client_secret",
        ),
    ] {
        let r = s.request("PUT", "/v1/channels/dingtalk", &[], bad);
        assert_eq!(r.status, 400, "{bad}");
        assert!(r.body.contains(word), "{bad}: {}", r.body);
    }
    assert_eq!(
        s.request("DELETE", "/v1/channels/dingtalk", &[], "").status,
        200
    );
    let file = std::fs::read_to_string(w.config_path()).expect("config");
    assert!(!file.contains("dingtalk"), "{file}");
    assert_eq!(
        s.get("/v1/channels").json()["channels"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // A table's header inside another setting's value is not the table: a channel put
    // with nothing else set is still added and listed (it was a 500).
    let odd = s.request(
        "PUT",
        "/v1/channels/dingtalk",
        &[],
        r#"{"kind":"dingtalk","client_id":"id [channels.telegram]"}"#,
    );
    assert_eq!(odd.status, 200, "{}", odd.body);
    let bare = s.request(
        "PUT",
        "/v1/channels/telegram",
        &[],
        r#"{"kind":"telegram","token":"  ","base_url":""}"#,
    );
    assert_eq!(bare.status, 200, "{}", bare.body);
    assert_eq!(bare.json()["secret_set"], false, "{}", bare.body);
}

const VOICE: &str = "[model]\ntranscription_model = \"whisper-1\"\nmax_retries = 0\n";

/// The text of the last user message of a model request.
fn last_user(req: &serde_json::Value) -> String {
    let m = req["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or_default();
    m["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_voice_message_is_transcribed_and_answered_as_the_persons_words() {
    let (w, fs) = setup("fs-voice", true, VOICE);
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("Lights on."));
    // The download fails once: it is tried again, and nothing is lost.
    fs.fail_next("resource", Fault::Status500);
    let mid = fs.audio(DM, true, ANN, b"OggS\x00turn on the lights");
    fs.wait_for(DM, 30, |m| m.1 == "Lights on.");
    fs.wait_acked(&mid, 10);
    let cards = fs.chat(DM);
    let heard = cards.iter().position(|m| m.1 == "🎤 turn on the lights");
    let answer = cards.iter().position(|m| m.1 == "Lights on.");
    assert!(heard.is_some() && heard < answer, "{cards:#?}");
    let req = w.main_requests().last().cloned().expect("a request");
    assert_eq!(last_user(&req), "turn on the lights");
    let sent = w.fake.transcription_requests();
    assert_eq!(sent.len(), 1);
    let file = sent[0].form_part("file").expect("the audio");
    assert_eq!(file.data, b"OggS\x00turn on the lights");
    assert_eq!(file.content_type.as_deref(), Some("audio/ogg"));
    assert_eq!(fs.calls_of("resource").len(), 1);
}

#[test]
fn a_feishu_voice_message_without_a_model_or_with_a_failing_server_is_declined_plainly() {
    // Not configured: what to set, and no model call.
    let (w, fs) = setup("fs-voice-off", true, "");
    let s = Server::start(&w, &[]);
    let mid = fs.audio(DM, true, ANN, b"OggS hello");
    fs.wait_for(DM, 20, |m| m.1.contains("[model] transcription_model"));
    fs.wait_acked(&mid, 10);
    assert!(w.main_requests().is_empty());
    assert!(w.fake.transcription_requests().is_empty());
    drop(s);

    // A failing server: why, acknowledged once, and the chat goes on.
    let (w, fs) = setup("fs-voice-fail", true, VOICE);
    let s = Server::start(&w, &[]);
    w.fake
        .push_transcription(Reply::error(503, "model still loading"));
    let mid = fs.audio(DM, true, ANN, b"OggS hello");
    fs.wait_for(DM, 20, |m| {
        m.1.contains("could not transcribe") && m.1.contains("HTTP 503: model still loading")
    });
    fs.wait_acked(&mid, 10);
    assert!(w.main_requests().is_empty());
    w.fake.push(Reply::text("Here."));
    fs.say(DM, true, ANN, "still there?", false);
    fs.wait_for(DM, 20, |m| m.1 == "Here.");
    let log = drain(&s);
    assert!(log.contains("a voice note was not transcribed"), "{log}");
    assert_eq!(
        fs.calls().iter().filter(|c| c.what == "resource").count(),
        1,
        "the note was fetched once"
    );
}

fn sessions(w: &World) -> Vec<serde_json::Value> {
    let v = w.run(&["sessions", "list", "--json"]).expect(0).json();
    v.as_array().cloned().unwrap_or_default()
}

#[test]
fn kill_9_mid_turn_finishes_the_same_card_once_and_an_event_pushed_again_is_not_answered_twice() {
    let (w, fs) = setup("fs-kill", true, "");
    w.fake.set_chunk_chars(1000);
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::TextThenHang(
        "Partial answer".into(),
        Duration::from_secs(60),
    ));
    // The acknowledgement is lost on the way: the platform pushes the event again on the
    // next connection, beside the copy evolve stored.
    fs.lose_acks(true);
    let mid = fs.say(DM, true, ANN, "tell me a story", false);
    let (card, _, _) = fs.wait_for(DM, 20, |m| m.1.starts_with("Partial"));
    // The card's id reaches the store a moment after the platform has the card.
    std::thread::sleep(Duration::from_millis(500));
    drop(s); // SIGKILL mid-turn
    fs.lose_acks(false);
    w.fake.push(Reply::text("The whole story."));
    let s = Server::start(&w, &[]);
    fs.wait_for(DM, 30, |m| m.1 == "The whole story.");
    fs.wait_acked(&mid, 10);
    // Pushed once more after the answer (its event id the same): kept once.
    let again = fs.redeliver(&mid);
    fs.wait_acked(&again, 10);
    std::thread::sleep(Duration::from_secs(3));
    let cards = fs.chat(DM);
    assert_eq!(cards.len(), 1, "doubled: {cards:#?}");
    assert_eq!(cards[0].0, card, "the answer went into a new card");
    assert_eq!(w.main_requests().len(), 2, "asked again for the same event");
    let list = sessions(&w);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["turns"], 1, "{list:#?}");
    let log = drain(&s);
    assert!(log.contains("came again; kept once"), "{log}");
}

#[test]
fn kill_9_after_the_turn_is_stored_delivers_the_stored_answer_without_asking_again() {
    let (w, fs) = setup("fs-kill-stored", true, "");
    let s = Server::start(&w, &[]);
    for _ in 0..50 {
        fs.fail_next("send", Fault::Status500);
    }
    w.fake.push(Reply::text("Stored, then delivered."));
    let mid = fs.say(GROUP, false, ANN, "brief me", true);
    let end = Instant::now() + Duration::from_secs(30);
    while fs
        .calls()
        .iter()
        .filter(|c| c.what == "send" && c.faulted)
        .count()
        < 3
    {
        assert!(Instant::now() < end, "no delivery attempts");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(s);
    fs.clear_faults();
    let _s = Server::start(&w, &[]);
    fs.wait_for(GROUP, 30, |m| m.1 == "Stored, then delivered.");
    fs.wait_acked(&mid, 10);
    let again = fs.redeliver(&mid);
    fs.wait_acked(&again, 10);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(fs.chat(GROUP).len(), 1, "{:#?}", fs.chat(GROUP));
    assert_eq!(w.main_requests().len(), 1, "asked the model again");
}

#[test]
fn a_button_press_pushed_twice_settles_the_question_once() {
    let (w, fs) = setup("fs-press-twice", true, "");
    let _s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"a.txt","content":"x"}"#));
    w.fake.push(Reply::text("Wrote a.txt."));
    fs.say(DM, true, ANN, "write a.txt", false);
    let (q, _, buttons) = fs.wait_for(DM, 20, |m| !m.2.is_empty());
    let press = fs.press(&q, ANN, &buttons[0]);
    let again = fs.redeliver(&press);
    fs.wait_acked(&again, 10);
    fs.wait_for(DM, 20, |m| m.1 == "Wrote a.txt.");
    std::thread::sleep(Duration::from_secs(2));
    let done = fs.chat(DM).iter().filter(|m| m.1 == "Wrote a.txt.").count();
    assert_eq!(done, 1, "{:#?}", fs.chat(DM));
    assert_eq!(w.main_requests().len(), 2);
}
