//! A stdio server: a child process speaking newline-delimited JSON-RPC on stdin and
//! stdout, on plain threads.
//!
//! What it decides:
//! - **Its own process group.** The server leads a new group
//!   (`CommandExt::process_group(0)`), so Ctrl-C in the terminal reaches evolve and not
//!   the servers, and stopping a server stops what it started (`npx` → `node`, a
//!   browser, a language server): see [`super::reap`].
//! - **Four small threads per server**, each blocked on one thing: the writer (stdin,
//!   fed through a channel, so a caller never blocks on a full pipe and Ctrl-C stays
//!   prompt), the reader (stdout through the [`LineGuard`], each message to
//!   [`Peer::dispatch`]), the stderr reader (each line to the log at `info`, the last
//!   few kept for start errors) and the watcher (waits for the process; when it exits
//!   — closed by evolve or dead of its own accord between calls — it is reaped and its
//!   whole group killed, so nothing it started lingers and no zombie is left).
//! - **The end of a connection** is noticed by the reader (end of stdout), which gives
//!   the waiting requests the exit status when the process is gone; if a helper keeps
//!   stdout open, the watcher ends the connection instead.
//! - **Closing**: stdin closed, up to 2 s for the server to exit on its own, then its
//!   group is killed (servers that ignore SIGTERM or linger in cleanup included).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::jsonrpc::{Failure, Link, Outgoing, Peer};
use super::lines::LineGuard;

/// How many stderr lines of a server are kept for error messages.
const STDERR_KEPT: usize = 8;
/// Characters of one stderr line kept (longer lines are cut).
const STDERR_LINE: usize = 500;
/// How long a closed server has to exit before its group is killed.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// How long the reader, at the end of stdout, waits to learn the exit status.
const STATUS_WAIT: Duration = Duration::from_millis(500);
/// How long the watcher, once the process is gone, leaves the reader to finish.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// The last lines a server wrote to stderr.
pub(super) type StderrTail = Arc<Mutex<VecDeque<String>>>;

/// How to start a stdio server.
pub(super) struct Launch<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a Path>,
    pub roots: Vec<PathBuf>,
    /// The kernel confinement, if the server asked for one: its environment replaces
    /// evolve's (with `env` applied last), and it restricts itself before exec.
    pub plan: Option<&'a crate::sandbox::Plan>,
}

/// A running stdio server; dropping it kills its whole process group.
pub(super) struct Process {
    pgid: i32,
    stdin: Arc<Pipe>,
    /// Set when the watcher has reaped the server.
    exited: Arc<Latch>,
    /// Set when its stderr has ended.
    stderr_done: Arc<Latch>,
}

/// Starts the server and its threads; the connection is ready for the handshake.
/// `Err` says in the user's words why it could not be started.
pub(super) fn spawn(launch: Launch<'_>, tail: &StderrTail) -> Result<(Arc<Peer>, Process), String> {
    let mut cmd = std::process::Command::new(launch.command);
    cmd.args(launch.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = launch.cwd {
        cmd.current_dir(dir);
    }
    let applied = match launch.plan {
        Some(plan) => Some(
            plan.apply(&mut cmd)
                .map_err(|e| format!("it could not be confined: {e}"))?,
        ),
        None => {
            // Its own environment: evolve's without other servers' secrets, then its env.
            cmd.env_clear();
            cmd.envs(super::inherited_env());
            cmd.envs(launch.env.iter().map(|(k, v)| (k, v)));
            None
        }
    };
    let spawned = crate::sandbox::reaper::spawn(&mut cmd);
    drop(applied);
    let mut child = spawned.map_err(|e| spawn_problem(launch.command, launch.cwd, &e))?;
    let pgid = child.id() as i32;
    super::reap::register(pgid);
    // What the server starts is its own, not a stray of a command.
    crate::sandbox::reaper::keep_group(pgid);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        super::reap::kill_group(pgid);
        let _ = child.wait();
        return Err("its stdin or stdout could not be connected".into());
    };
    let server = launch.server.to_string();
    let exited = Arc::new(Latch::default());
    let stderr_done = Arc::new(Latch::default());
    let out_done = Arc::new(Latch::default());
    let thread_failed = |e: std::io::Error| format!("cannot start a thread for it: {e}");

    // The watcher first: from here on the child is reaped whatever else fails.
    let (tell_peer, peer_told) = mpsc::channel::<Arc<Peer>>();
    {
        let (exited, out_done) = (exited.clone(), out_done.clone());
        let spawned = std::thread::Builder::new()
            .name("mcp-wait".into())
            .spawn(move || {
                let status = match child.wait() {
                    Ok(status) => describe_exit(status),
                    Err(e) => format!("it could not be waited for: {e}"),
                };
                crate::sandbox::reaper::forget(pgid as u32);
                exited.set(status.clone());
                super::reap::kill_group(pgid);
                crate::sandbox::reaper::drop_group(pgid);
                if !out_done.wait(DRAIN_WAIT) {
                    // Something it started still holds stdout open.
                    if let Ok(peer) = peer_told.recv() {
                        peer.end(&status);
                    }
                }
            });
        if let Err(e) = spawned {
            super::reap::kill_group(pgid);
            return Err(thread_failed(e));
        }
    }
    let stdin = Pipe::start(stdin).map_err(|e| {
        super::reap::kill_group(pgid);
        thread_failed(e)
    })?;
    let process = Process {
        pgid,
        stdin: stdin.clone(),
        exited: exited.clone(),
        stderr_done: stderr_done.clone(),
    };
    let link: Arc<dyn Link> = stdin;
    let peer = Peer::new(&server, link, launch.roots);
    let _ = tell_peer.send(peer.clone());
    {
        let (peer, server, exited) = (peer.clone(), server.clone(), exited.clone());
        std::thread::Builder::new()
            .name("mcp-out".into())
            .spawn(move || read_stdout(stdout, &server, &peer, &exited, &out_done))
            .map_err(thread_failed)?;
    }
    {
        let tail = tail.clone();
        std::thread::Builder::new()
            .name("mcp-err".into())
            .spawn(move || {
                log_stderr(stderr, &server, &tail);
                stderr_done.set(String::new());
            })
            .map_err(thread_failed)?;
    }
    Ok((peer, process))
}

impl Process {
    /// Ends the session: stdin closed and the server given a moment to exit; then its
    /// process group is killed, with whatever it started.
    pub fn close(&self) {
        // The spec's order: stdin closed, then SIGTERM, then SIGKILL, within EXIT_WAIT.
        self.stdin.close();
        if !self.exited.wait(EXIT_WAIT * 3 / 4) {
            super::reap::terminate_group(self.pgid);
            self.exited.wait(EXIT_WAIT / 4);
        }
        super::reap::kill_group(self.pgid);
    }

    /// After a failed start: waits briefly for the server's last stderr lines (a server
    /// that exits at once has usually said why).
    pub fn settle_stderr(&self) {
        if self.exited.wait(STATUS_WAIT) {
            self.stderr_done.wait(STATUS_WAIT);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stdin.close();
        super::reap::kill_group(self.pgid);
    }
}

/// A server's stdin, written by its own thread.
struct Pipe {
    /// `None` once closed.
    lines: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
}

impl Pipe {
    fn start(mut stdin: std::process::ChildStdin) -> std::io::Result<Arc<Pipe>> {
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("mcp-in".into())
            .spawn(move || {
                for mut line in rx {
                    line.push(b'\n');
                    if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                        // The server closed its stdin or died: the reader and the
                        // watcher say so.
                        return;
                    }
                }
                // Every sender is gone: dropping stdin closes it.
            })?;
        Ok(Arc::new(Pipe {
            lines: Mutex::new(Some(tx)),
        }))
    }

    /// Closes stdin once what was queued is written.
    fn close(&self) {
        if let Ok(mut lines) = self.lines.lock() {
            lines.take();
        }
    }
}

impl Link for Pipe {
    fn send(&self, _peer: &Arc<Peer>, message: Outgoing) -> Result<(), Failure> {
        let closed = || Failure::Broken("its input is closed".into());
        let lines = self.lines.lock().map_err(|_| closed())?;
        let sender = lines.as_ref().ok_or_else(closed)?;
        sender.send(message.body).map_err(|_| closed())
    }
}

/// The reader thread: every message to the peer; at the end of the output the
/// connection ends with the exit status when there is one.
fn read_stdout(out: ChildStdout, server: &str, peer: &Arc<Peer>, exited: &Latch, done: &Latch) {
    let mut guard = LineGuard::new(out, server);
    let trouble = loop {
        match guard.next_line() {
            Ok(Some(line)) if line.trim_ascii().is_empty() => {}
            Ok(Some(line)) => match serde_json::from_slice(&line) {
                Ok(message) => peer.dispatch(message),
                Err(_) => log::warn!(
                    "MCP server {server:?} wrote a line that is not JSON-RPC on stdout (ignored): {}",
                    shown_line(&line)
                ),
            },
            Ok(None) => break None,
            Err(e) => break Some(format!("reading its output failed: {e}")),
        }
    };
    let why = match (exited.wait_value(STATUS_WAIT), trouble) {
        (Some(status), _) => status,
        (None, Some(trouble)) => trouble,
        (None, None) => "it closed its output".to_string(),
    };
    peer.end(&why);
    done.set(String::new());
}

/// "it exited with code 3", "it was killed by signal 9".
fn describe_exit(status: std::process::ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("it exited with code {code}"),
        (None, Some(signal)) => format!("it was killed by signal {signal}"),
        (None, None) => "it exited".to_string(),
    }
}

/// Copies a server's stderr to the log (`info`, so `EVOLVE_LOG=info` shows it) and
/// keeps the last lines. Lines are cut at [`STDERR_LINE`] characters as they are read,
/// so a server printing without line ends cannot fill memory.
fn log_stderr(stderr: ChildStderr, server: &str, tail: &StderrTail) {
    let mut input = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_capped(&mut input, &mut line, STDERR_LINE * 4) {
            Ok(false) => return,
            Ok(true) => {}
            Err(_) => return,
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\r');
        let text = evolve_core::text::clip_chars(
            &evolve_core::text::escape_controls(text, false),
            STDERR_LINE,
        );
        log::info!("MCP server {server:?}: {text}");
        if let Ok(mut kept) = tail.lock() {
            if kept.len() == STDERR_KEPT {
                kept.pop_front();
            }
            kept.push_back(text);
        }
    }
}

/// Reads one line into `line` keeping at most `max` bytes of it; false at the end.
fn read_line_capped(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let end = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..end.unwrap_or(chunk.len())];
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        let used = end.map_or(chunk.len(), |e| e + 1);
        input.consume(used);
        if end.is_some() {
            return Ok(true);
        }
    }
}

/// A line that is not JSON, as the log shows it.
fn shown_line(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(1000)]);
    evolve_core::text::clip_chars(&evolve_core::text::escape_controls(&text, false), 200)
}

/// What went wrong starting a program, in words a user can act on.
fn spawn_problem(command: &str, cwd: Option<&Path>, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => match cwd {
            Some(dir) if !dir.is_dir() => {
                format!("its working directory {} does not exist", dir.display())
            }
            _ => format!("the program {command:?} was not found (is it installed and on PATH?)"),
        },
        std::io::ErrorKind::PermissionDenied => {
            format!("the program {command:?} cannot be run (permission denied)")
        }
        _ => format!("{command:?} could not be started: {e}"),
    }
}

/// Appends what the server last wrote to stderr.
pub(super) fn with_stderr(mut message: String, stderr: &StderrTail) -> String {
    let lines = stderr.lock().map(|l| l.clone()).unwrap_or_default();
    if !lines.is_empty() {
        message.push_str("; it said: ");
        message.push_str(&Vec::from(lines).join(" | "));
    }
    message
}

/// A value set once, that other threads can wait for.
#[derive(Default)]
struct Latch {
    value: Mutex<Option<String>>,
    set: Condvar,
}

impl Latch {
    fn set(&self, value: String) {
        if let Ok(mut v) = self.value.lock() {
            v.get_or_insert(value);
        }
        self.set.notify_all();
    }

    /// Waits up to `limit`; true if it was set.
    fn wait(&self, limit: Duration) -> bool {
        self.wait_value(limit).is_some()
    }

    fn wait_value(&self, limit: Duration) -> Option<String> {
        let guard = self.value.lock().ok()?;
        let (guard, _) = self
            .set
            .wait_timeout_while(guard, limit, |v| v.is_none())
            .ok()?;
        guard.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Cancel;
    use serde_json::json;

    const LONG: Duration = Duration::from_secs(30);

    fn launch<'a>(script: &'a [String]) -> Launch<'a> {
        Launch {
            server: "t",
            command: "sh",
            args: script,
            env: &[],
            cwd: None,
            roots: Vec::new(),
            plan: None,
        }
    }

    /// A shell "server" answering one request by echoing a fixed reply, after a
    /// server request of its own and a stray line.
    #[test]
    fn a_request_is_answered_through_the_pipes_and_the_server_is_reaped() {
        let script = [
            "-c".to_string(),
            r#"read line; echo 'not json'; echo '{"jsonrpc":"2.0","id":"s1","method":"ping"}'; read pong; echo "$pong" >&2; echo '{"jsonrpc":"2.0","id":0,"result":{"ok":true}}'; exit 3"#.to_string(),
        ];
        let tail = StderrTail::default();
        let (peer, process) = spawn(launch(&script), &tail).expect("started");
        let never = Cancel::new();
        let got = peer.request("x", None, LONG, &never);
        assert_eq!(got, Ok(json!({"ok": true})));
        // The server exits after its answer: the next request learns how.
        let got = peer.request("y", None, LONG, &never);
        assert_eq!(got, Err(Failure::Broken("it exited with code 3".into())));
        process.settle_stderr();
        process.close();
        let said: Vec<serde_json::Value> = tail
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).expect("the answer, echoed"))
            .collect();
        assert_eq!(
            said,
            [json!({"jsonrpc": "2.0", "id": "s1", "result": {}})],
            "the server's ping was answered"
        );
    }

    #[test]
    fn a_server_that_dies_fails_the_waiting_request_with_its_exit() {
        let script = [
            "-c".to_string(),
            "read line; echo bye >&2; kill -9 $$".to_string(),
        ];
        let tail = StderrTail::default();
        let (peer, process) = spawn(launch(&script), &tail).expect("started");
        let got = peer.request("x", None, LONG, &Cancel::new());
        assert_eq!(
            got,
            Err(Failure::Broken("it was killed by signal 9".into()))
        );
        process.settle_stderr();
        assert_eq!(
            with_stderr("start failed".into(), &tail),
            "start failed; it said: bye"
        );
    }

    #[test]
    fn missing_programs_and_directories_are_named() {
        let tail = StderrTail::default();
        let mut l = launch(&[]);
        l.command = "/nonexistent/evolve-mcp";
        let e = spawn(l, &tail).err().expect("not started");
        assert!(e.contains("was not found"), "{e}");
        let mut l = launch(&[]);
        l.cwd = Some(Path::new("/nonexistent/dir"));
        let e = spawn(l, &tail).err().expect("not started");
        assert!(
            e.contains("working directory /nonexistent/dir does not exist"),
            "{e}"
        );
    }

    #[test]
    fn stderr_lines_are_capped() {
        let long = "a".repeat(10_000);
        let input = format!("{long}\nshort\r\nlast");
        let mut reader = BufReader::new(input.as_bytes());
        let mut lines = Vec::new();
        let mut line = Vec::new();
        while read_line_capped(&mut reader, &mut line, 100).expect("read") {
            lines.push(String::from_utf8(std::mem::take(&mut line)).expect("text"));
        }
        assert_eq!(
            lines,
            ["a".repeat(100), "short\r".to_string(), "last".to_string()]
        );
    }
}
