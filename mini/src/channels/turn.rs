//! A turn for a chat event: run through the manager like the CLI and the UI, streamed
//! by editing one message, questions asked with buttons and parked, the answer delivered
//! into the messages it began in — and the event in flight recorded, so a process killed
//! mid-turn neither loses nor repeats the answer.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::permission::{PendingCall, Policy};
use evolve_core::provenance::Source;
use evolve_core::text::Lang;

use super::driver::Driver;
use super::inflight::Inflight;
use super::pairs::is_paired;
use super::slash::command;
use super::{
    format, key, Button, Channel, ChannelError, Event, Sent, BUSY_WAIT, EDIT_EVERY, MIN_BACKOFF,
    WATCH_EVERY,
};
use crate::agents::{Heard, Manager, TurnInput, TurnIo};
use crate::cancel::Cancel;
use crate::llm::Delta;
use crate::store::Store;

impl Driver {
    /// Runs a turn for event `seq` in the chat's session and delivers its answer; the
    /// event is acknowledged after both (see the module docs).
    pub(super) fn turn(
        &mut self,
        seq: u64,
        chat: &str,
        text: &str,
        from: Source,
        images: &[String],
    ) {
        let rt = self.store();
        let ikey = key(self.name, "inflight");
        let earlier = rt
            .store
            .channel_get::<Inflight>(&ikey)
            .ok()
            .flatten()
            .filter(|f| f.seq == seq && f.chat == chat);
        let mut inflight = match earlier {
            Some(f) => {
                log::info!(
                    "{}: update {seq} was being answered when evolve stopped; {}",
                    self.name,
                    if f.done.is_some() {
                        "delivering its stored answer"
                    } else {
                        "answering it again"
                    }
                );
                f
            }
            None => match self.session_for(chat, text) {
                Ok(session) => Inflight {
                    seq,
                    chat: chat.to_string(),
                    session,
                    sent: Vec::new(),
                    done: None,
                },
                Err(e) => {
                    log::warn!("{}: cannot open the session of chat {chat}: {e}", self.name);
                    return; // not acknowledged: tried again
                }
            },
        };
        if inflight.done.is_none() {
            if let Err(e) = rt.store.channel_put(&ikey, &inflight) {
                log::warn!("{}: cannot record the turn in flight: {e}", self.name);
                return;
            }
            let sid = inflight.session.clone();
            if from == Source::World && rt.store.parked(&sid).ok().flatten().is_some() {
                // The owner's question stays for the owner.
                self.say(
                    chat,
                    "A question is waiting for the owner's answer; ask again after it. \
                     正在等待主人的回答，请稍后再问。",
                );
                self.ack(seq);
                return;
            }
            let cancel = Arc::new(Cancel::new());
            let end = Instant::now() + BUSY_WAIT;
            while !self.host.begin(&sid, &cancel) {
                if self.stopping() {
                    return; // not acknowledged: it comes again to whoever runs next
                }
                if Instant::now() > end {
                    self.say(
                        chat,
                        "A turn is already running in this session (in the web UI?) — try \
                         again in a moment. 此会话正忙，请稍后再试。",
                    );
                    self.ack(seq);
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let manager: Arc<Manager> = self.host.manager();
            let policy = match from {
                Source::Person => Policy::Interactive,
                _ => Policy::headless(None, false, &manager.runtime().config.core.permission),
            };
            let stream = manager.runtime().config.model.stream;
            let watch = self.watch(seq, chat, &cancel);
            let mut io = ChatIo {
                ch: self.ch.as_mut(),
                store: &rt.store,
                ikey: &ikey,
                inflight: &mut inflight,
                text: String::new(),
                shown: Vec::new(),
                last_edit: None,
                hold_until: None,
                asked: false,
                name: self.name,
            };
            io.shown = vec![String::new(); io.inflight.sent.len()];
            let result = manager.turn(
                TurnInput {
                    session: Some(&sid),
                    text,
                    policy,
                    stream,
                    cancel: &cancel,
                    force_tool: None,
                    images,
                    replaces: None,
                    from,
                },
                &mut io,
            );
            let streamed = std::mem::take(&mut io.text);
            let asked = io.asked;
            let hold = io.hold_until;
            drop(io);
            if let Some((done, thread)) = watch {
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                let _ = thread.join();
            }
            let stopped = cancel.is_cancelled();
            // A 429 during the stream holds the final delivery too.
            if let Some(until) = hold {
                self.sleep(until.saturating_duration_since(Instant::now()));
            }
            self.host.end(&sid);
            let done = match result {
                _ if stopped && !self.host.stopping() => Some(
                    format!("{}\n\n⏹ Stopped. 已停止。", streamed.trim())
                        .trim()
                        .to_string(),
                ),
                Ok((record, _post)) if record.waiting.is_some() && asked => None,
                Ok((record, _post)) => {
                    let mut reply = if record.reply.trim().is_empty() {
                        streamed
                    } else {
                        record.reply.clone()
                    };
                    let refused: Vec<String> = record
                        .tools
                        .iter()
                        .filter(|t| !t.ran && t.decision.is_some_and(|d| d.needs_person()))
                        .map(|t| t.name.clone())
                        .collect();
                    if !refused.is_empty() && from == Source::World {
                        reply.push_str(&format!(
                            "\n\n[Not run: {} — only the owner can approve a call.]",
                            refused.join(", ")
                        ));
                    }
                    if reply.trim().is_empty() {
                        reply = "(no answer)".into();
                    }
                    Some(reply)
                }
                Err(e) => Some(format!("⚠ The answer failed: {e}")),
            };
            inflight.done = Some(done);
            if let Err(e) = rt.store.channel_put(&ikey, &inflight) {
                log::warn!("{}: cannot record the stored turn: {e}", self.name);
            }
        }
        if let Some(Some(answer)) = inflight.done.clone() {
            if !self.deliver(chat, &mut inflight.sent, &answer) {
                // Left unacknowledged: delivered when the update comes again.
                return;
            }
        }
        self.ack(seq);
    }

    /// Watches the chat while event `seq`'s turn runs: a `/stop` from the person sets
    /// `cancel`. Returns the flag that ends the watch and its thread.
    pub(super) fn watch(
        &self,
        seq: u64,
        chat: &str,
        cancel: &Arc<Cancel>,
    ) -> Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)> {
        use std::sync::atomic::Ordering::SeqCst;
        let mut w = self.ch.watcher()?;
        // Looking from the last acknowledged update acknowledges nothing new.
        let acked = self
            .store()
            .store
            .channel_get::<u64>(&key(self.name, "offset"))
            .ok()
            .flatten()
            .unwrap_or(0);
        let done = Arc::new(AtomicBool::new(false));
        let (d, cancel, host) = (
            Arc::clone(&done),
            Arc::clone(cancel),
            Arc::clone(&self.host),
        );
        let (chat, owner, name) = (chat.to_string(), self.owner.clone(), self.name);
        let stopped_by = Arc::clone(&self.stopped_by);
        let thread = std::thread::Builder::new()
            .name(format!("{name}-watch"))
            .spawn(move || {
                while !d.load(SeqCst) && !host.stopping() {
                    let end = Instant::now() + WATCH_EVERY;
                    while Instant::now() < end && !d.load(SeqCst) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    if d.load(SeqCst) {
                        return;
                    }
                    let Ok(events) = w.peek(acked) else { continue };
                    let manager = host.manager();
                    let store = &manager.runtime().store;
                    for (id, event) in events {
                        let Some(Event::Message(m)) = event else {
                            continue;
                        };
                        let person = owner.as_deref() == Some(m.sender.id.as_str())
                            || is_paired(store, name, &m.sender.id).unwrap_or(false);
                        let stop = command(&m.text).is_some_and(|(c, _)| c == "stop");
                        if id > seq && m.place() == chat && person && stop {
                            log::info!("{name}: /stop in chat {chat}: the answer stops");
                            stopped_by.store(id, SeqCst);
                            cancel.cancel();
                            return;
                        }
                    }
                }
            })
            .ok()?;
        Some((done, thread))
    }

    /// Puts the final answer into the chat: the messages already showing it edited,
    /// new ones sent for the rest. `false` when the platform could not be reached.
    pub(super) fn deliver(&mut self, chat: &str, sent: &mut Vec<Sent>, answer: &str) -> bool {
        let chat = chat.to_string();
        for (i, piece) in format::split(answer, self.ch.max_text()).iter().enumerate() {
            let result = match sent.get(i).cloned() {
                Some(msg) => self.retry("edit", |ch| ch.edit(&chat, &msg, piece, &[])),
                None => self
                    .retry("send", |ch| ch.send(&chat, piece, &[]))
                    .map(|m| sent.push(m)),
            };
            match result {
                Ok(()) => {}
                Err(ChannelError::Refused(e)) => {
                    log::warn!("{}: chat {chat} refused part of an answer: {e}", self.name)
                }
                Err(e) => {
                    log::warn!(
                        "{}: cannot deliver an answer to chat {chat}: {e}",
                        self.name
                    );
                    return false;
                }
            }
        }
        true
    }
}

/// The turn's interface on a chat: the answer streamed into a message, questions as
/// buttons.
struct ChatIo<'d> {
    ch: &'d mut dyn Channel,
    store: &'d Store,
    ikey: &'d str,
    inflight: &'d mut Inflight,
    /// The answer streamed so far.
    text: String,
    /// What each message of `inflight.sent` shows.
    shown: Vec<String>,
    last_edit: Option<Instant>,
    /// After a 429: no edit before this.
    hold_until: Option<Instant>,
    /// A question was sent (the turn parks after it).
    asked: bool,
    name: &'static str,
}

impl ChatIo<'_> {
    /// Shows the streamed text: at most one edit per [`EDIT_EVERY`], none while a 429
    /// holds. `force` is for the text before a question.
    fn flush(&mut self, force: bool) {
        if !self.ch.edits() {
            // Sent once, whole, when the turn is stored.
            return;
        }
        let now = Instant::now();
        if !force
            && (self
                .last_edit
                .is_some_and(|at| now.duration_since(at) < EDIT_EVERY)
                || self.hold_until.is_some_and(|until| now < until))
        {
            return;
        }
        self.last_edit = Some(now);
        let chat = self.inflight.chat.clone();
        for (i, piece) in format::split(&self.text, self.ch.max_text())
            .into_iter()
            .enumerate()
        {
            if self.shown.get(i) == Some(&piece) {
                continue;
            }
            let result = match self.inflight.sent.get(i) {
                Some(msg) => self.ch.edit(&chat, msg, &piece, &[]),
                None => self.ch.send(&chat, &piece, &[]).map(|m| {
                    self.inflight.sent.push(m);
                    // Kept, so that after a restart the answer goes into this message.
                    if let Err(e) = self.store.channel_put(self.ikey, &*self.inflight) {
                        log::warn!("{}: cannot record the message in flight: {e}", self.name);
                    }
                }),
            };
            match result {
                Ok(()) => {
                    self.shown.resize(i + 1, String::new());
                    self.shown[i] = piece;
                }
                Err(ChannelError::RateLimited(d)) => {
                    // Counted from the answer, not from before the call: a slow
                    // request must not shorten the platform's wait.
                    self.hold_until = Some(Instant::now() + d);
                    return;
                }
                Err(e) => {
                    log::warn!("{}: a streamed edit failed: {e}", self.name);
                    return;
                }
            }
        }
    }

    fn send_retrying(&mut self, text: &str, buttons: &[Button]) -> Option<Sent> {
        for _ in 0..5 {
            match self.ch.send(&self.inflight.chat, text, buttons) {
                Ok(m) => return Some(m),
                Err(ChannelError::RateLimited(d)) => std::thread::sleep(d),
                Err(ChannelError::Unavailable(e)) => {
                    log::warn!("{}: {e}; trying again", self.name);
                    std::thread::sleep(MIN_BACKOFF);
                }
                Err(e) => {
                    log::warn!("{}: cannot send: {e}", self.name);
                    return None;
                }
            }
        }
        None
    }
}

impl TurnIo for ChatIo<'_> {
    fn on_delta(&mut self, delta: &Delta<'_>) {
        if let Delta::Content(text) = delta {
            self.text.push_str(text);
            self.flush(false);
        }
    }

    fn on_tool_start(
        &mut self,
        _name: &str,
        _arguments: &str,
        _level: evolve_core::permission::Level,
    ) {
        // What the model said before a call shows while the call runs.
        if !self.text.trim().is_empty() {
            self.flush(true);
        }
    }

    fn on_notice(&mut self, text: &str) {
        self.send_retrying(text, &[]);
    }

    fn ask(&mut self, call: &PendingCall, lang: Lang) -> Heard {
        if !self.text.trim().is_empty() {
            self.flush(true);
        }
        // The answer after the question goes into a message of its own.
        self.text.clear();
        self.shown.clear();
        self.inflight.sent.clear();
        let mut buttons = vec![
            Button {
                label: "✅ yes".into(),
                data: format!("a:{}:yes", call.id),
            },
            Button {
                label: "❌ no".into(),
                data: format!("a:{}:no", call.id),
            },
        ];
        if call.needed.count() < 2 {
            buttons.push(Button {
                label: "♾ always".into(),
                data: format!("a:{}:always", call.id),
            });
        }
        // Button data is at most 64 bytes on Telegram: a long call id is cut (the press
        // is matched against the parked call's id, so a cut one is a stale press).
        for b in &mut buttons {
            if b.data.len() > 64 {
                let tail = b.data.rsplit(':').next().unwrap_or("no").to_string();
                b.data = format!("a:{}:{tail}", &call.id[..call.id.len().min(40)]);
            }
        }
        if self.send_retrying(&call.prompt(lang), &buttons).is_some() {
            self.asked = true;
        }
        // Nobody answers now: the turn parks, and a button press or the chat's next
        // message settles it.
        Heard::Away
    }
}
