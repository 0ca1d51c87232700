//! `evolve serve`: the browser UI and the API on 127.0.0.1:8080. Every request but the
//! login page carries the token of `$EVOLVE_HOME/serve.token` (created on first use,
//! 0600), whatever the bind; the start line prints the link that signs a browser in.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use argh::FromArgs;

use super::app::App;
use crate::agents::{Manager, Runtime};
use crate::config::LoadOptions;
use crate::error::Error;
use crate::web::{self, auth};

/// serve the browser UI and the OpenAI-compatible API (127.0.0.1:8080 by default)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "serve")]
pub struct ServeCmd {
    /// the address to listen on (default 127.0.0.1; the token is needed on any)
    #[argh(option, default = "String::from(\"127.0.0.1\")")]
    host: String,
    /// the port (default 8080; 0 picks a free one)
    #[argh(option, default = "8080")]
    port: u16,
    /// file tools work inside this directory (default $EVOLVE_HOME/workspace)
    #[argh(option)]
    workspace: Option<PathBuf>,
}

pub fn run(cmd: ServeCmd, profile: &Option<String>) -> Result<(), Error> {
    let host = if cmd.host == "localhost" {
        "127.0.0.1"
    } else {
        cmd.host.as_str()
    };
    let ip: IpAddr = host.trim_matches(['[', ']']).parse().map_err(|_| {
        Error::Usage(format!(
            "--host {}: not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)",
            cmd.host
        ))
    })?;
    let loaded = crate::config::Config::load_from(
        &LoadOptions {
            profile: profile.clone(),
            workspace: cmd.workspace.clone(),
        },
        &crate::config::process_env,
    )?;
    let profiles = loaded.profiles.clone();
    // Read before the key variables are removed from the environment (App::from_config).
    let env: Vec<(String, std::ffi::OsString)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| k.starts_with("OPENAI_") || k.starts_with("EVOLVE_"))
        .collect();
    let app = App::from_config(loaded.config);
    // The token is wanted whatever the bind: another account of this machine reaches a
    // loopback port too.
    let token = auth::load_or_create_token(&app.config.home).map_err(|source| Error::Write {
        path: auth::token_path(&app.config.home),
        source,
    })?;
    let hosts = if ip.is_loopback() {
        auth::Hosts::Loopback
    } else {
        auth::Hosts::Any
    };
    let auth = auth::Auth::new(token, hosts);
    // The server holds the store for as long as it runs (`evolve ask` talks to it; other
    // commands borrow the file through `POST /v1/store/lend`).
    let store = app.open_store_held()?;
    let App { config, tokenizer } = app;
    let manager = Manager::new(Runtime::new(config, store, tokenizer));
    web::run(
        manager,
        auth,
        web::Options {
            addr: SocketAddr::new(ip, cmd.port),
            limits: web::http::Limits::default(),
            profiles,
            env,
            workspace: cmd.workspace.clone(),
        },
    )
}
