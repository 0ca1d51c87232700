//! What the server allows a client, and whom it lets go when a limit is reached.
//!
//! [`Limits`] holds the numbers; [`make_room`] is the rule that decides which waiting
//! connections are closed so that a new one fits: always the connections that have
//! had the most time and done the least with it — an address's oldest unfinished head,
//! the slowest body — never the newcomer. An honest client sends its head in one
//! packet and is gone from the waiting set at once, so however many trickling
//! connections share its address, it is served. Pure: the caller passes `now`.

use std::net::IpAddr;
use std::time::{Duration, Instant};

/// A connection that has not sent its whole request head within this is answered 408
/// and closed. A real client (browser, curl, an SDK) sends its head in one packet,
/// well under the 16 KiB allowed; 5 s covers a lost packet and two retransmissions on a
/// bad mobile link (the first retransmission timeout is 1 s, then 2 s) with room left.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);

/// Connections from one address (one IPv4 address, one IPv6 /64) that may be waiting at
/// once without having shown the token: a browser opens at most 6 per host, so 32 leaves
/// room for a few people behind one NAT. One more closes that address's oldest.
pub const UNAUTHENTICATED_PER_PEER: usize = 32;

/// Unauthenticated connections waiting at once, all addresses together: many addresses
/// (a botnet) meet this cap instead, and again the oldest goes first.
pub const MAX_UNAUTHENTICATED: usize = 256;

/// Request bodies being received at once. Each is buffered until complete (up to
/// `max_body`), so this bounds that memory: 64 × 4 MiB = 256 MiB at the very worst,
/// where one worker per body used to allow 256 × 4 MiB. One more closes the slowest.
pub const MAX_BODIES: usize = 64;

/// A body may take this long to start arriving, like a head …
pub const BODY_GRACE: Duration = Duration::from_secs(5);

/// … and must then average at least this many bytes a second, or it is answered 408:
/// 1 KiB/s is slower than any working link (a poor 2G connection does 5–10 KiB/s) and
/// still ends a trickle of a 4 MiB body in seconds, where it used to hold a worker for
/// 60 s. The rule of Apache's mod_reqtimeout (`body=…,MinRate=…`).
pub const MIN_BODY_RATE: u64 = 1024;

/// Under the caps above, only a connection at least this old is closed to make room;
/// when none is, the newcomer waits over the cap ([`MAX_WAITING`] still holds). Many
/// clients starting at once from one machine (a script's 64 parallel requests) are all
/// accepted before any has written its head; a second is more than any of them needs,
/// while a trickling connection cannot finish a head in it.
pub const FAIR_CHANCE: Duration = Duration::from_secs(1);

/// Connections held without a worker (waiting for a head, receiving a body, idle between
/// requests, or being closed): each is one file descriptor and a small buffer.
pub const MAX_WAITING: usize = 1024;

/// The server's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Requests handled at once (one thread each); one more is answered 503.
    pub max_workers: usize,
    /// See [`MAX_WAITING`].
    pub max_waiting: usize,
    /// See [`MAX_UNAUTHENTICATED`].
    pub max_unauthenticated: usize,
    /// See [`UNAUTHENTICATED_PER_PEER`].
    pub unauthenticated_per_peer: usize,
    /// See [`MAX_BODIES`].
    pub max_bodies: usize,
    /// See [`FAIR_CHANCE`].
    pub fair_chance: Duration,
    /// The largest request body accepted.
    pub max_body: usize,
    /// See [`HEAD_DEADLINE`].
    pub head_deadline: Duration,
    /// See [`BODY_GRACE`].
    pub body_grace: Duration,
    /// See [`MIN_BODY_RATE`] (bytes per second).
    pub min_body_rate: u64,
    /// A keep-alive connection waiting this long for its next request is closed.
    pub idle_timeout: Duration,
    /// A write the client does not take within this long ends the connection.
    pub write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_workers: 256,
            max_waiting: MAX_WAITING,
            max_unauthenticated: MAX_UNAUTHENTICATED,
            unauthenticated_per_peer: UNAUTHENTICATED_PER_PEER,
            max_bodies: MAX_BODIES,
            fair_chance: FAIR_CHANCE,
            max_body: 4 * 1024 * 1024,
            head_deadline: HEAD_DEADLINE,
            body_grace: BODY_GRACE,
            min_body_rate: MIN_BODY_RATE,
            idle_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// When a body that started at `started` and has `received` bytes so far is too
    /// slow: the grace, plus one second per `min_body_rate` bytes received.
    pub fn body_deadline(&self, started: Instant, received: usize) -> Instant {
        let rate = self.min_body_rate.max(1);
        let earned = Duration::from_millis((received as u64).saturating_mul(1000) / rate);
        started + self.body_grace + earned
    }
}

/// Whose connections count together: one IPv4 address, or one IPv6 /64 (what one
/// subscriber usually gets). An IPv4-mapped IPv6 address is its IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKey {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl PeerKey {
    pub fn of(ip: IpAddr) -> PeerKey {
        match ip {
            IpAddr::V4(v4) => PeerKey::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PeerKey::V4(v4.octets()),
                None => {
                    let o = v6.octets();
                    PeerKey::V6([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]])
                }
            },
        }
    }
}

/// What a waiting connection is doing, as far as making room goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Answered and being closed (its last bytes drained): the first to go.
    Closing,
    /// Waiting for a head, no request on it has shown the token yet.
    Unauthenticated,
    /// Receiving the body of an admitted request.
    Body { received: usize },
    /// Waiting for the next head on a connection that showed the token.
    Authenticated,
}

/// One waiting connection, seen by [`make_room`].
#[derive(Debug, Clone, Copy)]
pub struct Waiting {
    pub peer: PeerKey,
    pub class: Class,
    /// When it entered its class.
    pub since: Instant,
}

/// Which of `waiting` to close so that `newcomer` fits: their indexes, at most one per
/// limit it meets. Within a class the one with the most time behind it goes (the oldest
/// head, the slowest body), and under the caps of a class only one that had its fair
/// chance; when everything together is full, classes go in the order of [`Class`],
/// whatever their age. The newcomer itself always stays.
pub fn make_room(
    waiting: &[Waiting],
    newcomer: &Waiting,
    limits: &Limits,
    now: Instant,
) -> Vec<usize> {
    let mut room = Room {
        waiting,
        victims: Vec::new(),
        now,
    };
    let had_its_chance = |w: &Waiting| now.duration_since(w.since) >= limits.fair_chance;
    let unauthenticated = |w: &Waiting| w.class == Class::Unauthenticated;
    let body = |w: &Waiting| matches!(w.class, Class::Body { .. });
    match newcomer.class {
        Class::Unauthenticated => {
            let mine = |w: &Waiting| unauthenticated(w) && w.peer == newcomer.peer;
            if room.count(mine) >= limits.unauthenticated_per_peer {
                room.close_oldest(|w| mine(w) && had_its_chance(w));
            }
            if room.count(unauthenticated) >= limits.max_unauthenticated {
                room.close_oldest(|w| unauthenticated(w) && had_its_chance(w));
            }
        }
        Class::Body { .. } => {
            if room.count(body) >= limits.max_bodies {
                room.close_slowest(had_its_chance);
            }
        }
        Class::Closing | Class::Authenticated => {}
    }
    if room.count(|_| true) >= limits.max_waiting {
        let _ = room.close_oldest(|w| w.class == Class::Closing)
            || room.close_oldest(unauthenticated)
            || room.close_slowest(|_| true)
            || room.close_oldest(|_| true);
    }
    room.victims
}

/// The waiting connections while [`make_room`] picks from them.
struct Room<'a> {
    waiting: &'a [Waiting],
    victims: Vec<usize>,
    now: Instant,
}

impl Room<'_> {
    /// Those not picked yet.
    fn left(&self) -> impl Iterator<Item = (usize, &Waiting)> + '_ {
        self.waiting
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.victims.contains(i))
    }

    fn count(&self, which: impl Fn(&Waiting) -> bool) -> usize {
        self.left().filter(|(_, w)| which(w)).count()
    }

    fn close_oldest(&mut self, which: impl Fn(&Waiting) -> bool) -> bool {
        let oldest = self
            .left()
            .filter(|(_, w)| which(w))
            .min_by_key(|(_, w)| w.since)
            .map(|(i, _)| i);
        self.victims.extend(oldest);
        oldest.is_some()
    }

    /// The body with the fewest bytes a second so far.
    fn close_slowest(&mut self, which: impl Fn(&Waiting) -> bool) -> bool {
        let now = self.now;
        let rate = |w: &Waiting| match w.class {
            Class::Body { received } => {
                received as f64 / now.duration_since(w.since).as_secs_f64().max(0.001)
            }
            _ => f64::INFINITY,
        };
        let slowest = self
            .left()
            .filter(|(_, w)| matches!(w.class, Class::Body { .. }) && which(w))
            .min_by(|(_, a), (_, b)| rate(a).total_cmp(&rate(b)))
            .map(|(i, _)| i);
        self.victims.extend(slowest);
        slowest.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits {
            max_waiting: 6,
            max_unauthenticated: 4,
            unauthenticated_per_peer: 2,
            max_bodies: 2,
            fair_chance: Duration::from_secs(2),
            ..Limits::default()
        }
    }

    const A: PeerKey = PeerKey::V4([10, 0, 0, 1]);
    const B: PeerKey = PeerKey::V4([10, 0, 0, 2]);
    const C: PeerKey = PeerKey::V4([10, 0, 0, 3]);

    fn at(t0: Instant, secs: u64, peer: PeerKey, class: Class) -> Waiting {
        Waiting {
            peer,
            class,
            since: t0 + Duration::from_secs(secs),
        }
    }

    #[test]
    fn the_newcomer_takes_the_place_of_the_oldest_of_its_kind() {
        let t0 = Instant::now();
        let now = t0 + Duration::from_secs(10);
        let un = Class::Unauthenticated;
        let body = |received| Class::Body { received };
        // (waiting, newcomer, victims)
        let cases: Vec<(Vec<Waiting>, Waiting, Vec<usize>)> = vec![
            // Room left: nobody goes.
            (vec![at(t0, 1, A, un)], at(t0, 9, A, un), vec![]),
            // A's third unfinished head closes A's oldest, not B's older one.
            (
                vec![at(t0, 0, B, un), at(t0, 2, A, un), at(t0, 1, A, un)],
                at(t0, 9, A, un),
                vec![2],
            ),
            // Four addresses' heads: the globally oldest goes.
            (
                vec![
                    at(t0, 3, A, un),
                    at(t0, 1, B, un),
                    at(t0, 2, C, un),
                    at(t0, 4, C, un),
                ],
                at(t0, 9, PeerKey::V4([10, 0, 0, 4]), un),
                vec![1],
            ),
            // A third body closes the slowest (bytes a second), not the oldest.
            (
                vec![at(t0, 0, A, body(100_000)), at(t0, 5, B, body(10))],
                at(t0, 9, C, body(0)),
                vec![1],
            ),
            // Authenticated connections never count against the unauthenticated caps.
            (
                vec![
                    at(t0, 0, A, Class::Authenticated),
                    at(t0, 1, A, Class::Authenticated),
                    at(t0, 2, A, un),
                ],
                at(t0, 9, A, un),
                vec![],
            ),
            // Everything full: closing ones first, then unauthenticated heads.
            (
                vec![
                    at(t0, 0, A, Class::Authenticated),
                    at(t0, 1, A, Class::Authenticated),
                    at(t0, 2, B, un),
                    at(t0, 3, C, Class::Closing),
                    at(t0, 4, A, body(5000)),
                    at(t0, 5, A, Class::Authenticated),
                ],
                at(t0, 9, A, Class::Authenticated),
                vec![3],
            ),
            (
                vec![
                    at(t0, 0, A, Class::Authenticated),
                    at(t0, 1, A, Class::Authenticated),
                    at(t0, 2, B, un),
                    at(t0, 3, C, Class::Authenticated),
                    at(t0, 4, A, body(5000)),
                    at(t0, 5, A, Class::Authenticated),
                ],
                at(t0, 9, A, Class::Authenticated),
                vec![2],
            ),
            // Full of authenticated idle connections: the oldest of them.
            (
                (0..6)
                    .map(|i| at(t0, 6 - i, A, Class::Authenticated))
                    .collect(),
                at(t0, 9, B, Class::Authenticated),
                vec![5],
            ),
            // Over A's cap, but A's others are younger than their fair chance: all stay.
            (
                vec![at(t0, 9, A, un), at(t0, 9, A, un)],
                at(t0, 10, A, un),
                vec![],
            ),
            // Only the one that had its chance goes.
            (
                vec![at(t0, 9, A, un), at(t0, 5, A, un), at(t0, 9, A, un)],
                at(t0, 10, A, un),
                vec![1],
            ),
            // A new body over the cap while the others are young: nobody goes.
            (
                vec![at(t0, 9, A, body(0)), at(t0, 9, B, body(0))],
                at(t0, 10, C, body(0)),
                vec![],
            ),
            // Everything full of young heads: the oldest goes all the same.
            (
                (0..6).map(|_| at(t0, 9, A, un)).collect(),
                at(t0, 10, B, un),
                vec![0],
            ),
            // Closing one of A's makes room under the overall cap too.
            (
                vec![
                    at(t0, 1, A, un),
                    at(t0, 2, A, un),
                    at(t0, 3, B, Class::Authenticated),
                    at(t0, 4, B, Class::Authenticated),
                    at(t0, 5, B, Class::Authenticated),
                    at(t0, 6, B, Class::Authenticated),
                ],
                at(t0, 9, A, un),
                vec![0],
            ),
        ];
        for (i, (waiting, newcomer, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                make_room(&waiting, &newcomer, &small(), now),
                want,
                "case {i}"
            );
        }
    }

    #[test]
    fn a_body_must_keep_up_the_minimum_rate_after_its_grace() {
        let limits = Limits::default();
        let t0 = Instant::now();
        assert_eq!(limits.body_deadline(t0, 0), t0 + BODY_GRACE);
        assert_eq!(
            limits.body_deadline(t0, 10 * 1024),
            t0 + BODY_GRACE + Duration::from_secs(10)
        );
        assert_eq!(
            limits.body_deadline(t0, 512),
            t0 + BODY_GRACE + Duration::from_millis(500)
        );
    }

    #[test]
    fn an_ipv6_subscriber_is_one_peer() {
        let key = |s: &str| PeerKey::of(s.parse().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:10.0.0.1"), key("10.0.0.1"));
        assert_ne!(key("10.0.0.1"), key("10.0.0.2"));
    }
}
