//! The local API knows who calls it: another account of this machine, a web page, or a
//! command the agent runs reaches `evolve serve`'s port on loopback, and without the
//! token of `serve.token` (0600, in the home no command below L4 can read) every route
//! but the login page answers 401. The model-settings test never hands the stored key to
//! a server other than the saved one. The CLI and the browser (through the printed
//! link, or `evolve open`) carry the token.

mod support;

use serde_json::json;
use support::serve::Server;
use support::{FakeLlm, Reply, World};

/// The credentials a caller without the token might try: none, a wrong Bearer token,
/// the right token in the query string (never read), a cookie with a wrong value.
fn intruders(token: &str) -> Vec<(String, Vec<(&'static str, String)>)> {
    vec![
        ("no token".into(), vec![]),
        (
            "a wrong token".into(),
            vec![("Authorization", format!("Bearer {}x", &token[1..]))],
        ),
        (
            "the token in the query".into(),
            vec![("X-Query", format!("?token={token}"))],
        ),
        (
            "a cookie with a wrong value".into(),
            vec![("Cookie", "evolve_token=0123456789abcdef0123".into())],
        ),
    ]
}

/// `method path` as the intruder `who` would send it: 401, and what it said.
fn refused(
    s: &Server,
    who: &(String, Vec<(&'static str, String)>),
    method: &str,
    path: &str,
    body: &str,
) {
    let (name, headers) = who;
    let mut path = path.to_string();
    let mut sent: Vec<(&str, &str)> = vec![("Content-Type", "application/json")];
    for (k, v) in headers {
        if *k == "X-Query" {
            path.push_str(v);
        } else {
            sent.push((k, v));
        }
    }
    let r = s.anonymous(method, &path, &sent, body);
    assert_eq!(r.status, 401, "{method} {path} with {name}: {}", r.body);
    assert_eq!(r.json()["error"]["type"], "authentication_error");
}

#[test]
fn without_the_token_nobody_adds_a_program_to_run() {
    let w = World::new("api-mcp-add");
    let marker = w.home.join("ran-as-the-serve-user");
    let s = Server::start(&w, &[]);
    let add = json!({
        "name": "pwn",
        "command": "/bin/sh",
        "args": ["-c", format!("touch {}", marker.display())],
    })
    .to_string();
    for who in intruders(&s.token) {
        refused(&s, &who, "POST", "/v1/mcp/servers", &add);
        refused(&s, &who, "POST", "/v1/mcp/servers/pwn/reconnect", "");
        refused(&s, &who, "GET", "/v1/tools", "");
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!marker.exists(), "the program ran");
    let servers = s.get("/v1/mcp");
    assert_eq!(servers.status, 200, "{}", servers.body);
    assert!(!servers.body.contains("pwn"), "{}", servers.body);
    let config = std::fs::read_to_string(w.config_path()).unwrap_or_default();
    assert!(!config.contains("pwn"), "{config}");
    // With the token (the user's own CLI or UI) the same request is served.
    let own = s.post(
        "/v1/mcp/servers",
        &json!({"name": "mine", "command": "/bin/true"}).to_string(),
    );
    assert!(own.status < 300, "{}: {}", own.status, own.body);
}

#[test]
fn without_the_token_nobody_reads_the_memories() {
    let w = World::new("api-memory");
    let s = Server::start(&w, &[]);
    let secret = "my bank PIN is 8641";
    let added = s.post("/v1/memory", &json!({ "content": secret }).to_string());
    assert_eq!(added.status, 201, "{}", added.body);
    let id = added.json()["id"].to_string();
    for who in intruders(&s.token) {
        for path in [
            "/v1/memory".to_string(),
            format!("/v1/memory/{id}"),
            "/v1/memory/style".to_string(),
            "/v1/sessions".to_string(),
            "/v1/config".to_string(),
        ] {
            refused(&s, &who, "GET", &path, "");
        }
        refused(&s, &who, "POST", "/v1/memory", r#"{"content": "planted"}"#);
    }
    let all = s.get("/v1/memory");
    assert!(all.body.contains(secret), "{}", all.body);
    assert!(!all.body.contains("planted"), "{}", all.body);
}

/// The saved model server, with its key in `config.toml`.
fn keyed_world(name: &str, key: &str, saved_url: &str) -> World {
    let mut w = World::new(name);
    w.env_remove("OPENAI_BASE_URL");
    w.config(&format!(
        "[model]\nbase_url = \"{saved_url}\"\napi_key = \"{key}\"\nmax_retries = 0\n"
    ));
    w
}

/// The `Authorization` values `fake` received.
fn keys_received(fake: &FakeLlm) -> Vec<String> {
    fake.requests()
        .iter()
        .flat_map(|r| r.headers.iter())
        .filter(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone())
        .collect()
}

fn model_test(s: &Server, body: serde_json::Value) -> serde_json::Value {
    let r = s.post("/v1/settings/model/test", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn a_model_test_never_sends_the_stored_key_to_another_url() {
    const KEY: &str = "sk-stored-key-0123456789abcdef";
    let probe = World::new("api-key-probe");
    let saved = probe.fake.base_url();
    let w = keyed_world("api-key", KEY, &saved);
    let s = Server::start(&w, &[]);
    // A listener of the caller's own: the same host as the saved server, another port.
    let other = FakeLlm::start();
    other.push(Reply::text("hi"));
    let r = model_test(&s, json!({ "base_url": other.base_url() }));
    assert!(
        r["checks"][0]["ok"] == true,
        "the test reached the other server: {r}"
    );
    let got = keys_received(&other);
    assert!(
        got.iter().all(|k| !k.contains(KEY)),
        "the stored key went to {}: {got:?}",
        other.base_url()
    );
    // The same server spelt another way (`localhost` for 127.0.0.1) is another URL too.
    let spelt = saved.replace("127.0.0.1", "localhost");
    model_test(&s, json!({ "base_url": spelt }));
    assert!(
        keys_received(&probe.fake).iter().all(|k| !k.contains(KEY)),
        "{:?}",
        keys_received(&probe.fake)
    );
    // A key sent with the other URL is the one used there.
    let before = keys_received(&other).len();
    model_test(
        &s,
        json!({ "base_url": other.base_url(), "api_key": "sk-given-here" }),
    );
    let got = keys_received(&other);
    assert!(got.len() > before, "{got:?}");
    assert!(
        got[before..].iter().all(|k| k == "Bearer sk-given-here"),
        "{got:?}"
    );
    // Without the token the test is not run at all.
    let count = other.requests().len();
    for who in intruders(&s.token) {
        let body = json!({ "base_url": other.base_url() }).to_string();
        refused(&s, &who, "POST", "/v1/settings/model/test", &body);
    }
    assert_eq!(other.requests().len(), count, "an intruder's test ran");
    // The saved server, with or without a trailing slash, still gets its key.
    for url in [saved.clone(), format!("{saved}/")] {
        let before = keys_received(&probe.fake).len();
        model_test(&s, json!({ "base_url": url }));
        let got = keys_received(&probe.fake);
        assert!(
            got.len() > before && got[before..].iter().all(|k| k == &format!("Bearer {KEY}")),
            "{url}: {got:?}"
        );
    }
}

#[test]
fn two_host_headers_or_two_credentials_are_refused() {
    let w = World::new("api-dup-heads");
    let s = Server::start(&w, &[]);
    let port = s.port;
    let bearer = s.bearer();
    for (what, extra) in [
        (
            "two Host",
            format!("Host: evil.example\r\nAuthorization: {bearer}\r\n"),
        ),
        (
            "Host twice, same value",
            format!("host: 127.0.0.1:{port}\r\nAuthorization: {bearer}\r\n"),
        ),
        (
            "two Authorization",
            format!("Authorization: {bearer}\r\nAuthorization: Bearer other\r\n"),
        ),
        (
            "two Cookie",
            format!("Authorization: {bearer}\r\nCookie: evolve_token=a\r\nCookie: b=c\r\n"),
        ),
    ] {
        let r = s.raw(
            format!(
                "GET /v1/memory HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}Connection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(r.status, 400, "{what}: {}", r.body);
    }
    // One of each is served.
    assert_eq!(s.get("/v1/memory").status, 200);
}

#[test]
fn evolve_open_prints_the_sign_in_link_of_the_running_serve() {
    let w = World::new("api-open");
    let none = w.run(&["open"]);
    assert_eq!(none.code, 1, "{}", none.stderr);
    assert!(none.stderr.contains("evolve serve"), "{}", none.stderr);
    let s = Server::start(&w, &[]);
    let link = format!("http://127.0.0.1:{}/login#token={}", s.port, s.token);
    // No display here: the link is printed, nothing is started.
    let open = w.run(&["open"]);
    assert_eq!(open.code, 0, "{}", open.stderr);
    assert_eq!(open.stdout.trim(), link);
    let print = w.run(&["open", "--print"]);
    assert_eq!(print.stdout.trim(), link);
    // The CLI talks to the same serve with the same token file.
    w.run(&["memory", "add", "through the lent store"])
        .expect(0);
    assert!(s.get("/v1/memory").body.contains("through the lent store"));
}

/// Runs `script` with bash as user `nobody` (uid 65534): its output, or `None` when
/// this test cannot change user (not root, no setpriv).
fn as_nobody(script: &str) -> Option<String> {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        eprintln!("skipped: not root, cannot run as another uid");
        return None;
    }
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "bash",
            "-c",
            script,
        ])
        .output();
    match out {
        Ok(o) => Some(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => {
            eprintln!("skipped: no setpriv ({e})");
            None
        }
    }
}

/// A bash script sending `method path body` to serve on `port` with
/// `Authorization: Bearer $T` when `$T` is set, printing the status line.
fn bash_request(port: u16, method: &str, path: &str, body: &str) -> String {
    format!(
        r#"exec 3<>/dev/tcp/127.0.0.1/{port} || exit 1
auth=""; [ -n "$T" ] && auth="Authorization: Bearer $T"$'\r\n'
body='{body}'
printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n%sContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' '{method}' '{path}' "$auth" "${{#body}}" "$body" >&3
head -n1 <&3
"#
    )
}

#[test]
fn another_uid_cannot_read_the_token_and_is_refused() {
    let w = World::new("api-other-uid");
    let s = Server::start(&w, &[]);
    let token_file = w.home.join("serve.token");
    let add = json!({"name": "pwn", "command": "/bin/sh", "args": ["-c", "id"]}).to_string();
    let script = format!(
        "T=$(cat {file} 2>&1) && echo \"READ: $T\"; T=\n{}{}",
        bash_request(s.port, "GET", "/v1/memory", ""),
        bash_request(s.port, "POST", "/v1/mcp/servers", &add),
        file = token_file.display(),
    );
    let Some(out) = as_nobody(&script) else {
        return;
    };
    assert!(!out.contains(&s.token), "uid 65534 read the token: {out}");
    assert!(!out.contains("READ:"), "{out}");
    assert_eq!(out.matches(" 401 ").count(), 2, "{out}");
    assert!(!s.get("/v1/mcp").body.contains("pwn"));
}

#[test]
fn a_command_at_l3_can_neither_read_the_token_nor_drive_the_api() {
    let w = World::new("api-l3-command");
    // `make` given its own level by the user: it runs once they say yes (L3).
    w.config("[permission]\ncommand_prefixes = [[\"make\", \"L3\"]]\n");
    if !support::landlock() {
        return;
    }
    let s = Server::start(&w, &[]);
    let marker = w.home.join("escaped");
    let add = json!({
        "name": "esc",
        "command": "/bin/sh",
        "args": ["-c", format!("cat {}/config.toml > {}", w.home.display(), marker.display())],
    })
    .to_string();
    // What a Makefile in a downloaded repository would do once the user says yes.
    let script = format!(
        "T=$(cat {home}/serve.token 2>/dev/null || cat $EVOLVE_HOME/serve.token 2>/dev/null)\n\
         echo \"token: [$T]\"\n{}{}{}",
        bash_request(s.port, "POST", "/v1/mcp/servers", &add),
        bash_request(s.port, "POST", "/v1/mcp/servers/esc/reconnect", ""),
        bash_request(s.port, "GET", "/v1/memory", ""),
        home = w.home.display(),
    );
    std::fs::write(w.workspace().join("build.sh"), script).unwrap();
    std::fs::write(w.workspace().join("Makefile"), "all:\n\t@bash build.sh\n").unwrap();
    w.fake.push(support::tool_call(
        "shell",
        &json!({"command": "make"}).to_string(),
    ));
    w.fake.push(Reply::text("Built."));
    // `ask` goes through the running serve; `--yes` grants the L3 command.
    let run = w.run(&["ask", "--yes", "--json", "build it"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = support::mcp::tool_results(&w, 1);
    assert_eq!(results.len(), 1, "{results:?}");
    let out = &results[0];
    assert!(
        out.contains("token: []"),
        "the command read the token: {out}"
    );
    assert!(!out.contains(&s.token), "{out}");
    assert_eq!(out.matches(" 401 ").count(), 3, "{out}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!marker.exists(), "an MCP server was started");
    assert!(!s.get("/v1/mcp").body.contains("esc"));
}

#[test]
fn evolve_open_hands_a_browser_a_one_time_code_not_the_token() {
    let mut w = World::new("api-open-code");
    // A desktop whose opener writes down what it was given (what `ps` would show).
    let bin = w.home.join("desktop-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let seen = w.home.join("opener-args");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", seen.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    w.env("PATH", &path).env("DISPLAY", ":0");
    let s = Server::start(&w, &[]);
    let open = w.run(&["open"]);
    assert_eq!(open.code, 0, "{}", open.stderr);
    assert!(
        open.stdout.contains(&s.token),
        "the terminal gets the link: {}",
        open.stdout
    );
    let given = std::fs::read_to_string(&seen).expect("the opener ran");
    assert!(
        !given.contains(&s.token),
        "the token on a command line: {given}"
    );
    let prefix = format!("http://127.0.0.1:{}/login#code=", s.port);
    let code = given
        .trim()
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("not a sign-in link: {given}"))
        .to_string();
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let login = |body: &str| s.anonymous("POST", "/login", &form, body);
    // The code signs in once: the cookie it sets is the token's.
    let first = login(&format!("code={code}"));
    assert_eq!(first.header("location"), Some("/"), "{:?}", first.headers);
    let cookie = first.header("set-cookie").expect("a cookie");
    let pair = cookie.split(';').next().unwrap();
    assert_eq!(pair, format!("evolve_token={}", s.token));
    assert_eq!(
        s.request("GET", "/v1/memory", &[("Cookie", pair)], "")
            .status,
        200
    );
    for (what, body) in [
        ("the same code again", format!("code={code}")),
        (
            "a made-up code",
            "code=00112233445566778899aabbccddeeff".to_string(),
        ),
        ("an empty code and no token", "code=".to_string()),
    ] {
        let again = login(&body);
        assert_eq!(again.header("location"), Some("/login?failed=1"), "{what}");
        assert!(again.header("set-cookie").is_none(), "{what}");
    }
    // Only a holder of the token gets a code.
    for who in intruders(&s.token) {
        refused(&s, &who, "POST", "/v1/login/code", "");
    }
    let fresh = s.post("/v1/login/code", "");
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    assert_eq!(fresh.json()["expires_in"], 60);
}
