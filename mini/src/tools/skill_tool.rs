//! The `load_skill` tool: the full instructions of a skill whose summary was in the
//! prompt (progressive disclosure), and files beside a user skill's SKILL.md (scripts,
//! references), confined to that skill's folder the same way file tools are confined to
//! the workspace.

use std::fs;
use std::path::Path;

use super::args::Args;
use super::files::{clip_bytes, looks_binary};
use super::workspace::Confined;
use super::{ToolContext, ToolOutput};

/// Files listed under a skill's instructions at most.
const MAX_LISTED_FILES: usize = 50;

/// `load_skill {name, file?}`.
pub fn run(args: &Args, ctx: &ToolContext<'_>, cap: usize) -> ToolOutput {
    let name = args.text("name").trim();
    let Some(skill) = ctx.skills.get(name) else {
        let known: Vec<&str> = ctx
            .skills
            .all()
            .iter()
            .map(|s| s.summary.name.as_str())
            .collect();
        let known = if known.is_empty() {
            "there are no skills".to_string()
        } else {
            format!("known skills: {}", known.join(", "))
        };
        return ToolOutput::error(format!("there is no skill named {name:?}; {known}"));
    };
    let dir = ctx.skills.skill_dir(name);
    let Some(file) = args.str("file").filter(|f| !f.trim().is_empty()) else {
        let mut out = format!("# Skill: {name}\n\n{}", skill.body.trim_end());
        if let Some(dir) = &dir {
            let files = list_files(dir);
            if !files.is_empty() {
                out.push_str(&format!(
                    "\n\n[files of this skill, readable with load_skill {{\"name\": \"{name}\", \"file\": …}}: {}]",
                    files.join(", ")
                ));
            }
        }
        out.push('\n');
        return ToolOutput::ok(out);
    };
    let Some(dir) = dir else {
        return ToolOutput::error(format!(
            "{name} is a bundled skill: it has no files besides its instructions (call load_skill without `file`)"
        ));
    };
    if let Err(e) = check_relative(file, name) {
        return ToolOutput::error(e);
    }
    let confined = match Confined::new(&dir, &format!("the folder of skill {name}")) {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(e),
    };
    let resolved = match confined.resolve(file) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let bytes = match fs::metadata(&resolved.path) {
        Ok(m) if m.is_file() => match fs::read(&resolved.path) {
            Ok(b) => b,
            Err(e) => return ToolOutput::error(format!("cannot read {}: {e}", resolved.shown)),
        },
        Ok(_) => {
            return ToolOutput::error(format!("{} in skill {name} is not a file", resolved.shown))
        }
        Err(_) => {
            return ToolOutput::error(format!(
                "skill {name} has no file {}; its files: {}",
                resolved.shown,
                list_files(&dir).join(", ")
            ))
        }
    };
    if looks_binary(&bytes) {
        return ToolOutput::error(format!(
            "{} in skill {name} is a binary file; only text can be shown",
            resolved.shown
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut out = clip_bytes(&text, cap).to_string();
    if out.len() < text.len() {
        out.push_str(&format!("\n[truncated at {cap} bytes]"));
    }
    ToolOutput::ok(out)
}

/// A skill's files are named relative to its folder, without `..`: the rule is simple
/// to state to the model and leaves nothing to resolve. Symlinks that lead out are
/// caught afterwards by [`Confined`], which resolves each step.
fn check_relative(file: &str, skill: &str) -> Result<(), String> {
    let path = Path::new(file);
    if path.is_absolute() || file.starts_with('\\') {
        return Err(format!(
            "{file:?} is an absolute path; name a file relative to the folder of skill {skill}, such as \"scripts/run.sh\""
        ));
    }
    if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "{file:?} contains `..`; only files inside the folder of skill {skill} can be read"
        ));
    }
    Ok(())
}

/// Files of a skill folder other than SKILL.md, relative, sorted, two levels deep;
/// symlinks are not followed.
fn list_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    collect(dir, "", 2, &mut out);
    out.sort();
    out.retain(|f| f != "SKILL.md");
    out.truncate(MAX_LISTED_FILES);
    out
}

fn collect(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if out.len() > MAX_LISTED_FILES {
            return;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_file() {
            out.push(format!("{prefix}{name}"));
        } else if kind.is_dir() && depth > 1 {
            collect(&entry.path(), &format!("{prefix}{name}/"), depth - 1, out);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use crate::skills::Catalog;
    use crate::tools::testing::{Harness, TempDir};
    use evolve_core::text::FallbackTokenizer;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    fn harness_with_skills() -> (Harness, TempDir) {
        let mut h = Harness::new();
        let skills = TempDir::new("skilltool");
        let dir = skills.path().join("pdf-tools");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: pdf-tools\ndescription: Work with PDF files\n---\nRun scripts/extract.sh.\n",
        )
        .unwrap();
        std::fs::write(dir.join("scripts/extract.sh"), "pdftotext \"$1\" -\n").unwrap();
        std::fs::write(dir.join("logo.png"), b"\x89PNG\0\0").unwrap();
        std::fs::write(skills.path().join("secret.txt"), "outside the skill").unwrap();
        symlink(skills.path().join("secret.txt"), dir.join("escape")).unwrap();
        symlink(skills.path(), dir.join("up")).unwrap();
        symlink("/etc", dir.join("scripts/etc")).unwrap();
        std::fs::write(dir.join("big.txt"), "y".repeat(300_000)).unwrap();
        h.skills = Catalog::load(skills.path(), &FallbackTokenizer);
        (h, skills)
    }

    #[test]
    fn skills_load_with_their_file_list() {
        let (h, _skills) = harness_with_skills();
        let out = h.call("load_skill", json!({"name": "pdf-tools"}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .starts_with("# Skill: pdf-tools\n\nRun scripts/extract.sh."),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("logo.png, scripts/extract.sh]"),
            "{}",
            out.content
        );
        let bundled = h.call("load_skill", json!({"name": "commit-message"}));
        assert!(
            bundled.content.contains("Subject line"),
            "{}",
            bundled.content
        );
    }

    #[test]
    fn skill_files_are_read_inside_the_skill_folder_only() {
        let (h, _skills) = harness_with_skills();
        let script = h.call(
            "load_skill",
            json!({"name": "pdf-tools", "file": "scripts/extract.sh"}),
        );
        assert_eq!(script.content, "pdftotext \"$1\" -\n");
        let outside = "is outside the folder of skill pdf-tools";
        let cases: &[(serde_json::Value, &str)] = &[
            (
                json!({"name": "pdf-tools", "file": "../secret.txt"}),
                "contains `..`",
            ),
            (
                json!({"name": "pdf-tools", "file": "scripts/../../secret.txt"}),
                "contains `..`",
            ),
            (
                json!({"name": "pdf-tools", "file": "scripts/../SKILL.md"}),
                "contains `..`",
            ),
            (
                json!({"name": "pdf-tools", "file": "/etc/passwd"}),
                "is an absolute path",
            ),
            (json!({"name": "pdf-tools", "file": "escape"}), outside),
            (
                json!({"name": "pdf-tools", "file": "up/secret.txt"}),
                outside,
            ),
            (
                json!({"name": "pdf-tools", "file": "scripts/etc/passwd"}),
                outside,
            ),
            (
                json!({"name": "pdf-tools", "file": "logo.png"}),
                "binary file",
            ),
            (
                json!({"name": "pdf-tools", "file": "scripts"}),
                "is not a file",
            ),
            (
                json!({"name": "pdf-tools", "file": "nope.md"}),
                "has no file nope.md",
            ),
            (
                json!({"name": "commit-message", "file": "x.md"}),
                "is a bundled skill",
            ),
            (
                json!({"name": "nope"}),
                "no skill named \"nope\"; known skills: commit-message, daily-briefing",
            ),
        ];
        for (args, expected) in cases {
            let out = h.call("load_skill", args.clone());
            assert!(out.is_error, "{args}: {}", out.content);
            assert!(out.content.contains(expected), "{args}: {}", out.content);
        }
    }

    #[test]
    fn skill_files_are_capped() {
        let (h, _skills) = harness_with_skills();
        let out = h.call(
            "load_skill",
            json!({"name": "pdf-tools", "file": "big.txt"}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.len() < 300_000, "{} bytes", out.content.len());
        assert!(
            out.content.contains("[truncated at "),
            "{}",
            &out.content[out.content.len() - 60..]
        );
    }
}
