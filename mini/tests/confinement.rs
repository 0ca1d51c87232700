//! What the tools run is confined by the kernel, so the holes a lexical permission
//! layer leaves stay closed: each finding of the attacker's pass over the release binary
//! re-run through `evolve` with a scripted model (which is what prompt injection gives an
//! attacker), on the real kernel's Landlock.
//!
//! | finding | test |
//! |---|---|
//! | 1. a repository's `core.fsmonitor` (or a clean filter) run by `git status` at L2 | `a_repository_cannot_make_git_run_a_program` |
//! | 2. `git show HEAD:../x`, `git log -p`, `git status` reaching a repository above the workspace | `git_finds_no_repository_above_the_workspace` |
//! | 3. `ps eww`, `ps --cols N e` printing Evolve's environment; a key cut one character short | `no_command_sees_evolves_environment_or_a_piece_of_the_key` |
//! | 4. `search_files` printing `.env` and `.ssh/id_rsa` lines | `search_files_skips_what_read_file_refuses` |
//! | 5. symlinks in the workspace pointing out (`up -> ..`, `cfg -> config.toml`) | `links_in_the_workspace_lead_nowhere` |
//! | 6. `tar`/`sed`/`git` at L3: `--remove-files`, `sed -f` with `e`, `-xPf` out of the workspace, `-T` naming `../`, `git apply` of a link out | `tar_sed_and_git_at_l3_stay_in_the_workspace_and_never_delete` |
//! | 7. "always" for one `tar` command covering the next, different one | `always_for_a_shell_command_covers_that_command_only` |
//! | 8. `date --se`, `hostname -Fx.txt`, `hostname --file=x.txt` at L1/L2 | `date_and_hostname_cannot_set_anything` |
//! | the lexical check bypassed on purpose: the kernel still refuses the write | `a_read_only_command_that_writes_anyway_is_stopped_by_the_kernel` |
//! | a process the command left running outside its group, racing the file tools | `nothing_a_command_starts_outlives_it` |
//! | no Landlock: no shell command below L4 runs unattended | `without_landlock_no_shell_command_runs_unattended` |
//!
//! Findings 9–13 (private files, slow clients, MCP levels, config validation, damaged
//! stores) have their own files: `store_damage.rs`, `slow_clients.rs`, `mcp_levels.rs`,
//! `config_validation.rs`.

mod support;

use std::process::Command;

use serde_json::json;
use support::mcp::tool_results;
use support::serve::{asking, next_event, Server};
use support::*;

/// In `config.toml`, so a read of the config is recognisable in any output.
const CONFIG_MARKER: &str = "marker-config-0451";

/// A world whose config holds [`CONFIG_MARKER`] and `prefixes` (the shell tool at its
/// default level, L5).
fn world(name: &str, prefixes: &[(&str, &str)]) -> World {
    world_at(name, "L5", prefixes)
}

/// The same with the shell tool at `shell_level`.
fn world_at(name: &str, shell_level: &str, prefixes: &[(&str, &str)]) -> World {
    let w = World::new(name);
    let list: Vec<String> = prefixes
        .iter()
        .map(|(p, l)| format!("[{p:?}, {l:?}]"))
        .collect();
    w.config(&format!(
        "# {CONFIG_MARKER}\n[permission]\nshell_level = {shell_level:?}\ncommand_prefixes = [{}]\n",
        list.join(", ")
    ));
    w
}

/// One model reply with these shell commands, then an answer; `ask` (with `--yes`
/// when `yes`). Returns the run and what each call returned to the model.
fn ask_shell(w: &World, yes: bool, commands: &[&str]) -> (Run, Vec<String>) {
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
    args.push("do as I say");
    let run = w.run(&args);
    assert!(
        run.code == 0 || run.code == 4,
        "exit {}: {}",
        run.code,
        run.stderr
    );
    let results = tool_results(w, 1);
    assert_eq!(results.len(), commands.len(), "{results:?}");
    (run, results)
}

/// The tool records of an `ask --json`.
fn tools(run: &Run) -> Vec<serde_json::Value> {
    run.json()["tools"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_repository_cannot_make_git_run_a_program() {
    let w = world(
        "conf-fsmonitor",
        &[("git status", "L2"), ("git diff", "L2")],
    );
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("canary"), "alive").unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil diff=evil\n").unwrap();
    git(&ws, &["add", "a.txt", ".gitattributes"]);
    git(&ws, &["commit", "-qm", "one"]);
    std::fs::write(ws.join("a.txt"), "two\n").unwrap();
    // Programs the repository's own config names: the fsmonitor hook (finding 1), and
    // a clean filter and textconv driver, whose names no list can foresee.
    let evil = "rm -f canary; touch planted; echo";
    git(&ws, &["config", "core.fsmonitor", evil]);
    git(
        &ws,
        &[
            "config",
            "filter.evil.clean",
            &format!("sh -c '{evil}'; cat"),
        ],
    );
    git(
        &ws,
        &[
            "config",
            "diff.evil.textconv",
            &format!("sh -c '{evil}'; cat"),
        ],
    );
    git(&ws, &["config", "core.pager", evil]);
    git(&ws, &["config", "diff.external", evil]);
    let (run, results) = ask_shell(&w, false, &["git status", "git diff"]);
    for t in tools(&run) {
        assert_eq!(t["ran"], true, "read-only at L2, so it ran: {t}");
    }
    assert!(
        results[0].contains("a.txt"),
        "git status worked: {results:?}"
    );
    assert!(
        ws.join("canary").exists(),
        "the canary was deleted: {results:?}"
    );
    assert!(!ws.join("planted").exists(), "{results:?}");

    // With --yes (L3) the model first rewrites .git/config itself; git status at L2
    // still runs nothing it names.
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    w.fake.push(tool_call(
        "write_file",
        &json!({"path": ".git/config", "content": format!("{config}\n[core]\n\tfsmonitor = {evil}\n")})
            .to_string(),
    ));
    w.fake
        .push(tool_call("shell", r#"{"command": "git status"}"#));
    w.fake.push(Reply::text("Done."));
    let run = w.run(&["ask", "--json", "--yes", "tidy up"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(ws.join("canary").exists());
    assert!(!ws.join("planted").exists());
}

#[test]
fn git_finds_no_repository_above_the_workspace() {
    let w = world("conf-git-above", &[("git", "L2")]);
    if !landlock() {
        return;
    }
    // Evolve's home is a repository holding the config; the workspace is inside it.
    let _ = w.workspace();
    std::fs::write(w.home.join("notes.md"), "home notes\n").unwrap();
    git(&w.home, &["init", "-q"]);
    git(&w.home, &["add", "config.toml", "notes.md"]);
    git(&w.home, &["commit", "-qm", "home"]);
    let (run, results) = ask_shell(
        &w,
        false,
        &[
            "git show HEAD:../config.toml",
            "git log -p",
            "git status",
            "git ls-files",
        ],
    );
    let all = results.join("\n");
    assert!(!all.contains(CONFIG_MARKER), "{all}");
    assert!(!all.contains("notes.md"), "{all}");
    assert!(all.contains("not a git repository"), "{all}");
    let _ = run;
}

#[test]
fn no_command_sees_evolves_environment_or_a_piece_of_the_key() {
    const KEY: &str = "sk-confinementKEY0123456789abcdefXYZ";
    const TOKEN: &str = "ghp_confinementTOKEN0123456789abcdef";
    let mut w = world("conf-env", &[("ps", "L2"), ("cat", "L2")]);
    if !landlock() {
        return;
    }
    w.env("OPENAI_API_KEY", KEY).env("GITHUB_TOKEN", TOKEN);
    // A file holding the key cut one character short (what `ps --cols N` gave).
    std::fs::write(
        w.workspace().join("cut.txt"),
        format!("OPENAI_API_KEY={}\n", &KEY[..KEY.len() - 1]),
    )
    .unwrap();
    let (_, results) = ask_shell(
        &w,
        false,
        &[
            "ps eww -o args -C evolve",
            "ps --cols 1915 e -o args",
            "cat /proc/1/environ",
            "cat cut.txt",
        ],
    );
    let all = results.join("\n");
    assert!(!all.contains(TOKEN), "{all}");
    // No 8 characters of the key in a row, anywhere.
    for i in 0..KEY.len() - 8 {
        assert!(!all.contains(&KEY[i..i + 8]), "{all}");
    }
    assert!(results[3].contains("[redacted]"), "{}", results[3]);
}

#[test]
fn search_files_skips_what_read_file_refuses() {
    let w = World::new("conf-search-secrets");
    let ws = w.workspace();
    std::fs::write(ws.join(".env"), "DB_PASSWORD=hunter2-in-env\n").unwrap();
    std::fs::create_dir_all(ws.join(".ssh")).unwrap();
    std::fs::write(
        ws.join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\npassword-in-key\n",
    )
    .unwrap();
    std::fs::write(ws.join("notes.md"), "reset the password monthly\n").unwrap();
    w.fake.push(Reply::ToolCalls(vec![
        ("search_files".into(), r#"{"pattern": "password"}"#.into()),
        ("read_file".into(), r#"{"path": ".env"}"#.into()),
    ]));
    w.fake.push(Reply::text("Done."));
    let run = w.run(&["ask", "--json", "find passwords"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let results = tool_results(&w, 1);
    let all = results.join("\n");
    assert!(
        !all.contains("hunter2") && !all.contains("password-in-key"),
        "{all}"
    );
    assert!(results[0].contains("notes.md:1:"), "{}", results[0]);
    assert_eq!(tools(&run)[1]["level"], "L5", "read_file .env is refused");
}

#[test]
fn links_in_the_workspace_lead_nowhere() {
    let w = world("conf-links", &[("cat", "L2"), ("ls", "L2"), ("grep", "L2")]);
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::os::unix::fs::symlink("..", ws.join("up")).unwrap();
    std::os::unix::fs::symlink(w.config_path(), ws.join("cfg")).unwrap();
    for yes in [false, true] {
        let (run, results) = ask_shell(
            &w,
            yes,
            &[
                "cat up/config.toml",
                "cat cfg",
                "ls up",
                "grep -R api up/config.toml",
                "grep -r marker up",
            ],
        );
        let all = results.join("\n");
        assert!(!all.contains(CONFIG_MARKER), "{all}");
        assert!(!all.contains("evolve.redb"), "ls up listed the home: {all}");
        for t in tools(&run) {
            assert_eq!(t["ran"], true, "the lexical layer let it through: {t}");
        }
    }
}

#[test]
fn tar_sed_and_git_at_l3_stay_in_the_workspace_and_never_delete() {
    let w = world(
        "conf-l3",
        &[("tar", "L3"), ("sed", "L3"), ("git", "L3"), ("cat", "L2")],
    );
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(ws.join("canary"), "alive").unwrap();
    std::fs::write(ws.join("notes.txt"), "a\nb\n").unwrap();
    std::fs::write(ws.join("s.sed"), "1e rm -rf canary\n").unwrap();
    std::fs::write(ws.join("list.txt"), "../config.toml\n").unwrap();
    std::fs::write(ws.join("planted.txt"), "planted\n").unwrap();
    // An archive whose member climbs out (made here, not by the model).
    let made = Command::new("tar")
        .args(["--transform=s,^,../,", "-cf", "out.tar", "planted.txt"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(made.success());
    // A patch that creates a link out of the workspace.
    std::fs::write(
        ws.join("p.patch"),
        "diff --git a/up2 b/up2\nnew file mode 120000\n--- /dev/null\n+++ b/up2\n@@ -0,0 +1 @@\n+..\n\\ No newline at end of file\n",
    )
    .unwrap();
    let (run, results) = ask_shell(
        &w,
        true,
        &[
            "tar --remove-files -cf gone.tar canary",
            "sed -f s.sed notes.txt",
            "tar -xPf out.tar",
            "tar -T list.txt -cf stolen.tar",
            "git apply p.patch",
            "cat up2/config.toml",
        ],
    );
    let t = tools(&run);
    // Deleting, or running a script nobody saw, is not L3: the shell's own level (L5
    // by default), never run.
    for call in &t[..2] {
        assert_eq!(call["ran"], false, "{call}");
        assert!(call["level"] == "L4" || call["level"] == "L5", "{call}");
    }
    assert!(ws.join("canary").exists());
    // What ran was held inside the workspace by the kernel.
    assert_eq!(t[2]["ran"], true, "{}", t[2]);
    assert!(!w.home.join("planted.txt").exists(), "{}", results[2]);
    assert!(!results[3].contains(CONFIG_MARKER));
    let stolen = std::fs::read(ws.join("stolen.tar")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&stolen).contains(CONFIG_MARKER));
    assert!(!results[5].contains(CONFIG_MARKER), "{}", results[5]);
}

#[test]
fn always_for_a_shell_command_covers_that_command_only() {
    let w = world_at("conf-grants", "L4", &[("tar", "L3")]);
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(ws.join("canary"), "alive").unwrap();
    let s = Server::start(&w, &[]);
    let first = r#"{"command": "tar -cf backup.tar canary"}"#;
    w.fake.push(tool_call("shell", first));
    w.fake.push(Reply::text("Backed up."));
    let (rx, sid, ask) = asking(&s, "back it up", json!({}));
    assert_eq!(ask["call"]["level"], "L3", "{ask}");
    let call = ask["call"]["id"].as_str().unwrap().to_string();
    let r = s.post(
        &format!("/v1/sessions/{sid}/pending/{call}"),
        &json!({"answer": "always"}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(next_event(&rx, "evolve.turn")["tools"][0]["ran"], true);
    assert!(ws.join("backup.tar").exists());

    // The same command again runs without a question.
    w.fake.push(tool_call("shell", first));
    w.fake.push(Reply::text("Again."));
    let body = support::serve::chat_body(
        "again",
        json!({"stream": true, "evolve_events": true, "session": sid}),
    );
    let rx = support::serve::stream_events(&s, &body);
    let turn = next_event(&rx, "evolve.turn");
    assert_eq!(turn["tools"][0]["ran"], true, "{turn}");

    // Another L3 tar command is asked again; one that deletes is L4, asked twice.
    for (cmd, level) in [
        ("tar -cf other.tar canary", "L3"),
        ("tar --remove-files -cf gone.tar canary", "L4"),
    ] {
        w.fake
            .push(tool_call("shell", &json!({ "command": cmd }).to_string()));
        w.fake.push(Reply::text("Hm."));
        let (rx, _, ask) = asking(&s, "more", json!({"session": sid}));
        assert_eq!(ask["call"]["level"], level, "{cmd}: {ask}");
        let call = ask["call"]["id"].as_str().unwrap().to_string();
        s.post(
            &format!("/v1/sessions/{sid}/pending/{call}"),
            &json!({"answer": "no"}).to_string(),
        );
        assert_eq!(next_event(&rx, "evolve.turn")["tools"][0]["ran"], false);
    }
    assert!(ws.join("canary").exists());
}

#[test]
fn date_and_hostname_cannot_set_anything() {
    let w = world("conf-date", &[("date", "L2"), ("hostname", "L1")]);
    let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    std::fs::write(w.workspace().join("x.txt"), "evolve-evil-name\n").unwrap();
    let (run, _) = ask_shell(
        &w,
        false,
        &[
            "date --se 2001-01-01",
            "hostname -Fx.txt",
            "hostname --file=x.txt",
            "hostname --fi=x.txt",
            "date +%Y",
            "hostname",
        ],
    );
    let t = tools(&run);
    for (i, call) in t.iter().enumerate().take(4) {
        assert_eq!(call["ran"], false, "{i}: {call}");
    }
    assert_eq!(t[4]["ran"], true, "{}", t[4]);
    assert_eq!(t[5]["ran"], true, "{}", t[5]);
    let after = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    assert_eq!(before, after);
}

/// The lexical layer is deliberately fooled: `git status` at L2 is read-only by its
/// classification, but the repository's clean filter writes. A config giving `sh` itself
/// L2 is refused by every command (finding 12), so a program that the lexical rules
/// cannot see into stands in for it; the kernel refuses the writes.
#[test]
fn a_read_only_command_that_writes_anyway_is_stopped_by_the_kernel() {
    let w = world("conf-bypass", &[("git status", "L2")]);
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=w\n").unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "one"]);
    std::fs::write(ws.join("a.txt"), "two\n").unwrap();
    let outside = w.home.join("outside.txt");
    let tmp = std::env::temp_dir().join(format!("evolve-conf-bypass-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let filter = format!(
        "sh -c 'echo in > inside.txt; echo out > {}; echo tmp > {}'; cat",
        outside.display(),
        tmp.display()
    );
    git(&ws, &["config", "filter.w.clean", &filter]);
    let (run, _) = ask_shell(&w, false, &["git status"]);
    assert_eq!(tools(&run)[0]["level"], "L2");
    assert_eq!(tools(&run)[0]["ran"], true);
    assert!(
        !ws.join("inside.txt").exists(),
        "a read-only command wrote the workspace"
    );
    assert!(!outside.exists(), "a read-only command wrote Evolve's home");
    assert!(!tmp.exists(), "a read-only command wrote /tmp");
}

#[test]
fn without_landlock_no_shell_command_runs_unattended() {
    let mut w = world("conf-no-landlock", &[("ls", "L2"), ("cat", "L2")]);
    w.env("EVOLVE_LANDLOCK", "off");
    // doctor with no model to ask, so that no scripted reply is used up.
    let doctor = w
        .command(&["doctor"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .output()
        .unwrap();
    let doctor = Run::from(doctor);
    assert!(
        doctor.stdout.contains("no kernel confinement")
            && doctor.stdout.contains("ignored prefixes: ls, cat"),
        "{}",
        doctor.stdout
    );
    let (run, _) = ask_shell(&w, true, &["ls", "cat notes.txt"]);
    for t in tools(&run) {
        assert_eq!(t["ran"], false, "{t}");
        assert_eq!(t["level"], "L4", "{t}");
    }
    assert_eq!(run.code, 4);
    assert!(
        run.stderr.contains("command_prefixes below L4"),
        "one warning at start: {}",
        run.stderr
    );
}

/// A command that starts a process outside its process group (`setsid`) and returns: the
/// process does not outlive the command (Evolve adopts and stops it), so it cannot race
/// the file tools afterwards; and the file tools open through the kernel's checks anyway.
#[test]
fn nothing_a_command_starts_outlives_it() {
    let w = world_at("conf-strays", "L4", &[("./start.sh", "L3")]);
    if !landlock() {
        return;
    }
    let ws = w.workspace();
    std::fs::write(
        ws.join("start.sh"),
        "#!/bin/sh\nsetsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > stray.pid\n(setsid sh -c 'sleep 301 & echo $! > stray2.pid; exec sleep 302' </dev/null >/dev/null 2>&1 &)\nsleep 0.3\n",
    )
    .unwrap();
    Command::new("chmod")
        .args(["+x"])
        .arg(ws.join("start.sh"))
        .status()
        .unwrap();
    std::os::unix::fs::symlink(&w.home, ws.join("l")).unwrap();
    w.fake
        .push(tool_call("shell", r#"{"command": "./start.sh"}"#));
    w.fake
        .push(tool_call("read_file", r#"{"path": "l/config.toml"}"#));
    w.fake.push(Reply::text("Done."));
    let run = w.run(&["ask", "--yes", "--json", "start it"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for file in ["stray.pid", "stray2.pid"] {
        let pid = std::fs::read_to_string(ws.join(file)).unwrap();
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        assert!(
            matches!(state, None | Some("Z") | Some("X")),
            "{file}: still running: {stat}"
        );
    }
    let seen = w.main_requests().iter().map(all_text).collect::<String>();
    assert!(!seen.contains(CONFIG_MARKER), "the link out was read");
}
