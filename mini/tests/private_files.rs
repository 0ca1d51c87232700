//! Every file and directory Evolve creates is its user's alone (0600 and 0700), whichever
//! command creates it, and a home others could read is made private: through the built
//! binary, started with umask 000 (the most permissive a user can have), so nothing
//! depends on the umask of the machine running the tests.

mod support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Reply, Run, World};

/// `evolve ARGS` as `w.run` runs it, but under umask 000.
fn umask0(w: &World, args: &[&str]) -> Command {
    let base = w.command(args);
    let mut sh = Command::new("sh");
    sh.env_clear();
    for (key, value) in base.get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    sh.arg("-c")
        .arg("umask 000 && exec \"$@\"")
        .arg("sh")
        .arg(base.get_program())
        .args(base.get_args())
        .stdin(Stdio::null());
    sh
}

fn run0(w: &World, args: &[&str]) -> Run {
    Run::from(umask0(w, args).output().expect("run evolve"))
}

fn run0_stdin(w: &World, args: &[&str], input: &str) -> Run {
    let mut child = umask0(w, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn evolve");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), input.as_bytes())
        .expect("write stdin");
    Run::from(child.wait_with_output().expect("wait for evolve"))
}

/// Every path under `root` (itself included) that group or others can use, with its mode.
fn open_to_others(root: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            found.push((path.clone(), mode));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                todo.push(entry.expect("entry").path());
            }
        }
    }
    found
}

/// All paths under `root`, relative, for the failure message.
fn listing(root: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let mode = std::fs::symlink_metadata(&path)
            .expect("stat")
            .permissions()
            .mode();
        all.push(format!(
            "{:o} {}",
            mode & 0o7777,
            path.strip_prefix(root).unwrap_or(&path).display()
        ));
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                todo.push(entry.expect("entry").path());
            }
        }
    }
    all.sort();
    all
}

fn assert_private(w: &World, made_by: &str, expect: &[&str]) {
    for name in expect {
        assert!(
            w.home.join(name).exists(),
            "{made_by}: {name} was not created: {:#?}",
            listing(&w.home)
        );
    }
    let open = open_to_others(&w.home);
    assert!(
        open.is_empty(),
        "{made_by}: readable by others: {open:?}\n{:#?}",
        listing(&w.home)
    );
}

/// A world with a model whose home does not exist yet: the command creates it.
fn fresh(name: &str) -> World {
    let w = World::new(name);
    std::fs::remove_dir_all(&w.home).expect("remove the home");
    w
}

#[test]
fn a_home_made_by_memory_add_is_private() {
    let w = World::uncreated("private-memory-add");
    run0(&w, &["memory", "add", "a private fact"]).expect(0);
    assert_private(&w, "memory add", &["evolve.redb"]);
    run0(
        &w,
        &[
            "memory",
            "export",
            w.home.join("mine.json").to_str().unwrap(),
        ],
    )
    .expect(0);
    assert_private(&w, "memory export", &["mine.json"]);
}

#[test]
fn a_home_made_by_config_init_is_private() {
    let w = World::uncreated("private-config-init");
    run0(&w, &["config", "init"]).expect(0);
    assert_private(&w, "config init", &["config.toml"]);
    run0(&w, &["config", "init", "--force"]).expect(0);
    assert_private(&w, "config init --force", &["config.toml"]);
}

#[test]
fn a_home_made_by_ask_chat_tasks_skills_and_a_tool_is_private() {
    let w = fresh("private-ask");
    run0(&w, &["ask", "hello"]).expect(0);
    assert_private(&w, "ask", &["evolve.redb"]);

    // A file the agent writes into the workspace.
    w.fake.push(Reply::tool(
        "write_file",
        r#"{"path": "notes/today.txt", "content": "private"}"#,
    ));
    w.fake.push(Reply::text("Written."));
    run0(&w, &["ask", "--allow", "L3", "--yes", "write my notes"]).expect(0);
    assert_private(&w, "write_file", &["workspace/notes/today.txt"]);

    run0_stdin(&w, &["chat"], "hello again\n/quit\n").expect(0);
    run0(&w, &["tasks", "add", "--every", "30m", "what is new?"]).expect(0);
    run0(&w, &["skills", "new", "my-skill"]).expect(0);
    let sessions = run0(&w, &["sessions", "list", "--json"]).expect(0).json();
    let id = sessions[0]["id"]
        .as_str()
        .expect("a session id")
        .to_string();
    let out = w.home.join("session.md");
    run0(
        &w,
        &["sessions", "export", &id, "--out", out.to_str().unwrap()],
    )
    .expect(0);
    assert_private(
        &w,
        "chat, tasks add, skills new, sessions export",
        &["skills/my-skill/SKILL.md", "session.md"],
    );
}

#[test]
fn serve_keeps_its_token_and_address_private() {
    let w = fresh("private-serve");
    let mut child = umask0(&w, &["serve", "--host", "0.0.0.0", "--port", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("serve did not start: {said:#?}"));
        let started = line.contains("serving on");
        said.push(line);
        if started {
            break;
        }
    }
    assert_private(&w, "serve", &["evolve.redb", "serve.token", "serve.json"]);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_home_others_can_read_is_made_private_once() {
    let mut w = World::without_model("private-tighten");
    // Not the user's own home directory (whose mode evolve leaves alone).
    w.env("HOME", std::env::temp_dir().to_str().unwrap());
    w.config("log = \"warn\"\n");
    w.run(&["memory", "add", "made before"]).expect(0);
    for (path, mode) in [
        (w.home.clone(), 0o755),
        (w.home.join("evolve.redb"), 0o644),
        (w.config_path(), 0o644),
    ] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let run = w.run(&["memory", "list"]).expect(0);
    assert!(
        run.stderr.contains("made them private to you"),
        "said once: {}",
        run.stderr
    );
    assert_private(
        &w,
        "memory list on an open home",
        &["evolve.redb", "config.toml"],
    );
    let again = w.run(&["memory", "list"]).expect(0);
    assert!(
        !again.stderr.contains("private"),
        "nothing more to say: {}",
        again.stderr
    );
}
