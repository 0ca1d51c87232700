//! One model call from request to [`ChatResponse`]: attempts and retries, the optional
//! parameters a server refuses, the stream → non-stream fallback (the errors a user reads
//! are made in `failure.rs`).
//!
//! Decisions made here:
//! - a stream is retried only while nothing has reached `on_delta` (after that, a retry
//!   would show the user the start of the answer twice);
//! - a 200 stream with no event at all (llama.cpp's answer to stream + tools) is asked
//!   again unstreamed, and the answer handed to `on_delta` in one piece;
//! - a stream whose server answered with a JSON completion anyway is accepted, and so is
//!   an unstreamed request answered with SSE;
//! - an answer is read up to `[model] max_answer_bytes` and no further: the piece that
//!   crosses it is cut at a character, the note `[answer cut at 1 MiB: max_answer_bytes]`
//!   ends the text, the connection is dropped, and the call succeeds (a warning is
//!   logged). The wire is read up to [`cap::wire_limit`] per body or stream line; a body
//!   or line cut there is read as far as it goes (its JSON closed by the core's repair);
//! - a 4xx that names an optional parameter (`response_format`, `max_tokens`,
//!   `temperature`, `stream_options`), or any 400 to a JSON-mode request, is re-sent
//!   without it ([`WireRequest::relax`]);
//! - errors name the URL (without any user:password part), the status and the server's
//!   own message with the API key blanked out, and say what to set.

use std::sync::atomic::Ordering;
use std::time::Instant;

use log::{debug, warn};

use super::cap;
use super::retry::{self, Retry};
use super::sse::{self, SseParser};
use super::stream::{self, Assembler};
use super::transcribe::{self, Audio, TranscribeError};
use super::transport::{self, BodyLimit, Call, Event, Exchange, Next, Payload};
use super::wire::{self, Parsed, WireRequest};
use super::{
    AnswerCut, ChatModel, ChatRequest, ChatResponse, Client, Delta, LlmError, ModelRole, ToolSpec,
    Unreached,
};
use crate::cancel::Cancel;
use crate::secret::display_url;
use evolve_core::history::Message;

/// How much of a bad stream line an error quotes.
const BAD_LINE_CHARS: usize = 200;

/// A failed attempt and whether it may be retried.
type Failed = (LlmError, Retry);

/// What a request sends in the tool mode chosen for it.
#[derive(Clone, Copy)]
pub(super) struct Outgoing<'a> {
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub tool_choice: Option<&'a str>,
}

impl Client {
    /// `base_url` + `path`, with the base's query (Azure's `?api-version=…`, a gateway's
    /// `?api-key=…`) kept after the path rather than swallowing it.
    fn url(&self, path: &str) -> String {
        let base = self.config.base_url.as_str();
        let base = base.split_once('#').map_or(base, |(b, _)| b);
        let (head, query) = base.split_at(base.find('?').unwrap_or(base.len()));
        format!("{}{path}{query}", head.trim_end_matches('/'))
    }

    /// Shortens the first retry's wait (tests).
    #[cfg(test)]
    pub(super) fn with_backoff_start(mut self, d: std::time::Duration) -> Self {
        self.backoff_start = d;
        self
    }

    /// One call as it goes on the wire: `req`'s parameters with `out`'s messages and
    /// tools (which the tool mode may have changed, see [`super::modes`]).
    pub(super) fn send(
        &self,
        req: &ChatRequest,
        out: Outgoing<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<ChatResponse, LlmError> {
        let model = self.model_name(req.role).to_string();
        let url = self.url("/chat/completions");
        let reserved = u32::try_from(self.config.reserved_output).unwrap_or(u32::MAX);
        let mut wire = WireRequest {
            model: &model,
            messages: out.messages,
            tools: out.tools,
            max_tokens: req.max_tokens.or((reserved > 0).then_some(reserved)),
            max_tokens_key: "max_tokens",
            temperature: match req.role {
                ModelRole::Main => req.temperature.or(self.config.temperature),
                ModelRole::Cheap => req.temperature,
            },
            json: req.json,
            stream_options: true,
            tool_choice: out.tool_choice,
            images: !self.images_refused.load(Ordering::Relaxed),
        };
        let shown = display_url(&url);
        let started = Instant::now();
        loop {
            let result = if req.stream {
                self.streamed(&url, &wire, on_delta, cancel)
            } else {
                self.unstreamed(&url, &wire, cancel)
            };
            match result {
                Ok(p) => {
                    if let Some(at) = p.cut {
                        warn!(
                            "{shown}: {model}'s answer passed max_answer_bytes = {} ({}); it is cut there with a note and the rest was not read",
                            cap::size(self.config.max_answer_bytes),
                            match at {
                                AnswerCut::Text => "in the text".to_string(),
                                AnswerCut::ToolArguments(i) =>
                                    format!("in the arguments of tool call {}", i + 1),
                            }
                        );
                    }
                    let usage = p.usage.unwrap_or_default();
                    debug!(
                        "{shown}: {model} answered in {} ms ({} prompt + {} completion tokens)",
                        started.elapsed().as_millis(),
                        usage.prompt_tokens,
                        usage.completion_tokens
                    );
                    let images_left_out = if wire.images {
                        0
                    } else {
                        out.messages.iter().map(|m| m.images.len()).sum()
                    };
                    return Ok(ChatResponse {
                        message: p.message,
                        finish_reason: p.finish_reason,
                        usage,
                        model: p.model.unwrap_or(model.clone()),
                        cut: p.cut,
                        images_left_out,
                    });
                }
                Err(LlmError::Status {
                    status,
                    ref message,
                    ..
                }) if wire.relax(status, message).is_some() => {
                    if wire.images {
                        warn!("{shown} refused an optional parameter (HTTP {status}: {message}); sending the request again without it");
                    } else if !self.images_refused.swap(true, Ordering::Relaxed) {
                        // Remembered for this run: later questions go without images
                        // at once.
                        warn!("{shown}: {model} does not take images (HTTP {status}: {message}); sending the text with a note in their place");
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A streamed call with its retries, and the unstreamed fallback for an empty stream.
    fn streamed(
        &self,
        url: &str,
        wire: &WireRequest<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<Parsed, LlmError> {
        let body = wire.body(true);
        let streamed = self.with_retries(url, wire.model, cancel, || {
            self.stream_attempt(url, &body, on_delta, cancel)
        })?;
        match streamed {
            Some(p) => Ok(p),
            None => {
                warn!("{} answered the streamed request with an empty body; asking again without streaming", display_url(url));
                let p = self.unstreamed(url, wire, cancel)?;
                stream::deliver_whole(&p.message, on_delta);
                Ok(p)
            }
        }
    }

    fn unstreamed(
        &self,
        url: &str,
        wire: &WireRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Parsed, LlmError> {
        let body = wire.body(false);
        self.with_retries(url, wire.model, cancel, || {
            let ex = self.start(url, Some(body.clone()), false, self.answer_limit());
            self.wait_head(&ex, url, cancel)?;
            let (text, cut) = self.wait_body(&ex, url, cancel)?;
            drop(ex); // a cut body: the rest is not read
            let max = self.config.max_answer_bytes;
            parse_body(url, text, cut, max).map_err(|e| (e, Retry::No))
        })
    }

    /// What is read of an answer: [`cap::wire_limit`] bytes of the body (of each line
    /// of a stream), the rest left unread.
    fn answer_limit(&self) -> BodyLimit {
        BodyLimit::Cut(cap::wire_limit(self.config.max_answer_bytes))
    }

    /// `GET /models`.
    pub(super) fn list_models_impl(&self) -> Result<Vec<String>, LlmError> {
        let url = self.url("/models");
        let never = Cancel::new();
        self.with_retries(&url, "-", &never, || {
            let ex = self.start(&url, None, false, BodyLimit::Refuse(transport::MAX_BODY));
            self.wait_head(&ex, &url, &never)?;
            let (text, _) = self.wait_body(&ex, &url, &never)?;
            wire::parse_models(&text).map_err(|detail| {
                let url = display_url(&url);
                (LlmError::Protocol { url, detail }, Retry::No)
            })
        })
    }

    /// `POST /embeddings` with the configured embedding model: one vector per input, in
    /// input order.
    pub(super) fn embed_impl(
        &self,
        inputs: &[String],
        cancel: &Cancel,
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        let url = self.url("/embeddings");
        let Some(model) = self.config.embedding_model.as_deref() else {
            return Err(LlmError::Protocol {
                url: display_url(&url),
                detail: "no embedding model is configured ([model] embedding_model)".into(),
            });
        };
        let body = serde_json::json!({"model": model, "input": inputs}).to_string();
        self.with_retries(&url, model, cancel, || {
            let limit = BodyLimit::Refuse(transport::MAX_BODY);
            let ex = self.start(&url, Some(body.clone()), false, limit);
            self.wait_head(&ex, &url, cancel)?;
            let (text, _) = self.wait_body(&ex, &url, cancel)?;
            wire::parse_embeddings(&text, inputs.len()).map_err(|detail| {
                let url = display_url(&url);
                (LlmError::Protocol { url, detail }, Retry::No)
            })
        })
    }

    /// `POST /audio/transcriptions` of the configured transcription server: the words
    /// heard (this client's base URL and key are the transcription server's, see
    /// [`super::transcribe`]).
    pub(super) fn transcribe_impl(
        &self,
        model: &str,
        audio: &Audio,
        cancel: &Cancel,
    ) -> Result<String, TranscribeError> {
        if audio.bytes.len() > transcribe::MAX_AUDIO {
            return Err(TranscribeError::TooLarge(audio.bytes.len()));
        }
        let url = self.url("/audio/transcriptions");
        let (bytes, content_type) = transcribe::form(model, audio);
        let body = Payload {
            content_type,
            bytes,
        };
        let words = self
            .with_retries(&url, model, cancel, || {
                let limit = BodyLimit::Refuse(transport::MAX_BODY);
                let ex = self.start_with(&url, Some(body.clone()), false, limit);
                self.wait_head(&ex, &url, cancel)?;
                let (text, _) = self.wait_body(&ex, &url, cancel)?;
                Ok(transcribe::parse(&text))
            })
            .map_err(TranscribeError::Server)?;
        words.map_err(|detail| match detail {
            None => TranscribeError::Empty {
                url: display_url(&url),
            },
            Some(detail) => TranscribeError::Server(LlmError::Protocol {
                url: display_url(&url),
                detail,
            }),
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries are spent.
    fn with_retries<T>(
        &self,
        url: &str,
        model: &str,
        cancel: &Cancel,
        mut attempt: impl FnMut() -> Result<T, Failed>,
    ) -> Result<T, LlmError> {
        let max = self.config.max_retries;
        let url = display_url(url);
        let mut n = 0;
        loop {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            debug!("{url}: model {model}, attempt {} of {}", n + 1, max + 1);
            let started = Instant::now();
            let (err, how) = match attempt() {
                Ok(v) => return Ok(v),
                Err(f) => f,
            };
            debug!(
                "{url}: attempt {} failed after {} ms",
                n + 1,
                started.elapsed().as_millis()
            );
            let wait = match how {
                Retry::No => return Err(err),
                _ if n >= max => return Err(err),
                Retry::After(d) => d,
                Retry::Backoff => retry::backoff(n, self.backoff_start, retry::seed()),
            };
            warn!("{err}; retry {} of {max} in {} ms", n + 1, wait.as_millis());
            if !retry::sleep(wait, cancel) {
                return Err(LlmError::Cancelled);
            }
            n += 1;
        }
    }

    fn start(&self, url: &str, body: Option<String>, stream: bool, limit: BodyLimit) -> Exchange {
        self.start_with(url, body.map(Payload::json), stream, limit)
    }

    /// [`Client::start`] with a body of any content type (a multipart form).
    fn start_with(
        &self,
        url: &str,
        body: Option<Payload>,
        stream: bool,
        limit: BodyLimit,
    ) -> Exchange {
        Exchange::start(Call {
            agent: &self.agent,
            url,
            body,
            api_key: self
                .config
                .api_key
                .as_ref()
                .map(|k| k.expose())
                .filter(|k| !k.is_empty()),
            stream,
            timeouts: &self.config.timeouts,
            limit,
        })
    }

    /// One streamed attempt; `None` for a 200 with no event at all. Stops reading as
    /// soon as the answer reaches the cap.
    fn stream_attempt(
        &self,
        url: &str,
        body: &str,
        on_delta: &mut dyn FnMut(Delta<'_>),
        cancel: &Cancel,
    ) -> Result<Option<Parsed>, Failed> {
        let limit = self.answer_limit();
        let ex = self.start(url, Some(body.to_string()), true, limit);
        let content_type = self.wait_head(&ex, url, cancel)?;
        let protocol = |detail: String| {
            let url = display_url(url);
            (LlmError::Protocol { url, detail }, Retry::No)
        };
        let max = self.config.max_answer_bytes;
        let mut parser = SseParser::default();
        let mut asm = Assembler::new(max);
        let mut delivered = false;
        let mut payloads = Vec::new();
        let mut json_lines = Vec::new();
        let mut json_bytes = 0usize;
        let mut json_cut = false;
        let as_json = is_json(&content_type);
        let mut done = false;
        let mut saw_done = false;
        // Only data resets the idle timer (a server sending `: ping` comments forever
        // is as stuck as a silent one): `first_byte` until the first data event, then
        // `per_read` between events, and `overall` for the whole stream.
        let t = &self.config.timeouts;
        let started = Instant::now();
        let mut last_data: Option<Instant> = None;
        while !done {
            let now = Instant::now();
            let (limit, since, phase) = match last_data {
                None => (t.first_byte, started, transport::PHASE_FIRST_BYTE),
                Some(at) => (t.per_read, at, transport::PHASE_IDLE),
            };
            let idle_left = limit.saturating_sub(now.duration_since(since));
            let overall_left = t.overall.saturating_sub(now.duration_since(started));
            if idle_left.is_zero() || overall_left.is_zero() {
                let phase = if idle_left.is_zero() {
                    phase
                } else {
                    transport::PHASE_OVERALL
                };
                let url = display_url(url);
                return Err((LlmError::Timeout { url, phase }, Retry::No));
            }
            let mut line_cut = false;
            match ex.next(Some(idle_left.min(overall_left)), cancel) {
                Next::Cancelled => return Err((LlmError::Cancelled, Retry::No)),
                Next::Idle => continue,
                Next::Event(Event::Line { text, cut }) if as_json => {
                    if !text.trim().is_empty() {
                        last_data = Some(Instant::now());
                    }
                    // A whole completion in lines: bounded like an unstreamed body.
                    json_bytes += text.len() + 1;
                    json_lines.push(text);
                    if cut || json_bytes as u64 > cap::wire_limit(max) {
                        json_cut = true;
                        done = true;
                    }
                }
                Next::Event(Event::Line { text, cut }) => {
                    line_cut = cut;
                    if cut {
                        // The line passed the wire limit: its JSON is read as far as it
                        // goes, and the stream ends there.
                        parser.push_cut_line(text, &mut payloads);
                        done = true;
                    } else {
                        parser.push_owned(text, &mut payloads);
                    }
                    if !payloads.is_empty() {
                        last_data = Some(Instant::now());
                    }
                }
                Next::Event(Event::End) => {
                    parser.finish(&mut payloads);
                    done = true;
                }
                Next::Event(Event::Failed(f)) => {
                    let (e, how) = self.failure(f, url);
                    return Err((e, if delivered { Retry::No } else { how }));
                }
                Next::Event(other) => return Err(protocol(format!("unexpected {other:?}"))),
            }
            for p in payloads.drain(..) {
                let mut on = |d: Delta<'_>| {
                    delivered = true;
                    on_delta(d);
                };
                let repaired = line_cut.then(|| close_cut_json(&p)).flatten();
                let payload = repaired.unwrap_or(p);
                if apply_payload(payload, &mut asm, &mut on).map_err(protocol)? {
                    done = true;
                    saw_done = true;
                    break;
                }
                if asm.is_cut() {
                    break;
                }
            }
            if line_cut {
                asm.force_cut();
            }
            if asm.is_cut() {
                // Nothing after the cap is read: dropping the exchange drops the
                // connection.
                done = true;
            }
        }
        drop(ex);
        if as_json && json_lines.iter().any(|l| !l.trim().is_empty()) {
            // The server ignored `stream: true` and sent a whole completion.
            let text = join_lines(json_lines);
            let p = parse_body(url, text, json_cut, max).map_err(|e| (e, Retry::No))?;
            stream::deliver_whole(&p.message, on_delta);
            return Ok(Some(p));
        }
        if asm.chunks > 0 {
            if asm.is_cut() {
                let mut p = asm.finish();
                // Cut: what OpenAI says of an answer that stopped at its limit.
                p.finish_reason = Some("length".to_string());
                let note = cap::add_note(&mut p.message, max);
                on_delta(Delta::Content(&note));
                return Ok(Some(p));
            }
            if !saw_done && !asm.finished() {
                // Neither `[DONE]` nor a `finish_reason`: the connection was cut, and a
                // cut answer must not be stored, evaluated and learned from as whole.
                return Err(protocol(
                    "the stream ended before the answer was complete (no finish_reason, \
                     no [DONE]) — the connection may have been cut; try again"
                        .to_string(),
                ));
            }
            return Ok(Some(asm.finish()));
        }
        match parser.stray {
            Some(line) => Err(protocol(format!(
                "expected an event stream, got: {}",
                wire::quote(&line, BAD_LINE_CHARS)
            ))),
            None => Ok(None),
        }
    }

    /// Waits for the response headers; a 2xx gives its content type, anything else the
    /// error with the server's message.
    fn wait_head(&self, ex: &Exchange, url: &str, cancel: &Cancel) -> Result<String, Failed> {
        match ex.next(None, cancel) {
            Next::Cancelled => Err((LlmError::Cancelled, Retry::No)),
            Next::Event(Event::Head {
                status,
                content_type,
                ..
            }) if (200..300).contains(&status) => Ok(content_type),
            Next::Event(Event::Head {
                status,
                retry_after,
                ..
            }) => {
                let (body, _) = self.wait_body(ex, url, cancel)?;
                let how = retry::for_status(status, retry_after.as_deref());
                Err((self.status_error(url, status, &body), how))
            }
            Next::Event(Event::Failed(f)) => Err(self.failure(f, url)),
            Next::Event(_) | Next::Idle => Err((
                self.connect_error(url, Unreached::ClosedBeforeAnswer, None),
                Retry::Backoff,
            )),
        }
    }

    /// Waits for a whole body; `true` with it when it was cut at its limit.
    fn wait_body(
        &self,
        ex: &Exchange,
        url: &str,
        cancel: &Cancel,
    ) -> Result<(String, bool), Failed> {
        match ex.next(None, cancel) {
            Next::Cancelled => Err((LlmError::Cancelled, Retry::No)),
            Next::Event(Event::Body { text, cut }) => Ok((text, cut)),
            Next::Event(Event::Failed(f)) => Err(self.failure(f, url)),
            Next::Event(_) | Next::Idle => Ok((String::new(), false)),
        }
    }
}

/// True for a JSON content type (a server that ignored `stream: true`).
fn is_json(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    ct.contains("json") && !ct.contains("event-stream")
}

/// Reads an unstreamed answer: a JSON completion, or SSE from a server that streams
/// regardless; then keeps at most `max` bytes of it. `cut`: the body is only the first
/// part of what the server sent (its JSON is closed by the core's repair, and the
/// answer counts as cut).
fn parse_body(url: &str, body: String, cut: bool, max: usize) -> Result<Parsed, LlmError> {
    let protocol = |detail: String| LlmError::Protocol {
        url: display_url(url),
        detail,
    };
    let too_big = |what: &str| {
        protocol(format!(
            "the answer passed {} (what is read for [model] max_answer_bytes = {}) and {what}",
            cap::size(usize::try_from(cap::wire_limit(max)).unwrap_or(usize::MAX)),
            cap::size(max)
        ))
    };
    let t = body.trim_start();
    if t.is_empty() {
        return Err(match cut {
            true => too_big("held nothing but white space"),
            false => protocol("the server answered with an empty body".into()),
        });
    }
    let mut p = if !(t.starts_with("data:") || t.starts_with(':') || t.starts_with("event:")) {
        let body = match cut {
            false => body,
            true => close_cut_json(&body)
                .ok_or_else(|| too_big("what came before is not a completion"))?,
        };
        wire::parse_completion(body).map_err(protocol)?
    } else {
        let mut parser = SseParser::default();
        let mut payloads = Vec::new();
        let mut lines = body.lines().peekable();
        while let Some(line) = lines.next() {
            if cut && lines.peek().is_none() {
                parser.push_cut_line(line.to_string(), &mut payloads);
            } else {
                parser.push_line(line, &mut payloads);
            }
        }
        parser.finish(&mut payloads);
        drop(body);
        let mut asm = Assembler::new(max);
        let last = payloads.len();
        for (i, p) in payloads.into_iter().enumerate() {
            let p = match cut && i + 1 == last {
                true => close_cut_json(&p).unwrap_or(p),
                false => p,
            };
            if apply_payload(p, &mut asm, &mut |_| {}).map_err(protocol)? || asm.is_cut() {
                break;
            }
        }
        if asm.chunks == 0 {
            return Err(match cut {
                true => too_big("held no answer before it"),
                false => protocol("the event stream held no answer".into()),
            });
        }
        if cut {
            asm.force_cut();
        }
        asm.finish()
    };
    if p.cut.is_none() {
        let mut budget = cap::Budget::new(max);
        budget.cut_message(&mut p.message);
        if cut {
            // The body ended inside its last string: the text, or the last call.
            budget.force_cut(match p.message.tool_calls.len() {
                0 => AnswerCut::Text,
                n => AnswerCut::ToolArguments(n - 1),
            });
        }
        p.cut = budget.cut();
    }
    if p.cut.is_some() {
        // Cut: what OpenAI says of an answer that stopped at its limit.
        p.finish_reason = Some("length".to_string());
        cap::add_note(&mut p.message, max);
    }
    Ok(p)
}

/// A JSON text cut off at a limit, closed by the core's repair (the unclosed string
/// and containers closed, a half-written key or literal dropped); `None` when even
/// that does not read. A cut SSE line keeps its `data:` prefix.
fn close_cut_json(text: &str) -> Option<String> {
    let (prefix, json) = match text.find(['{', '[']) {
        Some(i) => text.split_at(i),
        None => return None,
    };
    let closed = evolve_core::json::repair(json)?;
    Some(format!("{prefix}{closed}"))
}

/// The lines of a completion sent as a stream, as one text (the only line moved, not
/// copied).
fn join_lines(mut lines: Vec<String>) -> String {
    if lines.len() == 1 {
        return lines.pop().unwrap_or_default();
    }
    lines.join("\n")
}

/// Feeds one SSE data payload to the assembler; `Ok(true)` at `[DONE]`, `Err` with
/// what is wrong (a payload that is not JSON, an error the server sent in the stream).
fn apply_payload(
    payload: String,
    asm: &mut Assembler,
    on_delta: &mut dyn FnMut(Delta<'_>),
) -> Result<bool, String> {
    let data = payload.trim();
    if data == sse::DONE {
        return Ok(true);
    }
    if data.is_empty() {
        return Ok(false);
    }
    let values = sse::split_payloads(data).map_err(|e| {
        format!(
            "a stream event is not JSON ({e}): {}",
            wire::quote(data, BAD_LINE_CHARS)
        )
    })?;
    drop(payload);
    for mut v in values {
        asm.apply(&mut v, on_delta)
            .map_err(|m| format!("the server reported an error in the stream: {m}"))?;
    }
    Ok(false)
}
