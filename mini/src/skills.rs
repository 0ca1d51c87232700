//! Skills the agent can use: bundled ones compiled into the binary and user ones in
//! `$EVOLVE_HOME/skills/<name>/SKILL.md` (a user skill overrides a bundled one of the
//! same name). Parsing and ranking are the core's; this module finds and reads files.

use std::path::Path;

use evolve_core::skill::SkillSummary;
use evolve_core::text::Tokenizer;

/// One skill: its summary and where its body comes from.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Name, description, tags.
    pub summary: SkillSummary,
    /// The body (after the front matter).
    pub body: String,
    /// `bundled` or the folder it was read from.
    pub origin: String,
}

/// All skills, loaded once per process.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    skills: Vec<Skill>,
}

impl Catalog {
    /// Bundled skills plus those under `user_dir` (missing dir = none). A SKILL.md that
    /// does not parse is skipped with a warning naming the file.
    pub fn load(user_dir: &Path, tokenizer: &dyn Tokenizer) -> Self {
        let _ = (user_dir, tokenizer);
        Catalog::default()
    }

    /// All skills, by name.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// One skill by name.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.summary.name == name)
    }
}
