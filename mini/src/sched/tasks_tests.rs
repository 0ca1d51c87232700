use super::*;
use crate::cancel::Cancel;
use crate::sched::daily::{job_due, DailyJob};
use crate::sched::show::{next_run, rfc3339};
use evolve_core::sched::{FixedOffset, Utc, Zone};

fn task(schedule: &str, created: Timestamp, last: Option<Timestamp>) -> Task {
    Task {
        id: 1,
        schedule: schedule.into(),
        question: "q".into(),
        session: "s".into(),
        allow: Some(Level::L2),
        created_at: created,
        last_run: last,
        runs: 0,
        last_status: None,
        paused: false,
        deliver: None,
        budget_tokens: None,
    }
}

#[test]
fn instants_are_written_in_the_zone() {
    let cst = FixedOffset::east(8 * 3600).unwrap();
    let west = FixedOffset::east(-(3 * 3600 + 1800)).unwrap();
    for (zone, utc, want) in [
        (&Utc as &dyn Zone, 0, "1970-01-01T00:00:00Z"),
        (&cst, 1_767_225_600, "2026-01-01T08:00:00+08:00"),
        (&west, 1_767_225_600, "2025-12-31T20:30:00-03:30"),
    ] {
        assert_eq!(rfc3339(zone, utc), want);
    }
}

#[test]
fn next_run_follows_the_schedule_and_a_one_off_that_ran_has_none() {
    let day = 86_400;
    for (schedule, created, last, want) in [
        ("every 30m", 1000, None, Some(1000 + 1800)),
        ("every 30m", 1000, Some(5000), Some(6800)),
        ("daily 07:30", 0, None, Some(7 * 3600 + 1800)),
        (
            "daily 07:30",
            0,
            Some(8 * 3600),
            Some(day + 7 * 3600 + 1800),
        ),
        ("at 1970-01-02T00:00:00Z", 0, None, Some(day)),
        ("at 1970-01-02T00:00:00Z", 0, Some(day), None),
        // Overdue after downtime: the time lies in the past, the loop runs it.
        ("at 1970-01-02T00:00:00Z", 5 * day, None, Some(day)),
        ("0 9 * * *", 0, None, Some(9 * 3600)),
        ("not a schedule", 0, None, None),
    ] {
        assert_eq!(
            next_run(&task(schedule, created, last), &Utc),
            want,
            "{schedule} created {created} last {last:?}"
        );
    }
}

#[test]
fn the_loop_sleeps_until_the_next_due_time_within_bounds() {
    for (next, now, want) in [
        (None, 100, 30),
        (Some(105), 100, 5),
        (Some(100), 100, 1),
        (Some(50), 100, 1),
        (Some(10_000), 100, 30),
    ] {
        assert_eq!(sleep_for(next, now), Duration::from_secs(want), "{next:?}");
    }
}

fn nothing(_: &Runtime, _: Timestamp, _: &Cancel) {}

#[test]
fn a_daily_job_runs_once_a_day_and_once_after_downtime() {
    let job = DailyJob {
        name: "test",
        meta_key: "last_test",
        hour: 3,
        minute: 30,
        run: nothing,
    };
    let day = 86_400;
    let at = 3 * 3600 + 1800;
    for (last, now, want) in [
        (None, 10 * day, Err(10 * day)),
        (Some(day), day + at - 1, Ok(false)),
        (Some(day), day + at, Ok(true)),
        (Some(day + at), day + at + 3600, Ok(false)),
        // Down for a week: one run.
        (Some(day), 8 * day, Ok(true)),
    ] {
        assert_eq!(job_due(&job, &Utc, last, now), want, "{last:?} {now}");
    }
}

#[test]
fn the_configured_zone_is_checked_at_load_and_used() {
    use crate::config::tests::load_text;
    for (text, name, offset) in [
        ("[scheduler]\ntime_zone = \"+08:00\"\n", "+08:00", 8 * 3600),
        ("[scheduler]\ntime_zone = \"UTC\"\n", "UTC", 0),
    ] {
        let loaded = load_text(text, &[]).expect("loads");
        let zone = loaded.config.scheduler.resolve();
        assert_eq!(zone.name, name);
        assert_eq!(zone.zone.offset_at_utc(0), offset);
        assert_eq!(zone.warning, None);
        assert_eq!(
            loaded.origins.get("scheduler.time_zone"),
            &crate::config::Origin::File
        );
    }
    let err = load_text("[scheduler]\ntime_zone = \"Mars/Base\"\n", &[])
        .expect_err("an unknown zone is an error")
        .to_string();
    assert!(
        err.contains("time_zone") && err.contains("Mars/Base"),
        "{err}"
    );
    let loaded = load_text("", &[("TZ", "Asia/Shanghai")]).expect("loads");
    assert_eq!(
        loaded.origins.get("scheduler.time_zone"),
        &crate::config::Origin::Env("TZ".into())
    );
    assert_eq!(loaded.config.scheduler.time_zone, None, "read when needed");
}

#[test]
fn allow_levels_are_those_of_ask() {
    assert_eq!(parse_allow("L3"), Ok(Level::L3));
    assert_eq!(parse_allow("l1"), Ok(Level::L1));
    assert_eq!(parse_allow("L4"), Err(BadAllow::NeedsPerson(Level::L4)));
    assert!(parse_allow("L4")
        .unwrap_err()
        .to_string()
        .contains("never runs L4"));
    assert!(matches!(parse_allow("L9"), Err(BadAllow::NotALevel { .. })));
}

#[test]
fn the_scheduler_claims_a_task_once_until_the_run_ends() {
    let s = Scheduler::new();
    let claim = s.claim(3).expect("free");
    assert!(
        s.claim(3).is_none(),
        "a second run of the same task is refused"
    );
    assert!(s.is_running(3));
    assert!(s.claim(4).is_some());
    s.stop();
    assert!(claim.cancel.is_cancelled(), "stopping cancels the run");
    drop(claim);
    assert!(!s.is_running(3));
    assert!(s.wait_idle(Duration::from_secs(1)));
}

#[test]
fn a_task_whose_start_failed_is_left_alone_until_the_retry_time() {
    let s = Scheduler::new();
    assert_eq!(s.held_until(7, 1_000), None);
    s.held.lock().unwrap().insert(7, 1_000 + RETRY_AFTER);
    assert_eq!(s.held_until(7, 1_000), Some(1_000 + RETRY_AFTER));
    assert_eq!(s.held_until(8, 1_000), None, "only that task");
    assert_eq!(s.held_until(7, 1_000 + RETRY_AFTER), None, "released");
    assert!(s.held.lock().unwrap().is_empty(), "and forgotten");
}

#[test]
fn a_run_cancelled_by_serve_stopping_is_an_error_that_says_so_not_a_model_error() {
    let protocol = || {
        Error::from(crate::llm::LlmError::Protocol {
            url: "http://127.0.0.1:1/v1".into(),
            detail: "not JSON".into(),
        })
    };
    let cases: [(Error, bool, RunStatus, &str); 4] = [
        (
            Error::from(crate::llm::LlmError::Cancelled),
            true,
            RunStatus::Error,
            "cancelled: evolve serve stopped during the run",
        ),
        (
            Error::Cancelled,
            true,
            RunStatus::Error,
            "cancelled: evolve serve stopped during the run",
        ),
        (
            protocol(),
            true,
            RunStatus::Error,
            "cancelled: evolve serve stopped during the run (unexpected answer",
        ),
        (
            protocol(),
            false,
            RunStatus::ModelError,
            "unexpected answer",
        ),
    ];
    for (error, cancelled, status, said) in cases {
        let (end, reply, _) = judge(Err(error), "s", cancelled);
        assert_eq!(end.status, status);
        let message = end.error.unwrap_or_default();
        assert!(message.starts_with(said), "{message}");
        assert!(reply.is_empty());
    }
}
