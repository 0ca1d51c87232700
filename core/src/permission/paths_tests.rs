use super::*;

const ROOT: &str = "/home/u/.evolve/workspace";

#[test]
fn workspace_paths_table() {
    let cases: &[(&str, Option<PathProblem>)] = &[
        ("notes/a.md", None),
        ("./notes/a.md", None),
        ("a/../b", None),
        ("sub/../x", None),
        (".", None),
        ("../etc/passwd", Some(PathProblem::Outside)),
        ("..", Some(PathProblem::Outside)),
        ("sub/../../x", Some(PathProblem::Outside)),
        ("a/b/../../../x", Some(PathProblem::Outside)),
        ("a\\..\\..\\x", Some(PathProblem::Outside)),
        ("/etc/passwd", Some(PathProblem::Outside)),
        ("/", Some(PathProblem::Outside)),
        ("/home/u/.evolve/workspace", None),
        ("/home/u/.evolve/workspace/notes/a.md", None),
        (
            "/home/u/.evolve/workspace/../secrets",
            Some(PathProblem::Outside),
        ),
        (
            "/home/u/.evolve/workspace-evil/x",
            Some(PathProblem::Outside),
        ),
        ("/home/u/.evolve/work", Some(PathProblem::Outside)),
        ("//home/u/.evolve/workspace/./x", None),
        ("C:\\Windows\\system32", Some(PathProblem::Outside)),
        ("~/x", Some(PathProblem::Home)),
        ("~", Some(PathProblem::Home)),
        ("~root/.bashrc", Some(PathProblem::Home)),
        ("$HOME/x", Some(PathProblem::Home)),
        ("${HOME}/x", Some(PathProblem::Home)),
        ("$HOMEWORK/x", None),
        ("${HOME%/}/.bash_history", Some(PathProblem::Home)),
        ("${HOME:-x}/y", Some(PathProblem::Home)),
        ("${HOMEWORK}/x", None),
        ("file:///etc/passwd", Some(PathProblem::Outside)),
        ("file:/etc/passwd", Some(PathProblem::Outside)),
        ("file:/home/u/.evolve/workspace/a", None),
        ("file:notes/a.md", None),
        ("file:../x", Some(PathProblem::Outside)),
        ("/dev/null", None),
        ("/dev/sda", Some(PathProblem::Outside)),
        ("/dev/fd/1", None),
        ("/dev/zero", Some(PathProblem::EndlessDevice)),
        ("/dev/./zero", Some(PathProblem::EndlessDevice)),
        ("//dev//zero", Some(PathProblem::EndlessDevice)),
        ("/dev/../dev/urandom", Some(PathProblem::EndlessDevice)),
        ("/dev/random/", Some(PathProblem::EndlessDevice)),
        ("file:///dev/zero", Some(PathProblem::EndlessDevice)),
        ("/dev/%7aero", Some(PathProblem::Outside)),
        ("/dev/zero0", Some(PathProblem::Outside)),
        ("/dev/ze*", Some(PathProblem::Outside)),
        ("/dev/full", Some(PathProblem::Outside)),
    ];
    for (path, want) in cases {
        assert_eq!(path_problem(path, ROOT, &[]), *want, "{path}");
    }
}

#[test]
fn drive_relative_and_encoded_paths_table() {
    let cases: &[(&str, Option<PathProblem>)] = &[
        ("C:foo", Some(PathProblem::Outside)),
        ("c:..\\x", Some(PathProblem::Outside)),
        ("C:", Some(PathProblem::Outside)),
        ("file:///home/u/.evolve/workspace/a.md", None),
        (
            "file:///home/u/.evolve/workspace/%2e%2e/%2E%2E/etc/passwd",
            Some(PathProblem::Outside),
        ),
        (
            "file:///home/u/.evolve/workspace%2f..%2f..%2fetc",
            Some(PathProblem::Outside),
        ),
        ("file://localhost/etc/passwd", Some(PathProblem::Outside)),
        ("file://localhost/home/u/.evolve/workspace/a.md", None),
        ("file://evil.example/share/x", Some(PathProblem::Outside)),
        ("%2e%2e/etc/passwd", Some(PathProblem::Outside)),
        ("notes/%2e%2e/%2e%2e/x", Some(PathProblem::Outside)),
        ("notes/100%25.md", None),
        ("notes/50%.md", None),
        ("%zz", None),
    ];
    for (path, want) in cases {
        assert_eq!(path_problem(path, ROOT, &[]), *want, "{path}");
    }
}

#[test]
fn extra_roots_admit_their_paths_only() {
    let extra = ["/data/shared", "D:\\projects"];
    let cases: &[(&str, Option<PathProblem>)] = &[
        ("/data/shared/a.csv", None),
        ("/data/shared", None),
        ("/data/shared/../secret", Some(PathProblem::Outside)),
        ("/data/sharedx/a", Some(PathProblem::Outside)),
        ("/data", Some(PathProblem::Outside)),
        ("d:/projects/x", None),
        ("/etc/passwd", Some(PathProblem::Outside)),
        ("~/x", Some(PathProblem::Home)),
        ("/home/u/.evolve/workspace/a", None),
    ];
    for (path, want) in cases {
        assert_eq!(path_problem(path, ROOT, &extra), *want, "{path}");
    }
    // An empty or relative extra root admits nothing.
    assert_eq!(
        path_problem("/x", "", &["", "rel"]),
        Some(PathProblem::Outside)
    );
}

#[test]
fn unknown_root_puts_every_absolute_path_outside() {
    assert_eq!(path_problem("/x", "", &[]), Some(PathProblem::Outside));
    assert_eq!(path_problem("x", "", &[]), None);
    assert_eq!(path_problem("/x", "", &["/x"]), None);
}

#[test]
fn what_looks_like_a_path() {
    for yes in [
        "/x",
        "~/x",
        "./a",
        "../a",
        "a/b",
        "a\\b",
        "..",
        "file:///x",
        "$HOME",
        "file:/etc/passwd",
        "..%2f..%2fetc",
        "%2e%2e%2fx",
    ] {
        assert!(looks_like_path(yes), "{yes}");
    }
    for no in ["", "hello", "https://example.com/a/b", "a.md", "2024"] {
        assert!(!looks_like_path(no), "{no}");
    }
}

#[test]
fn secret_files_table() {
    for yes in [
        "~/.ssh/id_rsa",
        ".ssh/",
        "keys/id_ed25519",
        "ID_RSA",
        ".env",
        "app/.env.production",
        "/etc/shadow",
        "/home/u/.aws/credentials",
        ".netrc",
        ".git-credentials",
        "x/.gnupg/pubring.kbx",
        "/etc/sudoers",
        "file:///w/%2eenv",
        "keys%2fid_rsa",
        ".e?v",
        ".en[v]",
        ".ss?/id_*",
        "secrets/.env*",
        ".*",
        "/etc/sh*w",
        "id_[a-z]sa",
        "x.pem",
        "certs/server.key",
        "credentials.json",
        ".envrc",
        ".env_prod",
        "/home/u/.config/gh/hosts.yml",
        "infra/terraform.tfstate",
        "terraform.tfstate.backup",
        "file:/etc/shadow",
        "*.pem",
    ] {
        assert!(names_secret(yes), "{yes}");
    }
    for no in [
        "notes/a.md",
        ".env.example",
        "environment.md",
        ".envrc.md",
        "id_rsa.pub",
        "/etc/passwd",
        "src/ssh.rs",
        "docs/aws/credentials-guide.md",
        "*",
        "src/*.rs",
        "*.md",
        ".e[!n]v",
        "id_*.pub",
        "[",
        "a[b",
        "key",
        ".key",
        "keys.md",
        "monkey",
        "pem",
        "hosts.yml",
    ] {
        assert!(!names_secret(no), "{no}");
    }
}
