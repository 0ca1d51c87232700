//! The clock: the one place the agent reads the time. The core never does (it takes
//! `now`); the runtime holds a [`Clock`] and gives each event of a turn its own reading.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use evolve_core::Timestamp;

/// Where readings come from: the system clock, or (tests) a time that moves only when
/// told to.
#[derive(Debug, Default)]
pub struct Clock {
    fixed: Option<AtomicI64>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock { fixed: None }
    }

    /// A clock that reads `at` until [`Clock::set`] moves it.
    #[cfg(test)]
    pub fn fixed(at: Timestamp) -> Clock {
        Clock {
            fixed: Some(AtomicI64::new(at)),
        }
    }

    /// Moves a fixed clock; the system clock is not moved.
    #[cfg(test)]
    pub fn set(&self, at: Timestamp) {
        if let Some(f) = &self.fixed {
            f.store(at, Ordering::Relaxed);
        }
    }

    /// Now, in Unix seconds.
    pub fn now(&self) -> Timestamp {
        match &self.fixed {
            Some(f) => f.load(Ordering::Relaxed),
            None => now(),
        }
    }
}

/// Now by the system clock, in Unix seconds (for code that holds no runtime).
pub fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Timestamp)
}
