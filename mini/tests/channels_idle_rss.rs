//! What three connected chat channels cost an idle `evolve serve`: VmRSS with Telegram
//! (long polling), Feishu and DingTalk (long connections) connected to their loopback
//! fakes, each having answered one message, against the same server without channels.
//! `tests/channels-rss.sh` runs it on the release binary (`EVOLVE_BIN`) for the figures
//! in docs/BENCHMARKS.md; here it holds the budget on whichever binary is built.

mod support;
use std::time::{Duration, Instant};

use support::dingtalk::FakeDingtalk;
use support::feishu::FakeFeishu;
use support::serve::Server;
use support::telegram::FakeTelegram;
use support::World;

/// What the three channels may add to an idle server (their threads' stacks as touched,
/// three HTTP agents, two WebSockets, the inboxes' store pages).
const BUDGET_KIB: u64 = 6 * 1024;

/// How long the server sits idle before it is measured.
const IDLE: Duration = Duration::from_secs(4);

/// A `kB` figure of the server's `/proc/PID/status` (`VmRSS`, `RssAnon`).
fn status_kib(s: &Server, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id()))
        .expect("the server's /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

fn running(s: &Server) -> usize {
    let v = s.get("/v1/channels").json();
    v["channels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "running")
        .count()
}

#[test]
fn three_connected_channels_add_little_to_an_idle_server() {
    let alone = World::new("rss-alone");
    alone.config("[agent]\nlearn = false\n");
    let s = Server::start(&alone, &[]);
    assert_eq!(s.get("/health").status, 200);
    std::thread::sleep(IDLE);
    let (base, base_anon) = (status_kib(&s, "VmRSS"), status_kib(&s, "RssAnon"));
    drop(s);

    let w = World::new("rss-channels");
    let (tg, fs, dt) = (
        FakeTelegram::start(),
        FakeFeishu::start(),
        FakeDingtalk::start(),
    );
    w.config(&format!(
        "[agent]\nlearn = false\n{}{}{}",
        tg.config(),
        fs.config(),
        dt.config()
    ));
    let s = Server::start(&w, &[]);
    // Connected: each answers a stranger with a pairing code (no model call).
    tg.say(7, 7, "Ann", "hello?");
    fs.say("oc_dm", true, "ou_ann", "hello?", false);
    dt.say("staff_ann", None, "hello?");
    tg.wait_for(7, 30, |m| m.1.contains("evolve channels pair"));
    fs.wait_for("oc_dm", 30, |m| m.1.contains("evolve channels pair"));
    dt.wait_for("staff_ann", 30, |t| t.contains("evolve channels pair"));
    let end = Instant::now() + Duration::from_secs(20);
    while running(&s) < 3 {
        assert!(
            Instant::now() < end,
            "not all connected: {}",
            s.get("/v1/channels").body
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(IDLE);
    let (with, anon) = (status_kib(&s, "VmRSS"), status_kib(&s, "RssAnon"));
    assert!(w.main_requests().is_empty());
    let delta = with.saturating_sub(base);
    println!(
        "channels-rss: idle VmRSS of evolve serve: alone {base} KiB ({base_anon} anon), with \
         telegram + feishu + dingtalk connected {with} KiB ({anon} anon): +{delta} KiB"
    );
    assert!(
        delta <= BUDGET_KIB,
        "three channels add {delta} KiB to an idle server (budget {BUDGET_KIB} KiB)"
    );
}
