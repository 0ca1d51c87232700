//! `evolve doctor`: is the configured model server usable by the agent?
//!
//! Runs the checks of `llm::diagnose` (the server answers, lists the models, completes
//! with each, calls a tool), each printed as one line with ✓ or ✗ and, when it fails,
//! what to do. When the server cannot be reached the rest is skipped.
//!
//! The configuration comes first: a file `evolve config check` rejects is not used to
//! reach a server (its settings are not the ones the user will run with). Doctor then
//! exits 2 with the same message as every other command; with `--json` it also prints a
//! report whose only check, `config`, failed with that message, so a script reading the
//! JSON learns why.
//!
//! A configured chat channel is one more check: its token is there and the platform
//! takes it (`telegram`: the Bot API's `getMe`).
//!
//! Last, what the kernel enforces on what tools run (Landlock, or why there is none and
//! what that changes): a warning, not a failed check; and the resource limits every
//! command gets (`[limits]`).
//!
//! Exit codes: 0 every check passed, 2 the configuration is rejected, 3 the server
//! cannot be reached, 1 anything else.

use argh::FromArgs;
use serde_json::json;

use crate::cli::app::App;
use crate::config::LoadOptions;
use crate::error::Error;
use crate::llm::diagnose::{diagnose, Check};
use crate::llm::Client;

/// check that the model server answers, lists models, completes and calls tools
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "doctor")]
pub struct DoctorCmd {
    /// print the checks as JSON
    #[argh(switch)]
    json: bool,
}

pub fn run(cmd: DoctorCmd, profile: &Option<String>) -> Result<(), Error> {
    let app = match App::load(&LoadOptions {
        profile: profile.clone(),
        ..LoadOptions::default()
    }) {
        Ok(app) => app,
        Err(e) => {
            if cmd.json {
                let check = Check::fail(
                    "config",
                    e.to_string(),
                    "fix config.toml, then run `evolve config check`",
                );
                let doc = json!({
                    "profile": profile,
                    "ok": false,
                    "checks": [{"check": check.name, "ok": check.ok, "detail": check.detail, "hint": check.hint}],
                });
                println!("{doc:#}");
            }
            return Err(e);
        }
    };
    let mut model = app.config.model.clone();
    // A diagnosis should be quick: one retry is enough to tell a hiccup from a failure.
    model.max_retries = model.max_retries.min(1);
    let base_url = crate::secret::display_url(&model.base_url);
    let client = Client::new(model);
    let mut report = diagnose(&client);
    if let Some(t) = &app.config.channels.telegram {
        report.checks.push(telegram_check(t));
    }
    for name in ["feishu", "dingtalk"] {
        if !app.config.channels.to_json()[name].is_null() {
            report.checks.push(app_check(&app.config.channels, name));
        }
    }
    let confinement = crate::sandbox::status();
    if cmd.json {
        let checks: Vec<_> = report
            .checks
            .iter()
            .map(|c| json!({"check": c.name, "ok": c.ok, "detail": c.detail, "hint": c.hint}))
            .collect();
        let doc = json!({
            "profile": app.config.profile,
            "base_url": base_url,
            "ok": report.unreachable.is_none() && report.checks.iter().all(|c| c.ok),
            "checks": checks,
            "confinement": confinement.to_json(),
            "confinement_summary": confinement.summary(),
            "limits": crate::sandbox::limits_summary(&app.config.limits),
        });
        println!("{doc:#}");
    } else {
        println!(
            "evolve doctor — profile {}, {}",
            app.config.profile, base_url
        );
        print!("{}", render(&report.checks));
        println!("{}", confinement_line(confinement, &app.config));
        println!(
            "✓ limits       {}",
            crate::sandbox::limits_summary(&app.config.limits)
        );
    }
    if let Some(e) = report.unreachable {
        return Err(Error::from(e));
    }
    let failed = report.checks.iter().filter(|c| !c.ok).count();
    if failed > 0 {
        return Err(Error::PartlyFailed(format!(
            "{failed} of {} checks failed",
            report.checks.len()
        )));
    }
    Ok(())
}

/// `[channels.telegram]`: the token is there and the Bot API takes it (`getMe`).
fn telegram_check(t: &crate::config::TelegramConfig) -> Check {
    use crate::channels::Channel as _;
    let Some(mut bot) = crate::channels::telegram::Telegram::new(t) else {
        return Check::fail(
            "telegram",
            t.problem.clone().unwrap_or_else(|| "no token".into()),
            "set [channels.telegram] token or token_env (`evolve channels add telegram`)",
        );
    };
    match bot.connect() {
        Ok(who) => Check::pass(
            "telegram",
            format!(
                "the bot is {who} at {}{}",
                crate::secret::display_url(&t.base_url),
                if t.enabled {
                    ""
                } else {
                    " (enabled = false: not started)"
                }
            ),
        ),
        Err(e) => Check::fail(
            "telegram",
            e.to_string(),
            "check the token with @BotFather and [channels.telegram] base_url",
        ),
    }
}

/// `[channels.feishu]` / `[channels.dingtalk]`: the secret is there and the platform
/// takes the app's credentials (its access token).
fn app_check(config: &crate::config::ChannelsConfig, name: &'static str) -> Check {
    let settings = config.to_json();
    let Some(mut ch) = crate::channels::sender(config, name) else {
        return Check::fail(
            name,
            settings[name]["problem"]
                .as_str()
                .unwrap_or("no secret")
                .to_string(),
            format!("set the app's secret in [channels.{name}] (`evolve channels add {name}`)"),
        );
    };
    match ch.check() {
        Ok(who) => Check::pass(
            name,
            format!(
                "{who} at {}",
                settings[name]["base_url"].as_str().unwrap_or("")
            ),
        ),
        Err(e) => Check::fail(
            name,
            e.to_string(),
            format!("check [channels.{name}]'s app id, secret and base_url"),
        ),
    }
}

/// What the kernel does to what tools run: `✓ confinement  Landlock ABI 7: …`, or a
/// warning (`!`, not a failed check: Evolve still works, every shell command asks
/// twice) naming the prefix rules that have no effect.
fn confinement_line(status: &crate::sandbox::Status, config: &crate::config::Config) -> String {
    if status.abi.is_some() {
        let mut line = format!("✓ confinement  {}", status.summary());
        if let Some(problem) =
            crate::sandbox::workspace_problem(&config.sandbox_scope(&config.workspace))
        {
            line = format!("! confinement  {} — but {problem}", status.summary());
        }
        return line;
    }
    let mut line = format!("! confinement  {}", status.summary());
    let ignored: Vec<&str> = config
        .core
        .permission
        .command_prefixes
        .iter()
        .filter(|(_, l)| *l < evolve_core::permission::Level::L4)
        .map(|(p, _)| p.as_str())
        .collect();
    if !ignored.is_empty() {
        line.push_str(&format!(" — ignored prefixes: {}", ignored.join(", ")));
    }
    line
}

/// The lines a person reads: `✓ name  detail`, or `✗ name  detail — hint`.
fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        let mark = if c.ok { '✓' } else { '✗' };
        out.push_str(&format!("{mark} {:width$}  {}", c.name, c.detail));
        if !c.hint.is_empty() {
            out.push_str(&format!(" — {}", c.hint));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_aligned_with_marks_and_hints() {
        let checks = [
            Check::pass("a", "fine".into()),
            Check::fail("longer", "broken".into(), "fix it"),
        ];
        assert_eq!(
            render(&checks),
            "✓ a       fine\n✗ longer  broken — fix it\n"
        );
    }
}
