//! Ranked recall through the built binary: what `evolve memory search` shows and what a
//! turn puts in the prompt. The long memory that holds the answer beats a short thanks
//! that only shares the name, a rare word weighs more than a common one, inflections
//! meet ("painted" ↔ "paint"), a follow-up finds what the previous question was about,
//! `--json` says why each memory was chosen, memories stored by an older build are keyed
//! again, and with an embedding model a memory that shares no word can still be chosen
//! (for a follow-up, by the previous question's meaning too) —
//! while a failing embedding server only costs the vector part, never the turn.

mod support;

use evolve_core::text::keyword_hash;
use serde_json::Value;
use support::{system_text, Reply, World};

fn add(w: &World, text: &str) {
    w.run(&["memory", "add", "--category", "general", text])
        .expect(0);
}

/// `memory search --json QUERY [--previous P]`.
fn search(w: &World, query: &str, previous: Option<&str>) -> Value {
    let mut args = vec!["memory", "search", "--json", query];
    if let Some(p) = previous {
        args.extend(["--previous", p]);
    }
    w.run(&args).expect(0).json()
}

/// The contents chosen, in prompt order.
fn chosen(doc: &Value) -> Vec<String> {
    doc["chosen"]
        .as_array()
        .expect("chosen")
        .iter()
        .map(|c| c["content"].as_str().expect("content").to_string())
        .collect()
}

fn entry<'a>(doc: &'a Value, content: &str) -> &'a Value {
    doc["chosen"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["content"] == content)
        .unwrap_or_else(|| panic!("{content:?} not chosen: {doc:#}"))
}

#[test]
fn the_memory_with_the_answer_beats_a_short_one_that_shares_only_the_name() {
    let w = World::without_model("recall-rank");
    let answer = "Melanie painted a sunset over the lake with her kids last weekend";
    add(&w, "Thanks, Melanie!");
    add(&w, answer);
    for i in 0..20 {
        add(
            &w,
            &format!("Melanie said the weather was great on day {i}"),
        );
    }
    let doc = search(&w, "What did Melanie paint?", None);
    let list = chosen(&doc);
    assert_eq!(list.first().map(String::as_str), Some(answer), "{doc:#}");
    // Why: the words matched, as the user wrote them, and the scores.
    let e = entry(&doc, answer);
    let matched: Vec<&str> = e["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(matched, ["melanie", "paint"], "{e:#}");
    assert!(e["bm25"].as_f64().unwrap() > 0.0);
    assert_eq!(e["relevance"].as_f64().unwrap(), 1.0);
    assert!(e["f1"].as_f64().is_some());
    assert_eq!(doc["ranking"], "bm25");
    // The thanks shares only the name, which twenty other memories have too: far
    // weaker than the answer, it does not take prompt room at all.
    assert!(!list.iter().any(|c| c == "Thanks, Melanie!"), "{doc:#}");
    assert!(doc["characters"].as_u64().unwrap() > 0);
}

#[test]
fn inflections_meet_and_a_question_without_a_match_injects_nothing() {
    let w = World::without_model("recall-stem");
    add(&w, "Caroline adopted two puppies from the shelter");
    add(&w, "Caroline is painting the kitchen");
    let doc = search(&w, "Has Caroline adopted a puppy?", None);
    assert_eq!(
        chosen(&doc).first().map(String::as_str),
        Some("Caroline adopted two puppies from the shelter"),
        "{doc:#}"
    );
    let doc = search(&w, "What did she paint?", None);
    assert_eq!(
        chosen(&doc),
        ["Caroline is painting the kitchen"],
        "{doc:#}"
    );
    // Only stop words and unknown words: nothing is related, nothing is injected.
    let doc = search(&w, "What is the capital of Peru?", None);
    assert!(chosen(&doc).is_empty(), "{doc:#}");
}

/// Caroline's sister's city, among shorter memories that share "live": alone, "and where
/// does she live?" ranks them first.
fn sister_and_neighbours(w: &World) {
    add(w, "Caroline's sister Jolene lives in Lisbon");
    for i in 0..40 {
        add(w, &format!("Neighbour {i} lives here"));
    }
}

#[test]
fn a_follow_up_finds_what_the_previous_question_was_about() {
    let w = World::without_model("recall-follow-up");
    sister_and_neighbours(&w);
    let doc = search(
        &w,
        "And where does she live?",
        Some("Tell me about Caroline's sister"),
    );
    assert_eq!(
        chosen(&doc).first().map(String::as_str),
        Some("Caroline's sister Jolene lives in Lisbon"),
        "{doc:#}"
    );
    let e = entry(&doc, "Caroline's sister Jolene lives in Lisbon");
    let matched: Vec<&str> = e["matched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(matched, ["live", "caroline", "sister"], "{e:#}");
    assert_eq!(doc["previous"], "Tell me about Caroline's sister");
    let alone = chosen(&search(&w, "And where does she live?", None));
    assert!(
        !alone.iter().any(|c| c.contains("Jolene")),
        "without the previous turn nothing ties the question to Jolene: {alone:?}"
    );
}

#[test]
fn a_chat_turn_uses_the_previous_question_of_the_session() {
    let w = World::new("recall-turn");
    sister_and_neighbours(&w);
    w.fake.push(Reply::text("She has a sister, Jolene."));
    w.fake.push(Reply::text("In Lisbon."));
    let first = w
        .run(&["ask", "--json", "Tell me about Caroline's sister"])
        .expect(0)
        .json();
    let session = first["session"].as_str().expect("session").to_string();
    w.run(&["ask", "--session", &session, "And where does she live?"])
        .expect(0);
    let mains = w.main_requests();
    let system = system_text(mains.last().expect("the second turn"));
    assert!(system.contains("Jolene lives in Lisbon"), "{system}");
}

#[test]
fn memories_keyed_by_an_older_build_are_keyed_again() {
    let w = World::without_model("recall-rekey");
    // An export as the build before stemming wrote it: keywords of the unstemmed word,
    // no keywords version.
    let old = serde_json::json!({
        "schema_version": 3,
        "memories": [{
            "id": 1, "content": "Melanie painted a sunset", "priority": 3, "importance": 3,
            "category": "general", "created_at": 1_700_000_000,
            "keywords": [keyword_hash("melanie"), keyword_hash("painted"),
                         keyword_hash("sunset")]
        }],
        "sessions": []
    });
    let file = w.home.join("old.json");
    std::fs::write(&file, old.to_string()).unwrap();
    w.run(&["memory", "import", file.to_str().unwrap()])
        .expect(0);
    let doc = search(&w, "Who paints?", None);
    assert_eq!(chosen(&doc), ["Melanie painted a sunset"], "{doc:#}");
}

#[test]
fn with_an_embedding_model_a_memory_sharing_no_word_can_be_chosen() {
    let mut w = World::new("recall-hybrid");
    w.config("[model]\nembedding_model = \"fake-embed\"\n");
    w.env("EVOLVE_LOG", "info");
    // The fake server embeds by words, stop words included: this memory and the
    // question below have the same vector and no keyword in common.
    add(&w, "who are they");
    add(&w, "Caroline likes tea");
    let stored: Value = w.run(&["memory", "list", "--json"]).expect(0).json();
    let embedded = stored
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "who are they")
        .count();
    assert_eq!(embedded, 1);
    // `memory search` ranks as the turn does, embeddings included.
    let doc = search(&w, "Who are they?", None);
    assert_eq!(doc["embedding_model"], "fake-embed");
    let first = &doc["chosen"][0];
    assert_eq!(first["content"], "who are they", "{doc:#}");
    assert!(first["cosine"].as_f64().unwrap() > 0.99, "{first:#}");
    assert_eq!(first["matched"].as_array().map(Vec::len), Some(0));
    w.fake.push(Reply::text("No idea."));
    let record = w.run(&["ask", "--json", "Who are they?"]).expect(0).json();
    let used: Vec<&str> = record["memories"]
        .as_array()
        .expect("memories used")
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(used.first(), Some(&"who are they"), "{record:#}");
}

/// Only the embedding path can tie these to each other: every word is a stop word, so
/// no keyword is shared. The fake server embeds by words: the memory has the previous
/// question's vector and none of the follow-up's.
fn follow_up_by_meaning(w: &World) {
    add(w, "what about them");
    add(w, "Caroline likes green tea");
}

#[test]
fn a_follow_up_is_embedded_with_the_previous_question() {
    let w = World::new("recall-hybrid-follow-up");
    w.config("[model]\nembedding_model = \"fake-embed\"\n");
    follow_up_by_meaning(&w);
    let alone = search(&w, "and where is it", None);
    assert_eq!(alone["embedding_model"], "fake-embed");
    assert!(chosen(&alone).is_empty(), "{alone:#}");
    let doc = search(&w, "and where is it", Some("what about them"));
    assert_eq!(chosen(&doc), ["what about them"], "{doc:#}");
    let e = entry(&doc, "what about them");
    assert_eq!(e["matched"].as_array().map(Vec::len), Some(0), "{e:#}");
    // The previous question leans the vector (at context_weight 0.25), it does not
    // replace it: the cosine is 0.25/√(1 + 0.25²), not 1.
    let cosine = e["cosine"].as_f64().unwrap();
    assert!((cosine - 0.2425).abs() < 0.01, "{e:#}");
    // A chat turn does the same with the session's previous question.
    w.fake.push(Reply::text("Which ones?"));
    w.fake.push(Reply::text("No idea."));
    let first = w
        .run(&["ask", "--json", "what about them"])
        .expect(0)
        .json();
    let session = first["session"].as_str().expect("session").to_string();
    let record = w
        .run(&["ask", "--json", "--session", &session, "and where is it"])
        .expect(0)
        .json();
    let used: Vec<&str> = record["memories"]
        .as_array()
        .expect("memories used")
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(used, ["what about them"], "{record:#}");
}

#[test]
fn context_weight_zero_embeds_the_follow_up_alone() {
    let w = World::new("recall-hybrid-follow-up-off");
    w.config("[model]\nembedding_model = \"fake-embed\"\n[memory]\ncontext_weight = 0\n");
    follow_up_by_meaning(&w);
    let doc = search(&w, "and where is it", Some("what about them"));
    assert_eq!(doc["embedding_model"], "fake-embed");
    assert!(chosen(&doc).is_empty(), "{doc:#}");
}

#[test]
fn a_failing_embedding_server_leaves_the_turn_to_words() {
    let w = World::new("recall-hybrid-down");
    // A model name the fake server does not know: every /embeddings call is a 404.
    w.config("[model]\nembedding_model = \"no-such-model\"\n");
    let added = w
        .run(&[
            "memory",
            "add",
            "--category",
            "general",
            "Caroline likes green tea",
        ])
        .expect(0);
    assert!(added.stdout.contains("added memory #"), "{}", added.stdout);
    let doc = search(&w, "What tea does Caroline like?", None);
    assert_eq!(chosen(&doc), ["Caroline likes green tea"], "{doc:#}");
    assert_eq!(doc["embedding_model"], Value::Null, "no vector was used");
    w.fake.push(Reply::text("Green tea."));
    let run = w.run(&["ask", "--json", "What tea does Caroline like?"]);
    let record = run.expect(0).json();
    let used: Vec<&str> = record["memories"]
        .as_array()
        .expect("memories used")
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(used, ["Caroline likes green tea"], "{record:#}");
}

#[test]
fn ranking_settings_out_of_range_are_refused_with_the_setting_named() {
    let w = World::without_model("recall-config");
    for (setting, value) in [
        ("min_relevance", "1.5"),
        ("context_weight", "-0.1"),
        ("relevance_exponent", "0"),
        ("vector_weight", "2"),
    ] {
        w.config(&format!("[memory]\n{setting} = {value}\n"));
        let run = w.run(&["memory", "search", "tea"]).expect(2);
        assert!(
            run.stderr.contains(&format!("memory.{setting}")),
            "{setting}: {}",
            run.stderr
        );
    }
    w.config("[memory]\nranking = \"f1\"\nfusion = \"weighted\"\ncontext_weight = 0\n");
    let doc = search(&w, "tea", None);
    assert_eq!(doc["ranking"], "f1");
}
