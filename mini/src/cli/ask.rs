//! `evolve ask`: one headless question for scripts and cron (exit codes:
//! ARCHITECTURE.md § Permission levels). The answer goes to stdout, logs to stderr.
//! Nothing is interactive: a call that needs a person is refused and reported (exit
//! 4), calls above `--allow` (default L2) are refused, `--yes` allows up to L3, never
//! L4 or L5.
//!
//! Exit codes: 0 answered; 2 usage or configuration error; 3 the model could not be
//! reached or kept failing; 4 a tool call needed a person and was refused (the answer so
//! far is printed); 130 stopped by Ctrl-C (the question is kept); 1 anything else.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use argh::FromArgs;
use evolve_core::permission::{Level, PendingCall, Policy};
use evolve_core::text::Lang;

use super::app::App;
use super::interrupt;
use crate::agents::{Heard, Manager, Refused, Runtime, TurnInput, TurnIo};
use crate::config::LoadOptions;
use crate::error::Error;
use crate::web::endpoint::ServeError;

/// ask one question headlessly: the answer on stdout, for scripts and cron
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "ask",
    error_code(0, "answered"),
    error_code(1, "anything else went wrong"),
    error_code(2, "usage or configuration error"),
    error_code(3, "the model could not be reached or kept failing"),
    error_code(
        4,
        "a tool call needed a person and was refused (the answer is still printed)"
    ),
    error_code(130, "stopped by Ctrl-C (the question is kept in its session)")
)]
pub struct AskCmd {
    /// the question, or - to read it from stdin
    #[argh(positional)]
    question: String,
    /// print the whole turn record as JSON (reply, session, memories, tools, score, usage)
    #[argh(switch)]
    json: bool,
    /// exit after the answer without waiting for the work after it (title, memories,
    /// grade); it is then not done for this turn
    #[argh(switch)]
    no_wait: bool,
    /// continue this session instead of starting a new one
    #[argh(option)]
    session: Option<String>,
    /// run tool calls up to this level without asking: L1, L2 (default) or L3
    #[argh(option)]
    allow: Option<String>,
    /// allow calls up to L3 (never L4 or L5)
    #[argh(switch)]
    yes: bool,
    /// file tools work inside this directory (default $EVOLVE_HOME/workspace)
    #[argh(option)]
    workspace: Option<PathBuf>,
    /// make the model call this tool first (its permission check still applies)
    #[argh(option)]
    tool: Option<String>,
    /// send this image with the question (PNG, JPEG, GIF or WebP, up to 2 MiB); repeat
    /// for more (at most 4)
    #[argh(option)]
    image: Vec<PathBuf>,
}

/// A headless run: nobody to ask. The policy refuses before `approve` could be called;
/// should it be called anyway, the answer is no.
struct Headless;

impl TurnIo for Headless {
    fn ask(&mut self, call: &PendingCall, _lang: Lang) -> Heard {
        log::warn!("{} needs a person; refused in a headless run", call.tool);
        Heard::Away
    }
}

pub fn run(cmd: AskCmd, profile: &Option<String>) -> Result<(), Error> {
    let allow = match cmd.allow.as_deref() {
        None => None,
        Some(s) => match s.parse::<Level>() {
            Ok(l) if l <= Level::L3 => Some(l),
            Ok(l) => {
                return Err(Error::Usage(format!(
                    "--allow {l}: ask never runs L4 or L5 calls without a person; use evolve chat"
                )))
            }
            Err(e) => return Err(Error::Usage(format!("--allow {s}: {e}"))),
        },
    };
    let question = super::positional_or_stdin(&cmd.question)?;
    if question.trim().is_empty() {
        return Err(Error::Usage("the question is empty".into()));
    }
    let images = load_images(&cmd.image)?;
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        workspace: cmd.workspace.clone(),
    })?;
    // A running `serve` holds the store: it answers instead, the same way.
    if let Some((ep, token)) = crate::web::endpoint::running_with_token(&app.config.home)? {
        match forward(&ep, &token, &cmd, question.trim(), &images, allow) {
            Ok(Some(done)) => return finish(done, cmd.json),
            Ok(None) => log::info!(
                "the server recorded in {} does not answer; running here",
                app.config.home.join("serve.json").display()
            ),
            Err(e) => return Err(e),
        }
    }
    let policy = Policy::headless(allow, cmd.yes, &app.config.core.permission);
    let store = app.open_store()?;
    if let Some(id) = cmd.session.as_deref() {
        if let Err(e) = store.session(id) {
            return Err(match e {
                crate::store::StoreError::NotFound(_) => Error::Usage(format!(
                    "--session {id}: no such session (`evolve sessions list` shows them)"
                )),
                other => other.into(),
            });
        }
    }
    let wait = app.config.agent.background_wait;
    let App { config, tokenizer } = app;
    let manager = Manager::new(Runtime::new(config, store, tokenizer));
    if let Some(name) = cmd.tool.as_deref() {
        let tools = &manager.runtime().tools;
        if !tools.has(name) {
            let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
            return Err(Error::Usage(format!(
                "--tool {name}: no such tool; the tools are {}",
                names.join(", ")
            )));
        }
    }
    // Ctrl-C stops the turn the way chat stops one: a running MCP call is cancelled
    // (the server is told before its session ends), the question and the calls that
    // ran are kept, the servers are closed, and ask exits 130. A second Ctrl-C ends it
    // at once.
    interrupt::install();
    interrupt::begin_turn();
    let turn = manager.turn(
        TurnInput {
            session: cmd.session.as_deref(),
            text: question.trim(),
            policy,
            stream: false,
            cancel: &interrupt::CANCEL,
            force_tool: cmd.tool.as_deref(),
            replaces: None,
            images: &images,
            from: evolve_core::provenance::Source::Person,
        },
        &mut Headless,
    );
    if interrupt::cancelled() {
        crate::agents::close_all(&manager, wait);
        eprintln!("evolve: stopped by Ctrl-C; the question is kept in its session");
        std::process::exit(130);
    }
    let (mut record, post) = turn?;
    if cmd.no_wait {
        // The work after the answer keeps the store open on its thread as ask exits:
        // what the turn wrote lazily (its record) goes to disk now.
        if let Err(e) = manager.runtime().store.sync() {
            log::warn!("the turn's record may not be saved: {e}");
        }
    }
    // Whether the work after the answer finished before `ask` exits (`--json` says).
    let mut waited = false;
    if cmd.json && !cmd.no_wait {
        // The record includes the evaluation and reflection: wait for them (bounded).
        let started = Instant::now();
        match post.recv_timeout(wait) {
            Ok(p) => {
                waited = true;
                record.absorb(&p);
                for problem in &p.problems {
                    log::info!("after the answer: {problem}");
                }
            }
            Err(_) => {
                let problem = format!(
                    "the background work did not finish within {} s; the record has no \
                     evaluation",
                    started.elapsed().as_secs()
                );
                log::warn!("{problem}");
                record.problems.push(problem);
            }
        }
    }
    // The reply is moved out before the record is encoded, so it is held once.
    let reply = std::mem::take(&mut record.reply);
    let mut value = serde_json::to_value(&record).map_err(|source| Error::Encode {
        what: "turn record",
        source,
    })?;
    if let Some(o) = value.as_object_mut() {
        o.insert("background_waited".into(), serde_json::Value::Bool(waited));
    }
    let done = Done::from_record(value, Some(reply));
    if !cmd.json {
        // The answer first, then the background work (bounded) before exiting.
        writeln!(std::io::stdout().lock(), "{}", done.reply.trim_end())?;
        if cmd.no_wait {
            log::info!("--no-wait: the work after the answer is not done for this turn");
        } else if !manager.flush(wait) {
            log::warn!(
                "the background work (memories, evaluation) did not finish within {} s; it is skipped",
                wait.as_secs()
            );
        }
        return finish(
            Done {
                printed: true,
                ..done
            },
            false,
        );
    }
    finish(done, true)
}

/// What a turn left for `ask` to report, from the turn record (local or a server's).
struct Done {
    record: serde_json::Value,
    reply: String,
    session: String,
    needs_person: bool,
    /// Calls refused because they needed a person.
    refused: Refused,
    /// The reply is already on stdout.
    printed: bool,
}

impl Done {
    /// From a turn record (JSON) and the reply, when the record does not carry it (a
    /// server's chat completion carries it once, as its content; a local turn's record
    /// has it taken out so it is not copied). `--json` prints the record with the reply.
    fn from_record(mut record: serde_json::Value, reply: Option<String>) -> Done {
        let text = |k: &str| record[k].as_str().unwrap_or_default().to_string();
        let refused = Refused::of_json(&record["tools"]);
        let session = text("session");
        let needs_person = record["needs_person"] == true;
        let reply = match (reply, record.get_mut("reply")) {
            (Some(r), _) => r,
            (None, Some(serde_json::Value::String(r))) => std::mem::take(r),
            (None, _) => String::new(),
        };
        Done {
            reply,
            session,
            needs_person,
            refused,
            printed: false,
            record,
        }
    }
}

/// Prints what is left to print and turns the outcome into the exit code.
fn finish(done: Done, json: bool) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut record = done.record;
        if let Some(o) = record.as_object_mut() {
            o.insert(
                "reply".into(),
                serde_json::Value::String(done.reply.clone()),
            );
            // One shape for scripts, also from a server that leaves them out.
            o.entry("evaluation").or_insert(serde_json::Value::Null);
            o.entry("problems").or_insert_with(|| serde_json::json!([]));
        }
        let text = serde_json::to_string_pretty(&record).map_err(|source| Error::Encode {
            what: "turn record",
            source,
        })?;
        writeln!(out, "{text}")?;
    } else if !done.printed {
        writeln!(out, "{}", done.reply.trim_end())?;
    }
    out.flush()?;
    drop(out);
    if done.needs_person {
        let refused = done.refused;
        let hint = if refused.sends_data {
            "it would send data you did not give off the machine after outside text entered \
             the turn: run it in `evolve chat` to be asked, or list the host under [tools] \
             http_hosts in config.toml if it may receive anything"
        } else if refused.above_l3() {
            "L4 calls always need a person: run it in `evolve chat`"
        } else {
            "allow L3 calls with --yes (or --allow L3), or run it in `evolve chat`"
        };
        return Err(Error::NeedsPerson(refused.message(hint)));
    }
    if done.reply.trim().is_empty() {
        return Err(Error::EmptyAnswer {
            session: done.session.clone(),
        });
    }
    Ok(())
}

/// The reply in a server's chat completion: its content up to `reply_bytes` of the
/// record, without the note about calls waiting for a person that may follow it, which
/// `ask` reports its own way. A server that does not say where the reply ends sent it
/// whole.
fn reply_from_content(mut content: String, record: &serde_json::Value) -> String {
    let end = record["reply_bytes"]
        .as_u64()
        .and_then(|n| usize::try_from(n).ok());
    if let Some(end) = end.filter(|&n| content.is_char_boundary(n)) {
        content.truncate(end);
    }
    content
}

/// `--image` files as data URLs, each read and checked (type from its bytes, size).
fn load_images(paths: &[PathBuf]) -> Result<Vec<String>, Error> {
    use crate::llm::image::{data_url, MAX_IMAGES};
    if paths.len() > MAX_IMAGES {
        return Err(Error::Usage(format!(
            "--image given {} times; at most {MAX_IMAGES} images go with one question",
            paths.len()
        )));
    }
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p)
                .map_err(|e| Error::Usage(format!("--image {}: {e}", p.display())))?;
            data_url(&bytes).map_err(|e| Error::Usage(format!("--image {}: {e}", p.display())))
        })
        .collect()
}

/// Sends the question to the running server. `Ok(None)`: it could not be reached (the
/// caller runs the turn itself).
fn forward(
    ep: &crate::web::endpoint::Endpoint,
    token: &str,
    cmd: &AskCmd,
    question: &str,
    images: &[String],
    allow: Option<Level>,
) -> Result<Option<Done>, Error> {
    use serde_json::{json, Value};
    let content = if images.is_empty() {
        json!(question)
    } else {
        let mut parts = vec![json!({"type": "text", "text": question})];
        parts.extend(
            images
                .iter()
                .map(|url| json!({"type": "image_url", "image_url": {"url": url}})),
        );
        Value::Array(parts)
    };
    let mut body = json!({
        "model": "evolve",
        "messages": [{"role": "user", "content": content}],
        "evolve_yes": cmd.yes,
        "evolve_wait": cmd.json && !cmd.no_wait,
    });
    if let Some(l) = allow {
        body["evolve_allow"] = json!(l.to_string());
    }
    if let Some(s) = &cmd.session {
        body["session"] = json!(s);
    }
    if let Some(t) = &cmd.tool {
        body["evolve_tool"] = json!(t);
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(std::time::Duration::from_secs(3)))
        .build()
        .into();
    let mut req = agent
        .post(format!("http://{}/v1/chat/completions", ep.addr))
        .header("Content-Type", "application/json");
    req = req.header("Authorization", format!("Bearer {token}"));
    log::info!(
        "a running evolve serve (pid {}) answers this question",
        ep.pid
    );
    let mut resp = match req.send(body.to_string()) {
        Ok(r) => r,
        // Only a server that cannot be reached at all lets `ask` run by itself: once
        // the question may have been received, running it again here could do its
        // tool calls twice.
        Err(ureq::Error::ConnectionFailed | ureq::Error::HostNotFound) => return Ok(None),
        Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Ok(None)
        }
        Err(e) => {
            return Err(ServeError::Request {
                at: ep.addr.to_string(),
                source: Box::new(e),
            }
            .into())
        }
    };
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .map_err(|e| ServeError::Answer(Box::new(e)))?;
    let mut v: Value = serde_json::from_str(&text).unwrap_or_default();
    if status == 200 {
        drop(text);
        let record = v["evolve"].take();
        // A server before the record lost its `reply` still sends it there.
        let reply = match record.get("reply") {
            Some(Value::String(_)) => None,
            _ => {
                let content = match v["choices"][0]["message"]["content"].take() {
                    Value::String(s) => s,
                    _ => String::new(),
                };
                Some(reply_from_content(content, &record))
            }
        };
        return Ok(Some(Done::from_record(record, reply)));
    }
    let message = v["error"]["message"]
        .as_str()
        .unwrap_or(text.as_str())
        .to_string();
    Err(match (status, v["error"]["code"].as_str()) {
        (404, _) if cmd.session.is_some() => Error::Usage(format!(
            "--session {}: no such session (`evolve sessions list` shows them)",
            cmd.session.as_deref().unwrap_or_default()
        )),
        (400, _) => Error::Usage(message),
        (_, Some("model_configuration")) => Error::Remote(2, message),
        (_, Some("model_unreachable")) => Error::Remote(3, message),
        _ => Error::Remote(1, message),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn the_reply_is_the_servers_content_up_to_where_the_record_says_it_ends() {
        let note = "\n\n[evolve] Not run, a person's approval is needed: shell (L3).";
        let cases = [
            // (content, the record's reply_bytes, the reply)
            (
                format!("I could not run it.{note}"),
                json!(19),
                "I could not run it.",
            ),
            ("No note here.".to_string(), json!(13), "No note here."),
            ("中文回答。".to_string() + note, json!(15), "中文回答。"),
            // A length that does not fall between characters, or none: the whole.
            ("中文".to_string(), json!(4), "中文"),
            ("Whole.".to_string(), Value::Null, "Whole."),
            ("Whole.".to_string(), json!(99), "Whole."),
        ];
        for (content, bytes, reply) in cases {
            let record = json!({"session": "s1", "reply_bytes": bytes});
            assert_eq!(reply_from_content(content, &record), reply);
        }
    }
}
