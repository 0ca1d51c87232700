//! The turn's rules as tables: each case drives a turn with scripted events and checks
//! what the shell is asked to do and what the model is told.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::history::{Message, Role, ToolCall};
use crate::permission::{ClassSource, Escalation, EscalationContext, Level, Policy, ToolClass};

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: args.to_string(),
    }
}

fn asking(calls: Vec<ToolCall>) -> Reply {
    let mut m = Message::assistant("");
    m.tool_calls = calls;
    Reply {
        message: m,
        prechecks: Vec::new(),
    }
}

fn answer(text: &str) -> Reply {
    Reply {
        message: Message::assistant(text),
        prechecks: Vec::new(),
    }
}

/// The check a shell would make for `tool` at `level` (no escalation).
fn check(turn: &Turn, tool: &str, args: &str, level: Level, is_shell: bool) -> CallCheck {
    let ctx = EscalationContext {
        workspace_root: "/w",
        path_keys: &[],
        is_shell,
        extra_roots: &[],
    };
    let class = ToolClass {
        level,
        source: ClassSource::BuiltIn,
    };
    crate::permission::check_call(tool, class, args, &ctx, turn.grants(), turn.policy())
}

fn turn(policy: Policy, max_steps: usize) -> Turn {
    Turn::new(
        "s1",
        "question",
        policy,
        Grants::new(),
        Limits { max_steps },
    )
}

/// Drains the actions until the turn waits; returns them.
fn drain(t: &mut Turn) -> Vec<Action> {
    let mut out = Vec::new();
    while let Some(a) = t.poll() {
        let done = a == Action::Done;
        out.push(a);
        if done {
            break;
        }
    }
    out
}

fn model_step(a: &[Action]) -> Option<ModelStep> {
    a.iter().find_map(|a| match a {
        Action::CallModel(s) => Some(s.clone()),
        _ => None,
    })
}

fn last_tool_text(t: &Turn) -> String {
    t.messages()
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

#[test]
fn a_plain_answer_is_one_model_step_and_done() {
    let mut t = turn(Policy::Interactive, 8);
    let step = model_step(&drain(&mut t)).unwrap();
    assert_eq!(
        step,
        ModelStep {
            step: 1,
            offer_tools: true,
            force_tool: None
        }
    );
    t.handle_reply(answer("hello"));
    assert_eq!(drain(&mut t), vec![Action::Done]);
    assert_eq!(t.messages().last().unwrap().content, "hello");
    assert_eq!(t.steps(), 1);
}

#[test]
fn the_step_budget_and_the_last_step_without_tools() {
    // (max_steps, step → offered tools?)
    for max in 1..=4 {
        let mut t = turn(Policy::Interactive, max);
        for step in 1..=max {
            let s = model_step(&drain(&mut t)).unwrap();
            assert_eq!(s.step, step);
            assert_eq!(s.offer_tools, step < max, "max {max} step {step}");
            let args = alloc::format!("{{\"n\":{step}}}");
            t.handle_reply(asking(vec![call("c", "get_time", &args)]));
            if step < max {
                let a = drain(&mut t);
                assert!(matches!(a[0], Action::CheckCall(_)));
                let c = check(&t, "get_time", &args, Level::L0, false);
                t.handle_check(c, 5);
                let a = drain(&mut t);
                assert!(a.iter().any(|a| matches!(a, Action::RunTool { .. })));
                t.handle_output("12:00".into(), false);
            }
        }
        // The last step's tool calls are not run: the turn ends with a note.
        assert_eq!(drain(&mut t), vec![Action::Done]);
        assert!(t
            .messages()
            .last()
            .unwrap()
            .content
            .contains("without a final answer"));
    }
}

#[test]
fn the_forced_tool_is_for_the_first_step_only() {
    let mut t = turn(Policy::Interactive, 3).force_tool(Some("read_file"));
    let s = model_step(&drain(&mut t)).unwrap();
    assert_eq!(s.force_tool.as_deref(), Some("read_file"));
    t.handle_reply(asking(vec![call("a", "read_file", "{}")]));
    drain(&mut t);
    let c = check(&t, "read_file", "{}", Level::L0, false);
    t.handle_check(c, 1);
    drain(&mut t);
    t.handle_output("x".into(), false);
    let s = model_step(&drain(&mut t)).unwrap();
    assert_eq!(s.force_tool, None);
    // With one step only, nothing is forced (that step offers no tools).
    let mut t = turn(Policy::Interactive, 1).force_tool(Some("read_file"));
    assert_eq!(model_step(&drain(&mut t)).unwrap().force_tool, None);
}

#[test]
fn prechecked_calls_are_answered_without_a_check() {
    // (precheck, what the model is told, the record's answer)
    let cases = [
        (
            Precheck::Cut("1 KiB".into()),
            "max_answer_bytes",
            "arguments over max_answer_bytes",
        ),
        (
            Precheck::Unknown("there is no tool named \"x\"".into()),
            "error: there is no tool",
            "no such tool",
        ),
        (
            Precheck::Unreadable("expected an object".into()),
            "one JSON object",
            "unreadable arguments",
        ),
    ];
    for (pre, told, why) in cases {
        let mut t = turn(Policy::Interactive, 4);
        drain(&mut t);
        let mut r = asking(vec![call("a", "x", "{")]);
        r.prechecks = vec![pre];
        t.handle_reply(r);
        let a = drain(&mut t);
        assert!(!a.iter().any(|a| matches!(a, Action::CheckCall(_))));
        let settled = a
            .iter()
            .find_map(|a| match a {
                Action::CallSettled(r) => Some(r.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(settled.answer.as_deref(), Some(why));
        assert!(!settled.ran);
        assert!(last_tool_text(&t).contains(told), "{why}");
        // The next model step follows.
        assert!(model_step(&a).is_some());
    }
}

#[test]
fn a_repeated_call_is_not_run_and_the_third_ends_the_loop() {
    let mut t = turn(Policy::Interactive, 10);
    let args = r#"{"path":"a"}"#;
    for round in 1..=3 {
        drain(&mut t);
        t.handle_reply(asking(vec![call(&round.to_string(), "read_file", args)]));
        let a = drain(&mut t);
        if round == 1 {
            assert!(matches!(a[0], Action::CheckCall(_)));
            let c = check(&t, "read_file", args, Level::L0, false);
            t.handle_check(c, 1);
            drain(&mut t);
            t.handle_output("content".into(), false);
        } else {
            assert!(!a.iter().any(|a| matches!(a, Action::CheckCall(_))));
            assert!(last_tool_text(&t).contains("already called read_file"));
            let s = model_step(&a).unwrap();
            // The third repeat leaves one step without tools.
            assert_eq!(s.offer_tools, round < 3, "round {round}");
        }
    }
}

#[test]
fn decisions_become_runs_questions_or_refusals() {
    // (policy, level, shell?, what happens)
    #[derive(Debug, PartialEq)]
    enum Then {
        Runs,
        Asks,
        Refused(&'static str),
    }
    let headless = Policy::Headless {
        max_auto: Level::L2,
    };
    let cases = [
        (Policy::Interactive, Level::L0, Then::Runs),
        (Policy::Interactive, Level::L2, Then::Runs),
        (Policy::Interactive, Level::L3, Then::Asks),
        (Policy::Interactive, Level::L4, Then::Asks),
        (Policy::Interactive, Level::L5, Then::Refused("never runs")),
        (headless, Level::L2, Then::Runs),
        (
            headless,
            Level::L3,
            Then::Refused("needs a person's approval"),
        ),
        (headless, Level::L5, Then::Refused("never runs")),
    ];
    for (policy, level, then) in cases {
        let mut t = turn(policy, 4);
        drain(&mut t);
        t.handle_reply(asking(vec![call("a", "tool", "{}")]));
        drain(&mut t);
        let c = check(&t, "tool", "{}", level, false);
        t.handle_check(c, 7);
        let a = drain(&mut t);
        let audited = a.iter().any(|a| matches!(a, Action::Audit(_)));
        match then {
            Then::Runs => {
                assert!(audited);
                assert!(a
                    .iter()
                    .any(|a| matches!(a, Action::RunTool { level: l, .. } if *l == level)));
            }
            Then::Asks => {
                // Audited once the person answers.
                assert!(!audited);
                assert!(matches!(a.last(), Some(Action::AskPerson(p)) if p.level == level));
                assert_eq!(t.pending().map(|p| p.level), Some(level));
            }
            Then::Refused(text) => {
                assert!(audited);
                assert!(last_tool_text(&t).contains(text), "{level} {text}");
                assert_eq!(t.needs_person(), text.contains("approval"));
            }
        }
    }
}

/// A turn waiting for a person about an L`level` call of `tool`.
fn waiting(level: Level, tool: &str, args: &str) -> Turn {
    let mut t = turn(Policy::Interactive, 4);
    drain(&mut t);
    t.handle_reply(asking(vec![
        call("a", tool, args),
        call("b", "get_time", "{}"),
    ]));
    drain(&mut t);
    let c = check(&t, tool, args, level, tool == "shell");
    t.handle_check(c, 7);
    drain(&mut t);
    t
}

#[test]
fn a_persons_answers_run_refuse_ask_again_or_grant() {
    // (level, replies, runs?, grants after)
    let cases: [(Level, &[&str], bool, usize); 7] = [
        (Level::L3, &["yes"], true, 0),
        (Level::L3, &["no"], false, 0),
        (Level::L3, &["hmm?", "yes"], true, 0),
        (Level::L3, &["always"], true, 1),
        (Level::L4, &["yes", "yes"], true, 0),
        (Level::L4, &["yes", "no"], false, 0),
        // "always" is no answer for an L4 call: asked again, then a no.
        (Level::L4, &["always", "no"], false, 0),
    ];
    for (level, replies, runs, grants) in cases {
        let mut t = waiting(level, "write_file", r#"{"path":"a"}"#);
        let mut actions = Vec::new();
        for (i, r) in replies.iter().enumerate() {
            t.handle_answer(r);
            actions = drain(&mut t);
            if i + 1 < replies.len() {
                assert!(
                    matches!(actions.last(), Some(Action::AskPerson(_))),
                    "{level} {replies:?}"
                );
            }
        }
        let ran = actions.iter().any(|a| matches!(a, Action::RunTool { .. }));
        assert_eq!(ran, runs, "{level} {replies:?}");
        assert_eq!(t.grants().len(), grants, "{level} {replies:?}");
        assert_eq!(
            actions.iter().any(|a| matches!(a, Action::SaveGrant(_))),
            grants > 0
        );
        let audit = actions.iter().find_map(|a| match a {
            Action::Audit(e) => Some(e.clone()),
            _ => None,
        });
        assert!(audit.unwrap().answer.is_some(), "the answer is audited");
        if !runs {
            assert!(last_tool_text(&t).contains("said no"));
            // The next queued call goes on to its check.
            assert!(actions
                .iter()
                .any(|a| matches!(a, Action::CheckCall(c) if c.name == "get_time")));
        }
    }
}

#[test]
fn always_for_a_shell_call_covers_that_command_only() {
    let mut t = waiting(Level::L3, "shell", r#"{"command":"tar -cf b.tar notes"}"#);
    t.handle_answer("always");
    drain(&mut t);
    let g: Vec<String> = t.grants().iter().map(|g| g.label()).collect();
    assert_eq!(g, vec!["shell: tar -cf b.tar notes".to_string()]);
    let same = check(
        &t,
        "shell",
        r#"{"command":"tar -cf b.tar notes"}"#,
        Level::L3,
        true,
    );
    assert_eq!(same.decision, Decision::Run);
    let other = check(
        &t,
        "shell",
        r#"{"command":"tar -xf b.tar"}"#,
        Level::L3,
        true,
    );
    assert_eq!(other.decision, Decision::AskOnce);
    let higher = check(
        &t,
        "shell",
        r#"{"command":"tar -cf b.tar notes"}"#,
        Level::L4,
        true,
    );
    assert_eq!(higher.decision, Decision::AskTwice);
}

#[test]
fn a_parked_turn_survives_serialisation_and_asks_again() {
    let t = waiting(Level::L3, "write_file", r#"{"path":"a"}"#);
    let json = serde_json::to_string(&t).unwrap();
    let mut back: Turn = serde_json::from_str(&json).unwrap();
    back.resume();
    let a = drain(&mut back);
    assert!(matches!(a.as_slice(), [Action::AskPerson(p)] if p.tool == "write_file"));
    back.handle_answer("yes");
    let a = drain(&mut back);
    assert!(a
        .iter()
        .any(|a| matches!(a, Action::RunTool { call, .. } if call.name == "write_file")));
    back.handle_output("written".into(), false);
    let a = drain(&mut back);
    // The queued call behind it is checked next, as before the park.
    assert!(matches!(a.last(), Some(Action::CheckCall(c)) if c.name == "get_time"));
}

#[test]
fn moving_on_refuses_the_waiting_call_and_ends_the_turn_without_the_model() {
    let mut t = waiting(Level::L3, "write_file", r#"{"path":"a"}"#);
    t.handle_moved_on();
    let a = drain(&mut t);
    assert!(!a
        .iter()
        .any(|a| matches!(a, Action::CallModel(_) | Action::RunTool { .. })));
    assert!(a
        .iter()
        .any(|a| matches!(a, Action::Audit(e) if e.answer.is_some())));
    assert_eq!(a.last(), Some(&Action::Done));
    assert_eq!(t.calls().len(), 2);
    assert!(t.calls().iter().all(|c| !c.ran));
    assert!(t
        .messages()
        .last()
        .unwrap()
        .content
        .contains("went on with a new message"));
    // Every call the model made has its result (the history stays well-formed).
    let results = t.messages().iter().filter(|m| m.role == Role::Tool).count();
    assert_eq!(results, 2);
}

#[test]
fn a_failing_tool_tells_the_model_it_failed() {
    let mut t = turn(Policy::Interactive, 4);
    drain(&mut t);
    t.handle_reply(asking(vec![call("a", "read_file", "{}")]));
    drain(&mut t);
    let c = check(&t, "read_file", "{}", Level::L0, false);
    t.handle_check(c, 1);
    drain(&mut t);
    t.handle_output("no such file".into(), true);
    let a = drain(&mut t);
    let r = a
        .iter()
        .find_map(|a| match a {
            Action::CallSettled(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert!(r.ran && r.is_error);
    assert_eq!(last_tool_text(&t), "error: no such file");
    assert_eq!(r.output_chars, "error: no such file".chars().count());
}

#[test]
fn events_out_of_order_change_nothing() {
    let mut t = turn(Policy::Interactive, 4);
    let before = t.clone();
    t.handle_output("x".into(), false);
    t.handle_answer("yes");
    t.handle_check(
        CallCheck {
            class: ToolClass {
                level: Level::L0,
                source: ClassSource::BuiltIn,
            },
            escalation: Escalation::default(),
            level: Level::L0,
            decision: Decision::Run,
            command: None,
            sends: None,
            definition: None,
        },
        1,
    );
    t.handle_moved_on();
    assert_eq!(t, before);
}

#[test]
fn always_words() {
    for (reply, level, always) in [
        ("always", Level::L3, true),
        ("Always!", Level::L3, true),
        ("总是", Level::L2, true),
        ("a", Level::L3, true),
        ("always", Level::L4, false),
        ("yes", Level::L3, false),
        ("always not", Level::L3, false),
    ] {
        assert_eq!(
            parse_approval(reply, level) == Approval::Always,
            always,
            "{reply} {level}"
        );
    }
}

#[test]
fn stopping_at_the_question_refuses_the_call_and_keeps_the_turn() {
    let mut t = waiting(Level::L3, "write_file", r#"{"path":"a"}"#);
    t.handle_stopped();
    let a = drain(&mut t);
    assert!(!a
        .iter()
        .any(|a| matches!(a, Action::CallModel(_) | Action::RunTool { .. })));
    assert_eq!(a.last(), Some(&Action::Done));
    assert!(last_tool_text(&t).contains("not run") || t.calls().iter().all(|c| !c.ran));
    assert!(t
        .messages()
        .last()
        .unwrap()
        .content
        .contains("refused at its question"));
    assert_eq!(t.messages().first().unwrap().content, "question");
}

#[test]
fn the_questions_images_stay_with_it_through_the_turn() {
    let images = vec!["data:image/png;base64,AAAA".to_string()];
    let mut t = turn(Policy::Interactive, 4).with_images(images.clone());
    drain(&mut t);
    t.handle_reply(answer("a cat"));
    assert_eq!(drain(&mut t), vec![Action::Done]);
    let q = &t.messages()[0];
    assert_eq!((q.role, q.content.as_str()), (Role::User, "question"));
    assert_eq!(q.images, images);
    // The answer carries none.
    assert!(t.messages()[1].images.is_empty());
}

#[test]
fn always_for_a_server_defined_tool_is_bound_to_the_definition_it_was_checked_against() {
    let ctx = EscalationContext {
        workspace_root: "/w",
        path_keys: &[],
        is_shell: false,
        extra_roots: &[],
    };
    let class = ToolClass {
        level: Level::L3,
        source: ClassSource::Classifier,
    };
    let defined = |t: &Turn, definition: &str| {
        crate::permission::check_defined_call(
            "notes__show",
            definition,
            class,
            "{}",
            &ctx,
            t.grants(),
            t.policy(),
        )
    };
    let mut t = turn(Policy::Interactive, 4);
    drain(&mut t);
    t.handle_reply(asking(vec![call("a", "notes__show", "{}")]));
    drain(&mut t);
    let c = defined(&t, "aaaa.1");
    assert_eq!(c.decision, Decision::AskOnce);
    t.handle_check(c, 7);
    drain(&mut t);
    t.handle_answer("always");
    let actions = drain(&mut t);
    let saved = actions.iter().find_map(|a| match a {
        Action::SaveGrant(g) => Some(g.clone()),
        _ => None,
    });
    assert_eq!(
        saved.and_then(|g| g.definition),
        Some(String::from("aaaa.1"))
    );
    // The same definition runs; another of the same name is asked.
    assert_eq!(defined(&t, "aaaa.1").decision, Decision::Run);
    assert_eq!(defined(&t, "bbbb.2").decision, Decision::AskOnce);
}

#[test]
fn only_the_persons_own_answer_settles_a_parked_call() {
    use crate::provenance::Source;
    let headless = Policy::Headless {
        max_auto: Level::L2,
    };
    // (input, policy, who wrote it, level of the waiting call, settled as)
    let table = [
        (
            "yes",
            Policy::Interactive,
            Source::Person,
            Level::L3,
            Settled::Answered,
        ),
        (
            "no",
            Policy::Interactive,
            Source::Person,
            Level::L3,
            Settled::Answered,
        ),
        (
            "是",
            Policy::Interactive,
            Source::Person,
            Level::L3,
            Settled::Answered,
        ),
        (
            "always",
            Policy::Interactive,
            Source::Person,
            Level::L3,
            Settled::Answered,
        ),
        // A new question is a turn of its own: the waiting call is refused.
        (
            "what time is it?",
            Policy::Interactive,
            Source::Person,
            Level::L3,
            Settled::MovedOn,
        ),
        // "always" is no answer to an L4 call: a new message.
        (
            "always",
            Policy::Interactive,
            Source::Person,
            Level::L4,
            Settled::MovedOn,
        ),
        // A headless run (a cron task, `ask`) never answers for a person.
        ("yes", headless, Source::Person, Level::L3, Settled::MovedOn),
        // A group member on a channel is not the person.
        (
            "yes",
            Policy::Interactive,
            Source::World,
            Level::L3,
            Settled::MovedOn,
        ),
    ];
    for (text, policy, from, level, want) in table {
        let mut t = waiting(level, "write_file", r#"{"path":"a"}"#);
        let got = t.handle_input(NextInput { text, policy, from });
        assert_eq!(got, want, "{text:?} {policy:?} {from:?} {level:?}");
        let a = drain(&mut t);
        match want {
            // Answered yes: the call runs; no: refused, and the model goes on.
            Settled::Answered if text != "no" => assert!(
                a.iter().any(
                    |a| matches!(a, Action::RunTool { call, .. } if call.name == "write_file")
                ),
                "{text:?}: {a:?}"
            ),
            Settled::Answered => {
                assert!(!t.is_done() && t.calls()[0].answer.as_deref() == Some("refused"))
            }
            // Moved on: refused, the turn closed without a model call.
            Settled::MovedOn => {
                assert_eq!(a.last(), Some(&Action::Done), "{text:?}");
                assert!(!a.iter().any(|a| matches!(a, Action::CallModel(_))));
                assert!(t.calls().iter().all(|c| !c.ran));
            }
        }
    }
}

#[test]
fn a_reply_is_an_answer_when_it_says_yes_no_or_always_where_it_counts() {
    let table = [
        ("yes", Level::L4, true),
        ("y", Level::L2, true),
        ("no", Level::L4, true),
        ("好", Level::L3, true),
        ("always", Level::L3, true),
        ("always", Level::L4, false),
        ("maybe later", Level::L3, false),
        ("please read notes.txt", Level::L1, false),
    ];
    for (text, level, answer) in table {
        assert_eq!(is_answer(text, level), answer, "{text:?} at {level:?}");
    }
}
