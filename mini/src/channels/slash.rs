//! A chat message read as a command: `/new`, `/stop`, `/sessions`, `/permissions`,
//! `/memory`, `/help` (and `/start`), with or without the bot's name (`/new@EvolveBot`).

/// The pieces of a `/command@bot args` message.
pub(super) fn command(text: &str) -> Option<(String, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (head, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let name = head.split('@').next().unwrap_or("").to_ascii_lowercase();
    let known = [
        "new",
        "stop",
        "sessions",
        "help",
        "start",
        "permissions",
        "memory",
    ];
    known.contains(&name.as_str()).then(|| (name, args.trim()))
}
