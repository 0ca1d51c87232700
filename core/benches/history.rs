//! Benchmarks of `history` (filled in with the module).
mod harness;

fn main() {
    let _ = harness::fmt;
}
