//! The slash commands of `evolve chat` (`/memory`, `/skills`, `/session`, `/reflect`,
//! `/permissions`, `/mcp`, `/help`, `/quit`): each reads or changes the runtime and prints
//! its answer; the conversation itself is [`super`]'s.

use std::time::Duration;

use argh::FromArgs;
use evolve_core::permission::{Level, Revoke};
use evolve_core::text::{one_line, KeywordSet};

use super::HELP;
use crate::agents::{Manager, Runtime};
use crate::cli::app::now;
use crate::cli::interrupt;
use crate::cli::printable;
use crate::error::Error;

/// Runs a slash command; `Ok(false)` ends the chat.
pub(super) fn slash(
    command: &str,
    manager: &Manager,
    session: &mut Option<String>,
) -> Result<bool, Error> {
    let rt = manager.runtime();
    let (name, rest) = command.split_once(' ').unwrap_or((command, ""));
    let rest = rest.trim();
    match name {
        "quit" | "exit" | "q" => return Ok(false),
        "help" | "h" | "?" => {
            println!("{HELP}");
            println!("The agents of each turn:");
            for agent in crate::agents::all(manager) {
                println!(
                    "  {:<9} {:<11} {}",
                    agent.id(),
                    agent.name(),
                    agent.description()
                );
            }
        }
        "memory" | "memories" => {
            if rest.is_empty() {
                let mut shown = 0;
                rt.store.with_memories(|all| {
                    for m in all.iter().rev().take(20) {
                        println!(
                            "  #{} [{}] {}",
                            m.id,
                            m.priority.name(),
                            printable(&one_line(&m.content, 100), false)
                        );
                        shown += 1;
                    }
                });
                if shown == 0 {
                    println!("  no memories yet — tell me something worth remembering");
                }
            } else {
                let keywords = KeywordSet::of(&rt.tokenizer, rest);
                let query = evolve_core::memory::RecallQuery::new(&keywords);
                rt.store.with_indexed_memories(|all, index| {
                    let cfg = &rt.config.core.memory;
                    let sel = evolve_core::memory::select_query(
                        all,
                        Some(index),
                        &query,
                        None,
                        now(),
                        cfg,
                    );
                    if sel.chosen.is_empty() {
                        println!("  no memory matches");
                    }
                    for c in &sel.chosen {
                        println!(
                            "  #{} {:.3} {:?} {}",
                            c.id,
                            c.score,
                            c.reason,
                            printable(&one_line(&all[c.index].content, 100), false)
                        );
                    }
                });
            }
        }
        "skills" => {
            let catalog = rt.skills.current();
            let all = catalog.all();
            if all.is_empty() {
                println!("  no skills installed (add $EVOLVE_HOME/skills/NAME/SKILL.md)");
            }
            for s in all {
                println!(
                    "  {} — {} ({})",
                    s.summary.name,
                    one_line(&s.summary.description, 100),
                    s.origin
                );
            }
        }
        "session" | "sessions" => {
            let (sub, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            match sub {
                "new" => {
                    *session = None;
                    println!("  a new session starts with your next message");
                }
                "list" | "" => {
                    for s in rt.store.sessions()?.iter().take(20) {
                        let mark = if session.as_deref() == Some(s.id.as_str()) {
                            "*"
                        } else {
                            " "
                        };
                        println!(
                            "  {mark} {} {:>3} turns  {}",
                            s.id,
                            s.turns,
                            printable(&one_line(&s.title, 60), false)
                        );
                    }
                }
                "switch" => {
                    let id = arg.trim();
                    let s = rt.store.session(id)?;
                    println!(
                        "  switched to {} ({} turns): {}",
                        s.id,
                        s.turns,
                        printable(&s.title, false)
                    );
                    *session = Some(s.id);
                }
                other => println!("  unknown: /session {other} — use new, list or switch ID"),
            }
        }
        "reflect" => match session.as_deref() {
            None => println!("  nothing to reflect on yet in this session"),
            Some(id) => {
                manager.flush(Duration::from_secs(30));
                let (lesson, problems) = manager.reflect_now(id, &interrupt::CANCEL);
                match lesson {
                    Some(l) => println!("  lesson saved: {}", printable(&l, false)),
                    None if problems.is_empty() => println!("  no lesson this time"),
                    None => println!("  reflection failed: {}", problems.join("; ")),
                }
            }
        },
        "permissions" | "perms" if !rest.is_empty() => {
            permissions_command(rt, session.as_deref(), rest)?;
        }
        "permissions" | "perms" => {
            println!("  level  meaning                                        in chat");
            for level in Level::ALL {
                let action = match level {
                    Level::L0 | Level::L1 | Level::L2 => "runs",
                    Level::L3 => "asks once",
                    Level::L4 => "asks twice",
                    Level::L5 => "refused, never runs",
                };
                println!("  {level}     {:<46} {action}", level.meaning());
            }
            println!(
                "  shell: {} (config permission.shell_level)",
                rt.config.core.permission.shell_level
            );
            let recent = rt.store.audit_log(5)?;
            if !recent.is_empty() {
                println!("  last tool decisions:");
                for e in recent {
                    let answer = e
                        .answer
                        .map(|a| format!(", answered {a:?}"))
                        .unwrap_or_default();
                    println!("    {} {} → {:?}{answer}", e.tool, e.level, e.decision);
                }
            }
            match session.as_deref() {
                Some(id) => {
                    let grants = rt.store.grants(id)?;
                    if grants.is_empty() {
                        println!("  no \"always\" grants in this session");
                    } else {
                        println!(
                            "  always allowed in this session \
                             (/permissions revoke N|LABEL|all withdraws):"
                        );
                        for (n, g) in grants.iter().enumerate() {
                            println!(
                                "    {}. {} ({})",
                                n + 1,
                                printable(&g.label(), false),
                                g.level
                            );
                        }
                    }
                }
                None => println!("  no \"always\" grants yet: this session has no turn"),
            }
        }
        "mcp" => mcp_command(rt, rest)?,
        other => println!("  unknown command /{other} — /help lists them"),
    }
    Ok(true)
}

/// `/permissions revoke N|LABEL|all`: withdraws "always" grants of this session and
/// says which.
pub(super) fn permissions_command(
    rt: &Runtime,
    session: Option<&str>,
    rest: &str,
) -> Result<(), Error> {
    let (sub, arg) = rest.split_once(' ').unwrap_or((rest, ""));
    let arg = arg.trim();
    if sub != "revoke" || arg.is_empty() {
        println!("  use /permissions, or /permissions revoke N|LABEL|all");
        return Ok(());
    }
    let Some(id) = session else {
        println!("  nothing to revoke: this session has no grants");
        return Ok(());
    };
    let what = match arg {
        "all" => Revoke::All,
        n if n.bytes().all(|b| b.is_ascii_digit()) => Revoke::Number(n.parse().unwrap_or(0)),
        label => Revoke::Label(label),
    };
    let gone = rt.store.revoke_grants(id, what)?;
    if gone.is_empty() && what == Revoke::All {
        println!("  nothing to revoke: this session has no grants");
    } else if gone.is_empty() {
        println!(
            "  no grant {} in this session — /permissions lists them",
            printable(arg, false)
        );
    }
    for g in &gone {
        println!(
            "  revoked: {} (asked again next time)",
            printable(&g.label(), false)
        );
    }
    Ok(())
}

/// `/mcp`, `/mcp tools [NAME]`, `/mcp level TOOL LEVEL`, `/mcp add|rm|import|enable|
/// disable …`: the same as `evolve mcp …`.
pub(super) fn mcp_command(rt: &Runtime, rest: &str) -> Result<(), Error> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    match words.as_slice() {
        [] | ["list"] => {
            let connected = rt.mcp.connected();
            let mut out = std::io::stdout().lock();
            crate::cli::mcp::write_servers(
                &mut out,
                &rt.config,
                &rt.mcp.specs(),
                Some(&connected),
                Some(&rt.store),
            )?;
        }
        ["tools"] => crate::cli::mcp::chat_tools(rt, None, &interrupt::CANCEL)?,
        ["tools", name] => crate::cli::mcp::chat_tools(rt, Some(name), &interrupt::CANCEL)?,
        ["level", tool, level] => {
            let said =
                crate::cli::mcp::set_level(&rt.config, &rt.store, &rt.mcp.specs(), tool, level)?;
            println!("  {said}");
        }
        [action, ..] if ["add", "rm", "import", "enable", "disable"].contains(action) => {
            manage_mcp(rt, &words)?
        }
        _ => println!(
            "  usage: /mcp, /mcp tools [NAME], /mcp level SERVER__TOOL L0-L5|auto, \
             /mcp add|rm|import|enable|disable … (as `evolve mcp`)"
        ),
    }
    Ok(())
}

/// `/mcp add|rm|import|enable|disable …`: `evolve mcp …` run from chat, then the
/// servers of this chat reloaded (new ones start on first use, removed and changed
/// ones stop).
pub(super) fn manage_mcp(rt: &Runtime, words: &[&str]) -> Result<(), Error> {
    let cmd = match crate::cli::mcp::McpCmd::from_args(&["/mcp"], words) {
        Ok(cmd) => cmd,
        Err(early) => {
            println!("{}", early.output.trim_end());
            return Ok(());
        }
    };
    // The command opens the store itself: this chat lets go of it first.
    rt.store.release();
    // It works on this chat's profile.
    if let Err(e) = crate::cli::mcp::run(cmd, &Some(rt.config.profile.clone())) {
        println!("  {e}");
        return Ok(());
    }
    let servers = crate::mcp::servers::load(&rt.config, &rt.store)?;
    crate::mcp::hide_secret_variables(&servers);
    rt.mcp.reload(servers);
    Ok(())
}
