//! A request repeats the previous one as its prefix — the tools, then the messages, in
//! the order a chat template renders them — so a model server's prompt cache (llama.cpp's
//! KV cache, a cloud API's cached input) reuses it: what was chosen for a question
//! (memories, skills, the tool-chain review) comes after the history, right before the
//! question, and the tools a session was offered stay offered. Through the built binary
//! against the scripted fake model.
//!
//! `cargo test -p evolve-mini --test prompt_cache -- --nocapture` prints the share of
//! each request that the next turn's first request repeats; `EVOLVE_BIN=path` runs
//! another build of `evolve` for a before/after comparison.

mod support;

use serde_json::Value;
use support::*;

/// The request as a chat template lays it out: each tool, then each message.
fn rendered(request: &Value) -> String {
    let mut out = String::new();
    for part in ["tools", "messages"] {
        for item in request[part].as_array().into_iter().flatten() {
            out.push_str(&item.to_string());
            out.push('\n');
        }
    }
    out
}

/// The bytes `after` repeats of `before` as its prefix.
fn common(before: &str, after: &str) -> usize {
    before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count()
}

/// The share of `before` that `after` repeats as its prefix.
fn reuse(before: &str, after: &str) -> f64 {
    common(before, after) as f64 / before.len().max(1) as f64
}

/// What of `after` a prompt cache holding `before` cannot reuse, in tokens (a byte
/// estimate: 4 bytes a token).
fn fresh_tokens(before: &str, after: &str) -> usize {
    after
        .len()
        .saturating_sub(common(before, after))
        .div_ceil(4)
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

fn messages(request: &Value) -> Vec<Value> {
    request["messages"].as_array().cloned().unwrap_or_default()
}

/// One turn of the scripted session: the question and what the model answers, step by
/// step (tool calls first, the answer last).
struct Step {
    question: &'static str,
    replies: Vec<Reply>,
}

fn text(t: &str) -> Vec<Reply> {
    vec![Reply::text(t)]
}

fn with_tool(name: &str, args: &str, answer: &str) -> Vec<Reply> {
    vec![tool_call(name, args), Reply::text(answer)]
}

/// Ten mixed questions: small talk, questions that memories answer, files written and
/// read back, Chinese, a follow-up, the time.
fn ten_turns() -> Vec<Step> {
    vec![
        Step {
            question: "Hello! I am planning a trip to Lyon next month.",
            replies: text("Lovely — Lyon is a great choice. How can I help?"),
        },
        Step {
            question: "Where does my sister live, and what does she like to eat?",
            replies: text("Your sister Jolene lives in Lisbon and loves grilled sardines."),
        },
        Step {
            question: "Save a packing list for the trip to packing.md",
            replies: with_tool(
                "write_file",
                r#"{"path": "packing.md", "content": "- passport\n- rain jacket\n- walking shoes"}"#,
                "I saved packing.md with three items.",
            ),
        },
        Step {
            question: "What is the capital of France?",
            replies: text("Paris."),
        },
        Step {
            question: "请用中文介绍一下里昂的美食。",
            replies: text("里昂以传统小酒馆（bouchon）闻名，比如里昂香肠和梭鱼丸。"),
        },
        Step {
            question: "Read packing.md back to me",
            replies: with_tool(
                "read_file",
                r#"{"path": "packing.md"}"#,
                "It lists a passport, a rain jacket and walking shoes.",
            ),
        },
        Step {
            question: "How far is Lyon from Paris by train, and which station?",
            replies: text("About two hours by TGV, from Gare de Lyon to Part-Dieu."),
        },
        Step {
            question: "Which airline do I usually fly with?",
            replies: text("You usually fly with Air France."),
        },
        Step {
            question: "Add sunscreen to the packing list in packing.md",
            replies: with_tool(
                "write_file",
                r#"{"path": "packing.md", "content": "- passport\n- rain jacket\n- walking shoes\n- sunscreen"}"#,
                "Added sunscreen.",
            ),
        },
        Step {
            question: "Thanks! Sum up the plan in two sentences.",
            replies: text("You fly to Lyon next month with a four-item packing list."),
        },
    ]
}

/// The part of a request that stays for the next turn: the tools but `more_tools` (it
/// names the tools not offered, a list that shrinks when the offer grows), and every
/// message — what was chosen for the question (earlier turns of the L2 ring picked for
/// it, the context block) too, since the next turn puts it back where it was.
fn lasting(request: &Value) -> (Vec<Value>, Vec<Value>) {
    let tools: Vec<Value> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["function"]["name"] != "more_tools")
        .cloned()
        .collect();
    (tools, messages(request))
}

/// Per turn: the share of the previous turn's last main request that this turn's first
/// repeats, whether the tools offered grew, whether the part that should last did, and
/// the number of main requests.
struct Figure {
    turn: u64,
    reuse: f64,
    /// The tokens of the first request a cache of the previous one cannot reuse.
    fresh: usize,
    tools_grew: bool,
    kept: bool,
    requests: usize,
    /// Cheap-model requests after the answer, and the tokens the record counts for the
    /// main model and for the cheap one (the fake's usage: characters / 4).
    background: usize,
    main_tokens: u64,
    cheap_tokens: u64,
}

fn run_session(w: &World) -> Vec<Figure> {
    for memory in [
        "The user's sister Jolene lives in Lisbon and loves grilled sardines",
        "The user usually flies with Air France and prefers aisle seats",
        "The user is vegetarian on weekdays",
    ] {
        w.run(&["memory", "add", "--category", "general", memory])
            .expect(0);
    }
    let mut sid: Option<String> = None;
    let mut figures = Vec::new();
    let mut last: Option<Value> = None;
    for (i, step) in ten_turns().into_iter().enumerate() {
        let before = w.main_requests().len();
        let all_before = w.fake.chat_requests().len();
        for reply in step.replies {
            w.fake.push(reply);
        }
        let mut args = vec!["ask", "--json", "--yes"];
        if let Some(s) = &sid {
            args.extend(["--session", s.as_str()]);
        }
        args.push(step.question);
        let out = w.run(&args).expect(0).json();
        sid = out["session"].as_str().map(str::to_string);
        let mains = w.main_requests();
        let first = mains[before].clone();
        let all = w.fake.chat_requests().len() - all_before;
        let tokens = |role: &str| {
            let u = &out["usage"][role];
            u["prompt_tokens"].as_u64().unwrap_or(0) + u["completion_tokens"].as_u64().unwrap_or(0)
        };
        if let Some(prev) = &last {
            let (was, now) = (tool_names(prev), tool_names(&first));
            let (tools, history) = lasting(prev);
            let next_tools = first["tools"].as_array().cloned().unwrap_or_default();
            let next_messages = messages(&first);
            let kept = next_tools.len() >= tools.len()
                && next_tools[..tools.len()] == tools[..]
                && next_messages.len() >= history.len()
                && next_messages[..history.len()] == history[..];
            figures.push(Figure {
                turn: i as u64 + 1,
                reuse: reuse(&rendered(prev), &rendered(&first)),
                fresh: fresh_tokens(&rendered(prev), &rendered(&first)),
                tools_grew: was != now,
                kept,
                requests: mains.len() - before,
                background: all - (mains.len() - before),
                main_tokens: tokens("main"),
                cheap_tokens: tokens("cheap"),
            });
        }
        last = mains.last().cloned();
    }
    figures
}

/// Whether turn `turn` moves the history window (L1) or its tool outputs.
fn compacts(turn: u64) -> bool {
    use evolve_core::history::window;
    window(turn, 6, 3) != window(turn - 1, 6, 3)
}

/// Each turn's first request begins with the previous turn's last one whole: its tools,
/// its system message, its history, what was chosen for its question and the question's
/// own messages, unless the history window moved. The figures are printed
/// (`--nocapture`).
#[test]
fn ten_mixed_turns_each_repeat_the_previous_request_as_their_prefix() {
    let w = World::new("prompt-cache-ten");
    let figures = run_session(&w);
    println!(
        "turn  reuse of the previous request  new prompt tokens  tools grew  compacts  \
         main calls  main tokens  background calls  background tokens"
    );
    for f in &figures {
        println!(
            "{:>4}  {:>28.1}%  {:>17}  {:>10}  {:>8}  {:>10}  {:>11}  {:>16}  {:>17}",
            f.turn,
            f.reuse * 100.0,
            f.fresh,
            f.tools_grew,
            compacts(f.turn),
            f.requests,
            f.main_tokens,
            f.background,
            f.cheap_tokens
        );
    }
    assert_eq!(figures.len(), 9, "nine turns after the first");
    for f in figures.iter().filter(|f| !compacts(f.turn)) {
        assert!(
            f.kept,
            "turn {}: the previous request's tools and history are not its prefix",
            f.turn
        );
    }
    // Every turn that does not move the history window repeats at least 90% of the
    // previous request: what was chosen for the previous question stays where it was,
    // and no common word of a question grows the tools offered.
    let steady: Vec<&Figure> = figures.iter().filter(|f| !compacts(f.turn)).collect();
    assert_eq!(steady.len(), 8, "one turn of ten moves the window");
    for f in steady {
        assert!(f.reuse >= 0.9, "turn {}: {:.1}%", f.turn, f.reuse * 100.0);
    }
}

#[test]
fn the_next_turn_starts_with_the_whole_previous_request_and_the_memory_comes_last() {
    let w = World::new("prompt-cache-prefix");
    w.run(&[
        "memory",
        "add",
        "--category",
        "general",
        "The user's dog is named Miso",
    ])
    .expect(0);
    // No memory is about the first question: its request has no context block.
    w.fake.push(Reply::text("Hello!"));
    let first = w.run(&["ask", "--json", "Hi there"]).expect(0).json();
    let sid = first["session"].as_str().unwrap().to_string();
    w.fake.push(Reply::text("Your dog is named Miso."));
    w.run(&["ask", "--session", &sid, "What is my dog's name?"])
        .expect(0);
    let mains = w.main_requests();
    assert_eq!(mains.len(), 2);
    let (one, two) = (&mains[0], &mains[1]);
    let (tools1, tools2) = (tool_names(one), tool_names(two));
    assert_eq!(
        tools2[..tools1.len()],
        tools1[..],
        "the second request's tools start with the first's"
    );
    assert_eq!(
        two["tools"].as_array().unwrap()[..tools1.len()],
        one["tools"].as_array().unwrap()[..],
        "and the schemas are the same"
    );
    let (m1, m2) = (messages(one), messages(two));
    assert!(m2.len() > m1.len());
    assert_eq!(
        m2[..m1.len()],
        m1[..],
        "the second request starts with the whole first request's messages"
    );
    // The memory chosen for the second question sits right before it.
    let n = m2.len();
    assert_eq!(m2[n - 1]["content"], "What is my dog's name?");
    let context = m2[n - 3]["content"].as_str().unwrap_or_default();
    assert!(context.contains("Miso"), "{context}");
    assert!(
        !m2[0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("Miso"),
        "the memory is not in the system message"
    );
}

#[test]
fn tools_once_offered_stay_offered_in_the_order_first_offered() {
    let w = World::new("prompt-cache-tools");
    w.fake.push(tool_call("get_time", "{}"));
    w.fake.push(Reply::text("It is noon."));
    let first = w
        .run(&["ask", "--json", "--yes", "What time is it now?"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    // A question about files offers the file tools too, after the earlier ones; the
    // tool loop's second step repeats the first step's request whole.
    w.fake.push(tool_call("list_dir", r#"{"path": "."}"#));
    w.fake.push(Reply::text("The folder is empty."));
    w.run(&[
        "ask",
        "--yes",
        "--session",
        &sid,
        "List the files in the folder and read the file notes",
    ])
    .expect(0);
    // Small talk afterwards still offers them all.
    w.fake.push(Reply::text("You're welcome."));
    w.run(&["ask", "--session", &sid, "Thanks a lot"]).expect(0);
    let mains = w.main_requests();
    assert_eq!(mains.len(), 5, "two steps, two steps, one");
    let names: Vec<Vec<String>> = mains.iter().map(tool_names).collect();
    for pair in names.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        // The name list (`more_tools`, last) may shrink as tools move into the list.
        let full = |v: &Vec<String>| -> Vec<String> {
            v.iter().filter(|n| *n != "more_tools").cloned().collect()
        };
        let (a, b) = (full(a), full(b));
        assert!(b.len() >= a.len(), "{a:?} → {b:?}");
        assert_eq!(b[..a.len()], a[..], "{a:?} → {b:?}");
    }
    assert!(names[0].contains(&"get_time".to_string()), "{:?}", names[0]);
    assert!(names[2].contains(&"list_dir".to_string()), "{:?}", names[2]);
    assert!(names[4].contains(&"get_time".to_string()), "{:?}", names[4]);
    assert!(names[4].contains(&"list_dir".to_string()), "{:?}", names[4]);
    // Within a turn the next step repeats the whole request before it.
    let (step1, step2) = (rendered(&mains[2]), rendered(&mains[3]));
    let tools_part: usize = mains[2]["tools"]
        .as_array()
        .map_or(0, |t| t.iter().map(|x| x.to_string().len() + 1).sum());
    assert!(
        step2.starts_with(&step1[..tools_part]),
        "the second step offers the same tools"
    );
    let (m1, m2) = (messages(&mains[2]), messages(&mains[3]));
    assert_eq!(m2[..m1.len()], m1[..]);
}

#[test]
fn a_session_offers_its_stable_tools_from_the_first_turn_so_a_later_file_question_keeps_the_prefix()
{
    let cases: [(&str, &str, Vec<Reply>); 3] = [
        (
            "Hello! How are you today?",
            "Write hello into the file greeting.md",
            with_tool(
                "write_file",
                r#"{"path": "note.md", "content": "hi"}"#,
                "Saved.",
            ),
        ),
        (
            "What is the capital of France?",
            "List the files in my folder",
            with_tool("list_dir", r#"{"path": "."}"#, "It is empty."),
        ),
        (
            "请介绍一下你自己。",
            "读一下 notes.txt 文件",
            with_tool("read_file", r#"{"path": "notes.txt"}"#, "文件是空的。"),
        ),
    ];
    for (i, (first_q, second_q, replies)) in cases.into_iter().enumerate() {
        let w = World::new(&format!("prompt-cache-stable-{i}"));
        std::fs::write(w.workspace().join("notes.txt"), "").unwrap();
        w.fake.push(Reply::text("Fine, thanks."));
        let first = w.run(&["ask", "--json", first_q]).expect(0).json();
        let sid = first["session"].as_str().unwrap().to_string();
        for r in replies {
            w.fake.push(r);
        }
        w.run(&["ask", "--yes", "--session", &sid, second_q])
            .expect(0);
        let mains = w.main_requests();
        let (one, two) = (&mains[0], &mains[1]);
        // The file tool the second question needs was offered from the first turn on, so
        // the second request's offer starts with the first's whole.
        let called = two_called(&w);
        assert!(
            tool_names(one).contains(&called),
            "{first_q}: {called} offered from the first turn: {:?}",
            tool_names(one)
        );
        let full = |v: Vec<String>| -> Vec<String> {
            v.into_iter().filter(|n| n != "more_tools").collect()
        };
        let (was, now) = (full(tool_names(one)), full(tool_names(two)));
        assert_eq!(now[..was.len()], was[..], "{second_q}");
    }
}

/// The tool the last turn called (its record's first tool).
fn two_called(w: &World) -> String {
    let calls: Vec<String> = w
        .main_requests()
        .iter()
        .flat_map(messages)
        .filter_map(|m| {
            m["tool_calls"][0]["function"]["name"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    calls.last().cloned().expect("a tool call")
}
