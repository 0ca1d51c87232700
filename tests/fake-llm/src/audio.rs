//! `POST /audio/transcriptions` as OpenAI documents it: a `multipart/form-data` body with
//! `file` (the audio, with a file name whose extension names the format) and `model`,
//! optionally `response_format` (`json`, the default: `{"text": …}`; `text`: the words
//! alone; `verbose_json`: the words with `task`, `language`, `duration`, `segments`).
//!
//! What the fake hears is deterministic: the file's bytes read as text, a leading format
//! signature (`OggS`, `RIFF….WAVE`, `fLaC`, `ID3`) and control characters left out, white
//! space folded — so a test's "voice note" `b"OggS turn on the lights"` says "turn on the
//! lights". A reply queued with [`crate::FakeLlm::push_transcription`] answers instead
//! (a status, a delay, a raw body, other words). Like a real server it knows its models:
//! a name without `whisper` or `transcribe` in it is a 404, a request without `file` or
//! `model` a 400.

use serde_json::{json, Value};

use crate::Reply;

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormPart {
    /// `name` of its `Content-Disposition`.
    pub name: String,
    /// `filename`, for a file.
    pub filename: Option<String>,
    /// Its own `Content-Type`, if it has one.
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

impl FormPart {
    /// The data as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

/// The parts of a body sent as `content_type` (`multipart/form-data; boundary=…`);
/// `None` when it is not a well-formed form.
pub fn parse_form(content_type: &str, body: &[u8]) -> Option<Vec<FormPart>> {
    let (kind, params) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_string())
    })?;
    let delim = format!("--{boundary}").into_bytes();
    let mut next_delim = b"\r\n".to_vec();
    next_delim.extend_from_slice(&delim);
    let mut rest = body.strip_prefix(delim.as_slice())?;
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Some(parts);
        }
        rest = rest.strip_prefix(b"\r\n")?;
        let end = find(rest, &next_delim)?;
        let part = &rest[..end];
        rest = &rest[end + next_delim.len()..];
        let split = find(part, b"\r\n\r\n")?;
        let head = std::str::from_utf8(&part[..split]).ok()?;
        let mut out = FormPart {
            name: String::new(),
            filename: None,
            content_type: None,
            data: part[split + 4..].to_vec(),
        };
        for line in head.split("\r\n") {
            let (k, v) = line.split_once(':')?;
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                for p in v.split(';').skip(1) {
                    let Some((pk, pv)) = p.split_once('=') else {
                        continue;
                    };
                    let pv = pv.trim().trim_matches('"').to_string();
                    match pk.trim() {
                        "name" => out.name = pv,
                        "filename" => out.filename = Some(pv),
                        _ => {}
                    }
                }
            } else if k.trim().eq_ignore_ascii_case("content-type") {
                out.content_type = Some(v.trim().to_string());
            }
        }
        parts.push(out);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The words the fake hears in `audio` (see the module docs).
pub fn heard(audio: &[u8]) -> String {
    let body = if audio.len() >= 12 && &audio[..4] == b"RIFF" && &audio[8..12] == b"WAVE" {
        &audio[12..]
    } else if let Some(rest) = [&b"OggS"[..], b"fLaC", b"ID3"]
        .iter()
        .find_map(|m| audio.strip_prefix(*m))
    {
        rest
    } else {
        audio
    };
    let text: String = String::from_utf8_lossy(body)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .filter(|c| *c != '\u{fffd}')
        .collect();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the fake answers a transcription request: a status, a content type and a body,
/// or the scripted reply to send as it is (`Err`).
pub fn answer(
    form: Option<&[FormPart]>,
    scripted: Option<Reply>,
) -> Result<(u16, &'static str, String), Reply> {
    let error = |status: u16, message: String, kind: &str| {
        let body = json!({"error": {"message": message, "type": kind}});
        Ok((status, "application/json", body.to_string()))
    };
    let Some(form) = form else {
        return error(
            400,
            "fake-llm: the body must be multipart/form-data".into(),
            "invalid_request_error",
        );
    };
    let field = |name: &str| form.iter().find(|p| p.name == name);
    let Some(model) = field("model").map(FormPart::text) else {
        return error(
            400,
            "fake-llm: `model` is required".into(),
            "invalid_request_error",
        );
    };
    let Some(file) = field("file") else {
        return error(
            400,
            "fake-llm: `file` is required".into(),
            "invalid_request_error",
        );
    };
    if !(model.contains("whisper") || model.contains("transcribe")) {
        return error(
            404,
            format!("fake-llm: the model `{model}` does not exist or is not a transcription model"),
            "invalid_request_error",
        );
    }
    let text = match scripted {
        None => heard(&file.data),
        Some(Reply::Text(t)) => t,
        Some(other) => return Err(other),
    };
    let format = field("response_format").map_or("json".to_string(), FormPart::text);
    Ok(match format.as_str() {
        "text" => (200, "text/plain; charset=utf-8", text),
        "verbose_json" => (
            200,
            "application/json",
            json!({"task": "transcribe", "language": "english", "duration": 1.0,
                   "text": text, "segments": Value::Array(Vec::new())})
            .to_string(),
        ),
        _ => (200, "application/json", json!({ "text": text }).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/form-data; boundary=XyZ";

    fn body(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (name, file, data) in parts {
            b.extend_from_slice(b"--XyZ\r\n");
            match file {
                Some(f) => b.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\nContent-Type: audio/ogg\r\n\r\n").as_bytes(),
                ),
                None => b.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                ),
            }
            b.extend_from_slice(data);
            b.extend_from_slice(b"\r\n");
        }
        b.extend_from_slice(b"--XyZ--\r\n");
        b
    }

    #[test]
    fn a_form_is_read_part_by_part_and_the_words_are_heard() {
        let b = body(&[
            ("model", None, b"whisper-1"),
            ("file", Some("voice.ogg"), b"OggS\x00turn on\r\nthe lights"),
        ]);
        let form = parse_form(CT, &b).expect("a form");
        assert_eq!(form.len(), 2);
        assert_eq!(form[1].filename.as_deref(), Some("voice.ogg"));
        assert_eq!(form[1].content_type.as_deref(), Some("audio/ogg"));
        assert_eq!(form[1].data, b"OggS\x00turn on\r\nthe lights");
        let (status, _, text) = answer(Some(&form), None).expect("an answer");
        assert_eq!(
            (status, text.as_str()),
            (200, r#"{"text":"turn on the lights"}"#)
        );
        assert!(parse_form("application/json", &b).is_none());
    }

    #[test]
    fn a_request_without_a_file_or_with_a_chat_model_is_refused() {
        let b = body(&[("model", None, b"whisper-1")]);
        let form = parse_form(CT, &b).expect("a form");
        assert_eq!(answer(Some(&form), None).ok().map(|a| a.0), Some(400));
        let b = body(&[("model", None, b"fake-main"), ("file", Some("a.ogg"), b"x")]);
        let form = parse_form(CT, &b).expect("a form");
        assert_eq!(answer(Some(&form), None).ok().map(|a| a.0), Some(404));
        assert_eq!(answer(None, None).ok().map(|a| a.0), Some(400));
    }
}
