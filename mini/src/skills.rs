//! Skills the agent can use: bundled ones compiled into the binary and user ones in
//! `$EVOLVE_HOME/skills/<name>/SKILL.md` (a user skill overrides a bundled one of the
//! same name). Parsing and ranking are the core's; this module finds and reads files,
//! checks that a skill's name matches its folder, and skips (with a warning naming the
//! file) whatever cannot be used, so one broken skill never stops the agent.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use evolve_core::skill::{parse_skill_md, SkillSummary};
use evolve_core::text::Tokenizer;

/// Skills shipped in the binary: (name, SKILL.md text), every folder of the
/// repository's `skills/`. The name must equal the `name:` of the file (checked by a
/// test). About 20 KB of text, stored deflated (9 KB; `mini/build.rs`) and inflated once,
/// at the first use: they ship in a binary with a 5 MiB budget.
pub fn bundled() -> &'static [(&'static str, &'static str)] {
    static TABLE: &[(&str, usize, usize)] =
        include!(concat!(env!("OUT_DIR"), "/bundled_skills.rs"));
    static DEFLATED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bundled_skills.deflate"));
    const BYTES: usize = include!(concat!(env!("OUT_DIR"), "/bundled_skills_len.rs"));
    static ALL: std::sync::OnceLock<Vec<(&'static str, &'static str)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let text = crate::inflate::inflate(DEFLATED, BYTES)
            .ok()
            .and_then(|b| String::from_utf8(b).ok());
        let Some(text) = text else {
            log::error!("the bundled skills of this binary are damaged; none is offered");
            return Vec::new();
        };
        let text: &'static str = Box::leak(text.into_boxed_str());
        TABLE
            .iter()
            .filter_map(|&(name, start, len)| Some((name, text.get(start..start + len)?)))
            .collect()
    })
}

/// A tokenizer that leaves Han text out (see [`Catalog::load`]).
struct WithoutHan<'a>(&'a dyn Tokenizer);

impl WithoutHan<'_> {
    fn strip(text: &str) -> std::borrow::Cow<'_, str> {
        if text.chars().any(crate::text::is_han) {
            let t = text
                .chars()
                .map(|c| if crate::text::is_han(c) { ' ' } else { c });
            std::borrow::Cow::Owned(t.collect())
        } else {
            std::borrow::Cow::Borrowed(text)
        }
    }
}

impl Tokenizer for WithoutHan<'_> {
    fn for_each_keyword(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        self.0.for_each_keyword(&Self::strip(text), emit);
    }

    fn for_each_word(&self, text: &str, emit: &mut dyn FnMut(&str, &str)) {
        self.0.for_each_word(&Self::strip(text), emit);
    }
}

/// The front-matter key that marks a user skill as written by crystallization
/// (`learned: true`, or a `learned: true` line under `metadata:`): shown as `learned`
/// so the user can review what the agent wrote for itself.
pub const LEARNED_KEY: &str = "learned";

/// Where a skill comes from, as `evolve skills list` and the API show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Compiled into the binary.
    Bundled,
    /// A folder under `$EVOLVE_HOME/skills` the user wrote (or copied).
    User,
    /// A user skill the agent drafted from a task that worked (crystallization).
    Learned,
}

impl Source {
    /// `bundled`, `user` or `learned`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Bundled => "bundled",
            Source::User => "user",
            Source::Learned => "learned",
        }
    }

    /// `Learned` when the front matter says so, else `User`.
    fn of_user_skill(extra: &[(String, String)]) -> Source {
        let yes = |v: &str| matches!(v.trim(), "true" | "yes");
        let learned = extra.iter().any(|(key, value)| {
            (key == LEARNED_KEY && yes(value))
                || (key == "metadata"
                    && value.lines().any(|line| {
                        line.split_once(':')
                            .is_some_and(|(k, v)| k.trim() == LEARNED_KEY && yes(v))
                    }))
        });
        if learned {
            Source::Learned
        } else {
            Source::User
        }
    }
}

/// The `origin` of a bundled skill.
pub const BUNDLED_ORIGIN: &str = "bundled";

/// A SKILL.md larger than this is skipped: skills are instructions, not data, and the
/// whole body may be handed to the model.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// One skill: its summary and where its body comes from.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Name, description, tags.
    pub summary: SkillSummary,
    /// The body (after the front matter).
    pub body: String,
    /// `bundled` or the folder it was read from.
    pub origin: String,
    /// Bundled, user or learned.
    pub source: Source,
}

/// All skills, loaded once per process.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Skill>,
    /// The folder of each user skill, by name (bundled skills have none).
    dirs: Vec<(String, PathBuf)>,
}

impl Catalog {
    /// Bundled skills plus those under `user_dir` (missing dir = none). A SKILL.md that
    /// does not parse is skipped with a warning naming the file.
    pub fn load(user_dir: &Path, tokenizer: &dyn Tokenizer) -> Self {
        // Summaries keep the keywords outside Han text: loading the skills (the bundled
        // ones have Chinese tags) never loads the Chinese dictionary, which an
        // English-only user would otherwise carry all along (about 1.5 MB).
        // `summaries_for` adds the Han part for a question that has Han in it.
        let tokenizer = &WithoutHan(tokenizer);
        let mut catalog = Catalog::default();
        for (name, text) in bundled() {
            match parse_skill_md(text) {
                Ok(doc) if doc.name == *name => catalog.put(
                    Skill {
                        summary: SkillSummary::from_doc(&doc, tokenizer),
                        body: doc.body,
                        origin: BUNDLED_ORIGIN.to_string(),
                        source: Source::Bundled,
                    },
                    None,
                ),
                Ok(doc) => log::warn!(
                    "skipped the bundled skill {name}: its SKILL.md is named {:?}",
                    doc.name
                ),
                Err(e) => log::warn!("skipped the bundled skill {name}: {e}"),
            }
        }
        for dir in skill_folders(user_dir) {
            if let Some(skill) = read_user_skill(&dir, tokenizer) {
                catalog.put(skill, Some(dir));
            }
        }
        catalog
            .skills
            .sort_by(|a, b| a.summary.name.cmp(&b.summary.name));
        catalog
    }

    /// A catalog of the given skills, with no folders (as if bundled): for callers that
    /// build skills themselves, and tests.
    #[cfg(test)]
    pub fn with_skills(mut skills: Vec<Skill>) -> Self {
        skills.sort_by(|a, b| a.summary.name.cmp(&b.summary.name));
        skills.dedup_by(|a, b| a.summary.name == b.summary.name);
        Catalog {
            skills,
            dirs: Vec::new(),
        }
    }

    /// Adds or replaces (same name) a skill.
    fn put(&mut self, skill: Skill, dir: Option<PathBuf>) {
        let name = skill.summary.name.clone();
        self.dirs.retain(|(n, _)| *n != name);
        if let Some(dir) = dir {
            self.dirs.push((name.clone(), dir));
        }
        match self.skills.iter_mut().find(|s| s.summary.name == name) {
            Some(existing) => *existing = skill,
            None => self.skills.push(skill),
        }
    }

    /// All skills, by name.
    /// Every skill's summary for ranking against `query`: as kept, or — when the
    /// question has Han text — with the keywords of the skills' own Han text too
    /// (segmented now: the question loads the dictionary anyway).
    pub fn summaries_for(&self, query: &str, tokenizer: &dyn Tokenizer) -> Vec<SkillSummary> {
        let han = |t: &str| t.chars().any(crate::text::is_han);
        let asked_in_han = han(query);
        self.skills
            .iter()
            .map(|s| {
                let m = &s.summary;
                if asked_in_han && (han(&m.description) || m.tags.iter().any(|t| han(t))) {
                    SkillSummary::new(&m.name, &m.description, &m.tags, tokenizer)
                } else {
                    m.clone()
                }
            })
            .collect()
    }

    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// One skill by name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.summary.name == name)
    }

    /// The folder of a user skill (where files beside its SKILL.md live); `None` for
    /// bundled and unknown skills.
    pub fn skill_dir(&self, name: &str) -> Option<PathBuf> {
        self.dirs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
    }
}

/// The catalog a running agent uses. Replaced whole (never edited in place) when the
/// agent learns a skill, or when [`LiveCatalog::refresh`] sees the skills folder
/// changed (a skill made with `evolve skills new` or edited by hand while `serve`
/// runs), so a long-running `serve` or `chat` offers and lists it at once; a turn keeps
/// the catalog it started with.
#[derive(Debug, Default)]
pub struct LiveCatalog(RwLock<Arc<Catalog>>, Mutex<Option<Stamp>>);

/// What the skills folder looked like when it was last read: each sub-folder with its
/// SKILL.md's modification time. Taking it costs a directory listing and one `stat`
/// per skill, so it is checked before every turn instead of reloading every time.
type Stamp = Vec<(PathBuf, Option<std::time::SystemTime>)>;

fn stamp(user_dir: &Path) -> Stamp {
    let Ok(entries) = std::fs::read_dir(user_dir) else {
        return Vec::new();
    };
    let mut out: Stamp = entries
        .flatten()
        .map(|e| {
            let md = e.path().join("SKILL.md");
            let mtime = std::fs::metadata(&md).and_then(|m| m.modified()).ok();
            (e.path(), mtime)
        })
        .collect();
    out.sort();
    out
}

/// Why a skill could not be removed.
#[derive(Debug)]
pub enum RemoveError {
    /// It ships in the binary.
    Bundled,
    /// No user skill has that folder.
    Unknown,
    /// The file system refused (the folder, the error).
    Io(PathBuf, std::io::Error),
}

/// The SKILL.md text of a bundled skill.
pub fn bundled_text(name: &str) -> Option<&'static str> {
    bundled().iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// What is wrong with a skill name (they become folder names: the Agent Skills rule,
/// so no name reaches outside the skills folder), said whole; `None` when it is fine.
pub fn name_problem(name: &str) -> Option<String> {
    use evolve_core::skill::{validate_name, NameProblem, MAX_NAME_CHARS};
    let problem = match validate_name(name) {
        Ok(()) => return None,
        Err(NameProblem::Empty) => "is empty".to_string(),
        Err(NameProblem::TooLong(n)) => {
            format!("has {n} characters; at most {MAX_NAME_CHARS} are allowed")
        }
        Err(NameProblem::InvalidChar(c)) => {
            format!("may only contain lowercase letters, digits and hyphens (found {c:?})")
        }
        Err(NameProblem::EdgeHyphen) => "must not start or end with a hyphen".to_string(),
        Err(NameProblem::DoubleHyphen) => "must not contain two hyphens in a row".to_string(),
    };
    Some(format!(
        "the skill name {name:?} {problem}, e.g. `pdf-tools`"
    ))
}

/// A new skill's SKILL.md: a bundled skill's own text when overriding it, else a
/// template whose front matter is valid and whose body shows the expected shape.
pub fn template(name: &str, description: Option<&str>) -> String {
    if let (Some(text), None) = (bundled_text(name), description) {
        return text.to_string();
    }
    let description = description.map(quote).unwrap_or_else(|| {
        format!(
            "\"Describe what {name} does. Use when the user asks to … (name the requests it fits).\""
        )
    });
    let title = name.replace('-', " ");
    format!(
        "---\nname: {name}\ndescription: {description}\ntags: [{tags}]\n---\n# {title}\n\n\
         ## Steps\n1. The first thing to do, and which tool to use for it.\n2. …\n\n\
         ## Output format\nWhat the answer looks like (a short example helps).\n\n\
         ## Pitfalls\n- What to avoid or check before answering.\n",
        tags = name.split('-').collect::<Vec<_>>().join(", ")
    )
}

/// A description as a double-quoted YAML scalar (it may contain `:` or `#`).
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Writes the SKILL.md of the user skill `name` (valid, checked by the caller) under
/// `user_dir`, creating its folder; the file is replaced whole (a temporary file renamed
/// over it), so a reader never sees half of it.
pub fn write_user_skill(user_dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let dir = user_dir.join(name);
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("SKILL.md");
    let tmp = dir.join(".SKILL.md.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, &file)?;
    Ok(file)
}

/// Removes the user (or learned) skill `name` from `user_dir` and returns its folder.
/// A symlinked skill folder loses the link, never what it points to; a folder without a
/// SKILL.md (or a plain file) is not a skill and stays ([`RemoveError::Unknown`]). `name` must be a
/// valid skill name (checked by the caller), so it cannot reach outside `user_dir`.
pub fn remove_user_skill(user_dir: &Path, name: &str) -> Result<PathBuf, RemoveError> {
    let dir = user_dir.join(name);
    let Ok(meta) = std::fs::symlink_metadata(&dir) else {
        return Err(if bundled().iter().any(|(n, _)| *n == name) {
            RemoveError::Bundled
        } else {
            RemoveError::Unknown
        });
    };
    // A folder without a SKILL.md is not a skill (notes, a skill not written yet): the
    // user's files in it stay.
    let is_skill = meta.file_type().is_symlink()
        || (meta.is_dir() && std::fs::symlink_metadata(dir.join("SKILL.md")).is_ok());
    if !is_skill {
        return Err(RemoveError::Unknown);
    }
    let removed = if meta.file_type().is_symlink() {
        std::fs::remove_file(&dir)
    } else {
        std::fs::remove_dir_all(&dir)
    };
    removed.map_err(|e| RemoveError::Io(dir.clone(), e))?;
    Ok(dir)
}

impl LiveCatalog {
    /// The bundled skills and those in `user_dir`, read now.
    pub fn load(user_dir: &Path, tokenizer: &dyn Tokenizer) -> Self {
        let seen = stamp(user_dir);
        LiveCatalog(
            RwLock::new(Arc::new(Catalog::load(user_dir, tokenizer))),
            Mutex::new(Some(seen)),
        )
    }

    /// The catalog now.
    pub fn current(&self) -> Arc<Catalog> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Reads the skills again (after one was written).
    pub fn reload(&self, user_dir: &Path, tokenizer: &dyn Tokenizer) {
        let now = stamp(user_dir);
        let fresh = Arc::new(Catalog::load(user_dir, tokenizer));
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = fresh;
        *self.1.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
    }

    /// Reads the skills again when the folder changed since they were last read.
    pub fn refresh(&self, user_dir: &Path, tokenizer: &dyn Tokenizer) {
        let now = stamp(user_dir);
        let mut seen = self.1.lock().unwrap_or_else(PoisonError::into_inner);
        match &*seen {
            None => *seen = Some(now),
            Some(old) if *old == now => {}
            Some(_) => {
                drop(seen);
                self.reload(user_dir, tokenizer);
            }
        }
    }
}

/// The sub-folders of `user_dir`, sorted (so a warning order and the result do not
/// depend on the file system). A missing folder has none; an unreadable one is warned
/// about.
fn skill_folders(user_dir: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(user_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            log::warn!(
                "cannot read the skills folder {}: {e}; no user skills loaded",
                user_dir.display()
            );
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter(|p| {
            // `.git`, `.cache` …: not skills.
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    dirs.sort();
    dirs
}

/// The skill in `dir`, or `None` with a warning naming the file.
fn read_user_skill(dir: &Path, tokenizer: &dyn Tokenizer) -> Option<Skill> {
    let file = dir.join("SKILL.md");
    let meta = match std::fs::metadata(&file) {
        Ok(m) if m.is_file() => m,
        Ok(_) | Err(_) => {
            log::warn!(
                "skipped the skill folder {}: it has no SKILL.md file",
                dir.display()
            );
            return None;
        }
    };
    if meta.len() > MAX_SKILL_FILE_BYTES {
        log::warn!(
            "skipped {}: {} bytes is more than a skill may have ({MAX_SKILL_FILE_BYTES}); move data into files beside it",
            file.display(),
            meta.len()
        );
        return None;
    }
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            log::warn!(
                "skipped {}: cannot read it as UTF-8 text: {e}",
                file.display()
            );
            return None;
        }
    };
    let doc = match parse_skill_md(&text) {
        Ok(d) => d,
        Err(e) => {
            log::warn!("skipped {}: {e}", file.display());
            return None;
        }
    };
    let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if doc.name != folder {
        log::warn!(
            "skipped {}: the skill is named {:?} but its folder is {folder:?}; rename one so they match",
            file.display(),
            doc.name
        );
        return None;
    }
    Some(Skill {
        summary: SkillSummary::from_doc(&doc, tokenizer),
        source: Source::of_user_skill(&doc.extra),
        body: doc.body,
        origin: dir.display().to_string(),
    })
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
