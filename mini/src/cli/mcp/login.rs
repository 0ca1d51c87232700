//! `evolve mcp login` and `logout`: the browser part of an OAuth login (opening or
//! printing the URL, waiting with Ctrl-C) and forgetting a login.

use std::io::Write;
use std::time::Duration;

use argh::FromArgs;

use super::super::{interrupt, printable};
use super::{open, unknown_server, usage};
use crate::error::Error;
use crate::mcp::oauth;
use crate::mcp::servers;

/// log in to an HTTP server with OAuth: opens its authorization server's page in a browser (or prints the URL), waits for it to come back, and keeps the tokens in the store
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "login",
    example = "{command_name} github",
    example = "{command_name} github --no-browser",
    note = "The browser comes back to http://127.0.0.1:PORT/callback on this machine. Evolve registers itself with the authorization server unless the server was added with --oauth-client-id. Tokens are renewed by themselves; run login again when a server says the login is no longer taken or asks for more permission."
)]
pub(super) struct Login {
    /// the server's name
    #[argh(positional)]
    name: String,
    /// print the URL instead of opening a browser
    #[argh(switch)]
    no_browser: bool,
    /// seconds to wait for the browser to come back (default 300)
    #[argh(option)]
    timeout: Option<u64>,
}

/// forget the OAuth login of an HTTP server: its tokens and the client evolve registered
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "logout")]
pub(super) struct Logout {
    /// the server's name
    #[argh(positional)]
    name: String,
}

/// How long `evolve mcp login` waits for the browser by default.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// `evolve mcp login`. Not inlined into `run` (measured: the binary is smaller so).
#[inline(never)]
pub(super) fn login(c: Login, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    let Some(spec) = servers.iter().find(|s| s.name == c.name) else {
        return Err(unknown_server(&c.name, &servers));
    };
    let wait = match c.timeout {
        Some(0) => {
            return Err(usage(
                "--timeout 0: the browser needs at least 1 second".into(),
            ))
        }
        Some(secs) => Duration::from_secs(secs),
        None => LOGIN_WAIT,
    };
    let failed = |source: oauth::LoginError| Error::Login {
        server: c.name.clone(),
        source,
    };
    // Ctrl-C ends the wait (and the discovery before it) with a message, not a kill.
    interrupt::install();
    interrupt::begin_turn();
    let started = oauth::login::start(spec, &store).map_err(failed)?;
    let client = started.client_how;
    // The wait may be long: other evolve commands may use the store meanwhile.
    store.release();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "To log in to {}, open this URL in a browser on this machine:\n\n  {}\n",
        c.name, started.url
    )?;
    let opened = !c.no_browser && open_browser(&started.url);
    writeln!(
        out,
        "{}waiting up to {} s for the browser to come back to {} — Ctrl-C to stop",
        if opened {
            "(it was opened in your browser)\n"
        } else {
            ""
        },
        wait.as_secs(),
        started.redirect_uri
    )?;
    out.flush()?;
    drop(out);
    let granted = started
        .finish(&store, std::time::Instant::now() + wait, &interrupt::CANCEL)
        .map_err(failed)?;
    let scope = granted
        .scope
        .map(|s| format!("scope: {}; ", printable(&s, false)))
        .unwrap_or_default();
    let lasting = match (granted.renewable, granted.expires_in) {
        (true, _) => "; the token is renewed by itself".to_string(),
        (false, Some(secs)) => format!(
            "; the token expires in {} min and cannot be renewed: log in again then",
            secs / 60
        ),
        (false, None) => String::new(),
    };
    println!(
        "logged in to {} ({scope}client: {client}){lasting} — `evolve mcp tools {}` uses it",
        c.name, c.name
    );
    Ok(())
}

/// Opens `url` with `$BROWSER`, else `xdg-open` when there is a display; true when a
/// program was started. The URL is an argument, never a shell's input; the program
/// gets no hidden value in its environment.
fn open_browser(url: &str) -> bool {
    let graphical = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    let program = match std::env::var("BROWSER") {
        Ok(b) if !b.trim().is_empty() => b.trim().to_string(),
        _ if graphical => "xdg-open".to_string(),
        _ => return false,
    };
    let started = std::process::Command::new(&program)
        .arg(url)
        .env_clear()
        .envs(crate::mcp::inherited_env())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        Ok(mut child) => {
            // Reaped when it ends (a browser may run for long).
            let _ = oauth::in_background(
                "browser",
                Box::new(move || {
                    let _ = child.wait();
                }),
            );
            true
        }
        Err(e) => {
            log::info!("cannot start {program} to open the login page: {e}");
            false
        }
    }
}

/// `evolve mcp logout`. Not inlined into `run` (as `login`).
#[inline(never)]
pub(super) fn logout(c: Logout, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = open(profile)?;
    let servers = servers::load(&app.config, &store)?;
    // A login is forgotten even when its server is gone; nothing at all is an unknown
    // server.
    let removed = store.remove_mcp_login(&c.name)?;
    if !removed && !servers.iter().any(|s| s.name == c.name) {
        return Err(unknown_server(&c.name, &servers));
    }
    if removed {
        println!(
            "logged out of {}: its tokens and the client evolve registered are forgotten (the \
             authorization server may still list the grant: revoke it there to end it)",
            c.name
        );
    } else {
        println!("{} has no login to forget", c.name);
    }
    Ok(())
}
