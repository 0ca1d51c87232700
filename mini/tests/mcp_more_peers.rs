//! More third-party MCP servers through the `evolve` binary and the scripted fake model:
//! npm's @modelcontextprotocol/server-memory and server-sequential-thinking, PyPI's
//! mcp-server-fetch and mcp-server-git (installed by `tests/mcp-peers.sh`, which exports
//! `EVOLVE_TEST_MCP_MEMORY`, `_THINKING`, `_FETCH` and `_GIT`; without them the tests
//! skip with a message, and fail under `CI=true`).
//!
//! Each test adds the server with `evolve mcp add`, lists its tools with `evolve mcp
//! tools` (with the levels evolve gives them from the server's annotations and the
//! classifier), and has the model call real tools in `evolve ask`: what the server
//! answered must be what the model receives in its next request.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use support::mcp::*;
use support::*;

/// Generous for a loaded machine: one tool call may take this long.
const TIMEOUT: &str = "120";

/// The tools `evolve mcp tools NAME --json` lists for the server, as (model name, level).
fn listed_tools(w: &World, server: &str) -> Vec<(String, String)> {
    let run = w.run(&["mcp", "tools", server, "--json"]).expect(0);
    let listing = run.json();
    let entry = listing
        .as_array()
        .and_then(|l| l.iter().find(|s| s["server"] == server))
        .unwrap_or_else(|| panic!("{server} not listed: {listing}"));
    assert_eq!(entry["ok"], true, "{entry}");
    entry["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["level"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The level `evolve mcp tools` gave `tool`, failing when it is not listed.
fn level_of<'a>(tools: &'a [(String, String)], tool: &str) -> &'a str {
    tools
        .iter()
        .find(|(n, _)| n == tool)
        .map(|(_, l)| l.as_str())
        .unwrap_or_else(|| panic!("{tool} not listed: {tools:?}"))
}

/// The protocol version the server answered `initialize` with, from evolve's log line
/// `MCP server "NAME" connected: SERVER VERSION (protocol P)` (printed for the record);
/// fails without one or with a version evolve does not speak.
fn protocol(run: &Run, server: &str) -> String {
    let needle = format!("MCP server {server:?} connected: ");
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no {needle:?} in the log:\n{}", run.stderr));
    let version = line
        .rsplit_once("(protocol ")
        .and_then(|(_, p)| p.split([')', ',']).next())
        .unwrap_or_else(|| panic!("no protocol in {line:?}"))
        .to_string();
    eprintln!("{line}");
    assert!(
        ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"].contains(&version.as_str()),
        "{line}"
    );
    version
}

/// The model names of the tools listed, sorted.
fn names(tools: &[(String, String)]) -> Vec<&str> {
    let mut names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    names
}

/// The tool results the model received in the last main request of the run, in order.
fn last_results(w: &World) -> Vec<String> {
    tool_results(w, w.main_requests().len() - 1)
}

/// The JSON object in a tool result (the servers answer JSON text).
fn json_in(result: &str) -> serde_json::Value {
    let start = result
        .find('{')
        .unwrap_or_else(|| panic!("no JSON in {result:?}"));
    let end = result.rfind('}').expect("JSON ends") + 1;
    serde_json::from_str(&result[start..end])
        .unwrap_or_else(|e| panic!("not JSON ({e}): {result:?}"))
}

/// server-memory (npm): `create_entities` has readOnlyHint false (L3: refused headless,
/// run with `--yes`), `read_graph` is read-only (L2), the deletes are destructive (L4).
/// The entity the model created is in the graph file MEMORY_FILE_PATH names and comes back
/// from `read_graph`.
#[test]
fn memory_server_creates_an_entity_and_reads_the_graph_back() {
    let Some(memory) = peer("EVOLVE_TEST_MCP_MEMORY") else {
        return;
    };
    let w = World::new("mcp-memory");
    let graph = w.home.join("graph").join("memory.jsonl");
    std::fs::create_dir_all(graph.parent().unwrap()).unwrap();
    let env = format!("MEMORY_FILE_PATH={}", graph.to_string_lossy());
    w.run(&[
        "mcp",
        "add",
        "memory",
        "--timeout",
        TIMEOUT,
        "--env",
        &env,
        "--",
        "node",
        &memory,
    ])
    .expect(0);
    // The classifier's answer; the annotations' floors may raise it.
    w.fake.quiet_with(
        CLASSIFY,
        Reply::Text(
            r#"{"create_entities": "L3", "create_relations": "L3", "add_observations": "L3",
                "delete_entities": "L3", "delete_observations": "L3", "delete_relations": "L3",
                "read_graph": "L1", "search_nodes": "L1", "open_nodes": "L1"}"#
                .into(),
        ),
    );
    let tools = listed_tools(&w, "memory");
    assert_eq!(
        names(&tools),
        [
            "memory__add_observations",
            "memory__create_entities",
            "memory__create_relations",
            "memory__delete_entities",
            "memory__delete_observations",
            "memory__delete_relations",
            "memory__open_nodes",
            "memory__read_graph",
            "memory__search_nodes",
        ]
    );
    assert_eq!(level_of(&tools, "memory__create_entities"), "L3");
    assert_eq!(
        level_of(&tools, "memory__read_graph"),
        "L2",
        "read-only floor"
    );
    assert_eq!(level_of(&tools, "memory__search_nodes"), "L2");
    assert_eq!(
        level_of(&tools, "memory__delete_entities"),
        "L4",
        "destructive"
    );

    let create = serde_json::json!({"entities": [{
        "name": "Evolve test entity",
        "entityType": "project",
        "observations": ["created through evolve by mcp_more_peers"],
    }]})
    .to_string();
    // Headless without --yes the L3 call is refused and nothing is written.
    w.fake.push(tool_call("memory__create_entities", &create));
    w.fake.push(Reply::Text("Could not.".into()));
    let run = w.run(&["ask", "--json", "remember the project"]).expect(4);
    assert_eq!(run.json()["tools"][0]["level"], "L3", "{}", run.stdout);
    assert_eq!(run.json()["tools"][0]["ran"], false, "{}", run.stdout);
    let refused = tool_results(&w, 1);
    assert!(
        refused.iter().any(|r| r.contains("L3")),
        "the model is told it was not run: {refused:?}"
    );
    assert!(!graph.exists(), "a refused call wrote the graph");

    w.fake.push(tool_call("memory__create_entities", &create));
    w.fake.push(tool_call("memory__read_graph", "{}"));
    w.fake.push(Reply::Text("Remembered.".into()));
    let run = w
        .run(&["ask", "--yes", "--json", "remember the project"])
        .expect(0);
    protocol(&run, "memory");
    let record = run.json();
    assert_eq!(record["tools"][0]["name"], "memory__create_entities");
    assert_eq!(record["tools"][0]["ran"], true, "{record}");
    assert_eq!(record["tools"][1]["name"], "memory__read_graph");
    assert_eq!(record["tools"][1]["level"], "L2", "{record}");

    let results = last_results(&w);
    assert_eq!(results.len(), 2, "{results:?}");
    let created = json_in(&results[0]);
    assert!(
        created.to_string().contains("Evolve test entity"),
        "create_entities answered the new entity: {results:?}"
    );
    let read = json_in(&results[1]);
    let entities = read["entities"].as_array().expect("entities");
    assert_eq!(entities.len(), 1, "{read}");
    assert_eq!(entities[0]["name"], "Evolve test entity");
    assert_eq!(entities[0]["entityType"], "project");
    assert_eq!(
        entities[0]["observations"][0],
        "created through evolve by mcp_more_peers"
    );

    // The server kept it where MEMORY_FILE_PATH said, one JSON line per entity.
    let text = std::fs::read_to_string(&graph).expect("the graph file");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["type"], "entity");
    assert_eq!(lines[0]["name"], "Evolve test entity");
    assert_eq!(
        lines[0]["observations"],
        serde_json::json!(["created through evolve by mcp_more_peers"])
    );
}

/// server-sequential-thinking (npm): one read-only tool (L2, runs headless). Two thoughts
/// in one turn reach the same server process: the second, numbered past the total,
/// comes back with the total raised to it and a history of two.
#[test]
fn sequential_thinking_counts_the_thoughts_of_a_turn() {
    let Some(thinking) = peer("EVOLVE_TEST_MCP_THINKING") else {
        return;
    };
    let w = World::new("mcp-thinking");
    w.run(&[
        "mcp",
        "add",
        "thinking",
        "--timeout",
        TIMEOUT,
        "--",
        "node",
        &thinking,
    ])
    .expect(0);
    w.fake.quiet_with(
        CLASSIFY,
        Reply::Text(r#"{"sequentialthinking": "L1"}"#.into()),
    );
    let tools = listed_tools(&w, "thinking");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(level_of(&tools, "thinking__sequentialthinking"), "L2");

    w.fake.push(tool_call(
        "thinking__sequentialthinking",
        r#"{"thought": "Split the problem in two.", "nextThoughtNeeded": true,
            "thoughtNumber": 1, "totalThoughts": 2}"#,
    ));
    w.fake.push(tool_call(
        "thinking__sequentialthinking",
        r#"{"thought": "One more step than planned.", "nextThoughtNeeded": false,
            "thoughtNumber": 3, "totalThoughts": 2}"#,
    ));
    w.fake.push(Reply::Text("Thought it through.".into()));
    let run = w.run(&["ask", "--json", "think about it"]).expect(0);
    protocol(&run, "thinking");
    let record = run.json();
    for i in 0..2 {
        assert_eq!(record["tools"][i]["ran"], true, "{record}");
        assert_eq!(record["tools"][i]["level"], "L2", "{record}");
    }
    let results = last_results(&w);
    assert_eq!(results.len(), 2, "{results:?}");
    let first = json_in(&results[0]);
    assert_eq!(first["thoughtNumber"], 1, "{first}");
    assert_eq!(first["totalThoughts"], 2, "{first}");
    assert_eq!(first["nextThoughtNeeded"], true, "{first}");
    assert_eq!(first["thoughtHistoryLength"], 1, "{first}");
    let second = json_in(&results[1]);
    assert_eq!(second["thoughtNumber"], 3, "{second}");
    assert_eq!(
        second["totalThoughts"], 3,
        "raised to the thought's number: {second}"
    );
    assert_eq!(second["nextThoughtNeeded"], false, "{second}");
    assert_eq!(second["thoughtHistoryLength"], 2, "{second}");
}

/// Runs `git ARGS` in `dir` with a fixed identity and no signing; fails on an error.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=Evolve Test",
            "-c",
            "user.email=evolve-test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// mcp-server-git (PyPI), confined with `--repository` to a repository the test makes:
/// `git_log` and `git_status` are read-only (L2, headless), the writes L3 and
/// `git_reset` destructive (L4). The log names the test's commit and the status its
/// untracked file; a repository outside `--repository` is refused by the server.
#[test]
fn git_server_reads_the_log_and_status_of_a_fresh_repository() {
    let Some(server) = peer("EVOLVE_TEST_MCP_GIT") else {
        return;
    };
    let w = World::new("mcp-git");
    let repo = w.home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let repo = repo.canonicalize().unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    git(&repo, &["add", "README.md"]);
    git(
        &repo,
        &["commit", "-q", "-m", "First commit made by mcp_more_peers"],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("untracked-by-evolve.txt"), "new\n").unwrap();
    // Two more repositories: one outside evolve's workspace and the server's roots, one
    // in the workspace (evolve lets a call name it) but outside --repository.
    let elsewhere = w.home.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    git(&elsewhere, &["init", "-q"]);
    let in_workspace = w.workspace().join("other-repo");
    std::fs::create_dir_all(&in_workspace).unwrap();
    git(&in_workspace, &["init", "-q"]);

    let repo_s = repo.to_string_lossy().into_owned();
    w.run(&[
        "mcp",
        "add",
        "git",
        "--timeout",
        TIMEOUT,
        "--",
        &server,
        "--repository",
        &repo_s,
    ])
    .expect(0);
    w.fake.quiet_with(
        CLASSIFY,
        Reply::Text(
            r#"{"git_status": "L1", "git_diff_unstaged": "L1", "git_diff_staged": "L1",
                "git_diff": "L1", "git_commit": "L3", "git_add": "L3", "git_reset": "L3",
                "git_log": "L1", "git_create_branch": "L3", "git_checkout": "L3",
                "git_show": "L1", "git_branch": "L1"}"#
                .into(),
        ),
    );
    let tools = listed_tools(&w, "git");
    assert_eq!(
        names(&tools),
        [
            "git__git_add",
            "git__git_branch",
            "git__git_checkout",
            "git__git_commit",
            "git__git_create_branch",
            "git__git_diff",
            "git__git_diff_staged",
            "git__git_diff_unstaged",
            "git__git_log",
            "git__git_reset",
            "git__git_show",
            "git__git_status",
        ]
    );
    assert_eq!(level_of(&tools, "git__git_log"), "L2");
    assert_eq!(level_of(&tools, "git__git_status"), "L2");
    assert_eq!(level_of(&tools, "git__git_commit"), "L3");
    assert_eq!(level_of(&tools, "git__git_reset"), "L4", "destructive");

    let at = |p: &Path| serde_json::json!({"repo_path": p}).to_string();
    w.fake.push(tool_call("git__git_log", &at(&repo)));
    w.fake.push(tool_call("git__git_status", &at(&repo)));
    w.fake.push(tool_call("git__git_log", &at(&elsewhere)));
    w.fake.push(tool_call("git__git_log", &at(&in_workspace)));
    w.fake.push(Reply::Text("One commit.".into()));
    let run = w.run(&["ask", "--json", "what happened here?"]).expect(0);
    protocol(&run, "git");
    let record = run.json();
    assert_eq!(record["tools"][0]["ran"], true, "{record}");
    assert_eq!(record["tools"][0]["level"], "L2", "{record}");
    // A path outside the workspace and the server's roots: evolve refuses it itself.
    assert_eq!(record["tools"][2]["level"], "L5", "{record}");
    assert_eq!(record["tools"][2]["ran"], false, "{record}");
    // In the workspace: evolve runs it, the server refuses it.
    assert_eq!(record["tools"][3]["ran"], true, "{record}");
    assert_eq!(record["tools"][3]["is_error"], true, "{record}");

    let results = last_results(&w);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].contains("First commit made by mcp_more_peers") && results[0].contains(&head),
        "git_log names the commit {head}: {:?}",
        results[0]
    );
    assert!(
        results[1].contains("untracked-by-evolve.txt"),
        "git_status shows the untracked file: {:?}",
        results[1]
    );
    assert!(
        results[2].contains("refused") && results[2].contains("L5"),
        "evolve refused the call: {:?}",
        results[2]
    );
    assert!(
        results[3].contains("outside the allowed repository"),
        "the server refuses a repository outside --repository: {:?}",
        results[3]
    );
}

/// A tiny HTTP server on 127.0.0.1: `/robots.txt` disallows `/private`, `/page` is an
/// HTML article, anything else 404. It records each request's path and User-Agent.
struct Site {
    port: u16,
    seen: Arc<Mutex<Vec<(String, String)>>>,
}

const PAGE: &str = "<!DOCTYPE html><html><head><title>Evolve fetch test</title></head><body>\
<article><h1>Loopback page</h1><p>The fetch server read <strong>this paragraph</strong> \
from a test server on 127.0.0.1, for evolve.</p><ul><li>first item</li><li>second item</li>\
</ul></article></body></html>";

impl Site {
    fn start() -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(30)));
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut agent = String::new();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                    if let Some((k, v)) = line.split_once(':') {
                        if k.eq_ignore_ascii_case("user-agent") {
                            agent = v.trim().to_string();
                        }
                    }
                    line.clear();
                }
                log.lock().unwrap().push((path.clone(), agent));
                let (status, kind, body) = match path.as_str() {
                    "/robots.txt" => (
                        "200 OK",
                        "text/plain",
                        "User-agent: *\nDisallow: /private\n",
                    ),
                    "/page" | "/private" => ("200 OK", "text/html; charset=utf-8", PAGE),
                    _ => ("404 Not Found", "text/plain", "not here\n"),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.flush();
            }
        });
        Site { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn paths(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }
}

/// mcp-server-fetch (PyPI) against a page on 127.0.0.1. By default it refuses private
/// and loopback addresses (a tool error, nothing requested); started with
/// `--allow-private-ips` it honours the site's robots.txt (a disallowed page is a tool
/// error) and returns an allowed page's HTML as markdown. `fetch` is read-only: L2.
#[test]
fn fetch_server_reads_a_loopback_page_as_markdown_only_when_allowed() {
    let Some(server) = peer("EVOLVE_TEST_MCP_FETCH") else {
        return;
    };
    let site = Site::start();
    let w = World::new("mcp-fetch");
    w.run(&[
        "mcp",
        "add",
        "fetch",
        "--timeout",
        TIMEOUT,
        "--",
        &server,
        "--allow-private-ips",
    ])
    .expect(0);
    w.run(&["mcp", "add", "strict", "--timeout", TIMEOUT, "--", &server])
        .expect(0);
    w.fake
        .quiet_with(CLASSIFY, Reply::Text(r#"{"fetch": "L1"}"#.into()));
    for name in ["fetch", "strict"] {
        let tools = listed_tools(&w, name);
        assert_eq!(tools.len(), 1, "{tools:?}");
        assert_eq!(level_of(&tools, &format!("{name}__fetch")), "L2");
    }

    let get = |url: String| serde_json::json!({ "url": url }).to_string();
    w.fake
        .push(tool_call("fetch__fetch", &get(site.url("/page"))));
    w.fake
        .push(tool_call("fetch__fetch", &get(site.url("/private"))));
    w.fake
        .push(tool_call("strict__fetch", &get(site.url("/page"))));
    w.fake.push(Reply::Text("Read it.".into()));
    let question = format!("read {} and {}", site.url("/page"), site.url("/private"));
    let run = w.run(&["ask", "--json", &question]).expect(0);
    protocol(&run, "fetch");
    let record = run.json();
    assert_eq!(record["tools"][0]["ran"], true, "{record}");
    assert_eq!(record["tools"][0]["level"], "L2", "{record}");
    assert_ne!(record["tools"][0]["is_error"], true, "{record}");
    assert_eq!(record["tools"][1]["is_error"], true, "{record}");
    assert_eq!(record["tools"][2]["is_error"], true, "{record}");

    let results = last_results(&w);
    assert_eq!(results.len(), 3, "{results:?}");
    let page = &results[0];
    assert!(
        page.contains(&format!("Contents of {}", site.url("/page"))),
        "{page:?}"
    );
    // readabilipy + markdownify.
    assert!(
        page.contains("## Loopback page"),
        "a markdown heading: {page:?}"
    );
    assert!(
        page.contains("**this paragraph**"),
        "bold as markdown: {page:?}"
    );
    assert!(
        page.contains("* first item") || page.contains("- first item"),
        "a markdown list: {page:?}"
    );
    assert!(!page.contains("<p>"), "no HTML left: {page:?}");
    assert!(
        results[1].contains("robots.txt"),
        "/private is disallowed by robots.txt: {:?}",
        results[1]
    );
    assert!(
        results[2].contains("not a public address") && results[2].contains("--allow-private-ips"),
        "loopback refused by default: {:?}",
        results[2]
    );
    // robots.txt before each autonomous fetch; the refused ones reach nothing more.
    assert_eq!(
        site.paths(),
        ["/robots.txt", "/page", "/robots.txt"],
        "what the site was asked"
    );
    let agents: Vec<String> = site
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, a)| a.clone())
        .collect();
    assert!(
        agents.iter().all(|a| a.contains("ModelContextProtocol")),
        "{agents:?}"
    );
}
