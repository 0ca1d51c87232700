use super::*;

const TOKEN: &str = "tok-5ecret-0123456789";

#[test]
fn bad_definitions_are_refused_with_what_to_fix() {
    let secret = Secret::new(TOKEN);
    let h = |n: &str, v: &str| vec![(n.to_string(), v.to_string())];
    // URL, headers, bearer, what the error says.
    type Case<'a> = (&'a str, Vec<(String, String)>, Option<&'a Secret>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "ftp://host/mcp",
            vec![],
            None,
            "not an http:// or https:// URL",
        ),
        (
            "127.0.0.1:3001/mcp",
            vec![],
            None,
            "not an http:// or https://",
        ),
        (
            "http://u:pw@/mcp?key=abc",
            vec![],
            None,
            "http:///mcp is not",
        ),
        (
            "http://h/mcp",
            h("bad name", "v"),
            None,
            "not a valid HTTP header name",
        ),
        (
            "http://h/mcp",
            h("X-Key", "a\nb"),
            None,
            "header \"X-Key\" has characters",
        ),
        (
            "http://h/mcp",
            h("Mcp-Session-Id", "x"),
            None,
            "set by the MCP client itself",
        ),
        (
            "http://h/mcp",
            h("MCP-Protocol-Version", "x"),
            None,
            "set by the MCP client itself",
        ),
        (
            "http://h/mcp",
            h("Accept", "x"),
            None,
            "set by the MCP client itself",
        ),
        (
            "http://h/mcp",
            h("Authorization", "x"),
            Some(&secret),
            "keep one",
        ),
    ];
    for (url, headers, bearer, want) in cases {
        let Err(err) = endpoint(url, &headers, bearer) else {
            panic!("{url} accepted");
        };
        let err = err.to_string();
        assert!(err.contains(want), "{url}: {err}");
        assert!(!err.contains("key=abc") && !err.contains("pw"), "{err}");
    }
    let bad = Secret::new("a\r\nX-Evil: 1");
    let Err(err) = endpoint("http://h/mcp", &[], Some(&bad)) else {
        panic!("a bad token accepted");
    };
    assert_eq!(err, BadEndpoint::TokenCharacters);
    let err = err.to_string();
    assert!(
        err.contains("bearer token") && !err.contains("Evil"),
        "{err}"
    );
    let Ok(ok) = endpoint("https://h:8443/mcp", &h("X-Team", "blue"), Some(&secret)) else {
        panic!("a good definition refused");
    };
    let headers: Vec<(&str, &str)> = ok
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap_or("?")))
        .collect();
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(
        headers,
        [("x-team", "blue"), ("authorization", bearer.as_str())]
    );
    assert!(ok.headers.iter().all(|(_, v)| v.is_sensitive()));
}

#[test]
fn shown_urls_keep_no_credentials() {
    let cases = [
        ("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/mcp"),
        ("https://user:pw@h.example/mcp", "https://h.example/mcp"),
        (
            "https://h.example/mcp?api_key=abc#x",
            "https://h.example/mcp",
        ),
        ("https://h.example?token=abc", "https://h.example"),
        ("https://a@b@h.example/p", "https://h.example/p"),
    ];
    for (url, want) in cases {
        assert_eq!(shown_url(url), want, "{url}");
    }
}
