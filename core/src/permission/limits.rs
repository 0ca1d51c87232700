//! Limits: how much memory, file size, processes and CPU time one program Evolve starts
//! may take (`[limits]` in `config.toml`), so that a command reading an endless device,
//! forking without end, writing without end or spinning stops — with an error the
//! model and the person see — before the machine does. The same for every command
//! whatever its level; the kernel enforces them (`setrlimit` in the child before `exec`).
//!
//! The defaults are sized for a 512 MiB board (a Raspberry Pi Zero 2, a small VPS), and
//! scale with a bigger machine:
//!
//! | key | kernel limit | default | why |
//! |---|---|---|---|
//! | `memory_mib` | `RLIMIT_DATA` | half the RAM, between 256 MiB and 4 GiB | leaves the other half to Evolve and the system; 256 MiB still runs `git`, `python3`, a Node MCP server (≈ 50 MiB) |
//! | `file_size_mib` | `RLIMIT_FSIZE` | 1024 | a build's largest output or a repository's pack fits; a runaway writer stops at 1 GiB, not at a full card |
//! | `processes` | `RLIMIT_NPROC` | 256 more than the user runs | a `make -j4` or a `cargo build` (threads count) fits; a fork bomb stops |
//! | `cpu_secs` | `RLIMIT_CPU` (commands only) | 600 | a command is stopped by its timeout first (at most 4 × `shell_timeout`, 480 CPU-seconds on 4 cores with the default 30 s); this catches what spins where the timeout does not reach |
//!
//! Memory is `RLIMIT_DATA`, not `RLIMIT_AS`: the address space counts what a program
//! reserves and never touches — V8 (Node, every JavaScript MCP server) reserves about
//! 700 MiB at start and gigabytes for WebAssembly, Go and the JVM reserve their heaps —
//! so an address-space limit small enough to protect a Pi breaks them. The data limit
//! counts private writable memory (the heap, `mmap`ed buffers, thread stacks), which is
//! what `tail /dev/zero` grows. `RLIMIT_NPROC` counts every process and thread of the
//! user, Evolve's and their desktop's included, and is checked at `fork`: the limit is
//! what the user runs when the program starts plus `processes` (a fixed number could
//! be below what a desktop already runs, and every `fork` of the command would fail).
//! The kernel exempts root from it: a root Evolve's commands are held by the others
//! only. A stdio MCP server runs for days: it gets no CPU limit.
//!
//! `0` turns one limit off. Left to the shell: reading the RAM and counting the user's
//! processes, the system calls, and showing the limits (`evolve doctor`).

use alloc::string::String;
use core::fmt;
use serde::{Deserialize, Serialize};

/// One MiB.
const MIB: u64 = 1024 * 1024;
/// The smallest default memory limit (a 512 MiB board gets it).
pub const MEMORY_FLOOR: u64 = 256 * MIB;
/// The largest default memory limit: one command holding more is rarely wanted, and a
/// build that needs it can be given it.
pub const MEMORY_CEILING: u64 = 4096 * MIB;
/// The memory limit when the RAM cannot be read.
const MEMORY_UNKNOWN_RAM: u64 = 1024 * MIB;
/// Below this, a program's start-up alone fails (the dynamic loader, `sh`, `python3`).
const MEMORY_MIN_MIB: u64 = 16;

/// The limits one started program gets (`[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Private writable memory in MiB (`RLIMIT_DATA`); unset: half the RAM, between
    /// [`MEMORY_FLOOR`] and [`MEMORY_CEILING`]; 0: no limit.
    pub memory_mib: Option<u64>,
    /// The largest file a program may write, in MiB (`RLIMIT_FSIZE`); 0: no limit.
    pub file_size_mib: u64,
    /// Processes and threads a program may start beyond those the user already runs
    /// (`RLIMIT_NPROC`); 0: no limit.
    pub processes: u64,
    /// CPU seconds per process of a command (`RLIMIT_CPU`; not for MCP servers); 0: no
    /// limit.
    pub cpu_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_mib: None,
            file_size_mib: 1024,
            processes: 256,
            cpu_secs: 600,
        }
    }
}

/// What is started: a command, which ends, or an MCP server, which runs for days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    /// A `shell` command.
    Command,
    /// A stdio MCP server.
    Server,
}

/// The values the kernel is given for one child; `None`: no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChildLimits {
    /// `RLIMIT_DATA`, bytes.
    pub data_bytes: Option<u64>,
    /// `RLIMIT_FSIZE`, bytes.
    pub file_bytes: Option<u64>,
    /// `RLIMIT_NPROC`: the user's processes and threads in all.
    pub tasks: Option<u64>,
    /// `RLIMIT_CPU`, seconds.
    pub cpu_secs: Option<u64>,
}

/// A `[limits]` value that would break every command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsError(String);

impl fmt::Display for LimitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The default memory limit for a machine with `ram` bytes (`None`: unknown).
pub fn default_memory(ram: Option<u64>) -> u64 {
    match ram {
        Some(ram) => (ram / 2).clamp(MEMORY_FLOOR, MEMORY_CEILING),
        None => MEMORY_UNKNOWN_RAM,
    }
}

impl Limits {
    /// The memory limit in bytes on a machine with `ram` bytes; `None`: no limit.
    pub fn memory_bytes(&self, ram: Option<u64>) -> Option<u64> {
        match self.memory_mib {
            None => Some(default_memory(ram)),
            Some(0) => None,
            Some(mib) => Some(mib.saturating_mul(MIB)),
        }
    }

    /// What the kernel is given for `child` on a machine with `ram` bytes, while the
    /// user runs `running` processes and threads (`None`: not known — then no process
    /// limit, since one below the user's count would fail every `fork`).
    pub fn for_child(&self, child: Child, ram: Option<u64>, running: Option<u64>) -> ChildLimits {
        let some = |v: u64| (v > 0).then_some(v);
        ChildLimits {
            data_bytes: self.memory_bytes(ram),
            file_bytes: some(self.file_size_mib).map(|m| m.saturating_mul(MIB)),
            tasks: some(self.processes).and_then(|p| running.map(|r| r.saturating_add(p))),
            cpu_secs: match child {
                Child::Command => some(self.cpu_secs),
                Child::Server => None,
            },
        }
    }

    /// Checks what serde cannot: a memory limit too small for any program to start.
    /// (`evolve config check` reports it; every other value, 0 included, is the user's
    /// choice.)
    pub fn validate(&self) -> Result<(), LimitsError> {
        match self.memory_mib {
            Some(mib) if mib > 0 && mib < MEMORY_MIN_MIB => Err(LimitsError(alloc::format!(
                "limits.memory_mib = {mib}: below {MEMORY_MIN_MIB} MiB no program starts — \
                 give at least {MEMORY_MIN_MIB}, leave it out for half the RAM, or 0 for no limit"
            ))),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_memory_is_half_the_ram_within_bounds() {
        let cases = [
            (Some(512 * MIB), 256 * MIB),
            (Some(256 * MIB), 256 * MIB),
            (Some(1024 * MIB), 512 * MIB),
            (Some(4096 * MIB), 2048 * MIB),
            (Some(24 * 1024 * MIB), 4096 * MIB),
            (None, 1024 * MIB),
        ];
        for (ram, want) in cases {
            assert_eq!(default_memory(ram), want, "{ram:?}");
            assert_eq!(Limits::default().memory_bytes(ram), Some(want));
        }
    }

    #[test]
    fn each_child_gets_its_limits() {
        let pi = Some(512 * MIB);
        let d = Limits::default();
        // (limits, child, running, want)
        let cases = [
            (
                d,
                Child::Command,
                Some(40),
                ChildLimits {
                    data_bytes: Some(256 * MIB),
                    file_bytes: Some(1024 * MIB),
                    tasks: Some(296),
                    cpu_secs: Some(600),
                },
            ),
            // A server runs for days: no CPU limit.
            (
                d,
                Child::Server,
                Some(40),
                ChildLimits {
                    data_bytes: Some(256 * MIB),
                    file_bytes: Some(1024 * MIB),
                    tasks: Some(296),
                    cpu_secs: None,
                },
            ),
            // The user's processes unknown: no process limit.
            (
                d,
                Child::Command,
                None,
                ChildLimits {
                    data_bytes: Some(256 * MIB),
                    file_bytes: Some(1024 * MIB),
                    tasks: None,
                    cpu_secs: Some(600),
                },
            ),
            // 0 turns each off; a value is taken as it is.
            (
                Limits {
                    memory_mib: Some(0),
                    file_size_mib: 0,
                    processes: 0,
                    cpu_secs: 0,
                },
                Child::Command,
                Some(40),
                ChildLimits::default(),
            ),
            (
                Limits {
                    memory_mib: Some(64),
                    file_size_mib: 1,
                    processes: 16,
                    cpu_secs: 2,
                },
                Child::Command,
                Some(1000),
                ChildLimits {
                    data_bytes: Some(64 * MIB),
                    file_bytes: Some(MIB),
                    tasks: Some(1016),
                    cpu_secs: Some(2),
                },
            ),
        ];
        for (limits, child, running, want) in cases {
            assert_eq!(
                limits.for_child(child, pi, running),
                want,
                "{limits:?} {child:?}"
            );
        }
    }

    #[test]
    fn a_memory_limit_no_program_starts_under_is_rejected() {
        let with = |mib| Limits {
            memory_mib: Some(mib),
            ..Limits::default()
        };
        assert!(with(0).validate().is_ok());
        assert!(with(16).validate().is_ok());
        assert!(Limits::default().validate().is_ok());
        let e = alloc::format!("{}", with(8).validate().unwrap_err());
        assert!(
            e.contains("limits.memory_mib = 8") && e.contains("0 for no limit"),
            "{e}"
        );
    }
}
