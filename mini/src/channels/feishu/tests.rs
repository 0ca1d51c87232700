use evolve_core::text::FallbackTokenizer;

use std::collections::HashMap;

use serde_json::{json, Value};

use super::api::failure;
use super::pb;
use super::wire::{Wire, METHOD_CONTROL, METHOD_DATA, PING_EVERY};
use super::*;
use crate::channels::link::Protocol;
use crate::testing::TempDir;
use crate::ws;

fn client() -> (Feishu, TempDir) {
    let config = FeishuConfig {
        id: "cli_a".into(),
        secret: Some(Secret::new("SECRET")),
        problem: None,
        base_url: "http://127.0.0.1:9".into(),
        owner: None,
        enabled: true,
    };
    let dir = TempDir::new("feishu");
    let store = Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
    let mut f = Feishu::new(&config, Some(Arc::new(store))).expect("a client");
    f.bot = Some("ou_bot".into());
    (f, dir)
}

#[test]
fn frames_survive_encoding_and_garbage_is_no_frame() {
    let frame = pb::Frame {
        seq_id: 7,
        log_id: 300,
        service: 12,
        method: 1,
        headers: vec![
            ("type".into(), "event".into()),
            ("message_id".into(), "m1".into()),
        ],
        payload: br#"{"a":1}"#.to_vec(),
        log_id_new: "x".into(),
        ..pb::Frame::default()
    };
    let bytes = frame.encode();
    assert_eq!(pb::Frame::decode(&bytes), Some(frame.clone()));
    // A negative int32 is ten bytes and reads back.
    let negative = pb::Frame {
        service: -1,
        ..frame.clone()
    };
    assert_eq!(pb::Frame::decode(&negative.encode()), Some(negative));
    for garbage in [&b"\xff\xff\xff"[..], b"\x42\x05ab", b"\x08"] {
        assert_eq!(pb::Frame::decode(garbage), None, "{garbage:?}");
    }
    // Unknown fields are skipped.
    let mut extra = bytes.clone();
    extra.extend_from_slice(&[0x58, 0x01]); // field 11, varint 1
    assert_eq!(pb::Frame::decode(&extra).map(|f| f.seq_id), Some(7));
}

fn message(chat_type: &str, text: &str, mentions: Value, thread: Option<&str>) -> Value {
    let mut m = json!({
        "message_id": "om_1", "chat_id": "oc_1", "chat_type": chat_type,
        "message_type": "text", "content": json!({"text": text}).to_string(),
        "mentions": mentions,
    });
    if let Some(t) = thread {
        m["thread_id"] = json!(t);
        m["root_id"] = json!("om_root");
    }
    json!({
        "schema": "2.0",
        "header": {"event_id": "e1", "event_type": "im.message.receive_v1"},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_ann"}, "sender_type": "user"},
            "message": m,
        }
    })
}

#[test]
fn messages_become_events_and_groups_need_a_mention_of_the_bot() {
    let (f, _dir) = client();
    let Some(Event::Message(m)) = f.event(&message("p2p", "hi", json!([]), None)) else {
        panic!("a message")
    };
    assert!(m.direct && m.mentioned);
    assert_eq!((m.chat.as_str(), m.sender.id.as_str()), ("oc_1", "ou_ann"));
    assert_eq!(m.place(), "oc_1");
    let bot = json!([{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "Evolve"}]);
    let other = json!([{"key": "@_user_1", "id": {"open_id": "ou_bo"}, "name": "Bo"}]);
    let group = |text: &str, mentions: Value| match f.event(&message("group", text, mentions, None))
    {
        Some(Event::Message(m)) => (m.mentioned, m.text),
        _ => panic!("a message"),
    };
    assert_eq!(group("@_user_1 what time", bot), (true, "what time".into()));
    assert_eq!(group("@_user_1 hi", other), (false, "@Bo hi".into()));
    assert_eq!(group("hello all", json!([])), (false, "hello all".into()));
    let Some(Event::Message(t)) = f.event(&message("group", "x", json!([]), Some("omt_1"))) else {
        panic!("a message")
    };
    assert_eq!(t.place(), "oc_1/om_root");
    // The bot's own messages and unknown kinds are not answered.
    let mut own = message("p2p", "hi", json!([]), None);
    own["event"]["sender"]["sender_type"] = json!("app");
    assert!(f.event(&own).is_none());
    assert!(f
        .event(&json!({"header": {"event_type": "im.chat.updated_v1"}, "event": {}}))
        .is_none());
}

#[test]
fn a_card_button_press_finds_its_chat_and_thread() {
    let (f, _dir) = client();
    let press = json!({
        "schema": "2.0",
        "header": {"event_id": "e9", "event_type": "card.action.trigger"},
        "event": {
            "operator": {"open_id": "ou_ann"},
            "action": {"tag": "button", "value": {"evolve": "a:c1:yes", "place": "oc_1/om_root"}},
            "context": {"open_message_id": "om_q", "open_chat_id": "oc_1"},
        }
    });
    let Some(Event::Press(p)) = f.event(&press) else {
        panic!("a press")
    };
    assert_eq!(
        (p.chat.as_str(), p.data.as_str(), p.message.as_deref()),
        ("oc_1/om_root", "a:c1:yes", Some("om_q"))
    );
    // A place naming another chat than the press's is not believed.
    let mut forged = press.clone();
    forged["event"]["action"]["value"]["place"] = json!("oc_2");
    let Some(Event::Press(p)) = f.event(&forged) else {
        panic!("a press")
    };
    assert_eq!(p.chat, "oc_1");
}

#[test]
fn each_refusal_of_the_api_means_one_kind_of_failure() {
    let cases = [
        (
            429,
            json!({"code": 99991400, "msg": "limit"}),
            "RateLimited",
        ),
        (
            200,
            json!({"code": 99991400, "msg": "limit"}),
            "RateLimited",
        ),
        (502, json!({"code": 0}), "Unavailable"),
        (
            400,
            json!({"code": 10014, "msg": "app secret invalid"}),
            "Unauthorized",
        ),
        (
            400,
            json!({"code": 99991663, "msg": "token invalid"}),
            "Unauthorized",
        ),
        (
            400,
            json!({"code": 230002, "msg": "bot not in chat"}),
            "Refused",
        ),
    ];
    for (status, body, kind) in cases {
        let e = failure(status, &body, None, "im/v1/messages");
        assert!(format!("{e:?}").starts_with(kind), "{status} {body}: {e:?}");
    }
}

#[test]
fn an_event_cut_in_parts_is_stored_whole_and_every_frame_is_acknowledged() {
    let mut wire = Wire {
        api: client().0.api,
        service: 3,
        ping_every: PING_EVERY,
        last_ping: None,
        parts: HashMap::new(),
    };
    let event = message("p2p", "a long one", json!([]), None).to_string();
    let (a, b) = event.as_bytes().split_at(20);
    let part = |seq: usize, bytes: &[u8]| pb::Frame {
        method: METHOD_DATA,
        headers: vec![
            ("type".into(), "event".into()),
            ("message_id".into(), "m7".into()),
            ("sum".into(), "2".into()),
            ("seq".into(), seq.to_string()),
        ],
        payload: bytes.to_vec(),
        ..pb::Frame::default()
    };
    let first = wire.frame(ws::Message::Binary(part(1, b).encode()));
    assert!(first.events.is_empty() && first.reply.is_none());
    let second = wire.frame(ws::Message::Binary(part(0, a).encode()));
    assert_eq!(second.events.len(), 1);
    assert_eq!(second.events[0].0, "e1");
    let Some(ws::Message::Binary(reply)) = second.reply else {
        panic!("an acknowledgement")
    };
    let reply = pb::Frame::decode(&reply).expect("a frame");
    assert_eq!(reply.header("message_id"), Some("m7"));
    let said: Value = serde_json::from_slice(&reply.payload).expect("JSON");
    assert_eq!(said["code"], 200);
    // A ping is due at once, then not before the interval.
    let now = Instant::now();
    let Some(ws::Message::Binary(ping)) = wire.keepalive(now) else {
        panic!("a ping")
    };
    let ping = pb::Frame::decode(&ping).expect("a frame");
    assert_eq!(
        (ping.method, ping.service, ping.header("type")),
        (METHOD_CONTROL, 3, Some("ping"))
    );
    assert!(wire.keepalive(now + Duration::from_secs(1)).is_none());
}
