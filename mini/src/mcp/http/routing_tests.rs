use super::*;

#[test]
fn routing_headers_name_the_method_and_tool_and_encode_what_is_not_plain() {
    let headers = |body: &str| -> Vec<(String, String)> {
        routing_headers(body.as_bytes())
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(
        headers(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#),
        [
            ("mcp-method".to_string(), "tools/call".to_string()),
            ("mcp-name".to_string(), "echo".to_string())
        ]
    );
    // Not plain ASCII, or spaces at an end: standard base64 with padding.
    let named = |name: &str| {
        headers(&format!(
            r#"{{"method":"tools/call","params":{{"name":"{name}"}}}}"#
        ))[1]
            .1
            .clone()
    };
    assert_eq!(named("日本"), "=?base64?5pel5pys?=");
    assert_eq!(named(" a"), "=?base64?IGE=?=");
    assert_eq!(named("abé"), "=?base64?YWLDqQ==?=");
    assert!(headers("not json").is_empty());
}
