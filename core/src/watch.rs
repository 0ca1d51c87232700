//! The smart shell timeout (tea-agent's 智能命令超时): while a command runs, the shell
//! samples what its process group uses — CPU time, bytes read and written, output — and
//! this rule decides from each new sample whether it goes on.
//!
//! - **Active or idle** is decided between two samples: it used CPU (at least 1% of the
//!   interval), moved at least 4 KiB through its files, pipes or sockets, or printed
//!   something.
//! - **Up to its timeout** a command runs, unless it has been idle for `idle_stop` in a
//!   row (waiting on something that will not come): then it is stopped early.
//! - **Past its timeout** an active command gets more time, up to `max_factor` × the
//!   timeout (4 in tea-agent); it is stopped as soon as it is idle for `grace` (at most
//!   half the timeout), or at the limit however busy it is.
//!
//! Pure: times are milliseconds since the command started, given by the caller.

/// Less I/O than this between two samples is not activity (a program starting up reads
/// a few small files).
pub const IO_ACTIVE_BYTES: u64 = 4096;

/// What the shell measured of the command's processes at one moment (totals since it
/// started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// CPU time of every process of the group, in milliseconds.
    pub cpu_ms: u64,
    /// Bytes read and written through any file descriptor (`rchar + wchar`).
    pub io_bytes: u64,
    /// Bytes of output the command printed.
    pub output_bytes: u64,
}

/// The rule's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The command's timeout, in milliseconds.
    pub timeout_ms: u64,
    /// How many timeouts an active command may run in all (1: never extended).
    pub max_factor: u32,
    /// Idle this long in a row (milliseconds) stops a command before its timeout; 0
    /// never does.
    pub idle_stop_ms: u64,
    /// Past the timeout, idle this long (milliseconds) stops it.
    pub grace_ms: u64,
}

impl Rule {
    /// tea-agent's rule for a timeout: up to 4×, stopped after 20 s idle before the
    /// timeout (never before half of it), after 3 s idle past it.
    pub fn for_timeout(timeout_ms: u64) -> Rule {
        Rule {
            timeout_ms,
            max_factor: 4,
            idle_stop_ms: 20_000.max(timeout_ms / 2),
            grace_ms: 3_000,
        }
    }
}

/// Why a command is stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Idle for `idle_ms` before its timeout.
    Idle {
        /// How long it had been idle.
        idle_ms: u64,
    },
    /// At its timeout while idle (or never extended).
    Timeout,
    /// Extended while active, then idle past the timeout.
    IdleAfterExtension {
        /// How long it ran in all.
        ran_ms: u64,
    },
    /// Active all along, at `max_factor` × its timeout.
    Limit {
        /// That limit.
        limit_ms: u64,
    },
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let it run.
    Go,
    /// Stop it, for this reason.
    Stop(Stop),
}

/// The watch over one command: feed it every sample.
#[derive(Debug, Clone)]
pub struct Watch {
    rule: Rule,
    last: Option<(u64, Sample)>,
    /// When it was last seen active (ms); it counts as active when it starts.
    active_at: u64,
    /// It ran past its timeout because it was active.
    extended: bool,
}

impl Watch {
    /// A watch started at time 0.
    pub fn new(rule: Rule) -> Watch {
        Watch {
            rule,
            last: None,
            active_at: 0,
            extended: false,
        }
    }

    /// Whether it was active between the previous sample and this one.
    fn active(prev: (u64, Sample), now: (u64, Sample)) -> bool {
        let (t0, a) = prev;
        let (t1, b) = now;
        let interval = t1.saturating_sub(t0).max(1);
        b.cpu_ms.saturating_sub(a.cpu_ms) * 100 >= interval
            || b.io_bytes.saturating_sub(a.io_bytes) >= IO_ACTIVE_BYTES
            || b.output_bytes > a.output_bytes
    }

    /// The verdict at `now_ms` with this sample.
    pub fn observe(&mut self, now_ms: u64, sample: Sample) -> Verdict {
        let first = self.last.is_none();
        let prev = self.last.unwrap_or((0, Sample::default()));
        if Watch::active(prev, (now_ms, sample)) {
            self.active_at = now_ms;
        }
        self.last = Some((now_ms, sample));
        let r = self.rule;
        // A short timeout gets a short grace: a command idle through its whole second
        // is not extended.
        let grace = r.grace_ms.min(r.timeout_ms / 2).max(1);
        let idle = now_ms.saturating_sub(self.active_at);
        let limit = r.timeout_ms.saturating_mul(u64::from(r.max_factor.max(1)));
        if now_ms < r.timeout_ms {
            if !first && r.idle_stop_ms > 0 && idle >= r.idle_stop_ms {
                return Verdict::Stop(Stop::Idle { idle_ms: idle });
            }
            return Verdict::Go;
        }
        if now_ms >= limit {
            return Verdict::Stop(if self.extended {
                Stop::Limit { limit_ms: limit }
            } else {
                Stop::Timeout
            });
        }
        if idle >= grace {
            return Verdict::Stop(if self.extended {
                Stop::IdleAfterExtension { ran_ms: now_ms }
            } else {
                Stop::Timeout
            });
        }
        self.extended = true;
        Verdict::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;

    /// A command sampled every second: `busy[i]` says whether it used CPU in second i.
    fn run(rule: Rule, busy: impl Fn(u64) -> bool, seconds: u64) -> (u64, Verdict) {
        let mut w = Watch::new(rule);
        let mut s = Sample::default();
        for t in 1..=seconds {
            if busy(t) {
                s.cpu_ms += 900;
            }
            let v = w.observe(t * 1000, s);
            if v != Verdict::Go {
                return (t, v);
            }
        }
        (seconds, Verdict::Go)
    }

    #[test]
    fn the_rule_table() {
        let r = Rule {
            timeout_ms: 10_000,
            max_factor: 4,
            idle_stop_ms: 6_000,
            grace_ms: 3_000,
        };
        type Busy = Box<dyn Fn(u64) -> bool>;
        let cases: [(&str, Busy, u64, (u64, Verdict)); 6] = [
            (
                "busy and done in time",
                Box::new(|_| true),
                9,
                (9, Verdict::Go),
            ),
            (
                "busy all along: extended to 4x, then stopped",
                Box::new(|_| true),
                100,
                (40, Verdict::Stop(Stop::Limit { limit_ms: 40_000 })),
            ),
            (
                "idle from the start: stopped early",
                Box::new(|_| false),
                100,
                (6, Verdict::Stop(Stop::Idle { idle_ms: 6_000 })),
            ),
            (
                "busy, then idle past the timeout: stopped after the grace",
                Box::new(|t| t <= 15),
                100,
                (
                    18,
                    Verdict::Stop(Stop::IdleAfterExtension { ran_ms: 18_000 }),
                ),
            ),
            (
                "idle a while before the timeout (under idle_stop), then at it: the timeout",
                Box::new(|t| t <= 6),
                100,
                (10, Verdict::Stop(Stop::Timeout)),
            ),
            (
                "bursts every 2 s keep it going to the limit",
                Box::new(|t| t % 2 == 0),
                100,
                (40, Verdict::Stop(Stop::Limit { limit_ms: 40_000 })),
            ),
        ];
        for (what, busy, seconds, want) in cases {
            assert_eq!(run(r, busy, seconds), want, "{what}");
        }
    }

    #[test]
    fn output_and_io_count_as_activity_and_a_factor_of_one_never_extends() {
        let r = Rule {
            timeout_ms: 5_000,
            max_factor: 4,
            idle_stop_ms: 0,
            grace_ms: 2_000,
        };
        let mut w = Watch::new(r);
        let mut s = Sample::default();
        for t in 1..=12u64 {
            if t % 2 == 0 {
                s.output_bytes += 10;
            } else {
                s.io_bytes += 4096;
            }
            assert_eq!(w.observe(t * 1000, s), Verdict::Go, "second {t}");
        }
        // A quiet command with idle_stop 0 runs to its timeout.
        let mut w = Watch::new(r);
        assert_eq!(w.observe(4_000, Sample::default()), Verdict::Go);
        assert_eq!(
            w.observe(5_000, Sample::default()),
            Verdict::Stop(Stop::Timeout)
        );
        let once = Rule { max_factor: 1, ..r };
        // A one-second timeout: idle through it, not extended.
        let short = Rule::for_timeout(1_000);
        let mut w = Watch::new(short);
        assert_eq!(
            w.observe(
                1_000,
                Sample {
                    io_bytes: 10,
                    ..Sample::default()
                }
            ),
            Verdict::Stop(Stop::Timeout)
        );
        assert_eq!(run(once, |_| true, 100), (5, Verdict::Stop(Stop::Timeout)));
        // A trickle of CPU below 1% of the interval is idle.
        let mut w = Watch::new(Rule {
            idle_stop_ms: 3_000,
            ..r
        });
        let mut s = Sample::default();
        let mut verdict = Verdict::Go;
        for t in 1..=4u64 {
            s.cpu_ms += 5;
            verdict = w.observe(t * 1000, s);
            if verdict != Verdict::Go {
                break;
            }
        }
        assert_eq!(verdict, Verdict::Stop(Stop::Idle { idle_ms: 3_000 }));
        assert_eq!(Rule::for_timeout(30_000).idle_stop_ms, 20_000);
        assert_eq!(Rule::for_timeout(120_000).idle_stop_ms, 60_000);
    }
}
