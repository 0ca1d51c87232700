//! `evolve doctor`.

use argh::FromArgs;

use crate::error::Error;

/// check that the model server answers, lists models, completes and calls tools
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "doctor")]
pub struct DoctorCmd {}

pub fn run(cmd: DoctorCmd) -> Result<(), Error> {
    let _ = cmd;
    Err(Error::Other("`evolve doctor` is not built yet".into()))
}
