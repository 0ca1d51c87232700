//! rmcp's `StreamableHttpClient` implemented on ureq (blocking, run on tokio's blocking
//! pool), so MCP over HTTP costs no second HTTP stack (reqwest would add 0.8–2 MB).

use crate::config::Secret;

/// Placeholder until the ureq client lands (replaced by the h4-http branch).
pub(super) fn transport(
    url: &str,
    headers: &[(String, String)],
    bearer: Option<&Secret>,
) -> Result<rmcp::transport::child_process::TokioChildProcess, String> {
    let _ = (headers, bearer);
    Err(format!("streamable HTTP ({url}) is not built yet"))
}
