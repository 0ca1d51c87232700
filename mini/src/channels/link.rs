//! A platform's long connection (a WebSocket of events: Feishu/Lark, DingTalk) read by a
//! thread of its own, with a durable inbox in the store between it and the driver.
//!
//! The platforms want each pushed event acknowledged within seconds, and push it again
//! when it is not; a turn takes longer. So the reader thread stores an event in the
//! inbox (`PLATFORM/inbox/SEQ`, durably) and only then acknowledges it on the socket;
//! the driver reads the inbox by sequence number ([`Link::next`]) and acknowledges in
//! the store after the turn, as it does Telegram's updates. A process killed mid-turn
//! finds the event in the inbox again; an event pushed twice (its ack was lost) is
//! known by its id and stored once. While a turn runs, the socket is still read, pinged
//! and acknowledged, and the driver's watcher looks at the inbox for a `/stop`
//! ([`Link::peek`]).
//!
//! What each platform decides is behind [`Protocol`]: how a connection is opened (an
//! endpoint asked first), what a frame means, what the acknowledgement and the
//! keep-alive are. Reconnecting with backoff and reporting failures to the driver
//! (logged, shown as the channel's status) are here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{key, ChannelError, Event, MAX_BACKOFF, MIN_BACKOFF};
use crate::store::Store;
use crate::ws::{self, WebSocket};

/// How long a socket read waits before the reader looks at its keep-alive and its stop
/// flag.
const READ_EVERY: Duration = Duration::from_millis(500);

/// How long [`Link::next`] waits for an event before it returns none (the driver then
/// looks at its outbox).
const WAIT: Duration = Duration::from_secs(5);

/// The ids of this many recent events are remembered to drop a second push.
const SEEN: usize = 256;

/// What a frame from the platform carried.
#[derive(Debug, Default)]
pub(super) struct Frame {
    /// Events to store: the platform's id of each (to drop a second push) and its JSON.
    pub events: Vec<(String, Value)>,
    /// What to send back once the events are stored (the acknowledgement).
    pub reply: Option<ws::Message>,
    /// The platform asks for a new connection (it is being moved).
    pub reconnect: bool,
}

/// One platform's side of a long connection.
pub(super) trait Protocol: Send + 'static {
    /// Opens a connection (asking the platform's endpoint for the address first).
    fn open(&mut self) -> Result<WebSocket, ChannelError>;
    /// What a message from the socket means.
    fn frame(&mut self, message: ws::Message) -> Frame;
    /// A keep-alive to send now, if one is due.
    fn keepalive(&mut self, now: Instant) -> Option<ws::Message>;
}

/// What the reader thread left for the driver.
#[derive(Debug, Default)]
struct Shared {
    /// A failure not yet reported to the driver.
    failure: Option<ChannelError>,
}

/// How long the last handle's drop waits for the reader to close the connection.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Stops the reader when the last handle on the link goes, and waits a while for it to
/// close the connection (a channel started again must not find two readers filling its
/// inbox).
#[derive(Debug)]
struct Stop {
    stop: Arc<AtomicBool>,
    /// Set by the reader when it has ended.
    ended: Arc<AtomicBool>,
}

impl Drop for Stop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let end = Instant::now() + CLOSE_WAIT;
        while !self.ended.load(Ordering::SeqCst) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The driver's side of a long connection: the inbox and what the reader reports.
#[derive(Clone)]
pub struct Link {
    name: &'static str,
    store: Arc<Store>,
    shared: Arc<Mutex<Shared>>,
    _stop: Arc<Stop>,
}

impl Link {
    /// Starts the reader thread of `protocol` for channel `name`.
    pub(super) fn start(
        name: &'static str,
        store: Arc<Store>,
        protocol: impl Protocol,
    ) -> Result<Link, ChannelError> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let reader = Reader {
            name,
            inbox: Inbox {
                name,
                store: Arc::clone(&store),
            },
            shared: Arc::clone(&shared),
            stop: Arc::clone(&stop),
            protocol: Box::new(protocol),
        };
        let done = Arc::clone(&ended);
        std::thread::Builder::new()
            .name(format!("{name}-link"))
            .spawn(move || {
                reader.run();
                done.store(true, Ordering::SeqCst);
            })
            .map_err(|e| {
                ChannelError::Unavailable(format!("cannot start the {name} connection: {e}"))
            })?;
        Ok(Link {
            name,
            store,
            shared,
            _stop: Arc::new(Stop { stop, ended }),
        })
    }

    fn inbox(&self) -> Inbox {
        Inbox {
            name: self.name,
            store: Arc::clone(&self.store),
        }
    }

    /// The stored events after `after` (those up to it are acknowledged and dropped),
    /// waiting a while for one; a failure of the connection is returned once.
    pub(super) fn next(&self, after: u64) -> Result<Vec<(u64, Value)>, ChannelError> {
        let inbox = self.inbox();
        inbox.forget(after);
        let end = Instant::now() + WAIT;
        loop {
            if let Some(e) = self.shared.lock().ok().and_then(|mut s| s.failure.take()) {
                return Err(e);
            }
            let events = inbox.after(after)?;
            if !events.is_empty() || Instant::now() >= end {
                return Ok(events);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The stored events after `after`, without waiting or dropping any.
    pub(super) fn peek(&self, after: u64) -> Result<Vec<(u64, Value)>, ChannelError> {
        self.inbox().after(after)
    }
}

/// [`super::Channel::next`] of a platform whose events come through `link`: the stored
/// events after `after`, each read by `read` (`None`: one the agent does not handle).
pub(super) fn next(
    link: Option<&Link>,
    name: &str,
    after: u64,
    read: impl Fn(&Value) -> Option<Event>,
) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
    let link = link.ok_or_else(|| {
        ChannelError::Unavailable(format!("{name}: the long connection is not started"))
    })?;
    Ok(read_all(link.next(after)?, read))
}

/// [`super::Channel::peek`] of a platform whose events come through `link` (none before
/// it is started).
pub(super) fn peek(
    link: Option<&Link>,
    after: u64,
    read: impl Fn(&Value) -> Option<Event>,
) -> Result<Vec<(u64, Option<Event>)>, ChannelError> {
    match link {
        Some(link) => Ok(read_all(link.peek(after)?, read)),
        None => Ok(Vec::new()),
    }
}

fn read_all(
    stored: Vec<(u64, Value)>,
    read: impl Fn(&Value) -> Option<Event>,
) -> Vec<(u64, Option<Event>)> {
    stored.into_iter().map(|(seq, v)| (seq, read(&v))).collect()
}

/// Starts the reader of channel `name` once (a channel that connects again keeps its
/// link): `protocol` makes its side of the connection, `store` keeps the inbox (`None`:
/// a client that only sends cannot).
pub(super) fn start_once<P: Protocol>(
    link: &mut Option<Link>,
    name: &'static str,
    store: Option<&Arc<Store>>,
    protocol: impl FnOnce() -> P,
) -> Result<(), ChannelError> {
    if link.is_none() {
        let store = store.ok_or_else(|| {
            ChannelError::Unavailable(format!("{name}: no store for the long connection"))
        })?;
        *link = Some(Link::start(name, Arc::clone(store), protocol())?);
    }
    Ok(())
}

/// The events stored between the reader and the driver.
struct Inbox {
    name: &'static str,
    store: Arc<Store>,
}

impl Inbox {
    fn unavailable(&self, e: impl std::fmt::Display) -> ChannelError {
        ChannelError::Unavailable(format!("{}: the store's inbox failed: {e}", self.name))
    }

    /// Stores an event; `false` when an event with that id was stored before.
    fn push(&self, id: &str, event: &Value) -> Result<bool, ChannelError> {
        let seen_key = key(self.name, "seen");
        let mut seen: Vec<String> = self
            .store
            .channel_get(&seen_key)
            .map_err(|e| self.unavailable(e))?
            .unwrap_or_default();
        if !id.is_empty() && seen.iter().any(|s| s == id) {
            return Ok(false);
        }
        let acked: u64 = self
            .store
            .channel_get(&key(self.name, "offset"))
            .map_err(|e| self.unavailable(e))?
            .unwrap_or(0);
        let next: u64 = self
            .store
            .channel_get(&key(self.name, "inbox-next"))
            .map_err(|e| self.unavailable(e))?
            .unwrap_or(1);
        let seq = next.max(acked + 1);
        let event_key = key(self.name, &format!("inbox/{seq:020}"));
        let next_key = key(self.name, "inbox-next");
        let mut rows = vec![
            (event_key.as_str(), json!({"id": id, "event": event})),
            (next_key.as_str(), json!(seq + 1)),
        ];
        if !id.is_empty() {
            seen.push(id.to_string());
            let extra = seen.len().saturating_sub(SEEN);
            seen.drain(..extra);
            rows.push((seen_key.as_str(), json!(seen)));
        }
        // One commit: a process killed here keeps the event and its id, or neither (and
        // the platform, never answered, pushes it again).
        self.store
            .channel_put_all(&rows)
            .map_err(|e| self.unavailable(e))?;
        Ok(true)
    }

    /// The stored events after `after`, oldest first.
    fn after(&self, after: u64) -> Result<Vec<(u64, Value)>, ChannelError> {
        let rows: Vec<(String, Value)> = self
            .store
            .channel_scan(&key(self.name, "inbox/"))
            .map_err(|e| self.unavailable(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, mut v)| {
                let seq: u64 = k.rsplit('/').next()?.parse().ok()?;
                (seq > after).then(|| (seq, v["event"].take()))
            })
            .collect())
    }

    /// Drops the events up to `upto` (acknowledged: their turns are stored).
    fn forget(&self, upto: u64) {
        let Ok(rows) = self.store.channel_scan::<Value>(&key(self.name, "inbox/")) else {
            return;
        };
        for (k, _) in rows {
            let seq: u64 = k
                .rsplit('/')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if seq <= upto {
                let _ = self.store.channel_remove(&k);
            }
        }
    }
}

/// The thread that keeps the connection and fills the inbox. The protocol is behind a
/// `dyn`: one copy of this loop serves every platform.
struct Reader {
    name: &'static str,
    inbox: Inbox,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    protocol: Box<dyn Protocol>,
}

impl Reader {
    fn report(&self, e: ChannelError) {
        if let Ok(mut s) = self.shared.lock() {
            s.failure = Some(e);
        }
    }

    fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn run(mut self) {
        let mut backoff = MIN_BACKOFF;
        while !self.stop.load(Ordering::SeqCst) {
            let mut socket = match self.protocol.open() {
                Ok(s) => s,
                Err(e) => {
                    let wait = match &e {
                        ChannelError::RateLimited(d) => *d,
                        ChannelError::Unauthorized(_) => MAX_BACKOFF,
                        _ => backoff,
                    };
                    self.report(e);
                    self.sleep(wait);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            if let Err(e) = socket.set_read_timeout(Some(READ_EVERY)) {
                self.report(ChannelError::Unavailable(format!(
                    "the long connection failed: {e}"
                )));
                continue;
            }
            log::info!("{}: the long connection is open", self.name);
            let why = self.serve(&mut socket);
            socket.close();
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            match why {
                Some(e) => {
                    // The driver logs it and shows it as the channel's status.
                    self.report(e);
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                None => {
                    // Asked to move: at once.
                    backoff = MIN_BACKOFF;
                }
            }
        }
        log::debug!("{}: the long connection is closed", self.name);
    }

    /// Reads the socket until it fails (the failure) or the platform moves it (`None`).
    fn serve(&mut self, socket: &mut WebSocket) -> Option<ChannelError> {
        let dropped = |e: &dyn std::fmt::Display| {
            Some(ChannelError::Unavailable(format!(
                "the long connection dropped: {e}"
            )))
        };
        while !self.stop.load(Ordering::SeqCst) {
            if let Some(m) = self.protocol.keepalive(Instant::now()) {
                if let Err(e) = send(socket, &m) {
                    return dropped(&e);
                }
            }
            let message = match socket.read() {
                Ok(ws::Message::Close(reason)) => {
                    let why = reason.map_or_else(
                        || "without a reason".to_string(),
                        |(code, text)| format!("{code} {text}"),
                    );
                    return dropped(&format!("the platform closed it ({why})"));
                }
                Ok(m) => m,
                Err(e) if e.is_timeout() => continue,
                Err(e) => return dropped(&e),
            };
            let frame = self.protocol.frame(message);
            let mut stored = true;
            for (id, event) in &frame.events {
                match self.inbox.push(id, event) {
                    Ok(true) => log::debug!("{}: event {id} stored", self.name),
                    Ok(false) => log::info!("{}: event {id} came again; kept once", self.name),
                    Err(e) => {
                        // Not acknowledged: the platform pushes it again.
                        log::warn!("{}: {e}", self.name);
                        stored = false;
                    }
                }
            }
            if let (true, Some(reply)) = (stored, &frame.reply) {
                if let Err(e) = send(socket, reply) {
                    return dropped(&e);
                }
            }
            if frame.reconnect {
                log::info!("{}: the platform moves the connection", self.name);
                return None;
            }
        }
        None
    }
}

fn send(socket: &mut WebSocket, m: &ws::Message) -> Result<(), ws::WsError> {
    match m {
        ws::Message::Text(t) => socket.send_text(t),
        ws::Message::Binary(b) => socket.send_binary(b),
        ws::Message::Close(_) => {
            socket.close();
            Ok(())
        }
    }
}
