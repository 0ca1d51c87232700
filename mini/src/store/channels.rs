//! What the store keeps for chat channels: one table, `channels`, of JSON values under
//! `PLATFORM/…` keys (`telegram/paired/42`, `telegram/offset`). The table is made by its
//! first write; reading a store that has none reads nothing, so older stores need no
//! migration.
//!
//! Decides only the layout; what the values mean (who is paired, which update was
//! acknowledged) is `crate::channels`'.

use redb::{TableDefinition, TableError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::Fail;
use super::schema::{decode, get_json, put_json, Json, SESSIONS};
use super::{Session, Store, StoreError};

const CHANNELS: TableDefinition<&str, Json> = TableDefinition::new("channels");

impl Store {
    /// The value at `key`, `None` when there is none.
    pub fn channel_get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        self.read(|txn| match txn.open_table(CHANNELS) {
            Ok(table) => get_json(&table, "channels", key),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        })
    }

    /// Writes `value` at `key` (durably: it is on disk when this returns).
    pub fn channel_put<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(CHANNELS)?;
            put_json(&mut table, "channels", key, value)
        })
    }

    /// Writes every `(key, value)` in one durable commit: all of them are on disk or
    /// none (a process killed between two of them leaves neither).
    pub fn channel_put_all(&self, rows: &[(&str, serde_json::Value)]) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(CHANNELS)?;
            for (key, value) in rows {
                put_json(&mut table, "channels", key, value)?;
            }
            Ok(())
        })
    }

    /// Removes `key`; whether it was there.
    pub fn channel_remove(&self, key: &str) -> Result<bool, StoreError> {
        self.write(|txn| Ok(txn.open_table(CHANNELS)?.remove(key)?.is_some()))
    }

    /// Every `(key, value)` whose key starts with `prefix`, in key order.
    pub fn channel_scan<T: DeserializeOwned>(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, T)>, StoreError> {
        self.read(|txn| {
            let table = match txn.open_table(CHANNELS) {
                Ok(t) => t,
                Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            };
            let mut out = Vec::new();
            for row in table.range(prefix..)? {
                let (k, v) = row?;
                let key = k.value();
                if !key.starts_with(prefix) {
                    break;
                }
                out.push((key.to_string(), decode("channels", &key, v.value())?));
            }
            Ok(out)
        })
    }

    /// Marks a session as the one of a channel's chat (`telegram:42`), so listings name
    /// where it is talked in.
    pub fn set_session_channel(&self, id: &str, channel: &str) -> Result<(), StoreError> {
        self.write(|txn| {
            let mut table = txn.open_table(SESSIONS)?;
            let Some(mut session) = get_json::<&str, Session>(&table, "sessions", id)? else {
                return Err(Fail::NotFound(format!("no session {id}")));
            };
            session.channel = Some(channel.to_string());
            put_json(&mut table, "sessions", id, &session)
        })
    }
}
