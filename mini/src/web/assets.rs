//! The browser UI, compiled into the binary from `static/` (see `mini/build.rs`).
//!
//! A file is found by its exact name in the embedded table, so no request path can
//! reach anything else on disk (`/static/../config.toml` is simply not a name). HTML
//! pages carry a strict Content-Security-Policy: scripts and styles only from this
//! server, no inline code, no framing, no requests elsewhere.

use super::http::{Request, Response};

/// (file name, contents) of every file in `static/`.
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/static_files.rs"));

/// The policy of every HTML page.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

/// An embedded file.
pub fn file(name: &str) -> Option<&'static [u8]> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
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

/// FNV-1a of the contents: the file's ETag (the binary changes, the tag changes).
fn etag(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    });
    format!("\"{hash:016x}\"")
}

/// Serves an embedded file by name (404 when there is none).
pub fn serve(req: &Request, name: &str) -> Response<'static> {
    let Some(bytes) = file(name) else {
        return super::error(404, format!("no such file: {name}"));
    };
    let tag = etag(bytes);
    if req.header("if-none-match") == Some(tag.as_str()) {
        return Response::bytes(304, mime(name), &b""[..]).with("ETag", tag);
    }
    let mut resp = Response::bytes(200, mime(name), bytes)
        .with("ETag", tag)
        .with("Cache-Control", "no-cache");
    if name.ends_with(".html") {
        resp = resp
            .with("Content-Security-Policy", CSP)
            .with("X-Frame-Options", "DENY");
    }
    resp
}
