//! Channel settings changed on a running `evolve serve` through `/v1/channels` (what the
//! UI's Channels page sends) take effect without a restart: a channel added starts
//! answering, one changed starts again with the new settings — a turn it was running
//! finishes and is delivered once — and one removed stops polling; a message that
//! arrives while it is removed waits on the platform and is answered when it comes back.
//! Driven against the loopback fake of the Bot API (`support::telegram`).

mod support;
use std::time::{Duration, Instant};

use serde_json::json;
use support::serve::Server;
use support::telegram::{FakeTelegram, TOKEN};
use support::{Reply, World};

const ANN: i64 = 7;

fn put(s: &Server, body: serde_json::Value) -> serde_json::Value {
    let r = s.request(
        "PUT",
        "/v1/channels/telegram",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

fn polls(tg: &FakeTelegram) -> usize {
    tg.calls_of("getUpdates").len()
}

/// Waits until the channel's status on the API is `want`.
fn wait_status(s: &Server, want: &str) -> serde_json::Value {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let v = s.get("/v1/channels").json();
        let c = v["channels"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == "telegram").cloned())
            .unwrap_or_default();
        if c["status"] == want {
            return c;
        }
        assert!(Instant::now() < end, "the channel is not {want}: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_channel_added_on_a_running_server_answers_and_one_removed_stops_polling_and_loses_nothing() {
    let w = World::new("live-add");
    w.config("[agent]\nlearn = false\n");
    let tg = FakeTelegram::start();
    let s = Server::start(&w, &[]);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(polls(&tg), 0, "polled before it was configured");

    let added = put(
        &s,
        json!({"kind": "telegram", "token": TOKEN,
               "base_url": format!("http://127.0.0.1:{}", tg.port)}),
    );
    assert_ne!(
        added["detail"],
        "not started: restart `evolve serve` to start it"
    );
    // A stranger gets a code: the channel runs without a restart.
    tg.say(ANN, ANN, "Ann", "hello?");
    tg.wait_for(ANN, 20, |m| m.1.contains("evolve channels pair"));
    let c = wait_status(&s, "running");
    let code = c["pending"][0]["code"]
        .as_str()
        .expect("a code")
        .to_string();
    let paired = s.post("/v1/channels/pair", &format!(r#"{{"code":"{code}"}}"#));
    assert_eq!(paired.status, 200, "{}", paired.body);
    w.fake.push(Reply::text("Hello Ann."));
    tg.say(ANN, ANN, "Ann", "hi");
    tg.wait_for(ANN, 20, |m| m.1 == "Hello Ann.");

    let gone = s.request("DELETE", "/v1/channels/telegram", &[], "");
    assert_eq!(gone.status, 200, "{}", gone.body);
    // The poll under way ends (the fake holds one for at most 2 s); no other follows.
    std::thread::sleep(Duration::from_secs(4));
    let after = polls(&tg);
    let waiting = tg.say(ANN, ANN, "Ann", "are you there?");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(polls(&tg), after, "still polling after DELETE");
    assert!(tg.pending(waiting));

    // Back again: the message that waited is answered, once.
    w.fake.push(Reply::text("Here again."));
    put(
        &s,
        json!({"kind": "telegram", "token": TOKEN,
               "base_url": format!("http://127.0.0.1:{}", tg.port)}),
    );
    tg.wait_for(ANN, 20, |m| m.1 == "Here again.");
    tg.wait_acked(waiting, 10);
    std::thread::sleep(Duration::from_secs(2));
    let answers = tg.chat(ANN).iter().filter(|m| m.1 == "Here again.").count();
    assert_eq!(answers, 1);
}

#[test]
fn a_changed_address_starts_the_channel_again_after_the_running_turn_is_delivered() {
    let w = World::new("live-change");
    let old = FakeTelegram::start();
    w.config(&format!(
        "[agent]\nlearn = false\n{}owner = {ANN}\n",
        old.config()
    ));
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::Delay(
        Duration::from_secs(3),
        Box::new(Reply::text("A slow answer.")),
    ));
    old.say(ANN, ANN, "Ann", "take your time");
    let end = Instant::now() + Duration::from_secs(20);
    while w.main_requests().is_empty() {
        assert!(Instant::now() < end, "the model was not asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Moved to another Bot API server (a self-hosted one) while the turn runs.
    let new = FakeTelegram::start();
    put(
        &s,
        json!({"kind": "telegram", "base_url": format!("http://127.0.0.1:{}", new.port)}),
    );
    old.wait_for(ANN, 20, |m| m.1 == "A slow answer.");
    w.fake.push(Reply::text("From the new server."));
    // Its update ids are its own (the same numbers the old one used): none is skipped.
    new.say(ANN, ANN, "Ann", "and now?");
    new.wait_for(ANN, 20, |m| m.1 == "From the new server.");
    std::thread::sleep(Duration::from_secs(3));
    let late = polls(&old);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(polls(&old), late, "the old server is still polled");
    assert_eq!(old.chat(ANN).len(), 1, "{:#?}", old.chat(ANN));
    assert_eq!(w.main_requests().len(), 2);
}

#[test]
fn a_wrong_token_fixed_through_the_api_takes_effect_at_once() {
    let w = World::new("live-token");
    let tg = FakeTelegram::start();
    w.config(&format!(
        "[agent]\nlearn = false\n[channels.telegram]\ntoken = \"123456:WRONG\"\nbase_url = \"http://127.0.0.1:{}\"\npoll_secs = 1\nowner = {ANN}\n",
        tg.port
    ));
    let s = Server::start(&w, &[]);
    let c = wait_status(&s, "error");
    assert!(c["detail"].as_str().unwrap_or("").contains("token"), "{c}");
    put(&s, json!({"kind": "telegram", "token": TOKEN}));
    // Not after the minute an unauthorised channel waits: the new token is used now.
    w.fake.push(Reply::text("Now I hear you."));
    tg.say(ANN, ANN, "Ann", "hello");
    tg.wait_for(ANN, 15, |m| m.1 == "Now I hear you.");
    wait_status(&s, "running");
    assert!(!s.get("/v1/channels").body.contains(TOKEN));
}
