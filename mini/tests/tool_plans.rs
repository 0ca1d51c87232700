//! Models without native tool calling, end to end: `[model] tools` (auto, prompt, off),
//! a server that refuses `tools`, and tool plans a model writes as text — through the
//! built binary against the fake model, asserting what the user sees and what was sent.

mod support;

use support::*;

const NO_TOOLS: &str = "registry.ollama.ai/library/smollm2:135m does not support tools";

/// A plan to read `notes.txt`, as a small model writes it.
const READ_PLAN: &str =
    "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```";

fn world_with_notes(name: &str) -> World {
    let w = World::new(name);
    std::fs::write(w.workspace().join("notes.txt"), "the launch code is 4711\n").unwrap();
    w
}

fn offers_tools(request: &serde_json::Value) -> bool {
    request["tools"].as_array().is_some_and(|t| !t.is_empty())
}

#[test]
fn a_model_without_tools_runs_its_text_plan_and_the_next_process_knows_it() {
    let w = world_with_notes("no-tools");
    w.fake.refuse_tools(Some(NO_TOOLS));
    w.fake.push(Reply::text(READ_PLAN));
    w.fake.push(Reply::text("The code is 4711."));
    let run = w.run(&["ask", "--json", "What is in notes.txt?"]).expect(0);
    let record = run.json();
    assert_eq!(record["reply"], "The code is 4711.");
    let tools = record["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{record}");
    assert_eq!(tools[0]["name"], "read_file");
    assert_eq!(tools[0]["ran"], true);
    assert!(run.stderr.contains("does not support native tool calling"));

    let mains = w.main_requests();
    assert_eq!(mains.len(), 3, "refused, then planned, then answered");
    assert!(offers_tools(&mains[0]), "auto tries native tools first");
    for m in &mains[1..] {
        assert!(!offers_tools(m), "prompt mode sends no tools: {m}");
        assert!(m.get("tool_choice").is_none());
        for msg in m["messages"].as_array().unwrap() {
            assert_ne!(msg["role"], "tool", "no tool role in prompt mode");
            assert!(msg.get("tool_calls").is_none());
        }
    }
    let system = system_text(&mains[1]);
    assert!(system.contains("## Tools"), "{system}");
    assert!(system.contains("- read_file: "), "{system}");
    assert!(system.contains("{\"name\": \"TOOL_NAME\", \"arguments\": {…}}"));
    let answered = all_text(&mains[2]);
    assert!(answered.contains("Result of read_file:"), "{answered}");
    assert!(
        answered.contains("4711"),
        "the file's text reached the model"
    );
    assert!(
        answered.contains("\"name\":\"read_file\""),
        "the plan is kept as text"
    );

    // Remembered for the model: the next process asks in prompt mode at once.
    let learned = w.home.join("model-tools.json");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&learned).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read_to_string(&learned)
        .unwrap()
        .contains("fake-main"));
    w.fake.push(Reply::text(READ_PLAN));
    w.fake.push(Reply::text("Still 4711."));
    let again = w.run(&["ask", "And now?"]).expect(0);
    assert_eq!(again.stdout, "Still 4711.\n");
    let mains = w.main_requests();
    assert_eq!(mains.len(), 5, "no refused request this time");
    assert!(mains[3..].iter().all(|m| !offers_tools(m)));
}

#[test]
fn prompt_mode_is_used_from_the_first_request_when_configured() {
    let w = world_with_notes("prompt-mode");
    w.config("[model]\ntools = \"prompt\"\n");
    w.fake
        .push(Reply::text("<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>"));
    w.fake.push(Reply::text("It says 4711."));
    let record = w.run(&["ask", "--json", "Read notes.txt"]).expect(0).json();
    assert_eq!(record["reply"], "It says 4711.");
    assert_eq!(record["tools"][0]["ran"], true);
    assert!(w.main_requests().iter().all(|m| !offers_tools(m)));
}

#[test]
fn tools_off_offers_none_and_runs_none() {
    let w = world_with_notes("tools-off");
    w.config("[model]\ntools = \"off\"\n");
    w.fake.push(Reply::text(READ_PLAN));
    let run = w.run(&["ask", "--json", "What is in notes.txt?"]).expect(0);
    let record = run.json();
    assert_eq!(record["reply"], READ_PLAN, "the text is the answer");
    assert!(record["tools"].as_array().unwrap().is_empty());
    let mains = w.main_requests();
    assert_eq!(mains.len(), 1);
    assert!(!offers_tools(&mains[0]));
    assert!(!system_text(&mains[0]).contains("## Tools"));
}

#[test]
fn a_bad_tools_setting_is_refused_naming_the_key() {
    let w = World::new("tools-bad");
    w.config("[model]\ntools = \"json\"\n");
    let run = w.run(&["ask", "hi"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("model.tools = \"json\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("auto, native, prompt, off"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_native_model_writing_a_json_plan_gets_it_run() {
    let w = world_with_notes("native-plan");
    w.fake
        .push(Reply::text(format!("I will read it.\n\n{READ_PLAN}")));
    w.fake.push(Reply::text("The code is 4711."));
    let record = w
        .run(&["ask", "--json", "What is in notes.txt?"])
        .expect(0)
        .json();
    assert_eq!(record["reply"], "The code is 4711.");
    assert_eq!(record["tools"][0]["name"], "read_file");
    assert_eq!(record["tools"][0]["ran"], true);
    let mains = w.main_requests();
    assert!(mains.iter().all(offers_tools), "native tools all along");
    // The call goes back as a native call with its result.
    let second = &mains[1]["messages"];
    let call = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .expect("the assistant's call");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(call["content"], "I will read it.");
    assert!(all_text(&mains[1]).contains("4711"));
    assert!(
        !w.home.join("model-tools.json").exists(),
        "nothing to learn"
    );
}

#[test]
fn an_ordinary_answer_with_a_json_block_is_shown_unchanged() {
    let w = World::new("json-data");
    let answer = "Here is the list:\n```json\n[{\"name\": \"Alice\", \"age\": 31}, {\"name\": \"read\", \"age\": 2}]\n```\nAnything else?";
    w.fake.push(Reply::text(answer));
    let run = w.run(&["ask", "List the people as JSON"]).expect(0);
    assert_eq!(run.stdout, format!("{answer}\n"));
    // Streamed in chat, too: whole and in order.
    w.fake.push(Reply::text(answer));
    let chat = w.run_stdin(&["chat"], "Again please\n/quit\n").expect(0);
    assert!(chat.stdout.contains(answer), "{}", chat.stdout);
}

#[test]
fn a_streamed_plan_is_not_shown_as_the_answer() {
    let w = world_with_notes("stream-plan");
    w.fake.push(Reply::text(READ_PLAN));
    w.fake.push(Reply::text("The code is 4711."));
    let chat = w
        .run_stdin(&["chat"], "What is in notes.txt?\n/quit\n")
        .expect(0);
    assert!(chat.stdout.contains("The code is 4711."), "{}", chat.stdout);
    assert!(!chat.stdout.contains("\"arguments\""), "{}", chat.stdout);
    assert_eq!(w.main_requests()[0]["stream"], true);
}
