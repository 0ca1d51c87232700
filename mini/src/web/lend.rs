//! `POST /v1/store/lend`: how a command run beside `serve` (`evolve memory add`,
//! `evolve chat`) gets the store file, which redb lets one process hold.
//!
//! The server closes its store ([`crate::store::Store::lend`]), answers 200 once the file
//! is closed, and keeps the connection open: the lend lasts until the client closes it —
//! its process exiting, crashing or killed closes it too — or for [`LEASE`] at most,
//! after which the server takes the file back as soon as its lock is free. Meanwhile
//! every use of the store in the server waits (a request that waits longer than
//! [`crate::store::LENT_WAIT`] is answered 503, naming the borrower); other requests,
//! and accepting connections, go on.
//!
//! Only a client on this machine may borrow (the file is local), with the same token as
//! every API route. The route is internal: it is not in `/openapi.json`, whose every
//! operation the API suite fuzzes, and a fuzzer holding the store open is no test of it.
//!
//! What it leaves to others: the waiting (the store), asking and keeping the lease
//! (`crate::cli::lend`).

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::{Body, Request, Response};
use super::request::{body, field, opt_str, Reply};
use super::{error, State};

/// The longest a lend lasts: a command that holds the store longer (a `chat` in a long
/// tool run) keeps it until it lets go of the lock, and the server then takes it back.
pub const LEASE: Duration = Duration::from_secs(300);

/// How often a lend looks at its connection, and at the server stopping.
const LOOK: Duration = Duration::from_millis(250);

/// The route. The body may say who borrows, for messages: `{"command": "evolve memory
/// add", "pid": 42}`.
pub fn lend(state: &Arc<State>, req: &Request) -> Reply {
    if !on_this_machine(req.peer.ip(), req.local.ip()) {
        return error(
            403,
            "the store is lent only to a command on the machine evolve serve runs on",
        );
    }
    let b = field!(body(req));
    let command = field!(opt_str(&b, "command")).unwrap_or_else(|| "evolve".into());
    let to = borrower(&command, b.get("pid").and_then(Value::as_u64));
    let store = Arc::clone(&state.rt().store);
    let lend = store.lend(to);
    let shutdown = Arc::clone(&state.shutdown);
    let started = Instant::now();
    let hello = json!({"lent": true, "lease_secs": LEASE.as_secs()}).to_string() + "\n";
    Response {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "application/x-ndjson".into()),
            ("Cache-Control".into(), "no-store".into()),
        ],
        body: Body::Stream(Box::new(move |out| {
            let _lend = lend;
            if !out.send(hello.as_bytes()) {
                return;
            }
            while !shutdown.load(Ordering::SeqCst) && started.elapsed() < LEASE {
                if out.closed_within(LOOK) {
                    return;
                }
            }
            log::info!(
                "the store's lease ended after {} s",
                started.elapsed().as_secs()
            );
        })),
    }
}

/// A client on this machine: a loopback peer (also as an IPv4-mapped IPv6 address), or
/// one that connects from the very address it reached (a command beside a serve bound
/// to one address of this machine, which is where `serve.json` points it).
fn on_this_machine(peer: IpAddr, local: IpAddr) -> bool {
    let peer = peer.to_canonical();
    peer.is_loopback() || peer == local.to_canonical()
}

/// "`evolve memory add` (pid 42)", from what the client said (cut, printable).
fn borrower(command: &str, pid: Option<u64>) -> String {
    let command: String = command
        .chars()
        .filter(|c| !c.is_control() && *c != '`')
        .take(80)
        .collect();
    match pid {
        Some(pid) => format!("`{command}` (pid {pid})"),
        None => format!("`{command}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_clients_on_this_machine_borrow() {
        let cases = [
            ("127.0.0.1", "127.0.0.1", true),
            ("::1", "::1", true),
            ("::ffff:127.0.0.1", "::", true),
            ("192.168.1.5", "192.168.1.5", true),
            ("::ffff:192.168.1.5", "192.168.1.5", true),
            ("192.168.1.9", "192.168.1.5", false),
            ("::ffff:10.0.0.1", "10.0.0.2", false),
        ];
        for (peer, local, want) in cases {
            let got = on_this_machine(peer.parse().unwrap(), local.parse().unwrap());
            assert_eq!(got, want, "{peer} reaching {local}");
        }
    }

    #[test]
    fn the_borrower_is_named_printably() {
        assert_eq!(
            borrower("evolve memory add", Some(42)),
            "`evolve memory add` (pid 42)"
        );
        assert_eq!(borrower("a`b\nc", None), "`abc`");
        assert_eq!(borrower(&"x".repeat(200), None).len(), 82);
    }
}
