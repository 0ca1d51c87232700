//! What the server knows about cancellation: the `notifications/cancelled` a session
//! received ([`CancelLog`], which the `cancelled` tool answers with, so a client's test
//! can see what its client sent), and sleeps that end as soon as their request is
//! cancelled ([`sleep_unless_cancelled`]).
//!
//! rmcp does the rest: on `notifications/cancelled` it cancels the request's
//! `RequestContext::ct` and drops the handler's reply, so a cancelled request gets no
//! answer (over streamable HTTP the call's SSE stream ends without one). A handler that
//! ignores `ct` keeps running, though; that is what [`sleep_unless_cancelled`] is for.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CancelledNotificationParam, RequestId};
use serde::Serialize;

/// One `notifications/cancelled` as it arrived (`requestId` and `reason` may each be
/// absent on the wire: then `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cancellation {
    pub request_id: Option<RequestId>,
    pub reason: Option<String>,
}

/// The cancellations one session received, oldest first. Per session, as the `extra`
/// tool is: concurrent HTTP sessions do not see each other's.
#[derive(Debug, Clone, Default)]
pub struct CancelLog(Arc<Mutex<Vec<Cancellation>>>);

impl CancelLog {
    pub fn record(&self, params: CancelledNotificationParam) {
        let entry = Cancellation {
            request_id: params.request_id,
            reason: params.reason,
        };
        // A panic elsewhere while holding the lock leaves a list that is still whole.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(entry);
    }

    /// The `cancelled` tool's answer: `[{"requestId":3,"reason":"timed out"}]`.
    pub fn to_json(&self) -> String {
        let list = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        serde_json::to_string(&*list).unwrap_or_else(|e| format!("cannot list: {e}"))
    }
}

/// How a sleep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slept {
    Fully,
    Cancelled,
}

/// Sleeps `duration`, or less when `cancelled` (the request's `ct.cancelled()`) ends
/// first.
pub async fn sleep_unless_cancelled(
    duration: Duration,
    cancelled: impl Future<Output = ()>,
) -> Slept {
    tokio::select! {
        () = tokio::time::sleep(duration) => Slept::Fully,
        () = cancelled => Slept::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_lists_what_arrived_in_order_with_the_wire_names() {
        let log = CancelLog::default();
        assert_eq!(log.to_json(), "[]");
        log.record(CancelledNotificationParam::new(
            Some(RequestId::Number(3)),
            Some("timed out".into()),
        ));
        log.record(CancelledNotificationParam::new(
            Some(RequestId::String("a-7".into())),
            None,
        ));
        log.record(CancelledNotificationParam::new(None, Some("bye".into())));
        assert_eq!(
            log.to_json(),
            r#"[{"requestId":3,"reason":"timed out"},{"requestId":"a-7","reason":null},{"requestId":null,"reason":"bye"}]"#
        );
    }

    #[test]
    fn a_clone_shares_the_log() {
        let log = CancelLog::default();
        log.clone().record(CancelledNotificationParam::new(
            Some(RequestId::Number(1)),
            None,
        ));
        assert_eq!(log.to_json(), r#"[{"requestId":1,"reason":null}]"#);
    }

    #[tokio::test]
    async fn a_cancelled_sleep_ends_early() {
        let start = std::time::Instant::now();
        let cancel_soon = tokio::time::sleep(Duration::from_millis(10));
        let slept = sleep_unless_cancelled(Duration::from_secs(600), cancel_soon).await;
        assert_eq!(slept, Slept::Cancelled);
        assert!(start.elapsed() < Duration::from_secs(60));
        let never = std::future::pending();
        let slept = sleep_unless_cancelled(Duration::from_millis(10), never).await;
        assert_eq!(slept, Slept::Fully);
    }
}
