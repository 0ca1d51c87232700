//! `evolve config init|show|check|path` through the built binary, as a user runs them:
//! a fresh `$EVOLVE_HOME`, no `OPENAI_*` variables from the machine running the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh `$EVOLVE_HOME` under the system temp dir, removed on drop.
struct Home(PathBuf);

impl Home {
    fn new() -> Home {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "evolve-config-cli-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        // Not created: `config init` must create it.
        Home(dir.join("home"))
    }

    fn file(&self) -> PathBuf {
        self.0.join("config.toml")
    }

    fn write(&self, text: &str) {
        std::fs::create_dir_all(&self.0).expect("create home");
        std::fs::write(self.file(), text).expect("write config");
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Some(parent) = self.0.parent() {
            let _ = std::fs::remove_dir_all(parent);
        }
    }
}

/// Runs `evolve` with `EVOLVE_HOME` = `home`, the model variables cleared, plus `env`.
fn evolve(home: &Home, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_evolve"));
    cmd.args(args).env("EVOLVE_HOME", &home.0);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "EVOLVE_MODEL",
        "EVOLVE_CHEAP_MODEL",
        "EVOLVE_PROFILE",
        "EVOLVE_LOG",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the evolve binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

#[test]
fn path_prints_the_file_in_evolve_home() {
    let home = Home::new();
    let out = evolve(&home, &["config", "path"], &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), home.file().display().to_string());
    // `path` works even when the file is broken.
    home.write("nonsense = = =\n");
    let out = evolve(&home, &["config", "path"], &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
}

#[test]
fn init_writes_a_private_template_once_and_it_checks_ok() {
    let home = Home::new();
    let out = evolve(&home, &["config", "init"], &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&home.file().display().to_string()));
    let text = std::fs::read_to_string(home.file()).expect("init wrote the file");
    assert!(text.contains("[model]") && text.contains("#context_window = 8192"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&home.0), 0o700, "home directory mode");
        assert_eq!(mode(&home.file()), 0o600, "config file mode");
    }

    // A second init refuses and leaves the user's edits alone; --force replaces them.
    std::fs::write(home.file(), "log = \"info\"\n").expect("edit");
    let out = evolve(&home, &["config", "init"], &[]);
    assert_eq!(code(&out), Some(1));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(home.file()).expect("still there"),
        "log = \"info\"\n"
    );
    let out = evolve(&home, &["config", "init", "--force"], &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(home.file()).expect("replaced"),
        text
    );

    let out = evolve(&home, &["config", "check"], &[]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().next(),
        Some(format!("✓ config OK ({})", home.file().display()).as_str())
    );
}

#[test]
fn show_masks_the_api_key_and_says_where_settings_came_from() {
    const KEY: &str = "sk-test-4f9a1c2b7d3e8f6a5b0c9d8e7f6a5b4c";
    const FILE_KEY: &str = "sk-file-aaaabbbbccccddddeeeeffff00001111";
    let home = Home::new();
    home.write(&format!(
        "[model]\nmain = \"file-model\"\napi_key = \"{FILE_KEY}\"\n\
         [profiles.cloud.model]\nbase_url = \"https://cloud.example/v1/\"\n"
    ));
    let env = [("OPENAI_API_KEY", KEY), ("EVOLVE_CHEAP_MODEL", "tiny")];
    for args in [
        &["config", "show"][..],
        &["config", "show", "--json"][..],
        &["config", "show", "--profile", "cloud"][..],
        &["config", "check"][..],
    ] {
        let out = evolve(&home, args, &env);
        assert_eq!(code(&out), Some(0), "{args:?}: {}", stderr(&out));
        for secret in [KEY, FILE_KEY, &KEY[3..20], &FILE_KEY[3..20]] {
            assert!(!stdout(&out).contains(secret), "{args:?} printed the key");
            assert!(!stderr(&out).contains(secret), "{args:?} logged the key");
        }
    }

    let out = evolve(&home, &["config", "show"], &env);
    let text = stdout(&out);
    assert!(text.contains("api_key = \"sk-…4c\""), "{text}");
    assert!(text.contains("# env OPENAI_API_KEY"), "{text}");
    assert!(text.contains("main = \"file-model\""), "{text}");
    assert!(text.contains("# env EVOLVE_CHEAP_MODEL"), "{text}");
    assert!(text.contains("# default"), "{text}");

    let out = evolve(
        &home,
        &["config", "show", "--json", "--profile", "cloud"],
        &env,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(doc["profile"], "cloud");
    assert_eq!(doc["model"]["base_url"], "https://cloud.example/v1");
    assert_eq!(doc["model"]["main"], "file-model");
    assert_eq!(doc["model"]["cheap"], "tiny");
    assert_eq!(doc["model"]["api_key"], "sk-…4c");
    assert_eq!(doc["origins"]["model.base_url"], "profile cloud");
    assert_eq!(doc["origins"]["model.main"], "file");
    assert_eq!(doc["origins"]["model.api_key"], "env OPENAI_API_KEY");
    assert_eq!(doc["origins"]["model.context_window"], "default");
}

#[test]
fn check_names_the_bad_key_and_the_file_and_exits_2() {
    let home = Home::new();
    let cases: &[(&str, &[&str])] = &[
        (
            "[model]\nmain = \"m\"\ncontex_window = 4096\n",
            &["contex_window", "line 3", "[model]"],
        ),
        ("[agent]\nreflect_below = 2.0\n", &["agent.reflect_below"]),
        (
            "[profiles.work.model]\nreserved_output = 100000\n",
            &["model.reserved_output", "[profiles.work]"],
        ),
    ];
    for (text, wants) in cases {
        home.write(text);
        let out = evolve(&home, &["config", "check"], &[]);
        assert_eq!(code(&out), Some(2), "{text}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains(&home.file().display().to_string()), "{err}");
        for want in *wants {
            assert!(err.contains(want), "{text}: {want} not in {err}");
        }
        assert!(!stdout(&out).contains("config OK"));
    }

    home.write("[model]\nmain = \"m\"\n");
    let out = evolve(&home, &["config", "show", "--profile", "nope"], &[]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("no profile `nope`"),
        "{}",
        stderr(&out)
    );

    let out = evolve(
        &home,
        &["config", "check"],
        &[("OPENAI_BASE_URL", "localhost:8080")],
    );
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("OPENAI_BASE_URL"), "{}", stderr(&out));
}
