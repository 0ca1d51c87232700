//! `evolve memory maintain` and `POST /v1/memory/maintain` end to end: a store seeded
//! with memories of known ages, the fake model scripted for the `[evolve:priority]`
//! review, and the store read back with `evolve memory export`.

mod support;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::serve::Server;
use support::{Reply, World, DIGEST};

const PRIORITY: &str = "[evolve:priority]";
const DAY: i64 = 86_400;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A memory record `age_days` old.
fn mem(id: u64, content: &str, category: &str, priority: u8, age_days: i64) -> Value {
    json!({"id": id, "content": content, "category": category, "priority": priority,
           "importance": 3, "created_at": now() - age_days * DAY})
}

/// Every memory in the store (soft-deleted ones too), by id.
fn stored(w: &World) -> BTreeMap<u64, Value> {
    let out = w.run(&["memory", "export"]).expect(0).json();
    out["memories"]
        .as_array()
        .expect("memories")
        .iter()
        .map(|m| (m["id"].as_u64().expect("id"), m.clone()))
        .collect()
}

fn live(w: &World) -> BTreeMap<u64, Value> {
    stored(w)
        .into_iter()
        .filter(|(_, m)| m["deleted"] != json!(true))
        .collect()
}

fn maintain(w: &World, extra: &[&str]) -> Value {
    let mut args = vec!["memory", "maintain", "--json"];
    args.extend_from_slice(extra);
    w.run(&args).expect(0).json()
}

/// The seed of the main scenario.
fn scenario() -> Vec<Value> {
    let mut pinned = mem(
        2,
        "Never run destructive commands on the home server",
        "instruction",
        0,
        40,
    );
    pinned["pinned"] = json!(true);
    let mut expired = mem(
        3,
        "Call the dentist about the appointment",
        "reminder",
        1,
        20,
    );
    expired["expires_at"] = json!(now() - 3600);
    vec![
        mem(
            1,
            "Always answer in English unless the user writes in Chinese",
            "instruction",
            0,
            40,
        ),
        pinned,
        expired,
        mem(4, "The user likes green tea", "preference", 1, 20),
        mem(
            5,
            "The user likes green tea brewed at 80 degrees",
            "preference",
            1,
            19,
        ),
        mem(
            6,
            "Renew the passport before the trip to Japan",
            "reminder",
            1,
            2,
        ),
        mem(7, "Water the balcony plants every Sunday", "reminder", 1, 1),
        mem(
            8,
            "The build server runs Jenkins on port 8080",
            "general",
            2,
            10,
        ),
        mem(
            9,
            "Quarterly taxes are filed by the accountant Maria",
            "general",
            3,
            10,
        ),
        mem(
            10,
            "The cat is called Mochi and eats twice daily",
            "general",
            3,
            10,
        ),
        mem(
            11,
            "Weekly standup happens Monday at nine",
            "general",
            1,
            10,
        ),
        mem(
            12,
            "Bicycle tyres need four bar of pressure",
            "general",
            2,
            10,
        ),
    ]
}

/// Five proposals: three allowed (one level each), a jump and one past the limit of 3.
const PROPOSALS: &str = r#"{"changes": [
  {"id": 8, "priority": "high", "reason": "used daily"},
  {"id": 10, "priority": "critical"},
  {"id": 9, "delta": -1},
  {"id": 11, "priority": "medium"},
  {"id": 12, "delta": 1}
]}"#;

/// The model's summary of the two reminders of [`scenario`].
const DIGESTED: &str =
    "Renew the passport before the trip to Japan; water the balcony plants every Sunday.";

#[test]
fn maintenance_applies_every_rule_and_a_second_run_changes_nothing() {
    let w = World::new("maintain-rules");
    w.seed_memories(scenario());
    w.fake.route(PRIORITY, Reply::text(PROPOSALS));
    w.fake.route(PRIORITY, Reply::text(PROPOSALS));
    w.fake.route(PRIORITY, Reply::text(PROPOSALS));
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    // The two reminders' summary, in the model's words (asked by both dry runs too).
    for _ in 0..3 {
        w.fake.route(
            DIGEST,
            Reply::text(serde_json::json!({ "summary": DIGESTED }).to_string()),
        );
    }

    // A dry run reports but changes nothing.
    let before = stored(&w);
    let dry = maintain(&w, &["--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["expired"], json!([3]));
    assert_eq!(dry["adjusted"].as_array().map(Vec::len), Some(3));
    assert_eq!(stored(&w), before, "a dry run must not write");

    let human = w.run(&["memory", "maintain", "--dry-run"]).expect(0);
    for line in [
        "dry run: nothing is changed",
        "would decay by age: 1 (#1 critical→high)",
        "duplicates to merge: 1 (#5 into #4)",
        "summaries to write: 1 (new summary 1: reminder of #6, #7)",
    ] {
        assert!(human.stdout.contains(line), "{line:?} in {}", human.stdout);
    }
    assert_eq!(stored(&w), before, "a dry run must not write");
    let r = maintain(&w, &[]);
    assert_eq!(r["problems"], json!([]), "{r:#}");
    let after = live(&w);
    // Expired: gone from the live memories.
    assert_eq!(r["expired"], json!([3]));
    assert!(!after.contains_key(&3));
    // Decay: the 40-day-old CRITICAL is HIGH now; the pinned one stays CRITICAL.
    assert_eq!(after[&1]["priority"], 1, "{:#}", after[&1]);
    assert_eq!(after[&2]["priority"], 0);
    assert_eq!(
        r["decayed"],
        json!([{"id": 1, "from": "critical", "to": "high"}])
    );
    // Duplicates: the restatement is merged into the older memory, keeping every word.
    assert_eq!(r["merged"][0]["kept"], 4);
    assert_eq!(r["merged"][0]["dropped"], 5);
    assert!(!after.contains_key(&5));
    assert_eq!(
        after[&4]["content"],
        "The user likes green tea brewed at 80 degrees"
    );
    // Summary: one CRITICAL summary of the two recent reminders, importance 5; the
    // originals lose one importance.
    let summaries = r["summaries"].as_array().expect("summaries");
    assert_eq!(summaries.len(), 1, "{r:#}");
    assert_eq!(summaries[0]["members"], json!([6, 7]));
    let sid = summaries[0]["id"].as_u64().expect("summary id");
    assert_eq!(after[&sid]["priority"], 0);
    assert_eq!(after[&sid]["importance"], 5);
    assert_eq!(after[&sid]["category"], "reminder");
    assert_eq!(after[&sid]["content"], DIGESTED);
    let asked = w
        .fake
        .chat_requests()
        .into_iter()
        .rev()
        .find(|r| r.mentions(DIGEST))
        .expect("a digest request");
    let members = asked.last_user().expect("the members");
    assert!(
        members.contains("- Water the balcony plants every Sunday"),
        "{members}"
    );
    assert_eq!(after[&6]["importance"], 2);
    assert_eq!(after[&7]["importance"], 2);
    // The model's review: at most 3, one level each; the jump and the fourth refused.
    assert_eq!(
        r["adjusted"],
        json!([
            {"id": 8, "from": "medium", "to": "high"},
            {"id": 9, "from": "low", "to": "medium"},
            {"id": 11, "from": "high", "to": "medium"},
        ])
    );
    assert_eq!(after[&8]["priority"], 1);
    assert_eq!(after[&9]["priority"], 2);
    assert_eq!(after[&10]["priority"], 3, "a jump of two levels is refused");
    assert_eq!(after[&11]["priority"], 2);
    assert_eq!(after[&12]["priority"], 2, "a fourth change is refused");
    // The review saw the active memories, but not the pinned one.
    let review = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.mentions(PRIORITY))
        .expect("a review request");
    let listing = review.last_user().expect("the listing");
    assert!(
        listing.contains("#8 medium general: The build server runs Jenkins on port 8080"),
        "{listing}"
    );
    assert!(!listing.contains("#2 "), "{listing}");

    // The second run finds nothing left to do.
    let again = maintain(&w, &[]);
    for step in [
        "expired",
        "decayed",
        "critical_evicted",
        "merged",
        "summaries",
        "adjusted",
    ] {
        assert_eq!(
            again[step],
            json!([]),
            "{step} changed on the second run: {again:#}"
        );
    }
    assert_eq!(live(&w), after);
}

#[test]
fn the_critical_cap_holds_and_a_garbage_review_leaves_the_rules_applied() {
    let w = World::new("maintain-cap");
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec",
    ];
    let memories: Vec<Value> = words
        .iter()
        .enumerate()
        .map(|(i, word)| {
            // Oldest first: #1 is 27 days old, #17 eleven (none decays, none is recent).
            let age = 27 - i as i64;
            mem(
                i as u64 + 1,
                &format!("Code word {word}"),
                "instruction",
                0,
                age,
            )
        })
        .collect();
    w.seed_memories(memories);
    w.fake.route(
        PRIORITY,
        Reply::text("Sure! I would bump a few of these up."),
    );
    w.fake.route(
        PRIORITY,
        Reply::text("Sure! I would bump a few of these up."),
    );
    let out = w.run(&["memory", "maintain"]).expect(0);
    assert!(
        out.stdout
            .contains("over the CRITICAL cap, soft-deleted: 2 (#1, #2)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("warning: priority review skipped"),
        "{}",
        out.stderr
    );
    let after = live(&w);
    assert_eq!(after.len(), 15);
    assert!(!after.contains_key(&1) && !after.contains_key(&2));
    // A second run (the model answering garbage again) changes nothing.
    let again = maintain(&w, &[]);
    assert_eq!(again["critical_evicted"], json!([]));
    assert_eq!(live(&w), after);
}

#[test]
fn the_api_runs_maintenance_and_answers_the_report() {
    let w = World::new("maintain-api");
    w.seed_memories(scenario());
    w.fake.push(Reply::text("Kyoto in spring is lovely."));
    w.run(&["ask", "plan the trip to Japan"]).expect(0);
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    let s = Server::start(&w, &[]);
    let dry = s.post("/v1/memory/maintain", r#"{"dry_run": true}"#);
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.json()["dry_run"], true);
    assert_eq!(dry.json()["expired"], json!([3]));
    let r = s.post("/v1/memory/maintain", "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["dry_run"], false);
    assert_eq!(r.json()["expired"], json!([3]));
    assert_eq!(r.json()["summaries"].as_array().map(Vec::len), Some(1));
    // The review is told what the user talks about lately.
    let review = w
        .fake
        .chat_requests()
        .into_iter()
        .find(|r| r.mentions(PRIORITY))
        .expect("a review request");
    let input = review.last_user().expect("the listing");
    assert!(
        input.contains("Recent conversation topics: plan the trip to Japan"),
        "{input}"
    );
    let gone = s.get("/v1/memory/3");
    assert_eq!(gone.status, 404, "{}", gone.body);
    let bad = s.post("/v1/memory/maintain", r#"{"dry_run": "yes"}"#);
    assert_eq!(bad.status, 400);
    assert_eq!(s.get("/v1/memory/maintain").status, 405);
}

#[test]
fn a_summary_falls_back_to_keywords_when_the_model_cannot_write_one() {
    let w = World::new("maintain-digest");
    w.seed_memories(vec![
        mem(
            1,
            "The user drinks green tea in the morning",
            "preference",
            1,
            1,
        ),
        mem(
            2,
            "The user prefers oolong tea after lunch",
            "preference",
            1,
            1,
        ),
    ]);
    w.fake.route(DIGEST, Reply::text("Sure, here you go!"));
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    let r = maintain(&w, &[]);
    let summaries = r["summaries"].as_array().expect("summaries");
    assert_eq!(summaries.len(), 1, "{r:#}");
    let content = summaries[0]["content"].as_str().unwrap();
    assert!(content.contains("tea"), "the keyword draft: {content}");
    assert!(
        r["problems"].as_array().unwrap().iter().any(|p| p
            .as_str()
            .unwrap()
            .starts_with("summary written from keywords")),
        "{r:#}"
    );
}

#[test]
fn with_an_embedding_model_duplicates_are_found_by_embeddings_fetched_once() {
    let w = World::new("maintain-embeddings");
    w.config("[model]\nembedding_model = \"fake-embed\"\n");
    w.seed_memories(vec![
        // The same words in another order: the fake's vectors are equal.
        mem(1, "green tea every morning, the user drinks", "fact", 2, 40),
        mem(2, "The user drinks green tea every morning", "fact", 2, 39),
        mem(3, "The cat is called Miso", "fact", 2, 38),
    ]);
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    let r = maintain(&w, &[]);
    assert_eq!(r["problems"], json!([]), "{r:#}");
    assert_eq!(r["merged"].as_array().map(Vec::len), Some(1), "{r:#}");
    assert_eq!(r["merged"][0]["by"], "embedding", "{r:#}");
    assert_eq!(r["merged"][0]["kept"], 1);
    let embeds = |w: &World| -> Vec<Value> {
        w.fake
            .requests()
            .into_iter()
            .filter(|q| q.path.ends_with("/embeddings"))
            .map(|q| q.json)
            .collect()
    };
    let asked = embeds(&w);
    assert_eq!(asked.len(), 1, "one request for the three memories");
    assert_eq!(asked[0]["model"], "fake-embed");
    assert_eq!(asked[0]["input"].as_array().map(Vec::len), Some(3));
    // The vectors are stored: the second run asks for none and changes nothing.
    let again = maintain(&w, &[]);
    assert_eq!(again["merged"], json!([]), "{again:#}");
    assert_eq!(embeds(&w).len(), 1, "embeddings are fetched once");
    assert_eq!(live(&w).len(), 2);
}

/// `n` (at most 17) of the user's instructions (CRITICAL), each about its own thing,
/// `age_days` old and older by an hour each.
fn instructions(n: usize, age_days: i64) -> Vec<Value> {
    let things = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec",
    ];
    things[..n]
        .iter()
        .enumerate()
        .map(|(i, thing)| {
            let mut m = mem(
                i as u64 + 1,
                &format!("Code word {thing}"),
                "instruction",
                0,
                age_days,
            );
            m["created_at"] = json!(now() - age_days * DAY - i as i64 * 3600);
            m
        })
        .collect()
}

#[test]
fn a_summary_with_no_room_under_the_cap_is_not_written_and_the_rules_keep_their_importance() {
    let w = World::new("maintain-full-cap");
    w.seed_memories(instructions(15, 1));
    for _ in 0..2 {
        w.fake.route(
            DIGEST,
            Reply::text(json!({"summary": "Fifteen household rules."}).to_string()),
        );
        w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    }
    let r = maintain(&w, &[]);
    assert_eq!(r["summaries"], json!([]), "{r:#}");
    assert_eq!(r["critical_evicted"], json!([]), "{r:#}");
    assert!(
        r["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .any(|p| p.as_str().unwrap_or_default().contains("CRITICAL cap")),
        "the skipped summary is explained: {r:#}"
    );
    let all = stored(&w);
    assert_eq!(
        all.len(),
        15,
        "nothing written only to be deleted: {all:#?}"
    );
    for (id, m) in &all {
        assert_eq!(m["deleted"], false, "#{id}");
        assert_eq!(m["priority"], 0, "#{id}");
        assert_eq!(m["importance"], 3, "#{id} lost importance to no summary");
    }
    let again = maintain(&w, &[]);
    assert_eq!(again["summaries"], json!([]), "{again:#}");
    assert_eq!(stored(&w), all);
}

#[test]
fn the_models_promotion_never_pushes_out_a_users_rule() {
    let w = World::new("maintain-promotion");
    // Fifteen rules, none recent enough to be summarised; the oldest is the one a
    // promotion used to push out.
    let mut seed = instructions(15, 10);
    seed[14]["content"] = json!("Never store passwords in plain text files");
    seed.push(mem(16, "The user prefers dark mode", "preference", 1, 12));
    w.seed_memories(seed);
    w.fake.route(
        PRIORITY,
        Reply::text(r#"{"changes": [{"id": 16, "priority": "critical", "reason": "every day"}]}"#),
    );
    let r = maintain(&w, &[]);
    assert_eq!(r["adjusted"], json!([]), "{r:#}");
    assert_eq!(
        r["refused"],
        json!([{"id": 16, "reason": "critical_full"}]),
        "{r:#}"
    );
    assert_eq!(r["critical_evicted"], json!([]), "{r:#}");
    let after = live(&w);
    assert_eq!(after.len(), 16);
    assert_eq!(
        after[&15]["content"],
        "Never store passwords in plain text files"
    );
    assert_eq!(after[&15]["priority"], 0);
    assert_eq!(after[&16]["priority"], 1, "dark mode stays HIGH");
}

#[test]
fn a_promotion_with_room_makes_way_for_the_users_next_rule_and_is_kept() {
    let w = World::new("maintain-promotion-room");
    let mut seed = instructions(14, 10);
    seed.push(mem(15, "The user prefers dark mode", "preference", 1, 12));
    w.seed_memories(seed);
    w.fake.route(
        PRIORITY,
        Reply::text(r#"{"changes": [{"id": 15, "priority": "critical"}]}"#),
    );
    let r = maintain(&w, &[]);
    assert_eq!(
        r["adjusted"],
        json!([{"id": 15, "from": "high", "to": "critical"}]),
        "{r:#}"
    );
    let promoted = &live(&w)[&15];
    assert_eq!(promoted["priority"], 0);
    assert_eq!(promoted["promoted"], true, "{promoted:#}");
    // The user's sixteenth CRITICAL memory: the promotion goes back to HIGH, no rule
    // is deleted and neither is the preference.
    w.run(&[
        "memory",
        "add",
        "--category",
        "instruction",
        "Always lock the front door at night",
    ])
    .expect(0);
    let after = stored(&w);
    assert_eq!(after.len(), 16);
    assert!(after.values().all(|m| m["deleted"] == false), "{after:#?}");
    assert_eq!(after[&15]["priority"], 1, "{:#}", after[&15]);
    assert_eq!(after[&15]["promoted"], false);
    let critical = after.values().filter(|m| m["priority"] == 0).count();
    assert_eq!(critical, 15);
}

#[test]
fn a_dry_run_names_the_summaries_it_would_write_and_a_run_their_ids() {
    let w = World::new("maintain-labels");
    w.seed_memories(vec![
        mem(1, "Buy oat milk on the way home", "reminder", 1, 1),
        mem(2, "Feed the cat at seven", "reminder", 1, 1),
    ]);
    for _ in 0..3 {
        w.fake.route(PRIORITY, Reply::text(r#"{"changes": []}"#));
    }
    let dry = maintain(&w, &["--dry-run"]);
    assert_eq!(dry["summaries"][0]["label"], "new summary 1", "{dry:#}");
    let human = w.run(&["memory", "maintain", "--dry-run"]).expect(0);
    assert!(
        human
            .stdout
            .contains("summaries to write: 1 (new summary 1: reminder of #1, #2)"),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.contains("#0"), "{}", human.stdout);
    let done = w.run(&["memory", "maintain"]).expect(0);
    assert!(
        done.stdout
            .contains("summaries written: 1 (#3: reminder of #1, #2)"),
        "{}",
        done.stdout
    );
}
