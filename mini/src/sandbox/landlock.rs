//! Linux Landlock through its three system calls, and the rest of what a child does to
//! itself before `exec` (`no_new_privs`, dropping capabilities).
//!
//! The ruleset is built in the parent ([`Ruleset`]: `landlock_create_ruleset`, one
//! `landlock_add_rule` per path, each path opened `O_PATH`); the child only calls
//! [`restrict_self`] between fork and exec, which makes no allocation and takes no lock
//! (async-signal-safe system calls only), as `pre_exec` requires. The ruleset's file
//! descriptor is close-on-exec, so the program never sees it.
//!
//! Best effort by ABI: the rights a kernel does not know are left out of the ruleset
//! (ABI 1: files and directories; 2: renames across directories; 3: truncation; 4: TCP
//! bind and connect; 5: device ioctls; 6: signals and abstract UNIX sockets outside the
//! sandbox), and [`super::Status`] says what this kernel enforces.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Execute a file.
pub const EXECUTE: u64 = 1 << 0;
/// Open a file for writing.
pub const WRITE_FILE: u64 = 1 << 1;
/// Open a file for reading.
pub const READ_FILE: u64 = 1 << 2;
/// List a directory.
pub const READ_DIR: u64 = 1 << 3;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
// 1 << 6 is MAKE_CHAR: never granted.
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
// 1 << 11 is MAKE_BLOCK: never granted.
const MAKE_SYM: u64 = 1 << 12;
/// ABI 2: link or rename a file into another directory.
const REFER: u64 = 1 << 13;
/// ABI 3: truncate a file.
const TRUNCATE: u64 = 1 << 14;
/// ABI 5: ioctl on a device.
const IOCTL_DEV: u64 = 1 << 15;

/// Reading files and listing directories.
pub const READ: u64 = READ_FILE | READ_DIR;
/// Everything that changes a tree: write, create (no device nodes), remove, rename,
/// truncate.
pub const WRITE: u64 = WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE;
/// The rights that apply to a file that is not a directory.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: i32 = 1;

/// `struct landlock_ruleset_attr` (ABI 6 size; older kernels accept it with the fields
/// they do not know left zero).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's headers).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version of the running kernel, or why there is none (`ENOSYS`: the
/// kernel is too old; `EOPNOTSUPP`: built in but not enabled at boot).
pub fn abi() -> io::Result<u32> {
    // SAFETY: the documented way to ask for the ABI version: no attribute, size 0.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0 as libc::c_ulong,
            CREATE_RULESET_VERSION as libc::c_ulong,
        )
    };
    if v < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v as u32)
    }
}

/// The file-system rights an ABI version knows.
fn fs_rights(abi: u32) -> u64 {
    let mut all = (1 << 13) - 1; // ABI 1: EXECUTE … MAKE_SYM
    if abi >= 2 {
        all |= REFER;
    }
    if abi >= 3 {
        all |= TRUNCATE;
    }
    if abi >= 5 {
        all |= IOCTL_DEV;
    }
    all
}

/// A ruleset being built: what is not granted by a rule is denied once applied.
pub struct Ruleset {
    fd: OwnedFd,
    handled_fs: u64,
}

impl Ruleset {
    /// A ruleset handling every file-system right this kernel knows, TCP too when
    /// `deny_tcp` (ABI 4+), and, from ABI 6, signals and abstract UNIX sockets to
    /// processes outside the sandbox.
    pub fn new(abi: u32, deny_tcp: bool) -> io::Result<Ruleset> {
        let attr = RulesetAttr {
            handled_access_fs: fs_rights(abi),
            handled_access_net: if deny_tcp && abi >= 4 {
                NET_BIND_TCP | NET_CONNECT_TCP
            } else {
                0
            },
            scoped: if abi >= 6 {
                SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            } else {
                0
            },
        };
        // SAFETY: `attr` is a valid, initialised struct of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                std::mem::size_of::<RulesetAttr>() as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel returned a new file descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        Ok(Ruleset {
            fd,
            handled_fs: attr.handled_access_fs,
        })
    }

    /// Grants `access` beneath `path` (the path itself if it is not a directory, with
    /// the rights a file can have). The path is opened as it is now: a symlink is
    /// followed, so callers pass canonical paths.
    pub fn allow(&self, path: &Path, access: u64) -> io::Result<()> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
        // SAFETY: a valid NUL-terminated path; O_PATH opens no content.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `open` returned a new descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fstat into a zeroed struct of the right type.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let mut allowed = access & self.handled_fs;
        if !is_dir {
            allowed &= FILE_RIGHTS;
        }
        if allowed == 0 {
            return Ok(());
        }
        let rule = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: a valid rule struct and our own ruleset descriptor.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd() as libc::c_long,
                RULE_PATH_BENEATH as libc::c_long,
                &rule as *const PathBeneathAttr,
                0 as libc::c_ulong,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The descriptor [`restrict_self`] takes.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`: two data structs, 64 capabilities.
const CAP_VERSION_3: u32 = 0x2008_0522;

/// In the child, before `exec`: every descriptor above 2 closed at exec, no new
/// privileges (setuid programs and file capabilities gain nothing), no capabilities at
/// all (a root parent's child cannot set the clock or the host name), the Landlock
/// ruleset `ruleset` (a negative descriptor: no ruleset) and the seccomp `filter`, if
/// any. Async-signal-safe: system calls only.
///
/// # Safety
/// Call only between fork and exec (from `pre_exec`), with a descriptor of a ruleset
/// that stays open until the child has exec'd.
pub unsafe fn restrict_self(ruleset: RawFd, filter: Option<&libc::sock_fprog>) -> io::Result<()> {
    // Variadic arguments are passed as the `unsigned long`s the kernel reads.
    const ZERO: libc::c_ulong = 0;
    // No descriptor Evolve holds or inherited reaches the program: everything above
    // stdin, stdout and stderr is closed at exec (std's own error pipe already is).
    if libc::syscall(
        libc::SYS_close_range,
        3 as libc::c_ulong,
        libc::c_uint::MAX as libc::c_ulong,
        libc::CLOSE_RANGE_CLOEXEC as libc::c_ulong,
    ) != 0
    {
        // Before Linux 5.11: one by one, as far as descriptors usually go.
        for fd in 3..4096 {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    if libc::prctl(
        libc::PR_SET_NO_NEW_PRIVS,
        1 as libc::c_ulong,
        ZERO,
        ZERO,
        ZERO,
    ) != 0
    {
        return Err(io::Error::last_os_error());
    }
    // The bounding set first (needs CAP_SETPCAP, which only a privileged parent has; an
    // unprivileged child has nothing to drop, and no_new_privs keeps it so).
    for cap in 0..64 as libc::c_ulong {
        libc::prctl(libc::PR_CAPBSET_DROP, cap, ZERO, ZERO, ZERO);
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
        ZERO,
        ZERO,
        ZERO,
    );
    let header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let none = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) != 0 {
        return Err(io::Error::last_os_error());
    }
    if ruleset >= 0
        && libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset as libc::c_long,
            ZERO,
        ) != 0
    {
        return Err(io::Error::last_os_error());
    }
    if let Some(prog) = filter {
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            prog as *const libc::sock_fprog,
            ZERO,
            ZERO,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The calling thread only: `no_new_privs` and the Landlock ruleset. Other threads of
/// Evolve are untouched (both are per thread); the thread keeps them until it ends, so
/// it must do nothing after the confined work.
pub fn restrict_thread(ruleset: &Ruleset) -> io::Result<()> {
    const ZERO: libc::c_ulong = 0;
    // SAFETY: prctl and landlock_restrict_self on the calling thread, with our own
    // ruleset descriptor; no memory is passed.
    unsafe {
        if libc::prctl(
            libc::PR_SET_NO_NEW_PRIVS,
            1 as libc::c_ulong,
            ZERO,
            ZERO,
            ZERO,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.raw_fd() as libc::c_long,
            ZERO,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_grow_with_the_abi() {
        assert_eq!(fs_rights(1), 0x1fff);
        assert_eq!(fs_rights(2), 0x3fff);
        assert_eq!(fs_rights(3), 0x7fff);
        assert_eq!(fs_rights(4), 0x7fff);
        assert_eq!(fs_rights(5), 0xffff);
        assert_eq!(fs_rights(7), 0xffff);
        // MAKE_CHAR (1 << 6) and MAKE_BLOCK (1 << 11): never device nodes.
        assert_eq!(WRITE & ((1 << 6) | (1 << 11)), 0);
        assert_eq!(std::mem::size_of::<PathBeneathAttr>(), 12);
        assert_eq!(std::mem::size_of::<RulesetAttr>(), 24);
    }
}
