use super::*;
use std::io::Write;
use std::net::{Ipv6Addr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cancel::Cancel;

#[test]
fn private_and_special_addresses_are_blocked() {
    let cases: &[(&str, bool)] = &[
        ("127.0.0.1", true),
        ("127.255.0.9", true),
        ("10.1.2.3", true),
        ("172.16.0.1", true),
        ("172.31.255.255", true),
        ("172.32.0.1", false),
        ("192.168.1.1", true),
        ("169.254.169.254", true),
        ("100.64.0.1", true),
        ("100.127.255.255", true),
        ("100.128.0.1", false),
        ("0.0.0.0", true),
        ("224.0.0.1", true),
        ("255.255.255.255", true),
        ("8.8.8.8", false),
        ("93.184.216.34", false),
        ("::1", true),
        ("::", true),
        ("fe80::1", true),
        ("fd00::1", true),
        ("fc12::1", true),
        ("ff02::1", true),
        ("::ffff:127.0.0.1", true),
        ("::ffff:10.0.0.1", true),
        ("::ffff:8.8.8.8", false),
        ("::127.0.0.1", true),
        ("64:ff9b::a9fe:a9fe", true),
        ("64:ff9b:1::8.8.8.8", true),
        ("64:ff9b:1:ffff::1", true),
        ("::ffff:0:127.0.0.1", true),
        ("::ffff:0:10.1.1.1", true),
        ("::ffff:0:8.8.8.8", false),
        ("192.0.2.1", true),
        ("192.0.2.255", true),
        ("192.0.3.1", false),
        ("198.51.100.7", true),
        ("203.0.113.9", true),
        ("2001:db8::1", true),
        ("100::1", true),
        ("2002:7f00:1::", true),
        ("2606:4700:4700::1111", false),
    ];
    for (ip, blocked) in cases {
        let addr: IpAddr = ip.parse().unwrap();
        assert_eq!(blocked_reason(addr).is_some(), *blocked, "{ip}");
    }
    assert!(blocked_reason(IpAddr::V6(Ipv6Addr::LOCALHOST))
        .unwrap()
        .contains("loopback"));
}

#[test]
fn redirect_locations_are_joined_to_the_url() {
    let base: Uri = "https://example.com/docs/guide/page?x=1".parse().unwrap();
    let cases: &[(&str, &str)] = &[
        ("https://other.org/a", "https://other.org/a"),
        ("//cdn.example.com/x", "https://cdn.example.com/x"),
        ("/root?q=2", "https://example.com/root?q=2"),
        ("next", "https://example.com/docs/guide/next"),
        ("../up", "https://example.com/docs/up"),
        ("./same/../here", "https://example.com/docs/guide/here"),
        ("?page=2", "https://example.com/docs/guide/page?page=2"),
    ];
    for (loc, want) in cases {
        assert_eq!(join_url(&base, loc), *want, "{loc}");
    }
}

/// A local HTTP server answering by path; counts connections.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

fn serve(route: fn(&str, u16) -> Vec<u8>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut req = Vec::new();
            let mut byte = [0u8; 1];
            while !req.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => req.push(byte[0]),
                    _ => break,
                }
            }
            let req = String::from_utf8_lossy(&req);
            let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = stream.write_all(&route(&path, port));
        }
    });
    Server { port, hits }
}

fn reply(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn routes(path: &str, port: u16) -> Vec<u8> {
    match path {
            "/page" => reply(
                "200 OK",
                "Content-Type: text/html; charset=utf-8\r\n",
                b"<html><head><title>Hi</title><script>evil()</script></head><body><p>Hello &amp; welcome</p></body></html>",
            ),
            "/json" => reply("200 OK", "Content-Type: application/json\r\n", br#"{"a": 1}"#),
            "/png" => reply("200 OK", "Content-Type: image/png\r\n", b"\x89PNG\r\n\x1a\n\0\0"),
            "/blob" => reply("200 OK", "", b"\0\x01\x02binary"),
            "/big" => reply("200 OK", "Content-Type: text/plain\r\n", &[b'x'; 5000]),
            "/missing" => reply("404 Not Found", "Content-Type: text/plain\r\n", b"no such page"),
            "/r1" => reply("302 Found", "Location: /r2\r\n", b""),
            "/r2" => reply("301 Moved Permanently", "Location: page\r\n", b""),
            "/to-ftp" => reply("302 Found", "Location: ftp://example.com/x\r\n", b""),
            "/to-other-port" => reply(
                "302 Found",
                &format!("Location: http://127.0.0.1:{}/page\r\n", port.wrapping_add(1)),
                b"",
            ),
            p if p.starts_with("/loop") => {
                let n: u32 = p[5..].parse().unwrap_or(0);
                reply("302 Found", &format!("Location: /loop{}\r\n", n + 1), b"")
            }
            _ => reply("500 Internal Server Error", "", b"unexpected"),
        }
}

/// Options that allow 127.0.0.1 on `port` only.
fn only_port(port: u16, cap: usize) -> FetchOptions {
    FetchOptions {
        timeout: Duration::from_secs(10),
        cap,
        check: Arc::new(move |addr: SocketAddr| {
            if addr.port() == port {
                Ok(())
            } else {
                Err("not the test server".into())
            }
        }),
        rule_hint: "test rule",
    }
}

fn fetch(url: &str, opts: &FetchOptions) -> ToolOutput {
    get(url, None, opts, &Cancel::new())
}

#[test]
fn loopback_is_refused_by_default_without_connecting() {
    let server = serve(routes);
    let opts = FetchOptions::from_config(&crate::tools::testing::tools_config());
    for url in [
        format!("http://127.0.0.1:{}/page", server.port),
        format!("http://localhost:{}/page", server.port),
        format!("http://[::1]:{}/page", server.port),
    ] {
        let out = fetch(&url, &opts);
        assert!(out.is_error, "{url}");
        assert!(
            out.content.starts_with(&format!("refused to fetch {url}")),
            "{}",
            out.content
        );
        assert!(out.content.contains("loopback"), "{}", out.content);
        assert!(
            out.content.contains("http_allow_private"),
            "{}",
            out.content
        );
    }
    assert_eq!(server.hits.load(Ordering::SeqCst), 0);
}

#[test]
fn pages_come_back_as_text() {
    let server = serve(routes);
    let mut tools = crate::tools::testing::tools_config();
    tools.http_allow_private = true;
    let opts = FetchOptions::from_config(&tools);
    let base = format!("http://127.0.0.1:{}", server.port);
    let page = fetch(&format!("{base}/page"), &opts);
    assert!(!page.is_error, "{}", page.content);
    assert!(
        page.content
            .starts_with(&format!("GET {base}/page → 200 OK\n")),
        "{}",
        page.content
    );
    assert!(
        page.content.ends_with("Title: Hi\n\nHello & welcome\n"),
        "{}",
        page.content
    );
    assert!(!page.content.contains("evil"));
    let json = fetch(&format!("{base}/json"), &opts);
    assert!(json.content.ends_with("\n{\"a\": 1}\n"), "{}", json.content);
    let png = fetch(&format!("{base}/png"), &opts);
    assert!(
        png.content.contains("[binary content: image/png, 10 B"),
        "{}",
        png.content
    );
    let blob = fetch(&format!("{base}/blob"), &opts);
    assert!(
        blob.content.contains("[binary content (no content type)"),
        "{}",
        blob.content
    );
    let missing = fetch(&format!("{base}/missing"), &opts);
    assert!(missing.is_error);
    assert!(
        missing
            .content
            .starts_with(&format!("GET {base}/missing → 404 Not Found")),
        "{}",
        missing.content
    );
    assert!(missing.content.contains("no such page"));
}

#[test]
fn bodies_are_capped() {
    let server = serve(routes);
    let opts = only_port(server.port, 1000);
    let url = format!("http://127.0.0.1:{}/big", server.port);
    let out = fetch(&url, &opts);
    assert!(out.content.contains(&"x".repeat(1000)));
    assert!(!out.content.contains(&"x".repeat(1001)));
    assert!(
        out.content.contains("[truncated at 1000 bytes"),
        "{}",
        out.content
    );
    let small = get(&url, Some(10), &opts, &Cancel::new());
    assert!(
        small.content.contains("[truncated at 10 bytes"),
        "{}",
        small.content
    );
}

#[test]
fn redirects_are_followed_and_every_hop_is_checked() {
    let server = serve(routes);
    let opts = only_port(server.port, 10_000);
    let base = format!("http://127.0.0.1:{}", server.port);
    let out = fetch(&format!("{base}/r1"), &opts);
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.starts_with(&format!(
            "GET {base}/page → 200 OK (redirected from {base}/r1)"
        )),
        "{}",
        out.content
    );
    let looped = fetch(&format!("{base}/loop0"), &opts);
    assert!(looped.is_error);
    assert!(
        looped.content.contains("redirected more than 5 times"),
        "{}",
        looped.content
    );
    let ftp = fetch(&format!("{base}/to-ftp"), &opts);
    assert!(ftp.is_error);
    assert!(
        ftp.content.contains("only http and https"),
        "{}",
        ftp.content
    );
    let hits_before = server.hits.load(Ordering::SeqCst);
    let other = fetch(&format!("{base}/to-other-port"), &opts);
    assert!(other.is_error);
    assert!(
        other.content.contains("refused to fetch"),
        "{}",
        other.content
    );
    assert!(
        other.content.contains("not the test server"),
        "{}",
        other.content
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), hits_before + 1);
}

#[test]
fn urls_that_are_not_http_are_refused() {
    let opts = only_port(1, 100);
    let cases: &[(&str, &str)] = &[
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.com/", "only http and https"),
        ("example.com/page", "has no scheme"),
        ("localhost:8080/x", "has no scheme"),
        ("data:text/plain,hi", "only http and https"),
        ("http://", "not a valid URL"),
    ];
    for (url, expected) in cases {
        let out = fetch(url, &opts);
        assert!(out.is_error, "{url}");
        assert!(out.content.contains(expected), "{url}: {}", out.content);
    }
}

#[test]
fn a_body_that_stalls_past_the_timeout_is_said_to_have_timed_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut byte = [0u8; 1];
        let mut req = Vec::new();
        while !req.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            req.push(byte[0]);
        }
        // Half the body, then nothing until long after the client's timeout.
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nhalf",
        );
        std::thread::sleep(Duration::from_secs(5));
    });
    let mut opts = only_port(port, 1 << 20);
    opts.timeout = Duration::from_secs(1);
    let out = get(
        &format!("http://127.0.0.1:{port}/slow"),
        None,
        &opts,
        &Cancel::new(),
    );
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("timed out after 1 s"),
        "{}",
        out.content
    );
}
