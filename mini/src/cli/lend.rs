//! Borrowing the store from a running `evolve serve`, which holds the file for as long
//! as it runs (redb lets one process hold it): `POST /v1/store/lend` over one connection
//! kept open exactly as long as this process holds the file. The server closes its
//! store before it answers 200, and takes the file back when the connection closes —
//! when the store is released or dropped (it closes the file first), or when this
//! process exits, crashes or is killed. See `crate::web::lend` for the server's side.
//!
//! What it decides: the request (address and token as `evolve ask` finds them, who is
//! asking for the server's messages), and what counts as lent (a 200 head). What it
//! leaves to others: when to ask ([`crate::store::Store`]'s reopen, [`super::app`]'s
//! open).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::LendError;
use crate::store::{Lease, Lender};
use crate::web::endpoint::{self, Endpoint};

/// How long connecting may take (the server is on this machine).
const CONNECT: Duration = Duration::from_secs(3);
/// How long the server may take to close its store (transactions in flight finish
/// first) and answer.
const ANSWER: Duration = Duration::from_secs(30);
/// The most of an answer read: a head and a short error body.
const MAX_ANSWER: usize = 64 * 1024;

/// Asks the server `ep` of `home` to lend its store. The open connection is the lease;
/// `Err` says why not (a server without the route answers 404).
pub fn borrow(home: &Path, ep: &Endpoint) -> Result<TcpStream, LendError> {
    let body = serde_json::json!({"command": command(), "pid": std::process::id()}).to_string();
    let head = format!(
        "POST /v1/store/lend HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n{body}",
        ep.addr,
        body.len(),
        ep.token(home)?,
    );
    let mut conn = TcpStream::connect_timeout(&ep.addr, CONNECT).map_err(LendError::Connect)?;
    let _ = conn.set_read_timeout(Some(ANSWER));
    let _ = conn.set_write_timeout(Some(ANSWER));
    conn.write_all(head.as_bytes()).map_err(LendError::Send)?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let (status, taken) = loop {
        let n = conn.read(&mut chunk).map_err(LendError::Receive)?;
        if n == 0 && got.is_empty() {
            return Err(LendError::Closed);
        }
        got.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut answer = httparse::Response::new(&mut headers);
        match answer.parse(&got) {
            Ok(httparse::Status::Complete(taken)) => break (answer.code.unwrap_or(0), taken),
            Ok(httparse::Status::Partial) if n > 0 && got.len() < MAX_ANSWER => {}
            _ => return Err(LendError::NotHttp),
        }
    };
    if status == 200 {
        let _ = conn.set_read_timeout(None);
        log::debug!("evolve serve (pid {}) lent the store", ep.pid);
        return Ok(conn);
    }
    // The error body, to the close (the request asked for one).
    let mut rest = got.split_off(taken);
    let _ = conn.take(MAX_ANSWER as u64).read_to_end(&mut rest);
    let message = serde_json::from_slice::<serde_json::Value>(&rest)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(&rest).trim().to_string());
    Err(LendError::Refused { status, message })
}

/// The lender a command's store asks when it finds the file held: a lend from the
/// server running for `home` at that moment, if there is one.
pub fn lender(home: PathBuf) -> Lender {
    Box::new(move || {
        let ep = endpoint::running(&home)?;
        match borrow(&home, &ep) {
            Ok(conn) => Some(Box::new(conn) as Lease),
            Err(why) => {
                log::warn!(
                    "evolve serve (pid {}) did not lend the store: {why}",
                    ep.pid
                );
                None
            }
        }
    })
}

/// This command as the server names it: `evolve` and its first two command words
/// (`evolve memory add`), never its arguments (a memory's text stays here).
fn command() -> String {
    command_words(std::env::args().skip(1))
}

fn command_words(args: impl Iterator<Item = String>) -> String {
    let mut words = vec!["evolve".to_string()];
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg == "--profile" {
            args.next();
        } else if !arg.starts_with('-') {
            let word = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            if !word || words.len() == 3 {
                break;
            }
            words.push(arg);
        }
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_named_without_its_arguments() {
        let cases: [(&[&str], &str); 5] = [
            (&["memory", "add", "my secret"], "evolve memory add"),
            (
                &["--profile", "work", "sessions", "list"],
                "evolve sessions list",
            ),
            (&["chat", "--session", "s1"], "evolve chat"),
            (&["memory", "rm", "12"], "evolve memory rm"),
            (&[], "evolve"),
        ];
        for (args, want) in cases {
            let args = args.iter().map(|a| a.to_string());
            assert_eq!(command_words(args), want);
        }
    }
}
