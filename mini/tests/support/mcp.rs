//! What the MCP tests share: the in-repo test server, the fake model's classification of
//! its tools, and reading what reached the model.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{World, CLASSIFY};
use evolve_fake_llm::Reply;

/// The in-repo test server, built by `cargo test --workspace` (its package has a test).
pub fn test_server() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_evolve"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let bin = dir.join("evolve-mcp-test-server");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build -p evolve-mcp-test-server` (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// A third-party server's path from tests/mcp-peers.sh, or `None` (skip) outside CI.
pub fn peer(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ if std::env::var("CI").is_ok_and(|c| c == "true") => {
            panic!("{var} is not set: .ci/run runs tests/mcp-peers.sh before the tests")
        }
        _ => {
            eprintln!("skipped: {var} is not set (run tests/mcp-peers.sh)");
            None
        }
    }
}

/// The cheap model's classification of the test server's tools, as a model would
/// give it.
pub const LEVELS: &str = r#"{"echo": "L0", "add": "L0", "write_note": "L3", "delete_everything": "L4", "send_message": "L4", "slow": "L0", "fail": "L0", "crash": "L1", "add_tool": "L1", "extra": "L1", "wipe_everything": "L0", "big": "L0", "env": "L2", "cwd": "L2"}"#;

/// `[mcp.servers.t]` running the test server with `extra` lines; the fake model
/// classifies its tools with [`LEVELS`].
pub fn with_test_server(w: &World, args: &[&str], extra: &str) {
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\nargs = [{}]\n{extra}\n",
        test_server().to_string_lossy(),
        args.join(", ")
    ));
}

/// The contents of the tool messages the model received in its `n`-th main request.
pub fn tool_results(w: &World, n: usize) -> Vec<String> {
    let reqs = w.main_requests();
    let req = reqs
        .get(n)
        .unwrap_or_else(|| panic!("no request {n}: {reqs:?}"));
    req["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The tools a request shows the model: offered in full, or named by `more_tools`
/// (which lists the rest as `name — what it does; …`).
pub fn tool_names(req: &serde_json::Value) -> Vec<String> {
    let mut names = Vec::new();
    for t in req["tools"].as_array().into_iter().flatten() {
        let name = t["function"]["name"].as_str().unwrap_or_default();
        if name == "more_tools" {
            let d = t["function"]["description"].as_str().unwrap_or_default();
            let list = d.split_once("): ").map_or("", |(_, l)| l);
            for item in list.split("; ") {
                if let Some((n, _)) = item.split_once(" — ") {
                    names.push(n.trim().to_string());
                }
            }
        } else {
            names.push(name.to_string());
        }
    }
    names
}

/// `[mcp.servers.t]` running `sh -c SCRIPT` (a wrapper around a server).
pub fn with_shell_server(w: &World, script: &str, extra: &str) {
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n{extra}\n"
    ));
}

/// The pids in lines `…=PID` of a file.
pub fn pids_in(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.rsplit('=').next().and_then(|p| p.trim().parse().ok()))
        .collect()
}

/// Ctrl-C to a running `evolve ask` once its tool has run and the model is asked for the
/// answer (the second main-model request); waits for it to end, interrupted.
#[allow(dead_code)] // not every test binary that includes support uses it
pub fn interrupt_while_answering(w: &World, ask: &mut Child) {
    let end = Instant::now() + Duration::from_secs(30);
    while w.main_requests().len() < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    interrupt(ask);
}

/// Ctrl-C to a running `evolve ask`; waits for it to end, interrupted.
pub fn interrupt(ask: &mut Child) {
    super::send_signal(ask.id(), "-INT");
    let status = ask.wait().expect("ask ends");
    assert!(!status.success(), "ask was interrupted: {status:?}");
}

/// Running (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

/// Exited but not reaped by its parent.
pub fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

/// Waits up to 15 s for the process to be gone; `true` if it is.
pub fn gone_soon(pid: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    !alive(pid)
}

/// Kills what a test left behind, with the process group each leads.
pub fn kill(pids: &[u32]) {
    for pid in pids {
        for target in [format!("-{pid}"), pid.to_string()] {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &target])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Waits until the file names at least one pid.
pub fn wait_for_pid(file: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(pid) = pids_in(file).first() {
            return *pid;
        }
        assert!(Instant::now() < end, "the server never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The test server over streamable HTTP on 127.0.0.1.
pub struct HttpServer(pub Child, pub String);

impl HttpServer {
    /// `--http 127.0.0.1:0`, waiting for the URL it prints.
    pub fn start() -> HttpServer {
        HttpServer::start_with(&[])
    }

    /// The same with more arguments (`--count-file FILE`, …).
    pub fn start_with(args: &[&str]) -> HttpServer {
        HttpServer::spawn(args, Stdio::null())
    }

    /// The same, its standard error (what it says of cancelled calls) into `log`.
    #[allow(dead_code)] // not every test binary that includes support uses it
    pub fn start_logged(args: &[&str], log: &Path) -> HttpServer {
        HttpServer::spawn(args, std::fs::File::create(log).expect("server log").into())
    }

    fn spawn(args: &[&str], stderr: Stdio) -> HttpServer {
        let mut child = Command::new(test_server())
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("test server");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).expect("listening line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string();
        HttpServer(child, url)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many classification requests reached the cheap model.
pub fn classifications(w: &World) -> usize {
    w.fake
        .chat_requests()
        .iter()
        .filter(|r| r.body.contains(CLASSIFY))
        .count()
}

/// `evolve mcp tools t --json`: the row of `tool` of server `t`.
pub fn tool_row(w: &World, tool: &str) -> serde_json::Value {
    let doc = w.run(&["mcp", "tools", "t", "--json"]).expect(0).json();
    doc[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["tool"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("{tool} not listed: {doc}"))
}

/// `POST /v1/tools/NAME/run` on serve `api` (from any thread): `{output, is_error, …}`.
pub fn run_tool(
    api: super::serve::Api,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let super::serve::Api { port, token } = api;
    use std::io::{Read, Write};
    let body = serde_json::json!({ "arguments": arguments }).to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to serve");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let head = format!(
        "POST /v1/tools/{name}/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let resp = super::serve::Resp::parse(&out);
    assert_eq!(resp.status, 200, "{name}: {}", resp.body);
    resp.json()
}
