//! A tiny benchmark harness shared by the bench targets: runs a closure repeatedly,
//! prints the median and spread. Plain `std::time::Instant`; no criterion, so
//! `cargo bench --no-run` stays cheap in CI. Figures are printed, never asserted.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs `f` for about `budget` (at least 5 samples, at most 1 000) and prints
/// `name: median … (min …, max …, n samples)`. Returns the median.
#[allow(dead_code)]
pub fn bench<R>(name: &str, budget: Duration, f: impl FnMut() -> R) -> Duration {
    bench_samples(name, budget, f).0
}

/// [`bench`], also returning the number of samples taken.
#[allow(dead_code)]
pub fn bench_samples<R>(
    name: &str,
    budget: Duration,
    mut f: impl FnMut() -> R,
) -> (Duration, usize) {
    black_box(f()); // warm-up
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed() < budget && samples.len() < 1000) {
        let t = Instant::now();
        black_box(f());
        samples.push(t.elapsed());
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    println!(
        "{name:<48} median {:>12}   (min {}, max {}, {} samples)",
        fmt(median),
        fmt(samples[0]),
        fmt(samples[samples.len() - 1]),
        samples.len()
    );
    (median, samples.len())
}

/// Human-readable duration: ns, µs or ms.
pub fn fmt(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns < 10_000 {
        format!("{ns} ns")
    } else if ns < 10_000_000 {
        format!("{:.2} µs", ns as f64 / 1e3)
    } else {
        format!("{:.2} ms", ns as f64 / 1e6)
    }
}

/// A deterministic pseudo-random generator (xorshift64*) for building inputs.
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    /// Next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}
