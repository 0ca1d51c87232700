//! Memory that follows a conversation, through the built binary: an import of dialog
//! turns links each turn to the one before it in its conversation (and importing it
//! again adds nothing); the reply that holds an answer is found through the question it
//! answers though it shares no word with what is asked; a question naming a speaker
//! puts that speaker's own turn above another's; `memory search --json` shows both
//! parts of a score; memories extracted from one session are linked in order; and a
//! store written before the links opens, keeps its memories and links new turns.

mod support;

use serde_json::{json, Value};
use support::{Reply, World, POST_TURN};

/// Writes `records` as an import file and imports it.
fn import(w: &World, name: &str, records: Value) -> String {
    let file = w.home.join(name);
    std::fs::create_dir_all(&w.home).unwrap();
    std::fs::write(&file, records.to_string()).unwrap();
    w.run(&["memory", "import", file.to_str().unwrap()])
        .expect(0)
        .stdout
}

fn list(w: &World) -> Vec<Value> {
    w.run(&["memory", "list", "--json"])
        .expect(0)
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The stored memory with this content.
fn stored<'a>(ms: &'a [Value], content: &str) -> &'a Value {
    ms.iter()
        .find(|m| m["content"] == content)
        .unwrap_or_else(|| panic!("{content:?} not stored: {ms:#?}"))
}

fn search(w: &World, query: &str) -> Value {
    w.run(&["memory", "search", "--json", query])
        .expect(0)
        .json()
}

fn chosen(doc: &Value) -> Vec<String> {
    doc["chosen"]
        .as_array()
        .expect("chosen")
        .iter()
        .map(|c| c["content"].as_str().unwrap().to_string())
        .collect()
}

fn turn(conversation: &str, speaker: &str, text: &str) -> Value {
    json!({"conversation": conversation, "speaker": speaker,
           "content": format!("{speaker}: {text}")})
}

/// Two interleaved conversations and a note that belongs to none.
fn two_conversations() -> Value {
    json!([
        turn("c1", "Mel", "So what instrument do you play these days?"),
        turn("c2", "Jon", "Did you see the match last night?"),
        turn("c1", "Anna", "The cello, since March."),
        {"content": "buy more green tea"},
        turn("c2", "Ravi", "Sure did, what a finish!"),
        turn("c1", "Mel", "Lovely, you should play for us sometime."),
    ])
}

#[test]
fn a_dialog_import_links_each_turn_to_the_one_before_in_its_conversation() {
    let w = World::without_model("dialog-import");
    let out = import(&w, "dialog.json", two_conversations());
    assert!(out.contains("imported 6 memories"), "{out}");
    let ms = list(&w);
    let id = |content: &str| stored(&ms, content)["id"].clone();
    let prev = |content: &str| stored(&ms, content)["prev"].clone();
    let first = "Mel: So what instrument do you play these days?";
    let reply = "Anna: The cello, since March.";
    assert_eq!(
        prev(first),
        Value::Null,
        "the first turn replies to nothing"
    );
    assert_eq!(prev(reply), id(first));
    assert_eq!(
        prev("Mel: Lovely, you should play for us sometime."),
        id(reply)
    );
    assert_eq!(
        prev("Ravi: Sure did, what a finish!"),
        id("Jon: Did you see the match last night?"),
        "the other conversation has its own chain"
    );
    assert_eq!(prev("buy more green tea"), Value::Null);
    assert_eq!(stored(&ms, reply)["speaker"], "Anna");
    // Importing the same file again adds nothing and links nothing anew.
    let again = import(&w, "dialog.json", two_conversations());
    assert!(again.contains("0 added"), "{again}");
    assert_eq!(list(&w), ms);
    // Another conversation where the same words answer another question, and another
    // speaker repeats them: a turn is a record of what was said, never merged into a
    // similar one (the ingest rule would merge these).
    let out = import(
        &w,
        "echo.json",
        json!([
            turn("c3", "Jon", "When did Anna start the cello?"),
            turn("c3", "Anna", "The cello, since March."),
            turn("c3", "Mel", "The cello, since March.")
        ]),
    );
    assert!(out.contains("3 added"), "{out}");
    let ms = list(&w);
    let echoes: Vec<&Value> = ms.iter().filter(|m| m["content"] == reply).collect();
    assert_eq!(echoes.len(), 2, "{ms:#?}");
    assert_ne!(echoes[0]["prev"], echoes[1]["prev"]);
    assert_eq!(
        stored(&ms, "Mel: The cello, since March.")["prev"],
        echoes[1]["id"]
    );
}

/// Mel asks, Anna answers with no word of the question; Anna says a lot else.
fn anna_chats(w: &World) {
    let mut turns = vec![
        turn("c1", "Mel", "Which instrument do you play these days?"),
        turn("c1", "Anna", "The cello, since March."),
    ];
    for (i, topic) in [
        "the weather was lovely",
        "my cat slept all day",
        "work was busy again",
        "the train was late",
        "I baked bread on Sunday",
        "we watched a film",
    ]
    .iter()
    .enumerate()
    {
        turns.push(turn("c1", "Mel", &format!("How was day {i}?")));
        turns.push(turn("c1", "Anna", topic));
    }
    import(w, "anna.json", Value::Array(turns));
}

#[test]
fn a_question_answered_in_the_reply_turn_finds_the_reply_before_the_speakers_other_turns() {
    let w = World::without_model("dialog-reply");
    anna_chats(&w);
    let answer = "Anna: The cello, since March.";
    for question in [
        "Which instrument does Anna play?",
        "What instrument is Anna playing these days?",
        "anna instrument",
    ] {
        let doc = search(&w, question);
        let list = chosen(&doc);
        let at = list.iter().position(|c| c == answer);
        assert!(at.is_some_and(|i| i <= 1), "{question}: {list:#?}");
        // Every other turn of Anna's shares only her name: all come after the answer.
        for (i, c) in list.iter().enumerate() {
            if c.starts_with("Anna:") && c != answer {
                assert!(i > at.unwrap(), "{question}: {c} before the answer");
            }
        }
    }
    // Without the reply share, the answer is just one more turn with Anna's name.
    w.config("[memory]\nreply_share = 0\n");
    let doc = search(&w, "Which instrument does Anna play?");
    let list = chosen(&doc);
    let at = list.iter().position(|c| c == answer);
    assert!(at.is_none_or(|i| i > 1), "{list:#?}");
}

#[test]
fn a_question_naming_a_speaker_ranks_their_own_turn_above_anothers() {
    let w = World::without_model("dialog-speaker");
    import(
        &w,
        "two.json",
        json!([
            // Longer, so plain BM25 prefers the other: only the speaker differs.
            turn(
                "c1",
                "Caroline",
                "I went hiking in the hills near the lake on Saturday"
            ),
            turn("c2", "Gina", "hiking caroline"),
            turn(
                "c3",
                "Ravi",
                "I went hiking in the hills near the lake on Saturday too"
            ),
            turn("c4", "Caroline", "Thanks, see you soon"),
        ]),
    );
    for question in [
        "Where did Caroline go hiking?",
        "caroline hiking",
        "Has Caroline been hiking lately?",
    ] {
        let doc = search(&w, question);
        let list = chosen(&doc);
        assert_eq!(
            list.first().map(String::as_str),
            Some("Caroline: I went hiking in the hills near the lake on Saturday"),
            "{question}: {doc:#}"
        );
        // Gina names Caroline in lower case: a word, not a name.
        let gina = doc["chosen"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["speaker"] == "Gina");
        assert!(gina.is_none_or(|g| g["boost"] == 1.0), "{doc:#}");
        // Caroline's turn that shares only her name is not about hiking: no boost.
        let thanks = doc["chosen"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["content"] == "Caroline: Thanks, see you soon");
        assert!(thanks.is_none_or(|t| t["boost"] == 1.0), "{doc:#}");
    }
    w.config("[memory]\nsubject_boost = 1\n");
    let doc = search(&w, "Where did Caroline go hiking?");
    assert_eq!(
        chosen(&doc).first().map(String::as_str),
        Some("Gina: hiking caroline"),
        "without the boost the shorter match wins: {doc:#}"
    );
}

#[test]
fn search_json_shows_the_propagated_and_boosted_parts_of_a_score() {
    let w = World::without_model("dialog-json");
    anna_chats(&w);
    let doc = search(&w, "Which instrument does Anna play?");
    let ms = list(&w);
    let asked = stored(&ms, "Mel: Which instrument do you play these days?");
    let entry = |content: &str| {
        doc["chosen"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["content"] == content)
            .cloned()
            .unwrap_or_else(|| panic!("{content:?} not chosen: {doc:#}"))
    };
    let reply = entry("Anna: The cello, since March.");
    assert_eq!(reply["reply_to"], asked["id"]);
    assert_eq!(reply["speaker"], "Anna");
    assert_eq!(reply["boost"], 1.5, "the question names Anna");
    let question = entry("Mel: Which instrument do you play these days?");
    let part = reply["propagated"].as_f64().unwrap();
    let asked_bm25 = question["bm25"].as_f64().unwrap();
    assert!(
        (part - 0.3 * asked_bm25).abs() < 1e-4,
        "{reply:#} {question:#}"
    );
    assert_eq!(
        question["propagated"], 0.0,
        "the first turn replies to nothing"
    );
    assert_eq!(question["boost"], 1.0, "Mel is not named");
}

#[test]
fn memories_extracted_from_one_session_are_linked_in_order() {
    let w = World::new("dialog-extract");
    for item in ["Anna plays the cello", "Anna started in March"] {
        w.fake.route(
            POST_TURN,
            Reply::text(
                json!({"grade": {"score": 0.9, "reason": "ok"},
                       "memories": [{"content": item, "category": "fact"}]})
                .to_string(),
            ),
        );
    }
    w.fake.push(Reply::text("Nice!"));
    w.fake.push(Reply::text("Good to know."));
    let first = w
        .run(&["ask", "--json", "My friend Anna plays the cello"])
        .expect(0)
        .json();
    let session = first["session"].as_str().unwrap().to_string();
    w.run(&["ask", "--session", &session, "She started in March"])
        .expect(0);
    let ms = list(&w);
    let a = stored(&ms, "Anna plays the cello");
    let b = stored(&ms, "Anna started in March");
    assert_eq!(a["prev"], Value::Null);
    assert_eq!(b["prev"], a["id"], "{ms:#?}");
    // Another session starts its own chain.
    w.fake.route(
        POST_TURN,
        Reply::text(
            json!({"memories": [{"content": "Jon likes jazz", "category": "fact"}]}).to_string(),
        ),
    );
    w.fake.push(Reply::text("Noted."));
    w.run(&["ask", "Jon likes jazz"]).expect(0);
    assert_eq!(stored(&list(&w), "Jon likes jazz")["prev"], Value::Null);
}

#[test]
fn a_store_from_before_the_links_opens_keeps_its_memories_and_links_new_turns() {
    let w = World::without_model("dialog-migrate");
    w.run(&["memory", "add", "Caroline: I moved to Lisbon last spring"])
        .expect(0);
    // Make the file what the build before the links wrote: schema 5, no table of
    // conversation tails, a memory record without the new fields.
    {
        use redb::{ReadableDatabase, TableDefinition};
        let meta: TableDefinition<&str, u64> = TableDefinition::new("meta");
        let memories: TableDefinition<u64, &str> = TableDefinition::new("memories");
        let tails: TableDefinition<&str, u64> = TableDefinition::new("conversation_tails");
        let db = redb::Database::open(w.home.join("evolve.redb")).unwrap();
        {
            let txn = db.begin_read().unwrap();
            assert_eq!(
                txn.open_table(meta)
                    .unwrap()
                    .get("schema_version")
                    .unwrap()
                    .map(|v| v.value()),
                Some(6)
            );
        }
        let txn = db.begin_write().unwrap();
        txn.open_table(meta)
            .unwrap()
            .insert("schema_version", 5)
            .unwrap();
        assert!(txn.delete_table(tails).unwrap());
        let old = json!({"id": 1, "content": "Caroline: I moved to Lisbon last spring",
                         "priority": 3, "importance": 3, "category": "general",
                         "created_at": 1_700_000_000, "keywords_version": 2});
        txn.open_table(memories)
            .unwrap()
            .insert(1, old.to_string().as_str())
            .unwrap();
        txn.commit().unwrap();
    }
    // It opens (migrated), the old memory is there without a link, and is found by
    // the speaker it names.
    let ms = list(&w);
    assert_eq!(ms.len(), 1, "{ms:#?}");
    assert_eq!(ms[0]["prev"], Value::Null);
    let doc = search(&w, "Where did Caroline move?");
    let first = &doc["chosen"][0];
    assert_eq!(first["content"], "Caroline: I moved to Lisbon last spring");
    assert_eq!(
        first["boost"], 1.5,
        "its label is a subject once keyed again"
    );
    // New turns are linked after the migration.
    import(
        &w,
        "after.json",
        json!([
            turn("c1", "Mel", "Where did you move?"),
            turn("c1", "Caroline", "Lisbon!")
        ]),
    );
    let ms = list(&w);
    assert_eq!(
        stored(&ms, "Caroline: Lisbon!")["prev"],
        stored(&ms, "Mel: Where did you move?")["id"]
    );
    let exported = w.run(&["memory", "export"]).expect(0).json();
    assert_eq!(exported["schema_version"], 6);
}
