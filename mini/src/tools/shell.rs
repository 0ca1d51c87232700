//! The `shell` tool: `sh -c COMMAND` in the workspace, with no stdin, confined by the
//! kernel to what the call's level may touch (see `crate::sandbox`: read-only below L3,
//! the workspace above; never Evolve's home or the user's home; a rebuilt environment
//! without Evolve's variables), in its own process group so that a timeout, a Ctrl-C or
//! the end of the command stops everything it started, and with its output capped.
//!
//! Whether a command may run at all (L5 by default, lowered per prefix by the user) is
//! the permission check's decision, made before this runs.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::ToolOutput;
use crate::sandbox::{reaper, Plan};

/// How often the clock and the cancel flag are looked at while a command runs (its end
/// is noticed at once).
const POLL: Duration = Duration::from_millis(50);
/// After the command ends (or is killed), how long its output pipes may stay open
/// before the result is returned without waiting for them (a process that left the
/// process group can hold them forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The first and last bytes of a stream, up to a cap: the head shows what started, the
/// tail how it ended (errors are usually last).
#[derive(Debug, Default)]
struct Capped {
    head: Vec<u8>,
    tail: Vec<u8>,
    dropped: u64,
    cap: usize,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Capped {
            cap,
            ..Capped::default()
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let head_room = (self.cap / 2).saturating_sub(self.head.len());
        let n = head_room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
        if bytes.is_empty() {
            return;
        }
        let tail_cap = self.cap - self.cap / 2;
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > tail_cap {
            let excess = self.tail.len() - tail_cap;
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    fn text(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n[… {} bytes omitted …]\n", self.dropped));
        }
        out.push_str(&String::from_utf8_lossy(&self.tail));
        out
    }
}

/// Reads `pipe` into `buf` until its end, then says so on `done`.
fn reader(
    mut pipe: impl Read + Send + 'static,
    buf: Arc<Mutex<Capped>>,
    done: mpsc::Sender<()>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut b) = buf.lock() {
                        b.push(&chunk[..n]);
                    }
                }
            }
        }
        let _ = done.send(());
    })
}

/// Kills every process of the group `pgid` (the command and whatever it started).
#[cfg(unix)]
fn kill_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
    }
}

/// How the command ended.
enum End {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

/// Runs `command` in `dir` under `plan`; see the module docs. `timeout` is the
/// effective limit (the caller has already applied "the argument may only lower the
/// configured one").
pub fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    cap: usize,
    cancel: &AtomicBool,
    plan: &Plan,
) -> ToolOutput {
    if command.trim().is_empty() {
        return ToolOutput::error("`command` is empty; give the shell command to run");
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, timeout, cap, cancel, plan);
        return ToolOutput::error("the shell tool needs a Unix system (sh and process groups)");
    }
    #[cfg(unix)]
    run_unix(command, dir, timeout, cap, cancel, plan)
}

#[cfg(unix)]
fn run_unix(
    command: &str,
    dir: &Path,
    timeout: Duration,
    cap: usize,
    cancel: &AtomicBool,
    plan: &Plan,
) -> ToolOutput {
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let applied = match plan.apply(&mut cmd) {
        Ok(a) => a,
        Err(e) => {
            return ToolOutput::error(format!(
                "not run: the command could not be confined ({e}); nothing was started"
            ))
        }
    };
    let spawned = reaper::spawn(&mut cmd);
    drop(applied);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            return ToolOutput::error(format!(
                "cannot start `sh` confined in {}: {e} — is there a POSIX shell on this system?",
                dir.display()
            ))
        }
    };
    let pgid = child.id();
    let stdout = Arc::new(Mutex::new(Capped::new(cap)));
    let stderr = Arc::new(Mutex::new(Capped::new(cap)));
    let (done_tx, done_rx) = mpsc::channel();
    let mut readers = 0;
    if let Some(pipe) = child.stdout.take() {
        reader(pipe, Arc::clone(&stdout), done_tx.clone());
        readers += 1;
    }
    if let Some(pipe) = child.stderr.take() {
        reader(pipe, Arc::clone(&stderr), done_tx.clone());
        readers += 1;
    }
    drop(done_tx);

    // The end of the command is heard at once (a thread waits for it); the clock and
    // the cancel flag are looked at every POLL meanwhile.
    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let status = child.wait();
        reaper::forget(pgid);
        let _ = exit_tx.send(status);
    });
    let deadline = Instant::now() + timeout;
    let stop = |why: End| {
        kill_group(pgid);
        // SIGKILL to its group ends the command, whose wait then returns.
        let _ = exit_rx.recv();
        why
    };
    let end = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match exit_rx.recv_timeout(left.min(POLL)) {
            Ok(Ok(status)) => break End::Exited(status),
            Ok(Err(e)) => {
                kill_group(pgid);
                return ToolOutput::error(format!("lost track of the command: {e}"));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                kill_group(pgid);
                return ToolOutput::error("lost track of the command: its waiter ended");
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if cancel.load(Ordering::Relaxed) {
                    break stop(End::Cancelled);
                }
                if Instant::now() >= deadline {
                    break stop(End::TimedOut);
                }
            }
        }
    };
    // Whatever the command left running in its group (`cmd &`) stops with it, and so
    // does what it started outside the group (`setsid`); their output already in the
    // pipes is still read below.
    kill_group(pgid);
    reaper::reap_strays();
    let drained_by = Instant::now() + DRAIN_GRACE;
    for _ in 0..readers {
        let left = drained_by.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }

    let text = |b: &Arc<Mutex<Capped>>| b.lock().map(|b| b.text()).unwrap_or_default();
    let (out, err) = (text(&stdout), text(&stderr));
    let mut body = out;
    if !err.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(&err);
    }
    let body = cut_middle(&body, cap);
    let secs = timeout.as_secs_f64();
    let (status_line, is_error) = match end {
        End::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => ("[exit code 0]".to_string(), false),
            (Some(code), _) => (format!("[exit code {code}]"), true),
            (None, Some(sig)) => (format!("[killed by signal {sig}]"), true),
            (None, None) => ("[ended without an exit code]".to_string(), true),
        },
        End::TimedOut => (
            format!(
                "[timed out after {secs:.0} s: the command and everything it started were killed]"
            ),
            true,
        ),
        End::Cancelled => (
            "[cancelled: the command and everything it started were killed]".to_string(),
            true,
        ),
    };
    let mut content = body;
    if !content.is_empty() && !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&status_line);
    ToolOutput { content, is_error }
}

/// `text` cut to at most `cap` bytes by dropping its middle (on character boundaries).
pub fn cut_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let half = cap / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - (cap - half);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    format!(
        "{}\n[… {} bytes omitted …]\n{}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::tools::testing::{tools_config, Harness};
    use serde_json::json;

    #[test]
    fn commands_run_in_the_workspace_and_report_their_exit() {
        let h = Harness::new();
        h.write("hello.txt", "hi there");
        let cases: &[(&str, bool, &[&str])] = &[
            ("cat hello.txt", false, &["hi there", "[exit code 0]"]),
            ("pwd", false, &[h.workspace.to_str().unwrap()]),
            (
                "echo out; echo err >&2; exit 3",
                true,
                &["out\n[stderr]\nerr\n[exit code 3]"],
            ),
            (
                "read x && echo got || echo no-stdin",
                false,
                &["no-stdin\n[exit code 0]"],
            ),
            ("kill -9 $$", true, &["[killed by signal 9]"]),
        ];
        for (command, is_error, expected) in cases {
            let out = h.call("shell", json!({ "command": command }));
            assert_eq!(out.is_error, *is_error, "{command}: {}", out.content);
            for e in *expected {
                assert!(out.content.contains(e), "{command}: {}", out.content);
            }
        }
    }

    #[test]
    fn only_the_allowlisted_environment_reaches_a_command() {
        // Names no other test or the system uses; set once for this process.
        std::env::set_var("EVOLVE_TEST_API_KEY", "sk-should-not-leak");
        std::env::set_var("EVOLVE_TEST_PLAIN", "not-passed-either");
        std::env::set_var("EVOLVE_TEST_DEEPSEEK", "sk-by-value-only-4242");
        let mut h = Harness::new();
        h.config.model.api_key = Some(crate::secret::Secret::new("sk-by-value-only-4242"));
        let out = h.call(
            "shell",
            json!({"command": "echo \"[$EVOLVE_TEST_API_KEY][$EVOLVE_TEST_PLAIN][$EVOLVE_TEST_DEEPSEEK]\"; env"}),
        );
        assert!(out.content.starts_with("[][][]"), "{}", out.content);
        assert!(!out.content.contains("EVOLVE_"), "{}", out.content);
        assert!(
            out.content.contains("HOME=")
                && !out
                    .content
                    .contains(&format!("HOME={}\n", h.workspace.display())),
            "{}",
            out.content
        );
        assert!(out.content.contains("PATH="), "{}", out.content);
    }

    #[test]
    fn a_timeout_kills_the_whole_process_group() {
        let mut tools = tools_config();
        tools.shell_timeout = Duration::from_secs(60);
        let h = Harness::with_tools(tools);
        // The argument lowers the configured 60 s to 1 s.
        let out = h.call(
            "shell",
            json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_secs": 1}),
        );
        assert!(out.is_error);
        assert!(out.content.contains("started"), "{}", out.content);
        assert!(
            out.content.contains("[timed out after 1 s"),
            "{}",
            out.content
        );
        let pid = h.read("bg.pid").trim().to_string();
        assert!(!pid.is_empty());
        // The background `sleep` is gone (or a zombie waiting for a reaper).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z") | Some("X")),
            "still running: {stat}"
        );
    }

    #[test]
    fn background_processes_stop_when_the_command_ends() {
        let h = Harness::new();
        let out = h.call("shell", json!({"command": "sleep 30 & echo $! > bg.pid"}));
        assert!(!out.is_error, "{}", out.content);
        let pid = h.read("bg.pid").trim().to_string();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z") | Some("X")),
            "still running: {stat}"
        );
    }

    #[test]
    fn what_a_command_starts_outside_its_group_stops_with_it_too() {
        let h = Harness::new();
        // A new session (`setsid`), and a double fork that leaves the new session's
        // leader alive: neither is in the command's process group.
        let out = h.call(
            "shell",
            json!({"command": "setsid sleep 30 & echo $! > a.pid; (setsid sh -c 'sleep 30 & echo $! > b.pid; exec sleep 31' &); sleep 0.3"}),
        );
        assert!(!out.is_error, "{}", out.content);
        for file in ["a.pid", "b.pid"] {
            let pid = h.read(file).trim().to_string();
            assert!(!pid.is_empty(), "{file}");
            let gone = (0..50).any(|_| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|s| s.split_whitespace().next());
                if matches!(state, None | Some("Z") | Some("X")) {
                    return true;
                }
                thread::sleep(Duration::from_millis(20));
                false
            });
            assert!(gone, "{file}: pid {pid} still running");
        }
    }

    #[test]
    fn the_timeout_argument_cannot_raise_the_configured_limit() {
        let mut tools = tools_config();
        tools.shell_timeout = Duration::from_secs(1);
        let h = Harness::with_tools(tools);
        let out = h.call("shell", json!({"command": "sleep 20", "timeout_secs": 600}));
        assert!(
            out.content.contains("[timed out after 1 s"),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_cancel_stops_the_command() {
        let h = Harness::new();
        h.cancel.store(true, Ordering::Relaxed);
        let out = h.call("shell", json!({"command": "sleep 20"}));
        assert!(out.is_error);
        assert!(out.content.contains("[cancelled"), "{}", out.content);
    }

    #[test]
    fn output_is_capped_keeping_head_and_tail() {
        let mut tools = tools_config();
        tools.output_cap = 1000;
        let h = Harness::with_tools(tools);
        let out = h.call(
            "shell",
            json!({"command": "echo FIRST; i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done; echo LAST"}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("FIRST"), "{}", out.content);
        assert!(
            out.content.contains("LAST\n[exit code 0]"),
            "{}",
            out.content
        );
        assert!(out.content.contains("bytes omitted"), "{}", out.content);
        assert!(out.content.len() < 1200, "{}", out.content.len());
    }

    #[test]
    fn capped_buffers_and_cuts_keep_both_ends() {
        let mut c = Capped::new(10);
        c.push(b"0123456789abcdef");
        assert_eq!(c.text(), "01234\n[… 6 bytes omitted …]\nbcdef");
        assert_eq!(cut_middle("héllo wörld", 100), "héllo wörld");
        let cut = cut_middle("ééééé", 5);
        assert!(cut.starts_with('é') && cut.ends_with('é'), "{cut}");
    }
}
