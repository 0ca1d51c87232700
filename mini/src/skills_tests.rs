use super::*;
use crate::tools::testing::TempDir;
use evolve_core::text::FallbackTokenizer;

fn write_skill(root: &Path, folder: &str, text: &str) {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), text).unwrap();
}

fn md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\ntags: [a, b]\n---\n{body}")
}

#[test]
fn bundled_skills_parse_and_are_named_like_their_folder() {
    for (name, text) in bundled() {
        let doc = parse_skill_md(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc.name, *name);
    }
    let catalog = Catalog::load(Path::new("/nonexistent/evolve/skills"), &FallbackTokenizer);
    assert_eq!(catalog.all().len(), bundled().len());
    let commit = catalog.get("commit-message").expect("bundled");
    assert_eq!(commit.origin, BUNDLED_ORIGIN);
    assert!(commit.body.contains("Subject line"));
    assert!(commit.summary.tags.contains(&"git".to_string()));
    assert_eq!(catalog.skill_dir("commit-message"), None);
}

#[test]
fn user_skills_load_override_bundled_and_bad_ones_are_skipped() {
    let tmp = TempDir::new("skills");
    let root = tmp.path();
    write_skill(
        root,
        "pdf-tools",
        &md("pdf-tools", "Work with PDF files", "Use pdftotext.\n"),
    );
    write_skill(
        root,
        "commit-message",
        &md("commit-message", "My own commit style", "Mine.\n"),
    );
    // Broken in different ways: each skipped, none stops the others.
    write_skill(root, "no-front", "just text\n");
    write_skill(root, "wrong-folder", &md("other-name", "Mismatch", ""));
    write_skill(root, "Bad_Name", &md("Bad_Name", "Invalid name", ""));
    write_skill(root, "no-desc", "---\nname: no-desc\n---\nbody\n");
    std::fs::create_dir_all(root.join("empty-folder")).unwrap();
    std::fs::write(root.join("README.md"), "not a skill").unwrap();
    write_skill(root, ".hidden", &md("hidden", "Hidden", ""));

    let catalog = Catalog::load(root, &FallbackTokenizer);
    let names: Vec<&str> = catalog
        .all()
        .iter()
        .filter(|s| s.source != Source::Bundled)
        .map(|s| s.summary.name.as_str())
        .collect();
    assert_eq!(names, ["commit-message", "pdf-tools"]);
    assert_eq!(catalog.all().len(), bundled().len() + 1);
    let mine = catalog.get("commit-message").unwrap();
    assert_eq!(mine.body, "Mine.\n");
    assert_eq!(mine.source, Source::User);
    assert_eq!(mine.summary.description, "My own commit style");
    assert_eq!(
        catalog.skill_dir("commit-message"),
        Some(root.join("commit-message"))
    );
    let pdf = catalog.get("pdf-tools").unwrap();
    assert_eq!(pdf.origin, root.join("pdf-tools").display().to_string());
    assert_eq!(pdf.summary.tags, ["a", "b"]);
    assert_eq!(catalog.skill_dir("pdf-tools"), Some(root.join("pdf-tools")));
    assert_eq!(catalog.skill_dir("nope"), None);
}

#[test]
fn loading_the_skills_leaves_the_chinese_dictionary_unloaded_until_a_chinese_question() {
    use evolve_core::skill::rank;
    use evolve_core::text::KeywordSet;
    let t = crate::text::ShellTokenizer::new(None);
    let catalog = Catalog::load(Path::new("/nonexistent/evolve/skills"), &t);
    assert!(
        !t.is_loaded(),
        "the bundled skills' Chinese tags load nothing"
    );
    let first = |query: &str| {
        let summaries = catalog.summaries_for(query, &t);
        let q = KeywordSet::of(&t, query);
        rank(&summaries, &q, 1)
            .first()
            .map(|&(i, _)| summaries[i].name.clone())
    };
    assert_eq!(
        first("translate this into English").as_deref(),
        Some("translate-zh-en")
    );
    assert!(!t.is_loaded(), "an English question loads nothing either");
    assert_eq!(
        first("把这段话翻译成英文").as_deref(),
        Some("translate-zh-en")
    );
    assert_eq!(first("今天的早报").as_deref(), Some("daily-briefing"));
    assert!(t.is_loaded(), "a Chinese question does");
}

#[test]
fn each_bundled_skill_is_the_first_match_for_a_typical_request() {
    use evolve_core::skill::rank;
    use evolve_core::text::KeywordSet;
    let catalog = Catalog::load(Path::new("/nonexistent/evolve/skills"), &FallbackTokenizer);
    let table: &[(&str, &str)] = &[
        (
            "write a commit message for my staged changes",
            "commit-message",
        ),
        ("give me my morning briefing for today", "daily-briefing"),
        (
            "what does this article say? https://example.com/post",
            "summarize-web-page",
        ),
        ("summarize this web page for me", "summarize-web-page"),
        ("translate this paragraph into English", "translate-zh-en"),
        ("把这段话翻译成英文", "translate-zh-en"),
        (
            "please review this diff before I merge the PR",
            "review-diff",
        ),
        (
            "plan the migration of my blog into steps with a todo list",
            "plan-tasks",
        ),
        (
            "is the server healthy? check disk space and memory",
            "server-health-check",
        ),
        ("服务器磁盘满了吗", "server-health-check"),
    ];
    for (query, expected) in table {
        let summaries = catalog.summaries_for(query, &FallbackTokenizer);
        let q = KeywordSet::of(&FallbackTokenizer, query);
        let ranked: Vec<&str> = rank(&summaries, &q, 3)
            .iter()
            .map(|&(i, _)| summaries[i].name.as_str())
            .collect();
        assert_eq!(ranked.first(), Some(expected), "{query:?}: {ranked:?}");
    }
}

#[test]
fn bundled_skills_stay_small_and_say_when_to_use_them() {
    let total: usize = bundled().iter().map(|(_, t)| t.len()).sum();
    assert!(total <= 25 * 1024, "bundled skills take {total} bytes");
    for (name, text) in bundled() {
        let doc = parse_skill_md(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(doc.description.contains("Use when"), "{name}");
        assert!(!doc.tags.is_empty(), "{name} has no tags");
        let lines = doc.body.lines().count();
        assert!((30..=120).contains(&lines), "{name}: {lines} lines");
    }
}

#[test]
fn learned_skills_are_told_apart_from_user_and_bundled_ones() {
    let tmp = TempDir::new("skills-learned");
    let root = tmp.path();
    let with =
        |name: &str, extra: &str| format!("---\nname: {name}\ndescription: D\n{extra}---\nBody\n");
    write_skill(root, "plain", &with("plain", ""));
    write_skill(root, "flag", &with("flag", "learned: true\n"));
    write_skill(
        root,
        "meta",
        &with("meta", "metadata:\n  learned: yes\n  job: x\n"),
    );
    write_skill(
        root,
        "not-learned",
        &with("not-learned", "learned: false\n"),
    );
    let catalog = Catalog::load(root, &FallbackTokenizer);
    let source = |name: &str| catalog.get(name).map(|s| s.source);
    assert_eq!(source("plain"), Some(Source::User));
    assert_eq!(source("flag"), Some(Source::Learned));
    assert_eq!(source("meta"), Some(Source::Learned));
    assert_eq!(source("not-learned"), Some(Source::User));
    assert_eq!(source("review-diff"), Some(Source::Bundled));
}

#[test]
fn oversized_skill_files_are_skipped() {
    let tmp = TempDir::new("skills-big");
    let body = "x".repeat(MAX_SKILL_FILE_BYTES as usize);
    write_skill(tmp.path(), "huge", &md("huge", "Too big", &body));
    let catalog = Catalog::load(tmp.path(), &FallbackTokenizer);
    assert!(catalog.get("huge").is_none());
}

#[test]
fn with_skills_keeps_one_skill_per_name() {
    let skill = |name: &str, body: &str| Skill {
        summary: SkillSummary::new(name, "d", &[], &FallbackTokenizer),
        body: body.into(),
        origin: BUNDLED_ORIGIN.into(),
        source: Source::Bundled,
    };
    let c = Catalog::with_skills(vec![skill("b", "1"), skill("a", "2"), skill("b", "3")]);
    let names: Vec<&str> = c.all().iter().map(|s| s.summary.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}
