//! Giving freed memory back to the system after a big answer.
//!
//! glibc's malloc keeps what a program frees in its arenas (one per thread that
//! allocates), and once a large block has been freed it raises its mmap threshold, so
//! later large blocks come from the arenas too and are never unmapped: a server that
//! handled a few answers of megabytes kept their peak for good. `malloc_trim(0)` hands
//! the free pages of every arena back. musl's malloc returns freed memory by itself;
//! there, and on any other libc, [`give_back`] does nothing.
//!
//! Decides only when it is worth it: after a turn (or a response) of at least
//! [`BIG_ANSWER`] bytes — rare, since real answers are a few KB — never per request.
//! Callers call it once the big strings are dropped.

/// An answer (or response body) this large is followed by [`give_back`]: 256 KiB, twice
/// glibc's initial mmap threshold (128 KiB), above which freed blocks are the ones that
/// stay behind.
pub const BIG_ANSWER: usize = 256 * 1024;

/// Sets up the allocator for the process; call once at start, before other threads run.
/// A no-op but on glibc: musl maps and unmaps big blocks by itself.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // The mmap threshold, fixed: blocks from 256 KiB up are always mapped on their
        // own and unmapped when freed. Left to itself glibc raises the threshold to the
        // largest block freed so far (up to 32 MiB), after which a big answer's buffers
        // come from the arenas, where a freed block in the middle stays resident until the
        // next `give_back`. Fixed, a growing buffer's `realloc` is also an `mremap` (no
        // copy). `evolve ask` with one 15 MiB answer, host glibc release build, peak RSS:
        // 59.8 MB with the dynamic threshold, 55.3 MB with this one.
        const MMAP_THRESHOLD: usize = 256 * 1024;
        // SAFETY: mallopt takes no pointer; it changes a setting of the allocator under
        // its lock. Called from main before any other thread is started.
        let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) };
        if set != 1 {
            log::debug!("glibc did not take the mmap threshold (mallopt returned {set})");
        }
    }
}

/// Returns the free pages of the heap to the system (glibc); a no-op elsewhere.
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes no pointer and only walks the allocator's own
        // free lists, under its locks; any thread may call it at any time.
        let released = unsafe { libc::malloc_trim(0) };
        log::debug!(
            "after a big answer: free heap memory {} to the system",
            if released == 1 {
                "returned"
            } else {
                "was already returned"
            }
        );
    }
}
