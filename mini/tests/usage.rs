//! `evolve usage`: the tokens the turn records counted, summed for today, per session
//! and per model — through the built binary against the scripted fake model (its usage
//! is characters / 4).

mod support;

use serde_json::Value;
use support::*;

fn tokens(v: &Value) -> (u64, u64) {
    (
        v["prompt_tokens"].as_u64().unwrap_or(0),
        v["completion_tokens"].as_u64().unwrap_or(0),
    )
}

#[test]
fn usage_sums_the_recorded_tokens_today_per_session_and_per_model() {
    let w = World::new("usage-sums");
    let empty = w.run(&["usage", "--json"]).expect(0).json();
    assert_eq!(empty["total"]["turns"], 0, "{empty}");
    assert_eq!(empty["sessions"], serde_json::json!([]));

    let mut records = Vec::new();
    w.fake.push(Reply::text("Paris."));
    let first = w
        .run(&["ask", "--json", "What is the capital of France?"])
        .expect(0)
        .json();
    let sid = first["session"].as_str().unwrap().to_string();
    records.push(first);
    w.fake.push(Reply::text("About 2.1 million people."));
    records.push(
        w.run(&[
            "ask",
            "--json",
            "--session",
            &sid,
            "How many people live there?",
        ])
        .expect(0)
        .json(),
    );
    w.fake.push(Reply::text(
        "A long answer about the history of Berlin, ".repeat(80),
    ));
    records.push(
        w.run(&["ask", "--json", "Tell me about the history of Berlin"])
            .expect(0)
            .json(),
    );
    let sum = |role: &str, rs: &[Value]| {
        rs.iter().fold((0, 0), |(p, c), r| {
            let (rp, rc) = tokens(&r["usage"][role]);
            (p + rp, c + rc)
        })
    };
    let (main, cheap) = (sum("main", &records), sum("cheap", &records));
    assert!(main.0 > 0 && cheap.0 > 0, "the fake reports usage");

    let usage = w.run(&["usage", "--json"]).expect(0).json();
    assert_eq!(usage["total"]["turns"], 3, "{usage}");
    assert_eq!(tokens(&usage["total"]["main"]), main, "{usage}");
    assert_eq!(tokens(&usage["total"]["cheap"]), cheap, "{usage}");
    assert_eq!(usage["today"], usage["total"], "every turn ran today");

    let models = usage["models"].as_array().unwrap();
    assert_eq!(models[0]["role"], "main");
    assert_eq!(models[0]["model"], "fake-main");
    assert_eq!(tokens(&models[0]), main);
    assert_eq!(models[1]["model"], "fake-cheap");
    assert_eq!(tokens(&models[1]), cheap);

    // Per session, most tokens first: the long Berlin answer, then the two-turn one.
    let sessions = usage["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions[1]["session"], sid.as_str());
    assert_eq!(sessions[1]["turns"], 2);
    assert_eq!(
        tokens(&sessions[1]["main"]),
        sum("main", &records[..2]),
        "{usage}"
    );
    assert_eq!(sessions[0]["turns"], 1);

    let text = w.run(&["usage"]).expect(0).stdout;
    assert!(text.starts_with("today: 3 turns, main "), "{text}");
    assert!(text.contains("fake-cheap"), "{text}");
    assert!(text.contains(&sid), "{text}");
}

/// The first task's id, as `tasks list --json` shows it.
fn first_task(w: &World) -> String {
    let list = w.run(&["tasks", "list", "--json"]).expect(0).json();
    list["data"][0]["id"].to_string()
}

#[test]
fn usage_sums_per_task_and_prices_turn_tokens_into_money() {
    let w = World::new("usage-tasks-prices");
    w.config(
        "[model]\nprice_in_per_mtok = 2.0\nprice_out_per_mtok = 8.0\n\
         cheap_price_in_per_mtok = 0.5\ncheap_price_out_per_mtok = 1.0\n",
    );
    w.run(&["tasks", "add", "--every", "1h", "Summarise the news"])
        .expect(0);
    let id = first_task(&w);
    for answer in ["Quiet day.", "Busy day."] {
        w.fake.push(Reply::text(answer));
        w.run(&["tasks", "run", &id]).expect(0);
    }
    w.fake.push(Reply::text("Paris."));
    w.run(&["ask", "What is the capital of France?"]).expect(0);
    let usage = w.run(&["usage", "--json"]).expect(0).json();
    let tasks = usage["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{usage}");
    assert_eq!(tasks[0]["task"].to_string(), id);
    assert_eq!(tasks[0]["runs"], 2, "{usage}");
    assert!(tasks[0]["name"]
        .as_str()
        .unwrap()
        .contains("Summarise the news"));
    // The task's tokens are its session's.
    let session = usage["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["turns"] == 2)
        .expect("the task's session")
        .clone();
    assert_eq!(
        tokens(&tasks[0]["main"]),
        tokens(&session["main"]),
        "{usage}"
    );
    // Costs: tokens × price per million, the cheap model at its own price.
    let (mp, mc) = tokens(&usage["total"]["main"]);
    let (cp, cc) = tokens(&usage["total"]["cheap"]);
    let want = (mp as f64 * 2.0 + mc as f64 * 8.0 + cp as f64 * 0.5 + cc as f64 * 1.0) / 1e6;
    let cost = usage["cost_total"].as_f64().expect("a cost");
    assert!((cost - want).abs() < 1e-9, "{cost} vs {want}");
    assert!(cost > 0.0);
    let text = w.run(&["usage"]).expect(0).stdout;
    assert!(
        text.contains("per task:") && text.contains("2 runs"),
        "{text}"
    );
    assert!(text.contains(", cost 0.0"), "{text}");

    // Without prices there is no cost, not a cost of 0.
    let bare = World::new("usage-no-prices");
    bare.fake.push(Reply::text("Paris."));
    bare.run(&["ask", "What is the capital of France?"])
        .expect(0);
    let usage = bare.run(&["usage", "--json"]).expect(0).json();
    assert!(usage["cost_total"].is_null(), "{usage}");
    assert!(!bare.run(&["usage"]).expect(0).stdout.contains("cost"));
}

#[test]
fn a_spent_daily_budget_stops_the_next_turn_and_the_next_task_run_with_a_reason() {
    for (i, limit) in [40u64, 300].into_iter().enumerate() {
        let w = World::new(&format!("usage-daily-{i}"));
        w.config(&format!("[model]\ndaily_tokens = {limit}\n"));
        w.run(&["tasks", "add", "--every", "1h", "Summarise the news"])
            .expect(0);
        let id = first_task(&w);
        // Turns run until the day's tokens reach the limit; the turn that would start
        // beyond it does not, and the model is not asked.
        let mut answered = 0;
        let stopped = loop {
            w.fake.push(Reply::text("A short answer about something."));
            let run = w.run(&["ask", &format!("Question number {answered}?")]);
            if run.code != 0 {
                break run;
            }
            answered += 1;
            assert!(answered < 20, "the budget never stopped a turn");
        };
        assert!(answered >= 1, "the first turn runs");
        assert_eq!(stopped.code, 1, "{}", stopped.stderr);
        assert!(
            stopped.stderr.contains("today's token budget is spent")
                && stopped.stderr.contains(&format!("of {limit} tokens"))
                && stopped.stderr.contains("daily_tokens"),
            "{}",
            stopped.stderr
        );
        let asked = w.main_requests().len();
        assert_eq!(asked, answered, "no request after the budget was spent");
        let usage = w.run(&["usage", "--json"]).expect(0).json();
        assert!(usage["today"]["main"]["prompt_tokens"].as_u64().unwrap() > 0);
        assert_eq!(usage["daily_tokens"], limit);

        // A task run is stopped the same way, and its log says why.
        let run = w.run(&["tasks", "run", &id]);
        assert_ne!(run.code, 0, "{}", run.stdout);
        let log = w.run(&["tasks", "log", &id, "--json"]).expect(0).json();
        let why = log["data"][0]["error"].as_str().unwrap_or_default();
        assert!(why.contains("token budget is spent"), "{log}");
    }
}

#[test]
fn get_v1_usage_gives_today_the_days_the_sessions_the_tasks_and_the_budget() {
    use support::serve::Server;
    let w = World::new("usage-api");
    w.config("[model]\ndaily_tokens = 1000000\nprice_in_per_mtok = 1.0\n");
    w.run(&["tasks", "add", "--every", "1h", "Summarise the news"])
        .expect(0);
    let id = first_task(&w);
    w.fake.push(Reply::text("Quiet day."));
    w.run(&["tasks", "run", &id]).expect(0);
    w.fake.push(Reply::text("Paris."));
    w.run(&["ask", "What is the capital of France?"]).expect(0);
    let cli = w.run(&["usage", "--json"]).expect(0).json();

    let s = Server::start(&w, &[]);
    let anonymous = s.anonymous("GET", "/v1/usage", &[], "");
    assert_eq!(
        anonymous.status, 401,
        "the token is required: {}",
        anonymous.body
    );
    let r = s.get("/v1/usage");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let today = &v["today"];
    assert_eq!(today["turns"], 2, "{v}");
    assert_eq!(today["main"], cli["today"]["main"], "the CLI's sums: {v}");
    assert_eq!(today["cheap"], cli["today"]["cheap"], "{v}");
    // The cheap model is billed at the main's price when it has none of its own.
    let prompt_in = today["main"]["prompt_tokens"].as_u64().unwrap()
        + today["cheap"]["prompt_tokens"].as_u64().unwrap();
    let cost = today["cost"].as_f64().expect("priced");
    assert!((cost - prompt_in as f64 / 1e6).abs() < 1e-12, "{v}");

    let days = v["days"].as_array().unwrap();
    assert_eq!(days.len(), 14, "{v}");
    assert_eq!(days[0]["turns"], 2, "today first: {v}");
    assert!(days[1..].iter().all(|d| d["turns"] == 0), "{v}");
    let dates: Vec<&str> = days.iter().map(|d| d["date"].as_str().unwrap()).collect();
    assert!(
        dates.windows(2).all(|p| p[0] > p[1]),
        "newest first: {dates:?}"
    );
    assert!(dates
        .iter()
        .all(|d| d.len() == 10 && d.as_bytes()[4] == b'-'));

    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{v}");
    for s in sessions {
        for key in ["id", "title", "turns", "main", "cheap"] {
            assert!(!s[key].is_null(), "{key} in {s}");
        }
    }
    assert!(sessions
        .iter()
        .any(|s| s["title"] == "What is the capital of France?"));
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{v}");
    assert_eq!(tasks[0]["id"], id.as_str(), "ids are strings: {v}");
    assert_eq!(tasks[0]["runs"], 1);
    assert!(tasks[0]["name"].as_str().unwrap().contains("Summarise"));
    assert_eq!(v["budget"]["daily_tokens"], 1_000_000);
    let used = v["budget"]["used_today"].as_u64().unwrap();
    let sum =
        |t: &Value| t["prompt_tokens"].as_u64().unwrap() + t["completion_tokens"].as_u64().unwrap();
    assert_eq!(used, sum(&today["main"]) + sum(&today["cheap"]), "{v}");
}

#[test]
fn a_task_whose_runs_spent_its_budget_is_not_run_again_and_its_log_says_why() {
    for (i, (budget, runs_ok)) in [(50u64, 1usize), (1_000_000, 3)].into_iter().enumerate() {
        let w = World::new(&format!("usage-task-budget-{i}"));
        let budget_text = budget.to_string();
        w.run(&[
            "tasks",
            "add",
            "--every",
            "1h",
            "--budget-tokens",
            &budget_text,
            "Summarise the news",
        ])
        .expect(0);
        let id = first_task(&w);
        let listed = w.run(&["tasks", "list", "--json"]).expect(0).json();
        assert_eq!(listed["data"][0]["budget_tokens"], budget, "{listed}");
        let mut ok = 0;
        for _ in 0..3 {
            w.fake.push(Reply::text("A quiet news day."));
            if w.run(&["tasks", "run", &id]).code == 0 {
                ok += 1;
            }
        }
        assert_eq!(ok, runs_ok, "budget {budget}");
        assert_eq!(
            w.main_requests().len(),
            runs_ok,
            "no model call beyond the budget"
        );
        let log = w.run(&["tasks", "log", &id, "--json"]).expect(0).json();
        let errors: Vec<&str> = log["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["error"].as_str())
            .collect();
        assert_eq!(errors.len(), 3 - runs_ok, "{log}");
        for e in errors {
            assert!(
                e.contains("token budget is spent") && e.contains(&format!("of {budget} tokens")),
                "{e}"
            );
        }
    }
}
