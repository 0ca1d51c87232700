use std::io::{Cursor, Read};

use super::*;

/// Hands out one byte per read: every line end falls across reads.
struct Trickle(Cursor<Vec<u8>>);

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(1);
        self.0.read(&mut buf[..n])
    }
}

fn events(input: &[u8], max: usize) -> (Vec<Event>, Option<String>) {
    let whole = read_events(SseReader::new(Cursor::new(input.to_vec()), max));
    let trickled = read_events(SseReader::new(Trickle(Cursor::new(input.to_vec())), max));
    assert_eq!(whole, trickled, "byte by byte differs for {input:?}");
    whole
}

fn read_events(mut reader: SseReader<impl Read>) -> (Vec<Event>, Option<String>) {
    let mut out = Vec::new();
    loop {
        match reader.next_event() {
            Ok(Some(e)) => out.push(e),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(format!("{e:?}"))),
        }
    }
}

fn data(d: &str) -> Event {
    Event {
        data: Some(d.into()),
        ..Event::default()
    }
}

#[test]
fn event_streams_parse_as_the_standard_says() {
    let cases: &[(&str, &[u8], Vec<Event>)] = &[
        ("LF", b"data: a\n\ndata: b\n\n", vec![data("a"), data("b")]),
        ("CRLF", b"data: a\r\n\r\n", vec![data("a")]),
        (
            "CRLF inside an event",
            b"data: a\r\ndata: b\r\n\r\n",
            vec![data("a\nb")],
        ),
        (
            "CR alone",
            b"data: a\r\rdata: b\r\r",
            vec![data("a"), data("b")],
        ),
        (
            "data lines join",
            b"data: {\"a\":\ndata: 1}\n\n",
            vec![data("{\"a\":\n1}")],
        ),
        (
            "fields",
            b"event: message\nid: 7\nretry: 1500\ndata: x\n\n",
            vec![Event {
                data: Some("x".into()),
                event: Some("message".into()),
                id: Some("7".into()),
                retry: Some(1500),
            }],
        ),
        ("comments", b": ping\n\n:x\ndata: y\n\n", vec![data("y")]),
        ("no space after colon", b"data:z\n\n", vec![data("z")]),
        (
            "only one space is stripped",
            b"data:  z\n\n",
            vec![data(" z")],
        ),
        ("field without colon", b"data\n\n", vec![data("")]),
        (
            "unknown field ignored",
            b"foo: bar\ndata: q\n\n",
            vec![data("q")],
        ),
        (
            "bad retry ignored",
            b"retry: soon\ndata: q\n\n",
            vec![data("q")],
        ),
        (
            "id with NUL ignored",
            b"id: a\0b\ndata: q\n\n",
            vec![data("q")],
        ),
        (
            "id-only event",
            b"id: 9\n\n",
            vec![Event {
                id: Some("9".into()),
                ..Event::default()
            }],
        ),
        (
            "byte order mark",
            b"\xEF\xBB\xBFdata: q\n\n",
            vec![data("q")],
        ),
        (
            "cut at the end is dropped",
            b"data: a\n\ndata: b\n",
            vec![data("a")],
        ),
        ("blank lines alone", b"\n\n\r\n", vec![]),
    ];
    for (name, input, want) in cases {
        let (got, err) = events(input, 1024);
        assert_eq!(err, None, "{name}");
        assert_eq!(&got, want, "{name}");
    }
}

#[test]
fn a_line_or_event_over_the_limit_ends_the_stream() {
    let cases: &[(&str, Vec<u8>)] = &[
        (
            "one long line",
            [b"data: ".as_slice(), &[b'x'; 40], b"\n\n"].concat(),
        ),
        (
            "a line without end",
            [b"data: ".as_slice(), &[b'x'; 4000]].concat(),
        ),
        ("many short lines", b"data: 1234567\n".repeat(4)),
    ];
    for (name, input) in cases {
        let (got, err) = events(input, 32);
        assert!(got.is_empty(), "{name}");
        assert_eq!(err.as_deref(), Some("TooLarge"), "{name}");
    }
    // The limit is per event: many small events pass.
    let (got, err) = events(&b"data: 1234567\n\n".repeat(20), 32);
    assert_eq!((got.len(), err), (20, None));
}
