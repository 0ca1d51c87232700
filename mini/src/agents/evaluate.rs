//! The Evaluate agent: the cheap model grades a reply from 0 to 1 (the grade part of
//! the one call after an answer); the score is stored per turn and drives reflection
//! and style learning. This module reads the grade from the model's reply.

use evolve_core::json::Value;
use evolve_core::text::clip_chars;

use super::record::Scored;

/// Grades replies.
pub struct EvaluateAgent;

impl super::Agent for EvaluateAgent {
    super::describe!(
        Evaluate,
        "Evaluate",
        "scores each reply from 0 to 1 so the agent can learn what works"
    );
}

/// The grade part of the call after an answer: `{"score": 0.8, "reason": "…"}`, or a
/// bare score (tolerant: a score given as a string or out of 10 / 100; `rating` and
/// `evaluation` read as `score`). `None` when there is no number.
pub fn grade_of(part: &Value) -> Option<Scored> {
    let (score_value, reason) = match part {
        Value::Object(_) => (
            part.get("score")
                .or_else(|| part.get("rating"))
                .or_else(|| part.get("evaluation"))?,
            part.get("reason").and_then(Value::as_str),
        ),
        other => (other, None),
    };
    let raw = match score_value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').parse::<f64>().ok()?,
        _ => return None,
    };
    if !raw.is_finite() || raw < 0.0 {
        return None;
    }
    let score = if raw <= 1.0 {
        raw
    } else if raw <= 10.0 {
        raw / 10.0
    } else if raw <= 100.0 {
        raw / 100.0
    } else {
        return None;
    };
    Some(Scored {
        score: score as f32,
        reason: reason
            .map(|r| clip_chars(r.trim(), 300))
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::grade_of;
    use evolve_core::json::extract;

    #[test]
    fn scores_are_read_tolerantly_and_garbage_gives_none() {
        let cases: &[(&str, Option<f32>)] = &[
            (r#"{"score": 0.8, "reason": "good"}"#, Some(0.8)),
            (
                "Sure! ```json\n{\"score\": 7, \"reason\": \"ok\"}\n```",
                Some(0.7),
            ),
            (r#"{"score": "85%"}"#, Some(0.85)),
            (r#"{"rating": 1}"#, Some(1.0)),
            (r#"{"score": 0.9, "reason": "cut off"#, Some(0.9)),
            ("I think it was fine.", None),
            (r#"{"score": -1}"#, None),
            (r#"{"score": 1000}"#, None),
            (r#"{"reason": "no score"}"#, None),
            ("0.6", Some(0.6)),
            (r#""7/10""#, None),
            ("null", None),
        ];
        for (text, want) in cases {
            let got = extract(text)
                .ok()
                .and_then(|v| grade_of(&v))
                .map(|s| s.score);
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-6, "{text}: {g} != {w}"),
                (None, None) => {}
                _ => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
