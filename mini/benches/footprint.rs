//! What Evolve weighs, measured through a release binary against the in-repo fake model
//! answering at once on loopback (figures printed, never asserted; the targets of
//! ARCHITECTURE.md § Design constants printed next to them):
//! - binary sizes: the `evolve` measured, the host release build, and every static musl
//!   build found under the workspace's and the main checkout's `target/`
//!   (`target/debian/TRIPLE/release/evolve`, `target/TRIPLE-musl…/release/evolve`); none
//!   is built here (`cross/build.sh` does that);
//! - idle RSS of `evolve serve` (VmRSS split into anonymous and file-backed pages, peak
//!   VmHWM, in KiB and MB = 1024 KiB as in the serve bench; threads), each reading
//!   taken after [`IDLE`] without a request: right after start with the store open; after
//!   an English chat turn and its background learning; after a Chinese turn (jieba's
//!   dictionary loaded); in a second server with three MCP servers configured (the in-repo
//!   test server under three names) before and after `GET /v1/tools` started them, checked
//!   with `GET /v1/mcp`; and with the third-party servers of `tests/mcp-peers.sh` when its
//!   `EVOLVE_TEST_MCP_*` variables are set (`eval "$(tests/mcp-peers.sh)"` first). The MCP
//!   servers' own RSS is printed apart, not counted;
//! - RSS over [`MIXED`] requests (`/health` and `/v1/sessions` in turn, one keep-alive
//!   connection), sampled every [`SAMPLE`] requests so flatness shows;
//! - wall time of `evolve ask` (the turn, its background learning, exit): the first run
//!   ever (a fresh `EVOLVE_HOME` each time) and with a warm store, [`RUNS`] runs each; and
//!   of `--help` and `--version`.
//!
//! The binary is the host build of this bench (`cargo bench` = the release profile's
//! settings, glibc's malloc) unless `EVOLVE_BENCH_BIN=PATH` names another, e.g. the
//! shipped static musl build (musl's malloc), built from the same sources first
//! (`cross/build.sh`; cargo runs benches in `mini/`, so give an absolute path):
//! `EVOLVE_BENCH_BIN=$PWD/target/x86_64-unknown-linux-musl/release/evolve cargo bench -p
//! evolve-mini --bench footprint`. The bench shares the machine's cores with the binary;
//! the load average is printed at the start and the end.
//!
//! Run: `cargo bench -p evolve-mini --bench footprint` (about a minute on 2 cores; builds
//! the MCP test server in release first when it is missing).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use evolve_fake_llm::{FakeLlm, Reply};
use serde_json::{json, Value};

use support::http::Conn;
use support::mcp::{test_server, CLASSIFY, LEVELS};
use support::server::{children, memory, Memory, Server};
use support::{cpu, load_average, mb, ms, thousands};

/// Quiet time before each RSS reading.
const IDLE: Duration = Duration::from_secs(3);
/// Requests sent for the flatness series.
const MIXED: usize = 100_000;
/// RSS sampled after this many requests of the series.
const SAMPLE: usize = 10_000;
/// Sessions in the store for `GET /v1/sessions`.
const SESSIONS: usize = 50;
/// Timed runs of each command.
const RUNS: usize = 11;
/// What the fake model answers every turn.
const REPLY: &str = "Instant answer from the fake model.";
/// The targets of ARCHITECTURE.md § Design constants.
const TARGET_IDLE_MB: f64 = 8.0;
const TARGET_CHINESE_MB: f64 = 16.0;
const TARGET_SIZE_MIB: f64 = 5.0;

/// Levels for the tools of the pinned third-party servers (tests/mcp-peers/), any level
/// will do: they are only listed here, never called.
const PEER_LEVELS: &str = r#"{"echo": "L2", "get-annotated-message": "L2", "get-env": "L2", "get-resource-links": "L2", "get-resource-reference": "L2", "get-structured-content": "L2", "get-sum": "L2", "get-tiny-image": "L2", "gzip-file-as-resource": "L2", "toggle-simulated-logging": "L2", "toggle-subscriber-updates": "L2", "trigger-long-running-operation": "L2", "simulate-research-query": "L2", "read_file": "L2", "read_text_file": "L2", "read_media_file": "L2", "read_multiple_files": "L2", "write_file": "L2", "edit_file": "L2", "create_directory": "L2", "list_directory": "L2", "list_directory_with_sizes": "L2", "directory_tree": "L2", "move_file": "L2", "search_files": "L2", "get_file_info": "L2", "list_allowed_directories": "L2", "get_current_time": "L2", "convert_time": "L2"}"#;

fn main() {
    let started = Instant::now();
    let built = PathBuf::from(env!("CARGO_BIN_EXE_evolve"));
    let exe = std::env::var_os("EVOLVE_BENCH_BIN").map_or_else(|| built.clone(), PathBuf::from);
    assert!(exe.is_file(), "no binary at {}", exe.display());
    let scratch =
        std::env::temp_dir().join(format!("evolve-bench-footprint-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("bench scratch dir");

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cores} cores, {}; load average at the start: {}",
        cpu(),
        load_average()
    );
    println!("measured: {} ({})", exe.display(), kind(&exe));
    if let Ok(max) = std::env::var("MALLOC_ARENA_MAX") {
        println!("serve runs with MALLOC_ARENA_MAX={max}");
    }
    sizes(&built, &exe);

    let fake = FakeLlm::start();
    fake.set_fallback(Reply::text(REPLY));
    let test_server = test_server(&built);

    serve_alone(&exe, &scratch, &fake);
    serve_with_mcp(&exe, &scratch, &fake, &test_server);
    ask(&exe, &scratch, &fake);

    let _ = std::fs::remove_dir_all(&scratch);
    println!("load average at the end: {}", load_average());
    println!("bench run time: {:.1} s", started.elapsed().as_secs_f64());
}

// ---- binary sizes -------------------------------------------------------------------

/// Sizes of the measured binary, the host build and every static musl build found.
fn sizes(built: &Path, exe: &Path) {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut show = |label: &str, path: &Path| {
        let Ok(real) = path.canonicalize() else {
            return;
        };
        if seen.contains(&real) {
            return;
        }
        seen.push(real);
        let meta = std::fs::metadata(path).ok();
        let bytes = meta.as_ref().map_or(0, |m| m.len());
        // A build older than the sources measures old code: its age says so.
        let age = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .map_or_else(String::new, |d| {
                format!(", built {:.1} h ago", d.as_secs_f64() / 3600.0)
            });
        println!(
            "  {label}: {} bytes ({:.2} MiB), {}{age} — {}",
            thousands(bytes as usize),
            bytes as f64 / 1024.0 / 1024.0,
            kind(path),
            path.display()
        );
    };
    println!("binary sizes (target: static musl, stripped, <= {TARGET_SIZE_MIB} MiB):");
    show("measured", exe);
    show("host bench build", built);
    for dir in target_dirs(built) {
        show("host release", &dir.join("release/evolve"));
        let mut found = Vec::new();
        for sub in [dir.join("debian"), dir.clone()] {
            let Ok(entries) = std::fs::read_dir(&sub) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let bin = e.path().join("release/evolve");
                if name.contains("-linux-") && bin.is_file() {
                    found.push((name, bin));
                }
            }
        }
        found.sort();
        for (triple, bin) in found {
            show(&triple, &bin);
        }
    }
}

/// Where builds may be: the bench's own target dir, the workspace's `target/`, and the
/// main checkout's `target/` when this is a git worktree.
fn target_dirs(built: &Path) -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut dirs = vec![];
    if let Some(d) = built.parent().and_then(Path::parent) {
        dirs.push(d.to_path_buf());
    }
    dirs.push(workspace.join("target"));
    let common = Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(&workspace)
        .stderr(Stdio::null())
        .output();
    if let Ok(out) = common {
        let git = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() {
            if let Some(main) = git.parent() {
                dirs.push(main.join("target"));
            }
        }
    }
    let mut unique: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if let Ok(real) = d.canonicalize() {
            if !unique.contains(&real) {
                unique.push(real);
            }
        }
    }
    unique
}

/// "static" or "dynamic", from the ELF program headers (a PT_INTERP names the loader).
fn kind(path: &Path) -> &'static str {
    let Ok(bytes) = std::fs::read(path) else {
        return "unreadable";
    };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return "not a 64-bit ELF";
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u64_at = |o: usize| {
        let mut b = [0; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b) as usize
    };
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    let interp = (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        o + 4 <= bytes.len()
            && u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) == 3
    });
    if interp {
        "dynamic"
    } else {
        "static"
    }
}

// ---- serve ----------------------------------------------------------------------------

/// One `serve` with no MCP server: idle readings around two chat turns, then the series.
fn serve_alone(exe: &Path, scratch: &Path, fake: &FakeLlm) {
    let home = scratch.join("serve");
    std::fs::create_dir_all(&home).expect("serve home");
    let server = Server::start(exe, &home, fake);
    let mut conn = Conn::open(server.port).expect("connect to serve");
    let (status, _) = conn.request("GET", "/health", None).expect("GET /health");
    assert_eq!(status, 200, "GET /health answered {status}");
    drop(conn);
    let mut readings = Vec::new();
    std::thread::sleep(IDLE);
    readings.push(("right after start, store open".to_string(), server.memory()));

    let turn = |text: &str, memory: Value| {
        background(fake, memory);
        let t = Instant::now();
        let mut conn = Conn::open(server.port).expect("connect to serve");
        let body = json!({"model": "evolve", "messages": [{"role": "user", "content": text}]});
        let (status, answer) = conn
            .request("POST", "/v1/chat/completions", Some(&body))
            .expect("POST /v1/chat/completions");
        assert_eq!(status, 200, "chat answered {status}: {answer}");
        let took = t.elapsed();
        quiet(fake);
        took
    };
    let english = turn(
        "I live in Lisbon and like green tea. What should I plant in spring?",
        json!({"content": "The user lives in Lisbon and likes green tea.", "category": "fact", "importance": 3, "tags": ["home"]}),
    );
    readings.push(("after an English chat turn".to_string(), server.memory()));
    let chinese = turn(
        "我住在成都，喜欢喝绿茶。春天应该在阳台上种些什么？",
        json!({"content": "用户住在成都，喜欢喝绿茶。", "category": "fact", "importance": 3, "tags": ["住址"]}),
    );
    readings.push(("after a Chinese chat turn".to_string(), server.memory()));
    let (_, listed) = Conn::open(server.port)
        .and_then(|mut c| c.request("GET", "/v1/memory", None))
        .expect("GET /v1/memory");
    let learned = serde_json::from_str::<Value>(&listed)
        .ok()
        .and_then(|v| v["data"].as_array().map(Vec::len))
        .unwrap_or(0);
    println!(
        "chat turns through serve (to the answer; learning runs after it): the first, English, {:.1} ms; the first Chinese one (loads jieba) {:.1} ms; {learned} memories learned from the two",
        ms(english),
        ms(chinese)
    );
    print_readings(
        "idle RSS of `evolve serve`, no MCP server (target: <= 8 MB idle, <= 16 MB after Chinese)",
        &readings,
    );
    let (idle, after) = (readings[0].1, readings[2].1);
    println!(
        "  vs targets: idle {:.1} / {TARGET_IDLE_MB} MB, after Chinese {:.1} / {TARGET_CHINESE_MB} MB",
        mb(idle.rss),
        mb(after.rss)
    );

    seed_sessions(server.port);
    series(&server);
    report_log(server.stop());
}

/// `MIXED` requests on one keep-alive connection, RSS every `SAMPLE`.
fn series(server: &Server) {
    let mut conn = Conn::open(server.port).expect("connect to serve");
    let paths = ["/health", "/v1/sessions"];
    let mut samples = vec![(0, server.memory(), Duration::ZERO)];
    let mut failed = 0;
    let mut block = Instant::now();
    let t = Instant::now();
    for i in 1..=MIXED {
        match conn.request("GET", paths[i % 2], None) {
            Ok((200, _)) => {}
            _ => {
                failed += 1;
                conn = Conn::open(server.port).expect("reconnect to serve");
            }
        }
        if i % SAMPLE == 0 {
            samples.push((i, server.memory(), block.elapsed()));
            block = Instant::now();
        }
    }
    let wall = t.elapsed();
    std::thread::sleep(IDLE);
    let idle = server.memory();
    println!(
        "RSS over {} requests (GET /health and /v1/sessions with {SESSIONS}+ sessions in turn, one keep-alive connection): {:.0} requests/s, {failed} failed",
        thousands(MIXED),
        MIXED as f64 / wall.as_secs_f64()
    );
    println!("  requests: VmRSS KiB (MB), VmHWM KiB, threads, requests/s of the block");
    for (n, m, took) in &samples {
        let rate = if took.is_zero() {
            String::from("-")
        } else {
            format!("{:.0}", SAMPLE as f64 / took.as_secs_f64())
        };
        println!(
            "  {:>7}: {} KiB ({:.2} MB), peak {} KiB, {} threads, {rate}/s",
            thousands(*n),
            m.rss,
            mb(m.rss),
            m.peak,
            m.threads
        );
    }
    println!(
        "  idle {} s after the last request: {} KiB ({:.2} MB), peak {} KiB",
        IDLE.as_secs(),
        idle.rss,
        mb(idle.rss),
        idle.peak
    );
    let first = samples[1].1.rss as i64;
    let last = samples[samples.len() - 1].1.rss as i64;
    println!(
        "  growth from {} to {} requests: {:+} KiB; from the start: {:+} KiB",
        thousands(SAMPLE),
        thousands(MIXED),
        last - first,
        last - samples[0].1.rss as i64
    );
}

/// A second `serve` whose config names three MCP servers (the test server three times),
/// then one with the third-party servers of `tests/mcp-peers.sh` when they are set up.
fn serve_with_mcp(exe: &Path, scratch: &Path, fake: &FakeLlm, test_server: &Path) {
    let command = toml_str(&test_server.to_string_lossy());
    let ours: Vec<(String, String)> = ["alpha", "beta", "gamma"]
        .iter()
        .map(|n| (n.to_string(), format!("command = {command}\n")))
        .collect();
    mcp_readings(
        exe,
        &scratch.join("mcp-ours"),
        fake,
        "the in-repo test server three times",
        &ours,
        LEVELS,
    );

    let peer = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut peers = Vec::new();
    if let Some(node) = peer("EVOLVE_TEST_MCP_NODE") {
        if let Some(it) = peer("EVOLVE_TEST_MCP_EVERYTHING") {
            peers.push((
                "everything".to_string(),
                format!(
                    "command = {}\nargs = [{}]\n",
                    toml_str(&node),
                    toml_str(&it)
                ),
            ));
        }
        if let Some(it) = peer("EVOLVE_TEST_MCP_FILESYSTEM") {
            let dir = scratch.join("mcp-peers/files");
            std::fs::create_dir_all(&dir).expect("filesystem server's directory");
            peers.push((
                "filesystem".to_string(),
                format!(
                    "command = {}\nargs = [{}, {}]\n",
                    toml_str(&node),
                    toml_str(&it),
                    toml_str(&dir.to_string_lossy())
                ),
            ));
        }
    }
    if let Some(time) = peer("EVOLVE_TEST_MCP_TIME") {
        peers.push((
            "time".to_string(),
            format!("command = {}\n", toml_str(&time)),
        ));
    }
    if peers.is_empty() {
        println!(
            "third-party MCP servers: skipped (no EVOLVE_TEST_MCP_* set; `eval \"$(tests/mcp-peers.sh)\"` sets them)"
        );
    } else {
        let names: Vec<&str> = peers.iter().map(|(n, _)| n.as_str()).collect();
        let what = format!(
            "third-party servers from tests/mcp-peers.sh ({})",
            names.join(", ")
        );
        mcp_readings(
            exe,
            &scratch.join("mcp-peers"),
            fake,
            &what,
            &peers,
            PEER_LEVELS,
        );
    }
}

/// Idle RSS of a `serve` whose config names `servers`, before and after they start.
/// `levels` is the fake cheap model's answer to each server's classification prompt.
fn mcp_readings(
    exe: &Path,
    home: &Path,
    fake: &FakeLlm,
    what: &str,
    servers: &[(String, String)],
    levels: &str,
) {
    std::fs::create_dir_all(home).expect("serve home");
    let mut config = String::new();
    for (name, body) in servers {
        config.push_str(&format!("[mcp.servers.{name}]\n{body}\n"));
        fake.route(CLASSIFY, Reply::Text(levels.into()));
    }
    std::fs::write(home.join("config.toml"), config).expect("write config.toml");
    let server = Server::start(exe, home, fake);
    std::thread::sleep(IDLE);
    let mut readings = vec![(
        format!("{} MCP servers configured, none started", servers.len()),
        server.memory(),
    )];
    let mut conn = Conn::open(server.port).expect("connect to serve");
    let t = Instant::now();
    let (status, tools) = conn
        .request("GET", "/v1/tools", None)
        .expect("GET /v1/tools");
    let listed = t.elapsed();
    assert_eq!(status, 200, "GET /v1/tools answered {status}: {tools}");
    let mcp_tools = serde_json::from_str::<Value>(&tools)
        .ok()
        .and_then(|v| v["data"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|t| t["source"] == "mcp")
        .count();
    let (_, listing) = conn.request("GET", "/v1/mcp", None).expect("GET /v1/mcp");
    let connected: Vec<String> = serde_json::from_str::<Value>(&listing)
        .ok()
        .and_then(|v| v["data"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|s| s["connected"] == true)
        .filter_map(|s| s["name"].as_str().map(String::from))
        .collect();
    drop(conn);
    quiet(fake);
    readings.push((
        format!(
            "after GET /v1/tools started them ({} of {} connected, {mcp_tools} MCP tools, listed in {:.0} ms)",
            connected.len(),
            servers.len(),
            ms(listed)
        ),
        server.memory(),
    ));
    print_readings(
        &format!("idle RSS of `evolve serve` with {what}"),
        &readings,
    );
    let children: Vec<String> = children(server.child.id())
        .into_iter()
        .map(|pid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            format!("{} {:.1}", name.trim(), mb(memory(pid).rss))
        })
        .collect();
    println!(
        "  not counted: {} server processes, {} MB",
        children.len(),
        if children.is_empty() {
            "-".to_string()
        } else {
            children.join(" + ")
        }
    );
    report_log(server.stop());
}

/// 50 sessions through `POST /v1/sessions`.
fn seed_sessions(port: u16) {
    let mut conn = Conn::open(port).expect("connect to serve");
    for i in 0..SESSIONS {
        let body = json!({"title": format!("Session {i}: planning the garden and the week")});
        let (status, answer) = conn
            .request("POST", "/v1/sessions", Some(&body))
            .expect("POST /v1/sessions");
        assert_eq!(status, 201, "POST /v1/sessions: {answer}");
    }
}

fn print_readings(title: &str, readings: &[(String, Memory)]) {
    println!("{title}:");
    for (when, m) in readings {
        println!(
            "  {when}: VmRSS {} KiB ({:.2} MB; anon {} + file {} KiB), VmHWM {} KiB ({:.2} MB), {} threads",
            m.rss,
            mb(m.rss),
            m.anon,
            m.file,
            m.peak,
            mb(m.peak),
            m.threads
        );
    }
}

fn report_log(said: Vec<String>) {
    if said.is_empty() {
        return;
    }
    println!("  serve logged {} warning/error lines:", said.len());
    for line in said.iter().take(10) {
        println!("    {line}");
    }
}

// ---- ask, --help, --version -------------------------------------------------------------

fn ask(exe: &Path, scratch: &Path, fake: &FakeLlm) {
    let run = |home: &Path, i: usize| {
        background(fake, json!(null));
        let t = Instant::now();
        let out = support::evolve(exe, home, fake, "warn")
            .args([
                "ask",
                &format!("What should I plant in spring, question {i}?"),
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run evolve ask");
        let took = t.elapsed();
        assert!(
            out.status.success(),
            "ask failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        took
    };
    let fresh: Vec<Duration> = (0..RUNS)
        .map(|i| run(&scratch.join(format!("ask-fresh-{i}")), i))
        .collect();
    let warm_home = scratch.join("ask-warm");
    run(&warm_home, 0);
    let warm: Vec<Duration> = (1..=RUNS).map(|i| run(&warm_home, i)).collect();
    let store = dir_size(&warm_home);
    let plain = |arg: &str| -> Vec<Duration> {
        (0..2 * RUNS + 1)
            .map(|_| {
                let t = Instant::now();
                let out = support::evolve(exe, &warm_home, fake, "warn")
                    .arg(arg)
                    .stdin(Stdio::null())
                    .output()
                    .expect("run evolve");
                assert!(out.status.success(), "evolve {arg} failed");
                t.elapsed()
            })
            .collect()
    };
    let help = plain("--help");
    let version = plain("--version");
    println!("wall time of `evolve ask QUESTION` (instant fake model, learning on: the turn, its background model calls, exit):");
    print_times("first run ever (a fresh EVOLVE_HOME each time)", fresh);
    print_times(
        &format!(
            "warm store ({} runs before, home {} KiB)",
            RUNS,
            store / 1024
        ),
        warm,
    );
    println!("wall time of the command-line answers (target: --help < 5 ms):");
    print_times("`evolve --help`", help);
    print_times("`evolve --version`", version);
}

fn print_times(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let n = times.len();
    println!(
        "  {what}: median {:.2} ms (min {:.2}, max {:.2}, {n} runs)",
        ms(times[n / 2]),
        ms(times[0]),
        ms(times[n - 1])
    );
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

// ---- the fake model's side ---------------------------------------------------------------

/// The background prompts' answers for one turn (markers from mini/src/agents/prompts.rs),
/// so learning runs as with a real model; `memory` is what extraction finds (or null).
fn background(fake: &FakeLlm, memory: Value) {
    let memories = if memory.is_null() {
        json!([])
    } else {
        json!([memory])
    };
    fake.route(
        "[evolve:post]",
        Reply::text(
            json!({
                "title": "The garden",
                "grade": {"score": 0.6, "reason": "It answers the question."},
                "tool_chain": "- no tools",
                "memories": memories,
            })
            .to_string(),
        ),
    );
    fake.route("[evolve:reflect]", Reply::text(r#"{"lesson": ""}"#));
    fake.route("[evolve:style]", Reply::text(r#"{"note": ""}"#));
    fake.route(
        "[evolve:summarize]",
        Reply::text("The user asked about the garden."),
    );
}

/// Waits until the fake model has had no request for a second (background learning is
/// over; at most 60 s), then [`IDLE`].
fn quiet(fake: &FakeLlm) {
    let end = Instant::now() + Duration::from_secs(60);
    let mut seen = fake.requests().len();
    let mut since = Instant::now();
    while Instant::now() < end && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(50));
        let now = fake.requests().len();
        if now != seen {
            seen = now;
            since = Instant::now();
        }
    }
    std::thread::sleep(IDLE);
}

// ---- small things ----------------------------------------------------------------------

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}
