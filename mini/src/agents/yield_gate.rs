//! Background model work yields to turns. On a model server with one slot (llama.cpp
//! on a small machine), a background call in front of a person's question makes them
//! wait for it; so the answer path holds [`answering`] while a turn runs, and a call of
//! the background worker ([`yielding`]) waits until no turn runs before it starts. A
//! call already in flight when a turn begins is stopped and sent again once the turns
//! are done ([`MAX_YIELDS`] times at most: then it runs through).
//!
//! Only the background worker's thread yields ([`mark_background`]): a cheap call a
//! turn makes itself is part of that turn and never waits for it.

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::llm::LlmError;

/// Times one background call is stopped for a new turn; after that it runs through, so
/// a steady stream of turns cannot starve the learning from earlier ones.
pub const MAX_YIELDS: u32 = 3;

/// How long a background call waits for running turns at most (a turn may wait for a
/// person's approval for hours): then it runs beside them.
const MAX_WAIT: Duration = Duration::from_secs(120);

#[derive(Default)]
struct State {
    /// Turns running now, in this process.
    turns: usize,
    /// The cancels of the background calls in flight.
    in_flight: Vec<Arc<Cancel>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    turns: 0,
    in_flight: Vec::new(),
});
static CHANGED: Condvar = Condvar::new();

thread_local! {
    static BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks the calling thread as the background worker's: its model calls yield.
pub fn mark_background() {
    BACKGROUND.with(|b| b.set(true));
}

/// A running turn; background calls wait until it is dropped.
#[must_use = "the turn counts as running while this is held"]
pub struct Answering(());

impl Drop for Answering {
    fn drop(&mut self) {
        let mut st = state();
        st.turns = st.turns.saturating_sub(1);
        drop(st);
        CHANGED.notify_all();
    }
}

/// Registers a turn as running until the value is dropped, and stops the background
/// calls in flight (they are sent again after it).
pub fn answering() -> Answering {
    let mut st = state();
    st.turns += 1;
    for flag in &st.in_flight {
        flag.cancel();
    }
    Answering(())
}

/// Runs `call` (given the cancel to pass to the model) as background work: on the
/// background worker's thread, after the running turns (at most [`MAX_WAIT`]), and
/// again after a turn that stopped it. Elsewhere it runs at once with `cancel`. (The
/// worker's calls are waited for, never cancelled by their caller: `cancel` is read
/// before each try only.)
pub fn yielding<T>(
    cancel: &Cancel,
    mut call: impl FnMut(&Cancel) -> Result<T, LlmError>,
) -> Result<T, LlmError> {
    if !BACKGROUND.with(Cell::get) {
        return call(cancel);
    }
    let mut yields = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let flag = Arc::new(Cancel::new());
        {
            let mut st = wait_for_turns();
            if yields < MAX_YIELDS {
                st.in_flight.push(Arc::clone(&flag));
            }
        }
        let out = call(&flag);
        state().in_flight.retain(|f| !Arc::ptr_eq(f, &flag));
        match out {
            Err(LlmError::Cancelled) if flag.is_cancelled() => {
                yields += 1;
                log::info!("a background call gave way to a new turn; it is sent again after it");
            }
            other => return other,
        }
    }
}

/// Waits until no turn runs (at most [`MAX_WAIT`]); the state, locked.
fn wait_for_turns() -> MutexGuard<'static, State> {
    let deadline = Instant::now() + MAX_WAIT;
    let mut st = state();
    if st.turns > 0 {
        log::info!("a background call waits for the running turn");
    }
    while st.turns > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            log::info!("a turn has run for long: the background call goes beside it");
            break;
        }
        st = CHANGED
            .wait_timeout(st, left)
            .map(|(st, _)| st)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    st
}
