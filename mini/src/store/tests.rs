//! The store as its callers see it: records survive reopening (and an abort), core's
//! memory rules are applied atomically, a session takes everything it owns with it,
//! export/import round-trips, damaged and foreign files give errors that say what to do.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use evolve_core::history::{L2Entry, L2Ring, Message, Role, ToolCall};
use evolve_core::memory::{Category, Memory, MemoryConfig, Priority};
use evolve_core::permission::{AuditEntry, Level, PendingCall};
use evolve_core::text::FallbackTokenizer;
use evolve_core::{Timestamp, DAY};

use super::schema::{MEMORIES, META, SCHEMA_VERSION_KEY, SESSIONS};
use super::*;

const NOW: Timestamp = 1_800_000_000;

/// A fresh file path in a directory of its own under the system temp dir.
pub(crate) fn temp_path(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir()
        .join(format!(
            "evolve-store-{name}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
        .join("evolve.redb")
}

fn open(path: &Path) -> Store {
    Store::open(path, &FallbackTokenizer).expect("the store opens")
}

fn mem(text: &str, category: Category) -> Memory {
    Memory::new(text, category, NOW, &FallbackTokenizer)
}

fn ingest(store: &Store, m: Memory) -> Ingested {
    store
        .ingest_memory(m, &MemoryConfig::default(), NOW, &FallbackTokenizer)
        .expect("ingest")
}

fn live_ids(store: &Store) -> Vec<u64> {
    store.with_memories(|ms| ms.iter().map(|m| m.id).collect())
}

fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[test]
fn the_store_is_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Store>();
}

#[test]
fn open_creates_the_directory_and_a_write_survives_dropping_the_store() {
    let path = temp_path("durable");
    assert!(!path.parent().unwrap().exists());
    let (id, session) = {
        let store = open(&path);
        let Ingested::Inserted(id) =
            ingest(&store, mem("the server is a raspberry pi", Category::Fact))
        else {
            panic!("a new memory is inserted")
        };
        let s = store.create_session("hello", NOW).unwrap();
        store
            .append_messages(&s.id, 1, &[Message::user("hi")], NOW, true)
            .unwrap();
        (id, s.id)
        // dropped here without any close
    };
    let store = open(&path);
    assert_eq!(
        store.memory(id).unwrap().content,
        "the server is a raspberry pi"
    );
    assert_eq!(live_ids(&store), vec![id]);
    assert_eq!(
        store.messages(&session, 0).unwrap()[0].message.content,
        "hi"
    );
}

#[test]
fn what_is_written_without_waiting_for_the_disk_is_on_it_after_closing_or_releasing() {
    let path = temp_path("lazy");
    let sid = {
        let store = open(&path);
        let s = store.create_session_for_turn("lazy", NOW).unwrap();
        store.put_turn(&s.id, 1, r#"{"turn":1}"#).unwrap();
        s.id
        // dropped: redb's clean shutdown writes the lazy commits
    };
    let mut store = open(&path);
    assert_eq!(store.session(&sid).unwrap().title, "lazy");
    assert_eq!(
        store.turn(&sid, 1).unwrap().as_deref(),
        Some(r#"{"turn":1}"#)
    );
    store.share(std::time::Duration::from_secs(1));
    store.put_turn(&sid, 2, r#"{"turn":2}"#).unwrap();
    store.release();
    // Another process (here: a second handle) reads the file as released.
    let other = open(&path);
    assert_eq!(
        other.turn(&sid, 2).unwrap().as_deref(),
        Some(r#"{"turn":2}"#)
    );
}

#[test]
fn a_memory_without_any_keyword_is_not_written_back_at_every_open() {
    let tokenizer = evolve_core::text::FallbackTokenizer;
    let mut m = mem("ok", Category::General);
    m.refresh_derived(&tokenizer);
    assert!(m.keywords.is_empty(), "\"ok\" has no keyword");
    assert!(!super::memories::refresh(&mut m, &tokenizer));
    let mut stale = mem("the garden needs water", Category::Fact);
    stale.keywords_version = 0;
    assert!(super::memories::refresh(&mut stale, &tokenizer));
    assert!(!stale.keywords.is_empty());
    assert!(
        !super::memories::refresh(&mut stale, &tokenizer),
        "refreshed once"
    );
}

/// The child half of `an_abort_right_after_a_write_loses_nothing`: writes, then aborts
/// the process (no destructor, no flush), like kill -9 after the acknowledgement.
#[test]
#[ignore = "run by an_abort_right_after_a_write_loses_nothing in a child process"]
fn abort_child() {
    let Some(path) = std::env::var_os("EVOLVE_STORE_ABORT_CHILD") else {
        return;
    };
    let store = open(Path::new(&path));
    ingest(&store, mem("acknowledged before the crash", Category::Fact));
    // Created without waiting for the disk, as a turn does: the messages' durable
    // commit carries it.
    let s = store.create_session_for_turn("crash", NOW).unwrap();
    store
        .append_messages(
            &s.id,
            1,
            &[Message::user("q"), Message::assistant("a")],
            NOW,
            true,
        )
        .unwrap();
    std::process::abort();
}

#[test]
fn an_abort_right_after_a_write_loses_nothing() {
    let path = temp_path("abort");
    // Spawned as a child evolve knows: a shell test's sweep meanwhile leaves it alone.
    let status = crate::sandbox::reaper::output(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "store::tests::abort_child",
                "--ignored",
                "--nocapture",
            ])
            .env("EVOLVE_STORE_ABORT_CHILD", &path),
    )
    .expect("the test binary runs");
    assert!(!status.status.success(), "the child aborted");
    let store = open(&path);
    let contents: Vec<String> =
        store.with_memories(|ms| ms.iter().map(|m| m.content.clone()).collect());
    assert_eq!(contents, vec!["acknowledged before the crash".to_string()]);
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].messages, 2);
    assert_eq!(store.messages(&sessions[0].id, 0).unwrap().len(), 2);
}

#[test]
fn a_second_open_of_the_same_file_says_another_evolve_may_be_running() {
    let path = temp_path("locked");
    let _first = open(&path);
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(text.contains("another evolve"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
}

#[test]
fn foreign_files_and_newer_schemas_are_refused_with_what_to_do() {
    let path = temp_path("foreign");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "this is a text file, not a database\n".repeat(200)).unwrap();
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.contains("not an evolve store") && text.contains("move it aside"),
        "{text}"
    );

    let path = temp_path("newer");
    drop(open(&path));
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert(SCHEMA_VERSION_KEY, 42)
            .unwrap();
        txn.commit().unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a newer store is not touched"
    );
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 42,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("upgrade evolve"), "{err}");

    // The same file as a newer evolve leaves it, sealed: not touched either.
    super::open::seal(&path);
    let before = std::fs::read(&path).unwrap();
    let dry_runs = super::open::DRY_RUNS.with(|n| n.get());
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    if fine_grained_timestamps() {
        assert_eq!(super::open::DRY_RUNS.with(|n| n.get()), dry_runs, "sealed");
    }
    assert!(
        matches!(err, StoreError::TooNew { found: 42, .. }),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a sealed newer store is not touched"
    );
}

#[test]
fn ingest_inserts_merges_and_refuses_exact_duplicates() {
    let path = temp_path("ingest");
    let store = open(&path);
    let Ingested::Inserted(tea) = ingest(&store, mem("user likes green tea", Category::Preference))
    else {
        panic!()
    };
    let Ingested::Inserted(pi) =
        ingest(&store, mem("the server is a raspberry pi", Category::Fact))
    else {
        panic!()
    };
    assert_ne!(tea, pi);

    // Same text, other case and spacing: a duplicate, nothing new stored.
    assert_eq!(
        ingest(&store, mem("User likes  GREEN tea", Category::Preference)),
        Ingested::Duplicate(tea)
    );
    // A duplicate that carries a pin and a tag reinforces the stored copy, whose text
    // and category stay.
    let mut pinned = mem("User  likes green tea!", Category::General);
    pinned.content = "User  likes green tea".into();
    pinned.pinned = true;
    pinned.tags = vec!["drinks".into()];
    assert_eq!(ingest(&store, pinned), Ingested::Duplicate(tea));
    let stored = store.memory(tea).unwrap();
    assert!(stored.pinned);
    assert_eq!(stored.tags, vec!["drinks".to_string()]);
    assert_eq!(
        (stored.content.as_str(), stored.category),
        ("user likes green tea", Category::Preference)
    );

    // A restatement merges: the longer text and the more binding priority win.
    let mut restated = mem("user likes green tea without sugar", Category::Preference);
    restated.priority = Priority::Critical;
    assert_eq!(ingest(&store, restated), Ingested::Merged(tea));
    let merged = store.memory(tea).unwrap();
    assert_eq!(merged.content, "user likes green tea without sugar");
    assert_eq!(merged.priority, Priority::Critical);
    assert_eq!(live_ids(&store), vec![tea, pi]);

    // The cache and the file agree after reopening.
    let cached: Vec<Memory> = store.with_memories(|ms| ms.to_vec());
    drop(store);
    let store = open(&path);
    assert_eq!(store.with_memories(|ms| ms.to_vec()), cached);
}

#[test]
fn critical_memories_over_the_cap_soft_delete_the_oldest_in_the_same_write() {
    let store = open(&temp_path("cap"));
    let cfg = MemoryConfig {
        critical_cap: 3,
        ..MemoryConfig::default()
    };
    let words = ["alpha", "bravo", "charlie", "delta", "echo"];
    let mut ids = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let mut m = Memory::new(
            format!("always {w} {w}{i}"),
            Category::Instruction,
            NOW + i as i64,
            &FallbackTokenizer,
        );
        m.keywords = Default::default(); // recomputed by the store
        match store
            .ingest_memory(m, &cfg, NOW + 10, &FallbackTokenizer)
            .unwrap()
        {
            Ingested::Inserted(id) => ids.push(id),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        live_ids(&store),
        ids[2..].to_vec(),
        "the two oldest left the cache"
    );
    for &old in &ids[..2] {
        let m = store.memory(old).unwrap();
        assert!(m.deleted, "#{old} is soft-deleted, still in the file");
    }
    assert!(store.with_memories(|ms| ms.iter().all(|m| !m.keywords.is_empty())));
    assert_eq!(store.all_memories().unwrap().len(), 5);
}

#[test]
fn an_ingest_decays_old_critical_memories_before_the_cap_so_they_are_demoted_not_deleted() {
    let store = open(&temp_path("cap-decay"));
    let cfg = MemoryConfig {
        critical_cap: 2,
        ..MemoryConfig::default()
    };
    let rule = |text: &str, age: Timestamp| {
        Memory::new(text, Category::Instruction, NOW - age, &FallbackTokenizer)
    };
    let mut ids = Vec::new();
    for m in [
        rule("never store passwords in plain text", 40 * DAY),
        rule("always lock the door", DAY),
        rule("water the plants on sunday", 0),
    ] {
        match store
            .ingest_memory(m, &cfg, NOW, &FallbackTokenizer)
            .unwrap()
        {
            Ingested::Inserted(id) => ids.push(id),
            other => panic!("{other:?}"),
        }
    }
    let stored: Vec<(Priority, bool)> = ids
        .iter()
        .map(|&id| store.memory(id).map(|m| (m.priority, m.deleted)).unwrap())
        .collect();
    assert_eq!(
        stored,
        vec![
            (Priority::High, false),
            (Priority::Critical, false),
            (Priority::Critical, false)
        ]
    );
    assert_eq!(live_ids(&store), ids);
}

#[test]
fn ids_are_never_reused_and_unknown_ids_are_named() {
    let store = open(&temp_path("ids"));
    let a = store
        .insert_memory(mem("first", Category::General))
        .unwrap();
    let b = store
        .insert_memory(mem("second", Category::General))
        .unwrap();
    store.remove_memory(b).unwrap();
    let c = store
        .insert_memory(mem("third", Category::General))
        .unwrap();
    assert!(a < b && b < c, "{a} {b} {c}");
    for err in [
        store.memory(b).unwrap_err(),
        store.remove_memory(b).unwrap_err(),
        store
            .update_memory(&Memory {
                id: 99,
                ..mem("x", Category::General)
            })
            .unwrap_err(),
    ] {
        assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
        assert!(err.to_string().contains("evolve memory list"), "{err}");
    }
}

#[test]
fn update_soft_delete_and_mark_accessed_reach_file_and_cache() {
    let path = temp_path("update");
    let store = open(&path);
    let a = store
        .insert_memory(mem("the cat is called Tom", Category::Fact))
        .unwrap();
    let b = store
        .insert_memory(mem("the dog is called Rex", Category::Fact))
        .unwrap();
    store.mark_accessed(&[a, b, 12345], NOW + 5).unwrap();
    assert!(store.with_memories(|ms| ms.iter().all(|m| m.last_accessed_at == Some(NOW + 5))));

    let mut m = store.memory(a).unwrap();
    m.deleted = true;
    store.update_memory(&m).unwrap();
    assert_eq!(live_ids(&store), vec![b]);
    drop(store);
    let store = open(&path);
    assert_eq!(live_ids(&store), vec![b]);
    assert_eq!(store.memory(b).unwrap().last_accessed_at, Some(NOW + 5));
}

#[test]
fn concurrent_writers_lose_nothing() {
    let store = open(&temp_path("threads"));
    let store = &store;
    let words = ["apple", "banana", "cherry", "damson"];
    std::thread::scope(|s| {
        for (t, w) in words.iter().enumerate() {
            s.spawn(move || {
                for i in 0..5 {
                    let m = mem(&format!("{w}{i} thread{t}x{i}"), Category::General);
                    ingest(store, m);
                }
            });
        }
        let session = store.create_session("parallel", NOW).unwrap();
        s.spawn(move || {
            for turn in 1..=5 {
                store
                    .append_messages(&session.id, turn, &[Message::user("q")], NOW, true)
                    .unwrap();
            }
        });
    });
    assert_eq!(live_ids(store).len(), 20);
    let all = store.all_memories().unwrap();
    assert_eq!(all.len(), 20);
    assert_eq!(store.sessions().unwrap()[0].messages, 5);
}

#[test]
fn messages_get_sequence_numbers_and_update_their_session() {
    let store = open(&temp_path("messages"));
    let s = store.create_session("", NOW).unwrap();
    assert!(s.id.starts_with('s') && s.id.len() == 13);
    let turn1 = [
        Message::user("what time is it in a very long question that goes on and on and on beyond sixty characters"),
        Message::assistant_calls("", vec![call("c1", "get_time", "{}")]),
        Message::tool_result("c1", "get_time", "12:00"),
        Message::assistant("noon"),
    ];
    let stored = store
        .append_messages(&s.id, 1, &turn1, NOW + 1, true)
        .unwrap();
    assert_eq!(
        stored.iter().map(|m| m.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    let stored = store
        .append_messages(&s.id, 2, &[Message::user("thanks")], NOW + 2, false)
        .unwrap();
    assert_eq!(stored[0].seq, 4);

    let got = store.session(&s.id).unwrap();
    assert_eq!((got.messages, got.turns, got.updated_at), (5, 1, NOW + 2));
    assert!(got.title.starts_with("what time is it"), "{}", got.title);
    assert!(got.title.chars().count() <= 60, "{}", got.title);

    let all = store.messages(&s.id, 0).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[1].message.tool_calls[0].name, "get_time");
    assert_eq!(store.messages(&s.id, 2).unwrap().len(), 1);

    store.rename_session(&s.id, "Time").unwrap();
    assert_eq!(store.session(&s.id).unwrap().title, "Time");
    let err = store
        .append_messages("s000000000000", 1, &[Message::user("x")], NOW, true)
        .unwrap_err();
    assert!(err.to_string().contains("s000000000000"), "{err}");
}

#[test]
fn a_model_title_never_overwrites_the_users_and_notes_go_with_their_session() {
    let path = temp_path("titles");
    let store = open(&path);
    let s = store
        .create_session("please fix the build of my", NOW)
        .unwrap();
    assert!(store.set_model_title(&s.id, "Fix the build").unwrap());
    let got = store.session(&s.id).unwrap();
    assert_eq!(
        (got.title.as_str(), got.title_from),
        ("Fix the build", TitleFrom::Model)
    );
    store.rename_session(&s.id, "Mine").unwrap();
    assert!(!store.set_model_title(&s.id, "Another").unwrap(), "refused");
    assert_eq!(store.session(&s.id).unwrap().title, "Mine");

    assert_eq!(store.tool_chain(&s.id).unwrap(), None);
    store
        .set_tool_chain(&s.id, "- shell(make): failed")
        .unwrap();
    drop(store);
    let store = open(&path);
    assert_eq!(
        store.session(&s.id).unwrap().title_from,
        TitleFrom::User,
        "kept on disk"
    );
    assert_eq!(
        store.tool_chain(&s.id).unwrap().as_deref(),
        Some("- shell(make): failed")
    );
    let export = store.export().unwrap();
    assert_eq!(
        export.sessions[0].tool_chain.as_deref(),
        Some("- shell(make): failed")
    );
    let copy = open(&temp_path("titles-copy"));
    copy.import(&export, &FallbackTokenizer).unwrap();
    assert_eq!(
        copy.tool_chain(&s.id).unwrap().as_deref(),
        Some("- shell(make): failed")
    );
    assert_eq!(copy.session(&s.id).unwrap().title, "Mine");
    store.remove_session(&s.id).unwrap();
    assert_eq!(
        store.tool_chain(&s.id).unwrap(),
        None,
        "removed with the session"
    );
    assert!(
        store.set_tool_chain("s000000000000", "x").is_err(),
        "no such session"
    );
}

#[test]
fn sessions_are_listed_most_recent_first() {
    let store = open(&temp_path("order"));
    let a = store.create_session("a", NOW).unwrap();
    let b = store.create_session("b", NOW + 10).unwrap();
    store
        .append_messages(&a.id, 1, &[Message::user("again")], NOW + 20, true)
        .unwrap();
    let ids: Vec<String> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, vec![a.id, b.id]);
}

#[test]
fn removing_a_session_removes_everything_it_owns_and_nothing_else() {
    let store = open(&temp_path("remove"));
    let gone = store.create_session("gone", NOW).unwrap();
    let kept = store.create_session("kept", NOW).unwrap();
    for s in [&gone, &kept] {
        let id = s.id.as_str();
        store
            .append_messages(
                id,
                1,
                &[Message::user("q"), Message::assistant("a")],
                NOW,
                true,
            )
            .unwrap();
        let ring = L2Ring::from_entries(vec![L2Entry {
            user: "q".into(),
            assistant: "a".into(),
            ..Default::default()
        }]);
        store.set_l2(id, &ring, Some("summary")).unwrap();
        store
            .add_evaluation(&Evaluation {
                session: id.into(),
                turn: 1,
                score: 0.75,
                reason: "fine".into(),
                at: NOW,
            })
            .unwrap();
        store
            .add_grant(
                id,
                &evolve_core::permission::Grant {
                    tool: "write_file".into(),
                    command: None,
                    level: Level::L3,
                    definition: None,
                },
            )
            .unwrap();
        let pending = PendingCall::new("c1", "write_file", "{}", Level::L3, NOW).unwrap();
        store.set_pending(id, &[pending]).unwrap();
        store.put_turn(id, 1, r#"{"reply":"a"}"#).unwrap();
        store
            .set_todos(
                id,
                &[Todo {
                    id: 1,
                    text: "t".into(),
                    done: false,
                }],
            )
            .unwrap();
    }
    store.remove_session(&gone.id).unwrap();

    let g = gone.id.as_str();
    assert!(matches!(store.session(g), Err(StoreError::NotFound(_))));
    assert!(matches!(store.messages(g, 0), Err(StoreError::NotFound(_))));
    assert!(store.l2(g).unwrap().is_empty());
    assert_eq!(store.l3(g).unwrap(), None);
    assert!(store.evaluations(g).unwrap().is_empty());
    assert!(store.grants(g).unwrap().is_empty());
    assert!(store.pending(g).unwrap().is_empty());
    assert_eq!(store.turn(g, 1).unwrap(), None);
    assert!(store.todos(g).unwrap().is_empty());
    assert!(matches!(
        store.remove_session(g),
        Err(StoreError::NotFound(_))
    ));

    let k = kept.id.as_str();
    assert_eq!(store.messages(k, 0).unwrap().len(), 2);
    assert_eq!(store.l2(k).unwrap().len(), 1);
    assert_eq!(store.l3(k).unwrap().as_deref(), Some("summary"));
    assert_eq!(store.evaluations(k).unwrap()[0].score, 0.75);
    assert!(store.grants(k).unwrap().contains("write_file"));
    assert_eq!(store.pending(k).unwrap().len(), 1);
    assert_eq!(
        store.turn(k, 1).unwrap().as_deref(),
        Some(r#"{"reply":"a"}"#)
    );
    assert_eq!(store.todos(k).unwrap().len(), 1);

    // Nothing can be attached to a session that does not exist.
    assert!(matches!(
        store.set_l2(g, &L2Ring::new(), Some("x")),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.put_turn(g, 2, "{}"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn export_then_import_into_an_empty_store_reproduces_it() {
    let source = open(&temp_path("export-src"));
    let tea = match ingest(&source, mem("user likes green tea", Category::Preference)) {
        Ingested::Inserted(id) => id,
        other => panic!("{other:?}"),
    };
    let mut old = mem("the backup runs nightly", Category::Fact);
    old.expires_at = Some(NOW + DAY);
    old.tags = vec!["ops".into()];
    old.embedding = Some(vec![0.25, -0.5, 0.125]);
    let backup = source.insert_memory(old).unwrap();
    let mut gone = source.memory(tea).unwrap();
    gone.id = 0;
    gone.content = "forgotten".into();
    gone.deleted = true;
    source.insert_memory(gone).unwrap();
    source.mark_accessed(&[backup], NOW + 3).unwrap();

    let s = source.create_session("tools", NOW).unwrap();
    source
        .append_messages(
            &s.id,
            1,
            &[
                Message::user("read the notes"),
                Message::assistant_calls(
                    "let me look",
                    vec![call("c1", "read_file", r#"{"path":"notes.md"}"#)],
                ),
                Message::tool_result("c1", "read_file", "line one\nline two"),
                Message::assistant("they say two lines"),
            ],
            NOW + 1,
            true,
        )
        .unwrap();
    let ring = L2Ring::from_entries(vec![L2Entry {
        user: "read the notes".into(),
        assistant: "they say two lines".into(),
        thinking: "let me look".into(),
        files: vec!["notes.md".into()],
        turn: 0,
    }]);
    source
        .set_l2(&s.id, &ring, Some("the user keeps notes"))
        .unwrap();
    source
        .add_evaluation(&Evaluation {
            session: s.id.clone(),
            turn: 1,
            score: 0.83,
            reason: "answered from the file".into(),
            at: NOW + 2,
        })
        .unwrap();
    source.create_session("empty", NOW + 5).unwrap();

    let export = source.export().unwrap();
    assert_eq!(export.memories.len(), 3);
    assert_eq!(export.sessions.len(), 2);
    // Through JSON text, as `memory export` writes it.
    let text = serde_json::to_string_pretty(&export).unwrap();
    let parsed: Export = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, export);

    let path = temp_path("export-dst");
    let target = open(&path);
    assert_eq!(target.import(&parsed, &FallbackTokenizer).unwrap(), (3, 2));
    assert_eq!(target.export().unwrap(), export);
    assert_eq!(live_ids(&target), live_ids(&source));
    drop(target);
    let target = open(&path);
    assert_eq!(target.export().unwrap(), export);
    // New ids continue after the imported ones.
    let next = target.insert_memory(mem("new", Category::General)).unwrap();
    assert!(export.memories.iter().all(|m| m.id < next));
}

#[test]
fn import_recomputes_missing_keywords_and_numbers_memories_without_ids() {
    let store = open(&temp_path("import-plain"));
    let plain: Memory = serde_json::from_str(r#"{"content":"likes green tea"}"#).unwrap();
    let export = Export {
        schema_version: SCHEMA_VERSION,
        memories: vec![plain.clone(), plain],
        sessions: Vec::new(),
    };
    assert_eq!(store.import(&export, &FallbackTokenizer).unwrap(), (2, 0));
    let ms = store.with_memories(|ms| ms.to_vec());
    assert_eq!(ms.iter().map(|m| m.id).collect::<Vec<_>>(), vec![1, 2]);
    assert!(ms
        .iter()
        .all(|m| m.keywords.len() == 3 && m.content_hash != 0));
}

#[test]
fn another_programs_redb_file_is_refused_and_not_taken_over() {
    let path = temp_path("other-redb");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        const THEIRS: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("cookies");
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(THEIRS).unwrap().insert("a", "b").unwrap();
        txn.commit().unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
    assert!(err.to_string().contains("cookies"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// What `kill -9` leaves: the file as it is while a store has it open, after a commit
/// (the page cache holds every write that returned). Copied aside while open, the copy
/// is that file.
fn crashed_copy(name: &str) -> (PathBuf, MemoryId) {
    let path = temp_path(name);
    let store = open(&path);
    let id = store
        .insert_memory(mem("acknowledged before the crash", Category::Fact))
        .unwrap();
    let copy = path.with_file_name("crashed.redb");
    std::fs::copy(&path, &copy).unwrap();
    drop(store);
    (copy, id)
}

#[test]
fn a_store_left_open_by_a_crash_is_repaired_with_every_commit() {
    let (path, id) = crashed_copy("crash-repair");
    let head = std::fs::read(&path).unwrap();
    assert_ne!(head[9] & 2, 0, "the copy is marked as left open");
    let store = open(&path);
    assert_eq!(
        store.memory(id).unwrap().content,
        "acknowledged before the crash"
    );
    store
        .insert_memory(mem("and after", Category::Fact))
        .unwrap();
    drop(store);
    assert_eq!(live_ids(&open(&path)).len(), 2);
}

#[test]
fn a_crashed_store_that_cannot_be_repaired_is_left_as_it_was() {
    let (path, _) = crashed_copy("crash-damaged");
    let mut bytes = std::fs::read(&path).unwrap();
    for page in (4096..bytes.len()).step_by(4096) {
        bytes[page..page + 4096].fill(0xff);
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    assert!(err.to_string().contains("move it aside"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the repair was not tried on it"
    );
}

/// Damage anywhere in a store, closed cleanly or left open by a crash: opening it never
/// panics and never writes to a file it refuses; a file it opens (the damage was in
/// pages no longer used) reads whole, without a panic either.
#[test]
fn random_damage_is_refused_without_a_panic_or_a_write() {
    let path = temp_path("random-damage");
    let crashed = {
        let store = open(&path);
        for i in 0..40 {
            store
                .insert_memory(mem(&format!("fact {i} about pears"), Category::Fact))
                .unwrap();
        }
        let session = store.create_session("talk", NOW).unwrap();
        for turn in 1..=10 {
            let m = Message::user(format!("question {turn} {}", "x".repeat(300)));
            store
                .append_messages(&session.id, turn, &[m], NOW, true)
                .unwrap();
        }
        std::fs::read(&path).unwrap()
    };
    let clean = std::fs::read(&path).unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut refused, mut opened) = (0, 0);
    for round in 0..120 {
        let mut bytes = if round % 3 == 0 {
            crashed.clone()
        } else {
            clean.clone()
        };
        let pages = bytes.len() / 4096;
        for _ in 0..1 + next() % 3 {
            // A whole page, or a few bytes, of garbage, zeros or 0xff; never the header
            // page (its own checks have their own table).
            let page = 1 + (next() as usize % (pages - 1));
            let (at, n) = match next() % 3 {
                0 => (page * 4096, 4096),
                _ => (
                    page * 4096 + next() as usize % 4000,
                    1 + next() as usize % 64,
                ),
            };
            let fill = next() % 3;
            for b in &mut bytes[at..at + n] {
                *b = match fill {
                    0 => next() as u8,
                    1 => 0,
                    _ => 0xff,
                };
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| match Store::open(&path, &FallbackTokenizer) {
            Ok(store) => {
                let _ = store.export();
                let _ = store.sessions();
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        });
        match outcome {
            Err(_) => panic!("round {round}: a panic on a damaged store"),
            Ok(Ok(())) => opened += 1,
            Ok(Err(message)) => {
                refused += 1;
                assert!(
                    message.contains("move it aside"),
                    "round {round}: {message}"
                );
                assert!(
                    std::fs::read(&path).unwrap() == bytes,
                    "round {round}: a refused file was written to ({message})"
                );
            }
        }
    }
    eprintln!("random damage: {refused} refused, {opened} opened");
    assert!(
        refused > 20,
        "{refused} of 120 refused: the damage missed the pages in use"
    );
}

/// Whether this kernel gives a change right after a look at a file's times a time of
/// its own (Linux 6.13's fine-grained timestamps). Where it does not, a seal written in
/// the same clock tick as the store's last change is not trusted (the store is checked
/// instead), so whether an open is sealed depends on timing.
fn fine_grained_timestamps() -> bool {
    let path = temp_path("timestamps");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "a").unwrap();
    let ctime = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).unwrap();
        (m.ctime(), m.ctime_nsec())
    };
    (0..3).all(|_| {
        let before = ctime(&path);
        std::fs::write(&path, "b").unwrap();
        ctime(&path) != before
    })
}

#[test]
fn a_store_evolve_closed_is_not_read_whole_again_until_something_else_writes_it() {
    if !fine_grained_timestamps() {
        eprintln!(
            "skipped: this kernel's file times are coarse, so a seal is often not trusted \
             (the store is checked instead): nothing to measure"
        );
        return;
    }
    let dry_runs = || super::open::DRY_RUNS.with(|n| n.get());
    let path = temp_path("sealed");
    drop(open(&path));
    let first = dry_runs();
    {
        let store = open(&path);
        assert_eq!(dry_runs(), first, "sealed when it was closed");
        store.insert_memory(mem("kept", Category::Fact)).unwrap();
    }
    drop(open(&path));
    assert_eq!(dry_runs(), first, "sealed again after a write");

    // A shared store let go of while waiting, and opened again.
    let mut store = open(&path);
    store.share(std::time::Duration::from_secs(1));
    store.release();
    assert_eq!(live_ids(&store).len(), 1);
    assert_eq!(dry_runs(), first, "reopened without a check");
    drop(store);

    // Written by something else since (the same length, a page of zeros): checked.
    let mut bytes = std::fs::read(&path).unwrap();
    for page in (4096..bytes.len()).step_by(4096) {
        bytes[page..page + 4096].fill(0);
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Store::open(&path, &FallbackTokenizer)
        .err()
        .expect("refused");
    assert_eq!(dry_runs(), first + 1);
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_new_store_is_private_and_nothing_is_left_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    let path = temp_path("new-private");
    drop(open(&path));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [".evolve.redb.closed", "evolve.redb"],
        "the store and its seal"
    );
    let seal = path.with_file_name(".evolve.redb.closed");
    let mode = std::fs::metadata(seal).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_damaged_record_is_named_and_the_rest_stays_usable() {
    let path = temp_path("corrupt");
    let good = {
        let store = open(&path);
        let id = store
            .insert_memory(mem("still fine", Category::Fact))
            .unwrap();
        store.create_session("fine", NOW).unwrap();
        id
    };
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(MEMORIES)
            .unwrap()
            .insert(77, "{not json")
            .unwrap();
        txn.open_table(SESSIONS)
            .unwrap()
            .insert("sbroken", "[]")
            .unwrap();
        txn.commit().unwrap();
    }
    let store = open(&path);
    assert_eq!(
        live_ids(&store),
        vec![good],
        "the damaged memory is skipped"
    );
    let err = store.memory(77).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(text.contains("`memories`") && text.contains("77"), "{text}");
    let err = store.sessions().unwrap_err().to_string();
    assert!(
        err.contains("`sessions`") && err.contains("sbroken"),
        "{err}"
    );
    // Writes elsewhere still work.
    store.insert_memory(mem("new", Category::General)).unwrap();
}

#[test]
fn prompts_style_notes_tool_classes_and_the_audit_log() {
    let path = temp_path("prompts");
    let store = open(&path);
    assert_eq!(store.active_prompt().unwrap(), None);
    assert_eq!(
        store
            .add_prompt_version("be brief", "initial", NOW)
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .add_prompt_version("be brief and kind", "evolved", NOW + 1)
            .unwrap(),
        2
    );
    assert_eq!(store.active_prompt().unwrap().unwrap().version, 2);
    store.activate_prompt(1).unwrap();
    assert_eq!(store.active_prompt().unwrap().unwrap().text, "be brief");
    let err = store.activate_prompt(9).unwrap_err().to_string();
    assert!(err.contains("version 9"), "{err}");
    assert_eq!(store.prompt_versions().unwrap().len(), 2);
    // Back to the built-in prompt: nothing active, every version kept, and any of them
    // can be made active again.
    store.activate_builtin_prompt().unwrap();
    assert_eq!(store.active_prompt().unwrap(), None);
    assert_eq!(store.prompt_versions().unwrap().len(), 2);
    store.activate_prompt(1).unwrap();
    assert_eq!(store.active_prompt().unwrap().unwrap().version, 1);

    store
        .set_style_notes(&["short sentences".into(), "use lists".into()])
        .unwrap();
    assert_eq!(
        store.style_notes().unwrap(),
        vec!["short sentences", "use lists"]
    );

    let class = ToolClassRecord {
        level: Level::L2,
        fingerprint: 7,
        definition: None,
        source: "classifier".into(),
        at: NOW,
    };
    store.set_tool_class("fs__read", &class).unwrap();
    assert_eq!(store.tool_class("fs__read").unwrap(), Some(class));
    assert_eq!(store.tool_class("other").unwrap(), None);

    let entries: Vec<AuditEntry> = (0..5)
        .map(|i| {
            serde_json::from_value(serde_json::json!({
                "at": NOW + i, "session": "s1", "tool": format!("t{i}"), "level": 1,
                "decision": "run", "source": "built_in"
            }))
            .expect("an audit entry")
        })
        .collect();
    store.audit(&entries[..3]).unwrap();
    store.audit(&entries[3..]).unwrap();
    let last: Vec<String> = store
        .audit_log(2)
        .unwrap()
        .into_iter()
        .map(|e| e.tool)
        .collect();
    assert_eq!(last, vec!["t3", "t4"]);
    assert_eq!(store.audit_log(100).unwrap().len(), 5);

    drop(store);
    let store = open(&path);
    assert_eq!(store.active_prompt().unwrap().unwrap().version, 1);
}

#[test]
fn a_released_store_sees_what_another_process_wrote_and_keeps_its_cache_otherwise() {
    let path = temp_path("shared");
    let mut a = open(&path);
    a.share(std::time::Duration::from_secs(5));
    let first = a
        .insert_memory(mem("tea in the morning", Category::Preference))
        .unwrap();

    // Released with nothing changed: reopened on use, the same memories.
    a.release();
    assert_eq!(a.with_memories(|ms| ms.len()), 1);

    // Released while another evolve (the file is free, so another handle can open it)
    // adds a memory: the next use reloads.
    a.release();
    {
        let b = open(&path);
        b.insert_memory(mem("coffee after lunch", Category::Preference))
            .unwrap();
    }
    let ids = a.with_memories(|ms| ms.iter().map(|m| m.id).collect::<Vec<_>>());
    assert_eq!(ids.len(), 2, "the other writer's memory is seen: {ids:?}");
    assert!(ids.contains(&first));
    // And this store writes on after it.
    a.insert_memory(mem("water all day", Category::Preference))
        .unwrap();
    drop(a);
    assert_eq!(open(&path).with_memories(|ms| ms.len()), 3);
}

#[test]
fn a_store_that_is_not_shared_ignores_release() {
    let path = temp_path("unshared");
    let a = open(&path);
    a.release();
    // Still open: another handle cannot take the file.
    assert!(Store::open(&path, &FallbackTokenizer).is_err());
}

#[test]
fn a_lent_store_closes_its_file_and_its_uses_wait_for_the_lend_to_end() {
    let path = temp_path("lent");
    // Not shared (as serve's): a lend closes it all the same.
    let a = std::sync::Arc::new(open(&path));
    a.insert_memory(mem("tea in the morning", Category::Preference))
        .unwrap();
    let lend = a.lend("`evolve test` (pid 1)".into());
    let b = open(&path);
    b.insert_memory(mem("coffee after lunch", Category::Preference))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::sync::Arc::clone(&a);
    std::thread::spawn(move || {
        let _ = tx.send(reader.with_memories(|ms| ms.len()));
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(rx.try_recv().is_err(), "a use waits while the file is lent");
    drop(b);
    drop(lend);
    let seen = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the use goes on once the lend ends");
    assert_eq!(seen, 2, "the borrower's memory is seen");
}

#[test]
fn a_use_that_waits_too_long_for_a_lend_fails_naming_the_borrower() {
    let path = temp_path("lent-long");
    let mut a = open(&path);
    a.share(std::time::Duration::from_millis(100));
    let a = std::sync::Arc::new(a);
    let _lend = a.lend("`evolve chat` (pid 7)".into());
    let err = a.all_memories().unwrap_err();
    assert!(matches!(err, StoreError::Lent { .. }), "{err:?}");
    assert!(
        err.to_string().contains("lent to `evolve chat` (pid 7)"),
        "{err}"
    );
}

#[test]
fn a_borrowing_store_asks_when_the_file_is_held_and_gives_the_lease_back_after_closing() {
    let path = temp_path("borrow");
    let holder = std::sync::Arc::new(Mutex::new(None::<Store>));
    // The lease says, when dropped, whether the file was closed by then.
    struct Lease(std::path::PathBuf, std::sync::mpsc::Sender<bool>);
    impl Drop for Lease {
        fn drop(&mut self) {
            let _ = self
                .1
                .send(Store::open(&self.0, &FallbackTokenizer).is_ok());
        }
    }
    let (tx, given_back) = std::sync::mpsc::channel();
    let asked = std::sync::Arc::new(AtomicU32::new(0));
    let mut a = open(&path);
    a.share(std::time::Duration::from_secs(5));
    let (p, n, h) = (
        path.clone(),
        std::sync::Arc::clone(&asked),
        std::sync::Arc::clone(&holder),
    );
    a.borrow_with(
        Box::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
            drop(h.lock().unwrap().take()); // the holder lends: it closes the file
            Some(Box::new(Lease(p.clone(), tx.clone())) as super::Lease)
        }),
        None,
    );
    a.release();
    *holder.lock().unwrap() = Some(open(&path)); // someone else has it now
    a.insert_memory(mem("tea in the morning", Category::Preference))
        .unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked once the file was found held"
    );
    a.release();
    assert_eq!(
        given_back.recv_timeout(std::time::Duration::from_secs(5)),
        Ok(true),
        "the lease is dropped after the file is closed"
    );
    // Released with nobody holding the file: opened without asking.
    a.insert_memory(mem("coffee after lunch", Category::Preference))
        .unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

fn mcp_spec(name: &str, command: &str) -> crate::mcp_spec::ServerSpec {
    crate::mcp_spec::ServerSpec {
        name: name.into(),
        transport: crate::mcp_spec::Transport::Stdio {
            command: command.into(),
            args: vec!["--x".into()],
            env: vec![("K".into(), "v".into())],
            cwd: None,
        },
        timeout: std::time::Duration::from_secs(9),
        sandbox: Default::default(),
        trusted: true,
        enabled_tools: Some(vec!["a".into()]),
        disabled_tools: vec!["b".into()],
        disabled: false,
        roots: Vec::new(),
        source: crate::mcp_spec::SpecSource::ConfigFile,
    }
}

#[test]
fn mcp_servers_and_tool_lists_survive_reopening_and_go_with_their_server() {
    use crate::mcp_spec::{McpTool, SpecSource};
    let path = temp_path("mcp");
    let tool = |name: &str| McpTool {
        name: name.into(),
        description: format!("{name} things"),
        input_schema: "{\"type\":\"object\"}".into(),
        output_schema: None,
        annotations: Default::default(),
    };
    let class = |source: &str| ToolClassRecord {
        level: Level::L3,
        fingerprint: 1,
        definition: None,
        source: source.into(),
        at: NOW,
    };
    {
        let store = open(&path);
        assert!(store.mcp_servers().unwrap().is_empty());
        assert_eq!(store.mcp_tools("fs").unwrap(), None);
        store.put_mcp_server(&mcp_spec("fs", "fs-server")).unwrap();
        store
            .put_mcp_server(&mcp_spec("git", "git-server"))
            .unwrap();
        store.put_mcp_server(&mcp_spec("f", "f-server")).unwrap();
        store
            .set_mcp_tools("fs", &[tool("read"), tool("write")], NOW)
            .unwrap();
        store
            .set_tool_class("fs__read", &class(CLASS_BY_USER))
            .unwrap();
        store
            .set_tool_class("fs__write", &class(CLASS_BY_CLASSIFIER))
            .unwrap();
        // A server whose name starts like another's keeps its own classifications.
        store.set_tool_class("f__x", &class(CLASS_BY_USER)).unwrap();
    }
    let store = open(&path);
    let servers = store.mcp_servers().unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["f", "fs", "git"]);
    // Kept as given, with the store as its source.
    let mut want = mcp_spec("fs", "fs-server");
    want.source = SpecSource::Store;
    assert_eq!(servers[1], want);
    assert_eq!(store.mcp_server("fs").unwrap(), Some(want.clone()));
    let (tools, at) = store.mcp_tools("fs").unwrap().expect("cached");
    assert_eq!((tools, at), (vec![tool("read"), tool("write")], NOW));
    assert_eq!(
        store.tool_class("fs__read").unwrap(),
        Some(class(CLASS_BY_USER))
    );

    // Changing the flags keeps the tool list; another program drops it.
    let mut flags = want.clone();
    flags.disabled = true;
    store.put_mcp_server(&flags).unwrap();
    assert!(store.mcp_tools("fs").unwrap().is_some());
    store
        .put_mcp_server(&mcp_spec("fs", "other-server"))
        .unwrap();
    assert_eq!(store.mcp_tools("fs").unwrap(), None);

    store.set_mcp_tools("fs", &[tool("read")], NOW).unwrap();
    assert!(store.remove_mcp_server("fs").unwrap());
    assert!(!store.remove_mcp_server("fs").unwrap(), "already gone");
    assert_eq!(store.mcp_server("fs").unwrap(), None);
    assert_eq!(store.mcp_tools("fs").unwrap(), None);
    assert_eq!(store.tool_class("fs__read").unwrap(), None);
    assert_eq!(store.tool_class("fs__write").unwrap(), None);
    assert_eq!(
        store.tool_class("f__x").unwrap(),
        Some(class(CLASS_BY_USER))
    );
    assert!(store.remove_tool_class("f__x").unwrap());
    assert!(!store.remove_tool_class("f__x").unwrap());
}

#[test]
fn file_servers_hide_store_servers_of_the_same_name() {
    let dir = crate::testing::TempDir::new("mcp-load");
    let mut config = crate::config::Config::defaults(dir.path().to_path_buf());
    config.mcp.timeout = std::time::Duration::from_secs(42);
    config.mcp.servers = vec![mcp_spec("fs", "from-the-file")];
    let store = open(&dir.path().join("evolve.redb"));
    store
        .put_mcp_server(&mcp_spec("fs", "from-the-store"))
        .unwrap();
    let mut defaulted = mcp_spec("web", "web-server");
    defaulted.timeout = crate::mcp::servers::TIMEOUT_FROM_CONFIG;
    if let crate::mcp_spec::Transport::Stdio { args, .. } = &mut defaulted.transport {
        args.push(dir.path().to_string_lossy().into_owned());
    }
    store.put_mcp_server(&defaulted).unwrap();
    let servers = crate::mcp::servers::load(&config, &store).unwrap();
    let got: Vec<(&str, crate::mcp_spec::SpecSource, u64)> = servers
        .iter()
        .map(|s| (s.name.as_str(), s.source, s.timeout.as_secs()))
        .collect();
    use crate::mcp_spec::SpecSource::{ConfigFile, Store as Kept};
    assert_eq!(got, [("fs", ConfigFile, 9), ("web", Kept, 42)]);
    assert!(matches!(
        &servers[0].transport,
        crate::mcp_spec::Transport::Stdio { command, .. } if command == "from-the-file"
    ));
    // Roots of a run-time server: its existing absolute directories.
    assert_eq!(servers[1].roots, [dir.path().to_path_buf()]);
}

#[test]
fn a_turns_answer_is_its_last_assistant_message() {
    let store = open(&temp_path("turn-answer"));
    let s = store.create_session("t", NOW).unwrap();
    let id = s.id.as_str();
    let mut calling = Message::assistant("looking");
    calling.tool_calls = vec![call("c1", "get_time", "{}")];
    let turns: [&[Message]; 3] = [
        &[Message::user("one"), Message::assistant("first")],
        &[
            Message::user("two"),
            calling,
            Message::tool_result("c1", "get_time", "noon"),
            Message::assistant("second"),
        ],
        &[Message::user("three"), Message::assistant("third")],
    ];
    for (i, msgs) in turns.iter().enumerate() {
        store
            .append_messages(id, i as u64 + 1, msgs, NOW, true)
            .unwrap();
    }
    let answers: Vec<Option<String>> = (1..=4).map(|n| store.turn_answer(id, n).unwrap()).collect();
    assert_eq!(
        answers,
        [
            Some("first".to_string()),
            Some("second".to_string()),
            Some("third".to_string()),
            None
        ]
    );
}

#[test]
fn an_mcp_login_survives_reopening_whole_and_goes_with_its_server() {
    use crate::secret::Secret;
    use crate::store::McpLogin;
    let path = temp_path("mcp-login");
    let full = McpLogin {
        url: "https://mcp.example.com/mcp".into(),
        resource: "https://mcp.example.com/mcp".into(),
        issuer: "https://auth.example.com".into(),
        token_endpoint: "https://auth.example.com/token".into(),
        client_id: "client-1".into(),
        client_secret: Some(Secret::new("cs-1")),
        auth_method: "client_secret_basic".into(),
        registered_redirect: Some("http://127.0.0.1:4000/callback".into()),
        access_token: Some(Secret::new("at-1")),
        refresh_token: Some(Secret::new("rt-1")),
        expires_at: Some(NOW + 3600),
        scope: Some("a b".into()),
        wanted_scope: Some("a b c".into()),
        resource_metadata: Some(
            "https://mcp.example.com/.well-known/oauth-protected-resource".into(),
        ),
    };
    let bare = McpLogin {
        url: "http://127.0.0.1:1/mcp".into(),
        ..McpLogin::default()
    };
    {
        let store = open(&path);
        assert_eq!(store.mcp_login("remote").unwrap(), None);
        store.put_mcp_server(&mcp_spec("remote", "x")).unwrap();
        store.put_mcp_login("remote", &full).unwrap();
        store.put_mcp_login("file-server", &bare).unwrap();
    }
    let store = open(&path);
    assert_eq!(store.mcp_login("remote").unwrap(), Some(Box::new(full)));
    assert_eq!(
        store.mcp_login("file-server").unwrap(),
        Some(Box::new(bare))
    );
    assert!(store.remove_mcp_server("remote").unwrap());
    assert_eq!(
        store.mcp_login("remote").unwrap(),
        None,
        "gone with its server"
    );
    assert!(store.remove_mcp_login("file-server").unwrap());
    assert!(!store.remove_mcp_login("file-server").unwrap());
}

/// The questions of the branch shown.
fn shown_questions(store: &Store, sid: &str) -> Vec<String> {
    let session = store.session(sid).unwrap();
    let path = session.branches().shown_path();
    store
        .messages(sid, 0)
        .unwrap()
        .into_iter()
        .filter(|m| path.contains(&m.turn) && m.message.role == Role::User)
        .map(|m| m.message.content)
        .collect()
}

#[test]
fn a_turn_answered_again_is_a_version_and_the_choice_survives_reopening() {
    let path = temp_path("versions");
    let store = open(&path);
    let sid = store.create_session("fruit", NOW).unwrap().id;
    let turn = |n: u64, q: &str, replaces: Option<u64>| {
        let msgs = [Message::user(q), Message::assistant(format!("about {q}"))];
        store
            .append_turn(
                &sid,
                n,
                &msgs,
                &Default::default(),
                NOW,
                &L2Ring::new(),
                replaces,
            )
            .unwrap();
    };
    turn(1, "apples", None);
    turn(2, "bananas", None);
    turn(3, "plums", Some(1));
    assert_eq!(shown_questions(&store, &sid), ["plums"]);
    turn(4, "stones", None);
    assert_eq!(shown_questions(&store, &sid), ["plums", "stones"]);
    store.show_turn(&sid, 1).unwrap();
    assert_eq!(shown_questions(&store, &sid), ["apples", "bananas"]);
    drop(store);
    let store = open(&path);
    assert_eq!(shown_questions(&store, &sid), ["apples", "bananas"]);
    let s = store.session(&sid).unwrap();
    assert_eq!(s.branches().versions(1), [1, 3]);
    assert!(
        s.superseded.is_empty(),
        "no turn is marked replaced any more"
    );
    assert!(store.show_turn(&sid, 9).is_err());
}

#[test]
fn a_session_stored_before_versions_shows_the_replacement_as_the_last_version() {
    let path = temp_path("versions-old");
    let store = open(&path);
    let sid = store.create_session("old", NOW).unwrap().id;
    for (n, q) in [(1, "one"), (2, "two"), (3, "two again"), (4, "three")] {
        let msgs = [Message::user(q), Message::assistant("ok")];
        store
            .append_turn(
                &sid,
                n,
                &msgs,
                &Default::default(),
                NOW,
                &L2Ring::new(),
                None,
            )
            .unwrap();
    }
    // As an older build wrote it: no parents, turn 2 superseded by turn 3.
    let mut old = store.session(&sid).unwrap();
    old.parents.clear();
    old.shown.clear();
    old.superseded = vec![2];
    let raw = serde_json::to_string(&old).unwrap();
    assert!(!raw.contains("parents") && !raw.contains("shown"), "{raw}");
    let back: Session = serde_json::from_str(&raw).unwrap();
    assert_eq!(back.branches().shown_path(), [1, 3, 4]);
    assert_eq!(back.branches().versions(3), [2, 3]);
}

#[test]
fn what_a_turn_chose_is_kept_apart_from_its_messages_and_goes_with_the_session() {
    let path = temp_path("chosen");
    let store = open(&path);
    // A store that never kept anything reads nothing.
    let sid = store.create_session("tea", NOW).unwrap().id;
    assert!(store.chosen_since(&sid, 1).unwrap().is_empty());
    let context = Message::user(format!(
        "{}\n\n<memories>\nThe user likes tea\n</memories>",
        evolve_core::history::CONTEXT_HEADER
    ));
    let chosen = evolve_core::history::Chosen {
        messages: vec![context, Message::assistant("Noted.")],
        world: true,
    };
    for (n, kept) in [(1, &chosen), (2, &Default::default()), (3, &chosen)] {
        let msgs = [Message::user(format!("q{n}")), Message::assistant("a")];
        store
            .append_turn(&sid, n, &msgs, kept, NOW, &L2Ring::new(), None)
            .unwrap();
    }
    // The session's messages (what a person sees and exports) hold none of it.
    let messages = store.messages(&sid, 0).unwrap();
    assert_eq!(messages.len(), 6);
    assert!(messages
        .iter()
        .all(|m| !m.message.content.contains("likes tea")));
    // By turn, from the turn asked for; a turn that chose nothing is not listed.
    let kept = store.chosen_since(&sid, 2).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, 3);
    assert_eq!(kept[0].1, chosen);
    assert_eq!(store.chosen_since(&sid, 1).unwrap().len(), 2);
    // Removing the session removes it.
    store.remove_session(&sid).unwrap();
    assert!(store.chosen_since(&sid, 0).unwrap().is_empty());
}
