use crate::cancel::Cancel;
use std::sync::{Arc, Mutex};

use evolve_core::history::Message;
use evolve_core::memory::{Category, Memory, Priority};
use evolve_core::text::FallbackTokenizer;
use evolve_core::{Timestamp, DAY};

use super::{maintain, run};
use crate::agents::runtime::Runtime;
use crate::config::Config;
use crate::llm::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError, ModelRole, Usage};
use crate::store::{Saved, Store};
use crate::testing::TempDir;

const NOW: Timestamp = 1_800_000_000;

/// A scripted embedding (`None`: the request fails).
type Vector = Option<Vec<f32>>;

/// A cheap model answering the scripted replies in order, then failing; with
/// `vectors`, an embedding model giving each text the vector of its first word
/// (`None` in the map: the request fails), counting the texts embedded.
#[derive(Clone, Default)]
struct Scripted(
    Arc<Mutex<Vec<String>>>,
    Option<Vec<(&'static str, Vector)>>,
    Arc<Mutex<usize>>,
);

impl ChatModel for Scripted {
    fn chat(
        &self,
        _req: &ChatRequest,
        _on_delta: &mut dyn FnMut(Delta<'_>),
        _cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let mut replies = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if replies.is_empty() {
            return Err(LlmError::Protocol {
                url: "http://127.0.0.1:1/v1".into(),
                detail: "scripted failure".into(),
            });
        }
        Ok(ChatResponse {
            message: Message::assistant(replies.remove(0)),
            finish_reason: Some("stop".into()),
            usage: Usage::default(),
            model: "fake-cheap".into(),
            cut: None,
            images_left_out: 0,
        })
    }
    fn model_name(&self, _role: ModelRole) -> &str {
        "fake"
    }
    fn embed(
        &self,
        inputs: &[String],
        _cancel: &Cancel,
    ) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
        let table = self.1.as_ref()?;
        *self.2.lock().unwrap_or_else(|e| e.into_inner()) += inputs.len();
        let vectors: Option<Vec<Vec<f32>>> = inputs
            .iter()
            .map(|text| {
                let first = text.split_whitespace().next().unwrap_or("");
                table
                    .iter()
                    .find(|(w, _)| *w == first)
                    .and_then(|(_, v)| v.clone())
            })
            .collect();
        Some(vectors.ok_or(LlmError::Protocol {
            url: "http://127.0.0.1:1/v1/embeddings".into(),
            detail: "scripted embedding failure".into(),
        }))
    }
}

fn runtime(dir: &TempDir, replies: &[&str]) -> Arc<Runtime> {
    runtime_with(dir, replies, Scripted::default())
}

fn runtime_with(dir: &TempDir, replies: &[&str], mut model: Scripted) -> Arc<Runtime> {
    let config = Config::defaults(dir.path().to_path_buf());
    let store = Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
    model.0 = Arc::new(Mutex::new(replies.iter().map(|s| s.to_string()).collect()));
    Runtime::with_model(
        config,
        store,
        crate::text::ShellTokenizer::new(None),
        Box::new(model),
    )
}

fn mem(content: &str, category: Category, priority: Priority, age_days: i64) -> Memory {
    let mut m = Memory::new(content, category, NOW - age_days * DAY, &FallbackTokenizer);
    m.priority = priority;
    m
}

fn seed(rt: &Runtime, memories: Vec<Memory>) {
    let new = memories.into_iter().map(|m| (m, None)).collect();
    rt.store.save_memories(new).expect("seed");
}

static NEVER: Cancel = Cancel::new();

#[test]
fn a_chain_of_restatements_merges_into_one_and_a_second_run_does_nothing() {
    let dir = TempDir::new("maintain-chain");
    let rt = runtime(&dir, &[r#"{"changes": []}"#, r#"{"changes": []}"#]);
    seed(
        &rt,
        vec![
            mem(
                "The user likes tea",
                Category::Preference,
                Priority::High,
                20,
            ),
            mem(
                "The user likes green tea",
                Category::Preference,
                Priority::High,
                19,
            ),
            mem(
                "The user likes green tea brewed hot",
                Category::Preference,
                Priority::High,
                18,
            ),
        ],
    );
    let r = maintain(&rt, NOW, &NEVER);
    assert_eq!(r.merged.len(), 2, "{r:?}");
    let live = rt.store.with_memories(|m| m.to_vec());
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].content, "The user likes green tea brewed hot");
    assert_eq!(live[0].id, 1, "the oldest keeps its id");
    let again = maintain(&rt, NOW + 60, &NEVER);
    assert_eq!(again.changes(), 0, "{again:?}");
}

#[test]
fn a_failing_model_skips_only_the_review_and_a_cancelled_run_writes_nothing() {
    let dir = TempDir::new("maintain-fail");
    let rt = runtime(&dir, &[]);
    seed(
        &rt,
        vec![
            mem(
                "Always reply in English",
                Category::Instruction,
                Priority::Critical,
                40,
            ),
            mem("Buy milk", Category::Reminder, Priority::High, 1),
            mem("Feed the cat", Category::Reminder, Priority::High, 1),
        ],
    );
    let cancel = Cancel::new();
    cancel.cancel();
    let r = run(&rt, NOW, false, &cancel);
    assert_eq!(
        r.problems,
        vec!["cancelled before the expiry step".to_string()]
    );
    assert_eq!(r.changes(), 0);
    assert_eq!(
        rt.store.with_memories(|m| m[0].priority),
        Priority::Critical
    );

    let r = maintain(&rt, NOW, &NEVER);
    assert_eq!(r.decayed.len(), 1);
    assert_eq!(r.summaries.len(), 1);
    assert!(r.adjusted.is_empty());
    // The summary falls back to the keyword draft; the review is skipped.
    assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
    assert!(
        r.problems[0].starts_with("summary written from keywords")
            && r.problems[1].starts_with("priority review skipped"),
        "{:?}",
        r.problems
    );
    assert!(r.summaries[0].content.contains("milk"), "{:?}", r.summaries);
    assert!(r.error.is_none());
}

#[test]
fn a_summary_with_no_room_under_the_cap_is_not_written_but_an_old_one_makes_way() {
    let dir = TempDir::new("maintain-cap");
    let rt = runtime(&dir, &[]);
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar",
    ];
    let mut memories: Vec<Memory> = words
        .iter()
        .map(|w| {
            mem(
                &format!("Code word {w}"),
                Category::Instruction,
                Priority::Critical,
                20,
            )
        })
        .collect();
    memories.push(mem("Buy milk", Category::Reminder, Priority::High, 1));
    memories.push(mem("Feed the cat", Category::Reminder, Priority::High, 1));
    seed(&rt, memories);
    let r = maintain(&rt, NOW, &NEVER);
    assert!(r.summaries.is_empty(), "{r:?}");
    assert!(r.critical_evicted.is_empty(), "{r:?}");
    assert!(
        r.problems[0].starts_with("the reminder summary of #16, #17 was not written"),
        "{:?}",
        r.problems
    );
    let live = rt.store.with_memories(|m| m.to_vec());
    assert_eq!(live.len(), 17);
    assert!(live.iter().all(|m| m.importance == 3), "{live:?}");

    // One rule gone, an old summary in its place: the new summary takes the place of
    // the old one, never of a rule.
    let mut code = rt.store.memory(1).expect("stored");
    code.deleted = true;
    rt.store.update_memory(&code).expect("delete");
    let mut old = mem("Old summary", Category::Fact, Priority::Critical, 10);
    old.tags.push("summary".into());
    seed(&rt, vec![old]);
    let r = maintain(&rt, NOW + 60, &NEVER);
    assert_eq!(r.summaries.len(), 1, "{r:?}");
    assert_eq!(r.critical_evicted, vec![18], "{r:?}");
    let sid = r.summaries[0].id;
    assert!(!rt.store.memory(sid).expect("stored").deleted);
    let again = maintain(&rt, NOW + 120, &NEVER);
    assert_eq!(again.changes(), 0, "{again:?}");
}

#[test]
fn a_dry_run_reports_without_writing() {
    let dir = TempDir::new("maintain-dry");
    let rt = runtime(&dir, &[r#"{"changes": [{"id": 2, "delta": -1}]}"#]);
    seed(
        &rt,
        vec![
            mem(
                "Always reply in English",
                Category::Instruction,
                Priority::Critical,
                40,
            ),
            mem(
                "The printer is on the second floor",
                Category::Fact,
                Priority::Medium,
                20,
            ),
        ],
    );
    let before = rt.store.all_memories().expect("read");
    let r = run(&rt, NOW, true, &NEVER);
    assert!(r.dry_run);
    assert_eq!(r.decayed.len(), 1);
    assert_eq!(r.adjusted.len(), 1);
    assert_eq!(rt.store.all_memories().expect("read"), before);
}

#[test]
fn saving_keeps_a_newer_access_mark_and_never_overwrites_a_change_made_meanwhile() {
    let dir = TempDir::new("maintain-save");
    let rt = runtime(&dir, &[]);
    seed(
        &rt,
        vec![
            mem("Buy milk", Category::Reminder, Priority::High, 1),
            mem("Feed the cat", Category::Reminder, Priority::High, 1),
        ],
    );
    let read = |id| rt.store.memory(id).expect("read");
    let (one, two) = (read(1), read(2));
    // Meanwhile a turn uses #1 and the user edits #2.
    rt.store.mark_accessed(&[1], NOW).expect("mark");
    let mut edited = two.clone();
    edited.content = "Feed the cat twice".into();
    rt.store.update_memory(&edited).expect("edit");

    let mut lowered = one.clone();
    lowered.importance = 2;
    let mut stale = two.clone();
    stale.importance = 2;
    let new = mem("Water the plants", Category::Reminder, Priority::High, 1);
    let saved = rt
        .store
        .save_memories(vec![(lowered, Some(one)), (stale, Some(two)), (new, None)])
        .expect("save");
    match &saved[..] {
        [Saved::Written(a), Saved::Changed(Some(b)), Saved::Written(c)] => {
            assert_eq!((a.importance, a.last_accessed_at), (2, Some(NOW)));
            assert_eq!(
                (b.content.as_str(), b.importance),
                ("Feed the cat twice", 3)
            );
            assert_eq!(c.id, 3);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read(2).content, "Feed the cat twice");
}

#[test]
fn embeddings_are_fetched_once_and_find_duplicates_keywords_miss() {
    let dir = TempDir::new("maintain-embed");
    let model = Scripted(
        Default::default(),
        Some(vec![
            ("Espresso", Some(vec![1.0, 0.0, 0.01])),
            ("Strong", Some(vec![1.0, 0.0, 0.0])),
            ("Cycling", Some(vec![0.0, 1.0, 0.0])),
        ]),
        Default::default(),
    );
    let rt = runtime_with(
        &dir,
        &[r#"{"changes": []}"#, r#"{"changes": []}"#],
        model.clone(),
    );
    seed(
        &rt,
        vec![
            mem(
                "Espresso every morning",
                Category::Preference,
                Priority::High,
                20,
            ),
            mem(
                "Strong coffee after waking up",
                Category::Preference,
                Priority::High,
                19,
            ),
            mem(
                "Cycling to work on Fridays",
                Category::Fact,
                Priority::Medium,
                18,
            ),
        ],
    );
    let r = maintain(&rt, NOW, &NEVER);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.merged.len(), 1, "{r:?}");
    assert_eq!(
        (r.merged[0].kept, r.merged[0].dropped, r.merged[0].by),
        (1, 2, "embedding")
    );
    assert!(r.merged[0].similarity >= 0.92);
    assert_eq!(*model.2.lock().unwrap_or_else(|e| e.into_inner()), 3);
    let kept = rt.store.memory(1).expect("kept");
    assert_eq!(kept.content, "Strong coffee after waking up");
    assert_eq!(
        kept.embedding,
        Some(vec![1.0, 0.0, 0.0]),
        "the embedding goes with its text"
    );
    assert!(rt.store.memory(3).expect("stored").embedding.is_some());
    let again = maintain(&rt, NOW + 60, &NEVER);
    assert_eq!(again.changes(), 0, "{again:?}");
    assert_eq!(
        *model.2.lock().unwrap_or_else(|e| e.into_inner()),
        3,
        "stored embeddings are reused"
    );
}

#[test]
fn a_failing_embedding_model_leaves_duplicates_to_keywords() {
    let dir = TempDir::new("maintain-embed-fail");
    let model = Scripted(Default::default(), Some(vec![]), Default::default());
    let rt = runtime_with(&dir, &[r#"{"changes": []}"#], model);
    seed(
        &rt,
        vec![
            mem(
                "The user likes tea",
                Category::Preference,
                Priority::High,
                20,
            ),
            mem(
                "The user likes green tea",
                Category::Preference,
                Priority::High,
                19,
            ),
        ],
    );
    let r = maintain(&rt, NOW, &NEVER);
    assert_eq!(r.merged.len(), 1);
    assert_eq!(r.merged[0].by, "keywords");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(
        r.problems[0].starts_with("embeddings skipped"),
        "{:?}",
        r.problems
    );
}

/// An embedding model during whose call the user edits memory #1 (the store is
/// reached through the runtime set after it is built).
struct EditsMeanwhile(Arc<Mutex<Option<std::sync::Weak<Runtime>>>>);

impl ChatModel for EditsMeanwhile {
    fn chat(
        &self,
        _req: &ChatRequest,
        _on_delta: &mut dyn FnMut(Delta<'_>),
        _cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Protocol {
            url: "http://127.0.0.1:1/v1".into(),
            detail: "scripted failure".into(),
        })
    }
    fn model_name(&self, _role: ModelRole) -> &str {
        "fake"
    }
    fn embed(
        &self,
        inputs: &[String],
        _cancel: &Cancel,
    ) -> Option<Result<Vec<Vec<f32>>, LlmError>> {
        let rt = self.0.lock().ok()?.as_ref()?.upgrade()?;
        let mut one = rt.store.memory(1).ok()?;
        one.content = "The user likes green tea, jasmine above all".into();
        rt.store.update_memory(&one).ok()?;
        // Orthogonal vectors: no pair by embeddings, only by keywords.
        let n = inputs.len();
        Some(Ok((0..n)
            .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect()))
    }
}

#[test]
fn a_merge_whose_kept_memory_changed_meanwhile_drops_nothing() {
    let dir = TempDir::new("maintain-merge-race");
    let hook = Arc::new(Mutex::new(None));
    let config = Config::defaults(dir.path().to_path_buf());
    let store = Store::open(&dir.path().join("evolve.redb"), &FallbackTokenizer).expect("store");
    let rt = Runtime::with_model(
        config,
        store,
        crate::text::ShellTokenizer::new(None),
        Box::new(EditsMeanwhile(Arc::clone(&hook))),
    );
    *hook.lock().unwrap() = Some(Arc::downgrade(&rt));
    seed(
        &rt,
        vec![
            mem(
                "The user likes green tea",
                Category::Preference,
                Priority::High,
                9,
            ),
            mem(
                "The user likes green tea brewed at 80 degrees",
                Category::Preference,
                Priority::High,
                8,
            ),
        ],
    );
    let report = maintain(&rt, NOW, &NEVER);
    let live: Vec<String> = rt
        .store
        .all_memories()
        .expect("read")
        .into_iter()
        .filter(|m| !m.deleted)
        .map(|m| m.content)
        .collect();
    assert!(
        live.iter().any(|c| c.contains("80 degrees")),
        "the restatement was dropped although its merge was not stored: {live:?} {:?}",
        report
    );
    assert!(live.iter().any(|c| c.contains("jasmine")), "{live:?}");
}
