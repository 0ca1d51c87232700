//! `evolve config init|show|check|path`: write the commented template, print the
//! effective settings (keys masked), validate the file and every profile, print where
//! the file is. `check` runs the validation every command runs at load (so its verdict
//! is theirs) and adds warnings; `show` refuses a rejected file like any command.
//! `path` and `init` do not read the file, so they work when it is broken.

use std::io::Write;
use std::path::Path;

use argh::FromArgs;

use crate::config::{self, Config, LoadOptions, CONFIG_FILE, CONFIG_TEMPLATE};
use crate::error::Error;

/// show and check the configuration
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "config")]
pub struct ConfigCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    Init(InitCmd),
    Show(ShowCmd),
    Check(CheckCmd),
    Path(PathCmd),
}

/// write a commented config.toml into $EVOLVE_HOME (default ~/.evolve)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "init")]
struct InitCmd {
    /// replace an existing config.toml (its settings are lost)
    #[argh(switch)]
    force: bool,
}

/// print the effective configuration, API keys masked, and where each model setting
/// came from (file, profile, env, default)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
struct ShowCmd {
    /// print JSON
    #[argh(switch)]
    json: bool,
}

/// check config.toml and every profile in it: exit 0 when usable, 2 with the problem
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "check")]
struct CheckCmd {}

/// print the path of config.toml
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "path")]
struct PathCmd {}

pub fn run(cmd: ConfigCmd, profile: &Option<String>) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match cmd.action {
        Action::Init(init) => {
            // The file is not read (it may be broken): warnings (a home made private)
            // at the default level.
            crate::logger::init(config::DEFAULT_LOG);
            let home = config::home_dir(&config::process_env)?;
            let path = write_template(&home, init.force)?;
            writeln!(
                out,
                "wrote {} — edit it, then run `evolve config check`",
                path.display()
            )?;
        }
        Action::Show(show) => {
            let opts = LoadOptions {
                profile: profile.clone(),
                workspace: None,
            };
            let loaded = Config::load_from(&opts, &config::process_env)?;
            if show.json {
                let text = serde_json::to_string_pretty(&loaded.to_json()).map_err(|source| {
                    Error::Encode {
                        what: "configuration",
                        source,
                    }
                })?;
                writeln!(out, "{text}")?;
            } else {
                write!(out, "{}", loaded.to_text())?;
            }
        }
        Action::Check(_) => {
            let opts = LoadOptions {
                profile: profile.clone(),
                workspace: None,
            };
            let checked = config::check(&opts, &config::process_env)?;
            for warning in &checked.warnings {
                eprintln!("evolve: warning: {warning}");
            }
            let c = &checked.loaded.config;
            writeln!(out, "✓ config OK ({})", c.file.display())?;
            if !checked.loaded.file_exists {
                writeln!(
                    out,
                    "  no file: defaults and environment only (`evolve config init` writes a \
                     commented one)"
                )?;
            }
            if checked.checked.len() > 1 {
                writeln!(out, "  profiles checked: {}", checked.checked.join(", "))?;
            }
            if c.model.base_url_is_default {
                writeln!(
                    out,
                    "  model server: {} (the default; set OPENAI_BASE_URL or [model] \
                     base_url for another)",
                    c.model.base_url
                )?;
            }
        }
        Action::Path(_) => {
            let home = config::home_dir(&config::process_env)?;
            writeln!(out, "{}", home.join(CONFIG_FILE).display())?;
        }
    }
    Ok(())
}

/// Writes the template into `home` (created 0700), the file 0600 since it may come to
/// hold an API key. Without `force` an existing file is left alone; with it, the new
/// file is written beside it and renamed over it, so a failure never leaves half a file.
fn write_template(home: &Path, force: bool) -> Result<std::path::PathBuf, Error> {
    let path = home.join(CONFIG_FILE);
    let cannot = |doing: &'static str, p: &Path, source: std::io::Error| Error::Fs {
        doing,
        path: p.to_path_buf(),
        source,
        hint: " — check that the directory is writable, or set EVOLVE_HOME",
    };
    create_private_dir(home).map_err(|e| cannot("create", home, e))?;
    config::private::tighten_home(home);
    if !force {
        let mut file = match open_private(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Error::Conflict(format!(
                    "{} already exists — edit it, or run `evolve config init --force` to \
                     replace it with the template (its settings are lost)",
                    path.display()
                )))
            }
            Err(e) => return Err(cannot("create", &path, e)),
        };
        file.write_all(CONFIG_TEMPLATE.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| cannot("write", &path, e))?;
        return Ok(path);
    }
    let tmp = home.join(format!("{CONFIG_FILE}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp); // a leftover of an interrupted run
    let written = open_private(&tmp).and_then(|mut f| {
        f.write_all(CONFIG_TEMPLATE.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(cannot("write", &path, e));
    }
    Ok(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Creates a new file (never opens an existing one), readable by its owner only.
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}
