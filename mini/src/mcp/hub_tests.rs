use super::*;
use crate::cancel::Cancel;
use crate::mcp_spec::{SpecSource, Transport};

fn stdio(name: &str, command: &str, args: &[&str], timeout: Duration) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        transport: Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            cwd: None,
        },
        timeout,
        sandbox: Default::default(),
        trusted: false,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        disabled: false,
        roots: Vec::new(),
        source: SpecSource::Store,
    }
}

/// PyPI's `mcp-server-time` (installed by tests/mcp-peers.sh): a real third-party
/// server through the hub.
#[test]
fn a_third_party_stdio_server_lists_and_answers() {
    let Some(bin) = std::env::var_os("EVOLVE_TEST_MCP_TIME") else {
        eprintln!("skipped: EVOLVE_TEST_MCP_TIME is not set (tests/mcp-peers.sh)");
        return;
    };
    let bin = bin.to_string_lossy().into_owned();
    let hub = Hub::new(vec![stdio(
        "time",
        &bin,
        &["--local-timezone", "UTC"],
        Duration::from_secs(30),
    )]);
    let never = Cancel::new();
    assert!(
        hub.live_tools("time").is_none(),
        "nothing starts before first use"
    );
    let tools = hub.list_tools("time", &never).expect("listed");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"get_current_time"), "{names:?}");
    assert_eq!(hub.connected(), ["time"]);
    let out = hub
        .call(
            "time",
            "get_current_time",
            r#"{"timezone":"Europe/Paris"}"#,
            &never,
            &mut crate::mcp::NoEvents,
        )
        .expect("called");
    assert!(!out.is_error, "{out:?}");
    assert!(out.content.contains("Europe/Paris"), "{out:?}");
    let bad = hub
        .call(
            "time",
            "get_current_time",
            r#"{"timezone":"Mars/Olympus"}"#,
            &never,
            &mut crate::mcp::NoEvents,
        )
        .map(|o| o.is_error);
    assert!(
        matches!(bad, Ok(true) | Err(McpError::Server { .. })),
        "{bad:?}"
    );
    hub.shutdown();
    assert!(hub.connected().is_empty());
}

#[test]
fn a_missing_program_is_a_clear_start_error_and_unknown_servers_are_named() {
    let hub = Hub::new(vec![stdio(
        "nope",
        "/nonexistent/evolve-mcp",
        &[],
        Duration::from_secs(5),
    )]);
    let never = Cancel::new();
    let e = hub.list_tools("nope", &never).unwrap_err();
    assert!(matches!(e, McpError::Start { .. }), "{e:?}");
    assert!(e.to_string().contains("was not found"), "{e}");
    let e = hub
        .call("other", "x", "{}", &never, &mut crate::mcp::NoEvents)
        .unwrap_err();
    assert_eq!(e, McpError::UnknownServer("other".into()));
}

#[test]
fn backoff_restarts_at_once_then_doubles_to_thirty_seconds() {
    let secs: Vec<u64> = (1..=9).map(|f| backoff(f).as_secs()).collect();
    assert_eq!(secs, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
}
