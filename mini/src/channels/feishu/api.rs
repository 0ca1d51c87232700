//! Feishu's HTTP API as this client speaks it: one request (JSON in, the API's JSON and
//! the HTTP status out), the tenant access token, and what a refusal means — HTTP 429
//! or code 99991400 is [`ChannelError::RateLimited`]; a refused app id, secret or token
//! is [`ChannelError::Unauthorized`]; 5xx, a network failure or a body that is not the
//! API's JSON are [`ChannelError::Unavailable`]; other refusals are
//! [`ChannelError::Refused`]. The secret and the tenant token are never in a message
//! this module writes.

use std::time::Duration;

use serde_json::{json, Value};

use crate::channels::ChannelError;
use crate::secret::Secret;

/// What the message API and the endpoint need.
#[derive(Clone)]
pub(super) struct Api {
    pub(super) base: String,
    pub(super) app_id: String,
    pub(super) secret: Secret,
    pub(super) agent: ureq::Agent,
}

impl Api {
    fn scrub(&self, text: String) -> String {
        text.replace(self.secret.expose(), "<secret>")
    }

    /// Sends a request; the API's JSON and the HTTP status.
    pub(super) fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&Secret>,
        body: Option<&Value>,
    ) -> Result<(u16, Value, Option<u64>), ChannelError> {
        let url = format!("{}{path}", self.base);
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Content-Type", "application/json; charset=utf-8");
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {}", t.expose()));
        }
        let req = req
            .body(body.map(Value::to_string).unwrap_or_default())
            .map_err(|e| ChannelError::Refused(format!("Feishu {path}: {e}")))?;
        let where_ = crate::secret::display_url(&self.base);
        let mut resp = self.agent.run(req).map_err(|e| {
            ChannelError::Unavailable(
                self.scrub(format!("cannot reach Feishu at {where_} ({path}): {e}")),
            )
        })?;
        let status = resp.status().as_u16();
        let reset = resp
            .headers()
            .get("x-ogw-ratelimit-reset")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let text = resp
            .body_mut()
            .with_config()
            .limit(8 * 1024 * 1024)
            .read_to_string()
            .map_err(|e| {
                ChannelError::Unavailable(format!(
                    "Feishu's answer to {path} could not be read: {e}"
                ))
            })?;
        let v = serde_json::from_str::<Value>(&text).map_err(|_| {
            ChannelError::Unavailable(format!(
                "Feishu answered {path} with HTTP {status} and a body that is not its JSON \
                 ({} bytes) — is base_url https://open.feishu.cn or https://open.larksuite.com?",
                text.len()
            ))
        })?;
        Ok((status, v, reset))
    }

    /// The tenant access token and how long it lives.
    pub(super) fn tenant_token(&self) -> Result<(Secret, Duration), ChannelError> {
        let (status, v, reset) = self.request(
            "POST",
            "/open-apis/auth/v3/tenant_access_token/internal",
            None,
            Some(&json!({"app_id": self.app_id, "app_secret": self.secret.expose()})),
        )?;
        let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
        match v.get("tenant_access_token").and_then(Value::as_str) {
            Some(t) if code == 0 => {
                let life = v.get("expire").and_then(Value::as_u64).unwrap_or(7200);
                Ok((
                    Secret::new(t),
                    Duration::from_secs(life.saturating_sub(60).max(60)),
                ))
            }
            _ => Err(match failure(status, &v, reset, "tenant_access_token") {
                ChannelError::Refused(m) => ChannelError::Unauthorized(format!(
                    "{m} — check [channels.feishu] app_id and app_secret (the app's \
                     credentials page)"
                )),
                e => e,
            }),
        }
    }
}

/// What a refusal of the API means (see the module docs).
pub(super) fn failure(status: u16, v: &Value, reset: Option<u64>, what: &str) -> ChannelError {
    let code = v.get("code").and_then(Value::as_i64).unwrap_or(-1);
    let msg = v.get("msg").and_then(Value::as_str).unwrap_or("no message");
    let said = evolve_core::text::one_line(msg, 300);
    if status == 429 || code == 99991400 {
        return ChannelError::RateLimited(Duration::from_secs(reset.unwrap_or(1).clamp(1, 3600)));
    }
    if status >= 500 {
        return ChannelError::Unavailable(format!("Feishu {what}: HTTP {status} {code} {said}"));
    }
    // 10003/10014: app id or secret; 99991663/99991661/99991668: the token.
    if matches!(
        code,
        10003 | 10014 | 99991663 | 99991661 | 99991668 | 99991664
    ) {
        return ChannelError::Unauthorized(format!("Feishu {what}: {code} {said}"));
    }
    ChannelError::Refused(format!("Feishu {what}: {code} {said}"))
}
