//! `evolve config init|show|check|path` through the built binary, as a user runs them:
//! a fresh `$EVOLVE_HOME`, no `OPENAI_*` variables from the machine running the tests.

mod support;

use support::World;

#[test]
fn path_prints_the_file_in_evolve_home() {
    let w = World::uncreated("config-path");
    let run = w.run(&["config", "path"]).expect(0);
    assert_eq!(run.stdout.trim(), w.config_path().display().to_string());
    // `path` works even when the file is broken.
    w.config("nonsense = = =\n");
    w.run(&["config", "path"]).expect(0);
}

#[test]
fn init_writes_a_private_template_once_and_it_checks_ok() {
    let w = World::uncreated("config-init");
    let run = w.run(&["config", "init"]).expect(0);
    assert!(run.stdout.contains(&w.config_path().display().to_string()));
    let text = std::fs::read_to_string(w.config_path()).expect("init wrote the file");
    assert!(text.contains("[model]") && text.contains("#context_window = 8192"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        use std::path::Path;
        let mode = |p: &Path| std::fs::metadata(p).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&w.home), 0o700, "home directory mode");
        assert_eq!(mode(&w.config_path()), 0o600, "config file mode");
    }

    // A second init refuses and leaves the user's edits alone; --force replaces them.
    std::fs::write(w.config_path(), "log = \"info\"\n").expect("edit");
    let run = w.run(&["config", "init"]).expect(1);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(w.config_path()).expect("still there"),
        "log = \"info\"\n"
    );
    w.run(&["config", "init", "--force"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(w.config_path()).expect("replaced"),
        text
    );

    let run = w.run(&["config", "check"]).expect(0);
    assert_eq!(
        run.stdout.lines().next(),
        Some(format!("✓ config OK ({})", w.config_path().display()).as_str())
    );
}

#[test]
fn show_masks_the_api_key_and_says_where_settings_came_from() {
    const KEY: &str = "sk-test-4f9a1c2b7d3e8f6a5b0c9d8e7f6a5b4c";
    const FILE_KEY: &str = "sk-file-aaaabbbbccccddddeeeeffff00001111";
    let mut w = World::uncreated("config-show");
    w.config(&format!(
        "[model]\nmain = \"file-model\"\napi_key = \"{FILE_KEY}\"\n\
         [profiles.cloud.model]\nbase_url = \"https://cloud.example/v1/\"\n"
    ));
    w.env("OPENAI_API_KEY", KEY)
        .env("EVOLVE_CHEAP_MODEL", "tiny");
    for args in [
        &["config", "show"][..],
        &["config", "show", "--json"][..],
        &["config", "show", "--profile", "cloud"][..],
        &["config", "check"][..],
    ] {
        let run = w.run(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        for secret in [KEY, FILE_KEY, &KEY[3..20], &FILE_KEY[3..20]] {
            assert!(!run.stdout.contains(secret), "{args:?} printed the key");
            assert!(!run.stderr.contains(secret), "{args:?} logged the key");
        }
    }

    let text = w.run(&["config", "show"]).stdout;
    assert!(text.contains("api_key = \"sk-…4c\""), "{text}");
    assert!(text.contains("# env OPENAI_API_KEY"), "{text}");
    assert!(text.contains("main = \"file-model\""), "{text}");
    assert!(text.contains("# env EVOLVE_CHEAP_MODEL"), "{text}");
    assert!(text.contains("# default"), "{text}");

    let doc = w
        .run(&["config", "show", "--json", "--profile", "cloud"])
        .json();
    assert_eq!(doc["profile"], "cloud");
    assert_eq!(doc["model"]["base_url"], "https://cloud.example/v1");
    assert_eq!(doc["model"]["main"], "file-model");
    assert_eq!(doc["model"]["cheap"], "tiny");
    // cloud, named on the command line, has its own server and no key of its own: the
    // key exported for the environment's server is not sent to it; the file's is.
    assert_eq!(doc["model"]["api_key"], "sk-…11");
    assert_eq!(doc["origins"]["model.base_url"], "profile cloud");
    assert_eq!(doc["origins"]["model.main"], "file");
    assert_eq!(doc["origins"]["model.api_key"], "file");
    assert_eq!(doc["origins"]["model.context_window"], "default");
}

#[test]
fn check_names_the_bad_key_and_the_file_and_exits_2() {
    let mut w = World::uncreated("config-check");
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
        w.config(text);
        let run = w.run(&["config", "check"]);
        assert_eq!(run.code, 2, "{text}: {}", run.stdout);
        let err = &run.stderr;
        assert!(
            err.contains(&w.config_path().display().to_string()),
            "{err}"
        );
        for want in *wants {
            assert!(err.contains(want), "{text}: {want} not in {err}");
        }
        assert!(!run.stdout.contains("config OK"));
    }

    w.config("[model]\nmain = \"m\"\n");
    let run = w.run(&["config", "show", "--profile", "nope"]).expect(2);
    assert!(run.stderr.contains("no profile `nope`"), "{}", run.stderr);

    w.env("OPENAI_BASE_URL", "localhost:8080");
    let run = w.run(&["config", "check"]).expect(2);
    assert!(run.stderr.contains("OPENAI_BASE_URL"), "{}", run.stderr);
}
