//! rmcp's `StreamableHttpClient` implemented on ureq (blocking, run on tokio's blocking
//! pool), so MCP over HTTP costs no second HTTP stack (reqwest would add 0.8–2 MB).
