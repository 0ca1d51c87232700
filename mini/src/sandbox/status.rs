//! What the kernel enforces here ([`Status`], found out once per process) and the one
//! line that says so for `doctor`, `/health` and the start-up warning.

use std::sync::OnceLock;

use evolve_core::permission::{Kernel, Limits};

#[cfg(target_os = "linux")]
use super::{landlock, limits, seccomp};

/// The variable that turns confinement off for this process (tests of the
/// no-Landlock path; a user on a kernel whose Landlock misbehaves). It only ever makes
/// Evolve stricter: shell commands then all need a person.
pub const OFF_VARIABLE: &str = "EVOLVE_LANDLOCK";

/// What the kernel enforces here, found out once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The Landlock ABI version in use; `None`: no confinement.
    pub abi: Option<u32>,
    /// Why there is none.
    pub problem: Option<String>,
}

/// The status of this process (asked of the kernel once).
pub fn status() -> &'static Status {
    static STATUS: OnceLock<Status> = OnceLock::new();
    STATUS.get_or_init(|| {
        if std::env::var_os(OFF_VARIABLE).is_some_and(|v| v == "off" || v == "0") {
            return Status {
                abi: None,
                problem: Some(format!("turned off by {OFF_VARIABLE}=off")),
            };
        }
        probe()
    })
}

#[cfg(target_os = "linux")]
fn probe() -> Status {
    match landlock::abi() {
        Ok(abi) if abi >= 1 => Status {
            abi: Some(abi),
            problem: None,
        },
        Ok(abi) => Status {
            abi: None,
            problem: Some(format!("the kernel reports Landlock ABI {abi}")),
        },
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ENOSYS) => {
                    "this kernel has no Landlock (Linux 5.13 or newer, built with CONFIG_SECURITY_LANDLOCK)".to_string()
                }
                Some(libc::EOPNOTSUPP) => {
                    "Landlock is built in but not enabled (add landlock to the kernel's lsm= boot parameter)".to_string()
                }
                _ => format!("asking the kernel for Landlock failed: {e}"),
            };
            Status {
                abi: None,
                problem: Some(why),
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Status {
    Status {
        abi: None,
        problem: Some("Landlock is Linux only".into()),
    }
}

impl Status {
    /// Whether the kernel confines what the shell runs.
    pub fn kernel(&self) -> Kernel {
        if self.abi.is_some() {
            Kernel::Confines
        } else {
            Kernel::DoesNotConfine
        }
    }

    /// Whether TCP can be denied (Landlock ABI 4 and later).
    pub fn denies_tcp(&self) -> bool {
        self.abi.is_some_and(|a| a >= 4)
    }

    /// Whether signals and abstract UNIX sockets to processes outside the sandbox are
    /// denied (ABI 6 and later).
    pub fn scopes_signals(&self) -> bool {
        self.abi.is_some_and(|a| a >= 6)
    }

    /// One line for `doctor`, `/health` and the start-up warning.
    pub fn summary(&self) -> String {
        match (self.abi, &self.problem) {
            (Some(abi), _) => {
                let mut parts = vec!["files"];
                if self.denies_tcp() {
                    parts.push("TCP");
                }
                if self.scopes_signals() {
                    parts.push("signals and abstract sockets");
                }
                let mut line = format!(
                    "Landlock ABI {abi}: shell commands and confined MCP servers are limited by the kernel ({})",
                    parts.join(", ")
                );
                if socket_filter_here() {
                    line.push_str(
                        "; commands below L4 open no UNIX socket, read-only ones no socket at all (seccomp)",
                    );
                } else if !self.denies_tcp() {
                    line.push_str(
                        "; read-only commands can reach the network and commands below L4 UNIX sockets here (no socket filter for this architecture, and TCP rules need Landlock ABI 4, Linux 6.7)",
                    );
                } else {
                    line.push_str(
                        "; commands below L4 can reach UNIX sockets here (no socket filter for this architecture)",
                    );
                }
                line
            }
            (None, problem) => format!(
                "no kernel confinement ({}): every shell command needs a person (asked twice; refused headless), command_prefixes below L4 are ignored, and MCP servers with a sandbox are not started",
                problem.as_deref().unwrap_or("unknown")
            ),
        }
    }

    /// The status for the API.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "kernel": if self.abi.is_some() { "landlock" } else { "none" },
            "landlock_abi": self.abi,
            "denies_tcp": self.denies_tcp(),
            "scopes_signals": self.scopes_signals(),
            "problem": self.problem,
        })
    }
}

/// Whether this build can filter the sockets a command creates (seccomp, on the
/// architectures Evolve ships for).
fn socket_filter_here() -> bool {
    #[cfg(target_os = "linux")]
    return seccomp::socket_filter(false, false).is_some();
    #[cfg(not(target_os = "linux"))]
    false
}

/// The resource limits every command gets here, for `evolve doctor`.
pub fn limits_summary(limits: &Limits) -> String {
    #[cfg(target_os = "linux")]
    return limits::summary(limits);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = limits;
        "not enforced on this system".to_string()
    }
}
