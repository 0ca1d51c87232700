//! The channels `evolve serve` runs, kept in step with the configuration: a channel
//! added or changed through the API, the Channels page or a profile switch starts (or
//! starts again) within a second, and one removed or disabled stops — no restart of
//! `serve`.
//!
//! One thread owns the channel threads. It compares each platform's settings in the
//! current configuration with those its channel was started with; on a difference it
//! asks the old driver to stop and starts the new one only once the old thread has
//! ended, so two drivers never read the same offset or inbox. A stopping driver takes
//! no new event; a turn already running finishes and is acknowledged, and an event not
//! yet handled stays unacknowledged for the next driver (the platform, or the inbox,
//! delivers it again): nothing is lost or answered twice.
//!
//! What it leaves to others: running a channel (`driver`), reading the configuration
//! (`crate::config`), writing it (`crate::web::channels`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{dingtalk, driver, feishu, key, set_status, telegram, Channel, PLATFORMS};
use crate::agents::Host;
use crate::config::{ChannelsConfig, DingtalkConfig, FeishuConfig, TelegramConfig};

/// How often the configuration is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How long a stopping server waits for its channels (one in a long poll notices the
/// stop when the poll ends; its turns are cancelled and the store saved all the same).
const STOP_WAIT: Duration = Duration::from_secs(3);

/// One platform's settings, as they start its channel.
#[derive(Debug, Clone, PartialEq)]
enum Settings {
    Telegram(TelegramConfig),
    Feishu(FeishuConfig),
    Dingtalk(DingtalkConfig),
}

/// The settings channel `name` should run with: `None` when it is not configured or
/// is disabled.
fn wanted(config: &ChannelsConfig, name: &str) -> Option<Settings> {
    match name {
        "telegram" => config
            .telegram
            .clone()
            .filter(|t| t.enabled)
            .map(Settings::Telegram),
        "feishu" => config
            .feishu
            .clone()
            .filter(|f| f.enabled)
            .map(Settings::Feishu),
        "dingtalk" => config
            .dingtalk
            .clone()
            .filter(|d| d.enabled)
            .map(Settings::Dingtalk),
        _ => None,
    }
}

/// A channel started with `settings`.
struct Running {
    settings: Settings,
    stop: Arc<AtomicBool>,
    /// `None`: it could not start (no secret); its status says why.
    thread: Option<JoinHandle<()>>,
}

/// Starts the thread that runs the configured channels until the server stops.
pub fn supervise(host: Arc<dyn Host>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("channels".into())
        .spawn(move || run(&host))
}

fn run(host: &Arc<dyn Host>) {
    let mut running: HashMap<&'static str, Running> = HashMap::new();
    // Drivers asked to stop whose threads have not ended yet.
    let mut retiring: HashMap<&'static str, Vec<JoinHandle<()>>> = HashMap::new();
    while !host.stopping() {
        let config = host.manager().runtime().config.channels.clone();
        for name in PLATFORMS {
            let want = wanted(&config, name);
            if running.get(name).map(|r| &r.settings) != want.as_ref() {
                if let Some(old) = running.remove(name) {
                    log::info!(
                        "{name}: {} — the channel stops",
                        if want.is_some() {
                            "its settings changed"
                        } else {
                            "removed or disabled in the configuration"
                        }
                    );
                    old.stop.store(true, Ordering::SeqCst);
                    retiring.entry(name).or_default().extend(old.thread);
                }
            }
            let old = retiring.entry(name).or_default();
            old.retain(|t| !t.is_finished());
            if let (None, true, Some(settings)) = (running.get(name), old.is_empty(), want) {
                running.insert(name, start(host, name, settings));
            }
        }
        let end = Instant::now() + LOOK_EVERY;
        while Instant::now() < end && !host.stopping() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let threads: Vec<JoinHandle<()>> = running
        .into_values()
        .flat_map(|r| {
            r.stop.store(true, Ordering::SeqCst);
            r.thread
        })
        .chain(retiring.into_values().flatten())
        .collect();
    let waited = Instant::now();
    while threads.iter().any(|t| !t.is_finished()) && waited.elapsed() < STOP_WAIT {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts channel `name` with `settings`; one that cannot start (no secret) says why in
/// the log and in its status.
fn start(host: &Arc<dyn Host>, name: &'static str, settings: Settings) -> Running {
    let rt = Arc::clone(host.manager().runtime());
    // What an earlier run of it left is not this one's health.
    if let Err(e) = rt.store.channel_remove(&key(name, "status")) {
        log::warn!("{name}: cannot clear the channel's status: {e}");
    }
    let (client, owner, problem) = match &settings {
        Settings::Telegram(t) => (
            telegram::Telegram::new(t).map(|c| Box::new(c) as Box<dyn Channel>),
            t.owner.map(|o| o.to_string()),
            t.problem.clone(),
        ),
        Settings::Feishu(f) => (
            feishu::Feishu::new(f, Some(Arc::clone(&rt.store)))
                .map(|c| Box::new(c) as Box<dyn Channel>),
            f.owner.clone(),
            f.problem.clone(),
        ),
        Settings::Dingtalk(d) => (
            dingtalk::Dingtalk::new(d, Some(Arc::clone(&rt.store)))
                .map(|c| Box::new(c) as Box<dyn Channel>),
            d.owner.clone(),
            d.problem.clone(),
        ),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let thread = match client {
        None => {
            let why = problem.unwrap_or_else(|| "no secret".into());
            log::warn!("the {name} channel is not started: {why}");
            set_status(&rt.store, name, false, &why);
            None
        }
        Some(client) => {
            let (host, flag) = (Arc::clone(host), Arc::clone(&stop));
            std::thread::Builder::new()
                .name(format!("channel-{name}"))
                .spawn(move || driver::Driver::new(host, client, owner, flag).run())
                .map_err(|e| log::warn!("cannot start the {name} channel's thread: {e}"))
                .ok()
        }
    };
    Running {
        settings,
        stop,
        thread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn telegram(token: &str, enabled: bool) -> ChannelsConfig {
        ChannelsConfig {
            telegram: Some(TelegramConfig {
                token: Some(Secret::new(token)),
                problem: None,
                base_url: "http://127.0.0.1:9".into(),
                owner: None,
                enabled,
                poll_secs: 1,
            }),
            ..ChannelsConfig::default()
        }
    }

    #[test]
    fn a_channel_is_wanted_while_configured_and_enabled_and_a_new_secret_is_a_change() {
        let on = telegram("a", true);
        assert!(wanted(&on, "telegram").is_some());
        assert_eq!(wanted(&telegram("a", false), "telegram"), None);
        assert_eq!(wanted(&ChannelsConfig::default(), "telegram"), None);
        assert_eq!(wanted(&on, "feishu"), None);
        assert_ne!(
            wanted(&on, "telegram"),
            wanted(&telegram("b", true), "telegram")
        );
        assert_eq!(
            wanted(&on, "telegram"),
            wanted(&telegram("a", true), "telegram")
        );
    }
}
