//! Test support for the tools: temporary directories and a [`ToolContext`] over a
//! default configuration and a fresh store.

use std::path::{Path, PathBuf};

use super::{Builtins, ToolContext, ToolOutput};
use crate::cancel::Cancel;
use crate::config::{Config, ToolsConfig};
use crate::skills::Catalog;
use crate::store::Store;
use crate::text::ShellTokenizer;

pub use crate::testing::TempDir;

/// The built-in defaults of the tool limits (as documented on [`ToolsConfig`]).
pub fn tools_config() -> ToolsConfig {
    ToolsConfig::default()
}

/// A whole configuration with `home` and its `workspace` folder: the defaults, a model
/// nobody listens on, no retries, no learning.
pub fn config(home: &Path, tools: ToolsConfig) -> Config {
    let mut c = Config::defaults(home.to_path_buf());
    c.model.base_url = "http://127.0.0.1:9/v1".into();
    c.model.base_url_is_default = false;
    c.model.main = "test".into();
    c.model.cheap = "test".into();
    c.model.max_retries = 0;
    c.model.stream = false;
    c.agent.learn = false;
    c.tools = tools;
    c
}

/// Everything a tool call needs, in a temporary home with a `workspace` folder.
pub struct Harness {
    pub tmp: TempDir,
    pub workspace: PathBuf,
    pub config: Config,
    pub store: Store,
    pub tokenizer: ShellTokenizer,
    pub skills: Catalog,
    pub cancel: Cancel,
    pub builtins: Builtins,
    pub now: i64,
    pub session: String,
    /// The level calls run at (a shell command is confined by it): L3, the workspace.
    pub level: evolve_core::permission::Level,
}

impl Harness {
    /// Default limits.
    pub fn new() -> Harness {
        Harness::with_tools(tools_config())
    }

    /// Given limits.
    pub fn with_tools(tools: ToolsConfig) -> Harness {
        let tmp = TempDir::new("harness");
        let workspace = tmp.path().join("workspace");
        std::fs::create_dir_all(&workspace).expect("workspace");
        let workspace = std::fs::canonicalize(&workspace).expect("canonical");
        let config = config(tmp.path(), tools.clone());
        let store = Store::open(
            &tmp.path().join("evolve.redb"),
            &evolve_core::text::FallbackTokenizer,
        )
        .expect("store");
        let now = 1_714_538_096;
        let session = store.create_session("test", now).expect("session").id;
        Harness {
            skills: Catalog::default(),
            builtins: Builtins::new(&tools),
            tokenizer: ShellTokenizer::new(None),
            cancel: Cancel::new(),
            now,
            session,
            level: evolve_core::permission::Level::L3,
            tmp,
            workspace,
            config,
            store,
        }
    }

    /// The context of a call.
    pub fn ctx(&self) -> ToolContext<'_> {
        ToolContext {
            workspace: &self.workspace,
            store: &self.store,
            session: &self.session,
            now: self.now,
            config: &self.config,
            tokenizer: &self.tokenizer,
            skills: &self.skills,
            cancel: &self.cancel,
            level: self.level,
            offline: false,
            world: false,
        }
    }

    /// Runs a tool with JSON arguments.
    pub fn run(&self, tool: &str, args: &str) -> ToolOutput {
        self.builtins.run(tool, args, &self.ctx())
    }

    /// Runs a tool with arguments built by `serde_json::json!`.
    pub fn call(&self, tool: &str, args: serde_json::Value) -> ToolOutput {
        self.run(tool, &args.to_string())
    }

    /// A file in the workspace, written (parents created).
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.workspace.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent");
        }
        std::fs::write(path, content).expect("write");
    }

    /// A file in the workspace, read.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.workspace.join(rel)).expect("read")
    }
}
