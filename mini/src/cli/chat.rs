//! `evolve chat`.

use argh::FromArgs;

use crate::error::Error;

/// talk with the agent in the terminal
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "chat")]
pub struct ChatCmd {}

pub fn run(cmd: ChatCmd) -> Result<(), Error> {
    let _ = cmd;
    Err(Error::Other("`evolve chat` is not built yet".into()))
}
