//! A running `evolve serve --port 0` and what a process holds in memory, read from `/proc`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use evolve_fake_llm::FakeLlm;

/// A running `evolve serve --port 0`.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// Its stderr after the start line (warnings and errors).
    stderr: Receiver<String>,
}

/// Memory of a process, from `/proc/PID/status`, in KiB.
#[derive(Clone, Copy)]
pub struct Memory {
    pub rss: u64,
    pub peak: u64,
    /// Of `rss`: the heap and stacks, and the mapped files (the binary's touched pages,
    /// shared libraries).
    pub anon: u64,
    pub file: u64,
    pub threads: u64,
}

impl Server {
    /// Spawns `serve` and waits for its start line; panics with what it said when it
    /// does not start.
    pub fn start(exe: &Path, home: &Path, fake: &FakeLlm) -> Server {
        Server::spawn(exe, home, fake).unwrap_or_else(|said| panic!("serve did not start: {said}"))
    }

    /// Like [`Server::start`], with what it said as the error when it does not start
    /// within 30 s.
    pub fn spawn(exe: &Path, home: &Path, fake: &FakeLlm) -> Result<Server, String> {
        let mut cmd = super::evolve(exe, home, fake, "warn");
        // glibc's per-thread malloc arenas hold freed memory: `MALLOC_ARENA_MAX=1 cargo
        // bench …` shows how much of the RSS is theirs.
        if let Some(max) = std::env::var_os("MALLOC_ARENA_MAX") {
            cmd.env("MALLOC_ARENA_MAX", max);
        }
        let mut child = cmd
            .args(["serve", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot spawn {}: {e}", exe.display()))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut said = Vec::new();
        let port = loop {
            let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) else {
                let _ = child.kill();
                let _ = child.wait();
                return Err(said.join("\n"));
            };
            if let Some(rest) = line.split(" serving on http://").nth(1) {
                let addr = rest.split_whitespace().next().unwrap_or("");
                match addr.rsplit(':').next().and_then(|p| p.parse().ok()) {
                    Some(port) => break port,
                    None => return Err(format!("no port in the start line: {line}")),
                }
            }
            said.push(line);
        };
        let token = std::fs::read_to_string(home.join("serve.token"))
            .map_err(|e| format!("no serve.token: {e}"))?;
        super::http::register(port, token.trim().to_string());
        Ok(Server {
            child,
            port,
            stderr: rx,
        })
    }

    pub fn memory(&self) -> Memory {
        memory(self.child.id())
    }

    /// SIGTERM, waits for the exit (killed after 30 s); returns what it logged, its
    /// exit code included when it was not 0.
    pub fn stop(mut self) -> Vec<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(30);
        let code = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.code(),
                Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let mut said: Vec<String> = self
            .stderr
            .try_iter()
            .filter(|l| l != "evolve serve stopped")
            .collect();
        if code != Some(0) {
            said.push(format!("(serve exited with {code:?} after SIGTERM)"));
        }
        said
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The memory of process `pid` (zeros when it is gone).
pub fn memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss: field("VmRSS:"),
        peak: field("VmHWM:"),
        anon: field("RssAnon:"),
        file: field("RssFile:"),
        threads: field("Threads:"),
    }
}

/// The child processes of `pid` (every thread's).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
