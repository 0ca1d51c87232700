//! The chat's side of pairing: a stranger is given a pairing code (the same one while it
//! waits), and who a message is from is decided ([`Who`], kept in `pairs.rs`).

use super::driver::Driver;
use super::pairs::{is_paired, new_code, Code, Who, CODE_LIFETIME_SECS};
use super::Message;
use crate::clock::now;

impl Driver {
    /// The code for a user or group, the same one while it waits.
    pub(super) fn code_for(&self, kind: &str, id: &str, name: &str) -> Option<String> {
        let store = self.store();
        let waiting: Vec<(String, Code)> = store.store.channel_scan("codes/").ok()?;
        if let Some((k, _)) = waiting.iter().find(|(_, c)| {
            c.channel == self.name && c.id == id && now() - c.at < CODE_LIFETIME_SECS
        }) {
            return k.strip_prefix("codes/").map(str::to_string);
        }
        let code = new_code()?;
        let c = Code {
            channel: self.name.to_string(),
            kind: kind.to_string(),
            id: id.to_string(),
            name: name.to_string(),
            at: now(),
        };
        store.store.channel_put(&format!("codes/{code}"), &c).ok()?;
        log::warn!(
            "{}: {} {name} ({id}) asks to talk to the agent — approve with `evolve channels pair {code}`",
            self.name,
            kind
        );
        Some(code)
    }

    pub(super) fn who(&self, m: &Message) -> Who {
        let store = self.store();
        let paired = |id: &str| {
            self.owner.as_deref() == Some(id)
                || is_paired(&store.store, self.name, id).unwrap_or_else(|e| {
                    log::warn!("{}: cannot read the paired users: {e}", self.name);
                    false
                })
        };
        if paired(&m.sender.id) {
            Who::Person
        } else if !m.direct && paired(&m.chat) {
            Who::World
        } else {
            Who::Stranger
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairing_codes_are_eight_unambiguous_characters() {
        let a = new_code().expect("a code");
        let b = new_code().expect("a code");
        assert_eq!(a.len(), 8);
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| !"01IO".contains(c) && c.is_ascii_alphanumeric()));
    }
}
