//! What the benchmarks share: the built `evolve` run against the in-repo fake model with
//! a clean environment (nothing from the machine running them leaks in).

use std::path::Path;
use std::process::Command;

use evolve_fake_llm::FakeLlm;

/// `exe` with `home` as `$EVOLVE_HOME` and `HOME`, the fake model as the main and cheap
/// model, and `EVOLVE_LOG` at `log`.
pub fn evolve(exe: &Path, home: &Path, fake: &FakeLlm, log: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("EVOLVE_HOME", home)
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("EVOLVE_MODEL", "fake-main")
        .env("EVOLVE_CHEAP_MODEL", "fake-cheap")
        .env("EVOLVE_LOG", log);
    cmd
}
