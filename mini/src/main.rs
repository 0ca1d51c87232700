//! `evolve` — a small, safe personal AI agent in one static binary.
//!
//! This crate is the I/O shell around `evolve-core`: it reads files, clocks, sockets and
//! the model, and hands everything the core needs to its pure functions.

mod cli;
mod error;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: cli::Evolve = argh::from_env();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evolve: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
