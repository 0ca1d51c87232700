use super::*;

#[test]
fn an_old_sse_endpoint_is_named_as_such() {
    let err = |url: &str, status| HttpError {
        url: url.into(),
        kind: HttpErrorKind::Status {
            status,
            body: String::new(),
            location: None,
        },
    };
    for status in [404, 405, 400] {
        let text = err("http://127.0.0.1:3001/sse", status).to_string();
        assert!(
            text.contains("old HTTP+SSE transport") && text.contains("/mcp"),
            "{text}"
        );
    }
    let text = err("http://127.0.0.1:3001/mcp", 404).to_string();
    assert!(
        text.contains("often /mcp") && !text.contains("SSE"),
        "{text}"
    );
}
