//! Benchmarks of the core (plain harness; prints medians).
fn main() {}
