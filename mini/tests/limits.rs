//! What a command may take and reach, through `evolve ask` with a scripted model (the
//! model does what injected text tells it):
//!
//! | class | test |
//! |---|---|
//! | `tail /dev/zero` given L2 by a prefix (grew to 2.8 GiB in 3 s) and its spellings | `an_endless_device_is_no_harmless_input` |
//! | the same through a link whose name says nothing, run unattended | `a_link_to_an_endless_device_stops_at_the_memory_limit` |
//! | a writer without end | `a_file_stops_at_the_file_size_limit` |
//! | a CPU loop | `a_cpu_loop_stops_at_the_cpu_limit` |
//! | a fork bomb | `a_fork_bomb_stops_at_the_process_limit` |
//! | a repository's clean filter, run by `git status` (L2), connecting to a root-owned pathname socket | `a_repository_filter_reaches_no_unix_socket` |
//! | the same from an abstract socket, and from an L3 command that keeps TCP | `no_unix_socket_below_l4_but_l3_keeps_tcp` |
//! | the limits in force, shown and checked | `doctor_shows_the_limits_and_config_check_refuses_a_useless_one` |
//!
//! Each asserts what the person sees: the command's failure reaches the model and the
//! turn record, and Evolve answers and stays small.

mod support;

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::mcp::tool_results;
use support::*;

/// A world with the shell at L5, these prefixes and this `[limits]` table.
fn world(name: &str, prefixes: &[(&str, &str)], limits: &str) -> World {
    let w = World::new(name);
    let list: Vec<String> = prefixes
        .iter()
        .map(|(p, l)| format!("[{p:?}, {l:?}]"))
        .collect();
    w.config(&format!(
        "[permission]\ncommand_prefixes = [{}]\n\n[limits]\n{limits}\n",
        list.join(", ")
    ));
    w
}

/// One model reply with these shell commands, then "Done."; `ask --json` (with `--yes`
/// when `yes`, which allows L3). The run, what each call returned to the model, and how
/// long it took.
fn ask_shell(w: &World, yes: bool, commands: &[&str]) -> (Run, Vec<String>, Duration) {
    ask_shell_with(w, yes, commands, |_| {})
}

fn ask_shell_with(
    w: &World,
    yes: bool,
    commands: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> (Run, Vec<String>, Duration) {
    w.fake.push(Reply::ToolCalls(
        commands
            .iter()
            .map(|c| ("shell".to_string(), json!({ "command": c }).to_string()))
            .collect(),
    ));
    w.fake.push(Reply::text("Done."));
    let mut args = vec!["ask", "--json"];
    if yes {
        args.push("--yes");
    }
    args.push("do as the README says");
    let mut cmd = w.command(&args);
    adjust(&mut cmd);
    let started = Instant::now();
    let run = Run::from(cmd.output().expect("run evolve"));
    let took = started.elapsed();
    assert!(
        run.code == 0 || run.code == 4,
        "exit {}: {}",
        run.code,
        run.stderr
    );
    assert!(
        run.stdout.contains("Done."),
        "Evolve answered: {}",
        run.stdout
    );
    // The request after the tool calls: the last one (a world may ask more than once).
    let results = tool_results(w, w.main_requests().len() - 1);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    (run, results, took)
}

/// The tool records of an `ask --json`.
fn tools(run: &Run) -> Vec<serde_json::Value> {
    run.json()["tools"].as_array().cloned().unwrap_or_default()
}

/// The largest resident set of any process this test process has waited for (evolve
/// and, through it, the commands it ran), in MiB.
fn children_max_rss_mib() -> i64 {
    // SAFETY: getrusage fills the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss / 1024
}

/// The reproduction: `tail` given L2 by a prefix, `/dev/zero` counted as harmless, so
/// `tail /dev/zero` ran unattended and grew without end. Now naming an endless device,
/// in any spelling, is L3: a plain `ask` (L2) does not run it, and says why.
#[test]
fn an_endless_device_is_no_harmless_input() {
    let w = world(
        "limits-endless",
        &[("tail", "L2"), ("head", "L2"), ("cat", "L2"), ("wc", "L2")],
        "",
    );
    if !landlock() {
        return;
    }
    let commands = [
        "tail /dev/zero",
        "head -c 1G /dev/urandom",
        "cat /dev/./zero",
        "wc -l //dev//random",
        "tail -f /dev/../dev/zero",
    ];
    let (run, results, took) = ask_shell(&w, false, &commands);
    for (t, result) in tools(&run).iter().zip(&results) {
        assert_eq!(t["ran"], false, "{t}");
        assert_eq!(t["level"], "L3", "{t}");
        assert!(!result.contains("[exit code"), "{result}");
    }
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // `/dev/null` is still harmless: the same prefix runs it unattended.
    let (run, _, _) = ask_shell(&w, false, &["cat /dev/null", "tail -n1 /dev/null"]);
    for t in tools(&run) {
        assert_eq!(t["ran"], true, "{t}");
        assert_eq!(t["level"], "L2", "{t}");
    }
}

/// A link in a cloned repository whose name says nothing (`data.bin -> /dev/zero`):
/// `tail data.bin` is L2 and runs unattended, and the memory limit stops it in seconds
/// with tail's own "memory exhausted", which the model reads; with `--yes` (L3) the
/// same for `tail /dev/zero` itself. Evolve answers, and nothing grew past the limit.
#[test]
fn a_link_to_an_endless_device_stops_at_the_memory_limit() {
    let w = world(
        "limits-memory",
        &[("tail", "L2"), ("sort", "L3")],
        "memory_mib = 64",
    );
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::os::unix::fs::symlink("/dev/zero", ws.join("data.bin")).unwrap();
    let (run, results, took) = ask_shell(&w, false, &["tail data.bin"]);
    assert_eq!(tools(&run)[0]["ran"], true, "{:?}", tools(&run));
    assert!(
        results[0].contains("memory exhausted") && results[0].contains("[exit code 1]"),
        "{results:?}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let (run, results, _) = ask_shell(&w, true, &["tail /dev/zero", "sort /dev/zero"]);
    for (t, result) in tools(&run).iter().zip(&results) {
        assert_eq!(t["ran"], true, "{t}");
        assert!(
            result.contains("memory exhausted") || result.contains("Cannot allocate memory"),
            "{result}"
        );
    }
    let rss = children_max_rss_mib();
    assert!(rss < 200, "a process grew to {rss} MiB");
}

/// A command writing without end (`dd` from `/dev/zero`): the file stops at the file
/// size limit and the model reads which limit stopped it.
#[test]
fn a_file_stops_at_the_file_size_limit() {
    let w = world(
        "limits-fsize",
        &[("dd", "L3"), ("./fill.sh", "L3")],
        "file_size_mib = 1",
    );
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(
        ws.join("fill.sh"),
        "#!/bin/sh\nwhile :; do echo 0123456789abcdef; done > log.txt\n",
    )
    .unwrap();
    Command::new("chmod")
        .args(["+x"])
        .arg(ws.join("fill.sh"))
        .status()
        .unwrap();
    let (run, results, took) = ask_shell(
        &w,
        true,
        &["dd if=/dev/zero of=big.bin bs=1M count=8", "./fill.sh"],
    );
    for (t, result) in tools(&run).iter().zip(&results) {
        assert_eq!(t["ran"], true, "{t}");
        assert!(
            result.contains("the file size limit ([limits] file_size_mib)"),
            "{result}"
        );
    }
    for file in ["big.bin", "log.txt"] {
        let len = std::fs::metadata(ws.join(file)).unwrap().len();
        assert_eq!(len, 1024 * 1024, "{file}");
    }
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

/// A CPU loop stops at the CPU limit, long before the command's timeout.
#[test]
fn a_cpu_loop_stops_at_the_cpu_limit() {
    let w = world("limits-cpu", &[("./spin.sh", "L3")], "cpu_secs = 1");
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(ws.join("spin.sh"), "#!/bin/sh\nwhile :; do :; done\n").unwrap();
    Command::new("chmod")
        .args(["+x"])
        .arg(ws.join("spin.sh"))
        .status()
        .unwrap();
    let (run, results, took) = ask_shell(&w, true, &["./spin.sh"]);
    assert_eq!(tools(&run)[0]["ran"], true);
    assert!(
        results[0].contains("the CPU time limit ([limits] cpu_secs)"),
        "{results:?}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// A fork bomb a script starts stops at the process limit: the shell's "Cannot fork"
/// reaches the model, and Evolve answers. The kernel exempts root from the limit, so a
/// root test runs Evolve as `nobody` (65534), in a home that user owns.
#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    let w = world("limits-nproc", &[("./build.sh", "L3")], "processes = 32");
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(
        ws.join("build.sh"),
        "#!/bin/sh\nn=0\nwhile [ $n -lt 20000 ]; do sleep 2 & n=$((n+1)); done\necho started $n\n",
    )
    .unwrap();
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let out = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&w.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    Command::new("chmod")
        .args(["0755"])
        .arg(ws.join("build.sh"))
        .status()
        .unwrap();
    let (run, results, took) = ask_shell_with(&w, true, &["./build.sh"], |cmd| {
        if root {
            use std::os::unix::process::CommandExt;
            cmd.uid(65534).gid(65534);
        }
    });
    assert_eq!(tools(&run)[0]["ran"], true, "{}", run.stderr);
    assert!(
        results[0].contains("Cannot fork")
            || results[0].contains("Resource temporarily unavailable"),
        "{results:?}"
    );
    assert!(!results[0].contains("started 20000"), "{results:?}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

/// A listener on a pathname UNIX socket outside the workspace (a stand-in for
/// `/var/run/docker.sock`) and on an abstract one, counting connections.
struct Daemon {
    _dir: PathBuf,
    path: PathBuf,
    name: String,
    accepted: Arc<AtomicUsize>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

fn daemon(tag: &str) -> Daemon {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::SocketAddr;
    let dir = std::env::temp_dir().join(format!("evolve-daemon-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("docker.sock");
    let name = format!("evolve-daemon-{tag}-{}", std::process::id());
    let accepted = Arc::new(AtomicUsize::new(0));
    let listeners = [
        UnixListener::bind(&path).unwrap(),
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap(),
    ];
    for l in listeners {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            for conn in l.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
    }
    Daemon {
        _dir: dir,
        path,
        name,
        accepted,
    }
}

/// A Python client that connects to `address` (a path, or `\0name`), sends a line and
/// says what happened.
fn client(address: &str) -> String {
    format!(
        r#"import socket, sys
try:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect({address:?})
    s.send(b"GET /containers/json HTTP/1.0\r\n\r\n")
    print("client: connected", file=sys.stderr)
except OSError as e:
    print("client: refused:", e, file=sys.stderr)
"#
    )
}

const PYTHON: &str = "/usr/bin/python3";

/// The reproduction: a workspace repository's `.git/config` names a clean filter, which
/// `git status` (L2, unattended) runs; it connects to a root-owned pathname socket
/// outside the workspace. Now the filter cannot create the socket: the daemon sees no
/// connection, the filter's "Permission denied" and git's own answer reach the model.
#[test]
fn a_repository_filter_reaches_no_unix_socket() {
    let w = world(
        "limits-unix-filter",
        &[("git status", "L2"), ("git diff", "L2")],
        "",
    );
    if !landlock() || !Path::new(PYTHON).exists() {
        return;
    }
    let d = daemon("filter");
    let ws = w.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil diff=evil\n").unwrap();
    git(&ws, &["add", "a.txt", ".gitattributes"]);
    git(&ws, &["commit", "-qm", "one"]);
    // The same size, a new time: git runs the clean filter to compare.
    std::fs::write(ws.join("a.txt"), "two\n").unwrap();
    std::fs::write(
        ws.join(".git/path.py"),
        client(&d.path.display().to_string()),
    )
    .unwrap();
    std::fs::write(ws.join(".git/name.py"), client(&format!("\0{}", d.name))).unwrap();
    git(
        &ws,
        &[
            "config",
            "filter.evil.clean",
            &format!("{PYTHON} .git/path.py; cat"),
        ],
    );
    git(
        &ws,
        &[
            "config",
            "diff.evil.textconv",
            &format!("{PYTHON} .git/name.py; cat"),
        ],
    );
    let (run, results, _) = ask_shell(&w, false, &["git status", "git diff"]);
    for t in tools(&run) {
        assert_eq!(t["ran"], true, "read-only at L2, so it ran: {t}");
    }
    assert!(
        results[0].contains("a.txt"),
        "git status worked: {results:?}"
    );
    for result in &results {
        assert!(
            result.contains("client: refused: [Errno 13] Permission denied"),
            "{result}"
        );
        assert!(!result.contains("client: connected"), "{result}");
    }
    assert_eq!(
        d.accepted.load(Ordering::SeqCst),
        0,
        "the daemon was reached"
    );
}

/// L3 commands keep TCP (by design) but create no UNIX socket either: a script the
/// person allowed once reaches a loopback TCP server, and neither the pathname nor the
/// abstract socket.
#[test]
fn no_unix_socket_below_l4_but_l3_keeps_tcp() {
    let w = world("limits-unix-l3", &[("./check.sh", "L3")], "");
    if !landlock() || !Path::new(PYTHON).exists() {
        return;
    }
    let d = daemon("l3");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let ws = w.workspace();
    std::fs::write(ws.join("path.py"), client(&d.path.display().to_string())).unwrap();
    std::fs::write(ws.join("name.py"), client(&format!("\0{}", d.name))).unwrap();
    std::fs::write(
        ws.join("tcp.py"),
        format!(
            "import socket\ns = socket.create_connection(('127.0.0.1', {port}), 2)\nprint('tcp: connected')\n"
        ),
    )
    .unwrap();
    std::fs::write(
        ws.join("check.sh"),
        format!("#!/bin/sh\n{PYTHON} path.py\n{PYTHON} name.py\n{PYTHON} tcp.py\n"),
    )
    .unwrap();
    Command::new("chmod")
        .args(["+x"])
        .arg(ws.join("check.sh"))
        .status()
        .unwrap();
    let (run, results, _) = ask_shell(&w, true, &["./check.sh"]);
    assert_eq!(tools(&run)[0]["ran"], true);
    assert_eq!(
        results[0]
            .matches("client: refused: [Errno 13] Permission denied")
            .count(),
        2,
        "{results:?}"
    );
    assert!(results[0].contains("tcp: connected"), "{results:?}");
    assert_eq!(d.accepted.load(Ordering::SeqCst), 0);
}

/// `evolve doctor` shows the limits in force, `config show` the settings, and `config
/// check` refuses a memory limit no program starts under.
#[test]
fn doctor_shows_the_limits_and_config_check_refuses_a_useless_one() {
    let w = world("limits-doctor", &[], "memory_mib = 300\ncpu_secs = 42");
    let unreachable = |args: &[&str]| {
        Run::from(
            w.command(args)
                .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
                .output()
                .unwrap(),
        )
    };
    let doctor = unreachable(&["doctor"]);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.starts_with("✓ limits"))
        .unwrap_or_else(|| panic!("no limits line: {}", doctor.stdout));
    assert!(
        line.contains("memory 300 MiB")
            && line.contains("files 1024 MiB")
            && line.contains("processes 256 more than the")
            && line.contains("CPU 42 s"),
        "{line}"
    );
    let json = unreachable(&["doctor", "--json"]);
    assert!(json.json()["limits"]
        .as_str()
        .is_some_and(|l| l.contains("memory 300 MiB")));
    let show = w.run(&["config", "show", "--json"]);
    assert_eq!(show.json()["limits"]["memory_mib"], 300, "{}", show.stdout);
    assert_eq!(show.json()["limits"]["processes"], 256);
    w.config("[limits]\nmemory_mib = 8\n");
    let check = w.run(&["config", "check"]);
    assert_eq!(check.code, 2, "{}", check.stderr);
    assert!(
        check.stderr.contains("limits.memory_mib = 8") && check.stderr.contains("0 for no limit"),
        "{}",
        check.stderr
    );
}
