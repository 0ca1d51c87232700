//! Table-driven tests of the builder and the trim steps, with tea-agent's numbers.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::text::FallbackTokenizer;

fn budget(input: usize) -> Budget {
    Budget {
        context_window: input + 4096,
        reserved_output: 4096,
    }
}

const HUGE: usize = 10_000_000;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: "read_file".to_string(),
        arguments: "{\"path\":\"a.txt\"}".to_string(),
    }
}

/// `n` turns: user, assistant(call), tool(output), assistant(reply).
fn tool_turns(n: usize, output: &str) -> Vec<Message> {
    let mut m = Vec::new();
    for t in 0..n {
        m.push(Message::user(format!("question {t}")));
        m.push(Message::assistant_calls("", vec![call(&format!("c{t}"))]));
        m.push(Message::tool_result(format!("c{t}"), "read_file", output));
        m.push(Message::assistant(format!("answer {t}")));
    }
    m
}

fn run(input: &BuildInput<'_>) -> Built {
    run_cfg(input, &HistoryConfig::default())
}

fn run_cfg(input: &BuildInput<'_>, cfg: &HistoryConfig) -> Built {
    let built = build(input, cfg, &FallbackTokenizer);
    assert_eq!(is_valid_sequence(&built.messages), Ok(()));
    assert_eq!(
        built.estimated_tokens,
        estimate_messages_tokens(&built.messages)
    );
    built
}

fn budget_steps(built: &Built) -> Vec<TrimStep> {
    built
        .trimmed
        .iter()
        .filter(|s| {
            !matches!(
                s,
                TrimStep::TruncatedToolOutputs { .. }
                    | TrimStep::OmittedToolOutputs {
                        kept_user_turns: 3,
                        ..
                    }
            )
        })
        .cloned()
        .collect()
}

#[test]
/// What stays the same from question to question first (system prompt, L3, the
/// session so far), what was chosen for this question last, right before it.
fn levels_come_stable_first_and_chosen_for_the_question_last() {
    let l2 = vec![
        L2Entry {
            user: "how to brew green tea".into(),
            assistant: "80 degrees, two minutes".into(),
            ..L2Entry::default()
        },
        L2Entry {
            user: "tea kw1 kw2 kw3 kw4 kw5 kw6 kw7 kw8 kw9 kw10 kw11 kw12 kw13 kw14 kw15 kw16"
                .into(),
            assistant: "ok".into(),
            ..L2Entry::default()
        },
        L2Entry {
            user: "stock prices".into(),
            assistant: "unknown".into(),
            ..L2Entry::default()
        },
    ];
    let l1 = vec![
        Message::user("hello"),
        Message::assistant("hi"),
        Message::user("green tea temperature"),
    ];
    let input = BuildInput {
        system_prompt: "You are Evolve.",
        skills_block: Some("skill: brew"),
        todo_block: Some("  "),
        memory_block: Some("likes green tea"),
        summary: Some("user is a tea lover"),
        tool_chain_summary: Some("read_file worked"),
        l2: &l2,
        l2_keywords: &[],
        query: "green tea temperature",
        l1: &l1,
        budget: budget(HUGE),
        old_user_turns: None,
    };
    let built = run(&input);
    let got: Vec<(Role, &str)> = built
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(got[0], (Role::System, "You are Evolve."));
    assert_eq!(got[1].0, Role::User);
    assert!(got[1].1.starts_with(SUMMARY_HEADER));
    assert!(got[1].1.ends_with("user is a tea lover"), "{}", got[1].1);
    assert_eq!(got[2], (Role::Assistant, SUMMARY_ACK));
    assert_eq!(got[3], (Role::User, "hello"));
    assert_eq!(got[4], (Role::Assistant, "hi"));
    assert_eq!(
        got[5],
        (
            Role::User,
            "[history, in brief — earlier exchanges of this session]\nUser: tea kw1 kw2 kw3 kw4 kw5 kw6 kw7 kw8 kw9 kw10 kw11 kw12 kw13 kw14 kw15 kw16 → Assistant: ok"
        )
    );
    assert_eq!(got[6], (Role::Assistant, DIGEST_ACK));
    assert_eq!(got[7], (Role::User, "[history] how to brew green tea"));
    assert_eq!(got[8], (Role::Assistant, "80 degrees, two minutes"));
    assert_eq!(
        got[9],
        (
            Role::User,
            "[Context for the next message — selected for it, not written by the user]\n\n\
             skill: brew\n\nlikes green tea\n\n##### Recent tool-call chain\nread_file worked"
        )
    );
    assert_eq!(got[10], (Role::Assistant, CONTEXT_ACK));
    assert_eq!(got[11], (Role::User, "green tea temperature"));
    assert_eq!(got.len(), 12);
    let used: Vec<(usize, Relevance)> = built
        .l2_used
        .iter()
        .map(|p| (p.index, p.relevance))
        .collect();
    assert_eq!(used, vec![(0, Relevance::Full), (1, Relevance::Digest)]);
    assert!(built.summary_used);
    assert!(built.trimmed.is_empty());
    assert_eq!(built.input_budget, HUGE);

    // The same with the ring's keyword sets computed by the shell.
    let cache: Vec<crate::text::KeywordSet> = l2
        .iter()
        .map(|e| entry_keywords(e, &FallbackTokenizer))
        .collect();
    let cached = run(&BuildInput {
        l2_keywords: &cache,
        ..input
    });
    assert_eq!(cached, built);
}

#[test]
fn the_query_defaults_to_the_last_user_message() {
    let l2 = vec![
        L2Entry {
            user: "rust lifetimes".into(),
            assistant: "a".into(),
            ..L2Entry::default()
        },
        L2Entry {
            user: "weather".into(),
            assistant: "b".into(),
            ..L2Entry::default()
        },
    ];
    let l1 = vec![Message::user("explain rust lifetimes")];
    let built = run(&BuildInput {
        l2: &l2,
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    assert_eq!(built.l2_used.len(), 1);
    assert_eq!(built.l2_used[0].index, 0);
}

#[test]
fn trim_starts_only_above_eighty_percent_of_the_input_budget() {
    let l1 = tool_turns(6, &"x".repeat(2000));
    let input = |b| BuildInput {
        system_prompt: "sys",
        l1: &l1,
        budget: b,
        ..BuildInput::default()
    };
    let free = run(&input(budget(HUGE)));
    let e = free.estimated_tokens;
    // The smallest input budget whose 80% target is ≥ e.
    let mut b = e;
    while budget(b).trim_target(0.8) < e {
        b += 1;
    }
    assert_eq!(budget(b).trim_target(0.8), e);
    let at = run(&input(budget(b)));
    assert!(budget_steps(&at).is_empty(), "{:?}", at.trimmed);
    assert_eq!(at.estimated_tokens, e);
    // One token less of budget: the estimate now passes 80%, trimming starts and ends
    // at or below the new target.
    let below = run(&input(budget(b - 1)));
    assert!(!budget_steps(&below).is_empty());
    assert!(below.estimated_tokens <= below.trim_target);
    assert_eq!(below.trim_target, budget(b - 1).trim_target(0.8));
    // The window is not the input budget: the reservation is subtracted first.
    let w = Budget {
        context_window: b + 4096,
        reserved_output: 4096,
    };
    assert_eq!(w.input_budget(), b);
}

#[test]
fn always_on_placeholders_exactly_outside_the_last_three_user_turns() {
    let l1 = tool_turns(5, "output text");
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    let tools: Vec<&str> = built
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        tools,
        vec![
            "[tool result omitted: 11 chars]",
            "[tool result omitted: 11 chars]",
            "output text",
            "output text",
            "output text"
        ]
    );
    assert_eq!(
        built.trimmed,
        vec![TrimStep::OmittedToolOutputs {
            count: 2,
            kept_user_turns: 3
        }]
    );
}

#[test]
fn build_truncates_tool_outputs_above_128_kib() {
    let big = format!("{}\n", "日本語のテキスト".repeat(20)).repeat(2000); // ~960 KB
    let l1 = tool_turns(1, &big);
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    let out = &built.messages[2].content;
    assert!(out.len() <= 128 * 1024 + 80);
    assert!(out.contains("tool output truncated"));
    assert_eq!(
        built.trimmed,
        vec![TrimStep::TruncatedToolOutputs { count: 1 }]
    );
}

#[test]
fn step_1_drops_l2_pairs_oldest_first() {
    let entry = |i: usize| L2Entry {
        user: format!("tea question {i} {}", "padding ".repeat(50)),
        assistant: format!("tea answer {i} {}", "padding ".repeat(50)),
        ..L2Entry::default()
    };
    let l2: Vec<L2Entry> = (0..4).map(entry).collect();
    let l1 = vec![Message::user("tea padding")];
    let input = |b| BuildInput {
        l2: &l2,
        l1: &l1,
        query: "tea padding",
        budget: b,
        ..BuildInput::default()
    };
    let free = run(&input(budget(HUGE)));
    assert_eq!(free.l2_used.len(), 4);
    // Room for three pairs but not four.
    let per_pair = Message::user(format!("[history] {}", l2[0].user.trim())).estimate_tokens()
        + Message::assistant(l2[0].assistant.trim()).estimate_tokens();
    let need = free.estimated_tokens - per_pair;
    let mut b = need;
    while budget(b).trim_target(0.8) < need {
        b += 1;
    }
    let built = run(&input(budget(b)));
    assert_eq!(built.trimmed, vec![TrimStep::DroppedHistory { count: 1 }]);
    let kept: Vec<usize> = built.l2_used.iter().map(|p| p.index).collect();
    assert_eq!(kept, vec![1, 2, 3]);
}

#[test]
fn step_2_placeholders_all_but_the_last_user_turn() {
    // Three turns: all inside the always-on 3, so only the budget makes step 2 act.
    let l1 = tool_turns(3, &"y".repeat(4000));
    let free = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    assert!(free.trimmed.is_empty());
    // Room for one 1000-token output but not three.
    let b = (free.estimated_tokens - 1500) * 10 / 8;
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(b),
        ..BuildInput::default()
    });
    assert_eq!(
        built.trimmed,
        vec![TrimStep::OmittedToolOutputs {
            count: 2,
            kept_user_turns: 1
        }]
    );
    let tools: Vec<bool> = built
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| is_placeholder(&m.content))
        .collect();
    assert_eq!(tools, vec![true, true, false]);
}

#[test]
fn step_3_clears_reasoning_oldest_first() {
    let mut l1 = Vec::new();
    for t in 0..3 {
        l1.push(Message::user(format!("q{t}")));
        let mut a = Message::assistant(format!("a{t}"));
        a.reasoning = Some("r".repeat(4000));
        l1.push(a);
    }
    l1.push(Message::user("now"));
    let free = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    let b = (free.estimated_tokens - 1500) * 10 / 8; // must clear two of the three
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(b),
        ..BuildInput::default()
    });
    assert_eq!(built.trimmed, vec![TrimStep::ClearedReasoning { count: 2 }]);
    let cleared: Vec<bool> = built
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.reasoning.is_none())
        .collect();
    assert_eq!(cleared, vec![true, true, false]);
}

#[test]
fn step_4_cuts_long_texts_to_4096_chars() {
    let long = "长".repeat(6000); // 4000 tokens
    let l1 = vec![
        Message::user("q"),
        Message::assistant(long.clone()),
        Message::user("next"),
    ];
    let b = 4000 * 10 / 8;
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(b),
        ..BuildInput::default()
    });
    assert_eq!(
        built.trimmed,
        vec![TrimStep::CutLongTexts {
            count: 1,
            max_chars: 4096
        }]
    );
    let a = &built.messages[1].content;
    assert!(a.starts_with(&"长".repeat(4096)));
    assert!(a.ends_with("[… 1904 chars cut]"));
    assert!(built.estimated_tokens <= built.trim_target);
    // Exactly 4096 characters is not "long".
    let at = vec![Message::user("q"), Message::assistant("长".repeat(4096))];
    let built = run(&BuildInput {
        l1: &at,
        budget: budget(2000),
        ..BuildInput::default()
    });
    assert!(!built
        .trimmed
        .iter()
        .any(|s| matches!(s, TrimStep::CutLongTexts { .. })));
}

fn plain_turns(n: usize, chars: usize) -> Vec<Message> {
    let mut m = Vec::new();
    for t in 0..n {
        m.push(Message::user(format!("{t:04}{}", "u".repeat(chars - 4))));
        m.push(Message::assistant(format!(
            "{t:04}{}",
            "a".repeat(chars - 4)
        )));
    }
    m
}

#[test]
fn step_5_drops_old_turns_whole_keeping_the_last_five_user_turns() {
    let l1 = plain_turns(8, 2000); // 504 tokens a message, 1008 a turn
                                   // (input budget, turns dropped by step 5, later steps expected)
    let cases: &[(usize, usize, bool)] = &[
        (8064 * 10 / 8 + 2, 0, false), // everything fits
        (7056 * 10 / 8, 1, false),
        (6048 * 10 / 8, 2, false),
        (5040 * 10 / 8, 3, false), // exactly five turns left
        (5039 * 10 / 8, 3, true),
        (4000 * 10 / 8, 3, true), // five turns do not fit: the last resorts go on
    ];
    for &(b, dropped, more) in cases {
        let built = run(&BuildInput {
            l1: &l1,
            budget: budget(b),
            ..BuildInput::default()
        });
        let steps = budget_steps(&built);
        if dropped == 0 {
            assert!(steps.is_empty(), "{b}: {steps:?}");
            continue;
        }
        assert_eq!(
            steps[0],
            TrimStep::DroppedTurns {
                turns: dropped,
                messages: 2 * dropped,
                kept_user_turns: 5
            },
            "{b}"
        );
        assert_eq!(steps.len() > 1, more, "{b}: {steps:?}");
        assert!(built.estimated_tokens <= built.trim_target);
        if !more {
            assert!(built.messages[0]
                .content
                .starts_with(&format!("{dropped:04}")));
            let users = built
                .messages
                .iter()
                .filter(|m| m.role == Role::User)
                .count();
            assert_eq!(users, 8 - dropped);
        }
    }
}

#[test]
fn dropping_a_turn_takes_its_tool_results_with_it() {
    let mut l1 = tool_turns(8, &"z".repeat(3000));
    for m in l1.iter_mut().filter(|m| m.role == Role::User) {
        m.content.push_str(&"u".repeat(3000));
    }
    l1.push(Message::user("last"));
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget(2000),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target);
    assert!(built
        .trimmed
        .iter()
        .any(|s| matches!(s, TrimStep::DroppedTurns { .. })));
    let calls: usize = built.messages.iter().map(|m| m.tool_calls.len()).sum();
    let results = built
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .count();
    assert_eq!(calls, results);
    assert!(calls < 8);
}

#[test]
fn step_8_cuts_the_final_message_to_its_first_third() {
    let l1 = vec![Message::user("q".repeat(4000))]; // 1004 tokens, under 4096 chars
    let built = run(&BuildInput {
        system_prompt: "sys",
        l1: &l1,
        budget: budget(600 * 10 / 8),
        ..BuildInput::default()
    });
    assert_eq!(
        built.trimmed,
        vec![TrimStep::CutFinalMessage {
            from_chars: 4000,
            to_chars: 1333
        }]
    );
    assert!(built.messages[1].content.starts_with(&"q".repeat(1333)));
    assert!(built.messages[1].content.ends_with("[… 2667 chars cut]"));
}

#[test]
fn step_6_drops_the_summary() {
    let summary = "s".repeat(8000);
    let l1 = vec![Message::user("hello")];
    let built = run(&BuildInput {
        summary: Some(&summary),
        l1: &l1,
        budget: budget(1000),
        ..BuildInput::default()
    });
    assert_eq!(built.trimmed, vec![TrimStep::DroppedSummary]);
    assert!(!built.summary_used);
    assert_eq!(built.messages, vec![Message::user("hello")]);
}

#[test]
fn older_turns_go_before_the_current_message_is_cut() {
    // Five kept turns of 1 500 tokens do not fit next to an 8 000-character question;
    // the question alone does. tea-agent would cut the question to a third first.
    let mut l1 = plain_turns(6, 3000);
    l1.push(Message::user(format!("{}?", "why ".repeat(2000))));
    let built = run(&BuildInput {
        system_prompt: "sys",
        l1: &l1,
        budget: budget(4000),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target, "{built:?}");
    assert_eq!(
        built.messages.last(),
        l1.last(),
        "the question goes out whole"
    );
    assert!(!built
        .trimmed
        .iter()
        .any(|s| matches!(s, TrimStep::CutFinalMessage { .. })));
    assert!(built.trimmed.iter().any(|s| matches!(
        s,
        TrimStep::DroppedTurns {
            kept_user_turns: 1,
            ..
        }
    )));
}

#[test]
fn last_resorts_keep_only_the_current_turn_then_cut_system_and_user() {
    let mut l1 = plain_turns(6, 3000);
    l1.push(Message::user("now please"));
    l1.push(Message::assistant_calls("", vec![call("x")]));
    l1.push(Message::tool_result("x", "read_file", "r".repeat(3000)));
    let system = "S".repeat(40_000);
    let built = run(&BuildInput {
        system_prompt: &system,
        l1: &l1,
        budget: budget(MIN_INPUT_BUDGET),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target, "{built:?}");
    let roles: Vec<Role> = built.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, vec![Role::System, Role::User]);
    assert_eq!(built.messages[1].content, "now please");
    let names: Vec<&str> = budget_steps(&built)
        .iter()
        .map(|s| match s {
            TrimStep::DroppedTurns {
                kept_user_turns: 5, ..
            } => "turns5",
            TrimStep::DroppedTurns {
                kept_user_turns: 1, ..
            } => "turns1",
            TrimStep::DroppedCurrentRounds { .. } => "rounds",
            TrimStep::CutSystemPrompt { .. } => "system",
            TrimStep::CutLongTexts { .. } => "long",
            TrimStep::CutFinalMessage { .. } => "final",
            TrimStep::OmittedToolOutputs { .. } => "tools",
            _ => "other",
        })
        .collect();
    assert_eq!(names, vec!["turns5", "turns1", "final", "rounds", "system"]);
}

#[test]
fn a_huge_user_message_alone_is_cut_to_fit() {
    let l1 = vec![Message {
        images: vec!["data:image/png;base64,AAAA".into(); 5],
        ..Message::user("中".repeat(100_000))
    }];
    let built = run(&BuildInput {
        system_prompt: "be brief",
        l1: &l1,
        budget: budget(MIN_INPUT_BUDGET),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target);
    assert_eq!(built.messages[0].content, "be brief");
    assert!(built.messages[1].images.is_empty());
    assert!(matches!(
        built.trimmed.last(),
        Some(TrimStep::CutUserMessage { images: 5, .. })
    ));
}

#[test]
fn session_system_messages_and_broken_structure_are_repaired() {
    let l1 = vec![
        Message::system("session note"),
        Message::assistant("orphan reply"),
        Message::user("q"),
        Message::assistant_calls("", vec![call("1")]),
        Message::user("interrupted, new question"),
    ];
    let built = run(&BuildInput {
        system_prompt: "sys",
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    assert_eq!(built.messages[0].content, "sys\n\nsession note");
    assert_eq!(built.repair.dropped_leading, 1);
    assert_eq!(built.repair.added_results, 1);
    assert_eq!(built.messages[3].content, INTERRUPTED_RESULT);
}

#[test]
fn an_empty_input_builds_an_empty_history() {
    let built = run(&BuildInput::default());
    assert!(built.messages.is_empty());
    assert_eq!(built.estimated_tokens, 0);
}

#[test]
fn config_defaults_are_the_seed_numbers_and_unknown_keys_are_rejected() {
    let c = HistoryConfig::default();
    assert_eq!((c.l2_capacity, c.l2_overflow), (50, 30));
    assert_eq!((c.relevance_full, c.relevance_digest), (0.15, 0.05));
    assert_eq!(c.max_tool_output_bytes, 131_072);
    assert_eq!(c.keep_tool_output_turns, 3);
    assert_eq!(c.trim_threshold, 0.8);
    assert_eq!(c.max_text_chars, 4096);
    assert_eq!(c.keep_user_turns, 5);
    assert_eq!(c.final_message_keep_divisor, 3);
    let partial: HistoryConfig = serde_json::from_str(r#"{"keep_user_turns": 7}"#).unwrap();
    assert_eq!(partial.keep_user_turns, 7);
    assert_eq!(partial.l2_capacity, 50);
    assert!(serde_json::from_str::<HistoryConfig>(r#"{"max_tokens": 1}"#).is_err());
}

#[test]
fn trim_steps_serialise_with_a_tag() {
    let s = serde_json::to_string(&TrimStep::DroppedHistory { count: 2 }).unwrap();
    assert_eq!(s, r#"{"step":"dropped_history","count":2}"#);
    let _: String = serde_json::to_string(&TrimStep::DroppedSummary).unwrap();
}

/// The reviewer's case: 20 short turns, then a pasted log of ~19.8k characters under a
/// 16k input budget. Dropping old turns (step 5) makes room, so the paste goes out
/// whole: step 4 never cuts the current user message.
#[test]
fn step_4_spares_the_current_user_message_old_turns_go_first() {
    let mut l1 = Vec::new();
    for t in 0..20 {
        l1.push(Message::user(format!("question {t} {}", "q ".repeat(1000))));
        l1.push(Message::assistant(format!(
            "answer {t} {}",
            "a ".repeat(1000)
        )));
    }
    let paste = "log line\n".repeat(2200);
    l1.push(Message::user(paste.clone()));
    let built = run(&BuildInput {
        system_prompt: "You are helpful.",
        l1: &l1,
        budget: budget(16_000),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target);
    assert_eq!(built.messages.last().map(|m| &m.content), Some(&paste));
    let steps = budget_steps(&built);
    assert!(
        matches!(
            steps.as_slice(),
            [TrimStep::DroppedTurns {
                kept_user_turns: 5,
                ..
            }]
        ),
        "{steps:?}"
    );
}

/// Step 4 still cuts a long text of an old turn, but not the current turn's assistant
/// calls and tool results: old turns are dropped (step 5) before those are touched.
#[test]
fn step_4_spares_the_current_turns_calls_and_results() {
    let mut l1 = plain_turns(6, 2000); // 1008 tokens a turn
    l1[11].content = "长".repeat(6000); // turn 5's reply: 4000 tokens, cut by step 4
    l1.push(Message::user("read the log"));
    l1.push(Message::assistant_calls(
        "x".repeat(6000),
        vec![call("now")],
    ));
    l1.push(Message::tool_result(
        "now",
        "read_file",
        "line\n".repeat(2400), // 12 000 chars, under 128 KiB
    ));
    let current = l1[12..].to_vec();
    let free = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    assert!(free.trimmed.is_empty());
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget((free.estimated_tokens - 3000) * 10 / 8),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target);
    assert_eq!(
        budget_steps(&built),
        vec![
            TrimStep::CutLongTexts {
                count: 1,
                max_chars: 4096
            },
            TrimStep::DroppedTurns {
                turns: 2,
                messages: 4,
                kept_user_turns: 5
            }
        ]
    );
    assert_eq!(built.messages[built.messages.len() - 3..], current[..]);
}

/// Step 3 clears the reasoning of old turns only: the current turn's tool rounds keep
/// theirs (providers with thinking + tool calls expect it back within the turn), and
/// old turns are dropped before it goes.
#[test]
fn step_3_spares_the_current_turns_reasoning() {
    let mut a0 = Message::assistant("a0");
    a0.reasoning = Some("r".repeat(4000));
    let mut now = Message::assistant_calls("", vec![call("x")]);
    now.reasoning = Some("r".repeat(4000));
    let l1 = vec![
        Message::user("q0"),
        a0,
        Message::user("q1"),
        Message::assistant("b".repeat(4000)),
        Message::user("now"),
        now,
        Message::tool_result("x", "read_file", "ok"),
    ];
    let free = run(&BuildInput {
        l1: &l1,
        budget: budget(HUGE),
        ..BuildInput::default()
    });
    let built = run(&BuildInput {
        l1: &l1,
        budget: budget((free.estimated_tokens - 1500) * 10 / 8),
        ..BuildInput::default()
    });
    assert!(built.estimated_tokens <= built.trim_target);
    assert_eq!(
        budget_steps(&built),
        vec![
            TrimStep::ClearedReasoning { count: 1 },
            TrimStep::DroppedTurns {
                turns: 2,
                messages: 4,
                kept_user_turns: 1
            }
        ]
    );
    assert_eq!(built.messages, l1[4..]);
}

/// Step 2 keeps the current turn's tool outputs even when configured to keep none
/// (`trim_keep_tool_output_turns: 0` acts as 1): old turns go first.
#[test]
fn step_2_never_replaces_the_current_turns_outputs() {
    let cfg = HistoryConfig {
        trim_keep_tool_output_turns: 0,
        keep_user_turns: 1,
        ..HistoryConfig::default()
    };
    let mut l1 = plain_turns(3, 2000);
    l1.push(Message::user("now"));
    l1.push(Message::assistant_calls("", vec![call("x")]));
    l1.push(Message::tool_result("x", "read_file", "y".repeat(4000)));
    let free = run_cfg(
        &BuildInput {
            l1: &l1,
            budget: budget(HUGE),
            ..BuildInput::default()
        },
        &cfg,
    );
    let built = run_cfg(
        &BuildInput {
            l1: &l1,
            budget: budget((free.estimated_tokens - 2000) * 10 / 8),
            ..BuildInput::default()
        },
        &cfg,
    );
    assert!(built.estimated_tokens <= built.trim_target);
    assert_eq!(
        budget_steps(&built),
        vec![TrimStep::DroppedTurns {
            turns: 2,
            messages: 4,
            kept_user_turns: 1
        }]
    );
    assert_eq!(built.messages[built.messages.len() - 3..], l1[6..]);
}

/// A tool output dressed up as a placeholder is still cut to 128 KiB.
#[test]
fn a_spoofed_placeholder_is_still_truncated() {
    let body = "x".repeat(1 << 20);
    let digits = "9".repeat(1 << 20);
    for spoof in [
        format!("[tool result omitted: {body} chars]"),
        format!("[tool result omitted: {digits} chars]"),
    ] {
        let l1 = vec![
            Message::user("run it"),
            Message::assistant_calls("", vec![call("1")]),
            Message::tool_result("1", "read_file", spoof),
        ];
        let built = run(&BuildInput {
            l1: &l1,
            budget: budget(HUGE),
            ..BuildInput::default()
        });
        assert_eq!(
            built.trimmed,
            vec![TrimStep::TruncatedToolOutputs { count: 1 }]
        );
        assert!(built.messages[2].content.len() <= 128 * 1024 + 100);
    }
}
