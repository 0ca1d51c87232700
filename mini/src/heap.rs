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
