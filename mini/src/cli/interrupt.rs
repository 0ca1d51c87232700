//! Ctrl-C for `chat`: during an answer it sets a flag the model client and the tools
//! check (the answer stops, the program goes on); at the prompt it ends the program
//! (exit 130), like any shell program. Every write to the store is a committed
//! transaction, so ending there loses nothing that was acknowledged.
//!
//! The handler does only async-signal-safe things: an atomic store or `_exit`.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by Ctrl-C while a turn runs.
pub static CANCEL: AtomicBool = AtomicBool::new(false);
/// A turn is running (Ctrl-C cancels it instead of ending the program).
static BUSY: AtomicBool = AtomicBool::new(false);

const SIGINT: i32 = 2;

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn _exit(code: i32) -> !;
}

extern "C" fn on_sigint(_sig: i32) {
    if BUSY.load(Ordering::SeqCst) {
        CANCEL.store(true, Ordering::SeqCst);
    } else {
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
    CANCEL.store(false, Ordering::SeqCst);
    BUSY.store(true, Ordering::SeqCst);
}

/// Marks the end of a turn: Ctrl-C ends the program again.
pub fn end_turn() {
    BUSY.store(false, Ordering::SeqCst);
}
