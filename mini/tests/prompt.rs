//! `evolve prompt …` through the built binary with the fake model: a version set from a
//! file or stdin is what the next turn's system message says, `evolve` has the cheap
//! model rewrite the prompt from the stored lessons, low grades and rules, `rollback`
//! brings an earlier text back, and bad input is refused with nothing stored.

mod support;

use support::{system_text, Reply, World, POST_TURN, REFLECT};

/// The evolve request's marker (mini/src/agents/prompts.rs `EVOLVE_PROMPT_MARKER`).
const PROMPT: &str = "[evolve:prompt]";

/// The start of the built-in prompt (mini/src/agents/prompts.rs).
const BUILTIN: &str = "You are Evolve, a personal assistant running on the user's own machine.";

/// (version, source, active) of `prompt list --json`.
fn listed(w: &World) -> Vec<(u64, String, bool)> {
    w.run(&["prompt", "list", "--json"])
        .expect(0)
        .json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| {
            (
                v["version"].as_u64().expect("version"),
                v["source"].as_str().expect("source").to_string(),
                v["active"].as_bool().expect("active"),
            )
        })
        .collect()
}

/// Runs one turn and returns the system message the main model received.
fn next_turn_system(w: &World, question: &str) -> String {
    w.fake.push(Reply::text("Aye."));
    w.run(&["ask", question]).expect(0);
    let mains = w.main_requests();
    system_text(mains.last().expect("a main-model request"))
}

#[test]
fn a_set_version_is_used_from_the_next_turn_and_rollback_brings_the_old_text_back() {
    let w = World::new("prompt-set");
    assert_eq!(listed(&w), [(0, "default".to_string(), true)]);
    let human = w.run(&["prompt", "list"]).expect(0).stdout;
    assert!(
        human.contains("*   0  built-in    default  You are Evolve, a personal assistant"),
        "{human}"
    );

    let file = w.home.join("pirate.txt");
    std::fs::write(
        &file,
        "You are Pirate-Evolve.\nSpeak like a pirate, briefly.\n",
    )
    .unwrap();
    let out = w
        .run(&["prompt", "set", file.to_str().unwrap()])
        .expect(0)
        .stdout;
    assert!(out.contains("version 1 is active"), "{out}");
    let system = next_turn_system(&w, "hello");
    assert!(system.starts_with("You are Pirate-Evolve."), "{system}");
    assert!(!system.contains(BUILTIN), "{system}");

    let out = w
        .run_stdin(&["prompt", "set", "-"], "You are Butler-Evolve. Be formal.")
        .expect(0)
        .stdout;
    assert!(out.contains("version 2 is active"), "{out}");
    assert!(next_turn_system(&w, "hello again").starts_with("You are Butler-Evolve."));
    assert_eq!(
        listed(&w),
        [
            (0, "default".to_string(), false),
            (1, "set".to_string(), false),
            (2, "set".to_string(), true),
        ]
    );
    let shown = w.run(&["prompt", "show"]).expect(0).stdout;
    assert_eq!(shown.trim(), "You are Butler-Evolve. Be formal.");
    let shown = w.run(&["prompt", "show", "1"]).expect(0).stdout;
    assert_eq!(
        shown.trim(),
        "You are Pirate-Evolve.\nSpeak like a pirate, briefly."
    );
    let shown = w.run(&["prompt", "show", "0"]).expect(0).stdout;
    assert!(shown.starts_with(BUILTIN), "{shown}");

    w.run(&["prompt", "rollback", "1"]).expect(0);
    let system = next_turn_system(&w, "who are you");
    assert!(system.starts_with("You are Pirate-Evolve."), "{system}");
    assert!(!system.contains("Butler"), "{system}");
    // Rollback moves the pointer: every version stays listed.
    assert_eq!(listed(&w).iter().filter(|v| v.2).count(), 1);
    assert!(listed(&w)[1].2);

    w.run(&["prompt", "rollback", "0"]).expect(0);
    assert!(next_turn_system(&w, "and now").starts_with(BUILTIN));
    assert_eq!(listed(&w)[0], (0, "default".to_string(), true));
    assert_eq!(listed(&w).len(), 3);
}

#[test]
fn evolve_rewrites_the_prompt_from_lessons_low_grades_and_rules() {
    let w = World::new("prompt-evolve");
    // One turn graded low leaves an evaluation and a reflection lesson.
    w.fake.push(Reply::text("I am not sure about the deploy."));
    w.fake.route(
        POST_TURN,
        Reply::text(r#"{"grade": {"score": 0.2, "reason": "vague about the deploy steps"}}"#),
    );
    w.fake.route(
        REFLECT,
        Reply::text(r#"{"lesson": "Before answering deploy questions, read deploy.md"}"#),
    );
    w.run(&["ask", "How do we deploy?"]).expect(0);
    w.run(&[
        "memory",
        "add",
        "--category",
        "instruction",
        "Always give sizes in metric units.",
    ])
    .expect(0);

    let evolved = "You are Evolve, a personal assistant on the user's machine.\n\
                   Before answering questions about deploying, read deploy.md and cite it.\n\
                   Be concrete: name the steps, not just the goal.";
    w.fake
        .route(PROMPT, Reply::text(format!("```text\n{evolved}\n```")));
    let out = w.run(&["prompt", "evolve"]).expect(0).stdout;
    assert!(out.contains("version 1 is active"), "{out}");
    assert!(out.contains("first change, line 1"), "{out}");
    assert!(
        out.contains(&format!("→ {} characters", evolved.chars().count())),
        "{out}"
    );

    let asked: Vec<_> = w
        .fake
        .chat_requests()
        .into_iter()
        .filter(|r| r.mentions(PROMPT))
        .collect();
    assert_eq!(asked.len(), 1, "one evolve request");
    let request = asked[0].contents().join("\n");
    for needle in [
        "read deploy.md",
        "vague about the deploy steps",
        "Always give sizes in metric units.",
        BUILTIN,
    ] {
        assert!(request.contains(needle), "{needle:?} not sent:\n{request}");
    }
    assert_eq!(asked[0].model(), Some("fake-cheap"));

    assert_eq!(
        listed(&w),
        [
            (0, "default".to_string(), false),
            (1, "evolved".to_string(), true)
        ]
    );
    assert_eq!(w.run(&["prompt", "show"]).expect(0).stdout.trim(), evolved);
    let system = next_turn_system(&w, "Deploy the new version please");
    assert!(system.starts_with(evolved), "{system}");
}

#[test]
fn bad_input_is_refused_with_a_clear_error_and_nothing_stored() {
    let w = World::new("prompt-bad");
    let only_builtin = [(0, "default".to_string(), true)];

    let empty = w.home.join("empty.txt");
    std::fs::write(&empty, "  \n\n").unwrap();
    let run = w.run(&["prompt", "set", empty.to_str().unwrap()]).expect(2);
    assert!(
        run.stderr.contains("empty") && run.stderr.contains("nothing was stored"),
        "{}",
        run.stderr
    );
    let run = w.run_stdin(&["prompt", "set", "-"], "").expect(2);
    assert!(run.stderr.contains("empty"), "{}", run.stderr);

    let long = w.home.join("long.txt");
    std::fs::write(&long, "word ".repeat(2_000)).unwrap();
    let run = w.run(&["prompt", "set", long.to_str().unwrap()]).expect(2);
    assert!(run.stderr.contains("at most 8000"), "{}", run.stderr);

    let missing = w.home.join("missing.txt");
    let run = w.run(&["prompt", "set", missing.to_str().unwrap()]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("missing.txt"), "{}", run.stderr);

    for args in [&["prompt", "rollback", "7"][..], &["prompt", "show", "7"]] {
        let run = w.run(args).expect(2);
        assert!(
            run.stderr.contains("no system prompt version 7"),
            "{}",
            run.stderr
        );
    }
    let run = w.run(&["prompt", "rollback", "latest"]).expect(2);
    assert!(
        run.stderr.contains("not a prompt version"),
        "{}",
        run.stderr
    );
    w.run(&["prompt", "rollback"]).expect(2);

    // Nothing learned yet: no model call, nothing stored.
    let run = w.run(&["prompt", "evolve"]).expect(1);
    assert!(
        run.stderr.contains("nothing to evolve from"),
        "{}",
        run.stderr
    );
    assert!(!w.fake.chat_requests().iter().any(|r| r.mentions(PROMPT)));

    // A model reply that is not a prompt is refused.
    w.run(&[
        "memory",
        "add",
        "--category",
        "instruction",
        "Answer in French.",
    ])
    .expect(0);
    for reply in [
        "",
        "```\n```",
        "Sure!",
        r#"{"prompt": "You are a helpful assistant who always answers in French."}"#,
    ] {
        w.fake.route(PROMPT, Reply::text(reply));
        let run = w.run(&["prompt", "evolve"]).expect(1);
        assert!(
            run.stderr.contains("refused") && run.stderr.contains("nothing was stored"),
            "{reply:?}: {}",
            run.stderr
        );
    }
    // A model that fails says so.
    w.fake.route(PROMPT, Reply::error(400, "model not found"));
    let run = w.run(&["prompt", "evolve"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_eq!(listed(&w), only_builtin);
    assert!(next_turn_system(&w, "hi").starts_with(BUILTIN));
}

#[test]
fn serve_lists_sets_evolves_and_rolls_back_versions_and_the_next_chat_turn_uses_them() {
    let w = World::new("prompt-serve");
    let s = support::serve::Server::start(&w, &[]);
    let first = s.get("/v1/prompt").json();
    assert_eq!(first["active"], 0);
    assert_eq!(first["data"][0]["source"], "default");

    // Nothing learned yet: evolve says so and stores nothing.
    let r = s.post("/v1/prompt/evolve", "");
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.error_message().contains("nothing to evolve from"));

    let r = s.post(
        "/v1/prompt",
        r#"{"text": "You are Web-Evolve. Answer in haiku."}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["version"], 1);
    assert_eq!(r.json()["source"], "set");
    // The same text again stores nothing.
    let again = s.post(
        "/v1/prompt",
        r#"{"text": "You are Web-Evolve. Answer in haiku."}"#,
    );
    assert_eq!(again.status, 200);
    assert_eq!(
        s.get("/v1/prompt").json()["data"].as_array().unwrap().len(),
        2
    );
    for bad in [r#"{"text": "   "}"#, r#"{"text": 3}"#, "{}"] {
        assert_eq!(s.post("/v1/prompt", bad).status, 400, "{bad}");
    }

    // The next chat turn starts with the new version.
    w.fake.push(Reply::text("Leaves fall."));
    let chat = s.post(
        "/v1/chat/completions",
        r#"{"model":"evolve","messages":[{"role":"user","content":"autumn?"}]}"#,
    );
    assert_eq!(chat.status, 200, "{}", chat.body);
    let mains = w.main_requests();
    assert!(system_text(mains.last().unwrap()).starts_with("You are Web-Evolve."));

    // A low grade and a rule to learn from, then evolve through the API.
    s.post(
        "/v1/memory",
        r#"{"content": "Always give sizes in metric units.", "category": "instruction"}"#,
    );
    let evolved = "You are Evolve, a personal assistant on the user's machine.\n\
                   Give every size in metric units, and keep answers short and concrete.";
    w.fake.route(PROMPT, Reply::text(evolved));
    let r = s.post("/v1/prompt/evolve", "");
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["version"], 2);
    assert_eq!(r.json()["source"], "evolved");
    assert_eq!(r.json()["text"], evolved);
    let asked = w.fake.chat_requests();
    let request = asked.iter().rev().find(|q| q.mentions(PROMPT)).unwrap();
    assert!(request
        .contents()
        .join("\n")
        .contains("Always give sizes in metric units."));

    // A reply that is not a prompt is refused with nothing stored.
    w.fake.route(PROMPT, Reply::text("Sure!"));
    let r = s.post("/v1/prompt/evolve", "");
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(s.get("/v1/prompt").json()["active"], 2);

    // Roll back to the built-in prompt; unknown versions are 404, words are 400.
    let r = s.post("/v1/prompt/0/activate", "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(s.get("/v1/prompt/active").json()["version"], 0);
    assert!(s.get("/v1/prompt/active").json()["text"]
        .as_str()
        .unwrap()
        .starts_with(BUILTIN));
    assert_eq!(s.post("/v1/prompt/9/activate", "").status, 404);
    assert_eq!(s.get("/v1/prompt/latest").status, 400);
    assert_eq!(
        s.get("/v1/prompt/1").json()["text"],
        "You are Web-Evolve. Answer in haiku."
    );
    assert_eq!(s.stop(), Some(0));
    // The store kept it all: the CLI sees the same versions.
    let cli = listed(&w);
    assert_eq!(cli.len(), 3);
    assert!(cli[0].2, "the built-in prompt is active: {cli:?}");
    assert_eq!(cli[2].1, "evolved");
}
