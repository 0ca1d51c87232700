//! The test server answers the handshake and lists its tools over stdio. Being an
//! integration test, it also makes `cargo test --workspace` build the server binary
//! that evolve's MCP tests start (`target/debug/evolve-mcp-test-server`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn answers_initialize_and_lists_its_tools() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_evolve-mcp-test-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the test server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").expect("write");
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next().expect("a reply").expect("read")).expect("JSON");
    assert_eq!(reply["result"]["protocolVersion"], "2024-11-05", "{reply}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).expect("write");
    let reply: serde_json::Value =
        serde_json::from_str(&lines.next().expect("a reply").expect("read")).expect("JSON");
    let names: Vec<&str> = reply["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in [
        "echo",
        "add",
        "write_note",
        "slow",
        "fail",
        "crash",
        "add_tool",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    drop(stdin);
    let status = child.wait().expect("exit");
    assert!(
        status.success(),
        "the server exits cleanly when stdin closes: {status}"
    );
}
