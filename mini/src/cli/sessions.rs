//! `evolve sessions`.

use argh::FromArgs;

use crate::error::Error;

/// list, show, remove and export conversations
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "sessions")]
pub struct SessionsCmd {}

pub fn run(cmd: SessionsCmd) -> Result<(), Error> {
    let _ = cmd;
    Err(Error::Other("`evolve sessions` is not built yet".into()))
}
