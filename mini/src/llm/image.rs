//! Images sent with a question: what is accepted and how a file becomes an image part.
//!
//! Decides: an image goes to the model as an OpenAI `image_url` content part whose URL
//! is a `data:` URL (PNG, JPEG, GIF or WebP, base64, at most [`MAX_IMAGE_BYTES`]
//! decoded) or an `http(s)` URL the model's server fetches itself; a message carries at
//! most [`MAX_IMAGES`]. The type is read from the bytes, not from a file name or a
//! declared type, so a renamed file is refused for what it is. Each image counts as a
//! fixed number of tokens in the budget (the core's estimate, 85 each, as tea-agent counts them).
//! A model that refuses images is the client's to handle (the text goes with a note).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// The largest image accepted, decoded: a phone photo scaled to about 2 000 pixels (the
/// web UI scales bigger ones down before sending; the request body limit is 4 MiB).
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;

/// Images one message may carry.
pub const MAX_IMAGES: usize = 4;

/// The longest `http(s)` image URL accepted.
const MAX_URL_CHARS: usize = 2048;

/// The image types a model server is known to read, by their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A file's bytes as a `data:` URL, or why they cannot be sent.
pub fn data_url(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "is {} — images up to {} are sent; scale it down first",
            super::cap::size_approx(bytes.len()),
            super::cap::size(MAX_IMAGE_BYTES)
        ));
    }
    let Some(mime) = sniff(bytes) else {
        return Err("is not a PNG, JPEG, GIF or WebP image".into());
    };
    Ok(format!("data:{mime};base64,{}", STANDARD.encode(bytes)))
}

/// Checks an image part's URL as a client sent it: a `data:` URL of an accepted type
/// whose bytes are that type and within the cap, or an `http(s)` URL.
pub fn check(url: &str) -> Result<(), String> {
    if let Some(rest) = url.strip_prefix("data:") {
        let Some((head, payload)) = rest.split_once(',') else {
            return Err("a data: URL needs a comma before its data".into());
        };
        let Some(declared) = head.strip_suffix(";base64") else {
            return Err("a data: URL image must be base64 (data:image/png;base64,…)".into());
        };
        // The decoded size is known from the text's length: no need to decode a
        // huge payload to refuse it.
        if payload.len() / 4 * 3 > MAX_IMAGE_BYTES + 2 {
            return Err(format!(
                "the image is over {} decoded",
                super::cap::size(MAX_IMAGE_BYTES)
            ));
        }
        let bytes = STANDARD
            .decode(payload.trim_end())
            .map_err(|e| format!("the image's base64 is not valid: {e}"))?;
        match sniff(&bytes) {
            None => Err("the data is not a PNG, JPEG, GIF or WebP image".into()),
            Some(actual) if !declared.eq_ignore_ascii_case(actual) => {
                Err(format!("the data says {declared} but is {actual}"))
            }
            Some(_) => Ok(()),
        }
    } else if url.starts_with("https://") || url.starts_with("http://") {
        if url.len() > MAX_URL_CHARS || url.chars().any(char::is_whitespace) {
            return Err(format!(
                "an image URL must be one line of at most {MAX_URL_CHARS} characters"
            ));
        }
        Ok(())
    } else {
        Err("an image must be a data: URL (base64) or an http(s) URL".into())
    }
}

/// The note the model reads in place of images it does not take.
pub fn left_out_note(n: usize) -> String {
    if n == 1 {
        "[an image was attached here; this model does not take images, so it was left out]"
            .to_string()
    } else {
        format!(
            "[{n} images were attached here; this model does not take images, so they were \
             left out]"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn a_file_is_sent_for_what_its_bytes_are() {
        let url = data_url(PNG).unwrap();
        assert!(url.starts_with("data:image/png;base64,"), "{url}");
        assert_eq!(check(&url), Ok(()));
        let jpeg = data_url(&[0xFF, 0xD8, 0xFF, 0xE0, 1, 2]).unwrap();
        assert!(jpeg.starts_with("data:image/jpeg;base64,"));
        let webp = data_url(b"RIFF\x10\0\0\0WEBPVP8 ").unwrap();
        assert!(webp.starts_with("data:image/webp;base64,"));
        assert!(data_url(b"GIF89a....")
            .unwrap()
            .starts_with("data:image/gif;"));
        // Text named .png, a PDF: refused for what they are.
        for not_image in [&b"hello, I am text"[..], b"%PDF-1.7", b""] {
            let e = data_url(not_image).unwrap_err();
            assert!(e.contains("not a PNG, JPEG, GIF or WebP"), "{e}");
        }
        let big = [PNG, &vec![0u8; MAX_IMAGE_BYTES]].concat();
        let e = data_url(&big).unwrap_err();
        assert!(e.contains("images up to 2 MiB"), "{e}");
    }

    #[test]
    fn a_clients_image_url_is_checked() {
        let png = format!("data:image/png;base64,{}", STANDARD.encode(PNG));
        let cases: Vec<(String, Result<(), &str>)> = vec![
            (png.clone(), Ok(())),
            ("https://example.org/cat.jpg".into(), Ok(())),
            ("http://127.0.0.1:9/x.png".into(), Ok(())),
            (
                "file:///etc/passwd".into(),
                Err("data: URL (base64) or an http(s)"),
            ),
            (
                "javascript:alert(1)".into(),
                Err("data: URL (base64) or an http(s)"),
            ),
            ("data:image/png,raw".into(), Err("must be base64")),
            ("data:image/png;base64".into(), Err("needs a comma")),
            (
                "data:image/png;base64,@@@@".into(),
                Err("base64 is not valid"),
            ),
            (
                format!("data:image/jpeg;base64,{}", STANDARD.encode(PNG)),
                Err("says image/jpeg but is image/png"),
            ),
            (
                format!(
                    "data:image/png;base64,{}",
                    STANDARD.encode(b"just text here")
                ),
                Err("not a PNG"),
            ),
            (
                format!(
                    "data:image/png;base64,{}",
                    "A".repeat(MAX_IMAGE_BYTES / 3 * 4 + 400)
                ),
                Err("over 2 MiB"),
            ),
            (format!("https://x/{}", "a".repeat(3000)), Err("one line")),
            ("https://x/a b".into(), Err("one line")),
        ];
        for (url, expected) in cases {
            let got = check(&url);
            match expected {
                Ok(()) => assert_eq!(got, Ok(()), "{url:.60}"),
                Err(part) => {
                    let e = got.expect_err(&url[..url.len().min(60)]);
                    assert!(e.contains(part), "{url:.60}: {e}");
                }
            }
        }
    }
}
