//! Speech to text through an OpenAI-compatible `POST /audio/transcriptions` (OpenAI's
//! `whisper-1`, a whisper.cpp server started with `--inference-path
//! /v1/audio/transcriptions`, …): what the request looks like and what its answer means.
//!
//! Decides: the `multipart/form-data` body ([`form`]: `model`, `response_format=json`,
//! then `file` with a name and content type the server can read the format from —
//! [`Audio::sniff`] tells Ogg/Opus, MP3, WAV, FLAC, M4A and WebM from their first bytes);
//! the largest note sent ([`MAX_AUDIO`]); what the answer means ([`parse`]: the `text` of
//! `{"text": …}`; no words is [`TranscribeError::Empty`]); and the errors a user reads
//! ([`TranscribeError`], naming the server and the setting to check). The call itself —
//! retries, timeouts, the key — is the model client's (`Client::transcribe`); what a
//! channel does with the words is the channel's.

use std::fmt;

use serde_json::Value;

use super::wire::{quote, server_message};
use super::LlmError;

/// The largest voice note sent: OpenAI's limit for one file is 25 MB.
pub const MAX_AUDIO: usize = 25 * 1024 * 1024;

/// How much of an unexpected answer an error quotes.
const QUOTE_CHARS: usize = 200;

/// A voice note to transcribe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audio {
    pub bytes: Vec<u8>,
    /// The file name sent (its extension tells the server the format).
    pub name: &'static str,
    pub mime: &'static str,
}

impl Audio {
    /// The audio with the name and type its first bytes show; Ogg (Telegram's and
    /// Feishu's Opus voice notes) when they show nothing known.
    pub fn sniff(bytes: Vec<u8>) -> Audio {
        let head = bytes.get(..12).unwrap_or(&bytes);
        let (name, mime) = match head {
            [b'O', b'g', b'g', b'S', ..] => ("voice.ogg", "audio/ogg"),
            [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'A', b'V', b'E', ..] => {
                ("voice.wav", "audio/wav")
            }
            [b'f', b'L', b'a', b'C', ..] => ("voice.flac", "audio/flac"),
            [b'I', b'D', b'3', ..] => ("voice.mp3", "audio/mpeg"),
            [0xFF, b, ..] if b & 0xE0 == 0xE0 && b & 0x06 != 0 => ("voice.mp3", "audio/mpeg"),
            [_, _, _, _, b'f', b't', b'y', b'p', ..] => ("voice.m4a", "audio/mp4"),
            [0x1A, 0x45, 0xDF, 0xA3, ..] => ("voice.webm", "audio/webm"),
            _ => ("voice.ogg", "audio/ogg"),
        };
        Audio { bytes, name, mime }
    }
}

/// Why a voice note was not transcribed. Each message names the server and says what to
/// check.
#[derive(Debug)]
pub enum TranscribeError {
    /// Larger than [`MAX_AUDIO`] (its size in bytes): not sent.
    TooLarge(usize),
    /// The server heard no words.
    Empty { url: String },
    /// The server could not be reached, refused the request, failed, timed out or
    /// answered something that is not a transcription.
    Server(LlmError),
}

impl fmt::Display for TranscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranscribeError::TooLarge(n) => write!(
                f,
                "the voice note is {:.1} MB, more than the {} MB a transcription server takes",
                *n as f64 / 1e6,
                MAX_AUDIO / (1024 * 1024)
            ),
            TranscribeError::Empty { url } => {
                write!(f, "the transcription server at {url} heard no words")
            }
            TranscribeError::Server(e) => match e {
                LlmError::Status {
                    url,
                    status,
                    message,
                    ..
                } => {
                    let said = if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    };
                    if *status >= 500 || *status == 429 {
                        write!(
                            f,
                            "the transcription server at {url} failed (HTTP {status}{said}) — \
                             check its logs, or try again"
                        )
                    } else {
                        write!(
                            f,
                            "the transcription server at {url} refused the voice note (HTTP \
                             {status}{said}) — check [model] transcription_model and \
                             transcription_base_url"
                        )
                    }
                }
                LlmError::Connect { url, why, .. } => write!(
                    f,
                    "cannot reach the transcription server at {url}: {why} — is it running? \
                     check [model] transcription_base_url"
                ),
                LlmError::Timeout { url, phase } => write!(
                    f,
                    "the transcription server at {url} timed out ({phase}) — a long note on \
                     a slow machine may need a larger [model.timeouts] overall"
                ),
                LlmError::Protocol { url, detail } => write!(
                    f,
                    "unexpected answer from the transcription server at {url}: {detail} — is \
                     transcription_base_url an OpenAI-compatible server?"
                ),
                LlmError::Cancelled => f.write_str("the transcription was cancelled"),
            },
        }
    }
}

impl std::error::Error for TranscribeError {}

/// The `multipart/form-data` body of a transcription request, and its content type.
/// The boundary is one that does not occur in the audio.
pub fn form(model: &str, audio: &Audio) -> (Vec<u8>, String) {
    let mut n = 0u32;
    let boundary = loop {
        let b = format!("evolve-voice-{n:08x}");
        if !contains(&audio.bytes, b.as_bytes()) && !model.contains(&b) {
            break b;
        }
        n += 1;
    };
    let mut body = Vec::with_capacity(audio.bytes.len() + 512);
    let field = |body: &mut Vec<u8>, name: &str, value: &str| {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    };
    // A model name with a line break would end its part early: it is one line.
    let model: String = model.chars().filter(|c| !c.is_control()).collect();
    field(&mut body, "model", &model);
    field(&mut body, "response_format", "json");
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\n\
             Content-Type: {}\r\n\r\n",
            audio.name, audio.mime
        )
        .as_bytes(),
    );
    body.extend_from_slice(&audio.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The words of a 2xx answer: `{"text": …}` (extra fields, as `verbose_json` has, are
/// ignored). `Err(None)`: no words; `Err(Some(detail))`: not a transcription.
pub fn parse(body: &str) -> Result<String, Option<String>> {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return Err(Some(format!(
            "not JSON: {}",
            quote(body, QUOTE_CHARS).trim()
        )));
    };
    match v.get("text") {
        Some(Value::String(t)) => {
            let words = t.split_whitespace().collect::<Vec<_>>().join(" ");
            if words.is_empty() {
                Err(None)
            } else {
                Ok(words)
            }
        }
        _ if v.get("error").is_some() => Err(Some(server_message(body))),
        _ => Err(Some(format!(
            "no `text` in {}",
            quote(body, QUOTE_CHARS).trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts of a form as (headers, content), split on the boundary of its type.
    fn parts(body: &[u8], content_type: &str) -> Vec<(String, Vec<u8>)> {
        let boundary = content_type
            .split_once("boundary=")
            .map(|(_, b)| b)
            .expect("a boundary");
        let delim = format!("--{boundary}");
        let text = body.to_vec();
        let mut out = Vec::new();
        let mut rest: &[u8] = &text;
        assert!(rest.starts_with(delim.as_bytes()), "the body opens a part");
        loop {
            rest = &rest[delim.len()..];
            if rest.starts_with(b"--\r\n") {
                assert_eq!(rest.len(), 4, "nothing after the closing delimiter");
                return out;
            }
            assert!(rest.starts_with(b"\r\n"));
            rest = &rest[2..];
            let end = rest
                .windows(delim.len() + 2)
                .position(|w| w == format!("\r\n{delim}").as_bytes())
                .expect("a part ends");
            let part = &rest[..end];
            let split = part
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("headers end");
            out.push((
                String::from_utf8(part[..split].to_vec()).expect("ascii headers"),
                part[split + 4..].to_vec(),
            ));
            rest = &rest[end + 2..];
        }
    }

    #[test]
    fn the_form_has_the_model_json_format_and_the_file_with_its_name_and_type() {
        let audio = Audio::sniff(b"OggS\x00\x02voice bytes".to_vec());
        let (body, ct) = form("whisper-1", &audio);
        assert!(ct.starts_with("multipart/form-data; boundary="), "{ct}");
        let parts = parts(&body, &ct);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].0, "Content-Disposition: form-data; name=\"model\"");
        assert_eq!(parts[0].1, b"whisper-1");
        assert_eq!(
            parts[1],
            (
                "Content-Disposition: form-data; name=\"response_format\"".to_string(),
                b"json".to_vec()
            )
        );
        assert_eq!(
            parts[2].0,
            "Content-Disposition: form-data; name=\"file\"; filename=\"voice.ogg\"\r\n\
             Content-Type: audio/ogg"
        );
        assert_eq!(parts[2].1, b"OggS\x00\x02voice bytes");
    }

    #[test]
    fn binary_audio_passes_unchanged_and_the_boundary_never_occurs_in_it() {
        // Audio that holds the first boundary and CRLFs, and every byte value.
        let mut bytes = b"RIFF\x00\x00\x00\x00WAVE\r\n--evolve-voice-00000000\r\n".to_vec();
        bytes.extend(0u8..=255);
        let audio = Audio::sniff(bytes.clone());
        assert_eq!((audio.name, audio.mime), ("voice.wav", "audio/wav"));
        let (body, ct) = form("ggml-base", &audio);
        assert!(ct.ends_with("evolve-voice-00000001"), "{ct}");
        assert_eq!(parts(&body, &ct)[2].1, bytes);
        // A model name cannot end its part early.
        let (body, ct) = form("bad\r\nname", &Audio::sniff(vec![1, 2]));
        assert_eq!(parts(&body, &ct)[0].1, b"badname");
    }

    #[test]
    fn the_format_is_read_from_the_first_bytes() {
        let cases: [(&[u8], &str); 8] = [
            (b"OggS\x00", "voice.ogg"),
            (b"ID3\x04\x00", "voice.mp3"),
            (&[0xFF, 0xFB, 0x90, 0x00], "voice.mp3"),
            (b"fLaC\x00", "voice.flac"),
            (b"\x00\x00\x00\x20ftypM4A ", "voice.m4a"),
            (&[0x1A, 0x45, 0xDF, 0xA3, 0x01], "voice.webm"),
            (b"RIFF\x24\x00\x00\x00WAVEfmt ", "voice.wav"),
            (b"#!AMR\n", "voice.ogg"),
        ];
        for (bytes, name) in cases {
            assert_eq!(Audio::sniff(bytes.to_vec()).name, name, "{bytes:?}");
        }
    }

    #[test]
    fn an_answer_gives_its_words_or_says_what_it_is() {
        assert_eq!(
            parse(r#"{"text":" turn on\nthe lights "}"#),
            Ok("turn on the lights".into())
        );
        assert_eq!(
            parse(r#"{"task":"transcribe","language":"chinese","text":"开灯","segments":[]}"#),
            Ok("开灯".into())
        );
        assert_eq!(parse(r#"{"text":"  "}"#), Err(None));
        assert_eq!(parse(r#"{"text":""}"#), Err(None));
        let not_json = parse("turn on the lights").expect_err("text");
        assert!(not_json.is_some_and(|d| d.starts_with("not JSON")));
        let no_text = parse(r#"{"result":"x"}"#).expect_err("no text");
        assert!(no_text.is_some_and(|d| d.contains("no `text`")));
        let error = parse(r#"{"error":{"message":"model not loaded"}}"#).expect_err("error");
        assert_eq!(error, Some("model not loaded".into()));
    }

    #[test]
    fn each_failure_names_the_server_and_what_to_check() {
        let url = "http://127.0.0.1:8081/v1/audio/transcriptions".to_string();
        let status = |status: u16| {
            TranscribeError::Server(LlmError::Status {
                url: url.clone(),
                status,
                message: "boom".into(),
                hint: String::new(),
            })
            .to_string()
        };
        assert!(
            status(500).contains("failed (HTTP 500: boom)"),
            "{}",
            status(500)
        );
        assert!(status(404).contains("check [model] transcription_model"));
        assert!(status(400).contains("refused the voice note"));
        let timeout = TranscribeError::Server(LlmError::Timeout {
            url: url.clone(),
            phase: "whole request",
        })
        .to_string();
        assert!(timeout.contains("timed out (whole request)"), "{timeout}");
        let empty = TranscribeError::Empty { url: url.clone() }.to_string();
        assert!(empty.contains("heard no words") && empty.contains(&url));
        let big = TranscribeError::TooLarge(30_000_000).to_string();
        assert!(big.contains("30.0 MB") && big.contains("25 MB"), "{big}");
    }
}
