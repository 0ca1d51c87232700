//! What a turn run outside a person's terminal needs from the interface hosting it:
//! `serve` registers each turn so a chat in the same session waits and stopping cancels
//! it; the scheduler's loop and the chat channels reach the current manager through it.

use std::sync::Arc;

use super::Manager;

use crate::cancel::Cancel;

/// What the interface around a run does: `serve` registers the turn with its other
/// turns (so a chat in the same session waits, and stopping cancels it); the command
/// line does nothing.
pub trait TurnGate {
    /// Claims the session for the run's turn with its cancel; false when another
    /// turn runs in it.
    fn begin(&self, session: &str, cancel: &Arc<Cancel>) -> bool;
    /// The turn ended.
    fn end(&self, session: &str);
}

/// The command line runs one task at a time and holds the store: nothing to register.
pub struct NoGate;

impl TurnGate for NoGate {
    fn begin(&self, _session: &str, _cancel: &Arc<Cancel>) -> bool {
        true
    }
    fn end(&self, _session: &str) {}
}

/// What the scheduler's loop and the chat channels need from `serve`.
pub trait Host: TurnGate + Send + Sync {
    /// The current manager (a profile switch replaces it; a run keeps the one it
    /// started with).
    fn manager(&self) -> Arc<Manager>;
    /// The server is stopping: start nothing new.
    fn stopping(&self) -> bool;
}
