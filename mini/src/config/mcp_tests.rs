use super::*;
use crate::config::tests::{load_in, load_text};
use crate::config::{check, LoadOptions, Loaded, CONFIG_FILE};

fn ok(text: &str, env: &[(&str, &str)]) -> Loaded {
    load_text(text, env).unwrap_or_else(|e| panic!("{text:?} should load: {e}"))
}

#[test]
fn servers_are_read_with_every_key() {
    let text = r#"
[mcp]
timeout_secs = 30

[mcp.servers.files]
command = " npx "
args = ["-y", "@modelcontextprotocol/server-filesystem", "/"]
env = { B = "2", A = "1" }
cwd = "~/work"
trusted = true
enabled_tools = ["read_file", " list_directory "]
disabled_tools = ["write_file"]

[mcp.servers.remote]
url = "http://127.0.0.1:3001/mcp"
headers = { X-Api-Key = "k-0123456789abcdef" }
bearer_token_env = "REMOTE_TOKEN"
timeout_secs = 5
disabled = true
roots = ["/srv/data", "rel"]
"#;
    let (loaded, home) = load_in(
        Some(text),
        &[("REMOTE_TOKEN", "tok-0123456789abcdef")],
        &LoadOptions::default(),
    );
    let mcp = loaded.expect("loads").config.mcp;
    assert_eq!(mcp.timeout, Duration::from_secs(30));
    assert!(mcp.warnings.is_empty(), "{:?}", mcp.warnings);
    assert!(mcp.secrets_in_file, "a header value is written in the file");
    let [files, remote] = &mcp.servers[..] else {
        panic!("two servers: {:?}", mcp.servers)
    };
    assert_eq!(
        files.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-filesystem".into(),
                "/".into()
            ],
            env: vec![("A".into(), "1".into()), ("B".into(), "2".into())],
            cwd: Some(home.path().join("work")),
        }
    );
    // The server's own timeout wins; the [mcp] one is the default.
    assert_eq!((files.timeout.as_secs(), remote.timeout.as_secs()), (30, 5));
    assert!(files.trusted && !remote.trusted);
    assert_eq!(
        files.enabled_tools,
        Some(vec!["read_file".into(), "list_directory".into()])
    );
    assert!(files.offers("list_directory") && !files.offers("write_file"));
    // Default roots: the existing absolute directories among the arguments, and
    // the cwd.
    assert_eq!(files.roots, [PathBuf::from("/"), home.path().join("work")]);
    let Transport::Http {
        url,
        headers,
        bearer,
        ..
    } = &remote.transport
    else {
        panic!("http: {remote:?}")
    };
    assert_eq!(url, "http://127.0.0.1:3001/mcp");
    assert_eq!(
        headers,
        &[("X-Api-Key".to_string(), "k-0123456789abcdef".to_string())]
    );
    assert_eq!(
        bearer.as_ref().map(Secret::expose),
        Some("tok-0123456789abcdef")
    );
    assert!(remote.disabled);
    assert_eq!(
        remote.roots,
        [PathBuf::from("/srv/data"), home.path().join("rel")]
    );
    assert!(mcp
        .servers
        .iter()
        .all(|s| s.source == SpecSource::ConfigFile));
    assert_eq!(mcp.places["files"].line, 5);
    assert_eq!(
        mcp.places["remote"].to_string(),
        "line 14, [mcp.servers.remote]"
    );
}

#[test]
fn mistakes_name_the_line_the_server_and_what_to_do() {
    let cases: &[(&str, &[&str])] = &[
            (
                "[mcp.servers.a]\ncommand = \"x\"\ncomand = \"y\"\n",
                &["unknown key `comand`", "line 3", "[mcp.servers.a]"],
            ),
            ("[mcp]\ntimeuot_secs = 5\n", &["unknown key `timeuot_secs`", "line 2"]),
            (
                "[mcp]\n\n[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
                &["line 3", "[mcp.servers.a]", "both `command` and `url`"],
            ),
            ("[mcp.servers.a]\ntrusted = true\n", &["line 1", "neither"]),
            (
                "[mcp.servers.\"my server\"]\ncommand = \"x\"\n",
                &["line 1", "\"my server\"", "not a usable MCP server name"],
            ),
            (
                "[mcp.servers]\nok = { command = \"x\" }\nfs__x = { command = \"y\" }\n",
                &["line 3", "fs__x", "__"],
            ),
            (
                "[mcp]\nservers.b = { command = \"x\", headers = { A = \"b\" } }\n",
                &["line 2", "`headers` only applies to a server with `url`"],
            ),
            (
                "[mcp.servers.a]\nurl = \"http://h/mcp\"\nargs = [\"x\"]\n",
                &["line 1", "`args` only applies to a server with `command`"],
            ),
            (
                "[mcp.servers.a]\nurl = \"127.0.0.1:3001/mcp\"\n",
                &["line 1", "http://"],
            ),
            (
                "[mcp.servers.a]\nurl = \"http://h/mcp\"\nbearer_token = \"t\"\nbearer_token_env = \"T\"\n",
                &["line 1", "keep one"],
            ),
            (
                "[mcp.servers.a]\nurl = \"http://h/mcp\"\nheaders = { \"Bad Name\" = \"v\" }\n",
                &["line 1", "header name"],
            ),
            (
                "[mcp.servers.a]\ncommand = \"x\"\ntimeout_secs = 0\n",
                &["mcp.servers.a.timeout_secs", "at least 1 second"],
            ),
            ("[mcp]\ntimeout_secs = 0\n", &["mcp.timeout_secs"]),
            (
                "[mcp.servers.a]\ncommand = \"x\"\ndisabled_tools = [\" \"]\n",
                &["line 1", "empty tool name"],
            ),
            (
                "[mcp.servers.a]\ncommand = \"x\"\nargs = \"-y pkg\"\n",
                &["line 3", "`args`"],
            ),
            (
                "[profiles.p.mcp.servers.a]\ncommand = \"x\"\nbogus = 1\n",
                &["unknown key `bogus`", "line 3"],
            ),
        ];
    for (text, wants) in cases {
        let (result, home) = load_in(Some(text), &[], &LoadOptions::default());
        let e = result.expect_err(text).to_string();
        assert!(
            e.contains(&home.path().join(CONFIG_FILE).display().to_string()),
            "{e}"
        );
        for want in *wants {
            assert!(e.contains(want), "{text:?}: {want:?} not in {e}");
        }
    }
}

#[test]
fn a_profile_replaces_a_server_as_a_whole() {
    let text = r#"
[mcp.servers.s]
command = "local-server"
args = ["--verbose"]
[mcp.servers.keep]
command = "k"
[profiles.cloud.mcp.servers.s]
url = "https://s.example/mcp"
"#;
    let opts = LoadOptions {
        profile: Some("cloud".into()),
        workspace: None,
    };
    let (loaded, _home) = load_in(Some(text), &[], &opts);
    let mcp = loaded.expect("a url replaces the command").config.mcp;
    let kinds: Vec<(&str, bool)> = mcp
        .servers
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                matches!(s.transport, Transport::Http { .. }),
            )
        })
        .collect();
    assert_eq!(kinds, [("keep", false), ("s", true)]);
    assert_eq!(
        mcp.places["s"].to_string(),
        "line 7, [profiles.cloud.mcp.servers.s]"
    );
    assert_eq!(mcp.places["keep"].line, 5);
    // Without the profile, the top level's server.
    let top = ok(text, &[]).config.mcp;
    assert!(matches!(top.servers[1].transport, Transport::Stdio { .. }));
    assert_eq!(top.places["s"].line, 2);
}

#[test]
fn a_token_variable_that_is_not_set_is_a_warning() {
    let text = "[mcp.servers.r]\nurl = \"http://127.0.0.1:1/mcp\"\nbearer_token_env = \"NOPE\"\n";
    let loaded = ok(text, &[]);
    let r = &loaded.config.mcp.servers[0];
    assert!(matches!(&r.transport, Transport::Http { bearer: None, .. }));
    assert!(loaded.config.mcp.warnings[0].contains("NOPE"));
    // `config check` reports it.
    let home = crate::testing::TempDir::new("mcp-check");
    std::fs::write(home.path().join(CONFIG_FILE), text).expect("write");
    let dir = home.path().to_string_lossy().into_owned();
    let env = move |name: &str| (name == "EVOLVE_HOME").then(|| dir.clone().into());
    let checked = check(&LoadOptions::default(), &env).expect("valid");
    assert!(
        checked.warnings.iter().any(|w| w.contains("NOPE")),
        "{:?}",
        checked.warnings
    );
}

#[cfg(unix)]
#[test]
fn check_warns_about_a_token_others_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let cases = [
        (
            "[mcp.servers.r]\nurl = \"http://h/mcp\"\nbearer_token = \"t\"\n",
            true,
        ),
        (
            "[mcp.servers.r]\nurl = \"http://h/mcp\"\nheaders = { A = \"b\" }\n",
            true,
        ),
        (
            "[mcp.servers.r]\nurl = \"http://h/mcp\"\nbearer_token_env = \"T\"\n",
            false,
        ),
    ];
    for (text, warned) in cases {
        let home = crate::testing::TempDir::new("mcp-mode");
        let file = home.path().join(CONFIG_FILE);
        std::fs::write(&file, text).expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let dir = home.path().to_string_lossy().into_owned();
        let env = move |name: &str| match name {
            "EVOLVE_HOME" => Some(dir.clone().into()),
            "T" => Some("tok".into()),
            _ => None,
        };
        let checked = check(&LoadOptions::default(), &env).expect("valid");
        let readable = checked.warnings.iter().any(|w| w.contains("chmod 600"));
        assert_eq!(readable, warned, "{text}: {:?}", checked.warnings);
    }
}

#[test]
fn config_show_masks_tokens_headers_and_environment_values() {
    let text = r#"
[mcp.servers.a]
command = "x"
env = { GITHUB_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz" }
[mcp.servers.b]
url = "https://user:pw@h.example/mcp"
headers = { Authorization = "Bearer abcdefghijklmnopqrstuvwxyz" }
bearer_token = "tok_abcdefghijklmnopqrstuvwxyz"
"#;
    let loaded = ok(text, &[]);
    let json = loaded.to_json();
    let shown = [json.to_string(), loaded.to_text()];
    for out in &shown {
        for secret in ["abcdefghijklmnop", "user:pw"] {
            assert!(!out.contains(secret), "{secret} shown in\n{out}");
        }
    }
    assert_eq!(json["mcp"]["timeout_secs"], 60);
    assert_eq!(json["mcp"]["servers"]["a"]["command"], "x");
    assert_eq!(json["mcp"]["servers"]["b"]["url"], "https://h.example/mcp");
    let text = loaded.to_text();
    for want in [
        "[mcp]",
        "[mcp.servers.a]",
        "env = { GITHUB_TOKEN = ",
        "[mcp.servers.b]",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
}

#[test]
fn definitions_are_found_in_every_spelling() {
    let text = "# [mcp.servers.a] in a comment\n[mcp]\nservers.b = {}\n[mcp.servers]\n\"c\" = {}\n[ mcp . servers . 'd' ]\n[profiles.p.mcp.servers.a]\n";
    let line = |profile: &str, name: &str| server_place(text, profile, name).map(|p| p.line);
    assert_eq!(line("default", "a"), None);
    assert_eq!(line("p", "a"), Some(7));
    assert_eq!(line("default", "b"), Some(3));
    assert_eq!(line("default", "c"), Some(5));
    assert_eq!(line("default", "d"), Some(6));
    assert_eq!(line("p", "d"), Some(6));
}
