use super::*;
use alloc::vec;

fn s(text: &str) -> String {
    String::from(text)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|t| s(t)).collect()
}

/// (file, name, description, tags, extra, body)
type Valid<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a [&'a str],
    &'a [(&'a str, &'a str)],
    &'a str,
);

const VALID: &[Valid<'static>] = &[
    (
        "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\n# PDF\nUse pdftotext.\n",
        "pdf-tools", "Extract text from PDF files.", &[], &[], "# PDF\nUse pdftotext.\n",
    ),
    (
        "\u{feff}---\r\nname: \"git-commit\"\r\ndescription: 'Write commit messages; it''s easy'\r\ntags: [git, \"vcs\", 'commit']\r\n---\r\nBody\r\n",
        "git-commit", "Write commit messages; it's easy", &["git", "vcs", "commit"], &[], "Body\r\n",
    ),
    (
        "---\nname: web-search\ndescription: >\n  Search the web\n  and summarise.\n\n  Cite sources.\ntags:\n  - web\n  - search\n---\n",
        "web-search", "Search the web and summarise.\nCite sources.", &["web", "search"], &[], "",
    ),
    (
        "---\nname: notes\ndescription: |\n  Line one\n  Line two\ntags:\n- a\n- b # comment\n---\nrest",
        "notes", "Line one\nLine two", &["a", "b"], &[], "rest",
    ),
    (
        "---\n# a comment\nname: tea2   # trailing comment\ndescription: Brew tea:\n  green or black\ntags: tea, 茶, drinks\nlicense: MIT\nallowed-tools: [read_file, shell]\nmetadata:\n  author: me\n  version: \"1.0\"\n---\n",
        "tea2", "Brew tea: green or black", &["tea", "茶", "drinks"],
        &[("license", "MIT"), ("allowed-tools", "read_file, shell"), ("metadata", "author: me\nversion: \"1.0\"")],
        "",
    ),
    (
        "---\nname: a\ndescription: \"Tab\\there \\u00e9 \\\"q\\\"\"\ntags: single\n---",
        "a", "Tab\there é \"q\"", &["single"], &[], "",
    ),
];

#[test]
fn valid_files_in_several_front_matter_styles() {
    for (file, name, description, tags, extra, body) in VALID {
        let doc = parse_skill_md(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert_eq!(doc.name, *name, "{file:?}");
        assert_eq!(doc.description, *description, "{file:?}");
        assert_eq!(doc.tags, strings(tags), "{file:?}");
        let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| (s(k), s(v))).collect();
        assert_eq!(doc.extra, extra, "{file:?}");
        assert_eq!(doc.body, *body, "{file:?}");
    }
}

#[test]
fn each_error_names_its_line() {
    let long_name = "a".repeat(65);
    let max_name = "a".repeat(64);
    let long_description = "d".repeat(1025);
    let max_description = "d".repeat(1024);
    let file = |name: &str, description: &str| {
        [
            "---\nname: ",
            name,
            "\ndescription: ",
            description,
            "\n---\n",
        ]
        .concat()
    };
    let table: Vec<(String, Result<(), SkillError>)> = vec![
        (s(""), Err(SkillError::NoFrontMatter)),
        (s("# Title\n---\nname: a\n"), Err(SkillError::NoFrontMatter)),
        (s("\n---\nname: a\n---\n"), Err(SkillError::NoFrontMatter)),
        (
            s("---\nname: a\ndescription: b\n"),
            Err(SkillError::UnclosedFrontMatter),
        ),
        (s("---"), Err(SkillError::UnclosedFrontMatter)),
        (
            s("---\nname: a\njust words\n---\n"),
            Err(SkillError::MalformedLine { line: 3 }),
        ),
        (
            s("---\n  name: a\n---\n"),
            Err(SkillError::MalformedLine { line: 2 }),
        ),
        (
            s("---\nname: a\ndescription: \"open\n---\n"),
            Err(SkillError::UnclosedQuote { line: 3 }),
        ),
        (
            s("---\nname: a\ntags: [x, y\n---\n"),
            Err(SkillError::MalformedLine { line: 3 }),
        ),
        (
            s("---\nname: a\nname: b\n---\n"),
            Err(SkillError::DuplicateKey {
                line: 3,
                key: s("name"),
            }),
        ),
        (
            s("---\ndescription: b\n---\n"),
            Err(SkillError::MissingName),
        ),
        (
            s("---\nname: a\n---\n"),
            Err(SkillError::MissingDescription),
        ),
        (
            s("---\nname: a\ndescription:\n---\n"),
            Err(SkillError::MissingDescription),
        ),
        (
            s("---\nname: a\ndescription: \"  \"\n---\n"),
            Err(SkillError::MissingDescription),
        ),
        (
            file("", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s(""),
                problem: NameProblem::Empty,
            }),
        ),
        (file(&max_name, "d"), Ok(())),
        (
            file(&long_name, "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: long_name.clone(),
                problem: NameProblem::TooLong(65),
            }),
        ),
        (
            file("PDF-tools", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s("PDF-tools"),
                problem: NameProblem::InvalidChar('P'),
            }),
        ),
        (
            file("pdf tools", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s("pdf tools"),
                problem: NameProblem::InvalidChar(' '),
            }),
        ),
        (
            file("-pdf", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s("-pdf"),
                problem: NameProblem::EdgeHyphen,
            }),
        ),
        (
            file("pdf-", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s("pdf-"),
                problem: NameProblem::EdgeHyphen,
            }),
        ),
        (
            file("pdf--tools", "d"),
            Err(SkillError::InvalidName {
                line: 2,
                name: s("pdf--tools"),
                problem: NameProblem::DoubleHyphen,
            }),
        ),
        (file("a", &max_description), Ok(())),
        (
            file("a", &long_description),
            Err(SkillError::DescriptionTooLong {
                line: 3,
                chars: 1025,
            }),
        ),
    ];
    for (text, expected) in table {
        let got = parse_skill_md(&text).map(|_| ());
        assert_eq!(got, expected, "{text:?}");
    }
}

#[test]
fn error_messages_point_at_the_line_and_the_fix() {
    let e = parse_skill_md("---\nname: My Skill\ndescription: x\n---\n").unwrap_err();
    let msg = alloc::format!("{e}");
    assert!(msg.contains("line 2") && msg.contains("lowercase"), "{msg}");
}
