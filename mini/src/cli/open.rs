//! `evolve open`: the link that signs a browser in to the running `evolve serve` of
//! this home, printed, and opened in the desktop's browser when there is one (a
//! display and `xdg-open`, or macOS's `open`). The server is the one `serve.json`
//! records and its token the one `serve.token` holds ([`crate::web::endpoint`]).

use std::path::Path;
use std::process::{Command, Stdio};

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
    let ep = endpoint::running(home).ok_or_else(|| {
        Error::Other(format!(
            "no evolve serve is running for {} — start one with `evolve serve` \
             · 没有正在运行的 evolve serve：先运行 `evolve serve`",
            home.display()
        ))
    })?;
    let link = ep.login_link(home).map_err(|why| {
        Error::Other(format!(
            "evolve serve (pid {}) is running, but {why}",
            ep.pid
        ))
    })?;
    println!("{link}");
    let opened = !cmd.print && opener().is_some_and(|program| open_with(&program, &link));
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
