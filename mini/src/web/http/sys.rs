//! The few system calls the server makes beyond `std::net`: poll(2), to wait on every
//! waiting connection from one thread, and reads and writes that never block
//! (`MSG_DONTWAIT`) on sockets that otherwise stay blocking, for the workers' writes
//! with their timeout. Linux and the other Unixes alike.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// One descriptor to watch for input.
pub fn watch(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Something happened on it: input, the peer's close, or an error (a read says which).
pub fn stirred(p: &libc::pollfd) -> bool {
    p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// Waits until one of `fds` stirs or `timeout` passes (an interrupted wait counts as
/// the timeout).
pub fn poll(fds: &mut [libc::pollfd], timeout: Duration) {
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    let n = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
    // SAFETY: `fds` is a valid, exclusively borrowed array of `n` pollfd.
    let _ = unsafe { libc::poll(fds.as_mut_ptr(), n, ms) };
}

/// Waits up to `timeout` for input on one socket.
pub fn wait_readable(stream: &TcpStream, timeout: Duration) -> bool {
    let mut fds = [watch(stream.as_raw_fd())];
    poll(&mut fds, timeout);
    stirred(&fds[0])
}

/// Reads what has arrived, without waiting: `WouldBlock` when nothing has.
pub fn recv_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Writes what fits without waiting (and without SIGPIPE): the poller's short answers
/// go out this way, so a client that reads nothing cannot stall it.
pub fn send_now(stream: &TcpStream, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: `bytes` is valid for reads of `bytes.len()` bytes.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | NOSIGNAL,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
const NOSIGNAL: libc::c_int = libc::MSG_NOSIGNAL;
// Elsewhere SIGPIPE is ignored by the Rust runtime anyway.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const NOSIGNAL: libc::c_int = 0;

/// Raises the soft limit of open files towards `want` (as far as the hard limit
/// allows) and returns the limit now in force.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)] // rlim_t is u64 on Linux only
pub fn raise_open_files(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return want;
    }
    let current = lim.rlim_cur as u64;
    if current >= want || lim.rlim_max as u64 <= current {
        return current;
    }
    let raised = libc::rlimit {
        rlim_cur: want.min(lim.rlim_max as u64) as libc::rlim_t,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: `raised` is a valid rlimit, at most the hard limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        raised.rlim_cur as u64
    } else {
        current
    }
}
