//! The browser UI, compiled into the binary from `static/` (see `mini/build.rs`).
//!
//! A file is found by its exact name in the embedded table, so no request path can
//! reach anything else on disk (`/static/../config.toml` is simply not a name). HTML
//! pages carry a strict Content-Security-Policy: scripts and styles only from this
//! server, no inline code, no framing, no requests elsewhere.

use super::http::{Request, Response};

/// (file name, ETag of the original bytes, the file gzipped) of every file in
/// `static/`.
pub(crate) static FILES: &[(&str, &str, &[u8])] =
    include!(concat!(env!("OUT_DIR"), "/static_files.rs"));

/// The policy of every HTML page.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

/// An embedded file, as it is in `static/`.
#[cfg(test)]
pub fn file(name: &str) -> Option<Vec<u8>> {
    let (_, _, gz) = FILES.iter().find(|(n, ..)| *n == name)?;
    crate::inflate::gunzip(gz).ok()
}

fn mime(name: &str) -> &'static str {
    match name.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "webmanifest" => "application/manifest+json",
        _ => "application/octet-stream",
    }
}

/// Whether the client takes gzip (`Accept-Encoding: gzip`, not refused with `q=0`).
fn takes_gzip(req: &Request) -> bool {
    req.header("accept-encoding").is_some_and(|v| {
        v.split(',').any(|part| {
            let mut it = part.split(';');
            let coding = it.next().unwrap_or("").trim();
            let refused = it.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q == 0.0))
            });
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
        })
    })
}

/// Serves an embedded file by name (404 when there is none): gzipped as stored to a
/// client that takes it, restored otherwise. Each form has its own ETag.
pub fn serve(req: &Request, name: &str) -> Response<'static> {
    let Some((_, hash, gz)) = FILES.iter().find(|(n, ..)| *n == name) else {
        return super::error(404, format!("no such file: {name}"));
    };
    let gzip = takes_gzip(req);
    let tag = format!("\"{hash}{}\"", if gzip { "-gz" } else { "" });
    if req.header("if-none-match") == Some(tag.as_str()) {
        return Response::bytes(304, mime(name), &b""[..])
            .with("ETag", tag)
            .with("Vary", "Accept-Encoding");
    }
    let mut resp = if gzip {
        Response::bytes(200, mime(name), *gz).with("Content-Encoding", "gzip")
    } else {
        match crate::inflate::gunzip(gz) {
            Ok(bytes) => Response::bytes(200, mime(name), bytes),
            Err(_) => return super::error(500, format!("the embedded {name} is damaged")),
        }
    };
    resp = resp
        .with("ETag", tag)
        .with("Vary", "Accept-Encoding")
        .with("Cache-Control", "no-cache");
    if name.ends_with(".html") {
        resp = resp
            .with("Content-Security-Policy", CSP)
            .with("X-Frame-Options", "DENY");
    }
    resp
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_embedded_file_inflates_to_the_file_in_static() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../static");
        let mut seen = 0;
        for (name, _, gz) in super::FILES {
            let want = std::fs::read(dir.join(name)).expect("the file in static/");
            let got = crate::inflate::gunzip(gz).expect(name);
            if name.ends_with(".js") || name.ends_with(".css") {
                // Squeezed (build.rs): the file's lines of code, trimmed, in order; what
                // is left out is blank or a comment.
                let got = String::from_utf8(got).expect(name);
                let mut served = got.lines().peekable();
                let mut in_comment = false;
                for line in String::from_utf8(want.clone()).expect(name).lines() {
                    let t = line.trim();
                    if !in_comment && served.peek() == Some(&t) {
                        served.next();
                        continue;
                    }
                    let block = in_comment || t.starts_with("/*");
                    let comment = block || t.starts_with("//");
                    assert!(t.is_empty() || comment, "{name}: {t:?} was left out");
                    in_comment = block && !t.ends_with("*/");
                }
                assert_eq!(served.next(), None, "{name}: nothing but its own lines");
            } else {
                assert_eq!(got, want, "{name}");
            }
            assert!(
                gz.len() < want.len() / 2 || want.len() < 4096,
                "{name} is compressed"
            );
            seen += 1;
        }
        assert!(seen >= 8, "the UI's files are embedded");
    }

    #[test]
    fn every_file_of_static_and_its_subfolders_is_embedded_under_its_path() {
        fn walk(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("static/").flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let path = e.path();
                if name.starts_with('.') {
                    continue;
                }
                if path.is_dir() {
                    walk(&path, &format!("{prefix}{name}/"), out);
                } else if !name.ends_with(".md") {
                    out.push(format!("{prefix}{name}"));
                }
            }
        }
        let mut want = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../static"),
            "",
            &mut want,
        );
        want.sort();
        let mut got: Vec<String> = super::FILES.iter().map(|(n, ..)| n.to_string()).collect();
        got.sort();
        assert_eq!(got, want);
        assert!(
            got.iter().any(|n| n.starts_with("js/")) && got.iter().any(|n| !n.contains('/')),
            "top-level files and those of js/: {got:?}"
        );
    }

    #[test]
    fn damaged_input_is_an_error_not_a_panic() {
        let (_, _, gz) = super::FILES[0];
        for cut in [0, 5, 11, gz.len() / 2, gz.len() - 1] {
            assert_eq!(
                crate::inflate::gunzip(&gz[..cut]),
                Err(crate::inflate::Corrupt),
                "cut at {cut}"
            );
        }
        let mut flipped = gz.to_vec();
        for i in (10..flipped.len() - 8).step_by(7) {
            flipped[i] ^= 0x5a;
            let _ = crate::inflate::gunzip(&flipped); // any answer but a panic
        }
        assert_eq!(
            crate::inflate::inflate(&[0x07], 0),
            Err(crate::inflate::Corrupt),
            "block type 3"
        );
    }
}
