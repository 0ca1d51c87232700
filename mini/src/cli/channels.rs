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

use crate::channels::{self, sender, Code, Paired, Status, PLATFORMS};
use crate::cli::app::App;
use crate::config::LoadOptions;
use crate::error::Error;

/// the chat platforms serve answers on (Telegram, Feishu/Lark, DingTalk): list, pair, add,
/// rm, test
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

/// add a channel to config.toml: `add telegram --token-env VAR`, `add feishu --app-id
/// ID --secret-env VAR`
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "add")]
struct Add {
    /// the platform: telegram or feishu
    #[argh(positional)]
    platform: String,
    /// the bot token (written to config.toml, which is kept 0600)
    #[argh(option)]
    token: Option<String>,
    /// the environment variable holding the token instead
    #[argh(option)]
    token_env: Option<String>,
    /// the app's App ID (Feishu) or Client ID (DingTalk)
    #[argh(option)]
    app_id: Option<String>,
    /// the app's secret (Feishu; written to config.toml, kept 0600)
    #[argh(option)]
    secret: Option<String>,
    /// the environment variable holding the app's secret instead (Feishu)
    #[argh(option)]
    secret_env: Option<String>,
    /// the API address (Telegram: https://api.telegram.org; Feishu:
    /// https://open.feishu.cn, or https://open.larksuite.com for Lark)
    #[argh(option)]
    base_url: Option<String>,
    /// your own user id on the platform: paired from the start
    #[argh(option)]
    owner: Option<String>,
}

/// remove a channel's section from config.toml
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the platform: telegram or feishu
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

fn platform(name: &str) -> Result<&'static str, Error> {
    PLATFORMS
        .into_iter()
        .find(|p| p.eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            Error::Usage(format!(
                "{name}: unknown channel — this build has telegram, feishu and dingtalk"
            ))
        })
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let settings = app.config.channels.to_json();
    let codes: Vec<(String, Code)> = store.channel_scan("codes/")?;
    let mut out = std::io::stdout().lock();
    let mut all = serde_json::Map::new();
    let mut any = false;
    for name in PLATFORMS {
        let s = &settings[name];
        let status: Option<Status> = store.channel_get(&format!("{name}/status"))?;
        let paired: Vec<(String, Paired)> = store.channel_scan(&format!("{name}/paired/"))?;
        let waiting: Vec<&(String, Code)> =
            codes.iter().filter(|(_, c)| c.channel == name).collect();
        if c.json {
            all.insert(
                name.to_string(),
                json!({
                    "configured": !s.is_null(),
                    "settings": s,
                    "status": status,
                    "paired": paired.iter().map(|(k, p)| json!({
                        "id": k.rsplit('/').next(),
                        "kind": p.kind, "name": p.name, "at": p.at,
                    })).collect::<Vec<_>>(),
                    "owner": s["owner"],
                    "codes": waiting.iter().map(|(k, c)| json!({
                        "code": k.trim_start_matches("codes/"),
                        "kind": c.kind, "id": c.id, "name": c.name, "at": c.at,
                    })).collect::<Vec<_>>(),
                }),
            );
            continue;
        }
        if s.is_null() {
            continue;
        }
        any = true;
        let secret = s["token"].as_str().or(s["secret"].as_str());
        let secret = match (secret, s["problem"].as_str()) {
            (Some(m), _) => m.to_string(),
            (None, Some(p)) => format!("missing: {p}"),
            (None, None) => "missing".into(),
        };
        writeln!(
            out,
            "{name}  {}  {}  secret {secret}",
            if s["enabled"] == json!(false) {
                "disabled"
            } else {
                "enabled"
            },
            s["base_url"].as_str().unwrap_or("")
        )?;
        match status {
            Some(st) => writeln!(
                out,
                "  status: {} — {} (at {})",
                if st.ok { "ok" } else { "failing" },
                st.detail,
                crate::store::format_time(st.at)
            )?,
            None => writeln!(out, "  status: not started yet (`evolve serve` runs it)")?,
        }
        if !s["owner"].is_null() {
            writeln!(out, "  owner: {}", s["owner"])?;
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
        for (k, c) in waiting {
            writeln!(
                out,
                "  waiting: {} {} ({}) — `evolve channels pair {}`",
                c.kind,
                c.name,
                c.id,
                k.trim_start_matches("codes/")
            )?;
        }
    }
    if c.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&all).unwrap_or_default()
        )?;
    } else if !any {
        writeln!(
            out,
            "no channels — add Telegram with `evolve channels add telegram --token-env VAR`, \
             Feishu with `evolve channels add feishu --app-id ID --secret-env VAR`"
        )?;
    }
    Ok(())
}

fn pair(c: Pair, profile: &Option<String>) -> Result<(), Error> {
    let (app, store) = App::with_store(profile)?;
    let (code, paired) =
        channels::pair(&store, &c.code).map_err(|e| Error::Usage(e.to_string()))?;
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
    if let Some(mut bot) = sender(&app.config.channels, &code.channel) {
        let text = "You are paired: write to me any time. 配对成功，现在可以对话了。";
        if let Err(e) = bot.send(&code.id, text, &[]) {
            log::info!("{}: cannot tell the chat it is paired: {e}", code.channel);
        }
    }
    Ok(())
}

fn unpair(c: Unpair, profile: &Option<String>) -> Result<(), Error> {
    let (_app, store) = App::with_store(profile)?;
    let id = c.id.trim();
    for name in PLATFORMS {
        if store.channel_remove(&format!("{name}/paired/{id}"))? {
            writeln!(std::io::stdout().lock(), "unpaired {id} on {name}")?;
            return Ok(());
        }
    }
    Err(Error::Usage(format!(
        "{id} is not paired (`evolve channels list` shows who is)"
    )))
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
        Err(source) => return Err(Error::Read { path, source }),
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
    std::fs::create_dir_all(&home).map_err(|source| Error::Fs {
        doing: "create",
        path: home.clone(),
        source,
        hint: "",
    })?;
    crate::config::private::write_private(&path, &text).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

fn add(c: Add, profile: &Option<String>) -> Result<(), Error> {
    use crate::config::edit::{set, Value};
    let name = platform(&c.platform)?;
    // (the secret's key, its value, the `_env` key, its value)
    let (key, value, env_key, env) = match name {
        "telegram" => (
            "token",
            c.token.as_deref(),
            "token_env",
            c.token_env.as_deref(),
        ),
        _ => (
            "app_secret",
            c.secret.as_deref(),
            "app_secret_env",
            c.secret_env.as_deref(),
        ),
    };
    if value.is_some() == env.is_some() {
        return Err(Error::Usage(match name {
            "telegram" => "give the bot token with --token-env VAR (the variable holding it) \
                           or --token TOKEN (from @BotFather)"
                .into(),
            _ => "give the app's secret with --secret-env VAR (the variable holding it) or \
                  --secret SECRET (the app's credentials page)"
                .into(),
        }));
    }
    if name != "telegram" && c.app_id.is_none() {
        return Err(Error::Usage(
            "give the app's id with --app-id ID (the app's credentials page)".into(),
        ));
    }
    let table = ["channels", name];
    let path = edit_config(profile, |mut text| {
        let (keep, drop, v) = match (value, env) {
            (Some(v), _) => (key, env_key, v),
            (None, v) => (env_key, key, v.unwrap_or("")),
        };
        text = set(&text, &table, drop, None);
        text = set(&text, &table, keep, Some(&Value::Str(v)));
        if let Some(id) = &c.app_id {
            let k = if name == "dingtalk" {
                "client_id"
            } else {
                "app_id"
            };
            text = set(&text, &table, k, Some(&Value::Str(id)));
        }
        if let Some(url) = &c.base_url {
            text = set(&text, &table, "base_url", Some(&Value::Str(url)));
        }
        if let Some(o) = &c.owner {
            text = match (name, o.trim().parse::<i64>()) {
                // TOML integers; the editor writes unsigned ones, and user ids are positive.
                ("telegram", Ok(n)) => {
                    set(&text, &table, "owner", Some(&Value::Int(n.unsigned_abs())))
                }
                _ => set(&text, &table, "owner", Some(&Value::Str(o.trim()))),
            };
        }
        text
    })?;
    writeln!(
        std::io::stdout().lock(),
        "added [channels.{name}] to {} — `evolve channels test` checks it; restart `evolve \
         serve` to start it (the web UI's Channels page starts it on a running one at once)",
        path.display()
    )?;
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    use crate::config::edit::set;
    let name = platform(&c.platform)?;
    let table = ["channels", name];
    let path = edit_config(profile, |mut text| {
        for k in [
            "token",
            "token_env",
            "app_id",
            "app_secret",
            "app_secret_env",
            "client_id",
            "client_secret",
            "client_secret_env",
            "base_url",
            "owner",
            "enabled",
            "poll_secs",
        ] {
            text = set(&text, &table, k, None);
        }
        // The empty table header goes too.
        text.replace(&format!("[channels.{name}]\n"), "")
    })?;
    writeln!(
        std::io::stdout().lock(),
        "removed [channels.{name}] from {} (pairings stay in the store)",
        path.display()
    )?;
    Ok(())
}

fn test(profile: &Option<String>) -> Result<(), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        ..LoadOptions::default()
    })?;
    let c = &app.config.channels;
    let configured: Vec<(&str, Option<String>, String)> = [
        c.telegram
            .as_ref()
            .map(|t| ("telegram", t.problem.clone(), t.base_url.clone())),
        c.feishu
            .as_ref()
            .map(|f| ("feishu", f.problem.clone(), f.base_url.clone())),
        c.dingtalk
            .as_ref()
            .map(|d| ("dingtalk", d.problem.clone(), d.base_url.clone())),
    ]
    .into_iter()
    .flatten()
    .collect();
    if configured.is_empty() {
        return Err(Error::Usage(
            "no channel is configured — `evolve channels add telegram --token-env VAR`".into(),
        ));
    }
    let mut failed = Vec::new();
    for (name, problem, base) in configured {
        let Some(mut bot) = sender(&app.config.channels, name) else {
            failed.push(format!(
                "{name}: {}",
                problem.unwrap_or_else(|| "no secret".into())
            ));
            continue;
        };
        // Feishu's `connect` opens the long connection too; `test` only checks the
        // credentials, which its first step does.
        let checked = match name {
            "telegram" => bot.connect(),
            _ => bot.check(),
        };
        match checked {
            Ok(who) => writeln!(
                std::io::stdout().lock(),
                "{name}: ok, the bot is {who} at {}",
                crate::secret::display_url(&base)
            )?,
            Err(e) => failed.push(format!("{name}: {e}")),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::PartlyFailed(failed.join("\n")))
    }
}
