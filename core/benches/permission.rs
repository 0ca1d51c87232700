//! Benchmarks of `permission`: the check every tool call goes through (argument scan,
//! escalation, decision) for typical calls and for hostile 1 MB arguments. Prints
//! medians; asserts nothing.
mod harness;

use std::hint::black_box;
use std::time::Duration;

use evolve_core::json::Value;
use evolve_core::permission::{
    check_call, shell_command_level, ClassSource, EscalationContext, Grants, Level,
    PermissionConfig, Policy, ToolClass,
};
use harness::bench;

fn main() {
    let cfg = PermissionConfig {
        shell_level: Level::L4,
        command_prefixes: vec![("git status".into(), Level::L2), ("ls".into(), Level::L2)],
        ..PermissionConfig::default()
    };
    let grants = Grants::default();
    let policy = Policy::Interactive;
    let file_ctx = EscalationContext {
        workspace_root: "/home/u/ws",
        path_keys: &["path"],
        is_shell: false,
        extra_roots: &[],
    };
    let shell_ctx = EscalationContext {
        is_shell: true,
        path_keys: &[],
        ..file_ctx
    };
    let mcp_ctx = EscalationContext {
        path_keys: &[],
        ..file_ctx
    };
    let class = |level| ToolClass {
        level,
        source: ClassSource::BuiltIn,
    };

    let shell = |cmd: &str| format!("{{\"command\":{}}}", json_string(cmd));
    let typical_shell =
        shell("git status && cargo test -p evolve-core -- --nocapture 2>&1 | tail -n 40");
    let write = format!(
        "{{\"path\":\"notes/today.md\",\"content\":{}}}",
        json_string(
            &"- a line of notes with a path src/main.rs and a URL https://example.org/x\n"
                .repeat(1400)
        )
    );
    let mcp = r#"{"uri":"file:///home/u/ws/README.md","query":"tea","limit":10,"filters":{"tags":["a","b"]}}"#;
    let hostile_shell = shell(&"a{b,c}$(x) `y` | z; ".repeat(50_000));
    let hostile_json = "[".repeat(500_000) + &"\"a\",".repeat(125_000);

    println!(
        "inputs: write_file {} bytes, hostile shell {} bytes, hostile JSON {} bytes",
        write.len(),
        hostile_shell.len(),
        hostile_json.len()
    );
    let d = Duration::from_secs(1);
    bench("shell_command_level, typical command", d, || {
        shell_command_level(
            black_box("git status && cargo test -p evolve-core | tail -n 40"),
            &cfg,
        )
    });
    bench("check_call, typical shell call", d, || {
        check_call(
            "shell",
            class(Level::L4),
            black_box(&typical_shell),
            &shell_ctx,
            &grants,
            &policy,
        )
    });
    bench("check_call, write_file of 100 KB", d, || {
        check_call(
            "write_file",
            class(Level::L3),
            black_box(&write),
            &file_ctx,
            &grants,
            &policy,
        )
    });
    bench("check_call, MCP call with a file URI", d, || {
        check_call(
            "fs__read",
            class(Level::L2),
            black_box(mcp),
            &mcp_ctx,
            &grants,
            &policy,
        )
    });
    bench(
        "check_call, hostile 1 MB shell command",
        Duration::from_secs(3),
        || {
            check_call(
                "shell",
                class(Level::L4),
                black_box(&hostile_shell),
                &shell_ctx,
                &grants,
                &policy,
            )
        },
    );
    bench(
        "check_call, hostile 1 MB nested JSON",
        Duration::from_secs(3),
        || {
            check_call(
                "fs__read",
                class(Level::L2),
                black_box(&hostile_json),
                &mcp_ctx,
                &grants,
                &policy,
            )
        },
    );
}

/// A JSON string literal, written by the core's own serializer.
fn json_string(s: &str) -> String {
    Value::String(s.to_string()).to_json_string()
}
