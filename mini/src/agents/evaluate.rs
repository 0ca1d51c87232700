//! The Evaluate agent: the cheap model grades a reply from 0 to 1; the score is stored
//! per turn and drives reflection and style learning.

use evolve_core::json::{extract, Value};
use evolve_core::text::clip_chars;

use super::memory::{cheap_call, NEVER};
use super::prompts;
use super::record::Scored;
use super::runtime::Runtime;
use crate::llm::Usage;

/// Grades replies.
pub struct EvaluateAgent;

impl super::Agent for EvaluateAgent {
    super::describe!(
        Evaluate,
        "Evaluate",
        "scores each reply from 0 to 1 so the agent can learn what works"
    );
}

impl EvaluateAgent {
    /// The score of `answer` to `question` (tool activity summarised in `tools`), or
    /// `None` when the evaluator's reply is unusable (logged, in `problems`).
    pub fn evaluate(
        &self,
        rt: &Runtime,
        question: &str,
        answer: &str,
        tools: &str,
        usage: &mut Usage,
        problems: &mut Vec<String>,
    ) -> Option<Scored> {
        let mut input = format!(
            "Question: {}\n\nReply: {}",
            clip_chars(question, 3_000),
            clip_chars(answer, 4_000)
        );
        if !tools.is_empty() {
            input.push_str("\n\nTools used: ");
            input.push_str(&clip_chars(tools, 1_000));
        }
        let text = cheap_call(rt, prompts::EVALUATE, &input, usage, problems, &NEVER)?;
        match parse_score(&text) {
            Some(scored) => Some(scored),
            None => {
                let problem = format!(
                    "evaluation: no score in the model's reply {:?}",
                    clip_chars(&text, 120)
                );
                log::info!("{problem}");
                problems.push(problem);
                None
            }
        }
    }
}

/// `{"score": 0.8, "reason": "…"}` (tolerant: repaired JSON, a score given as a string
/// or out of 10 / 100). `None` when there is no number.
pub fn parse_score(text: &str) -> Option<Scored> {
    let value = extract(text).ok()?;
    let score_value = value
        .get("score")
        .or_else(|| value.get("rating"))
        .or_else(|| value.get("evaluation"))?;
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
    let reason = value
        .get("reason")
        .and_then(Value::as_str)
        .map(|r| clip_chars(r.trim(), 300))
        .unwrap_or_default();
    Some(Scored {
        score: score as f32,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_score;

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
        ];
        for (text, want) in cases {
            let got = parse_score(text).map(|s| s.score);
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-6, "{text}: {g} != {w}"),
                (None, None) => {}
                _ => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
