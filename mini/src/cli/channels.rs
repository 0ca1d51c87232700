//! `evolve channels …`: the chat platforms `serve` answers on. `list` shows each one's
//! settings (the token masked), health, paired users and groups and the codes waiting;
//! `pair CODE` lets the user or group that got the code talk to the agent; `unpair ID`
//! takes that back; `add telegram` / `rm telegram` write or remove the section of
//! `config.toml` (kept 0600); `test` asks the platform who the bot is.
//!
//! The store is borrowed from a running `serve` like every other command's; `serve`
//! reads pairings at each message, so a pairing counts at once.

use std::io::Write;

use argh::FromArgs;
use serde_json::json;

use crate::channels::{self, Channel, Code, Paired, Status};
use crate::cli::app::App;
use crate::config::{LoadOptions, TelegramConfig};
use crate::error::Error;

/// the chat platforms serve answers on (Telegram): list, pair, add, rm, test
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "channels")]
pub struct ChannelsCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    List(List),
    Pair(Pair),
    Unpair(Unpair),
    Add(Add),
    Rm(Rm),
    Test(Test),
}

/// the channels, their health, who is paired and the codes waiting
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// let the user or group that got CODE talk to the agent
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "pair")]
struct Pair {
    /// the code the bot sent them
    #[argh(positional)]
    code: String,
}

/// stop answering a paired user or group (its id from `channels list`)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "unpair")]
struct Unpair {
    /// the user's or group's id
    #[argh(positional)]
    id: String,
}

/// add a channel to config.toml: `add telegram --token-env VAR` (or --token)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
struct Add {
    /// the platform: telegram
    #[argh(positional)]
    platform: String,
    /// the bot token (written to config.toml, which is kept 0600)
    #[argh(option)]
    token: Option<String>,
    /// the environment variable holding the token instead
    #[argh(option)]
    token_env: Option<String>,
    /// the Bot API address (default https://api.telegram.org)
    #[argh(option)]
    base_url: Option<String>,
    /// your own Telegram user id: paired from the start
    #[argh(option)]
    owner: Option<i64>,
}

/// remove a channel's section from config.toml
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the platform: telegram
    #[argh(positional)]
    platform: String,
}

/// check that the platform accepts the token, and say who the bot is
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "test")]
struct Test {}

pub fn run(cmd: ChannelsCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c, profile),
        Action::Pair(c) => pair(c, profile),
        Action::Unpair(c) => unpair(c, profile),
        Action::Add(c) => add(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Test(_) => test(profile),
    }
}

fn platform(name: &str) -> Result<(), Error> {
    if name.eq_ignore_ascii_case("telegram") {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "{name}: unknown channel — this build has telegram"
        )))
    }
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let t = app.config.channels.telegram.as_ref();
    let status: Option<Status> = store.channel_get("telegram/status")?;
    let paired: Vec<(String, Paired)> = store.channel_scan("telegram/paired/")?;
    let codes: Vec<(String, Code)> = store.channel_scan("codes/")?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let v = json!({
            "telegram": {
                "configured": t.is_some(),
                "settings": app.config.channels.to_json()["telegram"],
                "status": status,
                "paired": paired.iter().map(|(k, p)| json!({
                    "id": k.rsplit('/').next(),
                    "kind": p.kind, "name": p.name, "at": p.at,
                })).collect::<Vec<_>>(),
                "owner": t.and_then(|t| t.owner),
                "codes": codes.iter().filter(|(_, c)| c.channel == "telegram").map(|(k, c)| json!({
                    "code": k.trim_start_matches("codes/"),
                    "kind": c.kind, "id": c.id, "name": c.name, "at": c.at,
                })).collect::<Vec<_>>(),
            }
        });
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        )?;
        return Ok(());
    }
    let Some(t) = t else {
        writeln!(
            out,
            "no channels — add Telegram with `evolve channels add telegram --token-env VAR`"
        )?;
        return Ok(());
    };
    let token = match (&t.token, &t.problem) {
        (Some(s), _) => s.masked(),
        (None, Some(p)) => format!("missing: {p}"),
        (None, None) => "missing".into(),
    };
    writeln!(
        out,
        "telegram  {}  {}  token {token}",
        if t.enabled { "enabled" } else { "disabled" },
        crate::secret::display_url(&t.base_url)
    )?;
    match status {
        Some(s) => writeln!(
            out,
            "  status: {} — {} (at {})",
            if s.ok { "ok" } else { "failing" },
            s.detail,
            crate::store::format_time(s.at)
        )?,
        None => writeln!(out, "  status: not started yet (`evolve serve` runs it)")?,
    }
    if let Some(o) = t.owner {
        writeln!(out, "  owner: {o}")?;
    }
    for (k, p) in &paired {
        writeln!(
            out,
            "  paired {} {}: {}",
            p.kind,
            k.rsplit('/').next().unwrap_or(""),
            p.name
        )?;
    }
    for (k, c) in codes.iter().filter(|(_, c)| c.channel == "telegram") {
        writeln!(
            out,
            "  waiting: {} {} ({}) — `evolve channels pair {}`",
            c.kind,
            c.name,
            c.id,
            k.trim_start_matches("codes/")
        )?;
    }
    Ok(())
}

fn pair(c: Pair, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let (code, paired) = channels::pair(&store, &c.code).map_err(Error::Usage)?;
    store.release();
    writeln!(
        std::io::stdout().lock(),
        "paired {} {} ({}) on {} — they can talk to the agent now",
        paired.kind,
        paired.name,
        code.id,
        code.channel
    )?;
    // Told in the chat too, when the platform can be reached (best effort).
    if let Some(mut bot) = app
        .config
        .channels
        .telegram
        .as_ref()
        .and_then(channels::telegram::Telegram::new)
    {
        let text = "You are paired: write to me any time. 配对成功，现在可以对话了。";
        if let Err(e) = bot.send(&code.id, text, &[]) {
            log::info!("telegram: cannot tell the chat it is paired: {e}");
        }
    }
    Ok(())
}

fn unpair(c: Unpair, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let id = c.id.trim();
    if !store.channel_remove(&format!("telegram/paired/{id}"))? {
        return Err(Error::Usage(format!(
            "{id} is not paired (`evolve channels list` shows who is)"
        )));
    }
    writeln!(std::io::stdout().lock(), "unpaired {id} on telegram")?;
    Ok(())
}

/// `config.toml` with `[channels.telegram]` changed by `change`, checked, written 0600.
fn edit_config(
    profile: &Option<String>,
    change: impl FnOnce(String) -> String,
) -> Result<std::path::PathBuf, Error> {
    let home = crate::config::home_dir(&crate::config::process_env)?;
    let path = home.join(crate::config::CONFIG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::Other(format!("cannot read {}: {e}", path.display()))),
    };
    let text = change(text);
    crate::config::Config::load_from_text(
        &LoadOptions {
            profile: profile.clone(),
            ..LoadOptions::default()
        },
        &crate::config::process_env,
        &text,
    )?;
    std::fs::create_dir_all(&home)
        .map_err(|e| Error::Other(format!("cannot create {}: {e}", home.display())))?;
    crate::config::private::write_private(&path, &text)
        .map_err(|e| Error::Other(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
    use crate::config::edit::{set, Value};
    platform(&c.platform)?;
    if c.token.is_some() == c.token_env.is_some() {
        return Err(Error::Usage(
            "give the bot token with --token-env VAR (the variable holding it) or --token \
             TOKEN (from @BotFather)"
                .into(),
        ));
    }
    let table = ["channels", "telegram"];
    let path = edit_config(profile, |mut text| {
        let (keep, drop) = if c.token.is_some() {
            ("token", "token_env")
        } else {
            ("token_env", "token")
        };
        let value = c.token.as_deref().or(c.token_env.as_deref()).unwrap_or("");
        text = set(&text, &table, drop, None);
        text = set(&text, &table, keep, Some(&Value::Str(value)));
        if let Some(url) = &c.base_url {
            text = set(&text, &table, "base_url", Some(&Value::Str(url)));
        }
        if let Some(o) = c.owner {
            // TOML integers; the editor writes unsigned ones, and user ids are positive.
            text = set(&text, &table, "owner", Some(&Value::Int(o.unsigned_abs())));
        }
        text
    })?;
    writeln!(
        std::io::stdout().lock(),
        "added [channels.telegram] to {} — `evolve channels test` checks the token; \
         restart `evolve serve` to start it",
        path.display()
    )?;
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    use crate::config::edit::set;
    platform(&c.platform)?;
    let table = ["channels", "telegram"];
    let path = edit_config(profile, |mut text| {
        for k in [
            "token",
            "token_env",
            "base_url",
            "owner",
            "enabled",
            "poll_secs",
        ] {
            text = set(&text, &table, k, None);
        }
        // The empty table header goes too.
        text.replace("[channels.telegram]\n", "")
    })?;
    writeln!(
        std::io::stdout().lock(),
        "removed [channels.telegram] from {} (pairings stay in the store)",
        path.display()
    )?;
    Ok(())
}

fn test(profile: &Option<String>) -> Result<(), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        ..LoadOptions::default()
    })?;
    let Some(t): Option<&TelegramConfig> = app.config.channels.telegram.as_ref() else {
        return Err(Error::Usage(
            "no channel is configured — `evolve channels add telegram --token-env VAR`".into(),
        ));
    };
    let Some(mut bot) = channels::telegram::Telegram::new(t) else {
        return Err(Error::Other(
            t.problem.clone().unwrap_or_else(|| "no token".into()),
        ));
    };
    match bot.connect() {
        Ok(who) => {
            writeln!(
                std::io::stdout().lock(),
                "telegram: ok, the bot is {who} at {}",
                crate::secret::display_url(&t.base_url)
            )?;
            Ok(())
        }
        Err(e) => Err(Error::Other(format!("telegram: {e}"))),
    }
}
