//! A profile named on the command line against the environment the quick start
//! exports (`OPENAI_BASE_URL`, `EVOLVE_MODEL`, `EVOLVE_CHEAP_MODEL`): what the named
//! profile sets wins, and stderr says which variable it overrode; the environment fills
//! what the profile leaves unset; the default profile keeps the environment over the
//! file. Two fake model servers: the world's, which the environment points at, and the
//! profile's.

mod support;

use support::*;

/// A second model server, answering the background prompts quietly as the world's does.
fn second_server() -> FakeLlm {
    let fake = FakeLlm::start();
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
    fake
}

/// The model names of every chat request a server received.
fn models(fake: &FakeLlm) -> Vec<String> {
    fake.chat_requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect()
}

/// How many lines of `stderr` contain `needle`.
fn lines_with(stderr: &str, needle: &str) -> usize {
    stderr.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn a_named_profile_sends_every_call_to_its_own_server_and_says_so() {
    let w = World::new("profile-env-named");
    let alt = second_server();
    w.config(&format!(
        "[profiles.alt.model]\nbase_url = \"{}\"\nmain = \"alt-main\"\ncheap = \"alt-cheap\"\n",
        alt.base_url()
    ));
    alt.push(Reply::text("answered by alt"));
    let run = w.run(&["ask", "--profile", "alt", "hello there"]).expect(0);
    assert_eq!(run.stdout.trim(), "answered by alt", "{}", run.stderr);

    assert!(
        w.fake.chat_requests().is_empty(),
        "the environment's server was called: {:?}",
        models(&w.fake)
    );
    let used = models(&alt);
    assert_eq!(
        used.first().map(String::as_str),
        Some("alt-main"),
        "{used:?}"
    );
    assert!(
        used.iter().any(|m| m == "alt-cheap"),
        "no cheap call reached the profile's server: {used:?}"
    );
    assert!(
        used.iter().all(|m| m == "alt-main" || m == "alt-cheap"),
        "{used:?}"
    );
    for (var, key) in [
        ("OPENAI_BASE_URL", "[model] base_url"),
        ("EVOLVE_MODEL", "[model] main"),
        ("EVOLVE_CHEAP_MODEL", "[model] cheap"),
    ] {
        let warning = format!("profile alt sets {key}; {var} from the environment is ignored");
        assert_eq!(
            lines_with(&run.stderr, &warning),
            1,
            "want once: {warning}\n{}",
            run.stderr
        );
    }

    // EVOLVE_PROFILE names a profile too.
    alt.push(Reply::text("alt again"));
    let mut w = w;
    w.env("EVOLVE_PROFILE", "alt");
    let run = w.run(&["ask", "hello again"]).expect(0);
    assert_eq!(run.stdout.trim(), "alt again", "{}", run.stderr);
    assert!(w.fake.chat_requests().is_empty());
    assert_eq!(
        lines_with(&run.stderr, "OPENAI_BASE_URL from the environment"),
        1
    );
}

#[test]
fn a_named_profile_without_a_server_uses_the_environments_without_a_warning() {
    let w = World::new("profile-env-unset");
    let other = second_server();
    // The top level names another server: the environment still beats the file.
    w.config(&format!(
        "[model]\nbase_url = \"{}\"\n[profiles.roomy.model]\ncontext_window = 16384\n",
        other.base_url()
    ));
    w.fake
        .push(Reply::text("answered by the environment's server"));
    let run = w.run(&["ask", "--profile", "roomy", "hello"]).expect(0);
    assert_eq!(
        run.stdout.trim(),
        "answered by the environment's server",
        "{}",
        run.stderr
    );
    assert!(other.chat_requests().is_empty());
    assert_eq!(
        models(&w.fake).first().map(String::as_str),
        Some("fake-main")
    );
    assert!(
        !run.stderr.contains("from the environment"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_default_profile_keeps_the_environment_over_the_file() {
    let w = World::new("profile-env-default");
    let other = second_server();
    w.config(&format!(
        "[model]\nbase_url = \"{}\"\nmain = \"file-main\"\n[profiles.alt.model]\nbase_url = \"{0}\"\n",
        other.base_url()
    ));
    for args in [
        &["ask", "hi"][..],
        &["ask", "--profile", "default", "hi"][..],
    ] {
        w.fake.push(Reply::text("from the environment"));
        let run = w.run(args).expect(0);
        assert_eq!(run.stdout.trim(), "from the environment", "{}", run.stderr);
        assert!(
            !run.stderr.contains("from the environment"),
            "{}",
            run.stderr
        );
    }
    assert!(other.chat_requests().is_empty());
    assert!(models(&w.fake).iter().all(|m| m.starts_with("fake-")));
}

#[test]
fn config_show_and_check_tell_which_source_won() {
    let w = World::new("profile-env-show");
    w.config("[profiles.alt.model]\nbase_url = \"http://alt.example/v1\"\nmain = \"alt-main\"\n");
    let show = w.run(&["config", "show", "--profile", "alt"]).expect(0);
    let line = |key: &str| {
        show.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("base_url").ends_with("# profile alt (over env OPENAI_BASE_URL)"),
        "{}",
        show.stdout
    );
    assert!(line("main").ends_with("# profile alt (over env EVOLVE_MODEL)"));
    assert!(line("cheap").ends_with("# env EVOLVE_CHEAP_MODEL"));
    assert!(show.stdout.contains(
        "# profile alt sets [model] base_url; OPENAI_BASE_URL from the environment is ignored"
    ));
    let json = w
        .run(&["config", "show", "--json", "--profile", "alt"])
        .expect(0)
        .json();
    assert_eq!(
        json["origins"]["model.base_url"],
        "profile alt (over env OPENAI_BASE_URL)"
    );
    assert_eq!(json["ignored_env"].as_array().map(Vec::len), Some(2));
    // Without --profile the environment wins and nothing is ignored.
    let json = w.run(&["config", "show", "--json"]).expect(0).json();
    assert_eq!(json["origins"]["model.base_url"], "env OPENAI_BASE_URL");
    assert_eq!(json["ignored_env"], serde_json::json!([]));

    let check = w.run(&["config", "check", "--profile", "alt"]).expect(0);
    assert_eq!(
        lines_with(
            &check.stderr,
            "OPENAI_BASE_URL from the environment is ignored"
        ),
        1,
        "{}",
        check.stderr
    );
}
