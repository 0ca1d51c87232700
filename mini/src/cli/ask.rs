//! `evolve ask`.

use argh::FromArgs;

use crate::error::Error;

/// ask one question headlessly: the answer on stdout, for scripts and cron
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "ask")]
pub struct AskCmd {}

pub fn run(cmd: AskCmd) -> Result<(), Error> {
    let _ = cmd;
    Err(Error::Other("`evolve ask` is not built yet".into()))
}
