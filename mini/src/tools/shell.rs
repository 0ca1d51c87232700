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
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use evolve_core::watch::{Rule, Sample, Stop, Verdict, Watch};

use super::ToolOutput;
use crate::cancel::Cancel;
use crate::sandbox::{reaper, Plan};

/// How often the clock and the cancel are looked at while a command runs (its end
/// is noticed at once).
const POLL: Duration = Duration::from_millis(50);
/// After the command ends (or is killed), how long its output pipes may stay open
/// before the result is returned without waiting for them (a process that left the
/// process group can hold them forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What a limit signal means, for the status line: a command past `[limits]` is
/// stopped by the kernel with `SIGXCPU` (CPU time) or `SIGXFSZ` (file size) — also seen
/// as the shell's exit code 128 + the signal (`via_shell`), when a process the shell ran
/// was stopped.
fn limit_hint(signal: i32, via_shell: bool) -> &'static str {
    #[cfg(unix)]
    match (signal, via_shell) {
        (libc::SIGXCPU, false) => return ": the CPU time limit ([limits] cpu_secs) stopped it",
        (libc::SIGXFSZ, false) => {
            return ": the file size limit ([limits] file_size_mib) stopped it"
        }
        (libc::SIGXCPU, true) => {
            return " — 128 + SIGXCPU: the CPU time limit ([limits] cpu_secs) probably stopped a program it ran"
        }
        (libc::SIGXFSZ, true) => {
            return " — 128 + SIGXFSZ: the file size limit ([limits] file_size_mib) probably stopped a program it ran"
        }
        _ => {}
    }
    let _ = (signal, via_shell);
    ""
}

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

    /// Every byte pushed so far.
    fn total(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.dropped
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
    /// Stopped by the watch (see [`evolve_core::watch`]), after this long.
    Stopped(Stop, Duration),
    Cancelled,
}

/// How often the command's processes are sampled for the smart timeout.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// What the processes of group `pgid` have used so far (Linux: `/proc`); `None`
/// elsewhere, where the timeout is fixed.
#[cfg(target_os = "linux")]
fn sample_group(pgid: u32) -> Option<(u64, u64)> {
    // SAFETY: sysconf(3) reads a constant; no memory involved.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let (mut cpu_ticks, mut io) = (0u64, 0u64);
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name (which may hold spaces and parentheses): state, ppid,
        // pgrp, …, utime, stime, cutime and cstime as the 12th to 15th fields.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) != Some(pgid) {
            continue;
        }
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // utime, stime, and the children's it has waited for (a loop of short-lived
        // programs spends its time in them).
        cpu_ticks += field(11) + field(12) + field(13) + field(14);
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            for line in text.lines() {
                if let Some(v) = line
                    .strip_prefix("rchar:")
                    .or_else(|| line.strip_prefix("wchar:"))
                {
                    io += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    Some((cpu_ticks * 1000 / ticks, io))
}

#[cfg(not(target_os = "linux"))]
fn sample_group(_pgid: u32) -> Option<(u64, u64)> {
    None
}

/// Runs `command` in `dir` under `plan`; see the module docs. `timeout` is the
/// effective limit (the caller has already applied "the argument may only lower the
/// configured one"); where `/proc` tells what the command does, a busy one gets up to
/// 4 times that, and one idle for `idle_stop` (zero: never) is stopped early.
pub fn run(
    command: &str,
    dir: &Path,
    timeout: Duration,
    idle_stop: Duration,
    cap: usize,
    cancel: &Cancel,
    plan: &Plan,
) -> ToolOutput {
    if command.trim().is_empty() {
        return ToolOutput::error("`command` is empty; give the shell command to run");
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, timeout, idle_stop, cap, cancel, plan);
        return ToolOutput::error("the shell tool needs a Unix system (sh and process groups)");
    }
    #[cfg(unix)]
    run_unix(command, dir, timeout, idle_stop, cap, cancel, plan)
}

#[cfg(unix)]
fn run_unix(
    command: &str,
    dir: &Path,
    timeout: Duration,
    idle_stop: Duration,
    cap: usize,
    cancel: &Cancel,
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
    // the cancel are looked at every POLL meanwhile.
    let (exit_tx, exit_rx) = mpsc::channel();
    thread::spawn(move || {
        let status = child.wait();
        reaper::forget(pgid);
        let _ = exit_tx.send(status);
    });
    // The smart timeout: sampled every second where `/proc` tells (Linux), the fixed
    // timeout elsewhere.
    let started = Instant::now();
    let timeout_ms = timeout.as_millis() as u64;
    let sampled = sample_group(pgid).is_some();
    let rule = if sampled {
        Rule {
            idle_stop_ms: idle_stop.as_millis() as u64,
            ..Rule::for_timeout(timeout_ms)
        }
    } else {
        Rule {
            timeout_ms,
            max_factor: 1,
            idle_stop_ms: 0,
            grace_ms: timeout_ms,
        }
    };
    let mut watch = Watch::new(rule);
    let mut next_sample = started + if sampled { SAMPLE_EVERY } else { timeout };
    let stop = |why: End| {
        kill_group(pgid);
        // SIGKILL to its group ends the command, whose wait then returns.
        let _ = exit_rx.recv();
        why
    };
    let end = loop {
        let left = next_sample.saturating_duration_since(Instant::now());
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
                if cancel.is_cancelled() {
                    break stop(End::Cancelled);
                }
                let now = Instant::now();
                if now < next_sample {
                    continue;
                }
                let (cpu_ms, io_bytes) = sample_group(pgid).unwrap_or_default();
                let output_bytes = [&stdout, &stderr]
                    .iter()
                    .map(|b| b.lock().map(|b| b.total()).unwrap_or(0))
                    .sum();
                let sample = Sample {
                    cpu_ms,
                    io_bytes,
                    output_bytes,
                };
                let ran = now - started;
                match watch.observe(ran.as_millis() as u64, sample) {
                    Verdict::Go => {
                        next_sample = now + SAMPLE_EVERY;
                        if !sampled {
                            // Without samples the only decision is at the timeout.
                            next_sample = started + timeout;
                        }
                    }
                    Verdict::Stop(why) => break stop(End::Stopped(why, ran)),
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
            (Some(code), _) => (
                format!("[exit code {code}{}]", limit_hint(code - 128, true)),
                true,
            ),
            (None, Some(sig)) => (
                format!("[killed by signal {sig}{}]", limit_hint(sig, false)),
                true,
            ),
            (None, None) => ("[ended without an exit code]".to_string(), true),
        },
        End::Stopped(why, ran) => {
            let ran = ran.as_secs_f64();
            let said = match why {
                Stop::Timeout => format!("timed out after {secs:.0} s"),
                Stop::Idle { idle_ms } => format!(
                    "stopped after {ran:.0} s: idle for {:.0} s (no CPU, I/O or output), before its {secs:.0} s timeout",
                    idle_ms as f64 / 1000.0
                ),
                Stop::IdleAfterExtension { .. } => format!(
                    "timed out after {ran:.0} s: it was busy at its {secs:.0} s timeout and given more time, then went idle"
                ),
                Stop::Limit { limit_ms } => format!(
                    "timed out after {:.0} s: busy all along, stopped at 4 times its {secs:.0} s timeout",
                    limit_ms as f64 / 1000.0
                ),
            };
            (
                format!("[{said}: the command and everything it started were killed]"),
                true,
            )
        }
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

    /// The smart timeout (Linux): a command busy past its timeout gets more time and
    /// finishes; an idle one is stopped before its timeout, and says why.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_busy_command_gets_more_time_and_an_idle_one_is_stopped_early() {
        let mut tools = tools_config();
        tools.shell_timeout = Duration::from_secs(2);
        tools.shell_idle_stop = Duration::from_secs(2);
        let h = Harness::with_tools(tools);
        // Busy for about 4 s (twice its timeout): a CPU loop that watches the clock.
        let busy =
            "end=$(( $(date +%s) + 4 )); while [ $(date +%s) -lt $end ]; do :; done; echo finished";
        let out = h.call("shell", json!({ "command": busy }));
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("finished"), "{}", out.content);
        let mut tools = tools_config();
        tools.shell_timeout = Duration::from_secs(10);
        tools.shell_idle_stop = Duration::from_secs(2);
        let idle = Harness::with_tools(tools);
        let t = Instant::now();
        let out = idle.call("shell", json!({"command": "sleep 30"}));
        assert!(out.is_error);
        assert!(
            out.content.contains("idle for 2 s (no CPU, I/O or output)"),
            "{}",
            out.content
        );
        assert!(t.elapsed() < Duration::from_secs(9), "not stopped early");
        // Busy for ever: stopped at 4 times the timeout.
        let out = h.call("shell", json!({"command": "while :; do :; done"}));
        assert!(
            out.content
                .contains("busy all along, stopped at 4 times its 2 s timeout"),
            "{}",
            out.content
        );
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
        h.cancel.cancel();
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
