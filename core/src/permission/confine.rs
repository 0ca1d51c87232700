//! Confinement: what a command the shell starts may touch, by the level of its call, and
//! what the level of a shell call is when the kernel cannot confine it.
//!
//! The level of a shell call is decided lexically ([`shell_command_level`]), but a lexical
//! reading cannot know what `git`, `tar`, `sed` or `find` will do with a repository's
//! config, a symlink or an option spelled a new way. So what runs is confined by the
//! kernel (the shell applies it: Linux Landlock and `no_new_privs`), by [`Reach`]:
//!
//! | call level | reach | may read | may write | IP network | UNIX sockets |
//! |---|---|---|---|---|---|
//! | L1, L2 (read-only by classification) | [`Reach::ReadOnly`] | the workspace, [`SYSTEM_ROOTS`], [`SYSTEM_READ_FILES`] | [`WRITABLE_DEVICES`] only | none | none (`socketpair` only) |
//! | L3 | [`Reach::Workspace`] | the same | the workspace and a temporary folder of its own | as without confinement | none (`socketpair` only) |
//! | L4 | [`Reach::WorkspaceAndSockets`] | the same | the same | as without confinement | as without confinement |
//! | L5 | never runs | — | — | — | — |
//!
//! No UNIX socket below L4: a pathname socket is a door to whatever listens on it
//! (`/var/run/docker.sock` is root on the machine, a D-Bus session bus, an `ssh-agent`),
//! which no file rule closes — connecting is not opening a file. A repository's clean
//! filter, run by `git status` at L2, must not reach one; an abstract socket is the same
//! door without a path. `socketpair` makes a connected pair and reaches nobody: it stays.
//!
//! Never reachable, whatever the level: Evolve's home outside the workspace (config,
//! store, token) and the user's home outside the workspace; nor [`SYSTEM_SECRETS`]
//! inside the system roots. The shell carves these out of broader roots.
//!
//! Where the kernel cannot confine (no Landlock: an old kernel, the LSM disabled, not
//! Linux), lexical rules alone must never decide an unattended run:
//! [`confined_shell_level`] keeps every shell command at L4 at least, so a prefix rule
//! that would lower one below L4 is ignored and a person is asked twice.
//!
//! Left to the shell: finding out whether the kernel confines, resolving the paths,
//! building and applying the ruleset, the child's environment.

use super::{shell_command_level, Level, PermissionConfig};

/// What a confined command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Read the workspace and the system; write nothing (L1, L2).
    ReadOnly,
    /// Also write the workspace and a temporary folder of its own, and use the IP
    /// network (L3).
    Workspace,
    /// The same, and UNIX sockets: a person read the command twice (L4).
    WorkspaceAndSockets,
}

impl Reach {
    /// The reach of a shell call at `level`; `None` for L5, which never runs.
    pub fn for_shell(level: Level) -> Option<Reach> {
        match level {
            Level::L0 | Level::L1 | Level::L2 => Some(Reach::ReadOnly),
            Level::L3 => Some(Reach::Workspace),
            Level::L4 => Some(Reach::WorkspaceAndSockets),
            Level::L5 => None,
        }
    }

    /// Whether the command may write the workspace.
    pub fn writes(self) -> bool {
        self != Reach::ReadOnly
    }

    /// Whether TCP is denied (where the kernel's Landlock ABI can: 4 and later).
    pub fn denies_tcp(self) -> bool {
        self == Reach::ReadOnly
    }

    /// Whether the command may create UNIX sockets (`socket(AF_UNIX, …)`; where the
    /// kernel has seccomp, it is refused otherwise).
    pub fn unix_sockets(self) -> bool {
        self == Reach::WorkspaceAndSockets
    }
}

/// Whether the kernel confines what the shell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Commands run under a Landlock ruleset (and `no_new_privs`).
    Confines,
    /// No confinement is available: only the lexical rules stand.
    DoesNotConfine,
}

/// The level of a `shell` call for `cmd` given what the kernel can do: the lexical level
/// ([`shell_command_level`]); without confinement, never below L4 (a person reads it
/// twice; headless runs refuse it).
pub fn confined_shell_level(cmd: &str, config: &PermissionConfig, kernel: Kernel) -> Level {
    let level = shell_command_level(cmd, config);
    match kernel {
        Kernel::Confines => level,
        Kernel::DoesNotConfine => level.max(Level::L4),
    }
}

/// Whether a configuration relies on the kernel: a prefix rule gives some command a level
/// below L4, which holds only where the kernel confines (the shell warns once at start
/// and `doctor` says so when it does not).
pub fn prefixes_need_kernel(config: &PermissionConfig) -> bool {
    config.command_prefixes.iter().any(|(_, l)| *l < Level::L4)
}

/// System directories a program needs to start and run, read-only (and executable):
/// programs, libraries, configuration. Those missing on a machine are skipped.
pub const SYSTEM_ROOTS: [&str; 11] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/snap",
];

/// Files outside the roots every level may read: the files of `/proc` that describe the
/// machine, not a process (`free`, `uptime` read them; nothing else of `/proc` is
/// reachable, so no other process's environment or command line), and the random and
/// zero devices (which programs read a few bytes of; a command naming one is raised to
/// L3 — see `paths::ENDLESS_DEVICES` — and [`super::Limits`] hold what a symlink to
/// one still reaches).
pub const SYSTEM_READ_FILES: [&str; 10] = [
    "/proc/meminfo",
    "/proc/cpuinfo",
    "/proc/uptime",
    "/proc/loadavg",
    "/proc/stat",
    "/proc/version",
    "/proc/filesystems",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
];

/// Devices every level may write (`2>/dev/null` is everywhere).
pub const WRITABLE_DEVICES: [&str; 2] = ["/dev/null", "/dev/full"];

/// Secrets inside the system roots, carved out: password hashes, sudo rules, host keys,
/// private TLS keys, and `/etc/evolve` (where a service keeps Evolve's API key).
pub const SYSTEM_SECRETS: [&str; 10] = [
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/evolve",
    "/etc/credstore",
];

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;

    #[test]
    fn each_level_has_its_reach() {
        let cases = [
            (Level::L0, Some(Reach::ReadOnly)),
            (Level::L1, Some(Reach::ReadOnly)),
            (Level::L2, Some(Reach::ReadOnly)),
            (Level::L3, Some(Reach::Workspace)),
            (Level::L4, Some(Reach::WorkspaceAndSockets)),
            (Level::L5, None),
        ];
        for (level, reach) in cases {
            assert_eq!(Reach::for_shell(level), reach, "{level}");
        }
        assert!(!Reach::ReadOnly.writes() && Reach::Workspace.writes());
        assert!(Reach::WorkspaceAndSockets.writes());
        assert!(Reach::ReadOnly.denies_tcp() && !Reach::Workspace.denies_tcp());
        assert!(!Reach::WorkspaceAndSockets.denies_tcp());
        // UNIX sockets only at L4.
        assert!(!Reach::ReadOnly.unix_sockets() && !Reach::Workspace.unix_sockets());
        assert!(Reach::WorkspaceAndSockets.unix_sockets());
    }

    #[test]
    fn without_the_kernel_no_shell_command_is_below_l4() {
        let cfg = PermissionConfig {
            command_prefixes: vec![
                (String::from("git status"), Level::L2),
                (String::from("ls"), Level::L1),
                (String::from("cargo build"), Level::L3),
            ],
            ..PermissionConfig::default()
        };
        // (command, confined, unconfined)
        let cases = [
            ("git status", Level::L2, Level::L4),
            ("ls -la", Level::L1, Level::L4),
            ("cargo build", Level::L3, Level::L4),
            ("make", Level::L5, Level::L5),
            ("rm -rf /", Level::L5, Level::L5),
        ];
        for (cmd, confined, unconfined) in cases {
            assert_eq!(
                confined_shell_level(cmd, &cfg, Kernel::Confines),
                confined,
                "{cmd}"
            );
            assert_eq!(
                confined_shell_level(cmd, &cfg, Kernel::DoesNotConfine),
                unconfined,
                "{cmd}"
            );
        }
        assert!(prefixes_need_kernel(&cfg));
        assert!(!prefixes_need_kernel(&PermissionConfig::default()));
    }
}
