//! Ctrl-C for `chat` (and `ask`, and the `mcp` commands that wait): while chat is busy
//! (an answer, a command, a wait) it sets a flag the model client, the tools and the
//! approval question check — that work stops, the program goes on. At the prompt it
//! asks chat to end (exit 130, like any shell program) once the last answer's background
//! work is saved; a second Ctrl-C, at the prompt or while the work is stopping, ends it
//! at once (the MCP servers' process groups are killed first). Every write to the store is a committed transaction, so even that loses
//! nothing acknowledged.
//!
//! The handler does only async-signal-safe things: atomics (a [`Cancel`] is one), kill(2) and `_exit`.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::cancel::Cancel;

/// Cancelled by Ctrl-C while a turn runs.
pub static CANCEL: Cancel = Cancel::new();
/// A turn is running (Ctrl-C cancels it instead of ending the program).
static BUSY: AtomicBool = AtomicBool::new(false);
/// Ctrl-C at the prompt: chat should end.
static QUIT: AtomicBool = AtomicBool::new(false);

const SIGINT: i32 = 2;

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn _exit(code: i32) -> !;
}

extern "C" fn on_sigint(_sig: i32) {
    let again = if BUSY.load(Ordering::SeqCst) {
        CANCEL.cancel()
    } else {
        QUIT.swap(true, Ordering::SeqCst)
    };
    if again {
        // The second Ctrl-C: the MCP servers' process groups go (nothing started
        // outlives evolve), then evolve.
        crate::mcp::kill_all_groups();
        // SAFETY: `_exit` is async-signal-safe; nothing else is touched.
        unsafe { _exit(130) }
    }
}

/// Installs the handler (once per process).
pub fn install() {
    let handler: extern "C" fn(i32) = on_sigint;
    // SAFETY: `signal` with a handler that only touches atomics and calls `_exit`.
    unsafe {
        signal(SIGINT, handler as usize);
    }
}

/// Marks the start of a turn: clears an old cancel, Ctrl-C now cancels.
pub fn begin_turn() {
    CANCEL.reset();
    BUSY.store(true, Ordering::SeqCst);
}

/// Marks the end of a turn: Ctrl-C ends the program again.
pub fn end_turn() {
    BUSY.store(false, Ordering::SeqCst);
}

/// Ctrl-C was pressed at the prompt.
pub fn quit_requested() -> bool {
    QUIT.load(Ordering::SeqCst)
}

/// Ctrl-C was pressed during the current turn or command.
pub fn cancelled() -> bool {
    CANCEL.is_cancelled()
}
