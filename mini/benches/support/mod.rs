//! What the benchmarks share: the built `evolve` run against the in-repo fake model with
//! a clean environment (nothing from the machine running them leaks in), a running
//! `evolve serve` and a keep-alive HTTP client for it, the MCP test server, and how
//! figures are printed.

// Every bench compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod http;
pub mod mcp;
pub mod server;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use evolve_fake_llm::FakeLlm;

/// `exe` with `home` as `$EVOLVE_HOME` and `HOME`, the fake model as the main and cheap
/// model, and `EVOLVE_LOG` at `log`.
pub fn evolve(exe: &Path, home: &Path, fake: &FakeLlm, log: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("EVOLVE_HOME", home)
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("EVOLVE_MODEL", "fake-main")
        .env("EVOLVE_CHEAP_MODEL", "fake-cheap")
        .env("EVOLVE_LOG", log);
    cmd
}

/// The CPU's model name from `/proc/cpuinfo`.
pub fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The 1, 5 and 15 minute load averages: the machine is shared, so they are part of a figure.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// KiB → MB (1024 KiB).
pub fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// 100000 → "100 000".
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
