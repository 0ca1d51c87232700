use crate::tools::testing::Harness;
use serde_json::json;
use std::os::unix::fs::symlink;

#[test]
fn read_file_returns_windows_of_lines_and_says_how_to_continue() {
    let h = Harness::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    h.write("notes/ten.txt", &text);
    let cases: &[(serde_json::Value, &str, bool)] = &[
        (json!({"path": "notes/ten.txt"}), "line 1\n", true),
        (
            json!({"path": "notes/ten.txt", "offset_line": 9}),
            "line 9\nline 10\n[lines 9–10 of 10]\n",
            false,
        ),
        (
            json!({"path": "notes/ten.txt", "limit_lines": 2}),
            "line 1\nline 2\n[lines 1–2 of 10; continue with offset_line=3]\n",
            false,
        ),
        (
            json!({"path": "notes/ten.txt", "offset_line": 4, "limit_lines": 1}),
            "line 4\n[lines 4–4 of 10; continue with offset_line=5]\n",
            false,
        ),
    ];
    for (args, expected, prefix) in cases {
        let out = h.call("read_file", args.clone());
        assert!(!out.is_error, "{args}: {}", out.content);
        if *prefix {
            assert!(out.content.starts_with(expected), "{args}: {}", out.content);
            assert!(
                !out.content.contains("[lines"),
                "whole file has no note: {}",
                out.content
            );
        } else {
            assert_eq!(out.content, *expected, "{args}");
        }
    }
    let past = h.call(
        "read_file",
        json!({"path": "notes/ten.txt", "offset_line": 11}),
    );
    assert!(past.is_error);
    assert!(past.content.contains("has 10 lines"), "{}", past.content);
}

#[test]
fn read_file_stops_at_the_output_cap() {
    let mut tools = crate::tools::testing::tools_config();
    tools.output_cap = 20;
    let h = Harness::with_tools(tools);
    h.write("big.txt", "aaaaaaaa\nbbbbbbbb\ncccccccc\ndddddddd\n");
    let out = h.call("read_file", json!({"path": "big.txt"}));
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.starts_with("aaaaaaaa\nbbbbbbbb\n["),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("continue with offset_line=3"),
        "{}",
        out.content
    );
    assert!(out.content.contains("of 4"), "{}", out.content);
}

#[test]
fn read_file_refuses_what_it_cannot_show() {
    let h = Harness::new();
    std::fs::write(
        h.workspace.join("img.bin"),
        [0x89, b'P', b'N', b'G', 0, 1, 2],
    )
    .unwrap();
    h.write("d/x.txt", "x");
    let cases: &[(&str, &str)] = &[
        ("img.bin", "binary file"),
        ("d", "is a directory"),
        ("nope.txt", "does not exist"),
        ("../x", "is outside the workspace"),
    ];
    for (path, expected) in cases {
        let out = h.call("read_file", json!({ "path": path }));
        assert!(out.is_error, "{path}");
        assert!(out.content.contains(expected), "{path}: {}", out.content);
    }
    let empty = h.run("read_file", r#"{"path": "d/x.txt", "offset_line": "x"}"#);
    assert!(
        empty.is_error && empty.content.contains("offset_line"),
        "{}",
        empty.content
    );
}

#[test]
fn file_tools_refuse_symlinks_that_leave_the_workspace() {
    let h = Harness::new();
    let outside = h.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
    symlink(&outside, h.workspace.join("link_dir")).unwrap();
    symlink(outside.join("secret.txt"), h.workspace.join("link_file")).unwrap();
    symlink(outside.join("new.txt"), h.workspace.join("dangling")).unwrap();
    let calls = [
        ("read_file", json!({"path": "link_file"})),
        ("read_file", json!({"path": "link_dir/secret.txt"})),
        ("list_dir", json!({"path": "link_dir"})),
        (
            "search_files",
            json!({"pattern": "secret", "path": "link_dir"}),
        ),
        (
            "write_file",
            json!({"path": "link_file", "content": "owned"}),
        ),
        (
            "write_file",
            json!({"path": "link_dir/evil.txt", "content": "owned"}),
        ),
        (
            "write_file",
            json!({"path": "dangling", "content": "owned"}),
        ),
        (
            "edit_file",
            json!({"path": "link_file", "old": "top", "new": "no"}),
        ),
        (
            "write_file",
            json!({"path": outside.join("abs.txt").to_str().unwrap(), "content": "x"}),
        ),
    ];
    for (tool, args) in calls {
        let out = h.call(tool, args.clone());
        assert!(out.is_error, "{tool} {args}: {}", out.content);
        assert!(
            out.content.contains("is outside the workspace"),
            "{tool} {args}: {}",
            out.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "top secret"
    );
    assert!(!outside.join("evil.txt").exists());
    assert!(!outside.join("new.txt").exists());
    assert!(!outside.join("abs.txt").exists());
    // A search of the whole workspace does not follow the links either.
    let all = h.call("search_files", json!({"pattern": "top secret"}));
    assert!(all.content.starts_with("no matches"), "{}", all.content);
}

#[test]
fn list_dir_shows_kinds_and_descends_when_asked() {
    let h = Harness::new();
    h.write("a.txt", "hello");
    h.write("src/main.rs", "fn main() {}");
    h.write("src/deep/er/most/x.rs", "");
    h.write(".git/HEAD", "ref");
    symlink("a.txt", h.workspace.join("link")).unwrap();
    let flat = h.call("list_dir", json!({}));
    assert_eq!(
        flat.content, "./\n.git/\na.txt  (5 B)\nlink -> a.txt\nsrc/\n",
        "{}",
        flat.content
    );
    let deep = h.call("list_dir", json!({"recursive": true}));
    assert!(
        deep.content.contains("src/main.rs  (12 B)"),
        "{}",
        deep.content
    );
    assert!(deep.content.contains("src/deep/er/\n"), "{}", deep.content);
    assert!(
        !deep.content.contains("src/deep/er/most"),
        "depth 3: {}",
        deep.content
    );
    assert!(
        !deep.content.contains("HEAD"),
        ".git not entered: {}",
        deep.content
    );
    let sub = h.call("list_dir", json!({"path": "src"}));
    assert!(
        sub.content.starts_with("src/\ndeep/\nmain.rs"),
        "{}",
        sub.content
    );
}

#[test]
fn list_dir_stops_at_the_entry_limit() {
    let h = Harness::new();
    for i in 0..510 {
        h.write(&format!("f{i:03}.txt"), "");
    }
    let out = h.call("list_dir", json!({}));
    assert!(out.content.contains("f499.txt"));
    assert!(!out.content.contains("f500.txt"));
    assert!(
        out.content.contains("stopped at 500 entries"),
        "{}",
        out.content
    );
}

#[test]
fn search_files_never_prints_what_read_file_refuses() {
    let h = Harness::new();
    h.write(".env", "DB_PASSWORD=hunter2-secret\n");
    h.write("config/.env.production", "PASSWORD=prod-secret\n");
    h.write(
        ".ssh/id_rsa",
        "-----BEGIN OPENSSH PRIVATE KEY-----\npassword-in-key\n",
    );
    h.write("certs/server.key", "password-in-pem\n");
    h.write("notes.md", "the password policy is in the wiki\n");
    h.write(".env.example", "DB_PASSWORD=change-me\n");
    let out = h.call("search_files", json!({"pattern": "password"}));
    assert!(!out.is_error, "{}", out.content);
    for secret in [
        "hunter2",
        "prod-secret",
        "password-in-key",
        "password-in-pem",
    ] {
        assert!(!out.content.contains(secret), "{secret}: {}", out.content);
    }
    assert!(out.content.contains("notes.md:1:"), "{}", out.content);
    assert!(out.content.contains(".env.example:1:"), "{}", out.content);
    assert!(out.content.contains("4 holding secrets"), "{}", out.content);
    let listed = h.call("list_dir", json!({"recursive": true}));
    assert!(listed.content.contains(".ssh/"), "{}", listed.content);
    assert!(!listed.content.contains("id_rsa"), "{}", listed.content);
}

#[test]
fn search_files_finds_lines_case_insensitively_and_skips_what_it_should() {
    let h = Harness::new();
    h.write("src/lib.rs", "// TODO: fix\nfn a() {}\n// todo later\n");
    h.write("README.md", "Nothing to do here\nA todo item\n");
    h.write(".git/config", "todo in git\n");
    std::fs::write(h.workspace.join("blob.bin"), b"todo\0binary").unwrap();
    std::fs::write(
        h.workspace.join("huge.log"),
        vec![b't'; 2 * 1024 * 1024 + 1],
    )
    .unwrap();
    let out = h.call("search_files", json!({"pattern": "todo"}));
    assert!(!out.is_error);
    assert!(
        out.content.starts_with(
            "README.md:2: A todo item\nsrc/lib.rs:1: // TODO: fix\nsrc/lib.rs:3: // todo later\n"
        ),
        "{}",
        out.content
    );
    assert!(!out.content.contains(".git"), "{}", out.content);
    assert!(
        out.content.contains("skipped 1 binary, 1 over 2.0 MiB"),
        "{}",
        out.content
    );
    let rs = h.call("search_files", json!({"pattern": "TODO", "glob": "*.rs"}));
    assert!(!rs.content.contains("README"), "{}", rs.content);
    assert!(
        rs.content.contains("3 matching lines") || rs.content.contains("2 matching lines"),
        "{}",
        rs.content
    );
    let one = h.call(
        "search_files",
        json!({"pattern": "fn a", "path": "src/lib.rs"}),
    );
    assert!(
        one.content.starts_with("src/lib.rs:2: fn a() {}"),
        "{}",
        one.content
    );
    let none = h.call("search_files", json!({"pattern": "zebra"}));
    assert!(
        !none.is_error && none.content.starts_with("no matches for \"zebra\""),
        "{}",
        none.content
    );
}

#[test]
fn search_files_stops_at_200_hits() {
    let h = Harness::new();
    let text: String = (0..250).map(|i| format!("hit {i}\n")).collect();
    h.write("many.txt", &text);
    let out = h.call("search_files", json!({"pattern": "hit"}));
    assert_eq!(
        out.content
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        200
    );
    assert!(out.content.contains("stopped early"), "{}", out.content);
}

#[test]
fn globs_match_file_names() {
    let cases: &[(&str, &str, bool)] = &[
        ("*.rs", "main.rs", true),
        ("*.rs", "main.rsx", false),
        ("*.RS", "main.rs", true),
        ("*.tar.gz", "a.tar.gz", true),
        ("test_*", "test_x.py", true),
        ("test_*", "x_test.py", false),
        ("?.md", "a.md", true),
        ("?.md", "ab.md", false),
        ("*", "anything", true),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "aXbY", false),
    ];
    for (p, n, want) in cases {
        assert_eq!(super::search::glob_match(p, n), *want, "{p} {n}");
    }
}

#[test]
fn write_file_creates_replaces_and_appends() {
    let h = Harness::new();
    let out = h.call(
        "write_file",
        json!({"path": "deep/new/file.md", "content": "one\n"}),
    );
    assert_eq!(out.content, "created deep/new/file.md with 4 bytes");
    let out = h.call(
        "write_file",
        json!({"path": "deep/new/file.md", "content": "two\n", "append": true}),
    );
    assert_eq!(out.content, "appended 4 bytes to deep/new/file.md");
    assert_eq!(h.read("deep/new/file.md"), "one\ntwo\n");
    let out = h.call(
        "write_file",
        json!({"path": "deep/new/file.md", "content": "three"}),
    );
    assert_eq!(out.content, "replaced deep/new/file.md with 5 bytes");
    assert_eq!(h.read("deep/new/file.md"), "three");
    let dir = h.call("write_file", json!({"path": "deep", "content": "x"}));
    assert!(
        dir.is_error && dir.content.contains("is a directory"),
        "{}",
        dir.content
    );
    let root = h.call("write_file", json!({"path": ".", "content": "x"}));
    assert!(root.is_error, "{}", root.content);
    // Through a symlink that stays inside: writes the real file.
    symlink("deep/new/file.md", h.workspace.join("alias.md")).unwrap();
    let out = h.call(
        "write_file",
        json!({"path": "alias.md", "content": "via link"}),
    );
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(h.read("deep/new/file.md"), "via link");
}

#[test]
fn edit_file_replaces_exactly_one_match_unless_told_otherwise() {
    let h = Harness::new();
    h.write("a.txt", "alpha\nbeta\nalpha\n");
    let cases: &[(serde_json::Value, bool, &str)] = &[
        (
            json!({"path": "a.txt", "old": "alpha", "new": "x"}),
            true,
            "appears 2 times in a.txt (lines 1, 3)",
        ),
        (
            json!({"path": "a.txt", "old": "gamma", "new": "x"}),
            true,
            "was not found in a.txt",
        ),
        (
            json!({"path": "a.txt", "old": "BETA ", "new": "x"}),
            true,
            "at line 2",
        ),
        (
            json!({"path": "a.txt", "old": "", "new": "x"}),
            true,
            "`old` is empty",
        ),
        (
            json!({"path": "a.txt", "old": "beta", "new": "beta"}),
            true,
            "the same",
        ),
        (
            json!({"path": "missing.txt", "old": "a", "new": "b"}),
            true,
            "does not exist",
        ),
        (
            json!({"path": "a.txt", "old": "beta", "new": "BETA"}),
            false,
            "edited a.txt at line 2",
        ),
    ];
    for (args, is_error, expected) in cases {
        let out = h.call("edit_file", args.clone());
        assert_eq!(out.is_error, *is_error, "{args}: {}", out.content);
        assert!(out.content.contains(expected), "{args}: {}", out.content);
    }
    assert_eq!(h.read("a.txt"), "alpha\nBETA\nalpha\n");
    let all = h.call(
        "edit_file",
        json!({"path": "a.txt", "old": "alpha", "new": "omega", "replace_all": true}),
    );
    assert_eq!(
        all.content,
        "replaced 2 occurrences in a.txt (first at line 1)"
    );
    assert_eq!(h.read("a.txt"), "omega\nBETA\nomega\n");
}

#[test]
fn edit_file_matches_lf_text_in_a_crlf_file() {
    let h = Harness::new();
    h.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    let out = h.call(
        "edit_file",
        json!({"path": "win.txt", "old": "one\ntwo", "new": "1\n2"}),
    );
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(h.read("win.txt"), "1\r\n2\r\nthree\r\n");
}
