//! How other evolve commands find a running `serve`: `$EVOLVE_HOME/serve.json` holds its
//! process id and address while it runs. redb lets one process hold the store, so an
//! `evolve ask` (from cron, say) that finds a live server sends its question there
//! instead of waiting for the store.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// A running server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its process.
    pub pid: u32,
    /// Where a local client connects (an unspecified bind is reached on loopback).
    pub addr: SocketAddr,
    /// Whether it wants the token (`serve.token`).
    pub token: bool,
}

fn path(home: &Path) -> PathBuf {
    home.join("serve.json")
}

/// Records this process as the running server.
pub fn write(home: &Path, addr: SocketAddr, token: bool) -> std::io::Result<()> {
    let doc = json!({
        "pid": std::process::id(),
        "addr": super::wake_addr(addr).to_string(),
        "token": token,
    });
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    std::io::Write::write_all(&mut opts.open(path(home))?, doc.to_string().as_bytes())
}

/// Removes the record (only if it is this process's).
pub fn remove(home: &Path) {
    if read_file(home).is_some_and(|e| e.pid == std::process::id()) {
        let _ = std::fs::remove_file(path(home));
    }
}

fn read_file(home: &Path) -> Option<Endpoint> {
    let text = std::fs::read_to_string(path(home)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    Some(Endpoint {
        pid: u32::try_from(v["pid"].as_u64()?).ok()?,
        addr: v["addr"].as_str()?.parse().ok()?,
        token: v["token"].as_bool().unwrap_or(false),
    })
}

/// The running server of this home, if its process is alive (a record left by a
/// killed server is ignored).
pub fn running(home: &Path) -> Option<Endpoint> {
    let e = read_file(home)?;
    let alive = std::fs::read_to_string(format!("/proc/{}/cmdline", e.pid))
        .is_ok_and(|cmd| cmd.contains("evolve") || cmd.contains("serve"));
    alive.then_some(e)
}
