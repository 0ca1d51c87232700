//! `evolve mcp …`: the MCP servers from the command line — add a program or an HTTP
//! endpoint, list, remove, import the `mcpServers` JSON other agents use, switch servers
//! and tools on and off, start them to list their tools with each tool's level, set
//! a tool's level, and log in to an HTTP server with OAuth (the browser part of it:
//! opening or printing the URL, waiting with Ctrl-C). `/mcp` in `chat` uses the same
//! functions.
//!
//! What it decides: how a server is spelled on the command line and which mistakes are
//! caught before anything is kept (a name, an URL, a `K=V`, a token variable that is not
//! set), and that servers defined in `config.toml` are changed by editing the file — the
//! messages say at which line. Which servers exist is `mcp::servers`'s; levels are
//! `agents::mcp_levels::classify`'s; connections are the `Hub`'s.
//!
//! One file per group of subcommands: `add` (`add`, `import`), `list` (`list`, `rm`,
//! `enable`, `disable`), `tools` (`tools`, `level`), `login` (`login`, `logout`).

mod add;
mod list;
mod login;
mod tools;

use argh::FromArgs;

use super::app::App;
use crate::agents::mcp_levels::user_level;
use crate::config::{Config, LoadOptions};
use crate::error::Error;
use crate::mcp::servers;
use crate::mcp_spec::ServerSpec;
use crate::store::Store;
use add::{add, import, Add, Import};
use list::{list, rm, toggle, Disable, Enable, List, Rm};
use login::{login, logout, Login, Logout};
use tools::{tools, LevelCmd, Tools};

pub(crate) use list::write_servers;
pub(crate) use tools::{chat_tools, set_level};

/// manage MCP servers and the permission levels of their tools
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "mcp",
    example = "{command_name} add files -- npx -y @modelcontextprotocol/server-filesystem ~/notes",
    example = "{command_name} add remote --url http://127.0.0.1:3001/mcp --bearer-env REMOTE_TOKEN",
    example = "{command_name} tools files",
    example = "{command_name} level files__write_file L4",
    example = "{command_name} import ~/.cursor/mcp.json",
    example = "{command_name} login remote",
    note = "Servers can also be defined in config.toml under [mcp.servers.NAME]; those are changed by editing the file. The model sees each tool as SERVER__TOOL."
)]
pub struct McpCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
// Parsed once per process; `add`'s options are what they are.
#[allow(clippy::large_enum_variant)]
enum Action {
    Add(Add),
    List(List),
    Rm(Rm),
    Tools(Tools),
    Level(LevelCmd),
    Import(Import),
    Enable(Enable),
    Disable(Disable),
    Login(Login),
    Logout(Logout),
}

pub fn run(cmd: McpCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::Add(c) => add(c, profile),
        Action::List(c) => list(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Tools(c) => tools(c, profile),
        Action::Level(c) => {
            let (app, store) = open(profile)?;
            let servers = servers::load(&app.config, &store)?;
            let said = set_level(&app.config, &store, &servers, &c.tool, &c.level)?;
            println!("{said}");
            Ok(())
        }
        Action::Import(c) => import(c, profile),
        Action::Enable(c) => toggle(profile, &c.target, true),
        Action::Disable(c) => toggle(profile, &c.target, false),
        Action::Login(c) => login(c, profile),
        Action::Logout(c) => logout(c, profile),
    }
}

/// The configuration of `--profile` and the store.
pub(super) fn open(profile: &Option<String>) -> Result<(App, Store), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        workspace: None,
    })?;
    let store = app.open_store()?;
    Ok((app, store))
}

/// Where a file server is defined, for messages: `line 12, [mcp.servers.fs]`.
pub(super) fn place_of(config: &Config, name: &str) -> String {
    match config.mcp.places.get(name) {
        Some(place) => format!("{} ({place})", config.file.display()),
        None => format!("{} ([mcp.servers.{name}])", config.file.display()),
    }
}

pub(super) fn usage(message: String) -> Error {
    Error::Usage(message)
}

pub(super) fn unknown_server(name: &str, servers: &[ServerSpec]) -> Error {
    let known: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    usage(user_level::unknown_server(name, &known))
}
