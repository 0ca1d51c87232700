//! The in-repo MCP test server (`tests/mcp-server`): where its binary is, and what the
//! cheap model answers when Evolve asks it to classify the server's tools.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The classification prompt's marker (mini/src/agents/prompts.rs).
pub const CLASSIFY: &str = "[evolve:classify]";
/// Levels for the test server's tools: `echo` runs without asking.
pub const LEVELS: &str = r#"{"echo": "L0", "add": "L0", "write_note": "L3", "delete_everything": "L4", "send_message": "L4", "slow": "L0", "fail": "L0", "crash": "L1", "add_tool": "L1", "extra": "L1", "big": "L0", "env": "L2", "cwd": "L2"}"#;

/// The test server next to the `evolve` binary (same profile); built when missing, with
/// its own `cargo build` so its rmcp server features stay out of the `evolve` measured.
pub fn test_server(exe: &Path) -> PathBuf {
    let bin_dir = exe.parent().expect("the binary's directory");
    let bin = bin_dir.join("evolve-mcp-test-server");
    if bin.exists() {
        return bin;
    }
    let target = bin_dir.parent().expect("the target directory");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!(
        "building the MCP test server (release) into {}",
        target.display()
    );
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "evolve-mcp-test-server"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target)
        .status()
        .expect("run cargo build");
    assert!(
        status.success() && bin.exists(),
        "{} is missing: run `cargo build --release -p evolve-mcp-test-server`",
        bin.display()
    );
    bin
}
