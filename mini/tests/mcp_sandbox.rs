//! Stdio MCP servers the user confines (`sandbox = "workspace"` / `"read-only"`): the
//! kernel holds them to the workspace, their own program files and a folder of their own,
//! whatever they try; with `sandbox = "none"` (the default) they run as before. Through
//! `evolve`, with the in-repo rmcp test server and npm's server-filesystem.

mod support;

use serde_json::json;
use support::mcp::{peer, test_server, tool_results};
use support::*;

/// The cheap model's levels for the servers' tools.
const LEVELS: &str = r#"{"write_note": "L3", "env": "L2", "cwd": "L2", "echo": "L1", "read_text_file": "L2", "write_file": "L3", "create_directory": "L3", "list_directory": "L2"}"#;

/// In `config.toml`: a read of the config shows it.
const MARKER: &str = "marker-mcp-sandbox-0451";

/// `[mcp.servers.t]` running the test server with `args`, confined by `sandbox`.
fn test_server_world(name: &str, args: &[String], sandbox: &str) -> World {
    let w = World::new(name);
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    w.config(&format!(
        "# {MARKER}\n[mcp.servers.t]\ncommand = {:?}\nargs = [{}]\nsandbox = {sandbox:?}\n",
        test_server().to_string_lossy(),
        args.join(", ")
    ));
    w
}

/// `ask --yes --json` with these calls in one reply; what each returned.
fn ask(w: &World, calls: &[(&str, serde_json::Value)]) -> (Run, Vec<String>) {
    w.fake.push(Reply::ToolCalls(
        calls
            .iter()
            .map(|(n, a)| (n.to_string(), a.to_string()))
            .collect(),
    ));
    w.fake.push(Reply::text("Done."));
    let run = w.run(&[
        "ask",
        "--yes",
        "--json",
        "go: env OPENAI_API_KEY SOME_TOKEN EVOLVE_HOME SERVER_OWN HOME, cwd",
    ]);
    assert!(
        run.code == 0 || run.code == 4,
        "{}: {}",
        run.code,
        run.stderr
    );
    let results = tool_results(w, 1);
    (run, results)
}

#[test]
fn a_confined_server_writes_the_workspace_and_nothing_outside() {
    if !landlock() {
        return;
    }
    let probe = World::new("mcp-sandbox-probe");
    let outside = probe.home.join("outside-notes");
    let w = test_server_world(
        "mcp-sandbox-ws",
        &["--notes".into(), outside.display().to_string()],
        "workspace",
    );
    let (_, results) = ask(&w, &[("t__write_note", json!({"name": "a", "text": "hi"}))]);
    assert!(results[0].contains("cannot write"), "{results:?}");
    assert!(!outside.exists(), "the server wrote outside the workspace");
    // Nor into Evolve's home, where its own folder is.
    assert!(!w.home.join("outside-notes").exists());
}

#[test]
fn workspace_and_read_only_servers_write_where_they_may() {
    if !landlock() {
        return;
    }
    for (sandbox, writes) in [("workspace", true), ("read-only", false), ("none", true)] {
        let w = World::new(&format!("mcp-sandbox-{sandbox}"));
        let notes = w.workspace().join("notes");
        w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
        w.config(&format!(
            "[mcp.servers.t]\ncommand = {:?}\nargs = [\"--notes\", {:?}]\nsandbox = {sandbox:?}\n",
            test_server().to_string_lossy(),
            notes.display().to_string()
        ));
        let (run, results) = ask(&w, &[("t__write_note", json!({"name": "a", "text": "hi"}))]);
        assert_eq!(
            run.json()["tools"][0]["ran"],
            true,
            "{sandbox}: {}",
            run.stdout
        );
        assert_eq!(notes.join("a").exists(), writes, "{sandbox}: {results:?}");
        if !writes {
            assert!(
                results[0].contains("cannot write"),
                "{sandbox}: {results:?}"
            );
        }
    }
}

#[test]
fn a_confined_server_sees_none_of_evolves_environment() {
    if !landlock() {
        return;
    }
    const KEY: &str = "sk-mcpSandboxKEY0123456789abcdef";
    let mut w = World::new("mcp-sandbox-env");
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\nsandbox = \"workspace\"\nenv = {{ SERVER_OWN = \"given\" }}\n",
        test_server().to_string_lossy(),
    ));
    w.env("OPENAI_API_KEY", KEY)
        .env("SOME_TOKEN", "tok-should-stay-home");
    let (_, results) = ask(
        &w,
        &[
            ("t__env", json!({"name": "OPENAI_API_KEY"})),
            ("t__env", json!({"name": "SOME_TOKEN"})),
            ("t__env", json!({"name": "EVOLVE_HOME"})),
            ("t__env", json!({"name": "SERVER_OWN"})),
            ("t__env", json!({"name": "HOME"})),
            ("t__cwd", json!({})),
        ],
    );
    assert!(results[0].contains("not set"), "{results:?}");
    assert!(results[1].contains("not set"), "{results:?}");
    assert!(results[2].contains("not set"), "{results:?}");
    assert_eq!(results[3], "given", "its own configured variables pass");
    let home = w.home.join("sandbox/t/home");
    assert!(
        results[4].contains(&std::fs::canonicalize(&home).unwrap().display().to_string()),
        "{results:?}"
    );
    let ws = std::fs::canonicalize(w.workspace()).unwrap();
    assert_eq!(
        results[5],
        ws.display().to_string(),
        "it starts in the workspace"
    );
}

#[test]
fn server_filesystem_confined_to_the_workspace() {
    let (Some(node), Some(fs)) = (
        peer("EVOLVE_TEST_MCP_NODE"),
        peer("EVOLVE_TEST_MCP_FILESYSTEM"),
    ) else {
        return;
    };
    if !landlock() {
        return;
    }
    let w = World::new("mcp-sandbox-fs");
    let ws = std::fs::canonicalize(w.workspace()).unwrap();
    std::fs::write(ws.join("hello.txt"), "hello from the workspace\n").unwrap();
    std::fs::write(w.home.join("notes.md"), "notes in the home\n").unwrap();
    let home = std::fs::canonicalize(&w.home).unwrap();
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    // Told it may use the workspace and Evolve's home (a root): the kernel still keeps
    // the config and the store out, and with read-only, writes.
    for sandbox in ["workspace", "read-only"] {
        w.config(&format!(
            "# {MARKER}\n[mcp.servers.fs]\ncommand = {node:?}\nargs = [{fs:?}, {:?}, {:?}]\nsandbox = {sandbox:?}\n",
            ws.display().to_string(),
            home.display().to_string()
        ));
        let out = ws.join(format!("made-{sandbox}"));
        let (_, results) = ask(
            &w,
            &[
                ("fs__read_text_file", json!({"path": ws.join("hello.txt")})),
                ("fs__read_text_file", json!({"path": home.join("notes.md")})),
                (
                    "fs__read_text_file",
                    json!({"path": home.join("config.toml")}),
                ),
                // write_file says destructiveHint (L4, never headless): a new folder.
                ("fs__create_directory", json!({"path": out})),
            ],
        );
        assert!(
            results[0].contains("hello from the workspace"),
            "{sandbox}: {results:?}"
        );
        assert!(
            results[1].contains("notes in the home"),
            "{sandbox}: {results:?}"
        );
        assert!(!results[2].contains(MARKER), "{sandbox}: {results:?}");
        assert_eq!(
            out.exists(),
            sandbox == "workspace",
            "{sandbox}: {results:?}"
        );
    }
}

/// PyPI's mcp-server-time from its virtual environment: the venv and the Python it was
/// made from are its program files; confined read-only, it answers.
#[test]
fn a_python_server_from_a_venv_runs_confined() {
    let Some(bin) = peer("EVOLVE_TEST_MCP_TIME") else {
        return;
    };
    if !landlock() {
        return;
    }
    let w = World::new("mcp-sandbox-py");
    w.fake.route(
        CLASSIFY,
        Reply::Text(r#"{"get_current_time": "L1", "convert_time": "L1"}"#.into()),
    );
    w.config(&format!(
        "[mcp.servers.time]\ncommand = {bin:?}\nargs = [\"--local-timezone\", \"UTC\"]\nsandbox = \"read-only\"\n"
    ));
    let (run, results) = ask(
        &w,
        &[("time__get_current_time", json!({"timezone": "UTC"}))],
    );
    assert_eq!(run.json()["tools"][0]["ran"], true, "{}", run.stdout);
    assert!(results[0].contains("datetime"), "{results:?}");
}

#[test]
fn without_landlock_a_confined_server_is_not_started() {
    let mut w = World::new("mcp-sandbox-off");
    w.fake.route(CLASSIFY, Reply::Text(LEVELS.into()));
    w.config(&format!(
        "[mcp.servers.t]\ncommand = {:?}\nsandbox = \"workspace\"\n",
        test_server().to_string_lossy()
    ));
    w.env("EVOLVE_LANDLOCK", "off");
    let run = w.run(&["mcp", "tools", "t"]);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("not started") && all.contains("sandbox = \"none\""),
        "{all}"
    );
}

#[test]
fn the_sandbox_setting_is_offered_and_checked() {
    let w = World::new("mcp-sandbox-cli");
    let server = test_server().to_string_lossy().into_owned();
    let bad = w.run(&["mcp", "add", "x", "--sandbox", "tight", "--", &server]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("workspace, read-only, none"),
        "{}",
        bad.stderr
    );
    let http = w.run(&[
        "mcp",
        "add",
        "h",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--sandbox",
        "workspace",
    ]);
    assert_eq!(http.code, 2, "{}", http.stderr);
    w.run(&["mcp", "add", "x", "--sandbox", "read-only", "--", &server])
        .expect(0);
    let list = w.run(&["mcp", "list"]).expect(0);
    assert!(
        list.stdout.contains("sandbox: read-only"),
        "{}",
        list.stdout
    );
    let json = w.run(&["mcp", "list", "--json"]).expect(0).stdout;
    assert!(json.contains("\"sandbox\""), "{json}");

    // import: --sandbox for every program of the file; a server's own key wins.
    let file = w.home.join("servers.json");
    std::fs::write(
        &file,
        json!({"mcpServers": {
            "a": {"command": server},
            "b": {"command": server, "sandbox": "none"},
            "c": {"url": "http://127.0.0.1:9/mcp"}
        }})
        .to_string(),
    )
    .unwrap();
    w.run(&[
        "mcp",
        "import",
        file.to_str().unwrap(),
        "--sandbox",
        "workspace",
    ])
    .expect(0);
    let list = w.run(&["mcp", "list"]).expect(0).stdout;
    let line = |name: &str| {
        list.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("a").contains("sandbox: workspace"), "{list}");
    assert!(!line("b").contains("sandbox"), "{list}");
    assert!(!line("c").contains("sandbox"), "{list}");

    // config.toml: a bad word, or a sandbox on an HTTP server, is a config error.
    for bad in [
        format!("[mcp.servers.t]\ncommand = {server:?}\nsandbox = \"tight\"\n"),
        "[mcp.servers.t]\nurl = \"http://127.0.0.1:9/mcp\"\nsandbox = \"workspace\"\n".to_string(),
    ] {
        w.config(&bad);
        let check = w.run(&["config", "check"]);
        assert_eq!(check.code, 2, "{bad}: {}", check.stderr);
        assert!(check.stderr.contains("sandbox"), "{}", check.stderr);
    }
}
