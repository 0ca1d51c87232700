//! The plans applied by the real kernel: `sh -c` children confined at each reach, and
//! what they can and cannot touch. Without Landlock these tests skip (and fail under
//! `CI=true`, whose kernel has it).

use std::process::{Command, Stdio};

use super::*;
use crate::testing::TempDir;

/// A home with a workspace, a config and a store, like Evolve's.
struct Home {
    _tmp: TempDir,
    home: PathBuf,
    scope: Scope,
}

fn home() -> Home {
    let tmp = TempDir::new("sandbox");
    let home = std::fs::canonicalize(tmp.path()).unwrap();
    let workspace = home.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "api_key = \"sk-SECRET-IN-CONFIG\"\n",
    )
    .unwrap();
    std::fs::write(home.join("evolve.redb"), "store").unwrap();
    std::fs::write(workspace.join("notes.txt"), "inside").unwrap();
    let scope = Scope {
        workspace: workspace.clone(),
        evolve_home: home.clone(),
        private_files: vec![home.join("config.toml"), home.join("evolve.redb")],
        limits: Limits::default(),
    };
    Home {
        _tmp: tmp,
        home,
        scope,
    }
}

fn landlock() -> bool {
    if status().abi.is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI's kernel has Landlock, but: {}",
        status().summary()
    );
    eprintln!("skipped: {}", status().summary());
    false
}

/// Runs `script` with `sh -c` in the workspace under `plan`: (exit code, stdout+stderr).
fn run(plan: &Plan, dir: &Path, script: &str) -> (i32, String) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let applied = plan.apply(&mut cmd).expect("apply");
    let out = reaper::output(&mut cmd).expect("spawn");
    drop(applied);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn read_only_commands_read_the_workspace_and_write_nothing() {
    if !landlock() {
        return;
    }
    let h = home();
    let ws = &h.scope.workspace;
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let (code, out) = run(
        &plan,
        ws,
        "cat notes.txt && ls /usr/bin >/dev/null && echo ok",
    );
    assert_eq!((code, out.trim()), (0, "insideok"), "{out}");
    for script in [
        "echo x > new.txt",
        "rm notes.txt",
        "mkdir d",
        "echo x >> notes.txt",
        "touch /tmp/evolve-sandbox-probe",
    ] {
        let _ = std::fs::remove_file("/tmp/evolve-sandbox-probe");
        let (code, out) = run(&plan, ws, script);
        assert_ne!(code, 0, "{script} ran: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "inside"
    );
    assert!(!ws.join("new.txt").exists() && !ws.join("d").exists());
    assert!(!Path::new("/tmp/evolve-sandbox-probe").exists());
}

#[test]
fn evolve_home_and_what_links_point_out_to_are_unreachable() {
    if !landlock() {
        return;
    }
    let h = home();
    let ws = &h.scope.workspace;
    std::os::unix::fs::symlink("..", ws.join("up")).unwrap();
    std::os::unix::fs::symlink(h.home.join("config.toml"), ws.join("cfg")).unwrap();
    for reach in [Reach::ReadOnly, Reach::Workspace] {
        let plan = Plan::for_shell(reach, &h.scope).unwrap();
        for script in [
            "cat ../config.toml",
            "cat up/config.toml",
            "cat cfg",
            "ls up",
            "grep -R api up/config.toml",
            "cat ../evolve.redb",
        ] {
            let (code, out) = run(&plan, ws, script);
            assert_ne!(code, 0, "{reach:?} {script}: {out}");
            assert!(!out.contains("sk-SECRET"), "{reach:?} {script}: {out}");
        }
        let (code, out) = run(&plan, ws, "echo x > ../planted; echo x > cfg");
        assert_ne!(code, 0, "{out}");
        assert!(!h.home.join("planted").exists());
    }
    assert!(std::fs::read_to_string(h.home.join("config.toml"))
        .unwrap()
        .contains("sk-SECRET"));
}

#[test]
fn workspace_commands_write_the_workspace_and_their_own_tmp_only() {
    if !landlock() {
        return;
    }
    let h = home();
    let ws = &h.scope.workspace;
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    let (code, out) = run(
        &plan,
        ws,
        "echo made > new.txt && mkdir -p d/e && mv new.txt d/e/ && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && rm notes.txt && echo ok",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("t\nok"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("d/e/new.txt")).unwrap(),
        "made\n"
    );
    let tmp = plan._tmp.as_ref().unwrap().0.clone();
    assert!(tmp.is_dir());
    drop(plan);
    assert!(!tmp.exists(), "the command's tmp is removed with the plan");
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    for script in [
        "touch /tmp/evolve-sandbox-probe2",
        "echo x > ../x",
        "mknod dev c 1 3",
    ] {
        let (code, out) = run(&plan, ws, script);
        assert_ne!(code, 0, "{script}: {out}");
    }
}

#[test]
fn no_other_process_and_no_secret_is_visible() {
    if !landlock() {
        return;
    }
    std::env::set_var("EVOLVE_SANDBOX_TEST_TOKEN", "tok-0451-should-not-leak");
    let h = home();
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let me = std::process::id();
    let (_, out) = run(
        &plan,
        &h.scope.workspace,
        &format!("env; cat /proc/{me}/environ; cat /proc/{me}/cmdline; cat /proc/1/cmdline; echo HOME=$HOME"),
    );
    assert!(!out.contains("tok-0451"), "{out}");
    assert!(!out.contains("EVOLVE_SANDBOX_TEST_TOKEN"), "{out}");
    // HOME is the command's own empty folder: no dot file in the workspace
    // configures what it runs.
    let home_line = out
        .lines()
        .find(|l| l.starts_with("HOME="))
        .unwrap_or_default();
    assert!(
        home_line.contains("evolve-tmp-") && !home_line.contains("workspace"),
        "{out}"
    );
    // The machine's own files stay readable.
    let (code, out) = run(&plan, &h.scope.workspace, "head -1 /proc/meminfo");
    assert_eq!(code, 0, "{out}");
}

#[test]
fn read_only_commands_cannot_use_tcp_where_the_kernel_can_deny_it() {
    if !landlock() || !status().denies_tcp() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let h = home();
    // bash's /dev/tcp: the shell itself connects.
    let probe = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let bash = Path::new("/bin/bash").exists();
    if !bash {
        eprintln!("skipped: no bash for /dev/tcp");
        return;
    }
    let run_bash = |plan: &Plan| {
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(&probe)
            .current_dir(&h.scope.workspace)
            .stdin(Stdio::null());
        let applied = plan.apply(&mut cmd).unwrap();
        let out = reaper::output(&mut cmd).unwrap();
        drop(applied);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ro = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    assert!(!run_bash(&ro).contains("connected"));
    let rw = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    assert!(
        run_bash(&rw).contains("connected"),
        "L3/L4 keep the network"
    );
}

#[test]
fn a_root_parent_gives_its_children_no_capabilities() {
    if !landlock() {
        return;
    }
    let h = home();
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let (code, out) = run(&plan, &h.scope.workspace, "hostname evolve-should-not-set");
    assert_ne!(code, 0, "{out}");
    let after = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    assert_eq!(before, after);
}

#[test]
fn program_dirs_widen_to_the_package() {
    let tmp = TempDir::new("progdirs");
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let script = root.join("npm/node_modules/@x/server/dist/index.js");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "").unwrap();
    let venv = root.join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join("pyvenv.cfg"), "").unwrap();
    std::fs::write(venv.join("bin/server"), "").unwrap();
    let dirs = program_dirs(
        "sh",
        &[
            script.display().to_string(),
            "--flag".into(),
            root.display().to_string(),
        ],
        None,
        &[],
        &[],
    );
    assert!(dirs.contains(&root.join("npm")), "{dirs:?}");
    assert!(
        !dirs.contains(&root),
        "a directory argument is not a program: {dirs:?}"
    );
    let dirs = program_dirs(
        &venv.join("bin/server").display().to_string(),
        &[],
        None,
        &[],
        &[],
    );
    assert_eq!(dirs, std::slice::from_ref(&venv));

    // A venv's script: `#!VENV/bin/python`, a link into the installation named by
    // pyvenv.cfg's `home`.
    let install = root.join("python311");
    std::fs::create_dir_all(install.join("bin")).unwrap();
    std::fs::create_dir_all(install.join("lib")).unwrap();
    std::fs::write(install.join("bin/python3.11"), "").unwrap();
    std::os::unix::fs::symlink(install.join("bin/python3.11"), venv.join("bin/python")).unwrap();
    std::fs::write(
        venv.join("pyvenv.cfg"),
        format!("home = {}\n", install.join("bin").display()),
    )
    .unwrap();
    std::fs::write(
        venv.join("bin/tool"),
        format!("#!{}\nimport x\n", venv.join("bin/python").display()),
    )
    .unwrap();
    let dirs = program_dirs(
        &venv.join("bin/tool").display().to_string(),
        &[],
        None,
        &[],
        &[],
    );
    assert!(dirs.contains(&venv) && dirs.contains(&install), "{dirs:?}");

    // What the model can write decides nothing: a server in the workspace whose `#!`
    // line or a pyvenv.cfg beside it names other folders gets none of them.
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("srv")).unwrap();
    std::fs::write(
        ws.join("srv/server.py"),
        format!("#!{}\n", venv.join("bin/python").display()),
    )
    .unwrap();
    std::fs::write(ws.join("pyvenv.cfg"), "home = /bin\n").unwrap();
    let srv = ws.join("srv/server.py").display().to_string();
    let dirs = program_dirs(
        "/usr/bin/python3",
        &[srv],
        None,
        std::slice::from_ref(&ws),
        &[],
    );
    assert!(
        !dirs
            .iter()
            .any(|d| d.starts_with(&root) || d == Path::new("/")),
        "{dirs:?}"
    );
    // A data file in the home does not open the home; a top-level folder is never given.
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("notes.txt"), "").unwrap();
    let dirs = program_dirs(
        "/usr/bin/python3",
        &[
            home.join("notes.txt").display().to_string(),
            "/etc/hostname".into(),
        ],
        None,
        &[],
        std::slice::from_ref(&home),
    );
    assert!(
        !dirs.contains(&home) && !dirs.contains(&PathBuf::from("/etc")),
        "{dirs:?}"
    );
}

/// Where the kernel lets a command write (L3/L4, the workspace), the repository's own
/// config still runs nothing through git: its fsmonitor, hooks, pager and external diff
/// are forced off by the environment, not by the ruleset.
#[test]
fn git_runs_nothing_the_repository_names_even_where_it_may_write() {
    if !landlock() {
        return;
    }
    let h = home();
    let ws = &h.scope.workspace;
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    let setup = "git init -q && git config user.email t@t && git config user.name t \
        && echo one > a.txt && git add a.txt && git commit -qm one && echo two > a.txt \
        && git config core.fsmonitor 'touch ran-fsmonitor; echo' \
        && git config core.pager 'touch ran-pager; cat' \
        && printf '#!/bin/sh\\ntouch ran-hook\\n' > .git/hooks/pre-commit \
        && chmod +x .git/hooks/pre-commit";
    let (code, out) = run(&plan, ws, setup);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(
        &plan,
        ws,
        "git status --short; git log -p >/dev/null; git commit -qam two",
    );
    assert_eq!(code, 0, "{out}");
    for ran in ["ran-fsmonitor", "ran-pager", "ran-hook"] {
        assert!(!ws.join(ran).exists(), "{ran}: {out}");
    }
}

/// A root `evolve`'s children are still the owner of root's files: what under `/etc`
/// others may not read is carved out (here: whichever such file this machine has).
#[test]
fn what_others_may_not_read_in_etc_is_carved_out() {
    if !landlock() {
        return;
    }
    let private = private_system_files();
    let Some(file) = private
        .iter()
        .find(|p| p.is_file() && std::fs::read(p).is_ok())
        .cloned()
    else {
        eprintln!("skipped: nothing under /etc this process can read that others cannot");
        return;
    };
    let h = home();
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let (code, out) = run(
        &plan,
        &h.scope.workspace,
        &format!("cat {}", file.display()),
    );
    assert_ne!(code, 0, "{}: {out}", file.display());
    let (code, out) = run(
        &plan,
        &h.scope.workspace,
        "cat /etc/passwd >/dev/null && echo ok",
    );
    assert_eq!((code, out.trim()), (0, "ok"), "{out}");
}

/// Read-only commands open no IP socket at all: plain TCP, TCP Fast Open and MPTCP
/// (which get past Landlock's TCP rules) and UDP are refused; UNIX sockets work.
#[test]
fn read_only_commands_open_no_ip_socket() {
    if !landlock() {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tp, up) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let h = home();
    let probe = h.scope.workspace.join("probe.py");
    std::fs::write(
        &probe,
        format!(
            r#"import socket
def attempt(name, f):
    try:
        f(); print(name, "open")
    except OSError as e:
        print(name, "refused", e.errno)
def tcp():
    s = socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", {tp}))
def tfo():
    s = socket.socket(); s.sendto(b"x", 0x20000000, ("127.0.0.1", {tp}))
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(2); s.connect(("127.0.0.1", {tp}))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", {up}))
def unix():
    a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
for n, f in [("tcp", tcp), ("tfo", tfo), ("mptcp", mptcp), ("udp", udp), ("unix", unix)]:
    attempt(n, f)
"#
        ),
    )
    .unwrap();
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let (_, out) = run(&plan, &h.scope.workspace, "/usr/bin/python3 probe.py");
    for name in ["tcp", "tfo", "mptcp", "udp"] {
        assert!(out.contains(&format!("{name} refused")), "{name}: {out}");
    }
    assert!(out.contains("unix open"), "{out}");
    let mut buf = [0u8; 8];
    assert!(udp.recv(&mut buf).is_err(), "a datagram arrived: {out}");
    // L3/L4 keep the network.
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    let (_, out) = run(&plan, &h.scope.workspace, "/usr/bin/python3 probe.py");
    assert!(
        out.contains("tcp open") && out.contains("udp open"),
        "{out}"
    );
}

/// The file tools' own checks resolve a path, then open it: in between, a process the
/// model started could swap a folder for a link out. In the confined thread the kernel
/// checks what is finally opened, so even an unchecked open of a link out fails.
#[test]
fn a_file_tool_thread_cannot_open_what_a_link_points_out_to() {
    if !landlock() {
        return;
    }
    let h = home();
    let ws = &h.scope.workspace;
    std::os::unix::fs::symlink(&h.home, ws.join("l")).unwrap();
    let read = in_workspace(&h.scope, false, || {
        (
            std::fs::read_to_string(ws.join("notes.txt")),
            std::fs::read_to_string(ws.join("l/config.toml")),
            std::fs::write(ws.join("new.txt"), "x"),
        )
    })
    .unwrap();
    assert_eq!(read.0.unwrap(), "inside");
    assert!(read.1.is_err(), "read through the link: {:?}", read.1);
    assert!(read.2.is_err(), "a read-only tool wrote");
    let wrote = in_workspace(&h.scope, true, || {
        (
            std::fs::write(ws.join("new.txt"), "x"),
            std::fs::write(ws.join("l/config.toml"), "pwned"),
        )
    })
    .unwrap();
    assert!(wrote.0.is_ok());
    assert!(wrote.1.is_err());
    assert!(std::fs::read_to_string(h.home.join("config.toml"))
        .unwrap()
        .contains("sk-SECRET"));
    // The calling thread is untouched.
    assert!(std::fs::read_to_string(h.home.join("config.toml")).is_ok());
}

/// A listener the test process holds on a pathname UNIX socket outside the workspace
/// and Evolve's home (a stand-in for `/var/run/docker.sock`), and on an abstract one:
/// it counts the connections it accepts.
struct Listeners {
    _dir: TempDir,
    path: PathBuf,
    abstract_name: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn listeners() -> Listeners {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    let dir = TempDir::new("sockets");
    let path = std::fs::canonicalize(dir.path())
        .unwrap()
        .join("daemon.sock");
    let abstract_name = format!("evolve-test-{}", std::process::id());
    let accepted = Arc::new(AtomicUsize::new(0));
    let on_path = UnixListener::bind(&path).unwrap();
    let on_name =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&abstract_name).unwrap()).unwrap();
    for listener in [on_path, on_name] {
        let accepted = accepted.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                accepted.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
    }
    Listeners {
        _dir: dir,
        path,
        abstract_name,
        accepted,
    }
}

/// Below L4 no command creates a UNIX socket (the door to whatever listens on one:
/// Docker, D-Bus, an agent), pathname or abstract; `socketpair` still works, and L3
/// keeps TCP. L4 connects to the pathname socket; an abstract socket outside the
/// sandbox stays out of reach where Landlock scopes them (ABI 6).
#[test]
fn no_command_below_l4_creates_a_unix_socket() {
    if !landlock() {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: no /usr/bin/python3");
        return;
    }
    let l = listeners();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tp = tcp.local_addr().unwrap().port();
    let h = home();
    std::fs::write(
        h.scope.workspace.join("probe.py"),
        format!(
            r#"import socket
def attempt(name, f):
    try:
        f(); print(name, "open")
    except OSError as e:
        print(name, "refused", e.errno)
def path():
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect({path:?})
def abstract():
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect("\0{name}")
def dgram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
def pair():
    a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"
def tcp():
    s = socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", {tp}))
for n, f in [("path", path), ("abstract", abstract), ("dgram", dgram), ("pair", pair), ("tcp", tcp)]:
    attempt(n, f)
"#,
            path = l.path.display().to_string(),
            name = l.abstract_name,
        ),
    )
    .unwrap();
    let probe = |reach| {
        let plan = Plan::for_shell(reach, &h.scope).unwrap();
        run(&plan, &h.scope.workspace, "/usr/bin/python3 probe.py").1
    };
    for reach in [Reach::ReadOnly, Reach::Workspace] {
        let out = probe(reach);
        for name in ["path", "abstract", "dgram"] {
            assert!(
                out.contains(&format!("{name} refused {}", libc::EACCES)),
                "{reach:?} {name}: {out}"
            );
        }
        assert!(out.contains("pair open"), "{reach:?}: {out}");
        let tcp_open = out.contains("tcp open");
        assert_eq!(tcp_open, reach == Reach::Workspace, "{reach:?}: {out}");
    }
    assert_eq!(
        l.accepted.load(Ordering::SeqCst),
        0,
        "a command below L4 connected"
    );
    let out = probe(Reach::WorkspaceAndSockets);
    assert!(
        out.contains("path open") && out.contains("tcp open"),
        "{out}"
    );
    if status().scopes_signals() {
        assert!(out.contains("abstract refused"), "{out}");
    }
}

/// Runs `script` under `plan` as `uid` (when the test runs as root): the status, the
/// output and how long it took.
fn run_timed(
    plan: &Plan,
    dir: &Path,
    script: &str,
    uid: Option<u32>,
) -> (std::process::ExitStatus, String, std::time::Duration) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdin(Stdio::null());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let applied = plan.apply(&mut cmd).expect("apply");
    let started = std::time::Instant::now();
    let out = reaper::output(&mut cmd).expect("spawn");
    let took = started.elapsed();
    drop(applied);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status, text, took)
}

fn limited(limits: Limits) -> Home {
    let mut h = home();
    h.scope.limits = limits;
    h
}

/// An endless device read to its end stops at the memory limit, in seconds, with the
/// program's own "memory exhausted" — also through a link whose name says nothing.
#[test]
fn reading_an_endless_device_stops_at_the_memory_limit() {
    use std::os::unix::process::ExitStatusExt;
    let h = limited(Limits {
        memory_mib: Some(64),
        ..Limits::default()
    });
    let ws = &h.scope.workspace;
    std::os::unix::fs::symlink("/dev/zero", ws.join("data.bin")).unwrap();
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    for script in ["tail /dev/zero", "tail data.bin", "sort /dev/zero"] {
        let (status, out, took) = run_timed(&plan, ws, script, None);
        assert!(
            !status.success() && status.signal().is_none(),
            "{script}: {status:?} {out}"
        );
        assert!(
            out.contains("memory exhausted") || out.contains("Cannot allocate memory"),
            "{script}: {out}"
        );
        assert!(took.as_secs() < 20, "{script} took {took:?}");
    }
    if Path::new("/usr/bin/python3").exists() {
        let (status, out, _) = run_timed(
            &plan,
            ws,
            "/usr/bin/python3 -c 'b = bytearray(200 * 1024 * 1024)'",
            None,
        );
        assert!(!status.success() && out.contains("MemoryError"), "{out}");
    }
}

/// A file written past the file size limit is cut there and the writer stopped by
/// `SIGXFSZ`; writing to `/dev/null` is not a file.
#[test]
fn a_file_stops_growing_at_the_file_size_limit() {
    let h = limited(Limits {
        file_size_mib: 1,
        ..Limits::default()
    });
    let ws = &h.scope.workspace;
    let plan = Plan::for_shell(Reach::Workspace, &h.scope).unwrap();
    let (_, out, _) = run_timed(
        &plan,
        ws,
        "head -c 5000000 /dev/zero > big.bin; echo status $?; head -c 5000000 /dev/zero > /dev/null; echo null $?",
        None,
    );
    assert!(
        out.contains(&format!("status {}", 128 + libc::SIGXFSZ)),
        "{out}"
    );
    assert!(out.contains("null 0"), "{out}");
    let len = std::fs::metadata(ws.join("big.bin")).unwrap().len();
    assert_eq!(len, 1024 * 1024, "{out}");
}

/// A process spinning past the CPU limit is stopped by `SIGXCPU`, long before any
/// timeout.
#[test]
fn a_cpu_loop_stops_at_the_cpu_limit() {
    use std::os::unix::process::ExitStatusExt;
    let h = limited(Limits {
        cpu_secs: 1,
        ..Limits::default()
    });
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let (status, out, took) = run_timed(&plan, &h.scope.workspace, "while :; do :; done", None);
    assert_eq!(status.signal(), Some(libc::SIGXCPU), "{status:?} {out}");
    assert!(took.as_secs() < 10, "took {took:?}");
}

/// A fork bomb stops at the process limit: `processes` more than the user runs. The
/// kernel exempts root, so a root test runs the command as `nobody` (65534).
#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let h = limited(Limits {
        processes: 32,
        ..Limits::default()
    });
    let plan = Plan::for_shell(Reach::ReadOnly, &h.scope).unwrap();
    let (uid, dir) = if root {
        (Some(65534), Path::new("/"))
    } else {
        (None, h.scope.workspace.as_path())
    };
    let (status, out, took) = run_timed(
        &plan,
        dir,
        "n=0; while [ $n -lt 20000 ]; do sleep 2 & n=$((n+1)); done; echo started $n",
        uid,
    );
    assert!(!status.success(), "{out}");
    assert!(
        out.contains("Cannot fork") || out.contains("Resource temporarily unavailable"),
        "{out}"
    );
    assert!(!out.contains("started 20000"), "{out}");
    assert!(took.as_secs() < 30, "took {took:?}");
}
