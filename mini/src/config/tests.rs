use super::*;
use std::path::Path;

/// The home directory of a test.
pub(crate) type TempHome = crate::testing::TempDir;

/// An environment of exactly `pairs`.
fn env_of<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

/// Loads `text` (None: no file) as `$EVOLVE_HOME/config.toml` of a fresh home, with
/// `HOME` = that home too and the other variables of `pairs`.
pub(crate) fn load_in(
    text: Option<&str>,
    pairs: &[(&str, &str)],
    opts: &LoadOptions,
) -> (Result<Loaded, ConfigError>, TempHome) {
    let home = TempHome::new("config");
    if let Some(text) = text {
        std::fs::write(home.path().join(CONFIG_FILE), text).expect("write config");
    }
    let dir = home.path().to_string_lossy().into_owned();
    let mut all: Vec<(&str, &str)> = vec![("EVOLVE_HOME", &dir), ("HOME", &dir)];
    all.extend_from_slice(pairs);
    let env = env_of(&all);
    (Config::load_from(opts, &env), home)
}

pub(crate) fn load_text(text: &str, pairs: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    load_in(Some(text), pairs, &LoadOptions::default()).0
}

pub(crate) fn assert_same(got: &Config, want: &Config) {
    assert_eq!(got, want);
}

fn ok(text: &str, pairs: &[(&str, &str)]) -> Loaded {
    load_text(text, pairs).unwrap_or_else(|e| panic!("{text:?} should load: {e}"))
}

fn err(text: &str, pairs: &[(&str, &str)]) -> String {
    match load_text(text, pairs) {
        Ok(_) => panic!("{text:?} should not load"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn nothing_configured_gives_the_documented_defaults() {
    let env = [("HOME", "/nonexistent-evolve-home")];
    let loaded = Config::load_from(&LoadOptions::default(), &env_of(&env)).expect("loads");
    let c = &loaded.config;
    let home = PathBuf::from("/nonexistent-evolve-home/.evolve");
    assert_eq!(c, &Config::defaults(home.clone()));
    assert!(!loaded.file_exists);
    assert_eq!(c.file, home.join("config.toml"));
    assert_eq!(c.workspace, home.join("workspace"));
    assert_eq!(c.store_path(), home.join("evolve.redb"));
    assert_eq!(c.skills_dir(), home.join("skills"));
    assert_eq!(c.profile, "default");
    assert_eq!(c.log, "warn");
    let m = &c.model;
    assert_eq!(
        (m.base_url.as_str(), m.base_url_is_default),
        (DEFAULT_BASE_URL, true)
    );
    assert_eq!((m.main.as_str(), m.cheap.as_str()), ("default", "default"));
    assert_eq!((m.context_window, m.reserved_output), (8192, 1024));
    assert_eq!((m.max_retries, m.stream, m.temperature), (2, true, None));
    let secs = |d: Duration| d.as_secs();
    let t = &m.timeouts;
    assert_eq!(
        [
            secs(t.connect),
            secs(t.first_byte),
            secs(t.per_read),
            secs(t.overall)
        ],
        [10, 120, 60, 600]
    );
    let a = &c.agent;
    assert_eq!(
        (a.max_steps, a.reflect_every, a.style_notes_max),
        (8, 10, 8)
    );
    assert_eq!((a.reflect_below, a.style_above), (0.5, 0.8));
    assert_eq!((secs(a.background_wait), a.learn), (60, true));
    let tools = &c.tools;
    assert_eq!(
        (
            secs(tools.shell_timeout),
            tools.output_cap,
            secs(tools.http_timeout)
        ),
        (30, 128 * 1024, 20)
    );
    assert!(!tools.http_allow_private && tools.levels.is_empty());
    assert_eq!(c.core, CoreConfig::default());
    assert_eq!(loaded.origins.get("model.base_url"), &Origin::Default);
    assert_eq!(loaded.origins.get("model.cheap"), &Origin::Main);
}

#[test]
fn no_home_at_all_is_an_error_that_says_what_to_set() {
    let e = Config::load_from(&LoadOptions::default(), &env_of(&[])).expect_err("no home");
    assert!(matches!(e, ConfigError::NoHome));
    assert!(e.to_string().contains("EVOLVE_HOME"));
}

/// The layered file of the precedence table.
const LAYERED: &str = r#"
profile = "work"
[model]
base_url = "http://file.example/v1/"
main = "file-main"
context_window = 32768
[profiles.work.model]
main = "work-main"
[profiles.cloud.model]
base_url = "https://cloud.example/v1"
main = "cloud-main"
cheap = "cloud-cheap"
"#;

#[test]
fn precedence_defaults_file_profile_env_flag() {
    struct Case {
        name: &'static str,
        env: &'static [(&'static str, &'static str)],
        flag: Option<&'static str>,
        want: (&'static str, &'static str, &'static str, &'static str),
        main_from: Origin,
    }
    let cases = [
        Case {
            name: "file's profile key chooses work; work overrides main only",
            env: &[],
            flag: None,
            want: ("work", "http://file.example/v1", "work-main", "work-main"),
            main_from: Origin::Profile("work".into()),
        },
        Case {
            name: "EVOLVE_PROFILE beats the file's profile key",
            env: &[("EVOLVE_PROFILE", "cloud")],
            flag: None,
            want: (
                "cloud",
                "https://cloud.example/v1",
                "cloud-main",
                "cloud-cheap",
            ),
            main_from: Origin::Profile("cloud".into()),
        },
        Case {
            name: "--profile beats EVOLVE_PROFILE; `default` is the top level alone",
            env: &[("EVOLVE_PROFILE", "cloud")],
            flag: Some("default"),
            want: (
                "default",
                "http://file.example/v1",
                "file-main",
                "file-main",
            ),
            main_from: Origin::File,
        },
        Case {
            name: "environment beats the profile; cheap follows the effective main",
            env: &[
                ("EVOLVE_MODEL", "env-main"),
                ("OPENAI_BASE_URL", "http://env.example:8080/v1//"),
            ],
            flag: None,
            want: ("work", "http://env.example:8080/v1", "env-main", "env-main"),
            main_from: Origin::Env("EVOLVE_MODEL".into()),
        },
        Case {
            name: "EVOLVE_CHEAP_MODEL beats the cheap of a profile chosen by the file",
            env: &[("EVOLVE_CHEAP_MODEL", "env-cheap"), ("EVOLVE_PROFILE", "")],
            flag: None,
            want: ("work", "http://file.example/v1", "work-main", "env-cheap"),
            main_from: Origin::Profile("work".into()),
        },
        Case {
            name: "a profile named by --profile beats the environment for what it sets",
            env: &[
                ("EVOLVE_CHEAP_MODEL", "env-cheap"),
                ("EVOLVE_MODEL", "env-main"),
                ("OPENAI_BASE_URL", "http://env.example:8080/v1"),
            ],
            flag: Some("cloud"),
            want: (
                "cloud",
                "https://cloud.example/v1",
                "cloud-main",
                "cloud-cheap",
            ),
            main_from: Origin::ProfileOverEnv("cloud".into(), "EVOLVE_MODEL".into()),
        },
        Case {
            name: "named by EVOLVE_PROFILE: the same; the environment fills the rest",
            env: &[
                ("EVOLVE_PROFILE", "work"),
                ("EVOLVE_MODEL", "env-main"),
                ("OPENAI_BASE_URL", "http://env.example:8080/v1"),
            ],
            flag: None,
            want: (
                "work",
                "http://env.example:8080/v1",
                "work-main",
                "work-main",
            ),
            main_from: Origin::ProfileOverEnv("work".into(), "EVOLVE_MODEL".into()),
        },
        Case {
            name: "--profile default keeps the environment over the file",
            env: &[("EVOLVE_MODEL", "env-main")],
            flag: Some("default"),
            want: ("default", "http://file.example/v1", "env-main", "env-main"),
            main_from: Origin::Env("EVOLVE_MODEL".into()),
        },
        Case {
            name: "empty variables count as unset",
            env: &[("EVOLVE_MODEL", ""), ("OPENAI_BASE_URL", "  ")],
            flag: None,
            want: ("work", "http://file.example/v1", "work-main", "work-main"),
            main_from: Origin::Profile("work".into()),
        },
    ];
    for case in cases {
        let opts = LoadOptions {
            profile: case.flag.map(String::from),
            workspace: None,
        };
        let (loaded, _home) = load_in(Some(LAYERED), case.env, &opts);
        let loaded = loaded.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let m = &loaded.config.model;
        assert_eq!(
            (
                loaded.config.profile.as_str(),
                m.base_url.as_str(),
                m.main.as_str(),
                m.cheap.as_str()
            ),
            case.want,
            "{}",
            case.name
        );
        assert!(!m.base_url_is_default, "{}", case.name);
        // Keys the profile does not set come from the file.
        assert_eq!(m.context_window, 32768, "{}", case.name);
        assert_eq!(
            loaded.origins.get("model.main"),
            &case.main_from,
            "{}",
            case.name
        );
        assert_eq!(loaded.profiles, ["cloud", "work"]);
    }
}

#[test]
fn a_named_profile_lists_the_variables_it_overrode() {
    let file = r#"
[model]
api_key = "sk-file-0123456789"
[profiles.alt]
log = "debug"
[profiles.alt.model]
base_url = "http://alt.example/v1"
cheap = "alt-cheap"
[profiles.keyed.model]
base_url = "http://keyed.example/v1"
api_key_env = "ALT_KEY"
[profiles.models.model]
main = "m"
"#;
    let env: &[(&str, &str)] = &[
        ("OPENAI_BASE_URL", "http://env.example/v1"),
        ("OPENAI_API_KEY", "sk-env-0123456789"),
        ("EVOLVE_MODEL", "env-main"),
        ("EVOLVE_LOG", "info"),
        ("ALT_KEY", "sk-alt-0123456789"),
    ];
    let cases: [(&str, &[&str], &str, &str); 3] = [
            // alt's own server gets neither the environment's key nor its URL; the
            // top level's key still applies (the file merges key by key).
            (
                "alt",
                &[
                    "profile alt sets log; EVOLVE_LOG from the environment is ignored",
                    "profile alt sets [model] base_url; OPENAI_BASE_URL from the environment is ignored",
                    "profile alt sets [model] base_url but no key; OPENAI_API_KEY from the environment is not sent to that server",
                ],
                "http://alt.example/v1",
                "sk-file-0123456789",
            ),
            (
                "keyed",
                &[
                    "profile keyed sets [model] base_url; OPENAI_BASE_URL",
                    "profile keyed sets [model] api_key_env; OPENAI_API_KEY",
                ],
                "http://keyed.example/v1",
                "sk-alt-0123456789",
            ),
            // A profile that names no server keeps the environment's, and its key.
            (
                "models",
                &["profile models sets [model] main; EVOLVE_MODEL from the environment is ignored"],
                "http://env.example/v1",
                "sk-env-0123456789",
            ),
        ];
    for (profile, want, url, key) in cases {
        let opts = LoadOptions {
            profile: Some(profile.to_string()),
            workspace: None,
        };
        let (loaded, _home) = load_in(Some(file), env, &opts);
        let c = loaded.unwrap_or_else(|e| panic!("{profile}: {e}")).config;
        let got: Vec<String> = c.ignored_env.iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), want.len(), "{profile}: {got:?}");
        for (got, want) in got.iter().zip(want) {
            assert!(got.starts_with(want), "{profile}: {got}");
        }
        assert_eq!(c.model.base_url, url, "{profile}");
        assert_eq!(
            c.model.api_key.as_ref().map(crate::secret::Secret::expose),
            Some(key)
        );
    }
    // Chosen by the file, or no profile: the environment wins, silently.
    for text in [
        file.replace("[model]\n", "profile = \"alt\"\n[model]\n"),
        file.into(),
    ] {
        let (loaded, _home) = load_in(Some(&text), env, &LoadOptions::default());
        let c = loaded.expect("valid").config;
        assert!(c.ignored_env.is_empty(), "{:?}", c.ignored_env);
        assert_eq!(c.model.base_url, "http://env.example/v1");
    }
}

#[test]
fn unknown_keys_and_bad_types_name_the_key_the_line_and_the_file() {
    let cases: &[(&str, &[&str])] = &[
        ("colour = \"blue\"\n", &["unknown key `colour`", "line 1"]),
        (
            "[model]\nmain = \"m\"\nmodle = \"x\"\n",
            &["unknown key `modle`", "line 3", "[model]", "main"],
        ),
        (
            "[modle]\nmain = \"x\"\n",
            &["unknown key `modle`", "line 1"],
        ),
        (
            "[model.timeouts]\nconect = 5\n",
            &["unknown key `conect`", "[model.timeouts]"],
        ),
        (
            "[profiles.work.model]\nmian = \"x\"\n",
            &["unknown key `mian`", "[profiles.work.model]", "line 2"],
        ),
        (
            "[profiles.work]\nprofile = \"x\"\n",
            &["unknown key `profile`", "[profiles.work]"],
        ),
        (
            "log = \"info\"\n[profiles.work]\nlog = \"debug\"\nprofiles = {}\n",
            &["unknown key `profiles`", "line 4", "[profiles.work]"],
        ),
        (
            "[profiles.work.profiles.inner]\nlog = \"debug\"\n",
            &["unknown key `profile` or `profiles`", "[profiles.work]"],
        ),
        (
            "[memory]\nmax_selectd = 3\n",
            &["unknown key `max_selectd`", "[memory]"],
        ),
        (
            "[model]\ncontext_window = \"big\"\n",
            &["`context_window`", "line 2", "fix the value"],
        ),
        ("[tools.levels]\nshell = \"L9\"\n", &["line 2", "shell"]),
        ("[model\nmain = 1\n", &["line 1"]),
    ];
    for (text, wants) in cases {
        let (result, home) = load_in(Some(text), &[], &LoadOptions::default());
        let e = result.expect_err(text).to_string();
        assert!(
            e.contains(&home.path().join("config.toml").display().to_string()),
            "{e}"
        );
        for want in *wants {
            assert!(e.contains(want), "{text:?}: {want:?} not in {e}");
        }
    }
}

#[test]
fn out_of_range_values_name_the_key() {
    let cases: &[(&str, &str)] = &[
        (
            "[model]\ncontext_window = 4096\nreserved_output = 4096\n",
            "model.reserved_output",
        ),
        ("[model]\nreserved_output = 0\n", "model.reserved_output"),
        (
            "[model]\nmax_answer_bytes = 100\n",
            "model.max_answer_bytes",
        ),
        (
            "[model]\nmax_answer_bytes = 16777217\n",
            "model.max_answer_bytes",
        ),
        ("[model.timeouts]\nconnect = 0\n", "model.timeouts.connect"),
        ("[model.timeouts]\noverall = 0\n", "model.timeouts.overall"),
        ("[agent]\nreflect_below = 1.5\n", "agent.reflect_below"),
        ("[agent]\nstyle_above = -0.1\n", "agent.style_above"),
        (
            "[agent]\ncrystallize_above = 1.2\n",
            "agent.crystallize_above",
        ),
        ("[agent]\nmax_steps = 0\n", "agent.max_steps"),
        ("[model]\ntemperature = 3.0\n", "model.temperature"),
        ("[model]\ndaily_tokens = 0\n", "model.daily_tokens"),
        (
            "[model]\nprice_in_per_mtok = -1.0\n",
            "model.price_in_per_mtok",
        ),
        (
            "[model]\ncheap_price_out_per_mtok = -0.5\n",
            "model.cheap_price_out_per_mtok",
        ),
        ("[model]\ntools = \"json\"\n", "model.tools"),
        ("[tools]\nshell_timeout = 0\n", "tools.shell_timeout"),
        ("[tools]\noutput_cap = 0\n", "tools.output_cap"),
        ("[limits]\nmemory_mib = 8\n", "limits.memory_mib = 8"),
        ("[limits]\nprocesses = -1\n", "in [limits]: `processes`"),
        ("[limits]\nmemory = 512\n", "limits"),
        ("log = \"loud\"\n", "log"),
        ("[model]\nmain = \"  \"\n", "model.main"),
        (
            "[model]\nbase_url = \"localhost:11434\"\n",
            "model.base_url",
        ),
        (
            "[model]\nbase_url = \"https://api.openai.com/v1/chat/completions\"\n",
            "model.base_url",
        ),
        (
            "[profiles.p.model]\nreserved_output = 9000\n",
            "model.reserved_output",
        ),
    ];
    for (text, key) in cases {
        let opts = LoadOptions {
            profile: text.contains("profiles.p").then(|| "p".to_string()),
            workspace: None,
        };
        let (result, _home) = load_in(Some(text), &[], &opts);
        let e = result.expect_err(text).to_string();
        assert!(e.contains(key), "{text:?}: {key} not in {e}");
    }
    // Where the value came from a profile, the message says which table to edit.
    let opts = LoadOptions {
        profile: Some("p".into()),
        workspace: None,
    };
    let (result, _home) = load_in(
        Some("[profiles.p.model]\nreserved_output = 9000\n"),
        &[],
        &opts,
    );
    assert!(result
        .expect_err("range")
        .to_string()
        .contains("[profiles.p]"));
}

#[test]
fn environment_values_are_checked_and_named() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("OPENAI_BASE_URL", "localhost:11434/v1")],
            "OPENAI_BASE_URL",
        ),
        (&[("OPENAI_BASE_URL", "http://")], "OPENAI_BASE_URL"),
        (&[("EVOLVE_LOG", "chatty")], "EVOLVE_LOG"),
    ];
    for (env, var) in cases {
        let e = err("", env);
        assert!(e.contains(var) && e.contains("unset"), "{var}: {e}");
    }
    let loaded = ok(
        "log = \"error\"\n",
        &[
            ("EVOLVE_LOG", "DEBUG"),
            ("OPENAI_BASE_URL", "HTTPS://h.example/v1/"),
        ],
    );
    assert_eq!(loaded.config.log, "debug");
    assert_eq!(loaded.config.model.base_url, "HTTPS://h.example/v1");
    assert_eq!(loaded.origins.get("log"), &Origin::Env("EVOLVE_LOG".into()));
}

#[test]
fn unknown_profile_lists_the_known_ones() {
    let text = "[profiles.home.model]\nmain = \"a\"\n[profiles.work.model]\nmain = \"b\"\n";
    for (flag, env) in [(Some("wrok"), None), (None, Some("wrok"))] {
        let opts = LoadOptions {
            profile: flag.map(String::from),
            workspace: None,
        };
        let pairs: Vec<(&str, &str)> = env.map(|v| ("EVOLVE_PROFILE", v)).into_iter().collect();
        let (result, _home) = load_in(Some(text), &pairs, &opts);
        let e = result.expect_err("unknown profile");
        assert!(
            matches!(&e, ConfigError::UnknownProfile { known, .. } if known == &["home", "work"])
        );
        let msg = e.to_string();
        assert!(
            msg.contains("`wrok`") && msg.contains("home, work"),
            "{msg}"
        );
    }
    let e = err("profile = \"gone\"\n", &[]);
    assert!(
        e.contains("`gone`") && e.contains("defines no profiles"),
        "{e}"
    );
}

#[test]
fn api_keys_come_from_the_file_a_named_variable_or_openai_api_key() {
    let key = |loaded: &Loaded| {
        loaded
            .config
            .model
            .api_key
            .as_ref()
            .map(|k| k.expose().to_string())
    };
    let file = "[model]\napi_key = \"sk-file-0123456789\"\n";
    assert_eq!(key(&ok(file, &[])).as_deref(), Some("sk-file-0123456789"));
    assert_eq!(
        key(&ok(file, &[("OPENAI_API_KEY", "sk-env-0123456789 \n")])).as_deref(),
        Some("sk-env-0123456789")
    );
    let named = "[model]\napi_key_env = \"MY_KEY\"\n";
    let loaded = ok(named, &[("MY_KEY", "sk-named-0123456789")]);
    assert_eq!(key(&loaded).as_deref(), Some("sk-named-0123456789"));
    assert_eq!(
        loaded.origins.get("model.api_key"),
        &Origin::Env("MY_KEY".into())
    );
    let e = err(named, &[]);
    assert!(
        e.contains("model.api_key_env") && e.contains("MY_KEY"),
        "{e}"
    );
    let e = err("[model]\napi_key = \"a\"\napi_key_env = \"B\"\n", &[]);
    assert!(e.contains("both set"), "{e}");
    // A profile naming a variable replaces the file's key instead of clashing with it.
    let layered = format!("{file}[profiles.p.model]\napi_key_env = \"P_KEY\"\n");
    let opts = LoadOptions {
        profile: Some("p".into()),
        workspace: None,
    };
    let (loaded, _home) = load_in(Some(&layered), &[("P_KEY", "sk-profile-0123456")], &opts);
    assert_eq!(
        key(&loaded.expect("loads")).as_deref(),
        Some("sk-profile-0123456")
    );
    // An empty key is no key.
    assert_eq!(key(&ok("[model]\napi_key = \"\"\n", &[])), None);
}

#[test]
fn masked_secrets_never_reveal_more_than_a_fifth_nor_five_characters() {
    let table: &[(&str, &str)] = &[
        ("", "***"),
        ("short", "***"),
        ("sk-12345678", "***"),
        ("sk-123456789", "s…9"),
        ("sk-0123456789abcdefghijyz", "sk-…yz"),
        (
            "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaayz",
            "sk-…yz",
        ),
        ("密钥密钥密钥密钥密钥密钥密钥密钥", "密钥…钥"),
    ];
    for (key, want) in table {
        assert_eq!(crate::secret::Secret::new(*key).masked(), *want, "{key}");
    }
    for n in 0..80 {
        let key: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let masked = crate::secret::Secret::new(key.as_str()).masked();
        let shown = masked.chars().filter(|c| *c != '…' && *c != '*').count();
        assert!(shown <= 5 && shown * 5 <= n, "{n}: {masked}");
        if n >= 2 {
            assert!(!masked.contains(&key), "{n}: {masked}");
        }
    }
    // Debug never shows it either, nor does the Config that holds it.
    let loaded = ok(
        "[model]\napi_key = \"sk-live-abcdefghijklmnopqrstuvwxyz\"\n",
        &[],
    );
    let debug = format!("{:?}", loaded.config);
    let json = loaded.to_json().to_string();
    let text = loaded.to_text();
    for shown in [&debug, &json, &text] {
        assert!(!shown.contains("abcdefghijklmnop"), "{shown}");
        assert!(shown.contains("sk-…yz"), "{shown}");
    }
}

#[test]
fn paths_expand_tilde_and_resolve_under_the_home() {
    let (loaded, home) = load_in(
        Some("workspace = \"~/ws\"\n[text]\ndict_path = \"dicts/full.txt\"\n"),
        &[],
        &LoadOptions::default(),
    );
    let c = loaded.expect("loads").config;
    assert_eq!(c.workspace, home.path().join("ws"));
    assert_eq!(c.text.dict_path, Some(home.path().join("dicts/full.txt")));
    let opts = LoadOptions {
        profile: None,
        workspace: Some(PathBuf::from("/srv/ws")),
    };
    let (loaded, _home) = load_in(Some("workspace = \"~/ws\"\n"), &[], &opts);
    let loaded = loaded.expect("loads");
    assert_eq!(loaded.config.workspace, Path::new("/srv/ws"));
    assert_eq!(
        loaded.origins.get("workspace"),
        &Origin::Flag("--workspace")
    );
    // EVOLVE_HOME itself may start with ~.
    let env = [("HOME", "/home/u"), ("EVOLVE_HOME", "~/agent")];
    let c = Config::load_from(&LoadOptions::default(), &env_of(&env))
        .expect("loads")
        .config;
    assert_eq!(c.home, Path::new("/home/u/agent"));
    assert_eq!(c.workspace, Path::new("/home/u/agent/workspace"));
}

#[test]
fn profiles_override_key_by_key_including_the_cores_sections() {
    let text = r#"
[memory]
max_selected = 12
floor_high = 5
[tools.levels]
write_file = "L4"
[profiles.p.memory]
max_selected = 20
[profiles.p.tools.levels]
shell = 5
"#;
    let opts = LoadOptions {
        profile: Some("p".into()),
        workspace: None,
    };
    let (loaded, _home) = load_in(Some(text), &[], &opts);
    let c = loaded.expect("loads").config;
    assert_eq!(
        (c.core.memory.max_selected, c.core.memory.floor_high),
        (20, 5)
    );
    use evolve_core::permission::Level;
    assert_eq!(
        c.tools.levels,
        [
            ("shell".to_string(), Level::L5),
            ("write_file".to_string(), Level::L4)
        ]
    );
}

#[test]
fn every_load_checks_every_profile_and_the_permission_settings_like_check() {
    let cases: &[(&str, Option<&str>)] = &[
        ("[profiles.a.model]\nmain = \"x\"\n", None),
        (
            "[profiles.a.model]\nmain = \"x\"\n[profiles.b.agent]\nreflect_below = 7.0\n",
            Some("agent.reflect_below"),
        ),
        ("[permission]\nshell_level = \"L3\"\n", Some("[permission]")),
        (
            "[profiles.b.permission]\ncommand_prefixes = [[\"bash\", \"L3\"]]\n",
            Some("profile `b`"),
        ),
    ];
    for (text, want) in cases {
        let home = TempHome::new("config");
        std::fs::write(home.path().join(CONFIG_FILE), text).expect("write");
        let dir = home.path().to_string_lossy().into_owned();
        let pairs = [("EVOLVE_HOME", dir.as_str())];
        let env = env_of(&pairs);
        // Loading for any command is the same validation, with the same message.
        let loaded = Config::load_from(&LoadOptions::default(), &env);
        assert_eq!(
            loaded.as_ref().err().map(ToString::to_string),
            check(&LoadOptions::default(), &env)
                .err()
                .map(|e| e.to_string()),
            "{text}"
        );
        match (check(&LoadOptions::default(), &env), want) {
            (Ok(checked), None) => assert_eq!(checked.checked, ["default", "a"]),
            (Err(e), Some(want)) => assert!(e.to_string().contains(want), "{text}: {e}"),
            (Ok(_), Some(want)) => panic!("{text}: check passed, expected {want}"),
            (Err(e), None) => panic!("{text}: {e}"),
        }
    }
}

#[cfg(unix)]
#[test]
fn check_warns_about_a_key_others_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let home = TempHome::new("config");
    let file = home.path().join(CONFIG_FILE);
    std::fs::write(&file, "[model]\napi_key = \"sk-0123456789abcdef\"\n").expect("write");
    let dir = home.path().to_string_lossy().into_owned();
    let pairs = [("EVOLVE_HOME", dir.as_str())];
    let env = env_of(&pairs);
    for (mode, warned) in [(0o644, true), (0o600, false)] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let checked = check(&LoadOptions::default(), &env).expect("valid");
        assert_eq!(checked.warnings.len(), usize::from(warned), "{mode:o}");
    }
}

#[test]
fn show_text_tells_where_model_settings_came_from() {
    let loaded = ok(
        "[model]\nmain = \"m\"\n",
        &[
            ("OPENAI_API_KEY", "sk-0123456789abcdefghij"),
            ("EVOLVE_CHEAP_MODEL", "c"),
        ],
    );
    let text = loaded.to_text();
    for want in [
        "# file",
        "# env OPENAI_API_KEY",
        "# env EVOLVE_CHEAP_MODEL",
        "# default",
        "[model.timeouts]",
        "[memory]",
        "[permission]",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    let json = loaded.to_json();
    assert_eq!(json["model"]["main"], "m");
    assert_eq!(json["origins"]["model.main"], "file");
    assert_eq!(json["agent"]["reflect_below"], serde_json::json!(0.5));
    assert_eq!(json["memory"]["strong_match_f1"], serde_json::json!(0.7));
}

#[test]
fn a_transcription_model_uses_the_models_server_and_key_unless_it_has_its_own() {
    let voice = |text: &str, pairs: &[(&str, &str)]| {
        let loaded = ok(text, pairs);
        loaded.config.model.transcription.map(|t| {
            (
                t.model,
                t.base_url,
                t.api_key.map(|k| k.expose().to_string()),
            )
        })
    };
    let key = ("OPENAI_API_KEY", "sk-model-0123456789");
    let url = ("OPENAI_BASE_URL", "https://api.example.com/v1");
    assert_eq!(voice("", &[key]), None);
    /// The model, the server and the key a config gives.
    type Voice<'a> = Option<(&'a str, &'a str, Option<&'a str>)>;
    let cases: [(&str, Voice<'_>); 6] = [
        // The model's server, and so the model's key.
        (
            "[model]\ntranscription_model = \" whisper-1 \"\n",
            Some(("whisper-1", "https://api.example.com/v1", Some("sk-model-0123456789"))),
        ),
        // Another server: the model's key does not go there.
        (
            "[model]\ntranscription_model = \"ggml-base\"\ntranscription_base_url = \"http://127.0.0.1:8081/v1/\"\n",
            Some(("ggml-base", "http://127.0.0.1:8081/v1", None)),
        ),
        // The same server named again: the same key.
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_base_url = \"https://api.example.com/v1\"\n",
            Some(("w", "https://api.example.com/v1", Some("sk-model-0123456789"))),
        ),
        // Its own key, written or named.
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_base_url = \"http://127.0.0.1:8081/v1\"\ntranscription_api_key = \"sk-voice-0123456\"\n",
            Some(("w", "http://127.0.0.1:8081/v1", Some("sk-voice-0123456"))),
        ),
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_api_key_env = \"VOICE_KEY\"\n",
            Some(("w", "https://api.example.com/v1", Some("sk-voice-env-0123"))),
        ),
        ("[model]\nmain = \"m\"\n", None),
    ];
    for (text, want) in cases {
        let got = voice(text, &[key, url, ("VOICE_KEY", "sk-voice-env-0123")]);
        let want = want.map(|(m, u, k)| (m.to_string(), u.to_string(), k.map(str::to_string)));
        assert_eq!(got, want, "{text}");
    }
    let refused: [(&str, &str); 5] = [
        ("[model]\ntranscription_model = \" \"\n", "model.transcription_model is empty"),
        (
            "[model]\ntranscription_base_url = \"http://127.0.0.1:8081/v1\"\n",
            "model.transcription_base_url is set",
        ),
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_base_url = \"ftp://x\"\n",
            "model.transcription_base_url = \"ftp://x\"",
        ),
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_api_key = \"a\"\ntranscription_api_key_env = \"B\"\n",
            "both set",
        ),
        (
            "[model]\ntranscription_model = \"w\"\ntranscription_api_key_env = \"NOT_SET\"\n",
            "NOT_SET",
        ),
    ];
    for (text, says) in refused {
        let e = err(text, &[]);
        assert!(e.contains(says), "{text}: {e}");
    }
    // Shown masked, never whole.
    let loaded = ok(
        "[model]\ntranscription_model = \"w\"\ntranscription_api_key = \"sk-voice-secret-0123456789\"\n",
        &[],
    );
    let shown = loaded.config.to_json().to_string();
    assert!(shown.contains("\"transcription_model\":\"w\""), "{shown}");
    assert!(!shown.contains("sk-voice-secret-0123456789"), "{shown}");
}
