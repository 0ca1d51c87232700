//! What every command that touches the agent's data starts with: the configuration,
//! the logger, the tokenizer, and (on demand) the store.

use std::time::{SystemTime, UNIX_EPOCH};

use evolve_core::Timestamp;

use crate::config::{Config, LoadOptions};
use crate::error::Error;
use crate::store::Store;
use crate::text::ShellTokenizer;

/// The loaded configuration and the process-wide helpers.
pub struct App {
    /// The validated configuration.
    pub config: Config,
    /// jieba for CJK (lazy), the core's rules for the rest.
    pub tokenizer: ShellTokenizer,
}

impl App {
    /// Loads the configuration and installs the logger.
    pub fn load(opts: &LoadOptions) -> Result<App, Error> {
        let config = Config::load(opts)?;
        crate::logger::init(&config.log);
        let tokenizer = ShellTokenizer::new(config.text.dict_path.clone());
        Ok(App { config, tokenizer })
    }

    /// Opens (or creates) the store under `$EVOLVE_HOME`.
    pub fn open_store(&self) -> Result<Store, Error> {
        Ok(Store::open(&self.config.store_path(), &self.tokenizer)?)
    }
}

/// Now, in Unix seconds.
pub fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as Timestamp)
}
