//! The DingTalk channel through the binary: `evolve serve` with `[channels.dingtalk]`
//! pointed at a loopback fake of Stream mode and the robot API (`support::dingtalk`),
//! answers scripted by the fake model. DingTalk cannot edit a robot's message, so an
//! answer comes once, whole, and a question is answered with a word.

mod support;
use std::time::{Duration, Instant};

use support::dingtalk::{FakeDingtalk, Fault, CLIENT_SECRET};
use support::serve::Server;
use support::{tool_call, Reply, World};

const ANN: &str = "staff_ann";
const GROUP: &str = "cidTeam==";

fn setup(name: &str, owner: bool, extra: &str) -> (World, FakeDingtalk) {
    let w = World::new(name);
    let dt = FakeDingtalk::start();
    let owner = if owner {
        format!("owner = \"{ANN}\"\n")
    } else {
        String::new()
    };
    w.config(&format!(
        "{extra}[agent]\nlearn = false\n{}{owner}",
        dt.config()
    ));
    (w, dt)
}

fn drain(s: &Server) -> String {
    let mut log = Vec::new();
    while let Ok(line) = s.stderr.recv_timeout(Duration::from_millis(300)) {
        log.push(line);
    }
    log.join("\n")
}

#[test]
fn a_stranger_gets_a_pairing_code_then_talks_and_pings_are_answered() {
    let (w, dt) = setup("dt-pair", false, "");
    let _s = Server::start(&w, &[]);
    let ping = dt.ping();
    dt.wait_acked(&ping, 10);
    let first = dt.say(ANN, None, "hello?");
    let text = dt.wait_for(ANN, 20, |t| t.contains("evolve channels pair"));
    dt.wait_acked(&first, 10);
    let at = text.find("evolve channels pair ").expect("a code") + 21;
    let code: String = text[at..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    assert!(w.main_requests().is_empty(), "a stranger reached the model");
    let paired = w.run(&["channels", "pair", &code]).expect(0);
    assert!(paired.stdout.contains("on dingtalk"), "{}", paired.stdout);
    // Told through the robot API (no webhook is known to the CLI).
    dt.wait_for(ANN, 10, |t| t.contains("You are paired"));
    assert_eq!(dt.calls("oto"), 1);
    w.fake.push(Reply::text("Hello **Ann**!"));
    dt.say(ANN, None, "hi again");
    dt.wait_for(ANN, 20, |t| t == "Hello **Ann**!");
    let list = w.run(&["sessions", "list", "--json"]).expect(0).json();
    assert_eq!(list[0]["channel"], format!("dingtalk:{ANN}"), "{list}");
}

#[test]
fn a_call_is_approved_with_a_word_and_an_l4_call_asks_twice() {
    let (w, dt) = setup("dt-words", true, "[permission]\nshell_level = \"L4\"\n");
    let _s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"a.txt","content":"x"}"#));
    w.fake.push(Reply::text("Wrote a.txt."));
    dt.say(ANN, None, "write a.txt");
    let q = dt.wait_for(ANN, 20, |t| t.contains("write_file"));
    assert!(q.contains("Reply **yes** / **no** / **always**"), "{q}");
    assert!(!w.workspace().join("a.txt").exists());
    dt.say(ANN, None, "yes");
    dt.wait_for(ANN, 20, |t| t == "Wrote a.txt.");
    assert!(w.workspace().join("a.txt").exists());

    let marker = w.workspace().join("marker");
    w.fake.push(tool_call(
        "shell",
        &format!(r#"{{"command":"touch {}"}}"#, marker.display()),
    ));
    w.fake.push(Reply::text("Touched."));
    dt.say(ANN, None, "touch the marker");
    let q1 = dt.wait_for(ANN, 20, |t| t.contains("touch") && t.contains("Reply"));
    assert!(!q1.contains("always"), "L4 offers no always: {q1}");
    dt.say(ANN, None, "yes");
    dt.wait_for(ANN, 20, |t| t.contains("Second confirmation"));
    assert!(!marker.exists(), "ran after one yes");
    dt.say(ANN, None, "yes");
    dt.wait_for(ANN, 20, |t| t == "Touched.");
    assert!(marker.exists());
    // One message per answer: nothing was streamed.
    assert_eq!(dt.chat(ANN).iter().filter(|t| *t == "Touched.").count(), 1);
}

#[test]
fn a_tasks_answer_is_delivered_to_a_group_through_the_robot_api() {
    let (w, dt) = setup("dt-deliver", true, "");
    let _s = Server::start(&w, &[]);
    w.run(&[
        "tasks",
        "add",
        "--every",
        "1h",
        "--deliver",
        &format!("dingtalk:{GROUP}"),
        "brief me",
    ])
    .expect(0);
    w.fake.push(Reply::text("Sunny, 21°C."));
    w.run(&["tasks", "run", "1"]).expect(0);
    let text = dt.wait_for(GROUP, 20, |t| t.contains("Sunny"));
    assert!(text.contains("Task 1"), "{text}");
    assert_eq!(dt.calls("group"), 1);
}

#[test]
fn a_failing_platform_is_logged_plainly_and_a_disconnect_is_followed_by_a_new_connection() {
    let (w, dt) = setup("dt-faults", true, "");
    let s = Server::start(&w, &[]);
    dt.fail_next("hook", Fault::Status500);
    dt.fail_next("hook", Fault::Garbage);
    w.fake.push(Reply::text("Through at last."));
    dt.say(ANN, None, "hello");
    dt.wait_for(ANN, 40, |t| t == "Through at last.");
    assert_eq!(dt.chat(ANN).len(), 1, "{:#?}", dt.chat(ANN));
    let log = drain(&s);
    assert!(log.contains("HTTP 500"), "{log}");
    assert!(log.contains("not its JSON"), "{log}");
    assert!(
        !log.contains(CLIENT_SECRET),
        "the secret is in the log: {log}"
    );

    let before = dt.sockets_opened();
    dt.disconnect();
    let end = Instant::now() + Duration::from_secs(30);
    while dt.sockets_opened() == before {
        assert!(Instant::now() < end, "no new connection");
        std::thread::sleep(Duration::from_millis(100));
    }
    w.fake.push(Reply::text("Still here."));
    dt.say(ANN, Some(GROUP), "still there?");
    dt.wait_for(GROUP, 20, |t| t == "Still here.");
    assert_eq!(s.get("/health").status, 200);
}

/// The text of the last user message of a model request.
fn last_user(req: &serde_json::Value) -> String {
    let m = req["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or_default();
    m["content"].as_str().unwrap_or_default().to_string()
}

const OGG: &[u8] = b"OggS\x00turn on the lights";

#[test]
fn a_voice_message_dingtalk_recognised_is_the_persons_words_without_a_transcription_model() {
    let (w, dt) = setup("dt-voice", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("It is sunny."));
    let mid = dt.voice(ANN, None, Some(" 今天天气怎么样 "), Some(OGG));
    dt.wait_for(ANN, 20, |t| t == "It is sunny.");
    dt.wait_acked(&mid, 10);
    let said = dt.chat(ANN);
    let heard = said.iter().position(|t| t == "🎤 今天天气怎么样");
    let answer = said.iter().position(|t| t == "It is sunny.");
    assert!(heard.is_some() && heard < answer, "{said:#?}");
    let req = w.main_requests().last().cloned().expect("a request");
    assert_eq!(last_user(&req), "今天天气怎么样");
    assert!(
        w.fake.transcription_requests().is_empty(),
        "recognised already"
    );
    assert_eq!(dt.calls("download"), 0, "nothing to fetch");
}

#[test]
fn a_voice_message_dingtalk_did_not_recognise_is_fetched_and_transcribed() {
    let (w, dt) = setup(
        "dt-voice-heard",
        true,
        "[model]\ntranscription_model = \"whisper-1\"\nmax_retries = 0\n",
    );
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("Lights on."));
    let mid = dt.voice(ANN, None, None, Some(OGG));
    dt.wait_for(ANN, 20, |t| t == "Lights on.");
    dt.wait_acked(&mid, 10);
    let said = dt.chat(ANN);
    let heard = said.iter().position(|t| t == "🎤 turn on the lights");
    let answer = said.iter().position(|t| t == "Lights on.");
    assert!(heard.is_some() && heard < answer, "{said:#?}");
    let req = w.main_requests().last().cloned().expect("a request");
    assert_eq!(last_user(&req), "turn on the lights");
    let sent = w.fake.transcription_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].form_part("file").expect("the audio").data, OGG);
    assert_eq!(dt.calls("download"), 1);

    // An empty recognition is none: the audio is heard instead. In a group, a member
    // who is not the owner speaks world text.
    dt.say("mallory", Some(GROUP), "hi");
    let text = dt.wait_for(GROUP, 20, |t| t.contains("evolve channels pair"));
    let at = text.find("evolve channels pair ").expect("a code") + 21;
    let code: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    w.run(&["channels", "pair", &code]).expect(0);
    w.fake.push(Reply::text("Noted, from the group."));
    let mid = dt.voice(
        "mallory",
        Some(GROUP),
        Some("  "),
        Some(b"OggS\x00open the door"),
    );
    dt.wait_for(GROUP, 20, |t| t == "Noted, from the group.");
    dt.wait_acked(&mid, 10);
    let req = w.main_requests().last().cloned().expect("a request");
    let user = last_user(&req);
    assert!(
        user.starts_with("[not the owner] mallory") && user.ends_with("open the door"),
        "{user}"
    );
}

#[test]
fn a_dingtalk_voice_message_that_cannot_be_heard_is_declined_plainly_and_acknowledged() {
    // Neither audio nor recognition.
    let (w, dt) = setup(
        "dt-voice-none",
        true,
        "[model]\ntranscription_model = \"whisper-1\"\nmax_retries = 0\n",
    );
    let s = Server::start(&w, &[]);
    let mid = dt.voice(ANN, None, None, None);
    dt.wait_for(ANN, 20, |t| {
        t.contains("without its audio or recognised words")
    });
    dt.wait_acked(&mid, 10);
    // Audio behind a code the platform no longer knows: said, acknowledged, nothing
    // sent to a model.
    let mid = dt.expired_voice(ANN);
    dt.wait_for(ANN, 20, |t| t.contains("could not download the voice note"));
    dt.wait_acked(&mid, 10);
    assert!(w.main_requests().is_empty());
    assert!(w.fake.transcription_requests().is_empty());
    w.fake.push(Reply::text("Typed is fine."));
    dt.say(ANN, None, "ok, typing");
    dt.wait_for(ANN, 20, |t| t == "Typed is fine.");
    drop(s);

    // Audio, but no transcription model: what to set, and no model call.
    let (w, dt) = setup("dt-voice-off", true, "");
    let _s = Server::start(&w, &[]);
    let mid = dt.voice(ANN, None, None, Some(OGG));
    dt.wait_for(ANN, 20, |t| t.contains("[model] transcription_model"));
    dt.wait_acked(&mid, 10);
    assert!(w.main_requests().is_empty());
    assert!(w.fake.transcription_requests().is_empty());
    assert_eq!(dt.calls("download"), 0, "not fetched for nothing");
}

fn turns(w: &World) -> Vec<serde_json::Value> {
    let v = w.run(&["sessions", "list", "--json"]).expect(0).json();
    v.as_array().cloned().unwrap_or_default()
}

/// Waits until the model has been asked `n` times.
fn wait_asked(w: &World, n: usize) {
    let end = Instant::now() + Duration::from_secs(20);
    while w.main_requests().len() < n {
        assert!(Instant::now() < end, "the model was not asked");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn kill_9_mid_turn_answers_once_and_a_message_pushed_again_is_not_answered_twice() {
    let (w, dt) = setup("dt-kill", true, "");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::TextThenHang(
        "Partial".into(),
        Duration::from_secs(60),
    ));
    // The acknowledgement is lost on the way: the platform pushes the message again on
    // the next connection, beside the copy evolve stored.
    dt.lose_acks(true);
    let mid = dt.say(ANN, None, "tell me a story");
    wait_asked(&w, 1);
    drop(s); // SIGKILL mid-turn
    assert!(dt.chat(ANN).is_empty(), "{:#?}", dt.chat(ANN));
    dt.lose_acks(false);
    w.fake.push(Reply::text("The whole story."));
    let s = Server::start(&w, &[]);
    dt.wait_for(ANN, 30, |t| t == "The whole story.");
    dt.wait_acked(&mid, 10);
    // Pushed once more after the answer (an acknowledgement lost again): kept once.
    let again = dt.redeliver(&mid);
    dt.wait_acked(&again, 10);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(dt.chat(ANN), vec!["The whole story.".to_string()]);
    assert_eq!(
        w.main_requests().len(),
        2,
        "asked again for the same message"
    );
    let list = turns(&w);
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["turns"], 1, "{list:#?}");
    let log = drain(&s);
    assert!(log.contains("came again; kept once"), "{log}");
}

#[test]
fn kill_9_after_the_turn_is_stored_delivers_the_stored_answer_without_asking_again() {
    let (w, dt) = setup("dt-kill-stored", true, "");
    let s = Server::start(&w, &[]);
    for _ in 0..50 {
        dt.fail_next("hook", Fault::Status500);
    }
    w.fake.push(Reply::text("Stored, then delivered."));
    let mid = dt.say(ANN, Some(GROUP), "brief me");
    // The delivery is being retried: the turn is stored.
    let end = Instant::now() + Duration::from_secs(30);
    while dt.faulted("hook") < 3 {
        assert!(Instant::now() < end, "no delivery attempts");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(s);
    dt.clear_faults();
    let _s = Server::start(&w, &[]);
    dt.wait_for(GROUP, 30, |t| t == "Stored, then delivered.");
    dt.wait_acked(&mid, 10);
    let again = dt.redeliver(&mid);
    dt.wait_acked(&again, 10);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(dt.chat(GROUP).len(), 1, "{:#?}", dt.chat(GROUP));
    assert_eq!(w.main_requests().len(), 1, "asked the model again");
}

#[test]
fn a_message_pushed_twice_while_its_turn_runs_is_answered_once() {
    let (w, dt) = setup("dt-twice", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::Delay(
        Duration::from_secs(3),
        Box::new(Reply::text("Slow answer.")),
    ));
    let mid = dt.say(ANN, None, "take your time");
    wait_asked(&w, 1);
    let again = dt.redeliver(&mid);
    dt.wait_acked(&again, 10);
    dt.wait_for(ANN, 30, |t| t == "Slow answer.");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(dt.chat(ANN).len(), 1, "{:#?}", dt.chat(ANN));
    assert_eq!(w.main_requests().len(), 1);
}

/// A PNG of one pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

fn last_request(w: &World) -> String {
    w.main_requests()
        .last()
        .cloned()
        .expect("a request")
        .to_string()
}

#[test]
fn a_picture_goes_to_the_model_and_a_file_to_the_workspace() {
    let (w, dt) = setup("dt-files", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("A single pixel."));
    dt.picture(ANN, PNG);
    dt.wait_for(ANN, 20, |t| t == "A single pixel.");
    let req = last_request(&w);
    assert!(req.contains("data:image/png;base64,iVBORw0KGgo"), "{req}");
    assert_eq!(dt.calls("download"), 1);

    w.fake.push(Reply::text("Noted."));
    dt.file(ANN, "my notes.txt", b"remember the milk");
    dt.wait_for(ANN, 20, |t| t == "Noted.");
    let saved = w.workspace().join("dingtalk").join("my_notes.txt");
    assert_eq!(std::fs::read(&saved).expect("saved"), b"remember the milk");
    assert!(last_request(&w).contains("dingtalk/my_notes.txt"));
    // The same name again is kept beside it.
    w.fake.push(Reply::text("Noted again."));
    dt.file(ANN, "my notes.txt", b"second");
    dt.wait_for(ANN, 20, |t| t == "Noted again.");
    let second = w.workspace().join("dingtalk").join("2-my_notes.txt");
    assert_eq!(std::fs::read(second).expect("saved"), b"second");
}

#[test]
fn rich_text_brings_its_words_and_its_pictures_together() {
    let (w, dt) = setup("dt-rich", true, "");
    let _s = Server::start(&w, &[]);
    w.fake.push(Reply::text("A pixel, as you said."));
    dt.rich_text(ANN, "what is this?", PNG);
    dt.wait_for(ANN, 20, |t| t == "A pixel, as you said.");
    let req = last_request(&w);
    assert!(req.contains("what is this?"), "{req}");
    assert!(req.contains("data:image/png;base64,iVBORw0KGgo"), "{req}");
}

#[test]
fn a_file_that_cannot_be_taken_is_said_plainly_and_reaches_no_model() {
    let (w, dt) = setup("dt-file-fail", true, "");
    let _s = Server::start(&w, &[]);
    let mid = dt.expired_file(ANN, "report.pdf");
    let said = dt.wait_for(ANN, 20, |t| {
        t.contains("could not take the file report.pdf")
    });
    assert!(said.contains("expired"), "{said}");
    dt.wait_acked(&mid, 10);
    // Larger than a chat file may be: refused before it is read.
    let big = vec![0u8; 21 * 1024 * 1024];
    dt.file(ANN, "big.bin", &big);
    let said = dt.wait_for(ANN, 30, |t| t.contains("could not take the file big.bin"));
    assert!(said.contains("larger than the 20 MB"), "{said}");
    assert!(!w.workspace().join("dingtalk").join("big.bin").exists());
    assert!(
        w.main_requests().is_empty(),
        "a message with nothing usable reached the model"
    );
}
