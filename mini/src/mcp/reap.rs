//! Nothing a stdio server started outlives evolve. Each server runs as the leader of its
//! own process group (so Ctrl-C in the terminal reaches evolve, not the servers); when a
//! connection ends — closed, timed out, crashed — the whole group is killed, so helpers
//! the server started go too. SIGTERM, SIGHUP and (where evolve has no Ctrl-C handler of
//! its own, as in `ask`) SIGINT kill every live group before evolve dies of the signal
//! (a systemd stop, a closed terminal, `timeout`, Ctrl-C). kill -9 of
//! evolve cannot be caught: its servers then see their stdin close and exit on their own.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;
const SIG_DFL: usize = 0;

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn signal(signum: i32, handler: usize) -> usize;
    fn raise(sig: i32) -> i32;
}

/// The live groups (0 = free slot). A fixed array: the signal handler may only read
/// atomics.
static GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];
static INSTALL: Once = Once::new();

/// Remembers a server's process group, and installs the signal handlers on first use.
pub(super) fn register(pgid: i32) {
    INSTALL.call_once(install);
    if pgid <= 0 {
        return;
    }
    if !GROUPS.iter().any(|g| {
        g.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }) {
        log::warn!("more than 64 MCP server processes: process group {pgid} is not tracked");
    }
}

/// Asks a server's whole group to end (SIGTERM), leaving it tracked for the kill that
/// follows if it does not.
pub(super) fn terminate_group(pgid: i32) {
    if pgid > 0 && GROUPS.iter().any(|g| g.load(Ordering::SeqCst) == pgid) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory
        // involved.
        unsafe {
            kill(-pgid, SIGTERM);
        }
    }
}

/// Kills a server's whole group (the server, if still there, and what it started).
/// Once: the first call takes the group off the table and signals it, later calls do
/// nothing, so a number the system has since reused is never signalled.
pub(super) fn kill_group(pgid: i32) {
    if pgid <= 0 {
        return;
    }
    let tracked = GROUPS.iter().any(|g| {
        g.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    });
    if tracked {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory
        // involved.
        unsafe {
            kill(-pgid, SIGKILL);
        }
    }
}

extern "C" fn on_terminate(sig: i32) {
    kill_all_groups();
    // Then die of the signal as if there were no handler (exit status 128 + sig).
    unsafe {
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/// Kills every live group at once; async-signal-safe (for a signal handler that ends
/// evolve).
pub fn kill_all_groups() {
    for g in &GROUPS {
        let pgid = g.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: kill, signal and raise are async-signal-safe.
            unsafe {
                kill(-pgid, SIGKILL);
            }
        }
    }
}

fn install() {
    let handler: extern "C" fn(i32) = on_terminate;
    // SIGINT too: Ctrl-C in `ask` (which has no handler of its own) killed evolve and
    // left a server that ignores EOF running. `chat` and `serve` handle Ctrl-C
    // themselves and end their servers; their handler is kept.
    for sig in [SIGTERM, SIGHUP, SIGINT] {
        // SAFETY: installs a handler that only touches atomics and calls
        // async-signal-safe functions; a disposition someone else chose (nohup's
        // SIG_IGN, a handler) is put back.
        unsafe {
            let old = signal(sig, handler as usize);
            if old != SIG_DFL {
                signal(sig, old);
            }
        }
    }
}
