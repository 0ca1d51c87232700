//! Shared support of the end-to-end tests: a fresh `$EVOLVE_HOME`, the in-repo fake
//! model server, and running the built `evolve` binary against them with a clean
//! environment (so nothing from the machine running the tests leaks in).
//!
//! Each test file compiles this module on its own, so some helpers go unused in some.

#![allow(dead_code)]

pub mod dingtalk;
pub mod feishu;
pub mod loopback;
pub mod mcp;
pub mod oauth;
pub mod page;
pub mod serve;
pub mod telegram;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

// Not every test file scripts replies.
#[allow(unused_imports)]
pub use evolve_fake_llm::{FakeLlm, Reply};

/// The background prompts' markers (mini/src/agents/prompts.rs).
/// The one call after an answer: the session's title, the grade, the tool-chain review
/// and the memories worth keeping, in one JSON object ([`post_reply`]).
pub const POST_TURN: &str = "[evolve:post]";
pub const REFLECT: &str = "[evolve:reflect]";
pub const STYLE: &str = "[evolve:style]";
pub const SUMMARIZE: &str = "[evolve:summarize]";
/// The classification of MCP tools (mini/src/agents/mcp_levels/classify.rs `CLASSIFY_MARKER`).
pub const CLASSIFY: &str = "[evolve:classify]";
/// Crystallization of a task into a skill, and lessons from failed tasks.
pub const CRYSTALLIZE: &str = "[evolve:crystallize]";
pub const LESSON: &str = "[evolve:lesson]";
/// The summary of a cluster of memories in memory maintenance.
pub const DIGEST: &str = "[evolve:digest]";

/// The reply of the call after an answer with these parts (`title`, `grade`,
/// `tool_chain`, `memories`), e.g. `json!({"grade": {"score": 0.9, "reason": "ok"}})`.
pub fn post_reply(parts: serde_json::Value) -> Reply {
    Reply::text(parts.to_string())
}

/// A reply of the call after an answer that grades the reply `score` (and finds nothing
/// to remember).
pub fn graded(score: f64) -> Reply {
    post_reply(serde_json::json!({"grade": {"score": score, "reason": "fine"}, "memories": []}))
}

/// A test's world: its own home directory and model server.
pub struct World {
    pub home: PathBuf,
    pub fake: FakeLlm,
    /// Whether runs point at `fake` (`OPENAI_BASE_URL`, the model names, `EVOLVE_LOG`).
    model: bool,
    /// Changes to every later run's environment, applied last: `Some` sets, `None` removes.
    env: Vec<(String, Option<String>)>,
}

impl World {
    /// A fresh home and a fresh fake model.
    pub fn new(name: &str) -> World {
        World::make(name, true, true)
    }

    /// A fresh home and no model configured: the runs see no `OPENAI_*` or `EVOLVE_*`
    /// variable but `EVOLVE_HOME`.
    pub fn without_model(name: &str) -> World {
        World::make(name, false, true)
    }

    /// Like [`World::without_model`], but the home directory does not exist yet
    /// (`evolve config init` creates it).
    pub fn uncreated(name: &str) -> World {
        World::make(name, false, false)
    }

    fn make(name: &str, model: bool, create: bool) -> World {
        static N: AtomicUsize = AtomicUsize::new(0);
        let home = std::env::temp_dir().join(format!(
            "evolve-e2e-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&home);
        if create {
            std::fs::create_dir_all(&home).expect("create the test home");
        }
        let fake = FakeLlm::start();
        // Background prompts never take the main replies a test scripted.
        for marker in [
            POST_TURN,
            REFLECT,
            STYLE,
            SUMMARIZE,
            CLASSIFY,
            CRYSTALLIZE,
            LESSON,
            DIGEST,
        ] {
            fake.quiet(marker);
        }
        // Unscripted, the call after an answer gets `ok`: no title (sessions keep their
        // question as the title, the cases find sessions by it), no grade, no memory.
        World {
            home,
            fake,
            model,
            env: Vec::new(),
        }
    }

    /// Sets `key` = `value` in the environment of every later run.
    pub fn env(&mut self, key: &str, value: &str) -> &mut World {
        self.env.push((key.to_string(), Some(value.to_string())));
        self
    }

    /// Removes `key` from the environment of every later run.
    pub fn env_remove(&mut self, key: &str) -> &mut World {
        self.env.push((key.to_string(), None));
        self
    }

    /// The workspace the file tools use.
    pub fn workspace(&self) -> PathBuf {
        let w = self.home.join("workspace");
        std::fs::create_dir_all(&w).expect("create the workspace");
        w
    }

    /// `$EVOLVE_HOME/config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.home.join("config.toml")
    }

    /// Fills the store with `memories` (records as `evolve memory export` writes them,
    /// with any `created_at`) through `evolve memory import`.
    #[allow(dead_code)] // not every test file seeds memories
    pub fn seed_memories(&self, memories: Vec<serde_json::Value>) {
        let path = self.home.join("seed.json");
        let doc = serde_json::json!({"schema_version": 2, "memories": memories, "sessions": []});
        std::fs::write(&path, doc.to_string()).expect("write the seed");
        self.run(&["memory", "import", path.to_str().expect("utf-8 path")])
            .expect(0);
    }

    /// Writes `$EVOLVE_HOME/config.toml`, creating the home if need be.
    pub fn config(&self, toml: &str) {
        std::fs::create_dir_all(&self.home).expect("create the test home");
        std::fs::write(self.config_path(), toml).expect("write config.toml");
    }

    /// The `evolve` command with this world's environment: the binary this test
    /// built, or the one `EVOLVE_BIN` names (another build, for before/after figures).
    pub fn command(&self, args: &[&str]) -> Command {
        let bin =
            std::env::var_os("EVOLVE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_evolve").into());
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("EVOLVE_HOME", &self.home)
            .stdin(Stdio::null());
        if self.model {
            cmd.env("OPENAI_BASE_URL", self.fake.base_url())
                .env("EVOLVE_MODEL", "fake-main")
                .env("EVOLVE_CHEAP_MODEL", "fake-cheap")
                .env("EVOLVE_LOG", "info");
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Runs `evolve ARGS` to the end.
    pub fn run(&self, args: &[&str]) -> Run {
        let out = self.command(args).output().expect("run evolve");
        Run::from(out)
    }

    /// Runs `evolve ARGS` with `input` on stdin.
    pub fn run_stdin(&self, args: &[&str], input: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn evolve");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
        Run::from(child.wait_with_output().expect("wait for evolve"))
    }

    /// The system message of the `n`-th main-model request (markers excluded).
    pub fn main_requests(&self) -> Vec<serde_json::Value> {
        self.fake
            .chat_requests()
            .into_iter()
            .filter(|r| !r.body.contains("[evolve:"))
            .map(|r| r.json)
            .collect()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// A finished run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Run {
    /// Panics with both streams unless the exit code is `code`.
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "exit code {} (want {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// The stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

/// Fails the test when the run crashed: a panic message, Rust's panic exit code 101, or
/// killed by a signal (no exit code).
pub fn no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked") && run.code != 101 && run.code != -1,
        "crashed (exit {}):\n{}",
        run.code,
        run.stderr
    );
}

/// The text of every message of a recorded request, joined.
pub fn all_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// What a recorded request tells the model besides the conversation: its system
/// message, then the context block chosen for the question (memories, skills, the
/// tool-chain review), which comes right before the question.
pub fn system_text(request: &serde_json::Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let content = |m: &serde_json::Value| m["content"].as_str().unwrap_or_default().to_string();
    let mut text = messages.first().map(content).unwrap_or_default();
    for m in &messages[1.min(messages.len())..] {
        let c = content(m);
        if c.starts_with(evolve_core::history::CONTEXT_HEADER) {
            text.push_str("\n\n");
            text.push_str(&c);
        }
    }
    text
}

/// Whether a path exists.
pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// A reply asking for one tool call.
pub fn tool_call(name: &str, args: &str) -> Reply {
    Reply::ToolCalls(vec![(name.to_string(), args.to_string())])
}

/// An `evolve chat` driven through pipes, its stdout read as it comes.
pub struct Chat {
    pub child: Child,
    out: Receiver<String>,
    /// Everything printed so far.
    pub seen: String,
}

impl Chat {
    pub fn start(w: &World) -> Chat {
        Chat::start_with(w, &["chat"])
    }

    /// `evolve ARGS…` (a chat: `["chat", "--session", id]`).
    pub fn start_with(w: &World, args: &[&str]) -> Chat {
        let mut child = w
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn evolve chat");
        let mut stdout = child.stdout.take().expect("stdout");
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(String::from_utf8_lossy(&buf[..n]).into()).is_err() {
                    break;
                }
            }
        });
        Chat {
            child,
            out,
            seen: String::new(),
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    pub fn wait_for(&mut self, needle: &str) {
        self.wait_for_count(needle, 1);
    }

    /// Waits until `needle` has been printed `n` times in all.
    pub fn wait_for_count(&mut self, needle: &str, n: usize) {
        let end = Instant::now() + Duration::from_secs(30);
        while self.seen.matches(needle).count() < n {
            let left = end.saturating_duration_since(Instant::now());
            match self.out.recv_timeout(left) {
                Ok(s) => self.seen.push_str(&s),
                Err(_) => panic!("chat never printed {needle:?}:\n{}", self.seen),
            }
        }
    }

    /// Ctrl-C, as the terminal sends it.
    pub fn interrupt(&self) {
        self.signal("-INT");
    }

    /// Sends a signal to evolve (`-INT`, `-TERM`).
    pub fn signal(&self, sig: &str) {
        send_signal(self.child.id(), sig);
    }

    /// Closes stdin (Ctrl-D) and waits for the end (killed after 90 s).
    pub fn finish(mut self) -> Option<i32> {
        drop(self.child.stdin.take());
        let end = Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("chat did not end:\n{}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether the kernel confines what evolve runs (Landlock), as `evolve doctor --json`
/// reports it — asked once per test binary, with no model, so no scripted reply is used
/// up. Under `CI=true` it must: CI's kernel has Landlock, and a test that skips there
/// would hide a broken sandbox.
pub fn landlock() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        let w = World::without_model("landlock-doctor");
        let doctor = w.run(&["doctor", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap_or_default();
        let on = doc["confinement"]["kernel"] == "landlock";
        if !on {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI's kernel has Landlock, but: {} {}",
                doctor.stdout,
                doctor.stderr
            );
            eprintln!("skipped: no Landlock here ({})", doc["confinement_summary"]);
        }
        on
    })
}

/// Sends signal `sig` (`-INT`, `-TERM`) to process `pid`, as `kill` does.
pub fn send_signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// `git ARGS` in `dir` with a fixed identity and no system config; panics on failure.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
