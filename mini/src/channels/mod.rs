//! Chat channels: the agent answers where people already talk. `evolve serve` runs one
//! thread per configured channel beside the web UI ([`spawn`]).
//!
//! The boundary is the [`Channel`] trait: a platform delivers [`Event`]s in order, each
//! with a sequence number, and sends, edits and buttons messages. Telegram
//! ([`telegram`]) long-polls `getUpdates`; a platform with a long connection (a
//! WebSocket of events) fits the same shape — [`Channel::next`] waits on the connection
//! and [`Channel::connect`] opens it again after a failure. Markdown is rendered and long
//! answers cut per platform ([`format`]).
//!
//! What this module decides, the same for every platform:
//! - **Who may talk.** A paired user (the configured `owner`, or one the owner approved
//!   with `evolve channels pair CODE`) speaks as the person. A stranger gets a pairing
//!   code and nothing else — no model call, nothing stored. In a group the agent answers
//!   only when addressed; there a paired user is the person, and anyone else (in a group
//!   the owner paired) is the world: their message is untrusted text
//!   ([`Source::World`]), runs headless, and can never answer a question about a call.
//! - **One session per chat**, named `PLATFORM:CHAT` in listings; `/new` starts another.
//! - **Turns run through the manager** like the CLI and the UI: streamed by editing one
//!   message (at most one edit per [`EDIT_EVERY`]), a call that needs the person asked
//!   with buttons (yes / no / always; an L4 call twice) and parked on the session, so a
//!   button press — or the chat's next message — settles it.
//! - **Nothing lost or doubled.** An event is acknowledged (its sequence stored as the
//!   channel's offset) only after its turn is stored and its answer delivered. Before a
//!   turn starts, the event is recorded as in flight with the messages it has sent; a
//!   process killed mid-turn finds it again on restart (the platform delivers the
//!   unacknowledged event again): a turn already stored has its stored answer delivered
//!   into the same message, one not stored runs again and edits the message it had
//!   begun. A 429 waits `retry_after`; a 5xx, garbage or a network failure is logged with
//!   what failed, recorded as the channel's status (`evolve channels list`), and retried
//!   with backoff — never a crash. While a turn runs, a second handle looks for the
//!   person's `/stop` without acknowledging anything ([`Channel::peek`]).
//! - **Deliveries** (a scheduled task's answer for `telegram:CHAT`) wait in a durable
//!   outbox in the store ([`enqueue`]) and leave it only once sent: a restart, an outage
//!   or a 429 delays them.
//!
//! What it leaves to others: the Bot API's shapes (`telegram`), the turn
//! (`crate::agents`), and what the store keeps for it (`crate::store`'s `channels`
//! table).

pub mod format;
pub mod telegram;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use evolve_core::permission::{PendingCall, Policy};
use evolve_core::provenance::Source;
use evolve_core::text::Lang;
use serde::{Deserialize, Serialize};

use crate::agents::Host;
use crate::agents::{Heard, Manager, TurnInput, TurnIo};
use crate::clock::now;
use crate::llm::Delta;
use crate::store::{Store, StoreError};

/// A streamed answer's message is edited at most this often (Telegram allows about one
/// edit per second per chat before it answers 429).
pub const EDIT_EVERY: Duration = Duration::from_secs(1);

/// Backoff after a failure: doubled each time, from 1 s up to a minute.
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// A pairing code is good for a day.
const CODE_LIFETIME_SECS: i64 = 24 * 3600;

/// How long a message waits for a turn of its session running elsewhere (the web UI).
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// Who wrote a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The platform's user id.
    pub id: String,
    /// A name to show the owner (`Ann (@ann)`).
    pub name: String,
}

/// Something sent with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    /// A picture: vision input to the turn.
    Image { file: String },
    /// A document: saved into the workspace.
    File { file: String, name: String },
    /// A voice note or audio.
    Voice,
}

/// A message to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub chat: String,
    pub chat_title: Option<String>,
    /// A one-to-one chat (else a group).
    pub direct: bool,
    pub sender: Sender,
    /// The text, the bot's mention taken out.
    pub text: String,
    /// The agent is addressed (always in a direct chat).
    pub mentioned: bool,
    pub attachments: Vec<Attachment>,
}

/// A button pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The platform's id of the press (answered with [`Channel::answer_press`]).
    pub id: String,
    pub chat: String,
    /// The message the button is on.
    pub message: Option<String>,
    pub sender: Sender,
    /// What the button carries.
    pub data: String,
}

/// What a platform delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Message(Message),
    Press(Press),
}

/// A button under a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub data: String,
}

/// A sent message's id on its platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sent(pub String);

/// How a platform call failed; the driver's reaction follows the variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelError {
    /// Too many requests: wait this long, then try again.
    RateLimited(Duration),
    /// The credentials are refused: nothing works until the user fixes them.
    Unauthorized(String),
    /// The platform cannot be reached, failed (5xx) or answered garbage: try again.
    Unavailable(String),
    /// This one request was refused (4xx): trying it again will not help.
    Refused(String),
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelError::RateLimited(d) => {
                write!(f, "rate-limited by the platform for {} s", d.as_secs())
            }
            ChannelError::Unauthorized(m)
            | ChannelError::Unavailable(m)
            | ChannelError::Refused(m) => f.write_str(m),
        }
    }
}

/// One chat platform.
pub trait Channel: Send {
    /// `telegram`, …: the prefix of its store keys and of its sessions' names.
    fn name(&self) -> &'static str;
    /// The longest text of one message (in UTF-16 units, as the platforms count).
    fn max_text(&self) -> usize;
    /// Checks the credentials and opens what must be open (a long connection); says
    /// who the agent is there.
    fn connect(&mut self) -> Result<String, ChannelError>;
    /// Waits for the events after sequence `after` (a long poll, or the next frames of a
    /// connection). An event the agent does not handle comes as `None`, to be
    /// acknowledged all the same.
    fn next(&mut self, after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError>;
    /// Sends Markdown `text` to `chat`, with buttons under it.
    fn send(&mut self, chat: &str, text: &str, buttons: &[Button]) -> Result<Sent, ChannelError>;
    /// Replaces a sent message's text and buttons.
    fn edit(
        &mut self,
        chat: &str,
        message: &Sent,
        text: &str,
        buttons: &[Button],
    ) -> Result<(), ChannelError>;
    /// Answers a button press (the platform's spinner stops; `text` shows briefly).
    fn answer_press(&mut self, press: &str, text: &str) -> Result<(), ChannelError>;
    /// The bytes of a file sent to the agent.
    fn fetch(&mut self, file: &str) -> Result<Vec<u8>, ChannelError>;
    /// A second handle on the same account, to look at what arrives while a turn runs
    /// (`/stop`); `None` where the platform cannot look without taking the events.
    fn watcher(&self) -> Option<Box<dyn Channel>> {
        None
    }
    /// The events after `after` that have arrived, without waiting and without
    /// acknowledging any (`after` must not pass what was acknowledged).
    fn peek(&mut self, _after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        Ok(Vec::new())
    }
}

/// How often a running turn looks for a `/stop`.
const WATCH_EVERY: Duration = Duration::from_millis(1500);

/// A user or group allowed to talk, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// `user` or `group`.
    pub kind: String,
    pub name: String,
    pub at: i64,
}

/// A pairing code waiting for the owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Code {
    pub channel: String,
    pub kind: String,
    pub id: String,
    pub name: String,
    pub at: i64,
}

/// The channel's health, as the last attempt left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub ok: bool,
    pub detail: String,
    pub at: i64,
}

/// An event whose turn has started and is not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
struct Inflight {
    seq: u64,
    chat: String,
    session: String,
    /// The messages the answer is shown in so far.
    sent: Vec<Sent>,
    /// The turn is stored: the answer to deliver (`None`: a question with buttons was
    /// the last thing, already sent).
    done: Option<Option<String>>,
}

/// A message waiting in the outbox (a scheduled task's answer for a chat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub channel: String,
    pub chat: String,
    pub text: String,
    pub at: i64,
}

/// A delivery target as a task names it: `telegram:CHAT` (a chat id, negative for
/// groups). Returned in its normal form.
pub fn parse_target(text: &str) -> Result<String, String> {
    let text = text.trim();
    let (channel, chat) = text.split_once(':').ok_or_else(|| {
        format!("{text:?} is not a chat: write telegram:CHAT_ID (`evolve channels list` shows ids)")
    })?;
    if !channel.eq_ignore_ascii_case("telegram") {
        return Err(format!(
            "{channel}: unknown channel — this build has telegram"
        ));
    }
    let id: i64 = chat.trim().parse().map_err(|_| {
        format!("{chat:?} is not a Telegram chat id (a number, negative for groups)")
    })?;
    Ok(format!("telegram:{id}"))
}

/// Puts `text` for `target` (`telegram:CHAT`) in the outbox, durably: the channel sends
/// it when it can (after a restart, an outage or a 429) and only then removes it.
pub fn enqueue(store: &Store, target: &str, text: &str) -> Result<(), String> {
    let target = parse_target(target)?;
    let (channel, chat) = target.split_once(':').unwrap_or(("telegram", ""));
    let at = now();
    // Time first, so the outbox reads oldest first; a counter keeps same-second ones apart.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let k = format!("outbox/{at:012}-{}-{n:06}", std::process::id());
    let d = Delivery {
        channel: channel.to_string(),
        chat: chat.to_string(),
        text: text.to_string(),
        at,
    };
    store.channel_put(&k, &d).map_err(|e| e.to_string())
}

/// Store keys.
fn key(channel: &str, what: &str) -> String {
    format!("{channel}/{what}")
}

/// Starts a thread for each configured, enabled channel; a channel that cannot start
/// (no token) says why in the log and in its status.
pub fn spawn(host: Arc<dyn Host>) -> Vec<std::thread::JoinHandle<()>> {
    let manager = host.manager();
    let rt = manager.runtime();
    let mut threads = Vec::new();
    if let Some(t) = rt.config.channels.telegram.as_ref().filter(|t| t.enabled) {
        match telegram::Telegram::new(t) {
            Some(client) => {
                let host = Arc::clone(&host);
                let owner = t.owner.map(|o| o.to_string());
                let started = std::thread::Builder::new()
                    .name("channel-telegram".into())
                    .spawn(move || Driver::new(host, Box::new(client), owner).run());
                match started {
                    Ok(h) => threads.push(h),
                    Err(e) => log::warn!("cannot start the Telegram channel's thread: {e}"),
                }
            }
            None => {
                let why = t.problem.clone().unwrap_or_else(|| "no token".into());
                log::warn!("the Telegram channel is not started: {why}");
                set_status(&rt.store, "telegram", false, &why);
            }
        }
    }
    threads
}

fn set_status(store: &Store, channel: &str, ok: bool, detail: &str) {
    let status = Status {
        ok,
        detail: detail.to_string(),
        at: now(),
    };
    if let Err(e) = store.channel_put(&key(channel, "status"), &status) {
        log::warn!("{channel}: cannot record the channel's status: {e}");
    }
}

/// Whether `id` (a user or a group) is paired on `channel`.
pub fn is_paired(store: &Store, channel: &str, id: &str) -> Result<bool, StoreError> {
    Ok(store
        .channel_get::<Paired>(&key(channel, &format!("paired/{id}")))?
        .is_some())
}

/// Approves the pairing code `code` (any case): its user or group may talk from now on.
/// Returns the channel and what was paired.
pub fn pair(store: &Store, code: &str) -> Result<(Code, Paired), String> {
    let code = code.trim().to_ascii_uppercase();
    let found = store
        .channel_get::<Code>(&format!("codes/{code}"))
        .map_err(|e| e.to_string())?;
    let Some(c) = found else {
        return Err(format!(
            "no pairing code {code} is waiting — the code is the one the bot sent to the \
             person who wants to talk to it (`evolve channels list` shows the waiting ones)"
        ));
    };
    if now() - c.at > CODE_LIFETIME_SECS {
        let _ = store.channel_remove(&format!("codes/{code}"));
        return Err(format!(
            "the pairing code {code} has expired (codes are good for a day) — ask them to \
             write to the bot again for a new one"
        ));
    }
    let paired = Paired {
        kind: c.kind.clone(),
        name: c.name.clone(),
        at: now(),
    };
    store
        .channel_put(&key(&c.channel, &format!("paired/{}", c.id)), &paired)
        .map_err(|e| e.to_string())?;
    let _ = store.channel_remove(&format!("codes/{code}"));
    Ok((c, paired))
}

/// Who a message is from, for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// The person: a paired user, or the owner.
    Person,
    /// A member of a paired group who is not paired: untrusted.
    World,
    /// Not paired: gets a pairing code.
    Stranger,
}

/// The pieces of a `/command@bot args` message.
fn command(text: &str) -> Option<(String, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let name = head.split('@').next().unwrap_or("").to_ascii_lowercase();
    let known = [
        "new",
        "stop",
        "sessions",
        "help",
        "start",
        "permissions",
        "memory",
    ];
    known.contains(&name.as_str()).then(|| (name, args.trim()))
}

/// A fresh pairing code: 8 characters without look-alikes (no 0/O, 1/I).
fn new_code() -> Option<String> {
    use ring::rand::SecureRandom;
    const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut bytes = [0u8; 8];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(
        bytes
            .iter()
            .map(|b| ALPHABET[usize::from(b % 32)] as char)
            .collect(),
    )
}

const HELP: &str = "I am your Evolve agent. Write to me as in `evolve chat`.\n\
    /new — start a new session\n\
    /sessions — the sessions of this chat\n\
    /stop — refuse the call waiting for your answer\n\
    /permissions — what this session may do without asking\n\
    /memory — what I remember\n\
    /help — this list\n\n\
    我是你的 Evolve 助手，像在 `evolve chat` 里一样直接说话即可。\n\
    /new 新会话 · /sessions 会话列表 · /stop 拒绝等待中的调用 · /permissions 权限 · /memory 记忆";

/// Runs one channel: connects, polls, handles each event, acknowledges it.
struct Driver {
    host: Arc<dyn Host>,
    ch: Box<dyn Channel>,
    name: &'static str,
    owner: Option<String>,
    /// The `/stop` that stopped a running turn (answered when its turn comes).
    stopped_by: Arc<std::sync::atomic::AtomicU64>,
}

impl Driver {
    fn new(host: Arc<dyn Host>, ch: Box<dyn Channel>, owner: Option<String>) -> Driver {
        let name = ch.name();
        Driver {
            host,
            ch,
            name,
            owner,
            stopped_by: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        }
    }

    fn store(&self) -> Arc<crate::agents::Runtime> {
        Arc::clone(self.host.manager().runtime())
    }

    /// Sleeps `d`, waking early when the server stops.
    fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.host.stopping() {
            std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
        }
    }

    fn run(mut self) {
        let mut backoff = MIN_BACKOFF;
        let mut connected = false;
        let mut failing = false;
        while !self.host.stopping() {
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
                        if self.host.stopping() {
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
    fn failed(&self, e: &ChannelError, backoff: &mut Duration) {
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
    fn retry<T>(
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
                Err(ChannelError::RateLimited(d)) if tries < 6 && !self.host.stopping() => {
                    log::info!(
                        "{}: {what}: rate-limited, waiting {} s",
                        self.name,
                        d.as_secs()
                    );
                    self.sleep(d);
                }
                Err(ChannelError::Unavailable(m)) if tries < 4 && !self.host.stopping() => {
                    log::warn!("{}: {what}: {m}; trying again", self.name);
                    self.sleep(wait);
                    wait *= 2;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends text; a failure is logged (the caller has nothing better to do with it).
    fn say(&mut self, chat: &str, text: &str) {
        let chat = chat.to_string();
        let text = text.to_string();
        for piece in format::split(&text, self.ch.max_text()) {
            if let Err(e) = self.retry("send", |ch| ch.send(&chat, &piece, &[])) {
                log::warn!("{}: cannot send to chat {chat}: {e}", self.name);
            }
        }
    }

    /// Sends what waits in the outbox for this channel, oldest first; each is removed
    /// once sent. A platform that cannot be reached leaves the rest for the next round.
    fn drain_outbox(&mut self) {
        let waiting: Vec<(String, Delivery)> = match self.store().store.channel_scan("outbox/") {
            Ok(w) => w,
            Err(e) => {
                log::warn!("{}: cannot read the outbox: {e}", self.name);
                return;
            }
        };
        let name = self.name;
        for (k, d) in waiting.into_iter().filter(|(_, d)| d.channel == name) {
            if self.host.stopping() {
                return;
            }
            let pieces = format::split(&d.text, self.ch.max_text());
            let mut result = Ok(());
            for piece in &pieces {
                result = self
                    .retry("send", |ch| ch.send(&d.chat, piece, &[]))
                    .map(|_| ());
                if result.is_err() {
                    break;
                }
            }
            match result {
                Ok(()) => {
                    log::info!(
                        "{}: delivered a task's answer to chat {}",
                        self.name,
                        d.chat
                    );
                }
                Err(ChannelError::Refused(e)) => {
                    // The chat will not take it (the bot was blocked, the chat is gone).
                    log::warn!(
                        "{}: chat {} refused a task's answer, which is dropped: {e}",
                        self.name,
                        d.chat
                    );
                }
                Err(e) => {
                    log::warn!(
                        "{}: a task's answer for chat {} waits in the outbox: {e}",
                        self.name,
                        d.chat
                    );
                    return;
                }
            }
            if let Err(e) = self.store().store.channel_remove(&k) {
                log::warn!(
                    "{}: cannot remove a sent message from the outbox: {e}",
                    self.name
                );
            }
        }
    }

    /// Records `seq` as handled: the platform will not deliver it again.
    fn ack(&self, seq: u64) -> bool {
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

    fn who(&self, m: &Message) -> Who {
        let store = self.store();
        let paired = |id: &str| {
            self.owner.as_deref() == Some(id)
                || is_paired(&store.store, self.name, id).unwrap_or_else(|e| {
                    log::warn!("{}: cannot read the paired users: {e}", self.name);
                    false
                })
        };
        if paired(&m.sender.id) {
            Who::Person
        } else if !m.direct && paired(&m.chat) {
            Who::World
        } else {
            Who::Stranger
        }
    }

    fn handle(&mut self, seq: u64, event: Option<Event>) {
        match event {
            None => {
                self.ack(seq);
            }
            Some(Event::Message(m)) => self.on_message(seq, m),
            Some(Event::Press(p)) => self.on_press(seq, p),
        }
    }

    /// The code for a user or group, the same one while it waits.
    fn code_for(&self, kind: &str, id: &str, name: &str) -> Option<String> {
        let store = self.store();
        let waiting: Vec<(String, Code)> = store.store.channel_scan("codes/").ok()?;
        if let Some((k, _)) = waiting.iter().find(|(_, c)| {
            c.channel == self.name && c.id == id && now() - c.at < CODE_LIFETIME_SECS
        }) {
            return k.strip_prefix("codes/").map(str::to_string);
        }
        let code = new_code()?;
        let c = Code {
            channel: self.name.to_string(),
            kind: kind.to_string(),
            id: id.to_string(),
            name: name.to_string(),
            at: now(),
        };
        store.store.channel_put(&format!("codes/{code}"), &c).ok()?;
        log::warn!(
            "{}: {} {name} ({id}) asks to talk to the agent — approve with `evolve channels pair {code}`",
            self.name,
            kind
        );
        Some(code)
    }

    fn on_message(&mut self, seq: u64, m: Message) {
        if !m.mentioned {
            self.ack(seq);
            return;
        }
        let who = self.who(&m);
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
            self.say(&m.chat, &text);
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
        let mut text = m.text.clone();
        let mut images = Vec::new();
        for a in &m.attachments {
            match a {
                // The world's files and images are not taken in.
                _ if who != Who::Person => {}
                Attachment::Voice => self.say(
                    &m.chat,
                    "Voice notes are not transcribed yet — please type the message. \
                     语音消息暂不支持转写，请输入文字。",
                ),
                Attachment::Image { file } => match self.fetch_image(file) {
                    Ok(url) => images.push(url),
                    Err(e) => self.say(&m.chat, &format!("I could not take the image: {e}")),
                },
                Attachment::File { file, name } => match self.save_file(file, name) {
                    Ok(rel) => {
                        text.push_str(&format!(
                            "\n\n[The file {name} is saved in the workspace as {rel}]"
                        ));
                    }
                    Err(e) => self.say(&m.chat, &format!("I could not take the file {name}: {e}")),
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
        let from = if who == Who::Person {
            Source::Person
        } else {
            // Said so to the model, and kept so: later turns read it as world text.
            text = evolve_core::provenance::from_other(&m.sender.name, &text);
            Source::World
        };
        self.turn(seq, &m.chat, &text, from, &images);
    }

    fn fetch_image(&mut self, file: &str) -> Result<String, String> {
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
    fn save_file(&mut self, file: &str, name: &str) -> Result<String, String> {
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
    fn session_for(&self, chat: &str, title: &str) -> Result<String, StoreError> {
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

    fn current_session(&self, chat: &str) -> Option<String> {
        self.store()
            .store
            .channel_get::<String>(&key(self.name, &format!("chat/{chat}")))
            .ok()
            .flatten()
    }

    fn on_command(&mut self, seq: u64, m: &Message, name: &str) {
        let rt = self.store();
        let chat = m.chat.clone();
        let reply = match name {
            "new" => {
                let _ = rt
                    .store
                    .channel_remove(&key(self.name, &format!("chat/{chat}")));
                "A new session starts with your next message. 下一条消息将开始新会话。".to_string()
            }
            "stop" if self.stopped_by.load(std::sync::atomic::Ordering::SeqCst) == seq => {
                "Stopped. 已停止。".to_string()
            }
            "stop" => {
                let parked = self
                    .current_session(&chat)
                    .and_then(|sid| rt.store.parked(&sid).ok().flatten().map(|_| sid));
                if parked.is_some() {
                    // Refusing is an answer: the turn goes on without the call.
                    self.turn(seq, &chat, "no", Source::Person, &[]);
                    return;
                }
                "Nothing is waiting or running. 没有正在进行的操作。".to_string()
            }
            "sessions" => {
                let current = self.current_session(&chat);
                let mine = format!("{}:{chat}", self.name);
                let list: Vec<String> = rt
                    .store
                    .sessions()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|s| s.channel.as_deref() == Some(mine.as_str()))
                    .map(|s| {
                        let mark = if current.as_deref() == Some(s.id.as_str()) {
                            "▶ "
                        } else {
                            "• "
                        };
                        format!("{mark}{} — {} ({} turns)", s.id, s.title, s.turns)
                    })
                    .collect();
                if list.is_empty() {
                    "No sessions in this chat yet. 此聊天还没有会话。".to_string()
                } else {
                    list.join("\n")
                }
            }
            "permissions" => {
                let grants = self
                    .current_session(&chat)
                    .and_then(|sid| rt.store.grants(&sid).ok());
                let lines: Vec<String> = grants
                    .iter()
                    .flat_map(|g| g.iter())
                    .map(|g| match &g.command {
                        Some(c) => format!("• {} `{c}` ({})", g.tool, g.level),
                        None => format!("• {} ({})", g.tool, g.level),
                    })
                    .collect();
                if lines.is_empty() {
                    "Nothing is allowed “always” in this session: calls above the automatic \
                     level are asked. 本会话没有“总是允许”的调用。"
                        .to_string()
                } else {
                    format!("Allowed always in this session:\n{}", lines.join("\n"))
                }
            }
            "memory" => {
                let (n, newest) = rt.store.with_memories(|ms| {
                    let mut v: Vec<&evolve_core::memory::Memory> = ms.iter().collect();
                    v.sort_by_key(|m| std::cmp::Reverse(m.id));
                    (
                        ms.len(),
                        v.iter()
                            .take(5)
                            .map(|m| {
                                format!(
                                    "• #{} {}",
                                    m.id,
                                    evolve_core::text::one_line(&m.content, 80)
                                )
                            })
                            .collect::<Vec<_>>(),
                    )
                });
                format!("{n} memories; the newest:\n{}", newest.join("\n"))
            }
            _ => HELP.to_string(),
        };
        self.say(&chat, &reply);
        self.ack(seq);
    }

    fn on_press(&mut self, seq: u64, p: Press) {
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

    /// Runs a turn for event `seq` in the chat's session and delivers its answer; the
    /// event is acknowledged after both (see the module docs).
    fn turn(&mut self, seq: u64, chat: &str, text: &str, from: Source, images: &[String]) {
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
            let cancel = Arc::new(AtomicBool::new(false));
            let end = Instant::now() + BUSY_WAIT;
            while !self.host.begin(&sid, &cancel) {
                if Instant::now() > end || self.host.stopping() {
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
            let stopped = cancel.load(std::sync::atomic::Ordering::SeqCst);
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
    fn watch(
        &self,
        seq: u64,
        chat: &str,
        cancel: &Arc<AtomicBool>,
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
                        if id > seq && m.chat == chat && person && stop {
                            log::info!("{name}: /stop in chat {chat}: the answer stops");
                            stopped_by.store(id, SeqCst);
                            cancel.store(true, SeqCst);
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
    fn deliver(&mut self, chat: &str, sent: &mut Vec<Sent>, answer: &str) -> bool {
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
                    self.hold_until = Some(now + d);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_with_or_without_the_bots_name() {
        let cases = [
            ("/new", Some(("new", ""))),
            ("/NEW@EvolveBot", Some(("new", ""))),
            ("/sessions  ", Some(("sessions", ""))),
            ("/help me", Some(("help", "me"))),
            ("/unknown", None),
            ("not /new", None),
            ("", None),
        ];
        for (text, want) in cases {
            let got = command(text);
            assert_eq!(
                got.as_ref().map(|(n, a)| (n.as_str(), *a)),
                want,
                "{text:?}"
            );
        }
    }

    #[test]
    fn delivery_targets_name_a_telegram_chat() {
        let cases = [
            ("telegram:42", Ok("telegram:42")),
            (" Telegram:-1001234 ", Ok("telegram:-1001234")),
            ("telegram:@ann", Err("not a Telegram chat id")),
            ("feishu:42", Err("unknown channel")),
            ("42", Err("not a chat")),
        ];
        for (text, want) in cases {
            match (parse_target(text), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, w, "{text}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{text}: {e}"),
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn pairing_codes_are_eight_unambiguous_characters() {
        let a = new_code().expect("a code");
        let b = new_code().expect("a code");
        assert_eq!(a.len(), 8);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| !"01IO".contains(c) && c.is_ascii_alphanumeric()));
    }
}
