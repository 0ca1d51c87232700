//! The client against a loopback server written here from RFC 6455: what a server sends
//! is built byte by byte, what the client sends is unmasked and checked.

use super::*;
use std::net::TcpListener;
use std::thread::JoinHandle;

/// A frame as a server sends it (never masked).
fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
    match payload.len() {
        n @ 0..=125 => f.push(n as u8),
        n @ 126..=0xFFFF => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(payload);
    f
}

/// A frame the client sent: (fin, opcode, unmasked payload); panics when it is not masked.
fn client_frame(s: &mut impl Read) -> (bool, u8, Vec<u8>) {
    let mut head = [0u8; 2];
    s.read_exact(&mut head).unwrap();
    assert!(head[1] & 0x80 != 0, "a client frame must be masked");
    let len = match head[1] & 0x7F {
        126 => {
            let mut n = [0u8; 2];
            s.read_exact(&mut n).unwrap();
            u64::from(u16::from_be_bytes(n))
        }
        127 => {
            let mut n = [0u8; 8];
            s.read_exact(&mut n).unwrap();
            u64::from_be_bytes(n)
        }
        n => u64::from(n),
    };
    let mut mask = [0u8; 4];
    s.read_exact(&mut mask).unwrap();
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).unwrap();
    for (i, b) in data.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    (head[0] & 0x80 != 0, head[0] & 0x0F, data)
}

/// Reads the upgrade request; returns its head.
fn read_request(s: &mut impl Read) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The 101 answer to a request head.
fn switching(head: &str) -> String {
    let key = header_of(head, "sec-websocket-key").expect("a key");
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_for(key)
    )
}

/// A one-connection server on loopback running `serve`; its URL.
fn server(serve: impl FnOnce(TcpStream) + Send + 'static) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        serve(s);
    });
    (format!("ws://{addr}/events?ticket=t1"), handle)
}

const T: Duration = Duration::from_secs(5);

#[test]
fn the_rfc_example_key_gives_the_rfc_accept() {
    assert_eq!(
        accept_for("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[test]
fn urls_are_read_with_their_port_path_and_query() {
    let t = Target::parse("wss://open.example.com/ws?ticket=a%20b").unwrap();
    assert_eq!(
        t,
        Target {
            tls: true,
            host: "open.example.com".into(),
            port: 443,
            authority: "open.example.com".into(),
            path: "/ws?ticket=a%20b".into(),
        }
    );
    let t = Target::parse("WS://[::1]:8080").unwrap();
    assert_eq!((t.tls, t.host.as_str(), t.port), (false, "::1", 8080));
    assert_eq!((t.authority.as_str(), t.path.as_str()), ("[::1]:8080", "/"));
    let t = Target::parse("ws://h:9?x=1#frag").unwrap();
    assert_eq!((t.port, t.path.as_str()), (9, "/?x=1"));
    for bad in [
        "http://h/",
        "ws://",
        "ws://:80/",
        "ws://h:port/",
        "ws://u@h/",
        "ws://[::1/",
        "wss://h/a b",
    ] {
        assert!(matches!(Target::parse(bad), Err(WsError::Url(_))), "{bad}");
    }
}

#[test]
fn a_conversation_fragments_pings_both_kinds_and_a_close() {
    let (url, server) = server(|mut s| {
        let head = read_request(&mut s);
        assert!(
            head.starts_with("GET /events?ticket=t1 HTTP/1.1\r\n"),
            "{head}"
        );
        assert_eq!(header_of(&head, "upgrade"), Some("websocket"));
        assert_eq!(header_of(&head, "sec-websocket-version"), Some("13"));
        assert_eq!(header_of(&head, "x-app"), Some("evolve"));
        s.write_all(switching(&head).as_bytes()).unwrap();
        // A text in two fragments with a ping between them, then a binary message,
        // all in one write: the client splits what arrives together.
        let mut burst = server_frame(false, OP_TEXT, "héllo, ".as_bytes());
        burst.extend(server_frame(true, OP_PING, b"are you there"));
        burst.extend(server_frame(true, OP_CONTINUATION, "wörld".as_bytes()));
        burst.extend(server_frame(true, OP_BINARY, &[0, 1, 2, 255]));
        s.write_all(&burst).unwrap();
        // The ping is answered with its own payload.
        assert_eq!(
            client_frame(&mut s),
            (true, OP_PONG, b"are you there".to_vec())
        );
        // The client's messages arrive masked and whole; a long one uses 16 bits.
        assert_eq!(client_frame(&mut s), (true, OP_TEXT, b"ack 1".to_vec()));
        let long = client_frame(&mut s);
        assert_eq!((long.1, long.2.len()), (OP_BINARY, 70_000));
        s.write_all(&server_frame(true, OP_BINARY, &vec![7u8; 300]))
            .unwrap();
        let mut close = 4000u16.to_be_bytes().to_vec();
        close.extend_from_slice(b"bye");
        s.write_all(&server_frame(true, OP_CLOSE, &close)).unwrap();
        assert_eq!(
            client_frame(&mut s),
            (true, OP_CLOSE, 4000u16.to_be_bytes().to_vec())
        );
    });
    let mut ws = connect(&url, &[("X-App", "evolve")], T).unwrap();
    assert_eq!(ws.read().unwrap(), Message::Text("héllo, wörld".into()));
    assert_eq!(ws.read().unwrap(), Message::Binary(vec![0, 1, 2, 255]));
    ws.send_text("ack 1").unwrap();
    ws.send_binary(&vec![9u8; 70_000]).unwrap();
    assert_eq!(ws.read().unwrap(), Message::Binary(vec![7u8; 300]));
    assert_eq!(
        ws.read().unwrap(),
        Message::Close(Some((4000, "bye".into())))
    );
    assert!(matches!(ws.read(), Err(WsError::Closed)));
    assert!(matches!(ws.send_text("late"), Err(WsError::Closed)));
    server.join().unwrap();
}

#[test]
fn a_refused_upgrade_says_the_status_and_what_the_server_said() {
    let (url, server) = server(|mut s| {
        read_request(&mut s);
        let body = r#"{"code":"invalid_ticket","message":"ticket expired"}"#;
        let answer = format!(
            "HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(answer.as_bytes()).unwrap();
    });
    let e = connect(&url, &[], T).unwrap_err();
    match &e {
        WsError::Refused { status, body } => {
            assert_eq!(*status, 403);
            assert!(body.contains("ticket expired"), "{body}");
        }
        other => panic!("{other:?}"),
    }
    server.join().unwrap();
}

#[test]
fn a_wrong_handshake_is_refused() {
    type Answer = fn(&str) -> String;
    let cases: [(Answer, &str); 4] = [
        (
            |_| {
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n"
                    .into()
            },
            "does not answer the key",
        ),
        (
            |head| switching(head).replace("Upgrade: websocket\r\n", ""),
            "Upgrade: websocket",
        ),
        (
            |head| switching(head).replace("\r\n\r\n", "\r\nSec-WebSocket-Extensions: x\r\n\r\n"),
            "extension",
        ),
        (
            |_| "HTTP/1.1 101 OK\r\nUpgrade".into(),
            "closed the connection",
        ),
    ];
    for (answer, want) in cases {
        let (url, server) = server(move |mut s| {
            let head = read_request(&mut s);
            s.write_all(answer(&head).as_bytes()).unwrap();
        });
        let e = connect(&url, &[], T).unwrap_err();
        assert!(
            matches!(&e, WsError::Handshake(m) if m.contains(want)),
            "{want}: {e:?}"
        );
        server.join().unwrap();
    }
}

#[test]
fn what_a_server_must_not_send_ends_the_connection_with_1002() {
    let cases: [(Vec<u8>, &str); 6] = [
        (
            {
                let mut f = server_frame(true, OP_TEXT, b"hi");
                f[1] |= 0x80;
                f.splice(2..2, [1, 2, 3, 4]);
                f
            },
            "masked",
        ),
        (
            {
                let mut f = server_frame(true, OP_TEXT, b"hi");
                f[0] |= 0x40;
                f
            },
            "reserved bits",
        ),
        (server_frame(false, OP_PING, b"x"), "control frame"),
        (
            server_frame(true, OP_CONTINUATION, b"x"),
            "no message begun",
        ),
        (server_frame(true, OP_TEXT, &[0xff, 0xfe]), "not UTF-8"),
        (server_frame(true, 0x3, b""), "unknown opcode"),
    ];
    for (frame, want) in cases {
        let (url, server) = server(move |mut s| {
            let head = read_request(&mut s);
            s.write_all(switching(&head).as_bytes()).unwrap();
            s.write_all(&frame).unwrap();
            assert_eq!(
                client_frame(&mut s),
                (true, OP_CLOSE, 1002u16.to_be_bytes().to_vec()),
                "{want}"
            );
        });
        let mut ws = connect(&url, &[], T).unwrap();
        let e = ws.read().unwrap_err();
        assert!(
            matches!(&e, WsError::Protocol(m) if m.contains(want)),
            "{want}: {e:?}"
        );
        assert!(matches!(ws.read(), Err(WsError::Closed)));
        server.join().unwrap();
    }
}

#[test]
fn an_oversized_message_is_refused_before_it_is_read() {
    let (url, server) = server(|mut s| {
        let head = read_request(&mut s);
        s.write_all(switching(&head).as_bytes()).unwrap();
        // Only the header of a frame claiming 1 GiB: the client must not wait for it.
        let mut f = vec![0x80 | OP_BINARY, 127];
        f.extend_from_slice(&(1u64 << 30).to_be_bytes());
        let _ = s.write_all(&f);
    });
    let mut ws = connect(&url, &[], T).unwrap();
    let e = ws.read().unwrap_err();
    assert!(
        matches!(e, WsError::TooBig { limit } if limit == MAX_MESSAGE),
        "{e:?}"
    );
    server.join().unwrap();
}

#[test]
fn a_quiet_server_times_a_read_out_and_the_connection_still_works() {
    let (url, server) = server(|mut s| {
        let head = read_request(&mut s);
        s.write_all(switching(&head).as_bytes()).unwrap();
        // Quiet past the client's read timeout; then a pong nobody asked for (skipped)
        // and a message.
        std::thread::sleep(Duration::from_millis(300));
        s.write_all(&server_frame(true, OP_PONG, b"keep")).unwrap();
        s.write_all(&server_frame(true, OP_TEXT, b"event")).unwrap();
    });
    let mut ws = connect(&url, &[], T).unwrap();
    ws.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let e = ws.read().unwrap_err();
    assert!(e.is_timeout(), "{e:?}");
    ws.set_read_timeout(Some(T)).unwrap();
    assert_eq!(ws.read().unwrap(), Message::Text("event".into()));
    server.join().unwrap();
}

#[test]
fn a_server_that_hangs_up_is_an_error_not_a_message() {
    let (url, server) = server(|mut s| {
        let head = read_request(&mut s);
        s.write_all(switching(&head).as_bytes()).unwrap();
        s.write_all(&[0x81]).unwrap(); // half a frame header, then gone
    });
    let mut ws = connect(&url, &[], T).unwrap();
    server.join().unwrap();
    let e = ws.read().unwrap_err();
    assert!(
        matches!(&e, WsError::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof),
        "{e:?}"
    );
    assert!(matches!(ws.read(), Err(WsError::Closed)));
}

#[test]
fn nothing_listening_and_bad_headers_are_said_plainly() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = connect(&format!("ws://127.0.0.1:{port}/"), &[], T).unwrap_err();
    assert!(
        matches!(&e, WsError::Connect { host, .. } if host == "127.0.0.1"),
        "{e:?}"
    );
    let (url, server) = server(|mut s| {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    let e = connect(&url, &[("X-Evil", "a\r\nHost: other")], T).unwrap_err();
    assert!(matches!(e, WsError::Handshake(_)), "{e:?}");
    server.join().unwrap();
}

/// `wss://` against a TLS server whose certificate (made by `openssl`) is the only one
/// trusted; a client trusting other certificates refuses it.
#[test]
fn wss_checks_the_servers_certificate() {
    let dir = crate::testing::TempDir::new("ws-tls");
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    // CI installs openssl (Debian's); elsewhere the case says why it did not run.
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("openssl is not installed here: the TLS case is not run");
        return;
    }
    let pem = std::fs::read(&cert).unwrap();
    let certs: Vec<_> = ureq::tls::parse_pem(&pem)
        .filter_map(|i| match i {
            Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    let key_der = {
        let pem = std::fs::read_to_string(&key).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        STANDARD.decode(b64).unwrap()
    };
    let server_config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![rustls::pki_types::CertificateDer::from(
            certs[0].der().to_vec(),
        )],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key_der.into()),
    )
    .unwrap();
    let server_config = Arc::new(server_config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serving = std::thread::spawn(move || {
        for i in 0..2 {
            let (tcp, _) = listener.accept().unwrap();
            let conn = rustls::ServerConnection::new(Arc::clone(&server_config)).unwrap();
            let mut s = rustls::StreamOwned::new(conn, tcp);
            if i == 0 {
                let head = read_request(&mut s);
                s.write_all(switching(&head).as_bytes()).unwrap();
                s.write_all(&server_frame(true, OP_TEXT, b"over tls"))
                    .unwrap();
                s.flush().unwrap();
                let _ = client_frame(&mut s);
            } else {
                // The untrusting client gives up in the TLS handshake.
                let mut buf = [0u8; 64];
                let _ = s.read(&mut buf);
            }
        }
    });
    let url = format!("wss://localhost:{port}/stream");
    let trusted = RootCerts::Specific(Arc::new(certs));
    let mut ws = connect_with(&url, &[], T, &trusted).unwrap();
    assert_eq!(ws.read().unwrap(), Message::Text("over tls".into()));
    ws.close();
    let e = connect_with(&url, &[], T, &RootCerts::WebPki).unwrap_err();
    assert!(
        matches!(&e, WsError::Io(io) if io.to_string().contains("certificate")),
        "{e:?}"
    );
    serving.join().unwrap();
}
