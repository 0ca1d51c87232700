//! Chat channels: the agent answers where people already talk. `evolve serve` runs one
//! thread per configured channel beside the web UI, started, stopped and started again
//! as the configuration changes ([`supervise`]).
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
//! - **Voice notes** are the sender's words: the platform's own recognition, else a
//!   transcription by `[model] transcription_model` ([`crate::llm::transcribe`]),
//!   shown back as `🎤 words` before the answer; without one, a plain note says what to
//!   set. A voice note that cannot be heard is answered with why, and acknowledged.
//! - **Deliveries** (a scheduled task's answer for `telegram:CHAT`) wait in a durable
//!   outbox in the store ([`enqueue`]) and leave it only once sent: a restart, an outage
//!   or a 429 delays them.
//!
//! What it leaves to others: the Bot API's shapes (`telegram`), the turn
//! (`crate::agents`), and what the store keeps for it (`crate::store`'s `channels`
//! table).

pub mod dingtalk;
pub mod feishu;
pub mod format;
mod link;
pub mod telegram;

mod commands;
mod download;
mod driver;
mod inflight;
mod outbox;
mod pairing;
mod pairs;
mod slash;
mod supervisor;
mod turn;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::now;
use crate::store::Store;

pub use outbox::{enqueue, parse_target};
pub use pairs::{pair, Code, PairError, Paired};
pub use supervisor::supervise;

/// A streamed answer's message is edited at most this often (Telegram allows about one
/// edit per second per chat before it answers 429).
pub const EDIT_EVERY: Duration = Duration::from_secs(1);

/// Backoff after a failure: doubled each time, from 1 s up to a minute.
const MIN_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

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
    /// A voice note or audio: `file` is where to fetch it (when the platform lets a
    /// bot), `heard` the words the platform itself recognised in it (DingTalk's
    /// `recognition`), which need no transcription.
    Voice {
        file: Option<String>,
        heard: Option<String>,
    },
}

/// A message to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub chat: String,
    /// The thread of the chat it is in (a forum topic, a Feishu thread): the thread has
    /// a session of its own and the answers go into it.
    pub thread: Option<String>,
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

impl Message {
    /// Where the answer goes and which session it is: `CHAT` or `CHAT/THREAD`.
    pub fn place(&self) -> String {
        match &self.thread {
            Some(t) => format!("{}/{t}", self.chat),
            None => self.chat.clone(),
        }
    }
}

/// A button pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The platform's id of the press (answered with [`Channel::answer_press`]).
    pub id: String,
    /// Where the question was asked: `CHAT` or `CHAT/THREAD`, as [`Message::place`].
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
    /// Whose numbering the event sequence follows, when it is the platform's (a bot's
    /// update ids): another bot or server starts its own, and an offset kept from the
    /// last one would skip its first events. `None`: the sequence is the store's own
    /// (an inbox filled from a long connection).
    fn numbering(&self) -> Option<String> {
        None
    }
    /// Whether a sent message can be edited (else an answer is sent once, whole, and
    /// not streamed).
    fn edits(&self) -> bool {
        true
    }
    /// Checks the credentials and says who the agent is there, opening nothing that
    /// stays open (`evolve channels test`).
    fn check(&mut self) -> Result<String, ChannelError> {
        self.connect()
    }
    /// Waits for the events after sequence `after` (a long poll, or the next frames of a
    /// connection). An event the agent does not handle comes as `None`, to be
    /// acknowledged all the same. By default: those of the long connection's inbox
    /// ([`Channel::inbox`]), each read by [`Channel::read`].
    fn next(&mut self, after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        link::next(self.inbox(), self.name(), after, |v| self.read(v))
    }
    /// The long connection whose inbox brings this platform's events, once connected
    /// (`None`: a platform that polls, or one not connected yet).
    fn inbox(&self) -> Option<&link::Link> {
        None
    }
    /// One event of the inbox, as the platform stored it; `None` for what the agent does
    /// not handle.
    fn read(&self, _stored: &serde_json::Value) -> Option<Event> {
        None
    }
    /// Sends Markdown `text` to `chat` (`CHAT` or `CHAT/THREAD`, see [`Message::place`]),
    /// with buttons under it.
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
    fn peek(&mut self, after: u64) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
        link::peek(self.inbox(), after, |v| self.read(v))
    }
}

/// How often a running turn looks for a `/stop`.
const WATCH_EVERY: Duration = Duration::from_millis(1500);

/// The channel's health, as the last attempt left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub ok: bool,
    pub detail: String,
    pub at: i64,
}

/// Store keys.
fn key(channel: &str, what: &str) -> String {
    format!("{channel}/{what}")
}

/// The platforms this build has, as they name channels, store keys and sessions.
pub const PLATFORMS: [&str; 3] = ["telegram", "feishu", "dingtalk"];

/// A client of the channel `name` that only sends and checks (no long connection), from
/// `config`; `None` when the channel is not configured or has no secret.
pub fn sender(config: &crate::config::ChannelsConfig, name: &str) -> Option<Box<dyn Channel>> {
    match name {
        "telegram" => config
            .telegram
            .as_ref()
            .and_then(telegram::Telegram::new)
            .map(|t| Box::new(t) as Box<dyn Channel>),
        "feishu" => config
            .feishu
            .as_ref()
            .and_then(|f| feishu::Feishu::new(f, None))
            .map(|f| Box::new(f) as Box<dyn Channel>),
        "dingtalk" => config
            .dingtalk
            .as_ref()
            .and_then(|d| dingtalk::Dingtalk::new(d, None))
            .map(|d| Box::new(d) as Box<dyn Channel>),
        _ => None,
    }
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
