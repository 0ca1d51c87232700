//! The clock: the one place the agent reads the time. The core never does (it takes
//! `now`); the runtime holds a [`Clock`] and gives each event of a turn its own reading.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use evolve_core::Timestamp;

/// The system clock — or, once a test has [`set`](Clock::set) it, a time that moves
/// only when told to.
#[derive(Debug, Default)]
pub struct Clock {
    /// 0: the system clock.
    fixed: AtomicI64,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// From now on the clock reads `at` (tests).
    #[cfg(test)]
    pub fn set(&self, at: Timestamp) {
        self.fixed.store(at, Ordering::Relaxed);
    }

    /// Now, in Unix seconds.
    pub fn now(&self) -> Timestamp {
        match self.fixed.load(Ordering::Relaxed) {
            0 => now(),
            at => at,
        }
    }
}

/// Now by the system clock, in Unix seconds (for code that holds no runtime).
pub fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Timestamp)
}
