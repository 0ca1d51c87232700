//! Kernel confinement of the programs Evolve starts: every `shell` command, and every
//! stdio MCP server the user confines (`sandbox = "workspace"` or `"read-only"`).
//!
//! What a level may touch is the core's ([`Reach`], `evolve_core::permission::confine`);
//! this module finds out what the kernel can enforce ([`status`]), turns a reach into
//! rules over real paths ([`Plan`]: the system directories, the workspace, a temporary
//! folder of the child's own, with Evolve's home, the user's home and the system's
//! secrets carved out — see [`carve`]), rebuilds the child's environment ([`env`]) and
//! makes the child apply it to itself before `exec` ([`Plan::apply`]: the resource
//! limits — see [`limits`] —, `no_new_privs`, no capabilities, the Landlock ruleset —
//! see [`landlock`] — and, below L4, the socket filter — see [`seccomp`]).
//!
//! Where Landlock is missing (an old kernel, the LSM not enabled, not Linux, or
//! `EVOLVE_LANDLOCK=off`, which only ever makes things stricter), the child still gets
//! the clean environment, the limits, `no_new_privs`, no capabilities and the socket
//! filter, and the permission check
//! keeps every shell command at L4 or above ([`evolve_core::permission::Kernel::DoesNotConfine`]); a server that
//! asked to be confined is not started.

mod carve;
mod env;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod limits;
mod private_files;
pub mod reaper;
#[cfg(target_os = "linux")]
mod seccomp;
mod status;

use std::ffi::OsString;
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use evolve_core::permission::{
    Child, Limits, Reach, SYSTEM_READ_FILES, SYSTEM_ROOTS, SYSTEM_SECRETS, WRITABLE_DEVICES,
};
use serde::{Deserialize, Serialize};

pub use env::Places;
pub use status::{limits_summary, status, Status};

use private_files::private_system_files;

#[cfg(target_os = "linux")]
use landlock::{EXECUTE as EXEC, READ, READ_FILE, WRITE, WRITE_FILE};
// Elsewhere there is no ruleset; the plans still say what they would grant.
#[cfg(not(target_os = "linux"))]
use bits::{EXEC, READ, READ_FILE, WRITE, WRITE_FILE};
#[cfg(not(target_os = "linux"))]
mod bits {
    pub const EXEC: u64 = 1;
    pub const WRITE_FILE: u64 = 2;
    pub const READ_FILE: u64 = 4;
    pub const READ: u64 = 12;
    pub const WRITE: u64 = 2;
}

/// How a stdio MCP server is confined (`sandbox = …` of its definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerSandbox {
    /// Not confined: it runs like any program of the user's (the default, so existing
    /// servers keep working).
    #[default]
    None,
    /// Reads the system, its own program files and the workspace (and its roots); writes
    /// the workspace, its roots and a folder of its own (`$EVOLVE_HOME/sandbox/NAME`:
    /// home, caches, temporary files).
    Workspace,
    /// The same, but writes only its own folder.
    ReadOnly,
}

impl ServerSandbox {
    /// The word in `config.toml` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerSandbox::None => "none",
            ServerSandbox::Workspace => "workspace",
            ServerSandbox::ReadOnly => "read-only",
        }
    }

    /// From the word; the error lists the choices.
    pub fn parse(word: &str) -> Result<ServerSandbox, String> {
        match word {
            "none" => Ok(ServerSandbox::None),
            "workspace" => Ok(ServerSandbox::Workspace),
            "read-only" | "readonly" => Ok(ServerSandbox::ReadOnly),
            other => Err(format!(
                "sandbox {other:?} is not one of workspace, read-only, none"
            )),
        }
    }
}

/// Where a confined child lives and what it must never reach.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The workspace (canonical).
    pub workspace: PathBuf,
    /// Evolve's home: never reachable outside the workspace.
    pub evolve_home: PathBuf,
    /// Evolve's own files, kept out even when they are inside the workspace (the
    /// config, the store, the login token).
    pub private_files: Vec<PathBuf>,
    /// What each child may take (`[limits]`).
    pub limits: Limits,
}

impl Scope {
    /// The paths carved out of every grant that contains them.
    fn exclusions(&self) -> Vec<PathBuf> {
        let mut out = vec![self.evolve_home.clone()];
        out.extend(user_home());
        out.extend(self.private_files.iter().cloned());
        out.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
        out.extend(private_system_files());
        out
    }
}

/// The user's home: `HOME`, else the password database's entry for Evolve's user (a
/// service may run without `HOME`).
fn user_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(home));
    }
    #[cfg(unix)]
    {
        use std::ffi::CStr;
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: getpwuid_r writes into `pw` and `buf`, both ours and large enough (it
        // says ERANGE otherwise); the result points into them.
        let r = unsafe {
            libc::getpwuid_r(
                libc::geteuid(),
                &mut pw,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if r == 0 && !found.is_null() && !pw.pw_dir.is_null() {
            // SAFETY: a NUL-terminated string inside `buf`.
            let dir = unsafe { CStr::from_ptr(pw.pw_dir) };
            let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
            if dir.is_absolute() && dir != Path::new("/") {
                return Some(dir);
            }
        }
    }
    None
}

/// What a workspace that holds Evolve's home costs, or `None`: the kernel can keep the
/// home out only by granting the workspace's entries one by one, so a command cannot
/// create files directly in the workspace's top folder.
pub fn workspace_problem(scope: &Scope) -> Option<String> {
    let ws = std::fs::canonicalize(&scope.workspace).ok()?;
    let home = std::fs::canonicalize(&scope.evolve_home).ok()?;
    (home.starts_with(&ws) && home != ws).then(|| {
        format!(
            "the workspace {} holds Evolve's home {}: to keep the home out of reach the kernel grants the workspace's entries one by one, so commands cannot create files directly in its top folder — choose a workspace that does not hold it",
            ws.display(),
            home.display()
        )
    })
}

/// A folder of the child's own, removed (with what the child left there) when dropped.
#[derive(Debug)]
struct OwnTmp(PathBuf);

impl OwnTmp {
    fn new() -> io::Result<OwnTmp> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "evolve-tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(OwnTmp(std::fs::canonicalize(&path).unwrap_or(path)))
    }
}

impl Drop for OwnTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why a child could not be confined (it is then not started).
#[derive(Debug)]
pub struct SandboxError(String);

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Everything one child is confined by.
#[derive(Debug)]
pub struct Plan {
    grants: Vec<(PathBuf, u64)>,
    exclude: Vec<PathBuf>,
    deny_tcp: bool,
    /// May create UNIX sockets (L4, MCP servers).
    unix_sockets: bool,
    limits: Limits,
    child: Child,
    env: Vec<(OsString, OsString)>,
    _tmp: Option<OwnTmp>,
}

/// The grants every confined child has: the system, its devices and machine files.
fn system_grants() -> Vec<(PathBuf, u64)> {
    let mut g: Vec<(PathBuf, u64)> = SYSTEM_ROOTS
        .iter()
        .map(|p| (PathBuf::from(p), READ | EXEC))
        .collect();
    g.extend(
        SYSTEM_READ_FILES
            .iter()
            .map(|p| (PathBuf::from(p), READ_FILE)),
    );
    g.extend(
        WRITABLE_DEVICES
            .iter()
            .map(|p| (PathBuf::from(p), READ_FILE | WRITE_FILE)),
    );
    g
}

/// Name resolution for children with the network: `/etc/resolv.conf` is often a link
/// into `/run`.
fn resolver_grants() -> Vec<(PathBuf, u64)> {
    std::fs::canonicalize("/etc/resolv.conf")
        .ok()
        .filter(|p| !p.starts_with("/etc"))
        .map(|p| vec![(p, READ_FILE)])
        .unwrap_or_default()
}

impl Plan {
    /// The confinement of one shell command at `reach`: see the core's table. The
    /// command gets a fresh folder of its own, removed with the plan: its `HOME` (so no
    /// dot file in the workspace — a `.curlrc`, a `.wgetrc` the model wrote — configures
    /// what it runs) and, when it may write, its `TMPDIR`.
    pub fn for_shell(reach: Reach, scope: &Scope) -> Result<Plan, SandboxError> {
        let mut grants = system_grants();
        let ws = if reach.writes() {
            READ | EXEC | WRITE
        } else {
            READ | EXEC
        };
        grants.push((scope.workspace.clone(), ws));
        let own = OwnTmp::new().map_err(|e| {
            SandboxError(format!(
                "cannot make the command's own folder in {}: {e}",
                std::env::temp_dir().display()
            ))
        })?;
        grants.push((
            own.0.clone(),
            if reach.writes() {
                READ | EXEC | WRITE
            } else {
                READ
            },
        ));
        if reach.writes() {
            grants.extend(resolver_grants());
        }
        let env = env::child_env(
            std::env::vars_os(),
            &Places {
                home: &own.0,
                tmp: reach.writes().then_some(own.0.as_path()),
                git_ceiling: Some(&scope.workspace),
            },
        );
        Ok(Plan {
            grants,
            exclude: scope.exclusions(),
            deny_tcp: reach.denies_tcp(),
            unix_sockets: reach.unix_sockets(),
            limits: scope.limits,
            child: Child::Command,
            env,
            _tmp: Some(own),
        })
    }

    /// The same confinement with no network (no IP socket, TCP denied where Landlock
    /// can): for a command that runs unasked after outside text entered the turn.
    pub fn without_network(mut self) -> Plan {
        self.deny_tcp = true;
        self
    }

    /// The confinement of a stdio MCP server: its program files (`programs`, read and
    /// run), the workspace and its `roots` (written only with [`ServerSandbox::Workspace`]),
    /// and `data` — its own folder, made here, with `home`, `cache` and `tmp` inside —
    /// which it may write. The network is open (servers fetch, `npx` downloads).
    /// `env` is the server's own configured environment, applied last.
    pub fn for_server(
        mode: ServerSandbox,
        scope: &Scope,
        programs: &[PathBuf],
        roots: &[PathBuf],
        data: &Path,
        env: &[(String, String)],
    ) -> Result<Plan, SandboxError> {
        let made = |what: &Path, e: io::Error| {
            SandboxError(format!(
                "cannot make the server's folder {}: {e}",
                what.display()
            ))
        };
        for sub in ["home", "cache", "tmp"] {
            let p = data.join(sub);
            std::fs::create_dir_all(&p).map_err(|e| made(&p, e))?;
        }
        let data = std::fs::canonicalize(data).map_err(|e| made(data, e))?;
        let mut grants = system_grants();
        grants.extend(resolver_grants());
        grants.extend(programs.iter().map(|p| (p.clone(), READ | EXEC)));
        let ws = if mode == ServerSandbox::Workspace {
            READ | EXEC | WRITE
        } else {
            READ | EXEC
        };
        grants.push((scope.workspace.clone(), ws));
        grants.extend(roots.iter().map(|r| (r.clone(), ws)));
        grants.push((data.clone(), READ | EXEC | WRITE));
        let mut child = env::child_env(
            std::env::vars_os(),
            &Places {
                home: &data.join("home"),
                tmp: Some(&data.join("tmp")),
                git_ceiling: Some(&scope.workspace),
            },
        );
        let cache = data.join("cache");
        for key in [
            "XDG_CACHE_HOME",
            "npm_config_cache",
            "UV_CACHE_DIR",
            "PIP_CACHE_DIR",
        ] {
            child.push((key.into(), cache.clone().into()));
        }
        child.push(("XDG_CONFIG_HOME".into(), data.join("home/.config").into()));
        child.push((
            "XDG_DATA_HOME".into(),
            data.join("home/.local/share").into(),
        ));
        child.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
        Ok(Plan {
            grants,
            exclude: scope.exclusions(),
            deny_tcp: false,
            unix_sockets: true,
            limits: scope.limits,
            child: Child::Server,
            env: child,
            _tmp: None,
        })
    }

    /// The rules the ruleset gets, after carving (for `doctor` and tests).
    pub fn rules(&self) -> Vec<(PathBuf, u64)> {
        carve::rules(&self.grants, &self.exclude, &carve::RealTree)
    }

    /// Makes `cmd` start confined: its environment replaced by the plan's, and, between
    /// fork and exec, the resource limits, `no_new_privs`, no capabilities, the Landlock
    /// ruleset (when the kernel has Landlock) and the socket filter (below L4). Keep the
    /// returned value until `cmd` has been spawned.
    pub fn apply(&self, cmd: &mut Command) -> Result<Applied, SandboxError> {
        cmd.env_clear();
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        self.restrict(cmd)
    }

    #[cfg(target_os = "linux")]
    fn restrict(&self, cmd: &mut Command) -> Result<Applied, SandboxError> {
        use std::os::unix::process::CommandExt;
        let ruleset = match status().abi {
            Some(abi) => {
                let rs = landlock::Ruleset::new(abi, self.deny_tcp).map_err(|e| {
                    SandboxError(format!("cannot create the Landlock ruleset: {e}"))
                })?;
                for (path, access) in self.rules() {
                    match rs.allow(&path, access) {
                        Ok(()) => {}
                        // Gone since it was listed: nothing to grant.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => {
                            return Err(SandboxError(format!(
                                "cannot add {} to the Landlock ruleset: {e}",
                                path.display()
                            )))
                        }
                    }
                }
                Some(rs)
            }
            None => None,
        };
        let fd = ruleset.as_ref().map_or(-1, |r| r.raw_fd());
        // No IP socket at all for a command that may not use the network (TCP Fast Open,
        // MPTCP and UDP get past Landlock's TCP rules); no UNIX socket below L4.
        let filter = seccomp::socket_filter(!self.deny_tcp, self.unix_sockets);
        let limits = limits::Set::for_child(&self.limits, self.child);
        let prog = filter.as_ref().map(|f| {
            Box::new(libc::sock_fprog {
                len: f.len() as libc::c_ushort,
                filter: f.as_ptr() as *mut libc::sock_filter,
            })
        });
        let prog_addr = prog
            .as_ref()
            .map_or(0usize, |p| &**p as *const libc::sock_fprog as usize);
        // SAFETY: `apply` and `restrict_self` make system calls only (no allocation, no
        // lock), as the child of a fork must; `fd`, the filter and its header stay alive
        // in `Applied` until the spawn is over (the child has a copy of this memory).
        unsafe {
            cmd.pre_exec(move || {
                limits.apply()?;
                let prog = (prog_addr != 0).then(|| &*(prog_addr as *const libc::sock_fprog));
                landlock::restrict_self(fd, prog)
            });
        }
        Ok(Applied {
            _ruleset: ruleset,
            _filter: filter,
            _prog: prog,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn restrict(&self, _cmd: &mut Command) -> Result<Applied, SandboxError> {
        Ok(Applied {})
    }
}

/// Runs `work` in a thread of its own that the kernel holds to the workspace — reading
/// it, and writing it when `writes` — with Evolve's own files and the other exclusions
/// carved out, as for a command. Evolve's file tools resolve and check paths themselves;
/// this makes the kernel check the path they finally open too, so no race (a directory
/// swapped for a symlink between the check and the open, by a process the model started)
/// reaches outside. Without Landlock, `work` runs on the calling thread as it is.
pub fn in_workspace<T: Send>(
    scope: &Scope,
    writes: bool,
    work: impl FnOnce() -> T + Send,
) -> Result<T, SandboxError> {
    #[cfg(target_os = "linux")]
    if let Some(abi) = status().abi {
        let access = if writes {
            READ | EXEC | WRITE
        } else {
            READ | EXEC
        };
        let rules = carve::rules(
            &[(scope.workspace.clone(), access)],
            &scope.exclusions(),
            &carve::RealTree,
        );
        let rs = landlock::Ruleset::new(abi, false)
            .map_err(|e| SandboxError(format!("cannot create the Landlock ruleset: {e}")))?;
        for (path, access) in rules {
            match rs.allow(&path, access) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(SandboxError(format!(
                        "cannot add {} to the Landlock ruleset: {e}",
                        path.display()
                    )))
                }
            }
        }
        return std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("workspace".into())
                .spawn_scoped(s, || {
                    landlock::restrict_thread(&rs)
                        .map_err(|e| SandboxError(format!("cannot confine the file tool: {e}")))?;
                    Ok(work())
                })
                .map_err(|e| SandboxError(format!("cannot start the file tool's thread: {e}")))?
                .join()
                .map_err(|_| SandboxError("the file tool's thread failed".into()))?
        });
    }
    let _ = (scope, writes);
    Ok(work())
}

/// Keeps what a spawn needs alive until it is over.
pub struct Applied {
    #[cfg(target_os = "linux")]
    _ruleset: Option<landlock::Ruleset>,
    #[cfg(target_os = "linux")]
    _filter: Option<Vec<libc::sock_filter>>,
    #[cfg(target_os = "linux")]
    _prog: Option<Box<libc::sock_fprog>>,
}

/// The directories a stdio server's program lives in, for [`Plan::for_server`]: the
/// command (looked up on `PATH`), the interpreter its `#!` line names, and every argument
/// naming an existing file, each widened to its package (the folder holding
/// `node_modules` for a Node script; for a Python virtual environment, the environment
/// and the Python installation it was made from; else the file's folder).
///
/// What the model can write never decides a grant: a file inside `writable` (the
/// workspace, the server's roots and own folder, Evolve's home) is not looked into — its
/// `#!` line, a `pyvenv.cfg` beside it — and gives no folder. Nor is a folder granted that
/// is `/`, a top-level folder (`/tmp`, `/home`), or holds one of `protected` (the user's
/// home, Evolve's home, the workspace): a data file named in the home does not open the
/// home.
pub fn program_dirs(
    command: &str,
    args: &[String],
    cwd: Option<&Path>,
    writable: &[PathBuf],
    protected: &[PathBuf],
) -> Vec<PathBuf> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let writable: Vec<PathBuf> = writable.iter().map(|p| canon(p)).collect();
    let protected: Vec<PathBuf> = protected.iter().map(|p| canon(p)).collect();
    let in_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let grantable = |dir: &Path| {
        dir.components().count() > 2
            && !protected.iter().any(|p| p.starts_with(dir))
            && !in_writable(dir)
    };
    let mut files: Vec<PathBuf> = Vec::new();
    match which(command) {
        Some(p) => files.push(p),
        None => files.extend(cwd.map(|dir| dir.join(command))),
    }
    for a in args {
        let p = Path::new(a);
        match (p.is_absolute(), cwd) {
            (true, _) => files.push(p.to_path_buf()),
            (false, Some(dir)) => files.push(dir.join(p)),
            (false, None) => {}
        }
    }
    let mut out: Vec<PathBuf> = Vec::new();
    // A script's interpreter, and that interpreter's own (a venv's python is a link to
    // the installation's), at most a few links deep.
    let mut i = 0;
    while i < files.len() && i < 16 {
        let named = files[i].clone();
        i += 1;
        let Ok(file) = std::fs::canonicalize(&named) else {
            continue;
        };
        if !file.is_file() || in_writable(&file) || in_writable(&named) {
            continue;
        }
        if let Some(interpreter) = shebang(&file) {
            files.push(interpreter);
        }
        for dir in package_roots(&named)
            .into_iter()
            .chain(package_roots(&file))
        {
            let dir = canon(&dir);
            if grantable(&dir) && !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
    out
}

/// The interpreter a `#!` line names (`#!/usr/bin/env node` names `env`, which the
/// system roots cover; the program `env` runs is found on `PATH`, as `which` does).
fn shebang(file: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    let mut words = text.split_whitespace();
    let first = words.next()?;
    if first.ends_with("/env") {
        return words.find(|w| !w.starts_with('-')).and_then(which);
    }
    Some(PathBuf::from(first))
}

/// The folders to grant for a program file (see [`program_dirs`]), on the path as
/// named (a venv's `bin/python` is a link: the venv is found on the named path, the
/// installation on the resolved one).
fn package_roots(file: &Path) -> Vec<PathBuf> {
    for dir in file.ancestors().skip(1) {
        if dir.file_name().is_some_and(|n| n == "node_modules") {
            return vec![dir.parent().unwrap_or(dir).to_path_buf()];
        }
        let cfg = dir.join("pyvenv.cfg");
        if cfg.is_file() {
            let mut dirs = vec![std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())];
            // `home = /opt/python/3.11/bin`: the standard library is beside it.
            let home = std::fs::read_to_string(&cfg).ok().and_then(|t| {
                t.lines().find_map(|l| {
                    let (k, v) = l.split_once('=')?;
                    (k.trim() == "home").then(|| PathBuf::from(v.trim()))
                })
            });
            if let Some(prefix) = home.as_deref().and_then(Path::parent) {
                dirs.push(prefix.to_path_buf());
            }
            return dirs;
        }
    }
    vec![file.parent().unwrap_or(file).to_path_buf()]
}

/// `command` looked up on `PATH` (or as given, if it has a `/`).
fn which(command: &str) -> Option<PathBuf> {
    if command.contains('/') {
        return Some(PathBuf::from(command));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
