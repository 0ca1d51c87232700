use super::*;

/// The web UI's strings: every code has a 中文 text there (`srv_<code>` in the zh table).
const I18N: &str = include_str!("../../static/js/i18n.js");

/// The `srv_*` keys of one language's table of `static/js/i18n.js`.
fn keys(lang: &str) -> Vec<String> {
    let start = I18N
        .find(&format!("\n  {lang}: {{"))
        .unwrap_or_else(|| panic!("no {lang} table in i18n.js"));
    let table = &I18N[start..];
    let end = table.find("\n  },").unwrap_or(table.len());
    table[..end]
        .match_indices("srv_")
        .map(|(at, _)| {
            table[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn every_code_the_server_sends_has_the_web_uis_chinese() {
    let have = keys("zh");
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !have.iter().any(|k| k == &format!("srv_{c}")))
        .collect();
    assert!(
        missing.is_empty(),
        "no 中文 in static/js/i18n.js for {missing:?}"
    );
}

#[test]
fn codes_are_unique_snake_case_names() {
    let mut seen = Vec::new();
    for c in Code::ALL {
        let s = c.as_str();
        assert!(
            s.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'),
            "{s}"
        );
        assert!(!seen.contains(&s), "{s} twice");
        seen.push(s);
    }
}

#[test]
fn every_schedule_error_has_a_code_of_its_own_with_what_its_text_names() {
    use evolve_core::sched::{Schedule, Utc};
    // (schedule, code, a parameter and its value)
    let cases: &[(&str, Code, &str, Value)] = &[
        ("", Code::ScheduleEmpty, "", Value::Null),
        ("1 2 3", Code::CronFields, "found", json!(3)),
        ("61 * * * *", Code::CronRange, "hi", json!(59)),
        (
            "1,,2 * * * *",
            Code::CronEmptyItem,
            "field",
            json!("minute"),
        ),
        (
            "* * * * funday",
            Code::CronValue,
            "field",
            json!("day_of_week"),
        ),
        ("* 9-5 * * *", Code::CronBackwards, "text", json!("9-5")),
        ("*/0 * * * *", Code::CronZeroStep, "field", json!("minute")),
        ("every", Code::IntervalMissing, "", Value::Null),
        ("every soon", Code::IntervalBad, "text", json!("soon")),
        ("every 10s", Code::IntervalShort, "text", json!("10s")),
        ("every 400d", Code::IntervalLong, "text", json!("400d")),
        ("daily", Code::TimeMissing, "", Value::Null),
        ("daily 25:00", Code::TimeBad, "text", json!("25:00")),
        ("at", Code::TimestampMissing, "", Value::Null),
        ("at tomorrow", Code::TimestampBad, "text", json!("tomorrow")),
    ];
    for (text, code, param, value) in cases {
        let e = Schedule::parse_in(text, &Utc).expect_err(text);
        let said = schedule(&e);
        assert_eq!(said.code, *code, "{text:?}: {e}");
        if !param.is_empty() {
            assert_eq!(said.params.get(*param), Some(value), "{text:?}: {said:?}");
        }
    }
}

#[test]
fn a_message_without_a_code_of_its_own_has_its_statuss_with_the_text() {
    for (status, code) in [
        (400, Code::InvalidRequest),
        (401, Code::Unauthorized),
        (404, Code::NotFound),
        (409, Code::Conflict),
        (413, Code::TooLarge),
        (429, Code::TooManyRequests),
        (500, Code::ServerError),
        (503, Code::ServerError),
    ] {
        let said = Said::status(status, "what went wrong");
        assert_eq!(said.code, code, "{status}");
        assert_eq!(said.params["message"], "what went wrong");
    }
}
