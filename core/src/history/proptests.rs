//! Property tests of the builder and the repair: for arbitrary sessions (random roles,
//! tool-call structures with orphans and duplicates, long texts, CJK, images) and
//! budgets, the built history is a valid sequence and, from the minimum trim target
//! on (8 tokens), never above the trim target (hence never above the input budget).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::text::FallbackTokenizer;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,40}",
        3 => "[\u{4e00}-\u{4e80}，。 ]{0,30}",
        1 => Just(String::new()),
        1 => Just(String::from("  \n ")),
        1 => (0usize..12_000).prop_map(|n| "word ".repeat(n / 5)),
        1 => (0usize..6_000).prop_map(|n| "中文字".repeat(n / 3)),
        1 => (0usize..3_000).prop_map(|n| "é😀\n".repeat(n)),
    ]
}

fn call_id() -> impl Strategy<Value = String> {
    (0u8..5).prop_map(|i| format!("c{i}"))
}

fn tool_call() -> impl Strategy<Value = ToolCall> {
    (call_id(), text()).prop_map(|(id, arguments)| ToolCall {
        id,
        name: String::from("read_file"),
        arguments,
    })
}

/// A message of any shape: orphans, duplicate ids, empty assistants, late systems.
fn any_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        4 => (text(), 0usize..3).prop_map(|(t, images)| Message {
            images: (0..images).map(|i| format!("img{i}")).collect(),
            ..Message::user(t)
        }),
        3 => (text(), proptest::option::of(text())).prop_map(|(t, r)| Message {
            reasoning: r,
            ..Message::assistant(t)
        }),
        3 => (text(), proptest::collection::vec(tool_call(), 0..4))
            .prop_map(|(t, calls)| Message::assistant_calls(t, calls)),
        3 => (call_id(), text()).prop_map(|(id, t)| Message::tool_result(id, "read_file", t)),
        1 => text().prop_map(Message::system),
    ]
}

/// A well-formed turn: user, tool rounds, reply.
fn turn() -> impl Strategy<Value = Vec<Message>> {
    (
        text(),
        proptest::collection::vec((text(), proptest::collection::vec(text(), 1..3)), 0..3),
        text(),
    )
        .prop_map(|(q, rounds, reply)| {
            let mut m = Vec::from([Message::user(q)]);
            for (r, (thought, outputs)) in rounds.into_iter().enumerate() {
                let calls: Vec<ToolCall> = (0..outputs.len())
                    .map(|i| ToolCall {
                        id: format!("r{r}c{i}"),
                        name: String::from("shell"),
                        arguments: String::from("{}"),
                    })
                    .collect();
                m.push(Message::assistant_calls(thought, calls.clone()));
                for (c, out) in calls.iter().zip(outputs) {
                    m.push(Message::tool_result(c.id.clone(), "shell", out));
                }
            }
            m.push(Message::assistant(reply));
            m
        })
}

fn session() -> impl Strategy<Value = Vec<Message>> {
    prop_oneof![
        proptest::collection::vec(any_message(), 0..30),
        proptest::collection::vec(turn(), 0..10).prop_map(|t| t.concat()),
    ]
}

fn l2_entry() -> impl Strategy<Value = L2Entry> {
    (
        text(),
        text(),
        text(),
        proptest::collection::vec("[a-c]{1,2}\\.rs", 0..2),
    )
        .prop_map(|(user, assistant, thinking, files)| L2Entry {
            user,
            assistant,
            thinking,
            files,
            turn: 0,
        })
}

#[derive(Debug, Clone)]
struct Case {
    system: String,
    memory: Option<String>,
    summary: Option<String>,
    l2: Vec<L2Entry>,
    l1: Vec<Message>,
    budget: Budget,
}

fn case() -> impl Strategy<Value = Case> {
    (
        text(),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::collection::vec(l2_entry(), 0..12),
        session(),
        prop_oneof![(0usize..40_000, 0usize..8_000), (0usize..600, 0usize..100)],
    )
        .prop_map(|(system, memory, summary, l2, l1, (w, r))| Case {
            system,
            memory,
            summary,
            l2,
            l1,
            budget: Budget {
                context_window: w,
                reserved_output: r,
            },
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn built_history_is_valid_and_within_budget(c in case()) {
        let input = BuildInput {
            system_prompt: &c.system,
            memory_block: c.memory.as_deref(),
            summary: c.summary.as_deref(),
            l2: &c.l2,
            l1: &c.l1,
            budget: c.budget,
            ..BuildInput::default()
        };
        let built = build(&input, &HistoryConfig::default(), &FallbackTokenizer);
        prop_assert_eq!(is_valid_sequence(&built.messages), Ok(()));
        prop_assert_eq!(built.estimated_tokens, estimate_messages_tokens(&built.messages));
        prop_assert!(built.trim_target <= built.input_budget);
        if built.trim_target >= MIN_TRIM_TARGET {
            prop_assert!(
                built.estimated_tokens <= built.trim_target,
                "estimate {} > target {} (budget {}), steps {:?}",
                built.estimated_tokens, built.trim_target, built.input_budget, built.trimmed
            );
        }
        prop_assert!(built.repair.is_clean() || is_valid_sequence(&c.l1[c.l1.iter().take_while(|m| m.role == Role::System).count()..]).is_err());
    }

    #[test]
    fn tight_budgets_still_fit_down_to_ten_tokens(l1 in session(), system in text(), summary in text(), extra in 0usize..320) {
        // Below MIN_INPUT_BUDGET nothing useful is left, but the bound still holds.
        let budget = Budget { context_window: 10 + extra + 100, reserved_output: 100 };
        let input = BuildInput {
            system_prompt: &system,
            summary: Some(&summary),
            l1: &l1,
            budget,
            ..BuildInput::default()
        };
        let built = build(&input, &HistoryConfig::default(), &FallbackTokenizer);
        prop_assert_eq!(is_valid_sequence(&built.messages), Ok(()));
        prop_assert!(built.estimated_tokens <= built.trim_target);
    }

    /// The current turn (the last user message and what follows it) is sent as it
    /// would be without a budget whenever it fits next to the system message: trim
    /// steps 2–4 never touch it, and old turns go before it. With `keep_user_turns: 1`
    /// so that step 5 alone can make the room (with tea-agent's 5, the last resort
    /// "cut the final message" comes before dropping the other 4 turns).
    #[test]
    fn the_current_turn_is_untouched_when_it_fits(c in case()) {
        let cfg = HistoryConfig { keep_user_turns: 1, ..HistoryConfig::default() };
        let input = BuildInput {
            system_prompt: &c.system,
            memory_block: c.memory.as_deref(),
            l2: &c.l2,
            l1: &c.l1,
            budget: c.budget,
            ..BuildInput::default()
        };
        let free = build(
            &BuildInput { budget: Budget { context_window: usize::MAX / 4, reserved_output: 0 }, ..input },
            &cfg,
            &FallbackTokenizer,
        );
        let built = build(&input, &cfg, &FallbackTokenizer);
        if let Some(u) = free.messages.iter().rposition(|m| m.role == Role::User) {
            let current = &free.messages[u..];
            let system = free.messages.iter().take_while(|m| m.role == Role::System);
            let need = estimate_messages_tokens(current)
                + system.map(Message::estimate_tokens).sum::<usize>();
            if need <= built.trim_target {
                prop_assert!(built.messages.ends_with(current), "steps {:?}", built.trimmed);
            }
        }
    }

    #[test]
    fn repair_makes_any_sequence_valid_and_is_idempotent(mut m in proptest::collection::vec(any_message(), 0..40)) {
        let was_valid = is_valid_sequence(&m).is_ok();
        let before = m.clone();
        let report = repair_sequence(&mut m);
        prop_assert_eq!(is_valid_sequence(&m), Ok(()));
        prop_assert_eq!(report.is_clean(), was_valid);
        if was_valid {
            prop_assert_eq!(&m, &before);
        }
        let once = m.clone();
        prop_assert!(repair_sequence(&mut m).is_clean());
        prop_assert_eq!(m, once);
    }

    #[test]
    fn truncation_stays_within_the_cap_plus_marker(
        s in prop_oneof!["[a-z\n]{0,400}", "[\u{4e00}-\u{4e10}\n😀é]{0,300}"],
        cap in 0usize..600,
    ) {
        let out = truncate_tool_output(&s, cap);
        if cap == 0 || s.len() <= cap {
            prop_assert_eq!(out.as_ref(), s.as_str());
        } else {
            let marker = truncation_marker(s.len());
            prop_assert!(out.len() <= cap + marker.len() + 2, "{} > {}", out.len(), cap);
            let (head, rest) = out.split_once("[… tool output truncated: ").unwrap();
            prop_assert!(s.starts_with(head.trim_end_matches('\n')) );
            let tail = rest.split_once("omitted …]\n").unwrap().1;
            prop_assert!(s.ends_with(tail));
        }
    }
}
