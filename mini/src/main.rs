//! `evolve` — a small, safe personal AI agent in one static binary.
//!
//! This crate is the I/O shell around `evolve-core`: it reads files, clocks, sockets and
//! the model, and hands everything the core needs to its pure functions.

// Skeleton of issue 3: modules are filled in by separate commits; until the CLI uses
// them all, unused items are expected.
#[allow(dead_code)]
mod agents;
mod cli;
#[allow(dead_code)]
mod config;
mod error;
#[allow(dead_code)]
mod llm;
#[allow(dead_code)]
mod logger;
#[allow(dead_code)]
mod skills;
#[allow(dead_code)]
mod store;
#[allow(dead_code)]
mod text;
#[allow(dead_code)]
mod tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(code) => return code,
    };
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evolve: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Parses the command line like `argh::from_env`, but with the contract's exit codes:
/// `--help` prints to stdout and exits 0; a usage error prints to stderr and exits 2.
fn parse_args() -> Result<cli::Evolve, ExitCode> {
    let strings: Vec<String> = std::env::args_os()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let Some((cmd, rest)) = strings.split_first() else {
        return Err(ExitCode::from(2));
    };
    let cmd = std::path::Path::new(cmd)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("evolve");
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    <cli::Evolve as argh::FromArgs>::from_args(&[cmd], &rest).map_err(|early| match early.status {
        Ok(()) => {
            print!("{}", early.output);
            ExitCode::SUCCESS
        }
        Err(()) => {
            eprint!("{}", early.output);
            ExitCode::from(2)
        }
    })
}
