//! Everything a turn needs, owned, so the background worker can share it (`Arc`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clock::Clock;
use crate::config::Config;
use crate::llm::{ChatModel, Client};
use crate::mcp::Hub;
use crate::skills::LiveCatalog;
use crate::store::Store;
use crate::text::ShellTokenizer;
use crate::tools::Builtins;

/// The process-wide parts of the agent.
pub struct Runtime {
    /// The configuration.
    pub config: Config,
    /// The store (shared with the runtime that replaces this one when `serve` switches
    /// profiles).
    pub store: Arc<Store>,
    /// The model server.
    pub model: Box<dyn ChatModel>,
    /// jieba + the core's rules.
    pub tokenizer: ShellTokenizer,
    /// Skills (reloaded when one is learned).
    pub skills: LiveCatalog,
    /// Built-in tools.
    pub tools: Builtins,
    /// The workspace, absolute and canonical (created on first start), so that the
    /// permission check and the file tools agree on what is inside it.
    pub workspace: PathBuf,
    /// MCP servers (started on first use). Which of their tools a turn offers is the
    /// turn's own snapshot ([`super::tool::TurnTools`]), never a process-wide slot.
    pub mcp: Hub,
    /// Where each event of a turn reads the time.
    pub clock: Clock,
    /// The built-in tools' schemas with their keywords (which tools a step offers).
    pub builtin_cards:
        std::sync::OnceLock<Vec<(crate::llm::ToolSpec, evolve_core::text::KeywordSet)>>,
}

impl Runtime {
    /// What the classification of MCP tools needs of the runtime.
    pub fn classifier(&self) -> super::mcp_levels::classify::Classifier<'_> {
        super::mcp_levels::classify::Classifier {
            store: &self.store,
            levels: &self.config.tools.levels,
            model: self.model.as_ref(),
        }
    }

    /// Assembles the runtime from a loaded configuration and an open store, with the
    /// configured OpenAI-compatible client.
    pub fn new(config: Config, store: Store, tokenizer: ShellTokenizer) -> Arc<Runtime> {
        Self::sharing(config, Arc::new(store), tokenizer)
    }

    /// The same with a store another runtime uses too.
    pub fn sharing(config: Config, store: Arc<Store>, tokenizer: ShellTokenizer) -> Arc<Runtime> {
        let model = Box::new(Client::new(config.model.clone()));
        Self::assemble(config, store, tokenizer, model)
    }

    /// The same with any model (tests).
    #[cfg(test)]
    pub fn with_model(
        config: Config,
        store: Store,
        tokenizer: ShellTokenizer,
        model: Box<dyn ChatModel>,
    ) -> Arc<Runtime> {
        Self::assemble(config, Arc::new(store), tokenizer, model)
    }

    fn assemble(
        config: Config,
        store: Arc<Store>,
        tokenizer: ShellTokenizer,
        model: Box<dyn ChatModel>,
    ) -> Arc<Runtime> {
        let skills = LiveCatalog::load(&config.skills_dir(), &tokenizer);
        let tools = Builtins::new(&config.tools);
        let workspace = prepare_workspace(&config.workspace);
        warn_without_confinement(&config, &workspace);
        let servers = crate::mcp::servers::load(&config, &store).unwrap_or_else(|e| {
            log::warn!("the MCP servers kept in the store cannot be read: {e}");
            config.mcp.servers.clone()
        });
        crate::mcp::hide_secret_variables(&servers);
        let mcp = Hub::new(servers)
            .confined_to(config.sandbox_scope(&workspace))
            .with_logins(store.clone());
        Arc::new(Runtime {
            mcp,
            clock: Clock::system(),
            builtin_cards: std::sync::OnceLock::new(),
            workspace,
            config,
            store,
            model,
            tokenizer,
            skills,
            tools,
        })
    }
}

/// The workspace directory, created if missing and canonicalised; when that fails the
/// configured path is kept and the file tools report the problem on use.
fn prepare_workspace(dir: &Path) -> PathBuf {
    match std::fs::create_dir_all(dir).and_then(|()| dir.canonicalize()) {
        Ok(p) => p,
        Err(e) => {
            log::warn!("the workspace {} cannot be used: {e}", dir.display());
            dir.to_path_buf()
        }
    }
}

/// Once per process: without kernel confinement the prefix rules that would lower a shell
/// command below L4 are ignored; the user hears it at start (and from `doctor`).
fn warn_without_confinement(config: &Config, workspace: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let status = crate::sandbox::status();
    if status.abi.is_some() {
        if let Some(problem) = crate::sandbox::workspace_problem(&config.sandbox_scope(workspace)) {
            ONCE.call_once(|| log::warn!("{problem}"));
        }
        return;
    }
    ONCE.call_once(|| {
        if evolve_core::permission::prefixes_need_kernel(&config.core.permission) {
            log::warn!(
                "{} — so the command_prefixes below L4 in {} are ignored",
                status.summary(),
                config.file.display()
            );
        } else {
            log::info!("{}", status.summary());
        }
    });
}
