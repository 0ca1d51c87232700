//! The loopback redirect of a native app (RFC 8252 §7.3): a listener on 127.0.0.1 that
//! takes the browser's `GET /callback?code=…&state=…` once, answers it with a short page
//! and hands the code on — after checking the `state` (a redirect that does not carry
//! this login's state did not come from it), the server's `error`, and the issuer
//! (`iss`, RFC 9207). Other requests (a favicon) get 404 and the wait goes on; the wait
//! ends at its deadline or the caller's Ctrl-C flag, looked at every 100 ms.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::fetch;
use super::LoginError;
use crate::cancel::Cancel;
use crate::secret::Secret;

/// The path the browser is sent back to.
const PATH: &str = "/callback";
/// How often the wait looks at its flag and deadline.
const POLL: Duration = Duration::from_millis(100);
/// A browser sends its request at once; a connection that does not is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// A listener waiting for one redirect.
pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

/// What the redirect brought.
#[derive(Debug)]
pub struct Returned {
    pub code: Secret,
}

impl Loopback {
    /// Listens on 127.0.0.1, on `port` if given and free, else on a port the system
    /// picks.
    pub fn bind(port: Option<u16>) -> Result<Loopback, LoginError> {
        let listener = port
            .and_then(|p| TcpListener::bind((Ipv4Addr::LOCALHOST, p)).ok())
            .map_or_else(|| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)), Ok)
            .map_err(|e| {
                LoginError::Setup(format!("cannot listen on 127.0.0.1 for the redirect: {e}"))
            })?;
        let port = listener
            .local_addr()
            .and_then(|addr| listener.set_nonblocking(true).map(|()| addr.port()))
            .map_err(|e| LoginError::Setup(format!("cannot listen for the redirect: {e}")))?;
        Ok(Loopback { listener, port })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        redirect_uri(self.port)
    }

    /// Waits for the redirect of the login with `state`.
    pub fn wait(
        &self,
        state: &str,
        issuer: &str,
        iss_required: bool,
        deadline: Instant,
        cancel: &Cancel,
    ) -> Result<Returned, LoginError> {
        loop {
            if cancel.is_cancelled() {
                return Err(LoginError::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(LoginError::NoRedirect);
            }
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Some(outcome) = serve(stream, state, issuer, iss_required) {
                        return outcome;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(LoginError::Setup(format!(
                        "the redirect listener failed: {e}"
                    )))
                }
            }
        }
    }
}

/// The redirect URI for a listener on `port`.
pub fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}{PATH}")
}

/// The port of a redirect URI evolve registered.
pub fn port_of(uri: &str) -> Option<u16> {
    uri.strip_prefix("http://127.0.0.1:")?
        .strip_suffix(PATH)?
        .parse()
        .ok()
}

/// Answers one connection; `Some` when it was the redirect.
///
/// Not inlined into the wait (measured: the binary is smaller so).
#[inline(never)]
fn serve(
    mut stream: TcpStream,
    state: &str,
    issuer: &str,
    iss_required: bool,
) -> Option<Result<Returned, LoginError>> {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let target = read_target(&mut stream)?;
    let outcome = callback(&target, state, issuer, iss_required);
    let (status, text) = match &outcome {
        None => ("404 Not Found", "Not found.".to_string()),
        Some(Ok(_)) => (
            "200 OK",
            "Evolve is logged in. You can close this tab.".to_string(),
        ),
        Some(Err(e)) => ("400 Bad Request", format!("Evolve is not logged in: {e}")),
    };
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>Evolve</title><p>{}</p>",
        evolve_core::text::escape_html(&text)
    );
    // Written whole (`write_all`, which the rest of evolve's sockets use; a `write!` on
    // a TcpStream is code of its own).
    let page = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(page.as_bytes());
    let _ = stream.flush();
    outcome
}

/// The target of a `GET` request head with one `Host`; `None` for anything else.
fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let n = stream.read(&mut buf).ok().filter(|n| *n > 0)?;
        head.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                // One Host, as serve's heads: a request naming two is not a browser's.
                let hosts = request
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case("host"))
                    .count();
                return (request.method == Some("GET") && hosts == 1)
                    .then(|| request.path.map(str::to_string))
                    .flatten();
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => {}
            _ => return None,
        }
    }
}

/// What a request target means for the login with `state`: `None` when it is not the
/// callback.
fn callback(
    target: &str,
    state: &str,
    issuer: &str,
    iss_required: bool,
) -> Option<Result<Returned, LoginError>> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != PATH {
        return None;
    }
    let pairs = fetch::query_pairs(query);
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let shown = |v: &str| fetch::shown(v.as_bytes(), &[]);
    Some((|| {
        if get("state") != Some(state) {
            return Err(LoginError::Redirect(
                "the redirect does not carry this login's state: it did not come from this \
                 login (an old browser tab, or another site); start the login again"
                    .into(),
            ));
        }
        if let Some(error) = get("error") {
            return Err(LoginError::Redirect(format!(
                "the authorization server said {}",
                fetch::said(error, get("error_description"), &[])
            )));
        }
        match get("iss") {
            Some(given) if given.trim_end_matches('/') != issuer.trim_end_matches('/') => {
                return Err(LoginError::Redirect(format!(
                    "the redirect comes from the issuer {}, not {} (RFC 9207): refused",
                    shown(given),
                    shown(issuer)
                )))
            }
            None if iss_required => {
                return Err(LoginError::Redirect(
                    "the redirect names no issuer (iss), which this authorization server \
                     promises (RFC 9207): refused"
                        .into(),
                ))
            }
            _ => {}
        }
        let code = get("code").filter(|c| !c.is_empty()).ok_or_else(|| {
            LoginError::Redirect("the redirect carries no authorization code".into())
        })?;
        Ok(Returned {
            code: Secret::new(code),
        })
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_is_checked_before_its_code_is_taken() {
        let issuer = "https://auth.example.com";
        let cb = |target: &str, required: bool| match callback(target, "st-1", issuer, required) {
            None => "not the callback".to_string(),
            Some(Ok(r)) => format!("code {}", r.code.expose()),
            Some(Err(e)) => e.to_string(),
        };
        let cases = [
            ("/callback?code=c-1&state=st-1", false, "code c-1"),
            (
                "/callback?state=st-1&code=c%2F1&iss=https%3A%2F%2Fauth.example.com",
                true,
                "code c/1",
            ),
            ("/favicon.ico", false, "not the callback"),
            (
                "/callback?code=c-1&state=st-2",
                false,
                "did not come from this login",
            ),
            ("/callback?code=c-1", false, "did not come from this login"),
            (
                "/callback?error=access_denied&error_description=User+said+no&state=st-1",
                false,
                "said access_denied: User said no",
            ),
            ("/callback?state=st-1", false, "no authorization code"),
            (
                "/callback?code=c&state=st-1&iss=https%3A%2F%2Fevil.example",
                false,
                "RFC 9207",
            ),
            ("/callback?code=c&state=st-1", true, "names no issuer"),
        ];
        for (target, required, want) in cases {
            let got = cb(target, required);
            assert!(got.contains(want), "{target}: {got}");
        }
        assert_eq!(port_of(&redirect_uri(4242)), Some(4242));
        assert_eq!(port_of("http://localhost:1/callback"), None);
    }

    #[test]
    fn the_wait_takes_the_redirect_and_ignores_other_requests() {
        let lb = Loopback::bind(None).expect("listen");
        let uri = lb.redirect_uri();
        let port = port_of(&uri).expect("port");
        let browser = std::thread::spawn(move || {
            let send = |path: &str, hosts: &str| {
                let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).expect("connect");
                write!(s, "GET {path} HTTP/1.1\r\n{hosts}\r\n").expect("send");
                let mut out = String::new();
                let _ = s.read_to_string(&mut out);
                out
            };
            let get = |path: &str| send(path, "host: 127.0.0.1\r\n");
            // Two Host headers: not a browser's request, whatever it carries (closed
            // without an answer, like a request that is not a GET).
            let doubled = send(
                "/callback?code=forged&state=st",
                "Host: 127.0.0.1\r\nHost: evil.example\r\n",
            );
            assert_eq!(doubled, "", "a request with two Host headers was answered");
            (get("/favicon.ico"), get("/callback?code=abc&state=st"))
        });
        let never = Cancel::new();
        let got = lb
            .wait(
                "st",
                "https://a",
                false,
                Instant::now() + Duration::from_secs(10),
                &never,
            )
            .expect("the redirect");
        assert_eq!(got.code.expose(), "abc");
        let (favicon, page) = browser.join().expect("browser");
        assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
        assert!(
            page.starts_with("HTTP/1.1 200") && page.contains("logged in"),
            "{page}"
        );

        let quiet = Loopback::bind(None).expect("listen");
        let started = Instant::now();
        let err = quiet
            .wait(
                "st",
                "https://a",
                false,
                Instant::now() + Duration::from_millis(300),
                &never,
            )
            .expect_err("no redirect");
        assert!(matches!(err, LoginError::NoRedirect), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let stop = Cancel::new();
        stop.cancel();
        let err = quiet
            .wait(
                "st",
                "https://a",
                false,
                Instant::now() + Duration::from_secs(10),
                &stop,
            )
            .expect_err("cancelled");
        assert!(matches!(err, LoginError::Cancelled), "{err}");
    }
}
