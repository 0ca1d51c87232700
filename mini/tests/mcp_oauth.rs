//! OAuth for HTTP MCP servers through the built binary, as a user goes through it:
//! `evolve mcp add --url`, a refusal that says to log in, `evolve mcp login` (the
//! browser step done by a client that opens the printed URL and follows the redirect
//! back to evolve's listener), the tools working, the token renewed after it expires,
//! a revoked login said plainly, more scopes asked for when a call needs them, and
//! broken authorization servers and redirects named. The servers are
//! `support::oauth`'s, on loopback; tokens are looked for where they must never be.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::oauth::{browse, Knobs, Metadata, OAuthServer, Page};
use support::*;

/// `evolve mcp login NAME --no-browser ARGS…`; `browser` gets the URL it prints (if
/// it prints one) and plays the browser. Killed after 60 s.
fn login(
    w: &World,
    name: &str,
    args: &[&str],
    browser: impl FnOnce(&str, &std::process::Child) -> Option<Page>,
) -> (Run, Option<Page>) {
    let mut all = vec!["mcp", "login", name, "--no-browser"];
    all.extend_from_slice(args);
    let mut child = w
        .command(&all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn evolve mcp login");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let mut page = None;
    let mut browser = Some(browser);
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                let url = line.trim();
                if url.starts_with("http://") {
                    if let Some(b) = browser.take() {
                        page = b(url, &child);
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("evolve mcp login did not end:\n{seen}");
            }
        }
    }
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    let status = child.wait().expect("wait");
    (
        Run {
            code: status.code().unwrap_or(-1),
            stdout: seen,
            stderr,
        },
        page,
    )
}

/// A world with the OAuth test server added as `remote`, its tool classified L0.
fn world(name: &str, server: &OAuthServer) -> World {
    let w = World::new(name);
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"whoami": "L0"}"#.into()));
    w.run(&["mcp", "add", "remote", "--url", &server.mcp_url()])
        .expect(0);
    w
}

/// Logs in with a browser that allows everything.
fn log_in(w: &World) -> Run {
    let (run, page) = login(w, "remote", &[], |url, _| Some(browse(url)));
    let page = page.expect("the login printed a URL");
    assert_eq!(page.status, 200, "{page:?}\n{}", run.stderr);
    assert!(page.body.contains("logged in"), "{page:?}");
    run.expect(0)
}

fn assert_no_token(server: &OAuthServer, what: &str, text: &str) {
    for token in server.issued() {
        if token.starts_with("at-") || token.starts_with("rt-") || token.starts_with("code-") {
            assert!(!text.contains(&token), "{what} shows {token}:\n{text}");
        }
    }
}

#[test]
fn a_login_is_used_renewed_when_it_expires_and_its_end_is_said() {
    // Renewed 2 s early (a quarter of its life): at 6 s.
    let server = OAuthServer::start(Knobs {
        expires_in: 8,
        ..Knobs::default()
    });
    let mut w = world("oauth-login", &server);

    // Before any login: the refusal says what to do.
    let run = w.run(&["mcp", "tools", "remote"]).expect(1);
    assert!(
        run.stderr.contains("asks for an OAuth login")
            && run.stderr.contains("run `evolve mcp login remote`"),
        "{}",
        run.stderr
    );
    let run = w.run(&["mcp", "list"]).expect(0);
    assert!(run.stdout.contains("[login needed]"), "{}", run.stdout);

    let run = log_in(&w);
    let logged_in = Instant::now();
    assert!(
        run.stdout.contains(
            "logged in to remote (scope: tools:read; client: dynamic client registration)"
        ),
        "{}",
        run.stdout
    );
    let base = server.base();
    let log = server.log();
    assert!(
        log.contains(&format!("authorize scope=tools:read resource={base}/mcp")),
        "{log:?}"
    );
    assert!(
        log.iter()
            .any(|l| l.starts_with("register") && l.contains("refresh_token")),
        "{log:?}"
    );
    assert_eq!(server.count("token authorization_code"), 1, "{log:?}");

    // The tools list and a call carry the token.
    w.env("EVOLVE_LOG", "debug");
    let tools = w.run(&["mcp", "tools", "remote"]).expect(0);
    assert!(tools.stdout.contains("remote__whoami"), "{}", tools.stdout);
    assert_eq!(server.count("token refresh_token"), 0, "{:?}", server.log());
    w.fake.push(tool_call("remote__whoami", "{}"));
    w.fake.push(Reply::Text("You have tools:read.".into()));
    let ask = w
        .run(&["ask", "--json", "Which scopes do I have?"])
        .expect(0);
    let results = support::mcp::tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("scopes: tools:read")),
        "{results:?}"
    );

    // Expired: renewed once with the refresh token before it is sent.
    std::thread::sleep(
        (logged_in + Duration::from_secs(7)).saturating_duration_since(Instant::now()),
    );
    let renewed = w.run(&["mcp", "tools", "remote"]).expect(0);
    assert!(
        renewed.stdout.contains("remote__whoami"),
        "{}",
        renewed.stdout
    );
    assert_eq!(server.count("token refresh_token"), 1, "{:?}", server.log());
    assert!(
        renewed.stderr.contains("its login was renewed"),
        "{}",
        renewed.stderr
    );

    // Nothing shows a token: listings, logs at debug, exports, the config.
    let list = w.run(&["mcp", "list"]).expect(0);
    assert!(list.stdout.contains("logged in"), "{}", list.stdout);
    let json = w.run(&["mcp", "list", "--json"]).expect(0);
    assert_eq!(json.json()[0]["login"], "logged in", "{}", json.stdout);
    let export = w.run(&["memory", "export"]).expect(0);
    let sessions = w.run(&["sessions", "list"]).expect(0);
    let config = w.run(&["config", "show"]).expect(0);
    for (what, text) in [
        ("the login", format!("{}{}", run.stdout, run.stderr)),
        (
            "mcp tools at debug",
            format!("{}{}", tools.stdout, tools.stderr),
        ),
        ("ask at debug", format!("{}{}", ask.stdout, ask.stderr)),
        (
            "the renewal at debug",
            format!("{}{}", renewed.stdout, renewed.stderr),
        ),
        ("mcp list", list.stdout.clone()),
        ("mcp list --json", json.stdout.clone()),
        ("memory export", export.stdout.clone()),
        ("sessions list", sessions.stdout.clone()),
        ("config show", config.stdout.clone()),
    ] {
        assert_no_token(&server, what, &text);
    }
    let model_saw: String = w
        .fake
        .chat_requests()
        .iter()
        .map(|r| r.body.clone())
        .collect();
    assert_no_token(&server, "the model's requests", &model_saw);

    // Revoked at the authorization server: the renewal is refused, and the error says so.
    server.revoke_all();
    let run = w.run(&["mcp", "tools", "remote"]).expect(1);
    assert!(
        run.stderr.contains("no longer takes evolve's login")
            && run.stderr.contains("refused to renew it: invalid_grant")
            && run.stderr.contains("run `evolve mcp login remote`"),
        "{}",
        run.stderr
    );
    assert_no_token(&server, "the revoked error", &run.stderr);
    let list = w.run(&["mcp", "list"]).expect(0);
    assert!(list.stdout.contains("[login needed]"), "{}", list.stdout);

    // Logging in again reuses the client evolve registered (same redirect URI) and works.
    log_in(&w);
    assert_eq!(server.count("register"), 1, "{:?}", server.log());
    w.run(&["mcp", "tools", "remote"]).expect(0);

    // Logged out: the next use asks for a login again.
    let out = w.run(&["mcp", "logout", "remote"]).expect(0);
    assert!(
        out.stdout.contains("logged out of remote"),
        "{}",
        out.stdout
    );
    let run = w.run(&["mcp", "tools", "remote"]).expect(1);
    assert!(
        run.stderr.contains("evolve mcp login remote"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_token_the_server_no_longer_takes_is_renewed_once_and_the_request_sent_again() {
    // The server does not say when its tokens expire: the 401 tells.
    let server = OAuthServer::start(Knobs {
        expires_in: 1,
        tell_expiry: false,
        ..Knobs::default()
    });
    let w = world("oauth-401", &server);
    log_in(&w);
    std::thread::sleep(Duration::from_millis(1500));
    let run = w.run(&["mcp", "tools", "remote"]).expect(0);
    assert!(run.stdout.contains("remote__whoami"), "{}", run.stdout);
    assert_eq!(server.count("token refresh_token"), 1, "{:?}", server.log());
    assert_eq!(
        // Over HTTP the first request is server/discover, then initialize.
        server.count("mcp 401 initialize") + server.count("mcp 401 server/discover"),
        2,
        "before the login, then the expired token: {:?}",
        server.log()
    );

    // Without a refresh token, an expired login is said to be over.
    server.set(|k| k.refresh = false);
    log_in(&w);
    std::thread::sleep(Duration::from_millis(1500));
    let run = w.run(&["mcp", "tools", "remote"]).expect(1);
    assert!(
        run.stderr.contains("no longer takes evolve's login (the token was revoked or has expired, and it cannot be renewed): run `evolve mcp login remote`"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_call_that_needs_more_scopes_asks_for_a_login_with_all_of_them() {
    let server = OAuthServer::start(Knobs {
        call_scope: Some("tools:write".into()),
        ..Knobs::default()
    });
    let w = world("oauth-step-up", &server);
    log_in(&w);
    w.fake.push(tool_call("remote__whoami", "{}"));
    w.fake.push(Reply::Text("It needs more.".into()));
    let ask = w.run(&["ask", "--json", "Who am I?"]).expect(0);
    // The user is told too, not only the model.
    assert!(
        ask.stderr.contains("[warn]")
            && ask
                .stderr
                .contains("run `evolve mcp login remote` to grant it"),
        "{}",
        ask.stderr
    );
    let results = support::mcp::tool_results(&w, 1);
    assert!(
        results.iter().any(|r| r.contains("needs more permission")
            && r.contains("scope \"tools:read tools:write\"")
            && r.contains("run `evolve mcp login remote` to grant it")),
        "{results:?}"
    );

    log_in(&w);
    let log = server.log();
    let last = log
        .iter()
        .rev()
        .find(|l| l.starts_with("authorize"))
        .expect("an authorization");
    assert!(
        last.starts_with("authorize scope=tools:read tools:write "),
        "{log:?}"
    );
    w.fake.push(tool_call("remote__whoami", "{}"));
    w.fake.push(Reply::Text("Now it works.".into()));
    w.run(&["ask", "--json", "Who am I now?"]).expect(0);
    let results = support::mcp::tool_results(&w, 3);
    assert!(
        results
            .iter()
            .any(|r| r.contains("scopes: tools:read tools:write")),
        "{results:?}"
    );
}

#[test]
fn broken_authorization_servers_are_named_and_nothing_is_sent_to_them() {
    let cases: Vec<(Knobs, &str)> = vec![
        (
            Knobs {
                metadata: Metadata::Status(500),
                ..Knobs::default()
            },
            "authorization server metadata at http://127.0.0.1:PORT/.well-known/oauth-authorization-server: HTTP 500",
        ),
        (
            Knobs {
                metadata: Metadata::Broken,
                ..Knobs::default()
            },
            "/.well-known/oauth-authorization-server: it is not a JSON object",
        ),
        (
            Knobs {
                metadata: Metadata::NoPkce,
                ..Knobs::default()
            },
            "it does not offer PKCE with S256",
        ),
        (
            Knobs {
                metadata: Metadata::WrongIssuer,
                ..Knobs::default()
            },
            "it says it is the issuer https://evil.example.com",
        ),
        (
            Knobs {
                prm_resource: Some("https://evil.example.com/mcp".into()),
                ..Knobs::default()
            },
            "it is for the resource https://evil.example.com/mcp",
        ),
    ];
    for (knobs, want) in cases {
        let server = OAuthServer::start(knobs);
        let w = world("oauth-broken", &server);
        let (run, page) = login(&w, "remote", &[], |_, _| panic!("no URL should be printed"));
        assert!(page.is_none());
        let run = run.expect(1);
        let want = want.replace("PORT", &server.port.to_string());
        assert!(
            run.stderr.contains("the login to remote failed") && run.stderr.contains(&want),
            "want {want:?}:\n{}",
            run.stderr
        );
        no_panic(&run);
        assert_eq!(server.count("register"), 0, "{:?}", server.log());
        assert_eq!(server.count("authorize"), 0, "{:?}", server.log());
    }
}

#[test]
fn a_redirect_from_elsewhere_is_refused_and_one_that_never_comes_ends_the_wait() {
    let server = OAuthServer::start(Knobs::default());
    let w = world("oauth-redirect", &server);

    // The authorization server sends back a state this login did not make.
    let (run, page) = login(&w, "remote", &[], |url, _| {
        let forged = url
            .split('&')
            .map(|p| {
                if p.starts_with("state=") {
                    "state=forged"
                } else {
                    p
                }
            })
            .collect::<Vec<_>>()
            .join("&");
        Some(browse(&forged))
    });
    let page = page.expect("a page");
    assert_eq!(page.status, 400, "{page:?}");
    let run = run.expect(1);
    assert!(
        run.stderr.contains("did not come from this login"),
        "{}",
        run.stderr
    );
    assert_eq!(
        server.count("token"),
        0,
        "the code was not exchanged: {:?}",
        server.log()
    );

    // Nobody comes back.
    let started = Instant::now();
    let (run, _) = login(&w, "remote", &["--timeout", "2"], |_, _| None);
    let run = run.expect(1);
    assert!(
        run.stderr.contains("did not come back with a code in time"),
        "{}",
        run.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(20));

    // Ctrl-C while waiting.
    let (run, _) = login(&w, "remote", &[], |_, child| {
        support::send_signal(child.id(), "-INT");
        None
    });
    let run = run.expect(1);
    assert!(
        run.stderr.contains("the login was cancelled"),
        "{}",
        run.stderr
    );

    // A program cannot log in; an HTTP server with its own token is told to drop it.
    w.run(&["mcp", "add", "prog", "--", "true"]).expect(0);
    let run = w.run(&["mcp", "login", "prog"]).expect(1);
    assert!(run.stderr.contains("not an HTTP server"), "{}", run.stderr);
    let mut w = w;
    w.env("TOK", "tok-0123456789");
    w.run(&[
        "mcp",
        "add",
        "own",
        "--url",
        &server.mcp_url(),
        "--bearer-env",
        "TOK",
    ])
    .expect(0);
    let run = w.run(&["mcp", "login", "own"]).expect(1);
    assert!(
        run.stderr.contains("its own Authorization"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_web_ui_logs_in_through_the_api() {
    use support::serve::Server;
    let server = OAuthServer::start(Knobs::default());
    let w = world("oauth-web", &server);
    let s = Server::start(&w, &[]);
    let servers = s.get("/v1/mcp").json();
    let entry = &servers["data"][0];
    assert_eq!(
        (entry["name"].as_str(), entry["can_login"].as_bool()),
        (Some("remote"), Some(true)),
        "{servers}"
    );
    let before = s.post("/v1/mcp/servers/remote/reconnect", "");
    assert_eq!(before.json()["connected"], false, "{}", before.body);
    assert!(
        before.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("run `evolve mcp login remote`")),
        "{}",
        before.body
    );
    assert_eq!(s.get("/v1/mcp").json()["data"][0]["login_needed"], true);

    let started = s.post("/v1/mcp/servers/remote/login", "");
    assert_eq!(started.status, 200, "{}", started.body);
    let doc = started.json();
    assert_eq!(
        s.get("/v1/mcp/servers/remote/login").json()["state"],
        "waiting"
    );
    let page = browse(doc["url"].as_str().expect("a url"));
    assert_eq!(page.status, 200, "{page:?}");
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let st = s.get("/v1/mcp/servers/remote/login").json();
        if st["state"] != "waiting" || Instant::now() > end {
            break st;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["state"], "logged_in", "{status}");
    let after = s.post("/v1/mcp/servers/remote/reconnect", "");
    assert_eq!(
        (
            after.json()["connected"].as_bool(),
            after.json()["tools"].as_u64()
        ),
        (Some(true), Some(1)),
        "{}",
        after.body
    );
    let listed = s.get("/v1/mcp");
    assert_eq!(
        listed.json()["data"][0]["login"],
        "logged in",
        "{}",
        listed.body
    );
    for (what, body) in [
        ("login", &started.body),
        ("status", &status.to_string()),
        ("mcp", &listed.body),
    ] {
        assert_no_token(&server, what, body);
    }

    // A program cannot log in; an unknown server is 404; logging out forgets the tokens.
    assert_eq!(s.post("/v1/mcp/servers/nope/login", "").status, 404);
    let out = s.request("DELETE", "/v1/mcp/servers/remote/login", &[], "");
    assert_eq!(out.json()["logged_out"], true, "{}", out.body);
    assert_eq!(
        s.get("/v1/mcp/servers/remote/login").json()["state"],
        "none"
    );
    let api = s.get("/openapi.json").json();
    for method in ["get", "post", "delete"] {
        assert!(
            api["paths"]["/v1/mcp/servers/{name}/login"][method].is_object(),
            "{method}"
        );
    }
    s.stop();
}

/// The official Python SDK's authorization and resource server (tests/mcp-peers/
/// oauth_server.py), with tokens that live `expires_in` seconds.
struct PythonServer {
    child: std::process::Child,
    port: u16,
}

impl PythonServer {
    fn start(python: &str, expires_in: u64) -> PythonServer {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/mcp-peers/oauth_server.py");
        let mut child = std::process::Command::new(python)
            .arg(&script)
            .args(["--expires-in", &expires_in.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the Python OAuth server");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut said = Vec::new();
        let port = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("the Python server did not start: {said:#?}"));
            if let Some(p) = line.strip_prefix("oauth-server: listening on ") {
                break p.trim().parse().expect("a port");
            }
            said.push(line);
        };
        // Listening is said just before uvicorn binds.
        let end = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "the Python server never listened");
            std::thread::sleep(Duration::from_millis(100));
        }
        PythonServer { child, port }
    }

    fn revoke(&self) {
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        std::io::Write::write_all(
            &mut conn,
            b"POST /test/revoke HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .expect("send");
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        assert!(answer.contains("\"revoked\""), "{answer}");
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_python_sdks_authorization_server_logs_evolve_in_renews_and_revokes() {
    let Some(python) = support::mcp::peer("EVOLVE_TEST_MCP_PYTHON_OAUTH") else {
        return;
    };
    let py = PythonServer::start(&python, 4);
    let mut w = World::new("oauth-python");
    w.fake
        .route(CLASSIFY, Reply::Text(r#"{"whoami": "L0"}"#.into()));
    let url = format!("http://127.0.0.1:{}/mcp", py.port);
    w.run(&["mcp", "add", "py", "--url", &url]).expect(0);
    let run = w.run(&["mcp", "tools", "py"]).expect(1);
    assert!(
        run.stderr.contains("run `evolve mcp login py`"),
        "{}",
        run.stderr
    );

    // The SDK takes only client secrets: evolve registers as a confidential client and
    // authenticates with HTTP Basic.
    let (run, page) = login(&w, "py", &[], |url, _| Some(browse(url)));
    let page = page.expect("a URL");
    assert_eq!(page.status, 200, "{page:?}\n{}", run.stderr);
    let run = run.expect(0);
    assert!(
        run.stdout.contains("logged in to py (scope: mcp:tools"),
        "{}",
        run.stdout
    );
    let logged_in = Instant::now();
    w.env("EVOLVE_LOG", "debug");
    let tools = w.run(&["mcp", "tools", "py"]).expect(0);
    assert!(tools.stdout.contains("py__whoami"), "{}", tools.stdout);
    w.fake.push(tool_call("py__whoami", "{}"));
    w.fake.push(Reply::Text("Hello.".into()));
    w.run(&["ask", "--allow", "L3", "Who am I?"]).expect(0);
    let results = support::mcp::tool_results(&w, 1);
    assert!(
        results
            .iter()
            .any(|r| r.contains("hello from the Python SDK, with a valid token")),
        "{results:?}"
    );

    std::thread::sleep(
        (logged_in + Duration::from_secs(5)).saturating_duration_since(Instant::now()),
    );
    let renewed = w.run(&["mcp", "tools", "py"]).expect(0);
    assert!(
        renewed.stderr.contains("its login was renewed"),
        "{}",
        renewed.stderr
    );
    assert!(!renewed.stderr.contains("Bearer "), "{}", renewed.stderr);

    py.revoke();
    let run = w.run(&["mcp", "tools", "py"]).expect(1);
    assert!(
        run.stderr.contains("no longer takes evolve's login")
            && run.stderr.contains("run `evolve mcp login py`"),
        "{}",
        run.stderr
    );
}
