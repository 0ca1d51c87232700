//! Nothing a command starts outlives it. Killing a command's process group misses what
//! left the group (`setsid`, a double fork): such a process could go on running after the
//! command "ended" — racing Evolve's own file tools, say. So Evolve makes itself the
//! *subreaper* of everything it starts (`PR_SET_CHILD_SUBREAPER`): a process whose parent
//! dies is adopted by Evolve instead of `init`. After each command, and when Evolve exits,
//! [`reap_strays`] kills every adopted process (and what it started) that Evolve did not
//! start itself and does not know as part of an MCP server, and reaps it.
//!
//! What Evolve starts goes through [`spawn`], which records the child under the same lock
//! the sweep takes, so a child being started is never mistaken for a stray.

use std::collections::{HashMap, HashSet};
use std::io;
use std::process::{Child, Command};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// What Evolve started and waits for itself, and the process groups of its MCP servers
/// (their helpers may be adopted, and are theirs, not strays).
#[derive(Default)]
struct Known {
    children: HashSet<u32>,
    groups: HashSet<i32>,
}

static KNOWN: Mutex<Option<Known>> = Mutex::new(None);
static SUBREAPER: Once = Once::new();

fn known() -> MutexGuard<'static, Option<Known>> {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns `cmd` as a child Evolve waits for itself (call [`forget`] after the wait), and
/// makes Evolve the subreaper of what it starts.
pub fn spawn(cmd: &mut Command) -> io::Result<Child> {
    #[cfg(target_os = "linux")]
    SUBREAPER.call_once(|| {
        // SAFETY: a prctl on this process; no memory is passed.
        let r = unsafe {
            libc::prctl(
                libc::PR_SET_CHILD_SUBREAPER,
                1 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if r != 0 {
            log::debug!(
                "cannot become the subreaper of started programs: {}",
                io::Error::last_os_error()
            );
        }
    });
    let mut guard = known();
    let child = cmd.spawn()?;
    guard
        .get_or_insert_with(Known::default)
        .children
        .insert(child.id());
    Ok(child)
}

/// Runs `cmd` to its end as a child Evolve knows, its stdout and stderr collected like
/// `Command::output`, so a sweep meanwhile never takes it for a stray.
#[cfg(test)]
pub fn output(cmd: &mut Command) -> io::Result<std::process::Output> {
    use std::process::Stdio;
    let child = spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()))?;
    let pid = child.id();
    let out = child.wait_with_output();
    forget(pid);
    out
}

/// The child `pid` was waited for: it is no longer Evolve's to keep.
pub fn forget(pid: u32) {
    if let Some(k) = known().as_mut() {
        k.children.remove(&pid);
    }
}

/// Processes of process group `pgid` belong to an MCP server while it runs.
pub fn keep_group(pgid: i32) {
    known()
        .get_or_insert_with(Known::default)
        .groups
        .insert(pgid);
}

/// The MCP server of process group `pgid` is gone.
pub fn drop_group(pgid: i32) {
    if let Some(k) = known().as_mut() {
        k.groups.remove(&pgid);
    }
}

/// One process as `/proc/PID/stat` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: u32,
    ppid: u32,
    pgrp: i32,
}

/// `PID (COMM) STATE PPID PGRP …`: COMM may hold spaces and parentheses, so the fields
/// are read after the last `)`.
fn parse_stat(text: &str) -> Option<Proc> {
    let (head, tail) = text.rsplit_once(')')?;
    let pid = head.split_whitespace().next()?.parse().ok()?;
    // STATE, then PPID and PGRP.
    let mut f = tail.split_whitespace().skip(1);
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc { pid, ppid, pgrp })
}

fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|t| parse_stat(&t))
        .collect()
}

/// The strays among `procs`: Evolve's children (`me`'s) it neither started itself nor
/// knows as an MCP server's, with everything below them, roots first.
fn strays(procs: &[Proc], me: u32, known: &Known) -> (Vec<u32>, Vec<u32>) {
    let roots: Vec<u32> = procs
        .iter()
        .filter(|p| {
            p.ppid == me && !known.children.contains(&p.pid) && !known.groups.contains(&p.pgrp)
        })
        .map(|p| p.pid)
        .collect();
    let mut below: HashMap<u32, Vec<u32>> = HashMap::new();
    for p in procs {
        below.entry(p.ppid).or_default().push(p.pid);
    }
    let mut all = Vec::new();
    let mut queue: Vec<u32> = roots.clone();
    let mut seen = HashSet::new();
    while let Some(pid) = queue.pop() {
        if seen.insert(pid) {
            all.push(pid);
            queue.extend(below.get(&pid).into_iter().flatten().copied());
        }
    }
    (roots, all)
}

/// Kills and reaps the strays (see the module docs). Bounded: a few rounds within about
/// half a second, for what their death makes Evolve adopt in turn.
pub fn reap_strays() {
    if !SUBREAPER.is_completed() {
        return;
    }
    let me = std::process::id();
    let until = Instant::now() + Duration::from_millis(500);
    loop {
        let guard = known();
        let empty = Known::default();
        let k = guard.as_ref().unwrap_or(&empty);
        let (roots, all) = strays(&processes(), me, k);
        if roots.is_empty() {
            return;
        }
        for pid in &all {
            // SAFETY: kill(2) on a process found under one of Evolve's own children.
            unsafe {
                libc::kill(*pid as libc::pid_t, libc::SIGKILL);
            }
        }
        for pid in &roots {
            // SAFETY: waitpid on Evolve's own child, which nothing else waits for.
            unsafe {
                let mut status = 0;
                libc::waitpid(*pid as libc::pid_t, &mut status, 0);
            }
        }
        log::warn!(
            "stopped {} process(es) a command left running outside its process group",
            all.len()
        );
        drop(guard);
        if Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        assert_eq!(
            parse_stat("42 (a (weird) name) S 7 42 42 0 -1"),
            Some(Proc {
                pid: 42,
                ppid: 7,
                pgrp: 42,
            })
        );
        assert_eq!(parse_stat("9 (x) Z 1 9 9").map(|p| p.ppid), Some(1));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn strays_are_unknown_children_and_their_trees() {
        let p = |pid, ppid, pgrp| Proc { pid, ppid, pgrp };
        let procs = [
            p(10, 1, 10),  // evolve
            p(11, 10, 11), // a running command's sh: known
            p(12, 10, 12), // an MCP server: known
            p(13, 10, 12), // its helper, adopted: its group is an MCP server's
            p(14, 10, 14), // a stray (setsid after its parent died)
            p(15, 14, 14), // … and what it started
            p(16, 15, 16),
            p(17, 11, 11), // the running command's own child
            p(18, 1, 18),  // somebody else's
        ];
        let known = Known {
            children: [11, 12].into_iter().collect(),
            groups: [12].into_iter().collect(),
        };
        let (roots, mut all) = strays(&procs, 10, &known);
        all.sort();
        assert_eq!(roots, [14]);
        assert_eq!(all, [14, 15, 16]);
    }
}
