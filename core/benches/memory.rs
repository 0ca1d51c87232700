//! Benchmarks of `memory` (filled in with the module).
mod harness;

fn main() {
    let _ = harness::fmt;
}
