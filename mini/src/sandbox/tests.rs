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
    let out = cmd.output().expect("spawn");
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
    assert!(
        out.contains(&format!("HOME={}", h.scope.workspace.display())),
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
        let out = cmd.output().unwrap();
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
    );
    assert!(dirs.contains(&root.join("npm")), "{dirs:?}");
    assert!(
        !dirs.contains(&root),
        "a directory argument is not a program: {dirs:?}"
    );
    let dirs = program_dirs(&venv.join("bin/server").display().to_string(), &[], None);
    assert_eq!(dirs, [venv]);
}
