//! The `progress` tool: `steps` sleeps of `ms` each, and after each one a
//! `notifications/progress` carrying the request's `_meta.progressToken` (`progress` =
//! the step, `total` = `steps`, `message` = "step N of M") when the request has one.
//!
//! Where the notifications go is rmcp's business: on stdio they are written before the
//! reply, in order; over streamable HTTP they ride the call's own SSE stream (the session
//! routes a progress notification to the stream of the request that registered its
//! token; the stateless 2026-07-28 path has only that stream). rmcp writes `progress`
//! and `total` as JSON floats (`1.0`), since the model holds them as `f64`.

use std::time::Duration;

use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use crate::cancel::{sleep_unless_cancelled, Slept};

/// More steps than this is a typo, not a test.
pub const MAX_STEPS: u64 = 1000;

/// A step sleeps at most a minute, so a typo cannot hang a test run for long either.
pub const MAX_STEP_MS: u64 = 60_000;

/// Runs the steps; the text is the call's answer. A cancelled run stops at once (its
/// answer is never sent: rmcp drops the reply to a cancelled request).
pub async fn run(steps: u64, ms: u64, context: &RequestContext<RoleServer>) -> String {
    let token = context.meta.get_progress_token();
    for step in 1..=steps {
        let slept = sleep_unless_cancelled(Duration::from_millis(ms), context.ct.cancelled()).await;
        if slept == Slept::Cancelled {
            let done = step - 1;
            eprintln!(
                "evolve-mcp-test-server: progress (request {}) cancelled after {done} of {steps} steps",
                context.id
            );
            return format!("cancelled after {done} steps");
        }
        if let Some(token) = &token {
            let params = ProgressNotificationParam::new(token.clone(), step as f64)
                .with_total(steps as f64)
                .with_message(step_message(step, steps));
            if let Err(e) = context.peer.notify_progress(params).await {
                eprintln!("evolve-mcp-test-server: progress notification not sent: {e}");
            }
        }
    }
    answer(steps, token.is_some())
}

fn step_message(step: u64, steps: u64) -> String {
    format!("step {step} of {steps}")
}

fn answer(steps: u64, had_token: bool) -> String {
    if had_token {
        format!("done after {steps} steps")
    } else {
        format!("done after {steps} steps (no progress token)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        assert_eq!(step_message(2, 5), "step 2 of 5");
        assert_eq!(answer(3, true), "done after 3 steps");
        assert_eq!(answer(3, false), "done after 3 steps (no progress token)");
        assert_eq!(answer(0, true), "done after 0 steps");
    }
}
