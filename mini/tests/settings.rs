//! Setting the model from the browser, through the real binary: `PUT /v1/settings/model`
//! writes `config.toml` (comments kept, 0600) and the next turn goes to the new server
//! without a restart; a refused body changes nothing; an environment variable that
//! still decides is named; `POST /v1/settings/model/test` runs doctor's checks.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};
use support::serve::{chat_body, Resp, Server};
use support::{FakeLlm, Reply, World};

const CONFIG: &str = "# my own notes\n[model]\n# where the model runs\nbase_url = \"{URL}\" # first\nmax_retries = 0\n\n[agent]\n# keep this\nmax_steps = 4\n";

fn put(s: &Server, body: &Value) -> Resp {
    s.request(
        "PUT",
        "/v1/settings/model",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    )
}

/// A world whose model server is set in the file, not in the environment.
fn world(name: &str) -> World {
    let mut w = World::new(name);
    w.env_remove("OPENAI_BASE_URL");
    w.config(&CONFIG.replace("{URL}", &w.fake.base_url()));
    w
}

#[test]
fn settings_put_moves_the_next_turn_to_another_server_without_a_restart() {
    let w = world("settings-put");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("from the first"));
    let c = s.post("/v1/chat/completions", &chat_body("hi", json!({})));
    assert_eq!(c.status, 200, "{}", c.body);
    assert!(c.body.contains("from the first"), "{}", c.body);

    let second = FakeLlm::start();
    second.quiet("[evolve:");
    let r = put(
        &s,
        &json!({"base_url": second.base_url(), "api_key": "sk-test-0123456789abcdef",
            "context_window": 16384}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["base_url"], second.base_url());
    assert_eq!(v["reachable"], true);
    assert_eq!(v["api_key_set"], true);
    assert_eq!(v["context_window"], 16384);
    // EVOLVE_MODEL and EVOLVE_CHEAP_MODEL are exported by the test world.
    assert_eq!(v["overridden_by_env"], json!(["model", "cheap_model"]));
    assert!(
        !r.body.contains("0123456789abcdef"),
        "the key is not returned"
    );

    second.push(Reply::text("from the second"));
    let c = s.post("/v1/chat/completions", &chat_body("again", json!({})));
    assert_eq!(c.status, 200, "{}", c.body);
    assert!(c.body.contains("from the second"), "{}", c.body);
    let sent = second.chat_requests();
    let main = sent
        .iter()
        .find(|r| !r.body.contains("[evolve:"))
        .expect("a turn");
    assert!(main.body.contains("again"));

    let text = std::fs::read_to_string(w.config_path()).expect("the file");
    let want = CONFIG.replace("{URL}", &second.base_url()).replace(
        "max_retries = 0\n",
        "max_retries = 0\napi_key = \"sk-test-0123456789abcdef\"\ncontext_window = 16384\n",
    );
    assert_eq!(text, want, "comments, order and other tables kept");
    let mode = std::fs::metadata(w.config_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let log: Vec<String> = s.stderr.try_iter().collect();
    assert!(
        !log.iter().any(|l| l.contains("0123456789abcdef")),
        "the key is not logged: {log:#?}"
    );
}

#[test]
fn settings_a_refused_body_is_a_400_on_its_field_and_the_file_is_unchanged() {
    let w = world("settings-bad");
    std::fs::set_permissions(w.config_path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::read(w.config_path()).unwrap();
    let s = Server::start(&w, &[]);
    for (body, field) in [
        (json!({"base_url": "localhost:11434/v1"}), "base_url"),
        (
            json!({"base_url": "http://h/v1/chat/completions"}),
            "base_url",
        ),
        (json!({"model": " "}), "model"),
        (json!({"context_window": 0}), "context_window"),
        // Positive, but too small for the reserved answer: the loader's own verdict.
        (json!({"context_window": 512}), "context_window"),
        (json!({"api_key": "two words"}), "api_key"),
    ] {
        let r = put(&s, &body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["param"], field, "{body}: {}", r.body);
        assert!(r.error_message().contains(field), "{}", r.body);
    }
    assert_eq!(put(&s, &json!({"nope": 1})).status, 400);
    assert_eq!(std::fs::read(w.config_path()).unwrap(), before);
    // The running settings are unchanged too.
    assert_eq!(
        s.get("/v1/settings/model").json()["base_url"],
        w.fake.base_url()
    );
}

#[test]
fn settings_an_environment_variable_still_wins_and_is_named() {
    let w = World::new("settings-env");
    w.config("[model]\nmax_retries = 0\n");
    let s = Server::start(&w, &[]);
    let r = put(&s, &json!({"base_url": "http://127.0.0.1:9/v1"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(
        v["overridden_by_env"],
        json!(["base_url", "model", "cheap_model"])
    );
    assert_eq!(
        v["base_url"],
        w.fake.base_url(),
        "OPENAI_BASE_URL still decides"
    );
    let text = std::fs::read_to_string(w.config_path()).unwrap();
    assert!(
        text.contains("base_url = \"http://127.0.0.1:9/v1\""),
        "{text}"
    );
}

#[test]
fn settings_test_runs_doctors_checks_on_the_current_or_an_unsaved_body() {
    let w = world("settings-test");
    let s = Server::start(&w, &[]);
    let before = std::fs::read(w.config_path()).unwrap();
    let names = |r: &Resp| -> Vec<(String, bool)> {
        r.json()["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .map(|c| (c["name"].as_str().unwrap().to_string(), c["ok"] == true))
            .collect()
    };
    let r = s.post("/v1/settings/model/test", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let checks = names(&r);
    assert_eq!(checks[0], ("server reachable".into(), true), "{}", r.body);
    assert!(
        checks.iter().any(|(n, ok)| n == "completion" && *ok),
        "{}",
        r.body
    );
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{dead}/v1");
    let r = s.post(
        "/v1/settings/model/test",
        &json!({ "base_url": url }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&r), [("server reachable".to_string(), false)]);
    assert_eq!(r.json()["ok"], false);
    assert!(r.body.contains(&url), "{}", r.body);
    assert_eq!(std::fs::read(w.config_path()).unwrap(), before, "not saved");
    let bad = s.post(
        "/v1/settings/model/test",
        &json!({"base_url": "nope"}).to_string(),
    );
    assert_eq!(bad.status, 400);
}

#[test]
fn settings_without_a_file_write_the_commented_template_privately() {
    let w = World::new("settings-new");
    assert!(!w.config_path().exists());
    let s = Server::start(&w, &[]);
    let r = put(&s, &json!({"context_window": 16384}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["context_window"], 16384);
    let text = std::fs::read_to_string(w.config_path()).expect("created");
    assert!(text.starts_with("# evolve configuration"), "{text}");
    assert!(
        text.contains("#context_window = 8192\ncontext_window = 16384\n"),
        "{text}"
    );
    let mode = std::fs::metadata(w.config_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(w.run(&["config", "check"]).code, 0, "the file checks");
}

#[test]
fn settings_of_a_profile_go_to_its_own_table() {
    let w = world("settings-profile");
    let mut text = std::fs::read_to_string(w.config_path()).unwrap();
    text.push_str("\n[profiles.work.agent]\nmax_steps = 2\n");
    w.config(&text);
    let s = Server::start(&w, &[]);
    let r = s.post(
        "/v1/config/profile",
        &json!({"profile": "work"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = put(&s, &json!({"context_window": 12000, "api_key": ""}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["profile"], "work");
    assert_eq!(r.json()["context_window"], 12000);
    let after = std::fs::read_to_string(w.config_path()).unwrap();
    assert_eq!(
        after,
        format!("{text}\n[profiles.work.model]\napi_key = \"\"\ncontext_window = 12000\n")
    );
    // The top level is untouched: back on default, its window is the default one.
    s.post(
        "/v1/config/profile",
        &json!({"profile": "default"}).to_string(),
    );
    assert_eq!(s.get("/v1/settings/model").json()["context_window"], 8192);
}

#[test]
fn settings_a_dropped_config_toml_shows_its_model_changes_then_saves_them() {
    let w = world("settings-import");
    let s = Server::start(&w, &[]);
    let second = FakeLlm::start();
    second.quiet("[evolve:");
    let dropped = format!(
        "# from my laptop\n[model]\nbase_url = \"{}\"\napi_key = \"sk-dropped-0123456789\"\ncontext_window = 24576\ntemperature = 0.2\n\n[agent]\nlearn = false\n",
        second.base_url()
    );
    let post = |query: &str, body: &str| {
        s.request(
            "POST",
            &format!("/v1/settings/model/import{query}"),
            &[("Content-Type", "application/toml")],
            body,
        )
    };
    let before = std::fs::read_to_string(w.config_path()).unwrap();
    let r = post("", &dropped);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let fields: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["base_url", "context_window", "api_key"], "{v}");
    assert_eq!(v["changes"][0]["to"], second.base_url());
    assert_eq!(
        v["changes"][2],
        json!({"field": "api_key", "from": "none", "to": "set"})
    );
    assert_eq!(v["left_out"], json!(["[agent]", "model.temperature"]));
    assert!(!r.body.contains("0123456789"), "the key is not returned");
    assert_eq!(
        std::fs::read_to_string(w.config_path()).unwrap(),
        before,
        "a preview writes nothing"
    );

    // Applied: saved as PUT saves (comments of the file kept), the next turn goes there.
    let r = post("?apply=true", &dropped);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["context_window"], 24576);
    let text = std::fs::read_to_string(w.config_path()).unwrap();
    assert!(text.starts_with("# my own notes\n"), "{text}");
    assert!(text.contains("context_window = 24576"), "{text}");
    assert!(
        !text.contains("temperature"),
        "what is left out is not written: {text}"
    );
    second.push(Reply::text("from the dropped server"));
    let c = s.post("/v1/chat/completions", &chat_body("hello", json!({})));
    assert!(c.body.contains("from the dropped server"), "{}", c.body);

    // What cannot be imported is a 400 that says why, and changes nothing.
    let now = std::fs::read_to_string(w.config_path()).unwrap();
    for (body, said) in [
        ("[model\nbase_url = 1", "not a TOML file"),
        ("[agent]\nlearn = true\n", "no [model] table"),
        ("[model]\nbase_url = \"ftp://x\"\n", "base_url"),
        ("[model]\ncontext_window = 0\n", "context_window"),
    ] {
        let r = post("?apply=true", body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.contains(said), "{body}: {}", r.body);
    }
    assert_eq!(std::fs::read_to_string(w.config_path()).unwrap(), now);
}
