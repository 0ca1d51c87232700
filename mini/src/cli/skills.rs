//! `evolve skills …`: see, read, create and remove skills. Decides what a user may do
//! to which skill: bundled skills are read-only (they ship in the binary), user and
//! learned skills are folders under `$EVOLVE_HOME/skills` that `new` creates from a
//! template and `rm` deletes. A user skill with a bundled skill's name overrides it;
//! removing it brings the bundled one back. A skill learned from a task that read
//! outside text waits under `skills/.pending` until the person reads it (`show`) and
//! `approve`s it (or `rm`s it). Loading, parsing and ranking are [`crate::skills`]' and
//! the core's.

use std::io::Write;

use argh::FromArgs;
use evolve_core::skill::parse_skill_md;
use evolve_core::text::one_line;
use serde_json::json;

use crate::cli::app::App;
use crate::config::LoadOptions;
use crate::error::Error;
use crate::skills::{bundled_text, remove_user_skill, template, Catalog, RemoveError, Source};

/// Characters of a description shown per line of `skills list`.
const LISTED_DESCRIPTION_CHARS: usize = 70;

/// list, show, create and remove skills
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "skills")]
pub struct SkillsCmd {
    #[argh(subcommand)]
    action: Action,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Action {
    List(List),
    Show(Show),
    New(New),
    Rm(Rm),
    Approve(Approve),
}

/// enable a learned skill that waits for review (learned from a task that read outside text)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "approve")]
struct Approve {
    /// the skill's name (from `evolve skills list`, "waiting for review")
    #[argh(positional)]
    name: String,
}

/// list the skills: name, source (bundled, user or learned) and description
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct List {
    /// print JSON records
    #[argh(switch)]
    json: bool,
}

/// print a skill's SKILL.md: front matter and instructions
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
struct Show {
    /// the skill's name (from `evolve skills list`)
    #[argh(positional)]
    name: String,
}

/// create a user skill in $EVOLVE_HOME/skills/NAME/SKILL.md from a template
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "new")]
struct New {
    /// the skill's name: lowercase letters, digits and single hyphens, at most 64
    #[argh(positional)]
    name: String,
    /// what the skill does and when to use it (the matcher ranks skills by it)
    #[argh(option)]
    description: Option<String>,
}

/// remove a user skill (bundled skills cannot be removed)
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "rm")]
struct Rm {
    /// the skill's name (from `evolve skills list`)
    #[argh(positional)]
    name: String,
}

pub fn run(cmd: SkillsCmd, profile: &Option<String>) -> Result<(), Error> {
    match cmd.action {
        Action::List(c) => list(c, profile),
        Action::Show(c) => show(c, profile),
        Action::New(c) => new(c, profile),
        Action::Rm(c) => rm(c, profile),
        Action::Approve(c) => approve(c, profile),
    }
}

/// The folder of skills waiting for review.
fn pending_dir(app: &App) -> std::path::PathBuf {
    app.config
        .skills_dir()
        .join(crate::agents::crystallize::PENDING_DIR)
}

/// The names of the skills waiting for review, sorted.
fn pending_names(app: &App) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(pending_dir(app))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.path().join("SKILL.md").is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

fn approve(c: Approve, profile: &Option<String>) -> Result<(), Error> {
    let name = c.name.trim();
    check_name(name)?;
    let (app, _catalog) = load(profile)?;
    let from = pending_dir(&app).join(name);
    let file = from.join("SKILL.md");
    let text = std::fs::read_to_string(&file).map_err(|_| {
        Error::NotFound(format!(
            "no skill {name} waits for review (in {}); `evolve skills list` shows them",
            pending_dir(&app).display()
        ))
    })?;
    if let Err(e) = parse_skill_md(&text) {
        return Err(Error::BrokenSkill {
            name: name.to_string(),
            path: file,
            why: e.to_string(),
        });
    }
    let to = app.config.skills_dir().join(name);
    if std::fs::symlink_metadata(&to).is_ok() {
        return Err(Error::Conflict(format!(
            "a skill {name} already exists at {}; remove one of them first",
            to.display()
        )));
    }
    std::fs::rename(&from, &to).map_err(|source| Error::Fs {
        doing: "move the skill to",
        path: to.clone(),
        source,
        hint: "",
    })?;
    writeln!(
        std::io::stdout().lock(),
        "approved the skill {name}: the agent uses it from now on ({})",
        to.join("SKILL.md").display()
    )?;
    Ok(())
}

/// The configuration and the skills it sees.
fn load(profile: &Option<String>) -> Result<(App, Catalog), Error> {
    let app = App::load(&LoadOptions {
        profile: profile.clone(),
        ..LoadOptions::default()
    })?;
    let catalog = Catalog::load(&app.config.skills_dir(), &app.tokenizer);
    Ok((app, catalog))
}

fn list(c: List, profile: &Option<String>) -> Result<(), Error> {
    let (_app, catalog) = load(profile)?;
    let mut out = std::io::stdout().lock();
    if c.json {
        let records: Vec<serde_json::Value> = catalog
            .all()
            .iter()
            .map(|s| {
                json!({
                    "name": s.summary.name,
                    "source": s.source.name(),
                    "description": s.summary.description,
                    "tags": s.summary.tags,
                    "path": catalog.skill_dir(&s.summary.name).map(|d| d.join("SKILL.md")),
                })
            })
            .collect();
        let mut records = records;
        for name in pending_names(&_app) {
            records.push(json!({
                "name": name,
                "source": "pending",
                "path": pending_dir(&_app).join(&name).join("SKILL.md"),
            }));
        }
        let text = serde_json::to_string_pretty(&records).map_err(|source| Error::Encode {
            what: "skills",
            source,
        })?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    let width = catalog
        .all()
        .iter()
        .map(|s| s.summary.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(out, "{:<width$}  {:<7}  description", "name", "source")?;
    for s in catalog.all() {
        writeln!(
            out,
            "{:<width$}  {:<7}  {}",
            s.summary.name,
            s.source.name(),
            super::printable(
                &one_line(&s.summary.description, LISTED_DESCRIPTION_CHARS),
                false
            )
        )?;
    }
    let pending = pending_names(&_app);
    if !pending.is_empty() {
        writeln!(
            out,
            "waiting for review (learned from tasks that read outside text): {} — \
             `evolve skills show NAME`, then `evolve skills approve NAME` or `rm NAME`",
            pending.join(", ")
        )?;
    }
    Ok(())
}

fn show(c: Show, profile: &Option<String>) -> Result<(), Error> {
    let (app, catalog) = load(profile)?;
    let name = c.name.trim();
    let waiting = pending_dir(&app).join(name).join("SKILL.md");
    if catalog.get(name).is_none() && check_name(name).is_ok() && waiting.is_file() {
        let text = std::fs::read_to_string(&waiting).map_err(|source| Error::Read {
            path: waiting.clone(),
            source,
        })?;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "# skill waiting for review, {} (learned from a task that read outside text; \
             `evolve skills approve {name}` enables it)",
            waiting.display()
        )?;
        out.write_all(super::printable(text.trim_end(), true).as_bytes())?;
        writeln!(out)?;
        return Ok(());
    }
    let Some(skill) = catalog.get(name) else {
        let dir = app.config.skills_dir().join(name);
        if check_name(name).is_ok() && dir.is_dir() {
            return Err(Error::BrokenSkill {
                name: name.to_string(),
                path: dir.join("SKILL.md"),
                why: "the warning above says why".into(),
            });
        }
        return Err(unknown(name, &catalog));
    };
    let text = match catalog.skill_dir(name) {
        Some(dir) => {
            let path = dir.join("SKILL.md");
            std::fs::read_to_string(&path).map_err(|source| Error::Read { path, source })?
        }
        None => bundled_text(name).unwrap_or_default().to_string(),
    };
    let mut out = std::io::stdout().lock();
    let overrides = skill.source != Source::Bundled && bundled_text(name).is_some();
    write!(out, "# {} skill", skill.source.name())?;
    if let Some(dir) = catalog.skill_dir(name) {
        write!(out, ", {}", dir.join("SKILL.md").display())?;
    }
    if overrides {
        write!(out, " (overrides the bundled skill of the same name)")?;
    }
    writeln!(out)?;
    out.write_all(super::printable(text.trim_end(), true).as_bytes())?;
    writeln!(out)?;
    Ok(())
}

fn new(c: New, profile: &Option<String>) -> Result<(), Error> {
    let name = c.name.trim();
    check_name(name)?;
    let description = match c.description.as_deref().map(str::trim) {
        Some("") => {
            return Err(Error::Usage(
                "--description is empty: say what the skill does and when to use it".into(),
            ))
        }
        Some(d) => Some(one_line(d, evolve_core::skill::MAX_DESCRIPTION_CHARS)),
        None => None,
    };
    let (app, _catalog) = load(profile)?;
    let root = app.config.skills_dir();
    let dir = root.join(name);
    if std::fs::symlink_metadata(&dir).is_ok() {
        return Err(Error::Conflict(format!(
            "the user skill {name} already exists at {}; edit its SKILL.md, or remove it first with `evolve skills rm {name}`",
            dir.display()
        )));
    }
    let text = template(name, description.as_deref());
    // The template must load, or the user starts from a skill the agent skips.
    if let Err(e) = parse_skill_md(&text) {
        return Err(Error::Usage(format!(
            "cannot make a valid SKILL.md for {name}: {e}; simplify the description"
        )));
    }
    let file = dir.join("SKILL.md");
    std::fs::create_dir_all(&root)
        .and_then(|()| std::fs::create_dir(&dir))
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&file)
        })
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|source| Error::Fs {
            doing: "create",
            path: file.clone(),
            source,
            hint: " — check that the skills folder is writable",
        })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "created {}", file.display())?;
    if bundled_text(name).is_some() {
        writeln!(
            out,
            "it overrides the bundled skill {name} (its text is the starting point); `evolve skills rm {name}` brings the bundled one back"
        )?;
    } else {
        writeln!(
            out,
            "edit it: the description says when to use the skill (the agent matches requests against it), the body says how"
        )?;
    }
    Ok(())
}

fn rm(c: Rm, profile: &Option<String>) -> Result<(), Error> {
    let name = c.name.trim();
    check_name(name)?;
    let (app, catalog) = load(profile)?;
    let mut removed = remove_user_skill(&app.config.skills_dir(), name);
    if matches!(removed, Err(RemoveError::Unknown)) {
        removed = remove_user_skill(&pending_dir(&app), name);
    }
    let dir = match removed {
        Ok(dir) => dir,
        Err(RemoveError::Bundled) => return Err(Error::Conflict(format!(
            "{name} is a bundled skill: it ships in the binary and cannot be removed; to change it, `evolve skills new {name}` creates a user copy that overrides it"
        ))),
        Err(RemoveError::Unknown) => return Err(unknown(name, &catalog)),
        Err(RemoveError::Io(path, source)) => {
            return Err(Error::Fs {
                doing: "remove",
                path,
                source,
                hint: "",
            })
        }
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "removed the skill {name} ({})", dir.display())?;
    if bundled_text(name).is_some() {
        writeln!(out, "the bundled skill {name} is used again")?;
    }
    Ok(())
}

/// Names become folder names: the Agent Skills rule, with a message saying which part
/// is wrong (and no way to reach outside the skills folder).
fn check_name(name: &str) -> Result<(), Error> {
    match crate::skills::name_problem(name) {
        None => Ok(()),
        Some(problem) => Err(Error::Usage(problem)),
    }
}

/// "no skill named …", with the names there are.
fn unknown(name: &str, catalog: &Catalog) -> Error {
    let names: Vec<&str> = catalog
        .all()
        .iter()
        .map(|s| s.summary.name.as_str())
        .collect();
    Error::NotFound(format!(
        "there is no skill named {name:?}; `evolve skills list` shows them ({})",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_touching_the_disk() {
        let table: &[(&str, Option<&str>)] = &[
            ("pdf-tools", None),
            ("a1", None),
            ("", Some("is empty")),
            ("../etc", Some("found '.'")),
            ("a/b", Some("found '/'")),
            ("Caps", Some("found 'C'")),
            ("-lead", Some("start or end with a hyphen")),
            ("a--b", Some("two hyphens")),
        ];
        for (name, expected) in table {
            let got = check_name(name).err().map(|e| e.to_string());
            match (expected, got) {
                (None, None) => {}
                (Some(want), Some(got)) => assert!(got.contains(want), "{name:?}: {got}"),
                (want, got) => panic!("{name:?}: want {want:?}, got {got:?}"),
            }
        }
        let long = "a".repeat(evolve_core::skill::MAX_NAME_CHARS + 1);
        assert!(check_name(&long).is_err());
        assert!(check_name(&"a".repeat(evolve_core::skill::MAX_NAME_CHARS)).is_ok());
    }

    #[test]
    fn templates_are_valid_skills_named_like_their_folder() {
        let table: &[(&str, Option<&str>)] = &[
            ("pdf-tools", None),
            (
                "notes",
                Some("Keep notes: dated, tagged. Use when asked to \"note\" # something"),
            ),
            ("review-diff", None),
            ("review-diff", Some("My own review rules")),
        ];
        for (name, description) in table {
            let doc = parse_skill_md(&template(name, *description))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(doc.name, *name);
            if let Some(d) = description {
                assert_eq!(doc.description, *d);
            }
        }
        assert_eq!(
            template("review-diff", None),
            bundled_text("review-diff").unwrap_or_default()
        );
    }
}
