//! The one thread that holds every connection not being answered: it accepts, waits on
//! all of them with poll(2), lets each [`Conn`] read what arrived, applies the
//! deadlines, makes room by [`limits::make_room`] when a limit is met, and hands each
//! complete request to a worker thread ([`work`]). Workers give kept-alive connections
//! back through a channel and a wake-up socket.

use std::io::Write;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::conn::{Conn, Phase, Step};
use super::limits::{self, Class, Waiting};
use super::{respond, sys, Body, Request, Shared};

/// The longest poll(2) wait, so that shutdown is noticed.
const SLICE: Duration = Duration::from_millis(250);
/// A worker that answered a request on an authenticated kept-alive connection waits
/// this long for the next one before giving the connection back: a client sending
/// request after request (a script, a benchmark) then stays on its worker.
const KEEP_ALIVE_LINGER: Duration = Duration::from_millis(5);
/// Connections taken from the listen queue in one round, so that the ones waiting
/// are read in between.
const ACCEPTS_PER_ROUND: usize = 64;
/// After the process ran out of file descriptors, the listener rests this long.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// File descriptors the rest of the process may need (the store, MCP servers' pipes,
/// the model's connections) besides the server's connections.
const OTHER_FILES: usize = 256;

/// How workers give connections back.
struct Back {
    conns: mpsc::Sender<Conn>,
    /// Written to after each connection sent, to wake the poll.
    wake: UnixStream,
}

impl Back {
    fn give(&self, conn: Conn) {
        if self.conns.send(conn).is_ok() {
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// Counts a request being answered while it lives.
struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Poller {
    shared: Arc<Shared>,
    back: Arc<Back>,
    /// Requests being answered (workers alive).
    busy: Arc<AtomicUsize>,
    /// The waiting connections; `None` for one that left in this round.
    conns: Vec<Option<Conn>>,
}

/// Serves until shutdown, then waits for the workers.
pub(super) fn run(listener: TcpListener, mut shared: Arc<Shared>) {
    fit_open_files(&mut shared);
    if let Err(e) = listener.set_nonblocking(true) {
        log::warn!("cannot make the listener non-blocking: {e}");
    }
    let (wake_rx, wake_tx) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            log::error!("cannot create the wake-up socket: {e}; not serving");
            return;
        }
    };
    let _ = wake_rx.set_nonblocking(true);
    let _ = wake_tx.set_nonblocking(true);
    let (tx, returned) = mpsc::channel();
    let mut poller = Poller {
        shared: Arc::clone(&shared),
        back: Arc::new(Back {
            conns: tx,
            wake: wake_tx,
        }),
        busy: Arc::new(AtomicUsize::new(0)),
        conns: Vec::new(),
    };
    let mut paused_until: Option<Instant> = None;
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !stopping(&shared) {
        let now = Instant::now();
        let limits = &shared.limits;
        let next = poller
            .conns
            .iter()
            .flatten()
            .map(|c| c.deadline(limits))
            .min();
        let wait = next.map_or(SLICE, |d| d.saturating_duration_since(now).min(SLICE));
        let accepting = paused_until.is_none_or(|t| now >= t);
        fds.clear();
        // A negative descriptor is left out by poll(2).
        fds.push(sys::watch(if accepting {
            listener.as_raw_fd()
        } else {
            -1
        }));
        fds.push(sys::watch(wake_rx.as_raw_fd()));
        fds.extend(
            poller
                .conns
                .iter()
                .flatten()
                .map(|c| sys::watch(c.stream.as_raw_fd())),
        );
        sys::poll(&mut fds, wait);
        if stopping(&shared) {
            break;
        }
        let now = Instant::now();
        for i in 0..poller.conns.len() {
            if sys::stirred(&fds[i + 2]) {
                poller.advance(i, now);
            }
        }
        for i in 0..poller.conns.len() {
            let late = poller.conns[i]
                .as_ref()
                .is_some_and(|c| c.deadline(&shared.limits) <= now);
            if late {
                poller.expire(i, now);
            }
        }
        if sys::stirred(&fds[1]) {
            let mut sink = [0u8; 256];
            while matches!(std::io::Read::read(&mut &wake_rx, &mut sink), Ok(n) if n > 0) {}
        }
        while let Ok(conn) = returned.try_recv() {
            poller.insert(conn, now);
        }
        if accepting && sys::stirred(&fds[0]) {
            paused_until = poller.accept(&listener, now);
        }
        poller.conns.retain(Option::is_some);
    }
    drop(listener);
    // Waiting connections are dropped unanswered; requests being answered finish
    // (bounded by the turns' cancel, which the caller sets).
    poller.conns.clear();
    drop(returned);
    while poller.busy.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stopping(shared: &Shared) -> bool {
    shared.shutdown.load(Ordering::SeqCst)
}

/// Makes sure the process may open as many files as the limits let connections take
/// (raising the soft limit when it is lower); else waits for fewer connections.
fn fit_open_files(shared: &mut Arc<Shared>) {
    let limits = &shared.limits;
    let want = limits.max_waiting + limits.max_workers + OTHER_FILES;
    let open = usize::try_from(sys::raise_open_files(want as u64)).unwrap_or(usize::MAX);
    if open >= want {
        return;
    }
    let fits = open
        .saturating_sub(limits.max_workers + OTHER_FILES)
        .max(64);
    log::warn!(
        "only {open} open files allowed (ulimit -n): at most {fits} connections wait at once"
    );
    if let Some(shared) = Arc::get_mut(shared) {
        shared.limits.max_waiting = fits;
    }
}

impl Poller {
    /// Takes connections from the listen queue: `Some` pauses the listener until then.
    fn accept(&mut self, listener: &TcpListener, now: Instant) -> Option<Instant> {
        for _ in 0..ACCEPTS_PER_ROUND {
            match listener.accept() {
                Ok((stream, peer)) => {
                    // Accepted sockets block (the workers write with a timeout); reads
                    // here never wait (sys::recv_now).
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_nodelay(true);
                    let _ = stream.set_write_timeout(Some(self.shared.limits.write_timeout));
                    let conn = Conn::accepted(stream, peer, &self.shared.limits, now);
                    self.conns.push(Some(conn));
                    let i = self.conns.len() - 1;
                    // Its head is usually there already: read it before making room.
                    self.advance(i, now);
                    if self.conns[i].is_some() {
                        self.make_room(i, now);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    log::warn!("cannot accept a connection: {e}; pausing");
                    return Some(now + ACCEPT_PAUSE);
                }
                // The client gave up before it was accepted, or similar.
                Err(_) => return None,
            }
        }
        None
    }

    /// A connection a worker gave back.
    fn insert(&mut self, mut conn: Conn, now: Instant) {
        if stopping(&self.shared) {
            return;
        }
        conn.since = now;
        self.conns.push(Some(conn));
        self.make_room(self.conns.len() - 1, now);
    }

    fn advance(&mut self, i: usize, now: Instant) {
        let Some(conn) = self.conns[i].as_mut() else {
            return;
        };
        let was_body = matches!(conn.class(), Class::Body { .. });
        let step = conn.advance(&self.shared, now);
        self.settle(i, step, was_body, now);
    }

    fn expire(&mut self, i: usize, now: Instant) {
        let Some(conn) = self.conns[i].as_mut() else {
            return;
        };
        let step = conn.expire(&self.shared, now);
        self.settle(i, step, true, now);
    }

    /// Acts on what a connection got to.
    fn settle(&mut self, i: usize, step: Step, was_body: bool, now: Instant) {
        match step {
            Step::Wait => {
                let is_body = self.conns[i]
                    .as_ref()
                    .is_some_and(|c| matches!(c.class(), Class::Body { .. }));
                // Only a new body changes what a connection counts against.
                if is_body && !was_body {
                    self.make_room(i, now);
                }
            }
            Step::Closed => self.conns[i] = None,
            Step::Ready(request, keep_alive) => {
                if let Some(conn) = self.conns[i].take() {
                    self.dispatch(conn, request, keep_alive, now);
                }
            }
        }
    }

    /// Closes what must go for connection `i` to fit.
    fn make_room(&mut self, i: usize, now: Instant) {
        let Some(newcomer) = self.conns[i].as_ref().map(waiting) else {
            return;
        };
        let (index, others): (Vec<usize>, Vec<Waiting>) = self
            .conns
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .filter_map(|(j, c)| Some((j, waiting(c.as_ref()?))))
            .unzip();
        for victim in limits::make_room(&others, &newcomer, &self.shared.limits, now) {
            if let Some(conn) = self.conns[index[victim]].take() {
                shed(conn, &self.shared);
            }
        }
    }

    /// Hands a request to a worker, or answers 503 when all are busy.
    fn dispatch(&mut self, mut conn: Conn, request: Request, keep_alive: bool, now: Instant) {
        if self.busy.load(Ordering::SeqCst) >= self.shared.limits.max_workers {
            log::debug!("{}: every worker is busy; answering 503", conn.peer);
            conn.refuse(
                &self.shared,
                503,
                "the server is busy: too many requests at once; try again",
                now,
            );
            return;
        }
        self.busy.fetch_add(1, Ordering::SeqCst);
        let busy = Busy(Arc::clone(&self.busy));
        let (shared, back) = (Arc::clone(&self.shared), Arc::clone(&self.back));
        let spawned = std::thread::Builder::new()
            .name("http".into())
            .stack_size(1024 * 1024)
            .spawn(move || {
                let _busy = busy;
                work(conn, request, keep_alive, &shared, &back);
            });
        if let Err(e) = spawned {
            // The closure (and the connection in it) is dropped: the client sees a close.
            log::warn!("cannot start a worker thread: {e}");
        }
    }
}

/// What [`limits::make_room`] needs to know of a connection.
fn waiting(conn: &Conn) -> Waiting {
    Waiting {
        peer: conn.key,
        class: conn.class(),
        since: conn.since,
    }
}

/// Closes a connection to make room for another, saying why to one that was sending.
fn shed(mut conn: Conn, shared: &Shared) {
    let message = match conn.class() {
        Class::Unauthenticated if matches!(conn.phase, Phase::Head { .. }) => {
            "too many connections from your address are still sending their request; \
             this, the oldest, was closed"
        }
        Class::Body { .. } => {
            "too many uploads at once; this one, the slowest, was closed: try again"
        }
        _ => return,
    };
    log::debug!("{}: closed to make room: {message}", conn.peer);
    let _ = conn.refuse(shared, 503, message, Instant::now());
}

/// Answers requests on one connection while they come without waiting, then gives it
/// back to the poller (or closes it).
fn work(mut conn: Conn, mut request: Request, mut keep_alive: bool, shared: &Shared, back: &Back) {
    loop {
        let head_only = request.method == "HEAD";
        let response = (shared.handler)(&request);
        log::debug!(
            "{} {} {} → {}",
            request.peer,
            request.method,
            request.path,
            response.status
        );
        // HTTP/1.0 has no chunked encoding: a stream ends by closing.
        let streamed = matches!(response.body, Body::Stream(_));
        let keep = keep_alive && !stopping(shared) && !(request.http10 && streamed);
        let written =
            respond::write_response(&mut conn.stream, response, keep, head_only, request.http10);
        drop(request);
        if written.is_err() || !keep {
            return;
        }
        conn.rest(&shared.limits, Instant::now());
        if conn.trusted {
            sys::wait_readable(&conn.stream, KEEP_ALIVE_LINGER);
        }
        match conn.advance(shared, Instant::now()) {
            Step::Ready(next, keep) => {
                request = next;
                keep_alive = keep;
            }
            Step::Wait => return back.give(conn),
            Step::Closed => return,
        }
    }
}
