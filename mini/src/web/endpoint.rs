//! How other evolve commands find a running `serve`: `$EVOLVE_HOME/serve.json` holds its
//! process id and address while it runs. redb lets one process hold the store, so an
//! `evolve ask` (from cron, say) that finds a live server sends its question there
//! instead of waiting for the store, and every other command asks it to lend the file
//! (`crate::cli::lend`). Every request to it carries its token, read by
//! [`Endpoint::token`] from `serve.token` (0600: only this user reads it);
//! [`running_with_token`] finds both at once.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

pub use crate::error::{ServeError, TokenError};

/// A running server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Its process.
    pub pid: u32,
    /// Where a local client connects (an unspecified bind is reached on loopback).
    pub addr: SocketAddr,
}

impl Endpoint {
    /// The token this server wants, from `$EVOLVE_HOME/serve.token`.
    pub fn token(&self, home: &Path) -> Result<String, TokenError> {
        let path = super::auth::token_path(home);
        match std::fs::read_to_string(&path) {
            Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
            Ok(_) => Err(TokenError::Empty(path)),
            Err(source) => Err(TokenError::Unreadable { path, source }),
        }
    }
}

/// The running server of `home` and the token it wants: what every command that goes
/// through the server starts with. `Ok(None)` when none runs (or the record is this
/// process's own).
pub fn running_with_token(home: &Path) -> Result<Option<(Endpoint, String)>, ServeError> {
    let Some(ep) = running(home) else {
        return Ok(None);
    };
    match ep.token(home) {
        Ok(token) => Ok(Some((ep, token))),
        Err(source) => Err(ServeError::Token {
            pid: ep.pid,
            source,
        }),
    }
}

fn path(home: &Path) -> PathBuf {
    home.join("serve.json")
}

/// Records this process as the running server.
pub fn write(home: &Path, addr: SocketAddr) -> std::io::Result<()> {
    let doc = json!({
        "pid": std::process::id(),
        "addr": super::wake_addr(addr).to_string(),
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
    })
}

/// The running server of this home. The record is believed only when its process is
/// this same program and holds the listening socket at the recorded port: a record left
/// by a killed server, whose pid and port another program took since, gets neither the
/// question nor the token.
pub fn running(home: &Path) -> Option<Endpoint> {
    let e = read_file(home)?;
    (e.pid != std::process::id() && is_evolve(e.pid) && listens(e.pid, e.addr.port())).then_some(e)
}

/// The process runs a program of the same file name as this one (`evolve`; an upgraded
/// binary still running from its deleted file counts).
fn is_evolve(pid: u32) -> bool {
    let name = |p: &Path| {
        p.file_name().map(|n| {
            n.to_string_lossy()
                .trim_end_matches(" (deleted)")
                .to_string()
        })
    };
    let Ok(theirs) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
        return false;
    };
    let ours = std::env::current_exe().ok();
    name(&theirs).is_some() && name(&theirs) == ours.as_deref().and_then(name)
}

/// The process holds a listening TCP socket on `port` (its sockets in /proc/PID/fd
/// against the LISTEN entries of /proc/PID/net/tcp and tcp6). Another user's process
/// cannot be inspected, so it never qualifies.
fn listens(pid: u32, port: u16) -> bool {
    let mut inodes = Vec::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let local_port = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if *state == "0A" && local_port == Some(port) {
                inodes.push(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
}
