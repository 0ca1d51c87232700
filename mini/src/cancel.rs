//! Stopping work nobody wants any more: a person's Ctrl-C or Stop button, a server
//! shutting down, a scheduled run taken back. The one who wants the work stopped calls
//! [`Cancel::cancel`]; the work (the model client, the tools, the MCP requests, the
//! waits) asks [`Cancel::is_cancelled`] at the points where it can stop and returns
//! its module's cancelled error from there. Nothing is interrupted from outside: stopping is a return value.

use std::sync::atomic::{AtomicBool, Ordering};

/// A cancellation shared by the one who may stop the work and the work itself (borrow
/// it, or share it in an `Arc` across threads). It starts not cancelled; once cancelled it
/// stays so until [`reset`](Cancel::reset).
#[derive(Debug, Default)]
pub struct Cancel(AtomicBool);

impl Cancel {
    /// Not cancelled. `const`, so a `static` can hold one (Ctrl-C's, work that is never
    /// cancelled).
    pub const fn new() -> Cancel {
        Cancel(AtomicBool::new(false))
    }

    /// Asks the work to stop. Returns whether it had been asked already (a second Ctrl-C).
    /// Async-signal-safe: one atomic operation.
    pub fn cancel(&self) -> bool {
        self.0.swap(true, Ordering::SeqCst)
    }

    /// Whether the work was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Not cancelled again: the next turn of a chat reuses Ctrl-C's.
    pub fn reset(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::Cancel;

    #[test]
    fn a_cancel_stays_until_reset_and_tells_a_second_cancel_apart() {
        let c = Cancel::new();
        assert!(!c.is_cancelled());
        assert!(!c.cancel(), "the first cancel");
        assert!(c.is_cancelled());
        assert!(c.cancel(), "the second cancel sees the first");
        c.reset();
        assert!(!c.is_cancelled());
        assert!(!Cancel::default().is_cancelled());
    }
}
