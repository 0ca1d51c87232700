//! Logs to stderr (never stdout: the answer goes there), filtered by `EVOLVE_LOG`
//! (`error`, `warn` (default), `info`, `debug`, `trace`, `off`). Libraries log only
//! their warnings and errors, whatever the level.

use log::{LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    /// Evolve's own records at the chosen level; the libraries' only when they are
    /// warnings or errors: their debug and trace output can hold what must never be
    /// logged (ureq traces request headers, `Authorization` included).
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
            && (metadata.target().starts_with("evolve") || metadata.level() <= log::Level::Warn)
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            eprintln!(
                "evolve [{}] {}",
                record.level().as_str().to_ascii_lowercase(),
                record.args()
            );
        }
    }

    fn flush(&self) {}
}

/// The filter named by `spec`; unknown names give `warn`.
pub fn parse_filter(spec: &str) -> LevelFilter {
    match spec.trim().to_ascii_lowercase().as_str() {
        "off" | "none" => LevelFilter::Off,
        "error" => LevelFilter::Error,
        "info" => LevelFilter::Info,
        "debug" => LevelFilter::Debug,
        "trace" => LevelFilter::Trace,
        _ => LevelFilter::Warn,
    }
}

/// Installs the logger once (later calls only change the filter).
pub fn init(spec: &str) {
    static LOGGER: Stderr = Stderr;
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(parse_filter(spec));
}
