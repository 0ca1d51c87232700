//! Scheduled tasks through the built binary: `evolve tasks add|list|run|log|rm` on the
//! store, the same commands while `evolve serve` holds it (through its API), a task
//! that `serve` runs by itself, and the refusal of a second run while one is going.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::serve::Server;
use support::{tool_call, Reply, World};

/// The id from `task N added: …`.
fn added_id(stdout: &str) -> u64 {
    stdout
        .strip_prefix("task ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no task id in {stdout:?}"))
}

/// Waits (generously) until `probe` gives something.
fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first finished run of a task, from the API.
fn finished_run(s: &Server, id: u64) -> Value {
    wait_for("the task's run", || {
        let r = s.get(&format!("/v1/tasks/{id}/runs"));
        assert_eq!(r.status, 200, "{}", r.body);
        let runs = r.json()["data"].as_array().cloned().unwrap_or_default();
        runs.into_iter().find(|r| r["status"] != "running")
    })
}

#[test]
fn tasks_are_added_listed_run_logged_and_removed_without_serve() {
    let w = World::new("tasks-cli");
    let every = w
        .run(&["tasks", "add", "--every", "30m", "What changed today?"])
        .expect(0);
    assert!(every.stdout.contains("every 30m"), "{}", every.stdout);
    assert!(every.stdout.contains("next run 20"), "{}", every.stdout);
    let id = added_id(&every.stdout);
    let daily = w
        .run(&[
            "tasks",
            "add",
            "--daily",
            "07:30",
            "--allow",
            "L1",
            "Morning news",
        ])
        .expect(0);
    let cron = w
        .run(&["tasks", "add", "--cron", "0 9 * * mon-fri", "Standup notes"])
        .expect(0);
    let at = w
        .run(&["tasks", "add", "--at", "2030-01-02T03:04:05+08:00", "Once"])
        .expect(0);
    assert!(
        at.stdout.contains("at 2030-01-01T19:04:05Z"),
        "{}",
        at.stdout
    );

    let list = w.run(&["tasks", "list", "--json"]).expect(0).json();
    let tasks = list["data"].as_array().expect("data");
    assert_eq!(tasks.len(), 4);
    let schedules: Vec<&str> = tasks
        .iter()
        .map(|t| t["schedule"].as_str().unwrap())
        .collect();
    assert_eq!(
        schedules,
        [
            "every 30m",
            "daily 07:30",
            "0 9 * * mon-fri",
            "at 2030-01-01T19:04:05Z"
        ]
    );
    assert_eq!(tasks[1]["allow"], "L1");
    assert_eq!(tasks[0]["allow"], "L2", "the default of evolve ask");
    assert_eq!(tasks[0]["runs"], 0);
    assert_eq!(tasks[0]["last_run"], Value::Null);
    assert!(tasks[3]["next_run"].is_string());
    assert!(list["time_zone"].is_string());
    let text = w.run(&["tasks", "list"]).expect(0).stdout;
    assert!(
        text.contains("Morning news") && text.contains("0 9 * * mon-fri"),
        "{text}"
    );
    let _ = (daily, cron);

    // Run it now: the answer is printed, lands in the task's own session, and is logged.
    w.fake.push(Reply::text("Nothing much changed."));
    let run = w.run(&["tasks", "run", &id.to_string()]).expect(0);
    assert_eq!(run.stdout.trim(), "Nothing much changed.");
    let session = tasks[0]["session"].as_str().unwrap().to_string();
    let shown = w.run(&["sessions", "show", &session]).expect(0).stdout;
    assert!(shown.contains("What changed today?"), "{shown}");
    assert!(shown.contains("Nothing much changed."), "{shown}");
    let sessions = w.run(&["sessions", "list"]).expect(0).stdout;
    assert!(
        sessions.contains(&format!("Task {id}: What changed today?")),
        "{sessions}"
    );
    let log = w
        .run(&["tasks", "log", &id.to_string(), "--json"])
        .expect(0)
        .json();
    let r = &log["data"][0];
    assert_eq!(r["status"], "ok");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["trigger"], "manual");
    assert_eq!(r["turn"], 1);
    assert_eq!(r["answer"], "Nothing much changed.");
    assert_eq!(r["session"], session.as_str());
    let log = w.run(&["tasks", "log", &id.to_string()]).expect(0).stdout;
    assert!(log.contains("ok (exit 0)  manual, turn 1"), "{log}");
    let after = w.run(&["tasks", "list", "--json"]).expect(0).json();
    assert_eq!(after["data"][0]["runs"], 1);
    assert_eq!(after["data"][0]["last_status"], "ok");

    // Removed: gone from the list, its log unknown, its session kept.
    w.run(&["tasks", "rm", &id.to_string()]).expect(0);
    let after = w.run(&["tasks", "list", "--json"]).expect(0).json();
    assert_eq!(after["data"].as_array().unwrap().len(), 3);
    let gone = w.run(&["tasks", "log", &id.to_string()]).expect(1);
    assert!(
        gone.stderr.contains(&format!("no task {id}")),
        "{}",
        gone.stderr
    );
    w.run(&["sessions", "show", &session]).expect(0);
}

#[test]
fn a_run_that_needs_a_person_exits_4_like_ask_and_says_so_in_the_log() {
    let w = World::new("tasks-needs-person");
    let id = added_id(
        &w.run(&["tasks", "add", "--every", "1h", "Write hello to out.txt"])
            .expect(0)
            .stdout,
    );
    w.fake.push(tool_call(
        "write_file",
        r#"{"path": "out.txt", "content": "hello"}"#,
    ));
    w.fake.push(Reply::text("I could not write the file."));
    let run = w.run(&["tasks", "run", &id.to_string()]).expect(4);
    assert!(run.stdout.contains("I could not write the file."));
    assert!(run.stderr.contains("write_file"), "{}", run.stderr);
    assert!(!w.workspace().join("out.txt").exists());
    let log = w
        .run(&["tasks", "log", &id.to_string(), "--json"])
        .expect(0)
        .json();
    assert_eq!(log["data"][0]["status"], "needs_person");
    assert_eq!(log["data"][0]["exit_code"], 4);
    assert!(log["data"][0]["error"]
        .as_str()
        .unwrap()
        .contains("write_file"));
}

#[test]
fn bad_schedules_and_options_are_usage_errors_that_say_what_is_wrong() {
    let w = World::new("tasks-usage");
    let bad_cron = w
        .run(&["tasks", "add", "--cron", "0 25 * * *", "q"])
        .expect(2);
    assert!(bad_cron.stderr.contains("hour 25"), "{}", bad_cron.stderr);
    let two = w
        .run(&["tasks", "add", "--every", "30m", "--daily", "07:30", "q"])
        .expect(2);
    assert!(
        two.stderr
            .contains("exactly one of --cron, --every, --daily, --at"),
        "{}",
        two.stderr
    );
    let none = w.run(&["tasks", "add", "q"]).expect(2);
    assert!(none.stderr.contains("--every"), "{}", none.stderr);
    let short = w.run(&["tasks", "add", "--every", "10s", "q"]).expect(2);
    assert!(short.stderr.contains("--every"), "{}", short.stderr);
    let l4 = w
        .run(&["tasks", "add", "--every", "1h", "--allow", "L4", "q"])
        .expect(2);
    assert!(l4.stderr.contains("L4"), "{}", l4.stderr);
    w.config("[scheduler]\ntime_zone = \"Mars/Olympus_Mons\"\n");
    let zone = w.run(&["tasks", "list"]).expect(2);
    assert!(zone.stderr.contains("Mars/Olympus_Mons"), "{}", zone.stderr);
    let listed = w.run(&["tasks", "list", "--json"]);
    assert_eq!(listed.code, 2);
}

#[test]
fn serve_runs_a_due_task_by_itself_and_tasks_commands_go_through_it() {
    let w = World::new("tasks-serve");
    w.config("[scheduler]\ntime_zone = \"Asia/Shanghai\"\n");
    // Added before serve starts; its time passed while no server ran: it runs once.
    let early = added_id(
        &w.run(&[
            "tasks",
            "add",
            "--at",
            "2020-01-01T00:00:00Z",
            "Was anything missed?",
        ])
        .expect(0)
        .stdout,
    );
    w.fake.push(Reply::text("The missed one ran."));
    let s = Server::start(&w, &[]);
    let run = finished_run(&s, early);
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["trigger"], "schedule");
    assert_eq!(run["answer"], "The missed one ran.");
    let task = s.get(&format!("/v1/tasks/{early}")).json();
    assert_eq!(task["runs"], 1);
    assert_eq!(task["next_run"], Value::Null, "a one-off that ran is done");
    let messages = s
        .get(&format!(
            "/v1/sessions/{}/messages",
            task["session"].as_str().unwrap()
        ))
        .json();
    let texts: Vec<&str> = messages["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["Was anything missed?", "The missed one ran."]);

    // `evolve tasks add` while serve holds the store: it goes through the API, and the
    // loop is woken for the new task at once.
    w.fake.push(Reply::text("Added while serving."));
    let added = w
        .run(&["tasks", "add", "--at", "2021-06-01 08:00", "Serve, run me"])
        .expect(0);
    let id = added_id(&added.stdout);
    assert!(added.stdout.contains("Asia/Shanghai"), "{}", added.stdout);
    let run = finished_run(&s, id);
    assert_eq!(run["answer"], "Added while serving.", "{run}");
    let listed = s.get("/v1/tasks").json();
    assert_eq!(listed["time_zone"], "Asia/Shanghai");
    assert_eq!(listed["data"].as_array().unwrap().len(), 2);
    // The zone's offset is in the times.
    assert_eq!(listed["data"][1]["schedule"], "at 2021-06-01T00:00:00Z");
    assert!(
        listed["data"][1]["created_at"]
            .as_str()
            .unwrap()
            .ends_with("+08:00"),
        "{listed}"
    );

    // The other commands go through serve too.
    let list = w.run(&["tasks", "list", "--json"]).expect(0).json();
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    let log = w
        .run(&["tasks", "log", &id.to_string(), "--json"])
        .expect(0)
        .json();
    assert_eq!(log["data"][0]["answer"], "Added while serving.");
    w.fake.push(Reply::text("Run by hand."));
    let by_hand = w.run(&["tasks", "run", &id.to_string()]).expect(0);
    assert_eq!(by_hand.stdout.trim(), "Run by hand.");
    w.run(&["tasks", "rm", &id.to_string()]).expect(0);
    assert_eq!(s.get(&format!("/v1/tasks/{id}")).status, 404);
    let bad = w.run(&["tasks", "add", "--cron", "61 * * * *", "q"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(s.stop().is_some_and(|c| c == 0), "serve exits 0 on SIGTERM");
}

#[test]
fn the_api_adds_tasks_and_refuses_a_second_run_while_one_is_going() {
    let w = World::new("tasks-api");
    let s = Server::start(&w, &[]);
    let bad = s.post("/v1/tasks", r#"{"schedule": "every 5s", "question": "q"}"#);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.error_message().contains("5s"), "{}", bad.body);
    let missing = s.post("/v1/tasks", r#"{"schedule": "every 1h"}"#);
    assert_eq!(missing.status, 400);
    let created = s.post(
        "/v1/tasks",
        r#"{"schedule": "every 1h", "question": "Slow one", "allow": "L3"}"#,
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let task = created.json();
    assert_eq!(task["schedule"], "every 1h");
    assert_eq!(task["allow"], "L3");
    assert_eq!(task["running"], false);
    assert_eq!(task["last_status"], Value::Null);
    let id = task["id"].as_u64().unwrap();

    w.fake
        .push(Reply::text("Finally.").after(Duration::from_secs(3)));
    let first = s.post(&format!("/v1/tasks/{id}/run"), "");
    assert_eq!(first.status, 202, "{}", first.body);
    assert_eq!(first.json()["started"], true);
    let second = s.post(&format!("/v1/tasks/{id}/run"), "");
    assert_eq!(second.status, 409, "{}", second.body);
    assert!(s.get(&format!("/v1/tasks/{id}")).json()["running"] == true);
    let run = finished_run(&s, id);
    assert_eq!(run["answer"], "Finally.");
    assert_eq!(run["trigger"], "manual");
    let runs = s.get(&format!("/v1/tasks/{id}/runs?limit=5")).json();
    assert_eq!(
        runs["data"].as_array().unwrap().len(),
        1,
        "the 409 ran nothing"
    );

    assert_eq!(s.get("/v1/tasks/x").status, 400);
    assert_eq!(s.get("/v1/tasks/99").status, 404);
    assert_eq!(s.post("/v1/tasks/99/run", "").status, 404);
    assert_eq!(s.request("PUT", "/v1/tasks/1", &[], "").status, 405);
    let del = s.request("DELETE", &format!("/v1/tasks/{id}"), &[], "");
    assert_eq!(del.status, 200);
    assert_eq!(del.json()["deleted"], true);
    assert_eq!(s.get("/v1/tasks").json()["data"], serde_json::json!([]));
}

#[test]
fn stopping_serve_cancels_a_running_task_and_its_run_says_so() {
    let w = World::new("tasks-stop");
    let s = Server::start(&w, &[]);
    let created = s.post(
        "/v1/tasks",
        r#"{"schedule": "daily 03:00", "question": "A very slow one"}"#,
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_u64().unwrap();
    w.fake
        .push(Reply::text("Too late.").after(Duration::from_secs(120)));
    assert_eq!(s.post(&format!("/v1/tasks/{id}/run"), "").status, 202);
    wait_for("the run to start", || {
        (s.get(&format!("/v1/tasks/{id}")).json()["running"] == true).then_some(())
    });
    assert!(s.stop().is_some_and(|c| c == 0), "serve exits 0 on SIGTERM");
    let log = w
        .run(&["tasks", "log", &id.to_string(), "--json"])
        .expect(0)
        .json();
    let run = &log["data"][0];
    assert_eq!(run["status"], "error", "{run}");
    assert_eq!(run["exit_code"], 1);
    assert!(
        run["error"].as_str().unwrap().contains("cancelled"),
        "{run}"
    );
}

/// `at` a few seconds from now, as RFC 3339 in UTC (by Debian's `date`).
fn at_in(seconds: u64) -> String {
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + seconds;
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{when}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date");
    format!("at {}", String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn a_task_due_in_a_few_seconds_runs_by_itself_while_serve_waits_for_it() {
    let w = World::new("tasks-soon");
    let s = Server::start(&w, &[]);
    // Not due yet when it is added: the loop sleeps until its time, then runs it once.
    let schedule = at_in(3);
    let r = s.post(
        "/v1/tasks",
        &serde_json::json!({"schedule": schedule, "question": "Remind me to stretch"}).to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let task = r.json();
    assert!(task["next_run"].is_string(), "{task}");
    assert_eq!(task["runs"], 0);
    let id = task["id"].as_u64().unwrap();
    w.fake.push(Reply::text("Time to stretch."));
    let run = finished_run(&s, id);
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["trigger"], "schedule");
    assert_eq!(run["answer"], "Time to stretch.");
    let after = s.get(&format!("/v1/tasks/{id}")).json();
    assert_eq!(after["runs"], 1);
    assert_eq!(after["last_status"], "ok");
    assert_eq!(after["next_run"], Value::Null);
    // It ran once: a while later there is still exactly one run.
    std::thread::sleep(Duration::from_secs(2));
    let runs = s.get(&format!("/v1/tasks/{id}/runs")).json();
    assert_eq!(runs["data"].as_array().unwrap().len(), 1, "{runs}");
}

#[test]
fn a_task_added_without_allow_follows_the_headless_default_of_each_run() {
    let w = World::new("tasks-default-allow");
    std::fs::create_dir_all(w.workspace()).unwrap();
    std::fs::write(w.workspace().join("notes.txt"), "buy tea").unwrap();
    let id = added_id(
        &w.run(&["tasks", "add", "--every", "1h", "What is in notes.txt?"])
            .expect(0)
            .stdout,
    );
    // Today's default (L2) lets it read a workspace file.
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.txt"}"#));
    w.fake.push(Reply::text("It says: buy tea."));
    w.run(&["tasks", "run", &id.to_string()]).expect(0);
    // The user lowers the headless default to L1: the same task may no longer read it.
    w.config("[permission]\nheadless_max_auto = \"L1\"\n");
    let list = w.run(&["tasks", "list", "--json"]).expect(0).json();
    assert_eq!(list["data"][0]["allow"], "L1", "{list}");
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.txt"}"#));
    w.fake.push(Reply::text("I may not read it now."));
    let run = w.run(&["tasks", "run", &id.to_string()]).expect(4);
    assert!(run.stderr.contains("read_file"), "{}", run.stderr);
    // An explicit --allow stays what the user said.
    let explicit = added_id(
        &w.run(&[
            "tasks",
            "add",
            "--every",
            "1h",
            "--allow",
            "L2",
            "Read notes.txt",
        ])
        .expect(0)
        .stdout,
    );
    w.fake
        .push(tool_call("read_file", r#"{"path": "notes.txt"}"#));
    w.fake.push(Reply::text("buy tea"));
    w.run(&["tasks", "run", &explicit.to_string()]).expect(0);
}
