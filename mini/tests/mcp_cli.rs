//! `evolve mcp add|list|rm|import|level|enable|disable|tools` through the built binary,
//! as a user runs them, with no MCP server running: what is kept, what is shown (never a
//! secret), and the mistakes each command catches, with their exit codes (2: usage or
//! configuration, 1: anything else).

mod support;

use support::World;

/// The names in `mcp list --json`.
fn names(w: &World) -> Vec<String> {
    let run = w.run(&["mcp", "list", "--json"]).expect(0);
    run.json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| s["name"].as_str().expect("a name").to_string())
        .collect()
}

#[test]
fn added_servers_are_listed_with_secrets_masked_and_removed() {
    const TOKEN: &str = "tok-0123456789abcdefghijklmnop";
    const ENV_SECRET: &str = "ghp_zyxwvutsrqponmlkjihgfedcba";
    let mut w = World::without_model("mcp-add");
    w.env("MY_MCP_TOKEN", TOKEN);
    let data = w.home.join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    let data = data.display().to_string();
    let run = w
        .run(&[
            "mcp",
            "add",
            "files",
            "--env",
            &format!("GITHUB_TOKEN={ENV_SECRET}"),
            "--timeout",
            "9",
            "--trusted",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            &data,
        ])
        .expect(0);
    assert!(
        run.stdout.contains("added MCP server files"),
        "{}",
        run.stdout
    );
    w.run(&[
        "mcp",
        "add",
        "remote",
        "--url",
        "http://127.0.0.1:3001/mcp",
        "--header",
        "X-Api-Key: key-0123456789abcdefghijkl",
        "--bearer-env",
        "MY_MCP_TOKEN",
    ])
    .expect(0);

    let run = w.run(&["mcp", "list"]).expect(0);
    let files = run
        .stdout
        .lines()
        .find(|l| l.starts_with("files "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    for want in [
        "stdio",
        "added",
        "9s",
        "npx -y @modelcontextprotocol/server-filesystem",
        "env: GITHUB_TOKEN",
        "[trusted]",
    ] {
        assert!(files.contains(want), "{want:?} not in {files}");
    }
    let remote = run
        .stdout
        .lines()
        .find(|l| l.starts_with("remote "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    for want in ["http", "60s", "http://127.0.0.1:3001/mcp", "X-Api-Key"] {
        assert!(remote.contains(want), "{want:?} not in {remote}");
    }

    let json = w.run(&["mcp", "list", "--json"]).expect(0);
    for out in [&run.stdout, &json.stdout] {
        for secret in [TOKEN, ENV_SECRET, "key-0123456789abcdefghijkl"] {
            assert!(!out.contains(secret), "{secret} shown:\n{out}");
        }
    }
    let doc = json.json();
    assert_eq!(doc[0]["name"], "files");
    assert_eq!(doc[0]["timeout_secs"], 9);
    assert_eq!(doc[0]["trusted"], true);
    assert_eq!(doc[0]["source"], "store");
    // The directory among the arguments is where its tools may work.
    assert_eq!(doc[0]["roots"], serde_json::json!([data]));
    assert_eq!(doc[1]["transport"], "http");
    assert!(doc[1]["bearer_token"].is_string(), "{}", doc[1]);

    let run = w.run(&["mcp", "rm", "files"]).expect(0);
    assert!(run.stdout.contains("removed MCP server files"));
    assert_eq!(names(&w), ["remote"]);
    let run = w.run(&["mcp", "rm", "files"]).expect(2);
    assert!(
        run.stderr.contains("no MCP server named \"files\""),
        "{}",
        run.stderr
    );
}

#[test]
fn add_refuses_what_it_cannot_use_and_keeps_nothing() {
    let w = World::without_model("mcp-add-mistakes");
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["mcp", "add", "my server", "--", "x"],
            2,
            "not a usable MCP server name",
        ),
        (&["mcp", "add", "a__b", "--", "x"], 2, "__"),
        (&["mcp", "add", "a"], 2, "say how to reach a"),
        (
            &["mcp", "add", "a", "--url", "http://h/mcp", "--", "x"],
            2,
            "not both",
        ),
        (
            &["mcp", "add", "a", "--url", "localhost:3001"],
            2,
            "http://",
        ),
        (
            &["mcp", "add", "a", "--env", "NOVALUE", "--", "x"],
            2,
            "expected K=V",
        ),
        (
            &["mcp", "add", "a", "--header", "A:b", "--", "x"],
            2,
            "--url",
        ),
        (
            &["mcp", "add", "a", "--url", "http://h/mcp", "--cwd", "/tmp"],
            2,
            "--cwd",
        ),
        (
            &[
                "mcp",
                "add",
                "a",
                "--url",
                "http://h/mcp",
                "--bearer-env",
                "UNSET_VAR",
            ],
            2,
            "UNSET_VAR",
        ),
        (
            &[
                "mcp",
                "add",
                "a",
                "--url",
                "http://h/mcp",
                "--header",
                "Bad Name:v",
            ],
            2,
            "header name",
        ),
        (
            &["mcp", "add", "a", "--timeout", "0", "--", "x"],
            2,
            "--timeout 0",
        ),
    ];
    for (args, code, want) in cases {
        let run = w.run(args).expect(*code);
        assert!(
            run.stderr.contains(want),
            "{args:?}: {want:?} not in {}",
            run.stderr
        );
    }
    assert!(names(&w).is_empty());

    // A second server of the same name needs --replace.
    w.run(&["mcp", "add", "a", "--", "first"]).expect(0);
    let run = w.run(&["mcp", "add", "a", "--", "second"]).expect(1);
    assert!(run.stderr.contains("--replace"), "{}", run.stderr);
    w.run(&["mcp", "add", "a", "--replace", "--", "second"])
        .expect(0);
    let doc = w.run(&["mcp", "list", "--json"]).expect(0).json();
    assert_eq!(doc[0]["command"], "second");
}

#[test]
fn servers_of_config_toml_are_changed_in_the_file_at_their_line() {
    let w = World::without_model("mcp-config");
    w.config(
        "[mcp]\ntimeout_secs = 30\n\n[mcp.servers.cfg]\ncommand = \"echo\"\nargs = [\"hi\"]\n",
    );
    let run = w.run(&["mcp", "list"]).expect(0);
    assert!(
        run.stdout.contains("config.toml:4") && run.stdout.contains("30s"),
        "{}",
        run.stdout
    );
    let file = w.config_path().display().to_string();
    for args in [
        &["mcp", "rm", "cfg"][..],
        &["mcp", "disable", "cfg"],
        &["mcp", "disable", "cfg__tool"],
    ] {
        let run = w.run(args).expect(2);
        assert!(
            run.stderr.contains(&file) && run.stderr.contains("line 4, [mcp.servers.cfg]"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // An added server cannot take a name the file uses (the file's would hide it).
    let run = w.run(&["mcp", "add", "cfg", "--", "x"]).expect(1);
    assert!(run.stderr.contains("line 4"), "{}", run.stderr);
    assert_eq!(names(&w), ["cfg"]);

    // A mistake in the section names the key, the file and the line.
    w.config("[mcp.servers.cfg]\ncommand = \"echo\"\nargz = [\"hi\"]\n");
    let run = w.run(&["mcp", "list"]).expect(2);
    for want in ["unknown key `argz`", "line 3", file.as_str()] {
        assert!(run.stderr.contains(want), "{want:?} not in {}", run.stderr);
    }
}

#[test]
fn import_reads_the_files_of_other_agents() {
    let w = World::without_model("mcp-import");
    let claude = w.home.join("claude_desktop_config.json");
    std::fs::write(
        &claude,
        r#"{"mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
            "github": {"command": "docker", "args": ["run", "-i", "gh"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secretsecretsecret"}},
            "legacy": {"url": "http://127.0.0.1:9/sse"}
        }}"#,
    )
    .expect("write");
    let path = claude.display().to_string();
    let run = w.run(&["mcp", "import", &path]).expect(0);
    assert!(
        run.stdout.contains("imported 3 MCP servers"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("old HTTP+SSE transport"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("ghp_secret"), "{}", run.stdout);
    let doc = w.run(&["mcp", "list", "--json"]).expect(0).json();
    let got: Vec<(String, bool)> = doc
        .as_array()
        .expect("list")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("").to_string(),
                s["disabled"] == true,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("github".to_string(), false),
            ("legacy".to_string(), true),
            ("time".to_string(), false)
        ]
    );

    // VS Code's file (servers, comments) with a name already taken: nothing is imported
    // without --replace.
    let vscode = w.home.join("mcp.json");
    std::fs::write(
        &vscode,
        "{\n  // the team's servers\n  \"servers\": {\n    \"time\": {\"type\": \"stdio\", \"command\": \"time-server\"},\n    \"api\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:3001/mcp\"}\n  }\n}\n",
    )
    .expect("write");
    let path = vscode.display().to_string();
    let run = w.run(&["mcp", "import", &path]).expect(1);
    assert!(
        run.stderr.contains("nothing imported") && run.stderr.contains("time"),
        "{}",
        run.stderr
    );
    assert_eq!(names(&w), ["github", "legacy", "time"]);
    w.run(&["mcp", "import", &path, "--replace"]).expect(0);
    assert_eq!(names(&w), ["api", "github", "legacy", "time"]);
    let doc = w.run(&["mcp", "list", "--json"]).expect(0).json();
    assert_eq!(doc[3]["command"], "time-server");

    // A broken entry names the file and the entry.
    let bad = w.home.join("bad.json");
    std::fs::write(&bad, r#"{"mcpServers": {"oops": {"args": ["x"]}}}"#).expect("write");
    let path = bad.display().to_string();
    let run = w.run(&["mcp", "import", &path]).expect(2);
    assert!(
        run.stderr.contains(&path) && run.stderr.contains("server \"oops\""),
        "{}",
        run.stderr
    );
    let run = w.run(&["mcp", "import", "/nonexistent/mcp.json"]).expect(1);
    assert!(
        run.stderr.contains("/nonexistent/mcp.json"),
        "{}",
        run.stderr
    );
}

#[test]
fn levels_are_set_for_server_tools_and_undone_with_auto() {
    let w = World::without_model("mcp-level");
    w.run(&["mcp", "add", "files", "--", "fs-server"]).expect(0);
    let run = w
        .run(&["mcp", "level", "files__write_file", "L2"])
        .expect(0);
    assert!(
        run.stdout.contains("files__write_file: L2") && run.stdout.contains("without asking"),
        "{}",
        run.stdout
    );
    let run = w
        .run(&["mcp", "level", "files__write_file", "L4"])
        .expect(0);
    assert!(run.stdout.contains("asks twice"), "{}", run.stdout);
    let run = w
        .run(&["mcp", "level", "files__write_file", "auto"])
        .expect(0);
    assert!(
        run.stdout.contains("your level is removed"),
        "{}",
        run.stdout
    );
    let run = w
        .run(&["mcp", "level", "files__write_file", "auto"])
        .expect(0);
    assert!(run.stdout.contains("had no level set"), "{}", run.stdout);

    let cases: &[(&[&str], &str)] = &[
        (&["mcp", "level", "files__write_file", "L9"], "not a level"),
        (&["mcp", "level", "write_file", "L2"], "SERVER__TOOL"),
        (
            &["mcp", "level", "nope__write_file", "L2"],
            "no MCP server named \"nope\"",
        ),
    ];
    for (args, want) in cases {
        let run = w.run(args).expect(2);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn servers_and_tools_are_switched_off_and_on() {
    let w = World::without_model("mcp-toggle");
    w.run(&["mcp", "add", "files", "--", "fs-server"]).expect(0);
    w.run(&["mcp", "disable", "files__move_file"]).expect(0);
    w.run(&["mcp", "disable", "files"]).expect(0);
    let run = w.run(&["mcp", "list"]).expect(0);
    assert!(
        run.stdout.contains("tools: not move_file") && run.stdout.contains("[disabled]"),
        "{}",
        run.stdout
    );
    // A disabled server is skipped by `tools`, not counted as a failure.
    let run = w.run(&["mcp", "tools"]).expect(0);
    assert!(run.stdout.contains("files: disabled"), "{}", run.stdout);

    w.run(&["mcp", "enable", "files"]).expect(0);
    w.run(&["mcp", "enable", "files__move_file"]).expect(0);
    let doc = w.run(&["mcp", "list", "--json"]).expect(0).json();
    assert_eq!(doc[0]["disabled"], false);
    assert_eq!(doc[0]["disabled_tools"], serde_json::json!([]));
    let run = w.run(&["mcp", "enable", "other"]).expect(2);
    assert!(
        run.stderr.contains("no MCP server named \"other\""),
        "{}",
        run.stderr
    );
}

#[test]
fn tools_lists_the_others_and_exits_1_when_a_server_fails() {
    let w = World::new("mcp-tools-fail");
    w.run(&["mcp", "add", "broken", "--", "/nonexistent/mcp-server"])
        .expect(0);
    w.run(&["mcp", "add", "off", "--", "/nonexistent/other"])
        .expect(0);
    w.run(&["mcp", "disable", "off"]).expect(0);
    let run = w.run(&["mcp", "tools"]).expect(1);
    assert!(
        run.stdout.contains("broken: could not be listed"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("off: disabled"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("1 of 2 MCP servers could not be listed: broken"),
        "{}",
        run.stderr
    );
    let run = w.run(&["mcp", "tools", "broken", "--json"]).expect(1);
    let doc = run.json();
    assert_eq!(doc[0]["server"], "broken");
    assert_eq!(doc[0]["ok"], false);
    assert!(doc[0]["error"].is_string());
    let run = w.run(&["mcp", "tools", "nope"]).expect(2);
    assert!(run.stderr.contains("known: broken, off"), "{}", run.stderr);
}

#[test]
fn chat_lists_servers_and_sets_levels_with_slash_mcp() {
    let w = World::new("mcp-chat");
    w.run(&["mcp", "add", "files", "--", "/nonexistent/fs-server"])
        .expect(0);
    let run = w
        .run_stdin(
            &["chat"],
            "/mcp\n/mcp level files__write_file L4\n/mcp level files__write_file bogus\n/mcp tools\n/quit\n",
        )
        .expect(0);
    let files = run
        .stdout
        .lines()
        .find(|l| l.starts_with("files "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(files.contains("[not started]"), "{files}");
    assert!(
        run.stdout.contains("files__write_file: L4"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("not a level"), "{}", run.stderr);
    // A server that cannot be listed is reported; chat goes on to /quit.
    assert!(
        run.stdout.contains("files: could not be listed"),
        "{}",
        run.stdout
    );
    // The level set in chat is the one `evolve mcp level … auto` removes.
    let run = w
        .run(&["mcp", "level", "files__write_file", "auto"])
        .expect(0);
    assert!(
        run.stdout.contains("your level is removed"),
        "{}",
        run.stdout
    );
    // Slash commands never reach the model.
    assert!(w.main_requests().is_empty());
}
