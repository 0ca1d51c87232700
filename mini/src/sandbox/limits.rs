//! The core's [`Limits`] on a real machine: what it needs to know (the RAM, how many
//! processes and threads the user runs), the resource limits a child sets on itself
//! before `exec` ([`Set::apply`]), and the line `evolve doctor` shows.
//!
//! A limit is never raised above what Evolve itself was given (a service's
//! `LimitNPROC=`, a shell's `ulimit`): each is the smaller of the two.

use std::io;

use evolve_core::permission::{Child, ChildLimits, Limits};

/// One MiB.
const MIB: u64 = 1024 * 1024;
/// Seconds between the soft CPU limit (`SIGXCPU`: "CPU time limit exceeded") and the
/// hard one (`SIGKILL`, for a program that ignores the first).
const CPU_GRACE: u64 = 5;

/// `struct rlimit64` of `prlimit64(2)`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rlimit64 {
    cur: u64,
    max: u64,
}

/// "No limit" for `prlimit64(2)`.
const INFINITY: u64 = u64::MAX;

/// The limits one child sets on itself: (resource, soft, hard), `resource < 0` unused.
#[derive(Debug, Clone, Copy, Default)]
pub struct Set {
    items: [(i32, u64, u64); 4],
}

/// The machine's RAM in bytes, if the kernel says.
pub fn ram() -> Option<u64> {
    // SAFETY: sysinfo fills the zeroed struct we own.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return None;
    }
    let unit = u64::from(info.mem_unit.max(1));
    (info.totalram as u64)
        .checked_mul(unit)
        .filter(|bytes| *bytes > 0)
}

/// How many processes and threads the real user of Evolve runs now (what the kernel
/// counts against `RLIMIT_NPROC`), from `/proc/*/status`; `None` if `/proc` cannot be
/// read.
pub fn running_tasks() -> Option<u64> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() }.to_string();
    let mut count = 0u64;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        // A process gone meanwhile is not counted.
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next())
        };
        if field("Uid:") == Some(uid.as_str()) {
            count += field("Threads:").and_then(|t| t.parse().ok()).unwrap_or(1);
        }
    }
    (count > 0).then_some(count)
}

/// What this process may set for `resource`: its own hard limit.
fn own_hard(resource: i32) -> u64 {
    let mut old = Rlimit64 { cur: 0, max: 0 };
    // SAFETY: prlimit64 on this process, reading into `old`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_prlimit64,
            0 as libc::c_long,
            resource as libc::c_long,
            std::ptr::null::<Rlimit64>(),
            &mut old as *mut Rlimit64,
        )
    };
    if r == 0 {
        old.max
    } else {
        INFINITY
    }
}

impl Set {
    /// The limits for `child`, found out now (RAM, the user's processes), each no
    /// higher than Evolve's own.
    pub fn for_child(limits: &Limits, child: Child) -> Set {
        Set::from(limits.for_child(child, ram(), running_tasks()))
    }

    /// Sets the limits on the calling process. Async-signal-safe (system calls only):
    /// call it between fork and exec.
    ///
    /// # Safety
    /// Only in a child between fork and exec (it limits the calling process).
    pub unsafe fn apply(&self) -> io::Result<()> {
        for &(resource, cur, max) in &self.items {
            if resource < 0 {
                continue;
            }
            let new = Rlimit64 { cur, max };
            if libc::syscall(
                libc::SYS_prlimit64,
                0 as libc::c_long,
                resource as libc::c_long,
                &new as *const Rlimit64,
                std::ptr::null_mut::<Rlimit64>(),
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl From<ChildLimits> for Set {
    fn from(l: ChildLimits) -> Set {
        let mut items = [(-1, 0, 0); 4];
        let wanted = [
            (libc::RLIMIT_DATA as i32, l.data_bytes, 0),
            (libc::RLIMIT_FSIZE as i32, l.file_bytes, 0),
            (libc::RLIMIT_NPROC as i32, l.tasks, 0),
            (libc::RLIMIT_CPU as i32, l.cpu_secs, CPU_GRACE),
        ];
        for (slot, (resource, value, grace)) in items.iter_mut().zip(wanted) {
            if let Some(v) = value {
                let hard = own_hard(resource);
                *slot = (resource, v.min(hard), v.saturating_add(grace).min(hard));
            }
        }
        Set { items }
    }
}

/// The limits as `evolve doctor` shows them: `memory 256 MiB (default: …), files
/// 1024 MiB, processes 256 more than the 41 running, CPU 600 s per process`.
pub fn summary(limits: &Limits) -> String {
    let running = running_tasks();
    let l = limits.for_child(Child::Command, ram(), running);
    let mut parts = Vec::new();
    parts.push(match l.data_bytes {
        Some(b) if limits.memory_mib.is_none() => {
            format!(
                "memory {} MiB (default: half the RAM, 256 MiB to 4 GiB)",
                b / MIB
            )
        }
        Some(b) => format!("memory {} MiB", b / MIB),
        None => "memory: no limit".to_string(),
    });
    parts.push(match l.file_bytes {
        Some(b) => format!("files {} MiB", b / MIB),
        None => "files: no limit".to_string(),
    });
    parts.push(match (limits.processes, running) {
        (0, _) => "processes: no limit".to_string(),
        (p, Some(r)) => format!("processes {p} more than the {r} running"),
        (_, None) => "processes: no limit (/proc cannot be read)".to_string(),
    });
    parts.push(match l.cpu_secs {
        Some(s) => format!("CPU {s} s per process (commands)"),
        None => "CPU: no limit".to_string(),
    });
    let mut line = parts.join(", ");
    // SAFETY: geteuid cannot fail.
    if limits.processes > 0 && unsafe { libc::geteuid() } == 0 {
        line.push_str("; running as root, the kernel does not hold commands to the process limit");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_known() {
        assert!(ram().is_some_and(|r| r > 16 * MIB));
        // This test's own threads at least.
        assert!(running_tasks().is_some_and(|n| n >= 1));
    }

    #[test]
    fn a_limit_is_never_above_evolves_own() {
        let set = Set::from(ChildLimits {
            data_bytes: Some(u64::MAX - 1),
            file_bytes: None,
            tasks: Some(100),
            cpu_secs: Some(3),
        });
        let data = set.items[0];
        assert_eq!(data.0, libc::RLIMIT_DATA as i32);
        assert!(data.1 <= own_hard(data.0) && data.2 <= own_hard(data.0));
        assert_eq!(set.items[1].0, -1, "no file limit asked");
        let cpu = set.items[3];
        let hard = own_hard(libc::RLIMIT_CPU as i32);
        assert_eq!((cpu.1, cpu.2), (3.min(hard), (3 + CPU_GRACE).min(hard)));
    }
}
