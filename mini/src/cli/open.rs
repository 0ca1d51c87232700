//! `evolve open`: the link that signs a browser in to the running `evolve serve` of
//! this home, printed, and opened in the desktop's browser when there is one (a
//! display and `xdg-open`, or macOS's `open`). The server is the one `serve.json`
//! records and its token the one `serve.token` holds ([`crate::web::endpoint`]).
//!
//! A program's arguments are visible to every account in the process list (and a
//! browser started by the opener keeps them for as long as it runs), so the browser is
//! handed a one-time code from the server (`POST /v1/login/code`), never the token.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use argh::FromArgs;

use super::app::App;
use crate::config::LoadOptions;
use crate::error::Error;
use crate::web::endpoint;

/// print (and open, on a desktop) the link that signs the browser in to the running serve
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "open")]
pub struct OpenCmd {
    /// only print the link, never start a browser
    #[argh(switch)]
    print: bool,
}

pub fn run(cmd: OpenCmd, profile: &Option<String>) -> Result<(), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        ..LoadOptions::default()
    })?;
    let home = &app.config.home;
    let (ep, token) = endpoint::running_with_token(home)?
        .ok_or_else(|| endpoint::ServeError::NotRunning(home.clone()))?;
    let link = crate::web::auth::login_link(ep.addr, &token);
    println!("{link}");
    let opened = !cmd.print
        && opener().is_some_and(|program| match one_time_link(&ep, &token) {
            Ok(once) => open_with(&program, &once),
            Err(why) => {
                log::warn!("no one-time sign-in code from evolve serve: {why}");
                false
            }
        });
    if opened {
        eprintln!("evolve: opened in your browser · 已在浏览器中打开");
    } else {
        eprintln!(
            "evolve: open this link in a browser on this machine to sign in \
             · 在本机浏览器中打开此链接即可登录"
        );
    }
    Ok(())
}

/// Why the server gave no one-time code (words for a warning).
#[derive(Debug, thiserror::Error)]
enum NoCode {
    /// The request or the answer failed.
    #[error(transparent)]
    Request(#[from] ureq::Error),
    /// It answered, but with no code.
    #[error("it answered {0}")]
    Refused(u16),
}

/// `/login#code=…` with a fresh one-time code from the server.
fn one_time_link(ep: &endpoint::Endpoint, token: &str) -> Result<String, NoCode> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut resp = agent
        .post(format!("http://{}/v1/login/code", ep.addr))
        .header("Authorization", format!("Bearer {token}"))
        .send("")?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(64 * 1024)
        .read_to_string()?;
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match v["code"].as_str() {
        Some(code) if status == 200 && code.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(format!("http://{}/login#code={code}", ep.addr))
        }
        _ => Err(NoCode::Refused(status)),
    }
}

/// The program that opens a URL in the desktop's browser, when there is a desktop.
fn opener() -> Option<String> {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
        if !display {
            return None;
        }
        "xdg-open"
    };
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .map(|p| p.to_string_lossy().into_owned())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `program URL` (no shell) and waits for it: `xdg-open` returns once the browser
/// has the link.
fn open_with(program: &str, link: &str) -> bool {
    Command::new(program)
        .arg(link)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
