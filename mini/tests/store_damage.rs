//! A damaged store file, or something else where the store goes, through the built
//! binary: every command that opens the store (`memory list`, `sessions list`, `ask`,
//! `serve`) refuses it with exit code 1 and a message that says what is wrong with the
//! file and what to do, never Rust's panic text, and the file's bytes are exactly what
//! they were. A store left open by `kill -9` still opens, with what was acknowledged.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::serve::Server;
use support::{Run, World};

/// What a user must never see.
const PANIC_TEXT: [&str; 7] = [
    "panicked",
    "unreachable",
    "unwrap",
    "RUST_BACKTRACE",
    "Utf8Error",
    "internal error",
    "please report",
];

/// A store with a few memories and a session, closed cleanly.
fn with_store(name: &str) -> (World, PathBuf) {
    let w = World::new(name);
    for i in 0..20 {
        w.run(&["memory", "add", &format!("fact {i} about apples and pears")])
            .expect(0);
    }
    w.run(&["ask", "hello there"]).expect(0);
    let path = w.home.join("evolve.redb");
    (w, path)
}

/// The file's bytes, or for a directory its entries.
fn snapshot(path: &Path) -> Vec<u8> {
    if path.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        return names.join("\n").into_bytes();
    }
    std::fs::read(path).expect("read the store file")
}

/// `evolve serve` on this store: it must give up (not serve) within 20 s.
fn serve_exits(w: &World) -> Run {
    let mut child = w
        .command(&["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "serve runs on a damaged store:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Run::from(child.wait_with_output().expect("output"))
}

/// Every command that opens the store refuses it with exit code 1, a message holding
/// each of `needles` and none of `absent`, and leaves its bytes alone.
fn refused_everywhere(w: &World, path: &Path, needles: &[&str], absent: &[&str]) {
    let before = snapshot(path);
    let runs = [
        ("memory list", w.run(&["memory", "list"])),
        ("sessions list", w.run(&["sessions", "list"])),
        ("ask", w.run(&["ask", "hello"])),
        ("serve", serve_exits(w)),
    ];
    for (what, run) in runs {
        let err = run.stderr.trim();
        assert_eq!(run.code, 1, "`evolve {what}`: exit {}: {err}", run.code);
        assert!(
            err.contains(&path.display().to_string()),
            "`evolve {what}` names the file: {err}"
        );
        for n in needles {
            assert!(err.contains(n), "`evolve {what}` says {n:?}: {err}");
        }
        for n in absent.iter().chain(&PANIC_TEXT) {
            assert!(!err.contains(n), "`evolve {what}` says {n:?}: {err}");
        }
        assert_eq!(snapshot(path), before, "`evolve {what}` changed the file");
    }
}

/// The advice for a file that cannot be the store.
fn move_aside(path: &Path) -> String {
    format!(
        "move it aside (mv {} {}.damaged) and run again to start a new one, or restore a backup",
        path.display(),
        path.display()
    )
}

fn rewrite(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).expect("read");
    f(&mut bytes);
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn an_empty_file_is_not_made_a_new_store() {
    let (w, path) = with_store("damage-empty");
    std::fs::write(&path, b"").unwrap();
    let advice = move_aside(&path);
    refused_everywhere(
        &w,
        &path,
        &["is damaged: it is empty (0 bytes)", &advice],
        &[],
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "still empty");
}

#[test]
fn a_file_cut_to_100_bytes_is_cut_short_not_a_permission_problem() {
    let (w, path) = with_store("damage-cut-100");
    rewrite(&path, |b| b.truncate(100));
    let advice = move_aside(&path);
    refused_everywhere(
        &w,
        &path,
        &["is damaged: it is cut short: 100 bytes", &advice],
        &["permission", "fill whole buffer"],
    );
}

#[test]
fn a_file_cut_in_the_middle_says_how_long_it_should_be() {
    let (w, path) = with_store("damage-cut-half");
    let len = std::fs::metadata(&path).unwrap().len();
    rewrite(&path, |b| b.truncate((len as usize / 2) & !4095));
    refused_everywhere(
        &w,
        &path,
        &["cut short", &format!("where its header says {len}")],
        &[],
    );
}

#[test]
fn random_bytes_are_not_a_store() {
    let (w, path) = with_store("damage-random");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let bytes: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&path, bytes).unwrap();
    refused_everywhere(
        &w,
        &path,
        &[
            "is not an evolve store",
            "redb's signature",
            &move_aside(&path),
        ],
        &[],
    );
}

#[test]
fn a_text_file_is_named_as_text() {
    let (w, path) = with_store("damage-text");
    std::fs::write(&path, "hello text\n".repeat(500)).unwrap();
    refused_everywhere(
        &w,
        &path,
        &["is not an evolve store: it holds text", "\"hello text\""],
        &[],
    );
}

#[test]
fn a_directory_in_its_place_is_named() {
    let (w, path) = with_store("damage-dir");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    refused_everywhere(&w, &path, &["is a directory", &move_aside(&path)], &[]);
}

#[test]
fn a_store_whose_signature_is_overwritten_is_damaged() {
    let (w, path) = with_store("damage-signature");
    rewrite(&path, |b| b[..4].copy_from_slice(b"XXXX"));
    refused_everywhere(
        &w,
        &path,
        &["is damaged", "signature"],
        &["not an evolve store"],
    );
}

#[test]
fn pages_overwritten_with_garbage_are_damage_not_a_panic() {
    let (w, path) = with_store("damage-pages");
    rewrite(&path, |b| {
        for page in (4096..b.len()).step_by(4096) {
            let end = (page + 64).min(b.len());
            b[page..end].fill(0xff);
        }
    });
    refused_everywhere(
        &w,
        &path,
        &["is damaged", "checksums", &move_aside(&path)],
        &[],
    );

    // Random garbage over the first data pages (where the tables' roots live), the rest
    // intact. Damage anywhere else is the unit test's (`random_damage_…`).
    let (w, path) = with_store("damage-first-pages");
    let mut x: u64 = 88172645463325252;
    rewrite(&path, |b| {
        let pages = b.len() / 4096;
        for page in 1..pages.min(6) {
            for byte in &mut b[page * 4096..(page + 1) * 4096] {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
        }
    });
    refused_everywhere(&w, &path, &["is damaged"], &[]);
}

#[test]
fn a_store_left_open_by_kill_9_opens_with_what_was_acknowledged() {
    let (w, path) = with_store("damage-crash");
    let s = Server::start(&w, &[]);
    let added = s.post(
        "/v1/memory",
        r#"{"content": "acknowledged just before the kill"}"#,
    );
    assert!(added.status < 300, "{added:?}");
    drop(s); // SIGKILL
    let crashed = std::fs::read(&path).unwrap();
    assert_ne!(crashed[9] & 2, 0, "left marked open");
    let list = w.run(&["memory", "list"]).expect(0);
    assert!(
        list.stdout.contains("acknowledged just before the kill"),
        "{}",
        list.stdout
    );

    // The same crash on a damaged file: the repair is not tried on the file.
    std::fs::write(&path, &crashed).unwrap();
    rewrite(&path, |b| {
        for page in (4096..b.len()).step_by(4096) {
            let end = (page + 64).min(b.len());
            b[page..end].fill(0);
        }
    });
    refused_everywhere(&w, &path, &["is damaged", &move_aside(&path)], &[]);
}

/// Undoes `chattr +i` when the test ends (the home could not be removed otherwise).
struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_file_evolve_may_not_write_is_a_permission_problem() {
    let (w, path) = with_store("damage-permission");
    // Root reads and writes any file whatever its mode: an immutable file refuses even
    // root. Another user: a file of mode 0400.
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let _undo = if root {
        let made = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            eprintln!("skipped: running as root, and chattr +i is not available here");
            return;
        }
        Some(Immutable(path.clone()))
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        None
    };
    refused_everywhere(
        &w,
        &path,
        &["cannot open the store", "owner and mode", "ls -la"],
        &["damaged", "move it aside"],
    );
}
