//! `evolve config`.

use argh::FromArgs;

use crate::error::Error;

/// show and check the configuration
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "config")]
pub struct ConfigCmd {}

pub fn run(cmd: ConfigCmd) -> Result<(), Error> {
    let _ = cmd;
    Err(Error::Other("`evolve config` is not built yet".into()))
}
