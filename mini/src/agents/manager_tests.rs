//! The driver of [`Turn`](evolve_core::turn::Turn) with a scripted model and a real
//! store: the clock each event reads, a turn parked for a person and settled by the
//! session's next input — answered or moved on from — in another manager.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::cancel::Cancel;
use crate::testing::TempDir;
use evolve_core::history::{Message, Role, ToolCall, NO_ANSWER};
use evolve_core::permission::{AnswerOutcome, PendingCall, Policy};
use evolve_core::text::Lang;

use super::*;
use crate::agents::io::Heard;
use crate::config::Config;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError, ModelRole, Usage};
use crate::store::Store;
use evolve_core::text::FallbackTokenizer;

/// Replies in order; the background prompts get "{}" (nothing learned).
#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<VecDeque<Message>>>,
    /// The main model's requests, in order.
    seen: Seen,
}

/// The main model's requests, shared with the test.
type Seen = Arc<Mutex<Vec<Vec<Message>>>>;

/// A scripted reply that makes the main model fail instead of answering.
const FAIL: &str = "<<fail>>";

impl ChatModel for Script {
    fn chat(
        &self,
        req: &ChatRequest,
        _on_delta: &mut dyn FnMut(Delta<'_>),
        _cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let message = if req.role == ModelRole::Main {
            self.seen.lock().unwrap().push(req.messages.clone());
            let m = self
                .replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Message::assistant("(script ended)"));
            if m.content == FAIL {
                return Err(LlmError::Protocol {
                    url: "scripted".into(),
                    detail: "the scripted model broke".into(),
                });
            }
            m
        } else {
            Message::assistant("{}")
        };
        Ok(ChatResponse {
            message,
            finish_reason: Some("stop".into()),
            usage: Usage::default(),
            model: "scripted".into(),
            cut: None,
            images_left_out: 0,
        })
    }

    fn model_name(&self, _role: ModelRole) -> &str {
        "scripted"
    }
}

fn write_call(path: &str) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "write_file".into(),
        arguments: format!(r#"{{"path": "{path}", "content": "hi"}}"#),
    }];
    m
}

fn runtime(dir: &TempDir, replies: Vec<Message>) -> Arc<Runtime> {
    runtime_seen(dir, replies).0
}

fn runtime_seen(dir: &TempDir, replies: Vec<Message>) -> (Arc<Runtime>, Seen) {
    let mut config = Config::defaults(dir.path().to_path_buf());
    config.agent.learn = false;
    let store = Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
    let script = Script {
        replies: Arc::new(Mutex::new(replies.into())),
        seen: Arc::default(),
    };
    let seen = Arc::clone(&script.seen);
    let rt = Runtime::with_model(
        config,
        store,
        crate::text::ShellTokenizer::new(None),
        Box::new(script),
    );
    (rt, seen)
}

/// A person who answers from a list (and moves the clock when asked); `None` when the
/// list is empty.
struct Person<'a> {
    answers: VecDeque<&'static str>,
    rt: &'a Runtime,
    clock_when_asked: i64,
    asked: usize,
}

impl TurnIo for Person<'_> {
    fn ask(&mut self, _call: &PendingCall, _lang: Lang) -> Heard {
        self.asked += 1;
        self.rt.clock.set(self.clock_when_asked);
        match self.answers.pop_front() {
            Some(a) => Heard::Reply(a.to_string()),
            None => Heard::Away,
        }
    }
}

impl<'a> Person<'a> {
    /// A person who answers `answers` in turn, then is away.
    fn answering(rt: &'a Runtime, answers: &[&'static str]) -> Person<'a> {
        Person {
            answers: answers.iter().copied().collect(),
            rt,
            clock_when_asked: 0,
            asked: 0,
        }
    }
}

static NEVER: Cancel = Cancel::new();

fn input<'a>(session: Option<&'a str>, text: &'a str) -> TurnInput<'a> {
    TurnInput {
        session,
        text,
        policy: Policy::Interactive,
        stream: false,
        cancel: &NEVER,
        force_tool: None,
        images: &[],
        from: evolve_core::provenance::Source::Person,
        replaces: None,
    }
}

#[test]
fn each_event_reads_the_runtimes_clock() {
    let dir = TempDir::new("manager");
    let rt = runtime(
        &dir,
        vec![write_call("a.txt"), Message::assistant("written")],
    );
    rt.clock.set(1_000);
    let manager = Manager::new(Arc::clone(&rt));
    let mut person = Person {
        answers: ["yes"].into(),
        rt: &rt,
        clock_when_asked: 2_000,
        asked: 0,
    };
    let (record, _) = manager
        .turn(input(None, "write a.txt"), &mut person)
        .unwrap();
    assert_eq!(record.reply, "written");
    assert!(record.tools[0].ran);
    // The check was decided at 1 000, the person answered at 2 000: the audit entry
    // has the time of the decision, the stored turn the time it was saved.
    let audit = rt.store.audit_log(5).unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].at, 1_000);
    assert_eq!(audit[0].answer, Some(AnswerOutcome::Run));
    let messages = rt.store.messages(&record.session, 1).unwrap();
    assert!(messages.iter().all(|m| m.at == 2_000), "{messages:?}");
}

#[test]
fn a_parked_turn_is_answered_by_the_sessions_next_input() {
    let dir = TempDir::new("manager");
    let rt = runtime(
        &dir,
        vec![write_call("b.txt"), Message::assistant("done: b.txt")],
    );
    let first = Manager::new(Arc::clone(&rt));
    let mut gone = Person::answering(&rt, &[]);
    let (record, _) = first.turn(input(None, "write b.txt"), &mut gone).unwrap();
    let waiting = record.waiting.expect("parked");
    assert_eq!(waiting.tool, "write_file");
    assert!(!rt.workspace.join("b.txt").exists());
    let sid = record.session.clone();
    assert_eq!(rt.store.pending(&sid).unwrap().len(), 1);
    assert_eq!(rt.store.session(&sid).unwrap().turns, 0);
    drop(first);

    // Another manager (another front end, another process) gets "yes".
    let second = Manager::new(Arc::clone(&rt));
    let mut nobody = Person::answering(&rt, &[]);
    let (record, _) = second.turn(input(Some(&sid), "yes"), &mut nobody).unwrap();
    assert_eq!(nobody.asked, 0, "the answer was the input");
    assert_eq!(record.turn, 1);
    assert_eq!(record.reply, "done: b.txt");
    assert!(record.tools[0].ran);
    assert!(rt.workspace.join("b.txt").exists());
    assert!(rt.store.pending(&sid).unwrap().is_empty());
    // The stored turn is the original question's, not "yes".
    let messages = rt.store.messages(&sid, 1).unwrap();
    assert_eq!(messages[0].message.content, "write b.txt");
}

#[test]
fn a_new_message_refuses_the_parked_call_and_is_a_turn_of_its_own() {
    let dir = TempDir::new("manager");
    let rt = runtime(
        &dir,
        vec![write_call("c.txt"), Message::assistant("it is noon")],
    );
    let manager = Manager::new(Arc::clone(&rt));
    let mut gone = Person::answering(&rt, &[]);
    let (record, _) = manager.turn(input(None, "write c.txt"), &mut gone).unwrap();
    let sid = record.session.clone();
    assert!(record.waiting.is_some());
    let (record, _) = manager
        .turn(input(Some(&sid), "what time is it?"), &mut gone)
        .unwrap();
    assert_eq!(record.turn, 2);
    assert_eq!(record.reply, "it is noon");
    assert!(!rt.workspace.join("c.txt").exists());
    assert!(rt.store.pending(&sid).unwrap().is_empty());
    assert_eq!(rt.store.session(&sid).unwrap().turns, 2);
    let audit = rt.store.audit_log(5).unwrap();
    assert_eq!(audit.last().unwrap().answer, Some(AnswerOutcome::Refused));
    let first_turn = rt.store.messages(&sid, 1).unwrap();
    assert!(first_turn
        .iter()
        .any(|m| m.turn == 1 && m.message.content.contains("went on with a new message")));
}

#[test]
fn a_headless_yes_does_not_answer_a_parked_call() {
    let dir = TempDir::new("manager");
    let rt = runtime(&dir, vec![write_call("d.txt"), Message::assistant("ok")]);
    let manager = Manager::new(Arc::clone(&rt));
    let mut gone = Person::answering(&rt, &[]);
    let (record, _) = manager.turn(input(None, "write d.txt"), &mut gone).unwrap();
    let sid = record.session.clone();
    let mut headless = input(Some(&sid), "yes");
    headless.policy = Policy::Headless {
        max_auto: evolve_core::permission::Level::L2,
    };
    manager.turn(headless, &mut gone).unwrap();
    assert!(!rt.workspace.join("d.txt").exists());
}

#[test]
fn a_failed_turn_is_a_turn_of_its_own_and_the_next_request_still_alternates() {
    let dir = TempDir::new("manager");
    let (rt, seen) = runtime_seen(
        &dir,
        vec![
            Message::assistant(FAIL),
            Message::assistant("second answer"),
        ],
    );
    let manager = Manager::new(Arc::clone(&rt));
    let err = manager
        .turn(
            input(None, "first question"),
            &mut Person::answering(&rt, &[]),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("the scripted model broke"),
        "{err}"
    );
    let sid = manager.last_session().expect("the session is kept");
    let failed: serde_json::Value =
        serde_json::from_str(&rt.store.turn(&sid, 1).unwrap().expect("a record of turn 1"))
            .unwrap();
    assert!(
        failed["failed"]
            .as_str()
            .unwrap()
            .contains("the scripted model broke"),
        "{failed}"
    );
    let (record, _) = manager
        .turn(
            input(Some(&sid), "second question"),
            &mut Person::answering(&rt, &[]),
        )
        .unwrap();
    assert_eq!((record.turn, record.reply.as_str()), (2, "second answer"));
    // Turn 1 keeps its record and its question; turn 2 is answered.
    assert!(rt.store.turn(&sid, 1).unwrap().unwrap().contains("failed"));
    let stored = rt.store.messages(&sid, 1).unwrap();
    let turns: Vec<(u64, String)> = stored
        .iter()
        .map(|m| (m.turn, m.message.content.clone()))
        .collect();
    assert_eq!(
        turns,
        [
            (1, "first question".into()),
            (2, "second question".into()),
            (2, "second answer".into())
        ]
    );
    // The second request: no two user messages in a row (the missing answer is noted).
    let second = seen.lock().unwrap()[1].clone();
    let roles: Vec<Role> = second
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| m.role)
        .collect();
    assert!(
        roles
            .windows(2)
            .all(|w| !(w[0] == Role::User && w[1] == Role::User)),
        "{roles:?} {second:#?}"
    );
    assert!(second.iter().any(|m| m.content == NO_ANSWER), "{second:?}");
    // Each closed turn has its L2 entry: two turns, two entries.
    assert_eq!(rt.store.l2(&sid).unwrap().entries().len(), 2);
}

/// A person who takes `ms` to say yes.
struct SlowYes(u64);

impl TurnIo for SlowYes {
    fn ask(&mut self, _call: &PendingCall, _lang: Lang) -> Heard {
        std::thread::sleep(std::time::Duration::from_millis(self.0));
        Heard::Reply("yes".into())
    }
}

#[test]
fn the_time_a_person_takes_to_answer_is_in_the_record_and_not_the_agents_overhead() {
    let dir = TempDir::new("manager");
    let rt = runtime(
        &dir,
        vec![write_call("e.txt"), Message::assistant("written")],
    );
    let manager = Manager::new(Arc::clone(&rt));
    let (record, _) = manager
        .turn(input(None, "write e.txt"), &mut SlowYes(1_500))
        .unwrap();
    assert!(record.person_ms >= 1_500, "{}", record.person_ms);
    assert!(record.answer_ms >= record.person_ms);
    // The agent's own time leaves out the wait: a slow person is not a slow agent.
    assert!(
        record.overhead_ms < 1_500.0,
        "{} ms of overhead",
        record.overhead_ms
    );
    let stored: serde_json::Value =
        serde_json::from_str(&rt.store.turn(&record.session, 1).unwrap().unwrap()).unwrap();
    assert_eq!(stored["person_ms"], record.person_ms);

    // Nobody asked: no wait in the record.
    let dir = TempDir::new("manager");
    let rt = runtime(&dir, vec![Message::assistant("hi")]);
    let (record, _) = Manager::new(Arc::clone(&rt))
        .turn(input(None, "hello"), &mut SlowYes(0))
        .unwrap();
    assert_eq!(record.person_ms, 0);
    let stored = rt.store.turn(&record.session, 1).unwrap().unwrap();
    assert!(!stored.contains("person_ms"), "{stored}");
}

#[test]
fn a_group_members_yes_refuses_a_parked_call_and_is_a_turn_of_its_own() {
    let dir = TempDir::new("manager");
    let rt = runtime(
        &dir,
        vec![write_call("f.txt"), Message::assistant("hello, member")],
    );
    let manager = Manager::new(Arc::clone(&rt));
    let mut gone = Person::answering(&rt, &[]);
    let (record, _) = manager.turn(input(None, "write f.txt"), &mut gone).unwrap();
    let sid = record.session.clone();
    let mut member = input(Some(&sid), "yes");
    member.from = evolve_core::provenance::Source::World;
    let (record, _) = manager.turn(member, &mut gone).unwrap();
    assert!(!rt.workspace.join("f.txt").exists());
    assert_eq!((record.turn, record.reply.as_str()), (2, "hello, member"));
    assert!(rt.store.pending(&sid).unwrap().is_empty());
    let audit = rt.store.audit_log(5).unwrap();
    assert_eq!(audit.last().unwrap().answer, Some(AnswerOutcome::Refused));
    // The closed turn has its record: the call refused, never run.
    let closed: serde_json::Value =
        serde_json::from_str(&rt.store.turn(&sid, 1).unwrap().expect("turn 1's record")).unwrap();
    assert_eq!(closed["tools"][0]["ran"], false, "{closed}");
}
