//! The `evolve` binary: the command is the library's (`lib.rs`).

fn main() -> std::process::ExitCode {
    evolve_mini::run()
}
