//! `evolve serve` through HTTP, as a client would use it: the OpenAI-compatible chat
//! endpoint (streamed and not), the JSON API, the permission flow of the UI, and what
//! the server refuses (bad input, other sites, missing tokens, oversized bodies).

mod support;

use serde_json::{json, Value};
use support::serve::{asking, chat_body, next_event, Server};
use support::{tool_call, Reply, World};

#[test]
fn health_models_and_errors_in_openai_shape() {
    let w = World::new("serve-basics");
    let s = Server::start(&w, &[]);
    let h = s.get("/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.json()["status"], "ok");
    assert_eq!(h.json()["version"], env!("CARGO_PKG_VERSION"));
    let m = s.get("/v1/models").json();
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "evolve");
    let nf = s.get("/v1/nothing");
    assert_eq!(nf.status, 404);
    assert_eq!(nf.json()["error"]["type"], "not_found_error");
    let wrong = s.request("DELETE", "/v1/models", &[], "");
    assert_eq!(wrong.status, 405, "{}", wrong.body);
    assert!(s.stop().is_some_and(|c| c == 0), "serve exits 0 on SIGTERM");
}

#[test]
fn chat_completions_run_the_agent_in_a_session() {
    let w = World::new("serve-chat");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("Hello from the model."));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("hi, I am Ada", json!({})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "Hello from the model."
    );
    let sid = r
        .header("x-evolve-session")
        .expect("session header")
        .to_string();
    assert_eq!(v["evolve"]["session"], sid.as_str());
    assert_eq!(v["evolve"]["turn"], 1);
    // The next request names the session: the model sees the earlier turn, not the
    // client's own copy of the history.
    w.fake.push(Reply::text("You are Ada."));
    let r2 = s.request(
        "POST",
        "/v1/chat/completions",
        &[("X-Evolve-Session", &sid)],
        &chat_body("who am I?", json!({})),
    );
    assert_eq!(r2.status, 200, "{}", r2.body);
    assert_eq!(r2.json()["evolve"]["turn"], 2);
    let last = w.main_requests().pop().expect("a model request");
    let text = support::all_text(&last);
    assert!(
        text.contains("hi, I am Ada") && text.contains("Hello from the model."),
        "{text}"
    );
    assert!(!text.contains("ignored: the session has its own"), "{text}");
    // Both turns are in the session's messages.
    let msgs = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    let contents: Vec<&str> = msgs["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents,
        [
            "hi, I am Ada",
            "Hello from the model.",
            "who am I?",
            "You are Ada."
        ]
    );
    let turn = s.get(&format!("/v1/sessions/{sid}/turns/2")).json();
    assert_eq!(turn["reply"], "You are Ada.");
}

#[test]
fn a_plain_stream_is_openai_chunks_then_done() {
    let w = World::new("serve-stream");
    w.fake.set_chunk_chars(3);
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("streamed answer here"));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("stream please", json!({"stream": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/event-stream"));
    let events = r.events();
    assert!(
        events.iter().all(|(name, _)| name.is_empty()),
        "no Evolve events without asking: {events:?}"
    );
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let mut text = String::new();
    let mut chunks = 0;
    for (_, data) in &events[..events.len() - 1] {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["object"], "chat.completion.chunk");
        if let Some(c) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(c);
            chunks += 1;
        }
    }
    assert_eq!(text, "streamed answer here");
    assert!(chunks > 1, "the answer arrives in pieces");
}

#[test]
fn bad_requests_get_clear_4xx_errors_never_5xx() {
    let w = World::new("serve-bad");
    let s = Server::start(&w, &[]);
    let cases: Vec<(&str, &str, String, u16)> = vec![
        ("POST", "/v1/chat/completions", "{not json".into(), 400),
        ("POST", "/v1/chat/completions", "[]".into(), 400),
        (
            "POST",
            "/v1/chat/completions",
            json!({"messages": []}).to_string(),
            400,
        ),
        (
            "POST",
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "  "}]}).to_string(),
            400,
        ),
        (
            "POST",
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}).to_string(),
            400,
        ),
        (
            "POST",
            "/v1/chat/completions",
            json!({"session": "snope", "messages": [{"role": "user", "content": "x"}]}).to_string(),
            404,
        ),
        (
            "POST",
            "/v1/memory",
            json!({"content": ""}).to_string(),
            400,
        ),
        (
            "POST",
            "/v1/memory",
            json!({"content": "x", "priority": 9}).to_string(),
            400,
        ),
        (
            "POST",
            "/v1/memory",
            json!({"content": "x", "category": "nonsense"}).to_string(),
            400,
        ),
        ("PATCH", "/v1/memory/abc", "{}".into(), 400),
        ("DELETE", "/v1/memory/999", "".into(), 404),
        ("GET", "/v1/sessions/snope", "".into(), 404),
        (
            "GET",
            "/v1/sessions/snope/export?format=pdf",
            "".into(),
            404,
        ),
        (
            "POST",
            "/v1/sessions/snope/pending/c1",
            json!({"answer": "maybe"}).to_string(),
            400,
        ),
        ("GET", "/v1/search", "".into(), 400),
        ("GET", "/static/../Cargo.toml", "".into(), 404),
        ("GET", "/static/..%2f..%2fCargo.toml", "".into(), 404),
        ("GET", "/static/%zz", "".into(), 400),
    ];
    for (method, path, body, want) in cases {
        let r = s.request(method, path, &[("Content-Type", "application/json")], &body);
        assert_eq!(r.status, want, "{method} {path} {body}: {}", r.body);
        assert!(!r.error_message().is_empty());
    }
    // Broken HTTP itself.
    assert_eq!(s.raw(b"NONSENSE\r\n\r\n").status, 400);
    assert_eq!(
        s.raw(b"GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n").status,
        505
    );
    let big = s.raw(
        format!(
            "POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
            5 << 20
        )
        .as_bytes(),
    );
    assert_eq!(big.status, 413, "{}", big.body);
    let chunked = s.raw(
        b"POST /v1/memory HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assert_eq!(chunked.status, 411);
    let huge_head = format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    assert_eq!(s.raw(huge_head.as_bytes()).status, 431);
    // Still serving.
    assert_eq!(s.get("/health").status, 200);
}

#[test]
fn other_sites_and_rebound_names_are_refused() {
    let w = World::new("serve-origin");
    let s = Server::start(&w, &[]);
    let body = json!({"content": "should not be stored"}).to_string();
    let r = s.request(
        "POST",
        "/v1/memory",
        &[("Origin", "http://evil.example")],
        &body,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = s.request(
        "POST",
        "/v1/memory",
        &[("Sec-Fetch-Site", "cross-site")],
        &body,
    );
    assert_eq!(r.status, 403);
    // A page on evil.example re-pointed at 127.0.0.1 sends its own Host.
    let rebound =
        s.raw(b"GET /v1/memory HTTP/1.1\r\nHost: evil.example:8080\r\nConnection: close\r\n\r\n");
    assert_eq!(rebound.status, 403);
    assert_eq!(
        s.get("/v1/memory").json()["data"],
        json!([]),
        "nothing was stored"
    );
    let own = format!("http://127.0.0.1:{}", s.port);
    let ok = s.request("POST", "/v1/memory", &[("Origin", &own)], &body);
    assert_eq!(ok.status, 201, "the UI's own origin may write: {}", ok.body);
}

#[test]
fn every_bind_requires_the_token_and_a_browser_signs_in_with_the_printed_link() {
    for (name, args) in [
        ("serve-token-loopback", &[][..]),
        ("serve-token-wide", &["--host", "0.0.0.0"][..]),
    ] {
        let w = World::new(name);
        let s = Server::start(&w, args);
        let token_file = w.home.join("serve.token");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&token_file).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{name}");
        let token = s.token.clone();
        // The link keeps the token in the fragment, which a browser never sends.
        let link = format!("http://127.0.0.1:{}/login#token={token}", s.port);
        assert!(
            s.banner.iter().any(|l| l.contains(&link)),
            "{name}: the sign-in link is printed: {:?}",
            s.banner
        );
        for path in [
            "/v1/sessions",
            "/v1/models",
            "/openapi.json",
            "/static/js/chat.js",
        ] {
            let r = s.anonymous("GET", path, &[], "");
            assert_eq!(r.status, 401, "{name} {path}: {}", r.body);
            assert_eq!(r.json()["error"]["type"], "authentication_error");
        }
        // Health checks (Docker, monitors) and the login page with what draws it need
        // no token; they hold nothing private.
        let health = s.anonymous("GET", "/health", &[], "").json();
        assert_eq!(health.as_object().unwrap().len(), 3, "{health}");
        for path in ["/login", "/static/login.js", "/static/app.css"] {
            assert_eq!(s.anonymous("GET", path, &[], "").status, 200, "{path}");
        }
        assert_eq!(
            s.get("/v1/sessions").status,
            200,
            "{name}: the Bearer token"
        );
        let wrong = s.request(
            "GET",
            "/v1/sessions",
            &[("Authorization", "Bearer nope")],
            "",
        );
        assert_eq!(wrong.status, 401);
        // The browser: / sends to the login form, which posts the token (from the
        // link's fragment or pasted) and gets an HttpOnly cookie.
        let page = s.anonymous("GET", "/", &[], "");
        assert_eq!(
            (page.status, page.header("location")),
            (303, Some("/login"))
        );
        let form = s.anonymous(
            "POST",
            "/login",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            &format!("token={token}"),
        );
        assert_eq!(form.status, 303);
        assert_eq!(form.header("location"), Some("/"));
        let cookie = form.header("set-cookie").expect("a cookie");
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        let pair = cookie.split(';').next().unwrap();
        assert_eq!(
            s.request("GET", "/v1/sessions", &[("Cookie", pair)], "")
                .status,
            200
        );
        assert_eq!(
            s.request("GET", "/", &[("Cookie", pair)], "").status,
            200,
            "{name}: the UI once signed in"
        );
        let bad = s.anonymous("POST", "/login", &[], "token=wrong");
        assert_eq!(bad.header("location"), Some("/login?failed=1"));
        assert!(bad.header("set-cookie").is_none());
        drop(s);
        // The next start keeps the token: a signed-in browser stays signed in.
        let s2 = Server::start(&w, args);
        assert_eq!(s2.token, token, "{name}");
        assert_eq!(
            s2.request("GET", "/v1/sessions", &[("Cookie", pair)], "")
                .status,
            200
        );
    }
}

#[test]
fn a_chat_is_pinned_archived_and_brought_back_by_patch_and_stays_so() {
    let w = World::new("serve-pin-archive");
    let s = Server::start(&w, &[]);
    let id = s
        .post("/v1/sessions", &json!({"title": "Groceries"}).to_string())
        .json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let patch = |body: Value| {
        let r = s.request(
            "PATCH",
            &format!("/v1/sessions/{id}"),
            &[],
            &body.to_string(),
        );
        (r.status, r.json())
    };
    let listed = || -> Value {
        s.get("/v1/sessions").json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id.as_str())
            .cloned()
            .unwrap()
    };
    // A new chat is neither; the fields are left out then.
    assert_eq!(
        (listed()["pinned"].clone(), listed()["archived"].clone()),
        (Value::Null, Value::Null)
    );
    let (status, body) = patch(json!({"pinned": true}));
    assert_eq!(
        (status, body["pinned"].clone()),
        (200, json!(true)),
        "{body}"
    );
    assert_eq!(listed()["pinned"], true, "the list says so");
    // Each field alone leaves the others as they were, the title included.
    let (_, body) = patch(json!({"archived": true}));
    assert_eq!(
        (
            body["pinned"].clone(),
            body["archived"].clone(),
            body["title"].clone()
        ),
        (json!(true), json!(true), json!("Groceries"))
    );
    let (_, body) = patch(json!({"title": "Weekly groceries", "pinned": false}));
    assert_eq!(
        (
            body["pinned"].clone(),
            body["archived"].clone(),
            body["title"].clone()
        ),
        (Value::Null, json!(true), json!("Weekly groceries"))
    );
    assert_eq!(
        s.get(&format!("/v1/sessions/{id}")).json()["archived"],
        true,
        "kept in the store"
    );
    let (_, body) = patch(json!({"archived": false}));
    assert_eq!(body["archived"], Value::Null, "brought back: {body}");
    // Wrong shapes are refused, naming the field; nothing changes.
    for (bad, word) in [
        (json!({"pinned": "yes"}), "pinned"),
        (json!({"archived": 1}), "archived"),
        (json!({}), "title"),
        (json!({"title": 5}), "title"),
        (json!({"title": null, "pinned": true}), "title"),
        (json!({"archived": null}), "archived"),
    ] {
        let (status, body) = patch(bad.clone());
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(word),
            "{bad}: {body}"
        );
    }
    assert_eq!(listed()["title"], "Weekly groceries");
    let missing = s.request(
        "PATCH",
        "/v1/sessions/s0000000000zz",
        &[],
        &json!({"pinned": true}).to_string(),
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
}

#[test]
fn a_search_finds_the_words_whole_not_inside_longer_words() {
    let w = World::new("serve-search-words");
    let s = Server::start(&w, &[]);
    let mut ids = std::collections::HashMap::new();
    for text in [
        "The user drinks green tea every morning",
        "The user's teacher was strict",
        "Steam cleans the oven",
        "用户喜欢喝绿茶",
        "绿茶色的墙",
    ] {
        let m = s.post("/v1/memory", &json!({ "content": text }).to_string());
        assert_eq!(m.status, 201, "{}", m.body);
        ids.insert(m.json()["id"].as_u64().unwrap(), text);
    }
    let found = |path: &str, key: &str| -> Vec<&str> {
        let mut v: Vec<&str> = s.get(path).json()[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| ids[&m["id"].as_u64().unwrap()])
            .collect();
        v.sort();
        v
    };
    for (q, want) in [
        ("tea", vec!["The user drinks green tea every morning"]),
        ("TEA", vec!["The user drinks green tea every morning"]),
        ("teacher", vec!["The user's teacher was strict"]),
        ("team", vec![]),
        ("%E7%BB%BF%E8%8C%B6", vec!["用户喜欢喝绿茶", "绿茶色的墙"]),
    ] {
        assert_eq!(
            found(&format!("/v1/memory?q={q}"), "data"),
            want,
            "memory ?q={q}"
        );
        assert_eq!(
            found(&format!("/v1/search?q={q}"), "memories"),
            want,
            "search ?q={q}"
        );
    }
    // Chat titles and messages too.
    s.post(
        "/v1/sessions",
        &json!({"title": "Teaching plan"}).to_string(),
    );
    let tea = s.post("/v1/sessions", &json!({"title": "Tea tasting"}).to_string());
    let hits = s.get("/v1/search?q=tea").json();
    let titles: Vec<&str> = hits["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Tea tasting"], "{hits}");
    assert_eq!(hits["sessions"][0]["id"], tea.json()["id"]);
}

#[test]
fn sessions_and_memory_through_the_api() {
    let w = World::new("serve-crud");
    let s = Server::start(&w, &[]);
    for i in 0..3 {
        s.post(
            "/v1/sessions",
            &json!({"title": format!("older {i}")}).to_string(),
        );
    }
    let page = s.get("/v1/sessions?limit=2&offset=1").json();
    assert_eq!(
        (
            page["total"].clone(),
            page["data"].as_array().unwrap().len()
        ),
        (json!(3), 2)
    );
    assert_eq!(s.get("/v1/sessions?limit=x").status, 400);
    let created = s.post("/v1/sessions", &json!({"title": "Trip"}).to_string());
    assert_eq!(created.status, 201);
    let sid = created.json()["id"].as_str().unwrap().to_string();
    let renamed = s.request(
        "PATCH",
        &format!("/v1/sessions/{sid}"),
        &[],
        &json!({"title": "Trip to Kyoto"}).to_string(),
    );
    assert_eq!(renamed.json()["title"], "Trip to Kyoto");
    w.fake.push(Reply::text("Pack light."));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("what to pack?", json!({"session": sid})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let md = s.get(&format!("/v1/sessions/{sid}/export?format=md"));
    assert!(
        md.body.contains("Trip to Kyoto") && md.body.contains("Pack light."),
        "{}",
        md.body
    );
    assert!(md
        .header("content-disposition")
        .unwrap()
        .contains("attachment"));
    let html = s.get(&format!("/v1/sessions/{sid}/export?format=html"));
    assert!(html.body.contains("<html") && html.body.contains("Pack light."));
    let found = s.get("/v1/search?q=kyoto").json();
    assert_eq!(found["sessions"][0]["id"], sid.as_str());
    let found = s.get("/v1/search?q=pack%20light").json();
    assert_eq!(found["messages"][0]["session"], sid.as_str());

    let m = s.post("/v1/memory", &json!({"content": "The user drinks oolong tea", "priority": 1, "importance": 4, "tags": ["tea"]}).to_string());
    assert_eq!(m.status, 201, "{}", m.body);
    let id = m.json()["id"].as_u64().unwrap();
    assert_eq!(
        (m.json()["priority"].clone(), m.json()["importance"].clone()),
        (json!(1), json!(4))
    );
    let p = s.request(
        "PATCH",
        &format!("/v1/memory/{id}"),
        &[],
        &json!({"pinned": true, "priority": 0}).to_string(),
    );
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(
        (p.json()["pinned"].clone(), p.json()["priority"].clone()),
        (json!(true), json!(0))
    );
    let hits = s.get("/v1/memory?q=oolong").json();
    assert_eq!(hits["data"][0]["id"], id);
    assert_eq!(s.get("/v1/search?q=oolong").json()["memories"][0]["id"], id);
    assert_eq!(
        s.request("DELETE", &format!("/v1/memory/{id}"), &[], "")
            .status,
        200
    );
    assert_eq!(s.get("/v1/memory").json()["data"], json!([]));
    assert_eq!(s.get(&format!("/v1/memory/{id}")).status, 404);

    assert_eq!(
        s.request("DELETE", &format!("/v1/sessions/{sid}"), &[], "")
            .status,
        200
    );
    assert_eq!(s.get(&format!("/v1/sessions/{sid}")).status, 404);
    drop(s);
    // What the API changed is in the store the CLI reads.
    let list = w.run(&["sessions", "list"]);
    assert!(!list.stdout.contains("Kyoto"), "{}", list.stdout);
}

/// Reads SSE events from a streaming response as they arrive.
#[test]
fn the_ui_flow_asks_once_for_l3_and_twice_for_l4() {
    let w = World::new("serve-approve");
    w.config("[tools.levels]\nedit_file = \"L4\"\n");
    let ws = w.workspace();
    std::fs::write(ws.join("b.txt"), "old").unwrap();
    let s = Server::start(&w, &[]);
    // L3: write_file, one yes.
    w.fake.push(tool_call(
        "write_file",
        r#"{"path":"a.txt","content":"hello"}"#,
    ));
    w.fake.push(Reply::text("Wrote it."));
    let (rx, sid, ask) = asking(&s, "write a.txt", json!({}));
    assert_eq!(
        (ask["call"]["tool"].clone(), ask["call"]["level"].clone()),
        (json!("write_file"), json!("L3"))
    );
    assert_eq!(
        (ask["call"]["step"].clone(), ask["call"]["steps"].clone()),
        (json!(1), json!(1))
    );
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    let listed = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(listed["data"][0]["id"], call.as_str());
    let ok = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "yes"}).to_string(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    let end = next_event(&rx, "evolve.tool_end");
    assert_eq!(end["ran"], true);
    assert!(
        end["output"].as_str().is_some_and(|o| !o.is_empty()),
        "the card shows what the tool said: {end}"
    );
    let record = next_event(&rx, "evolve.turn");
    // The event does not repeat the reply (it was streamed); the stored record has it.
    assert!(record.get("reply").is_none(), "{record}");
    let stored = s
        .get(&format!("/v1/sessions/{sid}/turns/{}", record["turn"]))
        .json();
    assert_eq!(stored["reply"], "Wrote it.");
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "hello");

    // L4: edit_file raised to L4 in the config: two yes answers, the second step
    // repeating the exact arguments.
    let args = r#"{"path":"b.txt","old":"old","new":"new"}"#;
    w.fake.push(tool_call("edit_file", args));
    w.fake.push(Reply::text("Edited."));
    let (rx, _, first) = asking(&s, "edit b.txt", json!({"session": sid}));
    assert_eq!(
        (
            first["call"]["level"].clone(),
            first["call"]["steps"].clone()
        ),
        (json!("L4"), json!(2))
    );
    let call = first["call"]["id"].as_str().unwrap().to_string();
    s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "yes"}).to_string(),
    );
    let second = next_event(&rx, "evolve.permission");
    assert_eq!(second["call"]["step"], 2);
    assert!(
        second["call"]["prompt"].as_str().unwrap().contains("old"),
        "{second}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "old",
        "not after one yes"
    );
    s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "yes"}).to_string(),
    );
    let record = next_event(&rx, "evolve.turn");
    assert_eq!(record["tools"][0]["ran"], true, "{record}");
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "new");

    // A refusal: nothing runs.
    w.fake.push(tool_call(
        "write_file",
        r#"{"path":"c.txt","content":"no"}"#,
    ));
    w.fake.push(Reply::text("Fine, I did not."));
    let (rx, _, ask) = asking(&s, "write c.txt", json!({"session": sid}));
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "no"}).to_string(),
    );
    let record = next_event(&rx, "evolve.turn");
    assert_eq!(record["tools"][0]["ran"], false);
    assert!(!ws.join("c.txt").exists());
}

#[test]
fn a_plain_client_is_told_a_call_needed_a_person_and_that_nothing_waits() {
    let w = World::new("serve-headless");
    let s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"x.txt","content":"x"}"#));
    w.fake.push(Reply::text("I could not write it."));
    let r = s.post("/v1/chat/completions", &chat_body("write x.txt", json!({})));
    assert_eq!(r.status, 200, "{}", r.body);
    let content = r.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        content.contains("write_file (L3)") && content.contains("approval"),
        "{content}"
    );
    assert!(!w.workspace().join("x.txt").exists());
    // The note does not send the user to approve something: nothing waits anywhere.
    let sid = r.header("x-evolve-session").expect("session").to_string();
    let pending = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(pending["data"], json!([]), "{pending}");
    assert!(content.contains("nothing is waiting"), "{content}");
    assert!(!content.contains("Approve it"), "{content}");
    assert!(
        content.contains(&format!("evolve chat --session {sid}")),
        "{content}"
    );
}

#[test]
fn tools_run_through_the_api_under_the_same_levels() {
    let w = World::new("serve-tools");
    let s = Server::start(&w, &[]);
    let tools = s.get("/v1/tools").json();
    let names: Vec<&str> = tools["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"get_time") && names.contains(&"shell"),
        "{names:?}"
    );
    let t = s.post(
        "/v1/tools/get_time/run",
        &json!({"arguments": {}}).to_string(),
    );
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(t.json()["level"], "L1");
    let wf = s.post(
        "/v1/tools/write_file/run",
        &json!({"arguments": {"path": "y.txt", "content": "y"}}).to_string(),
    );
    assert_eq!(wf.status, 403, "{}", wf.body);
    assert!(!w.workspace().join("y.txt").exists());
    let rm = s.post(
        "/v1/tools/shell/run",
        &json!({"arguments": {"command": "rm -rf /"}}).to_string(),
    );
    assert_eq!(rm.status, 403);
    assert!(rm.error_message().contains("L5"), "{}", rm.body);
    assert_eq!(s.post("/v1/tools/nope/run", "{}").status, 404);
}

#[test]
fn ask_while_serve_runs_goes_through_the_server_with_the_same_output_and_exit_codes() {
    let w = World::new("serve-ask");
    let s = Server::start(&w, &[]);
    // Plain answer.
    w.fake.push(Reply::text("Forty-two."));
    let run = w.run(&["ask", "what is the answer?"]).expect(0);
    assert_eq!(run.stdout.trim(), "Forty-two.");
    // --json: the record, in the server's store.
    w.fake.push(Reply::text("Still forty-two."));
    let run = w.run(&["ask", "--json", "again?"]).expect(0);
    let record = run.json();
    assert_eq!(record["reply"], "Still forty-two.");
    let sid = record["session"].as_str().unwrap().to_string();
    assert_eq!(
        s.get(&format!("/v1/sessions/{sid}")).status,
        200,
        "the server's store has it"
    );
    // A call that needs a person: refused, the answer printed, exit 4.
    w.fake
        .push(tool_call("write_file", r#"{"path":"z.txt","content":"z"}"#));
    w.fake.push(Reply::text("I could not write z.txt."));
    let run = w.run(&["ask", "write z.txt"]).expect(4);
    assert_eq!(run.stdout.trim(), "I could not write z.txt.");
    assert!(run.stderr.contains("write_file (L3)"), "{}", run.stderr);
    assert!(!w.workspace().join("z.txt").exists());
    // --yes allows L3, as without the server.
    w.fake
        .push(tool_call("write_file", r#"{"path":"z.txt","content":"z"}"#));
    w.fake.push(Reply::text("Wrote z.txt."));
    w.run(&["ask", "--yes", "write z.txt"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(w.workspace().join("z.txt")).unwrap(),
        "z"
    );
    // Usage errors keep exit 2.
    let run = w.run(&["ask", "--session", "snope", "hi"]).expect(2);
    assert!(run.stderr.contains("no such session"), "{}", run.stderr);
    // The model failing keeps its exit code (3: could not be reached / kept failing).
    for _ in 0..4 {
        w.fake.push(Reply::error(503, "overloaded"));
    }
    let run = w.run(&["ask", "are you there?"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    drop(s);
    // Without the server (its record left behind by a kill), ask runs by itself.
    w.fake.push(Reply::text("Alone."));
    assert_eq!(w.run(&["ask", "hello?"]).expect(0).stdout.trim(), "Alone.");
}

#[test]
fn sigterm_ends_a_waiting_turn_saves_it_and_exits_cleanly() {
    let w = World::new("serve-stop");
    let s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"w.txt","content":"w"}"#));
    w.fake.push(Reply::text("Not written."));
    let (_rx, sid, _ask) = asking(&s, "write w.txt", json!({}));
    // Nobody answers; the server is told to stop.
    assert_eq!(s.stop(), Some(0), "a clean exit");
    assert!(
        !w.workspace().join("w.txt").exists(),
        "the waiting call was not run"
    );
    assert!(
        !w.home.join("serve.json").exists(),
        "the server's record is removed"
    );
    // The question is in the store, which opens cleanly.
    let shown = w.run(&["sessions", "show", &sid]).expect(0);
    assert!(shown.stdout.contains("write w.txt"), "{}", shown.stdout);
}

#[test]
fn the_profile_switches_without_a_restart() {
    let w = World::new("serve-profile");
    w.config("[profiles.work.model]\nmain = \"work-model\"\n");
    let mut w = w;
    w.env_remove("EVOLVE_MODEL");
    let s = Server::start(&w, &[]);
    let cfg = s.get("/v1/config").json();
    assert_eq!(cfg["profile"], "default");
    assert_eq!(cfg["profiles"], json!(["work"]));
    assert!(
        !s.get("/v1/config").body.contains("sk-"),
        "no key in the config view"
    );
    let r = s.post(
        "/v1/config/profile",
        &json!({"profile": "work"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["profile"], "work");
    w.fake.push(Reply::text("from work"));
    let c = s.post("/v1/chat/completions", &chat_body("hi", json!({})));
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(w.main_requests().last().unwrap()["model"], "work-model");
    assert_eq!(
        s.post(
            "/v1/config/profile",
            &json!({"profile": "nope"}).to_string()
        )
        .status,
        404
    );
}

#[test]
fn other_commands_run_beside_serve_which_lends_them_the_store() {
    let w = World::new("serve-held");
    let s = Server::start(&w, &[]);
    // serve holds the store and lends it: the command runs, and serve goes on.
    w.run(&["memory", "list"]).expect(0);
    assert_eq!(s.get("/v1/memory").status, 200);
    drop(s);
}

#[test]
fn a_trickling_request_head_is_cut_off_and_others_are_served_meanwhile() {
    use std::io::{Read, Write};
    let w = World::new("serve-slow");
    let s = Server::start(&w, &[]);
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    // Others are answered while it dawdles.
    assert_eq!(s.get("/health").status, 200);
    // The head never completes: the server answers 408 and closes (after its head
    // deadline, a few seconds), instead of holding the connection for ever.
    slow.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[test]
fn a_question_answered_after_the_page_is_gone_still_finishes_the_turn() {
    let w = World::new("serve-reload");
    let s = Server::start(&w, &[]);
    w.fake
        .push(tool_call("write_file", r#"{"path":"r.txt","content":"r"}"#));
    w.fake.push(Reply::text("Wrote r.txt after all."));
    let (sid, call) = {
        let (_rx, sid, ask) = asking(&s, "write r.txt", json!({}));
        (sid, ask["call"]["id"].as_str().unwrap().to_string())
        // The reader (the page) goes away here.
    };
    // The reloaded page finds the question and answers it.
    let pending = s.get(&format!("/v1/sessions/{sid}/pending")).json();
    assert_eq!(pending["data"][0]["id"], call.as_str());
    let ok = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "yes"}).to_string(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    // The turn runs to its end: the file is written and the answer stored.
    let mut stored = Vec::new();
    for _ in 0..100 {
        let msgs = s.get(&format!("/v1/sessions/{sid}/messages")).json();
        stored = msgs["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str().map(String::from))
            .collect();
        if stored.iter().any(|c| c == "Wrote r.txt after all.") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        stored.iter().any(|c| c == "Wrote r.txt after all."),
        "{stored:?}"
    );
    assert_eq!(
        std::fs::read_to_string(w.workspace().join("r.txt")).unwrap(),
        "r"
    );
}

/// Found by Schemathesis (tests/api): a tag list holding a number or a list was stored
/// with those entries silently dropped.
#[test]
fn memory_tags_that_are_not_strings_are_refused() {
    let w = World::new("serve-tags");
    let s = Server::start(&w, &[]);
    for tags in [json!(["tea", 3]), json!([null]), json!([["nested"]])] {
        let r = s.post(
            "/v1/memory",
            &json!({"content": "The user drinks tea", "tags": tags}).to_string(),
        );
        assert_eq!(r.status, 400, "{tags}: {}", r.body);
        assert!(r.error_message().contains("tags"), "{}", r.body);
    }
    assert_eq!(
        s.get("/v1/memory").json()["data"],
        json!([]),
        "nothing stored"
    );
    let ok = s.post(
        "/v1/memory",
        &json!({"content": "The user drinks tea", "tags": [" tea ", ""]}).to_string(),
    );
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.json()["tags"], json!(["tea"]));
}

#[test]
fn an_api_memory_gets_its_categorys_priority_unless_one_is_given() {
    let w = World::new("serve-memory-priority");
    let s = Server::start(&w, &[]);
    // The seed's mapping, as `evolve memory add` applies it.
    let table = [
        ("instruction", "Always answer in English", 0),
        ("preference", "The user prefers dark mode", 1),
        ("reminder", "Renew the passport in May", 1),
        ("fact", "The build server runs Jenkins", 2),
        ("general", "The office has a blue door", 3),
    ];
    for (category, content, priority) in table {
        let r = s.post(
            "/v1/memory",
            &json!({"content": content, "category": category}).to_string(),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        assert_eq!(r.json()["priority"], priority, "{category}: {}", r.body);
    }
    let given = s.post(
        "/v1/memory",
        &json!({"content": "The cat is called Miso", "category": "fact", "priority": 0})
            .to_string(),
    );
    assert_eq!(given.json()["priority"], 0, "a given priority wins");
    let plain = s.post("/v1/memory", &json!({"content": "Tea at four"}).to_string());
    assert_eq!(
        (
            plain.json()["category"].clone(),
            plain.json()["priority"].clone()
        ),
        (json!("general"), json!(3))
    );
}

#[test]
fn style_notes_are_listed_removed_and_cleared_through_the_api() {
    let w = World::new("serve-style");
    for (i, note) in ["Keep answers to one sentence", "Use metric units"]
        .iter()
        .enumerate()
    {
        w.fake.push(Reply::text(format!("Answer {i}.")));
        w.fake.route(
            support::POST_TURN,
            Reply::text(r#"{"grade": {"score": 0.95, "reason": "good"}}"#),
        );
        w.fake.route(
            support::STYLE,
            Reply::text(json!({ "note": note }).to_string()),
        );
        w.run(&["ask", &format!("Question {i}?")]).expect(0);
    }
    let s = Server::start(&w, &[]);
    let listed = s.get("/v1/memory/style");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(
        listed.json()["data"],
        json!([
            {"n": 1, "note": "Keep answers to one sentence"},
            {"n": 2, "note": "Use metric units"},
        ])
    );
    // The text the page shows guards against removing a note that moved meanwhile.
    let stale = s.request(
        "DELETE",
        "/v1/memory/style/1?note=Use%20metric%20units",
        &[],
        "",
    );
    assert_eq!(stale.status, 409, "{}", stale.body);
    let gone = s.request(
        "DELETE",
        "/v1/memory/style/1?note=Keep%20answers%20to%20one%20sentence",
        &[],
        "",
    );
    assert_eq!(gone.status, 200, "{}", gone.body);
    assert_eq!(gone.json()["note"], "Keep answers to one sentence");
    assert_eq!(
        s.request("DELETE", "/v1/memory/style/5", &[], "").status,
        404
    );
    assert_eq!(
        s.request("DELETE", "/v1/memory/style/x", &[], "").status,
        400
    );
    assert_eq!(
        s.get("/v1/memory/style").json()["data"],
        json!([{"n": 1, "note": "Use metric units"}])
    );
    let cleared = s.request("DELETE", "/v1/memory/style", &[], "");
    assert_eq!(cleared.status, 200, "{}", cleared.body);
    assert_eq!(cleared.json()["removed"], 1);
    assert_eq!(s.get("/v1/memory/style").json()["data"], json!([]));
    let patch = s.request("PATCH", "/v1/memory/style", &[], "{}");
    assert_eq!(patch.status, 405, "{}", patch.body);
    let api = s.get("/openapi.json").json();
    assert!(api["paths"]["/v1/memory/style"]["get"].is_object());
    assert!(api["paths"]["/v1/memory/style"]["delete"].is_object());
    assert!(api["paths"]["/v1/memory/style/{n}"]["delete"].is_object());
}

/// Found by Schemathesis (tests/api): a method a path does not serve got 405 without the
/// `Allow` header RFC 9110 requires, or 404 on the deeper paths (`/docs`,
/// `/v1/sessions/{id}/messages`, …) as if the path did not exist.
#[test]
fn a_wrong_method_is_405_naming_the_right_ones() {
    let w = World::new("serve-allow");
    let s = Server::start(&w, &[]);
    for (method, path, allow) in [
        ("TRACE", "/health", "GET, HEAD"),
        ("DELETE", "/v1/models", "GET, HEAD"),
        ("PUT", "/v1/memory", "GET, HEAD, POST"),
        ("POST", "/v1/memory/1", "GET, HEAD, PATCH, DELETE"),
        ("GET", "/v1/chat/completions", "POST"),
        ("POST", "/docs", "GET, HEAD"),
        ("DELETE", "/v1/sessions/s1/messages", "GET, HEAD"),
        ("POST", "/v1/sessions/s1/turns/1", "GET, HEAD"),
        ("GET", "/v1/sessions/s1/pending/c1", "POST"),
        ("GET", "/v1/mcp/tools/a__b/level", "PUT"),
        ("POST", "/static/js/chat.js", "GET, HEAD"),
    ] {
        let r = s.request(method, path, &[], "");
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
        assert_eq!(r.header("allow"), Some(allow), "{method} {path}");
        assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    }
    let nf = s.request("TRACE", "/v1/nothing/here", &[], "");
    assert_eq!((nf.status, nf.header("allow")), (404, None));
}

/// Found by Schemathesis (tests/api): chat fields of the wrong type were ignored — a
/// numeric `session` started a new session (or lost to the header), a numeric `model`
/// became "evolve", a message without a role was skipped — and the turn ran.
#[test]
fn chat_fields_of_the_wrong_type_are_refused() {
    let w = World::new("serve-chat-types");
    let s = Server::start(&w, &[]);
    let user = json!({"role": "user", "content": "hi"});
    let created = s.post("/v1/sessions", "{}").json()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (body, header) in [
        (json!({"messages": [user], "session": 5}), None),
        (
            json!({"messages": [user], "session": 5}),
            Some(created.as_str()),
        ),
        (json!({"messages": [user], "session": ""}), None),
        (json!({"messages": [user], "model": 5}), None),
        (json!({"messages": [{"content": "no role"}, user]}), None),
        (json!({"messages": [7, user]}), None),
        (
            json!({"messages": [user, {"role": "assistant", "content": 5}]}),
            None,
        ),
    ] {
        let headers: Vec<(&str, &str)> = header
            .map(|h| vec![("X-Evolve-Session", h)])
            .unwrap_or_default();
        let r = s.request("POST", "/v1/chat/completions", &headers, &body.to_string());
        assert_eq!(r.status, 400, "{body} {header:?}: {}", r.body);
        assert!(!r.error_message().is_empty());
    }
    assert!(w.main_requests().is_empty(), "no turn ran");
    // Null stays "not given", as OpenAI clients send it.
    w.fake.push(Reply::text("fine"));
    let ok = s.post(
        "/v1/chat/completions",
        &json!({"messages": [user], "session": null, "model": null}).to_string(),
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["model"], "evolve");
}

#[test]
fn http_1_0_streams_are_not_chunked_and_1_1_needs_a_host() {
    let w = World::new("serve-http10");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("plain old stream"));
    let body = chat_body("hi", json!({"stream": true}));
    let r = s.raw(
        format!(
            "POST /v1/chat/completions HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: {}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            s.bearer(),
            body.len()
        )
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("transfer-encoding").is_none(), "{:?}", r.headers);
    assert!(r.body.contains("data: [DONE]"), "{}", r.body);
    let no_host = s.raw(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(no_host.status, 400);
}

#[test]
fn every_module_the_page_loads_is_served_as_javascript_and_revalidated() {
    let w = World::new("serve-modules");
    let s = Server::start(&w, &[]);
    let page = s.get("/").body;
    // What index.html names (the entry and its preloads), and the pages' modules that
    // layout.js loads when a page is first shown.
    let layout = s.get("/static/js/layout.js").body;
    let mut names: Vec<String> = page
        .split("/static/js/")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .chain(
            layout
                .split('\'')
                .filter(|w| w.ends_with(".js") && !w.contains(['/', ' '])),
        )
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 15, "{names:?}");
    for name in ["main.js", "chat.js", "memory.js", "channels.js", "usage.js"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    for name in &names {
        let path = format!("/static/js/{name}");
        let r = s.request("GET", &path, &[("Accept-Encoding", "gzip")], "");
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.header("content-type"),
            Some("text/javascript; charset=utf-8"),
            "{path}: a module must be served as JavaScript"
        );
        assert_eq!(r.header("content-encoding"), Some("gzip"), "{path}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{path}");
        let tag = r.header("etag").expect("an ETag").to_string();
        let again = s.request(
            "GET",
            &path,
            &[("Accept-Encoding", "gzip"), ("If-None-Match", &tag)],
            "",
        );
        assert_eq!(again.status, 304, "{path}: unchanged, not sent again");
    }
    // A page's module asked for again after a failed fetch carries a query (the browser
    // keeps a failed module under its name): the same file.
    let retried = s.get("/static/js/memory.js?again=2");
    assert_eq!(retried.status, 200);
    assert_eq!(retried.body, s.get("/static/js/memory.js").body);
    // Only the UI's files: nothing else is reached through the folder.
    for path in [
        "/static/js/",
        "/static/js/nothing.js",
        "/static/js/..%2fapp.css",
        "/static/js/%2e%2e/index.html",
    ] {
        assert_eq!(s.get(path).status, 404, "{path}");
    }
}

#[test]
fn the_ui_files_go_gzipped_to_a_browser_and_as_they_are_to_other_clients() {
    let w = World::new("serve-gzip");
    let s = Server::start(&w, &[]);
    let html =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../static/index.html"))
            .expect("static/index.html");
    let page = s.get("/");
    assert_eq!(
        page.body, html,
        "a client without gzip gets the file itself"
    );
    assert!(page.header("content-encoding").is_none());
    // Scripts go without their comment lines, blank lines and indentation.
    let want =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../static/js/chat.js"))
            .expect("static/js/chat.js");
    let plain = s.get("/static/js/chat.js");
    assert_eq!(plain.status, 200);
    assert!(plain.header("content-encoding").is_none());
    let kept: Vec<&str> = want
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("//") && !l.starts_with("/*") && !l.starts_with('*')
        })
        .collect();
    let served: Vec<&str> = plain.body.lines().collect();
    assert!(
        plain.body.len() < want.len() * 9 / 10,
        "{} of {}",
        plain.body.len(),
        want.len()
    );
    assert_eq!(
        served, kept,
        "every line of code, in order, and nothing else"
    );
    let gz = s.request(
        "GET",
        "/static/js/chat.js",
        &[("Accept-Encoding", "gzip, deflate, br")],
        "",
    );
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    let len: usize = gz.header("content-length").unwrap().parse().unwrap();
    assert!(len < want.len() / 2, "{len} of {} bytes", want.len());
    assert_ne!(
        gz.header("etag"),
        plain.header("etag"),
        "each form has its tag"
    );
    let refused = s.request("GET", "/", &[("Accept-Encoding", "gzip;q=0")], "");
    assert!(refused.header("content-encoding").is_none());
    assert!(refused.body.contains("<html"), "{}", refused.body);
    let again = s.request(
        "GET",
        "/static/js/chat.js",
        &[("If-None-Match", plain.header("etag").unwrap())],
        "",
    );
    assert_eq!(again.status, 304);
}

#[test]
fn an_answer_regenerated_or_its_question_edited_replaces_the_turn_for_the_model_only() {
    let w = World::new("serve-replace");
    let s = Server::start(&w, &[]);
    let ask = |text: &str, extra: Value| {
        let r = s.post("/v1/chat/completions", &chat_body(text, extra));
        (r.status, r.json())
    };
    w.fake.push(Reply::text("It is five, surely."));
    let (status, first) = ask("What is two plus two?", json!({}));
    assert_eq!(status, 200, "{first}");
    let sid = first["evolve"]["session"].as_str().unwrap().to_string();
    assert_eq!(first["evolve"]["turn"], 1);

    // Regenerate: the same question, turn 1 replaced. The model does not see the old answer.
    w.fake.push(Reply::text("Four."));
    let (status, again) = ask(
        "What is two plus two?",
        json!({"session": sid, "evolve_replace": 1}),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["evolve"]["turn"], 2);
    let req = w.main_requests().pop().unwrap();
    let sent = support::all_text(&req);
    assert!(
        !sent.contains("five"),
        "the replaced answer is not sent: {sent}"
    );
    assert_eq!(
        sent.matches("What is two plus two?").count(),
        1,
        "the question once: {sent}"
    );

    // The person keeps both: the new one is shown as version 2 of 2, the old one
    // is version 1.
    let m = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    let texts: Vec<&str> = m["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["content"].as_str())
        .collect();
    assert_eq!(texts, ["What is two plus two?", "Four."], "{m}");
    assert_eq!(
        (&m["data"][1]["version"], &m["data"][1]["versions"]),
        (&json!(2), &json!(2))
    );
    let old = s.request(
        "PUT",
        &format!("/v1/sessions/{sid}/turns/2/shown"),
        &[],
        r#"{"version": 1}"#,
    );
    assert_eq!(old.status, 200, "{}", old.body);
    assert_eq!(old.json()["data"][1]["content"], "It is five, surely.");
    let new = s.request(
        "PUT",
        &format!("/v1/sessions/{sid}/turns/2/shown"),
        &[],
        r#"{"version": 2}"#,
    );
    assert_eq!(new.json()["data"][1]["content"], "Four.");

    // Edit and resend turn 2 with another question: the next request has neither old turn.
    w.fake.push(Reply::text("Nine."));
    let (status, edited) = ask(
        "What is four plus five?",
        json!({"session": sid, "evolve_replace": 2}),
    );
    assert_eq!(status, 200, "{edited}");
    let sent = support::all_text(&w.main_requests().pop().unwrap());
    assert!(
        !sent.contains("two plus two") && !sent.contains("Four."),
        "{sent}"
    );
    // A later turn builds on the answer that stands.
    w.fake.push(Reply::text("Ten."));
    let (status, _) = ask("And plus one?", json!({"session": sid}));
    assert_eq!(status, 200);
    let sent = support::all_text(&w.main_requests().pop().unwrap());
    assert!(
        sent.contains("four plus five") && sent.contains("Nine."),
        "{sent}"
    );
    assert!(
        !sent.contains("five, surely") && !sent.contains("Four."),
        "{sent}"
    );
    let m = s.get(&format!("/v1/sessions/{sid}/messages")).json();
    let shown: Vec<(u64, u64)> = m["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["role"] == "user")
        .map(|x| (x["turn"].as_u64().unwrap(), x["versions"].as_u64().unwrap()))
        .collect();
    assert_eq!(shown, [(3, 3), (4, 1)], "{m}");

    // Only a turn shown, and only within a session.
    let (status, body) = ask("x", json!({"session": sid, "evolve_replace": 2}));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("turn 2 is not shown"),
        "{body}"
    );
    let (status, _) = ask("x", json!({"evolve_replace": 1}));
    assert_eq!(status, 400);
    let (status, _) = ask("x", json!({"session": sid, "evolve_replace": "last"}));
    assert_eq!(status, 400);
}

#[test]
fn mcp_servers_are_added_reconnected_and_removed_through_the_api() {
    let w = World::new("serve-mcp-api");
    let s = Server::start(&w, &[]);
    let notes = w.workspace().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let body = json!({
        "name": "notes",
        "command": support::mcp::test_server(),
        "args": ["--notes", notes],
    })
    .to_string();
    let add = s.post("/v1/mcp/servers", &body);
    assert_eq!(add.status, 201, "{}", add.body);
    let listed = s.get("/v1/mcp").json();
    let server = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "notes")
        .cloned()
        .unwrap_or_else(|| panic!("the added server is listed: {listed}"));
    assert_eq!(server["source"], "added");
    assert_eq!(server["transport"], "stdio");
    // Adding it again needs `replace`.
    assert_eq!(s.post("/v1/mcp/servers", &body).status, 409);
    let mut replace: Value = serde_json::from_str(&body).unwrap();
    replace["replace"] = json!(true);
    assert_eq!(s.post("/v1/mcp/servers", &replace.to_string()).status, 201);
    // Reconnect starts it now and says what it lists.
    let r = s.post("/v1/mcp/servers/notes/reconnect", "").json();
    assert_eq!(r["connected"], true, "{r}");
    assert!(r["tools"].as_u64().unwrap_or(0) > 0, "{r}");
    assert_eq!(s.post("/v1/mcp/servers/nobody/reconnect", "").status, 404);
    // Removed: gone from the list; a second removal is a 404.
    let del = s.request("DELETE", "/v1/mcp/servers/notes", &[], "");
    assert_eq!(del.status, 200, "{}", del.body);
    let listed = s.get("/v1/mcp").json();
    assert!(
        !listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "notes"),
        "{listed}"
    );
    assert_eq!(
        s.request("DELETE", "/v1/mcp/servers/notes", &[], "").status,
        404
    );
    // What is refused, with the reason.
    for (bad, why) in [
        (json!({"name": "a b", "command": "x"}), "name"),
        (json!({"name": "x"}), "command"),
        (json!({"command": "x"}), "name"),
    ] {
        let r = s.post("/v1/mcp/servers", &bad.to_string());
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert!(r.body.contains(why), "{bad}: {}", r.body);
    }
}

#[test]
fn a_task_is_edited_and_paused_through_the_api() {
    let w = World::new("serve-task-patch");
    let s = Server::start(&w, &[]);
    let created = s.post(
        "/v1/tasks",
        &json!({"schedule": "every 30m", "question": "Say hi"}).to_string(),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_u64().unwrap();
    let patch = |body: Value| {
        s.request(
            "PATCH",
            &format!("/v1/tasks/{id}"),
            &[("Content-Type", "application/json")],
            &body.to_string(),
        )
    };
    let paused = patch(json!({"paused": true}));
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["paused"], true);
    assert!(paused.json()["next_run"].is_null(), "{}", paused.body);
    let edited =
        patch(json!({"question": "Say hello", "schedule": "daily 07:30", "allow": "L1"})).json();
    assert_eq!(
        (
            edited["question"].clone(),
            edited["schedule"].clone(),
            edited["allow"].clone(),
            edited["paused"].clone()
        ),
        (
            json!("Say hello"),
            json!("daily 07:30"),
            json!("L1"),
            json!(true)
        ),
        "{edited}"
    );
    let resumed = patch(json!({"paused": false})).json();
    assert!(resumed["next_run"].is_string(), "{resumed}");
    // Refused, and nothing changed.
    for bad in [
        json!({"schedule": "every banana"}),
        json!({"question": "  "}),
        json!({"paused": "yes"}),
        json!({"allow": "L5"}),
    ] {
        assert_eq!(patch(bad.clone()).status, 400, "{bad}");
    }
    assert_eq!(
        s.get(&format!("/v1/tasks/{id}")).json()["question"],
        "Say hello"
    );
    assert_eq!(
        s.request(
            "PATCH",
            "/v1/tasks/999",
            &[("Content-Type", "application/json")],
            "{}"
        )
        .status,
        404
    );
}

#[test]
fn skills_are_created_and_written_through_the_api_and_a_broken_one_is_refused() {
    let w = World::new("serve-skills-edit");
    let s = Server::start(&w, &[]);
    let made = s.post(
        "/v1/skills",
        &json!({"name": "tea-notes", "description": "Use for tea."}).to_string(),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    assert!(made.json()["text"]
        .as_str()
        .unwrap()
        .contains("name: tea-notes"));
    assert_eq!(
        s.post("/v1/skills", &json!({"name": "tea-notes"}).to_string())
            .status,
        409
    );
    assert_eq!(
        s.post("/v1/skills", &json!({"name": "Tea Notes"}).to_string())
            .status,
        400
    );
    let put = |name: &str, text: &str| {
        s.request(
            "PUT",
            &format!("/v1/skills/{name}"),
            &[("Content-Type", "application/json")],
            &json!({ "text": text }).to_string(),
        )
    };
    let good = "---\nname: tea-notes\ndescription: Use when the user asks about tea.\n---\nList the teas.\n";
    assert_eq!(put("tea-notes", good).status, 200);
    let file = w.home.join("skills/tea-notes/SKILL.md");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
    let shown = s.get("/v1/skills/tea-notes").json();
    assert_eq!(shown["text"], good, "{shown}");
    assert_eq!(shown["description"], "Use when the user asks about tea.");
    // What the loader would skip is refused, and the file stays.
    for bad in [
        "no front matter",
        "---\nname: other\ndescription: x\n---\nbody\n",
    ] {
        let r = put("tea-notes", bad);
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), good);
    assert!(matches!(put("../etc", good).status, 400 | 404));
    assert_eq!(put("Bad_Name", good).status, 400);
}

#[test]
fn tea_agents_routes_answer_too_the_profile_switch_and_the_print_export() {
    let w = World::new("serve-tea-routes");
    w.config("[profiles.alt.agent]\nmax_steps = 8\n");
    let s = Server::start(&w, &[]);
    w.fake.push(Reply::text("Oolong is partly oxidised."));
    let r = s.post(
        "/v1/chat/completions",
        &chat_body("Tell me about oolong", json!({})),
    );
    let sid = r.json()["evolve"]["session"].as_str().unwrap().to_string();
    let switched = s.post("/v1/config/switch", &json!({"name": "alt"}).to_string());
    assert_eq!(switched.status, 200, "{}", switched.body);
    assert_eq!(switched.json()["profile"], "alt", "{}", switched.body);
    assert_eq!(
        s.post("/v1/config/switch", &json!({"name": "nope"}).to_string())
            .status,
        404
    );
    let page = s.post("/v1/export/pdf", &json!({"session_id": sid}).to_string());
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(
        page.body.contains("<title>Tell me about oolong</title>") && page.body.contains("@page"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Oolong is partly oxidised."));
    assert_eq!(
        s.post("/v1/export/pdf", &json!({"session": "s-none"}).to_string())
            .status,
        404
    );
    assert_eq!(s.post("/v1/export/pdf", "{}").status, 400);
}

#[test]
fn a_persons_rating_is_the_turns_grade_and_a_thumbs_up_teaches_a_style_note() {
    let w = World::new("serve-rating");
    // Turn 1: a plain answer the evaluator grades low (no style note from it).
    w.fake.push(Reply::text("Paris."));
    w.fake.route(
        support::POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.2, "reason": "terse"}}"#),
    );
    w.run(&["ask", "Capital of France?"]).expect(0);
    let s = Server::start(&w, &[]);
    let sid = s.get("/v1/sessions").json()["data"][0]["id"]
        .as_str()
        .expect("the session")
        .to_string();
    let rate = |n: u64, body: &str| {
        s.request(
            "PUT",
            &format!("/v1/sessions/{sid}/turns/{n}/rating"),
            &[],
            body,
        )
    };
    let rating = |n: u64| {
        s.get(&format!("/v1/sessions/{sid}/messages")).json()["turns"][n.to_string()]["rating"]
            .clone()
    };
    assert_eq!(
        rating(1),
        Value::Null,
        "no grade before the person gives one"
    );

    // 👍: the person's grade, and the style learning a high evaluation starts.
    w.fake.route(
        support::STYLE,
        Reply::text(r#"{"note": "Answers in one word suit this user"}"#),
    );
    let up = rate(1, r#"{"rating": "up"}"#);
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!(up.json()["score"], 1.0);
    assert_eq!(
        up.json()["style_note"],
        "Answers in one word suit this user"
    );
    assert_eq!(rating(1), "up");
    assert_eq!(
        s.get("/v1/memory/style").json()["data"][0]["note"],
        "Answers in one word suit this user"
    );

    // 👎 replaces it, and teaches nothing.
    let down = rate(1, r#"{"rating": "down"}"#);
    assert_eq!(down.status, 200, "{}", down.body);
    assert_eq!(down.json()["score"], 0.0);
    assert_eq!(down.json()["style_note"], Value::Null);
    assert_eq!(rating(1), "down");

    // Not a grade, no such turn.
    assert_eq!(rate(1, r#"{"rating": "great"}"#).status, 400);
    assert_eq!(rate(9, r#"{"rating": "up"}"#).status, 404);
    assert_eq!(rate(0, "{}").status, 400);
    let api = s.get("/openapi.json").json();
    assert!(api["paths"]["/v1/sessions/{id}/turns/{n}/rating"]["put"].is_object());
}

#[test]
fn a_thumbs_up_on_a_turn_that_called_tools_is_kept_but_teaches_no_style() {
    let w = World::new("serve-rating-tools");
    // A turn that read a file: outside text may have shaped its answer.
    std::fs::write(w.workspace().join("notes.txt"), "tea at five").unwrap();
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.txt"}"#));
    w.fake.push(Reply::text("Tea at five."));
    w.run(&["ask", "When is tea?"]).expect(0);
    let s = Server::start(&w, &[]);
    let sid = s.get("/v1/sessions").json()["data"][0]["id"]
        .as_str()
        .expect("the session")
        .to_string();
    let style_calls = w.fake.requests().len();
    let up = s.request(
        "PUT",
        &format!("/v1/sessions/{sid}/turns/1/rating"),
        &[],
        r#"{"rating": "up"}"#,
    );
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!(up.json()["style_note"], Value::Null);
    assert_eq!(
        w.fake.requests().len(),
        style_calls,
        "no model call for a style note"
    );
    assert_eq!(
        s.get(&format!("/v1/sessions/{sid}/messages")).json()["turns"]["1"]["rating"],
        "up"
    );
}
