//! Who may talk, as the store keeps it: the paired users and groups, the pairing codes
//! waiting for the owner, and who a message is from ([`Who`]). A code is 8 characters
//! without look-alikes, good for a day; `evolve channels pair CODE` (or the UI) approves
//! it. The chat's side of pairing is in `pairing.rs`.

use serde::{Deserialize, Serialize};

use super::key;
use crate::clock::now;
use crate::store::{Store, StoreError};

/// A pairing code is good for a day.
pub(super) const CODE_LIFETIME_SECS: i64 = 24 * 3600;

/// A user or group allowed to talk, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// `user` or `group`.
    pub kind: String,
    pub name: String,
    pub at: i64,
}

/// A pairing code waiting for the owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Code {
    pub channel: String,
    pub kind: String,
    pub id: String,
    pub name: String,
    pub at: i64,
}

/// Whether `id` (a user or a group) is paired on `channel`.
pub fn is_paired(store: &Store, channel: &str, id: &str) -> Result<bool, StoreError> {
    Ok(store
        .channel_get::<Paired>(&key(channel, &format!("paired/{id}")))?
        .is_some())
}

/// Why a pairing code was not approved.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error(
        "no pairing code {0} is waiting — the code is the one the bot sent to the person who \
         wants to talk to it (`evolve channels list` shows the waiting ones)"
    )]
    Unknown(String),
    #[error(
        "the pairing code {0} has expired (codes are good for a day) — ask them to write to \
         the bot again for a new one"
    )]
    Expired(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Approves the pairing code `code` (any case): its user or group may talk from now on.
/// Returns the channel and what was paired.
pub fn pair(store: &Store, code: &str) -> Result<(Code, Paired), PairError> {
    let code = code.trim().to_ascii_uppercase();
    let found = store.channel_get::<Code>(&format!("codes/{code}"))?;
    let Some(c) = found else {
        return Err(PairError::Unknown(code));
    };
    if now() - c.at > CODE_LIFETIME_SECS {
        let _ = store.channel_remove(&format!("codes/{code}"));
        return Err(PairError::Expired(code));
    }
    let paired = Paired {
        kind: c.kind.clone(),
        name: c.name.clone(),
        at: now(),
    };
    store.channel_put(&key(&c.channel, &format!("paired/{}", c.id)), &paired)?;
    let _ = store.channel_remove(&format!("codes/{code}"));
    Ok((c, paired))
}

/// Who a message is from, for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Who {
    /// The person: a paired user, or the owner.
    Person,
    /// A member of a paired group who is not paired: untrusted.
    World,
    /// Not paired: gets a pairing code.
    Stranger,
}

/// A fresh pairing code: 8 characters without look-alikes (no 0/O, 1/I).
pub(super) fn new_code() -> Option<String> {
    use ring::rand::SecureRandom;
    const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut bytes = [0u8; 8];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(
        bytes
            .iter()
            .map(|b| ALPHABET[usize::from(b % 32)] as char)
            .collect(),
    )
}
