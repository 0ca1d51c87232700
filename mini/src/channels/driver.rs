//! The driver of one channel: connects, waits for events, decides what each one is
//! (a stranger's, a command, a button press, a message for a turn), and acknowledges it.
//! The turn itself and the delivery of its answer are in `turn`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::provenance::Source;
use evolve_core::text::Lang;

use super::inflight::Inflight;
use super::pairs::{is_paired, Who};
use super::slash::command;
use super::{
    format, key, set_status, Attachment, Channel, ChannelError, Event, Message, Press, Sent,
    MAX_BACKOFF, MIN_BACKOFF,
};
use crate::agents::Host;
use crate::clock::now;
use crate::store::StoreError;

/// Runs one channel: connects, polls, handles each event, acknowledges it.
pub(super) struct Driver {
    pub(super) host: Arc<dyn Host>,
    pub(super) ch: Box<dyn Channel>,
    pub(super) name: &'static str,
    pub(super) owner: Option<String>,
    /// The `/stop` that stopped a running turn (answered when its turn comes).
    pub(super) stopped_by: Arc<std::sync::atomic::AtomicU64>,
    /// Set when this channel is to stop (its settings changed or it was removed).
    stop: Arc<AtomicBool>,
}

impl Driver {
    pub(super) fn new(
        host: Arc<dyn Host>,
        ch: Box<dyn Channel>,
        owner: Option<String>,
        stop: Arc<AtomicBool>,
    ) -> Driver {
        let name = ch.name();
        Driver {
            host,
            ch,
            name,
            owner,
            stopped_by: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            stop,
        }
    }

    /// The server or this channel is stopping: take no new event (one not handled stays
    /// unacknowledged, and comes again to whoever runs the channel next).
    pub(super) fn stopping(&self) -> bool {
        self.host.stopping() || self.stop.load(Ordering::SeqCst)
    }

    pub(super) fn store(&self) -> Arc<crate::agents::Runtime> {
        Arc::clone(self.host.manager().runtime())
    }

    /// Sleeps `d`, waking early when the server stops.
    pub(super) fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stopping() {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
        }
    }

    /// Starts the sequence again when the platform's numbering is another's than the
    /// one the stored offset counts (a new bot token or server).
    fn follow_numbering(&self) {
        let Some(now) = self.ch.numbering() else {
            return;
        };
        let store = &self.store().store;
        let k = key(self.name, "numbering");
        let before = store.channel_get::<String>(&k).ok().flatten();
        if before.as_ref().is_some_and(|b| *b != now) {
            log::info!(
                "{}: another bot or server than before: its updates are counted from the start",
                self.name
            );
            let _ = store.channel_remove(&key(self.name, "offset"));
            let _ = store.channel_remove(&key(self.name, "inflight"));
        }
        if before.as_ref() != Some(&now) {
            if let Err(e) = store.channel_put(&k, &now) {
                log::warn!("{}: cannot record whose updates these are: {e}", self.name);
            }
        }
    }

    pub(super) fn run(mut self) {
        self.follow_numbering();
        let mut backoff = MIN_BACKOFF;
        let mut connected = false;
        let mut failing = false;
        while !self.stopping() {
            if !connected {
                match self.ch.connect() {
                    Ok(who) => {
                        log::info!("{}: connected as {who}", self.name);
                        eprintln!("evolve: {} channel connected as {who}", self.name);
                        set_status(
                            &self.store().store,
                            self.name,
                            true,
                            &format!("connected as {who}"),
                        );
                        connected = true;
                        backoff = MIN_BACKOFF;
                    }
                    Err(e) => {
                        self.failed(&e, &mut backoff);
                        failing = true;
                        continue;
                    }
                }
            }
            self.drain_outbox();
            let acked = match self
                .store()
                .store
                .channel_get::<u64>(&key(self.name, "offset"))
            {
                Ok(n) => n.unwrap_or(0),
                Err(e) => {
                    log::warn!(
                        "{}: cannot read the last acknowledged update: {e}",
                        self.name
                    );
                    self.sleep(backoff);
                    continue;
                }
            };
            match self.ch.next(acked) {
                Ok(events) => {
                    if failing {
                        failing = false;
                        log::info!("{}: reachable again", self.name);
                        set_status(&self.store().store, self.name, true, "connected");
                    }
                    backoff = MIN_BACKOFF;
                    for (seq, event) in events {
                        if self.stopping() {
                            break;
                        }
                        self.handle(seq, event);
                    }
                }
                Err(e) => {
                    failing = true;
                    if matches!(e, ChannelError::Unauthorized(_)) {
                        connected = false;
                    }
                    self.failed(&e, &mut backoff);
                }
            }
        }
        log::info!("{}: stopped", self.name);
    }

    /// Logs a failure, records it as the status, and waits before the next try.
    pub(super) fn failed(&self, e: &ChannelError, backoff: &mut Duration) {
        match e {
            ChannelError::RateLimited(d) => {
                log::warn!("{}: {e}; waiting", self.name);
                self.sleep(*d);
            }
            ChannelError::Unauthorized(_) => {
                log::error!("{}: {e}", self.name);
                set_status(&self.store().store, self.name, false, &e.to_string());
                self.sleep(MAX_BACKOFF);
            }
            ChannelError::Unavailable(_) | ChannelError::Refused(_) => {
                log::warn!(
                    "{}: {e} — trying again in {} s",
                    self.name,
                    backoff.as_secs()
                );
                set_status(&self.store().store, self.name, false, &e.to_string());
                self.sleep(*backoff);
                *backoff = (*backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// Calls the platform, waiting out a 429 and retrying a passing failure a few times.
    pub(super) fn retry<T>(
        &mut self,
        what: &str,
        mut call: impl FnMut(&mut dyn Channel) -> Result<T, ChannelError>,
    ) -> Result<T, ChannelError> {
        let mut wait = MIN_BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            match call(self.ch.as_mut()) {
                Ok(v) => return Ok(v),
                Err(ChannelError::RateLimited(d)) if tries < 6 && !self.stopping() => {
                    log::info!(
                        "{}: {what}: rate-limited, waiting {} s",
                        self.name,
                        d.as_secs()
                    );
                    self.sleep(d);
                }
                Err(ChannelError::Unavailable(m)) if tries < 4 && !self.stopping() => {
                    log::warn!("{}: {what}: {m}; trying again", self.name);
                    self.sleep(wait);
                    wait *= 2;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends text; a failure is logged (the caller has nothing better to do with it).
    pub(super) fn say(&mut self, chat: &str, text: &str) {
        let chat = chat.to_string();
        let text = text.to_string();
        for piece in format::split(&text, self.ch.max_text()) {
            if let Err(e) = self.retry("send", |ch| ch.send(&chat, &piece, &[])) {
                log::warn!("{}: cannot send to chat {chat}: {e}", self.name);
            }
        }
    }

    /// Records `seq` as handled: the platform will not deliver it again.
    pub(super) fn ack(&self, seq: u64) -> bool {
        let store = self.store();
        match store.store.channel_put(&key(self.name, "offset"), &seq) {
            Ok(()) => {
                let _ = store.store.channel_remove(&key(self.name, "inflight"));
                true
            }
            Err(e) => {
                log::warn!("{}: cannot record update {seq} as handled: {e}", self.name);
                false
            }
        }
    }

    pub(super) fn handle(&mut self, seq: u64, event: Option<Event>) {
        match event {
            None => {
                self.ack(seq);
            }
            Some(Event::Message(m)) => self.on_message(seq, m),
            Some(Event::Press(p)) => self.on_press(seq, p),
        }
    }

    pub(super) fn on_message(&mut self, seq: u64, m: Message) {
        if !m.mentioned {
            self.ack(seq);
            return;
        }
        let who = self.who(&m);
        let place = m.place();
        if who == Who::Stranger {
            let (kind, id, name) = if m.direct {
                ("user", &m.sender.id, m.sender.name.clone())
            } else {
                (
                    "group",
                    &m.chat,
                    m.chat_title.clone().unwrap_or_else(|| m.chat.clone()),
                )
            };
            let text = match self.code_for(kind, id, &name) {
                Some(code) => format!(
                    "This is a private Evolve agent. To let this {kind} talk to it, its owner \
                     runs:\n`evolve channels pair {code}`\n\n这是一个私人 Evolve 助手。主人运行上面的命令后即可对话。"
                ),
                None => "This is a private Evolve agent. 这是一个私人 Evolve 助手。".to_string(),
            };
            self.say(&place, &text);
            self.ack(seq);
            return;
        }
        if let Some((name, _args)) = command(&m.text) {
            if who == Who::Person {
                self.on_command(seq, &m, &name);
            } else {
                self.ack(seq);
            }
            return;
        }
        let from = if who == Who::Person {
            Source::Person
        } else {
            Source::World
        };
        if self.stored_before_restart(seq, &place) {
            // Only its answer is delivered: nothing is fetched, saved or heard again (a
            // voice note the server cannot hear now must not lose the stored answer).
            self.turn(seq, &place, &m.text, from, &[]);
            return;
        }
        let mut text = m.text.clone();
        let mut images = Vec::new();
        for a in &m.attachments {
            match a {
                // A voice note is words: the person's, or the world's in a group.
                Attachment::Voice { file, heard } => {
                    let person = who == Who::Person;
                    match self.hear(seq, &place, file.as_deref(), heard.as_deref(), person) {
                        Some(words) if text.trim().is_empty() => text = words,
                        Some(words) => text = format!("{}\n\n{words}", text.trim_end()),
                        None => {}
                    }
                }
                // The world's files and images are not taken in.
                _ if who != Who::Person => {}
                Attachment::Image { file } => match self.fetch_image(file) {
                    Ok(url) => images.push(url),
                    Err(e) => self.say(&place, &format!("I could not take the image: {e}")),
                },
                Attachment::File { file, name } => match self.save_file(file, name) {
                    Ok(rel) => {
                        text.push_str(&format!(
                            "\n\n[The file {name} is saved in the workspace as {rel}]"
                        ));
                    }
                    Err(e) => self.say(&place, &format!("I could not take the file {name}: {e}")),
                },
            }
        }
        if text.trim().is_empty() {
            if images.is_empty() {
                self.ack(seq);
                return;
            }
            text = "(an image)".into();
        }
        if from == Source::World {
            // Said so to the model, and kept so: later turns read it as world text.
            text = evolve_core::provenance::from_other(&m.sender.name, &text);
        }
        self.turn(seq, &place, &text, from, &images);
    }

    /// The event `seq` in `place` is in flight with its turn stored (the process
    /// stopped before its answer was delivered).
    fn stored_before_restart(&self, seq: u64, place: &str) -> bool {
        self.store()
            .store
            .channel_get::<Inflight>(&key(self.name, "inflight"))
            .ok()
            .flatten()
            .is_some_and(|f| f.seq == seq && f.chat == place && f.done.is_some())
    }

    /// The words of a voice note: the platform's recognition, else the transcription
    /// server's. Each is shown back (`🎤 words`) the first time the event is handled;
    /// when there are none, the chat is told why (what to set, to the person) and
    /// `None` is returned.
    pub(super) fn hear(
        &mut self,
        seq: u64,
        place: &str,
        file: Option<&str>,
        heard: Option<&str>,
        person: bool,
    ) -> Option<String> {
        let rt = self.store();
        let words = match (heard, file) {
            (Some(words), _) => Ok(words.to_string()),
            (None, None) => Err(
                "This voice note came without its audio or recognised words \
                 — please type the message. 这条语音没有音频也没有识别出的文字，请输入文字。"
                    .to_string(),
            ),
            _ if rt.config.model.transcription.is_none() => Err(if person {
                "Voice notes need a speech-to-text model: set `[model] transcription_model` \
                 (an OpenAI-compatible /audio/transcriptions server, e.g. whisper.cpp) — \
                 please type the message meanwhile.\n\n\
                 语音消息需要语音转文字模型：请在 config.toml 的 `[model]` 中设置 \
                 `transcription_model`（兼容 OpenAI /audio/transcriptions 的服务，如 \
                 whisper.cpp）；现在请先输入文字。"
                    .to_string()
            } else {
                "Voice notes are not transcribed here — please type the message. \
                 这里不转写语音消息，请输入文字。"
                    .to_string()
            }),
            (None, Some(file)) => self.transcribe(file, person),
        };
        match words {
            Ok(words) => {
                // Shown once: a turn resumed after a restart was shown already.
                let resumed = rt
                    .store
                    .channel_get::<Inflight>(&key(self.name, "inflight"))
                    .ok()
                    .flatten()
                    .is_some_and(|f| f.seq == seq);
                if !resumed {
                    self.say(place, &format!("🎤 {words}"));
                }
                Some(words)
            }
            Err(why) => {
                self.say(place, &why);
                None
            }
        }
    }

    /// Downloads a voice note and transcribes it; the note for the chat when it fails
    /// (why, to the person; to anyone else only that it failed: the transcription
    /// server's address is the owner's business, and it is in the log).
    fn transcribe(&mut self, file: &str, person: bool) -> Result<String, String> {
        let owned = file.to_string();
        let bytes = self.retry("getFile", |ch| ch.fetch(&owned)).map_err(|e| {
            log::warn!("{}: cannot fetch a voice note: {e}", self.name);
            "I could not download the voice note — please type the message. \
             无法下载这条语音，请输入文字。"
                .to_string()
        })?;
        let audio = crate::llm::transcribe::Audio::sniff(bytes);
        let never = crate::cancel::Cancel::new();
        let rt = self.store();
        match crate::llm::transcribe(&rt.config.model, &audio, &never) {
            Some(Ok(words)) => Ok(words),
            Some(Err(e)) => {
                log::warn!("{}: a voice note was not transcribed: {e}", self.name);
                let why = if person {
                    format!(": {e}")
                } else {
                    String::new()
                };
                Err(format!(
                    "I could not transcribe the voice note{why}. Please type the message, or \
                     send it again.\n\n语音转写失败，请输入文字或重新发送。"
                ))
            }
            None => Err("Voice notes need `[model] transcription_model`. \
                         语音消息需要设置 `transcription_model`。"
                .to_string()),
        }
    }

    pub(super) fn fetch_image(&mut self, file: &str) -> Result<String, String> {
        use base64::Engine as _;
        let file = file.to_string();
        let bytes = self
            .retry("getFile", |ch| ch.fetch(&file))
            .map_err(|e| e.to_string())?;
        let mime = match bytes.get(..4) {
            Some([0x89, b'P', b'N', b'G']) => "image/png",
            Some([b'G', b'I', b'F', _]) => "image/gif",
            Some([b'R', b'I', b'F', b'F']) => "image/webp",
            _ => "image/jpeg",
        };
        let url = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
        crate::llm::image::check(&url)?;
        Ok(url)
    }

    /// Saves a sent file as `telegram/NAME` in the workspace (a name already there gets
    /// a number); the path relative to the workspace.
    pub(super) fn save_file(&mut self, file: &str, name: &str) -> Result<String, String> {
        let file = file.to_string();
        let bytes = self
            .retry("getFile", |ch| ch.fetch(&file))
            .map_err(|e| e.to_string())?;
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let clean = clean.trim_start_matches('.').to_string();
        let clean = if clean.is_empty() {
            "file".to_string()
        } else {
            clean
        };
        let dir = self.store().config.workspace.join(self.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut path = dir.join(&clean);
        let mut n = 1;
        while path.exists() {
            n += 1;
            path = dir.join(format!("{n}-{clean}"));
        }
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let rel = path
            .file_name()
            .map(|f| format!("{}/{}", self.name, f.to_string_lossy()))
            .unwrap_or_default();
        Ok(rel)
    }

    /// The session of a chat, made (and named for the chat) on first use.
    pub(super) fn session_for(&self, chat: &str, title: &str) -> Result<String, StoreError> {
        let rt = self.store();
        let k = key(self.name, &format!("chat/{chat}"));
        if let Some(sid) = rt.store.channel_get::<String>(&k)? {
            if rt.store.session(&sid).is_ok() {
                return Ok(sid);
            }
        }
        let s = rt
            .store
            .create_session(&evolve_core::text::one_line(title, 60), now())?;
        rt.store
            .set_session_channel(&s.id, &format!("{}:{chat}", self.name))?;
        rt.store.channel_put(&k, &s.id)?;
        Ok(s.id)
    }

    pub(super) fn current_session(&self, chat: &str) -> Option<String> {
        self.store()
            .store
            .channel_get::<String>(&key(self.name, &format!("chat/{chat}")))
            .ok()
            .flatten()
    }

    pub(super) fn on_press(&mut self, seq: u64, p: Press) {
        let pid = p.id.clone();
        let sender_ok = self.owner.as_deref() == Some(p.sender.id.as_str())
            || is_paired(&self.store().store, self.name, &p.sender.id).unwrap_or(false);
        if !sender_ok {
            let _ = self.retry("answerCallbackQuery", |ch| {
                ch.answer_press(&pid, "Only the owner can answer this. 只有主人可以回答。")
            });
            self.ack(seq);
            return;
        }
        let mut parts = p.data.splitn(3, ':');
        let (Some("a"), Some(call), Some(answer)) = (parts.next(), parts.next(), parts.next())
        else {
            let _ = self.retry("answerCallbackQuery", |ch| ch.answer_press(&pid, ""));
            self.ack(seq);
            return;
        };
        let (call, answer) = (call.to_string(), answer.to_string());
        let rt = self.store();
        let pending = self
            .current_session(&p.chat)
            .and_then(|sid| rt.store.parked(&sid).ok().flatten())
            .and_then(|parked| parked.state.pending().cloned());
        let Some(pending) = pending.filter(|c| c.id == call) else {
            // Pressed again after a restart mid-turn: the turn is in flight; else stale.
            let inflight = rt
                .store
                .channel_get::<Inflight>(&key(self.name, "inflight"))
                .ok()
                .flatten();
            if inflight.is_some_and(|f| f.seq == seq) {
                self.turn(seq, &p.chat, &answer, Source::Person, &[]);
                return;
            }
            let _ = self.retry("answerCallbackQuery", |ch| {
                ch.answer_press(&pid, "This question was already answered. 此问题已回答。")
            });
            self.ack(seq);
            return;
        };
        let _ = self.retry("answerCallbackQuery", |ch| ch.answer_press(&pid, &answer));
        if let Some(msg) = &p.message {
            let lang = Lang::guess(&pending.arguments);
            let shown = format!("{}\n\n→ **{answer}**", pending.prompt(lang));
            let (chat, msg) = (p.chat.clone(), Sent(msg.clone()));
            if let Err(e) = self.retry("edit", |ch| ch.edit(&chat, &msg, &shown, &[])) {
                log::warn!("{}: cannot mark the question answered: {e}", self.name);
            }
        }
        self.turn(seq, &p.chat, &answer, Source::Person, &[]);
    }
}
