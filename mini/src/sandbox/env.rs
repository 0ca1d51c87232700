//! The environment of a confined child: cleared, then rebuilt from an allowlist, so no
//! variable of Evolve's own environment (API keys, tokens, `EVOLVE_*`, whatever the
//! service manager set) reaches a command or a confined server. `git` is told to ignore
//! everything in a repository's or the machine's config that would run a program
//! (`core.fsmonitor`, hooks, pagers, an external diff, editors, askpass, ssh and gpg
//! programs) and to stop looking for a repository at the workspace.
//!
//! What a repository's config can still name — `diff.<driver>.textconv`,
//! `filter.<driver>.clean` and the like, whose names cannot be listed in advance — runs
//! under the same kernel confinement as the command itself.

use std::ffi::OsString;
use std::path::Path;

/// Variables passed through when Evolve has them: the search path and the locale and
/// terminal settings a program needs to behave (`LC_*` by prefix).
const PASSED: [&str; 5] = ["PATH", "LANG", "LANGUAGE", "TERM", "TZ"];

/// The search path when Evolve has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Repository and machine settings that would run a program, each forced to a value
/// that runs nothing (or the plain default), through `GIT_CONFIG_COUNT`, which wins over
/// every config file. `diff.external` cannot be forced off this way (an empty value is a
/// program git tries to run), so like textconv drivers and filters it runs under the
/// kernel's confinement.
const GIT_OVERRIDES: [(&str, &str); 12] = [
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh"),
    ("core.gitProxy", ""),
    ("credential.helper", ""),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("protocol.ext.allow", "never"),
];

/// Where a child's writable places are.
pub struct Places<'a> {
    /// `HOME` of the child.
    pub home: &'a Path,
    /// `TMPDIR` of the child, if it has one of its own.
    pub tmp: Option<&'a Path>,
    /// Where `git` stops looking for a repository (the workspace).
    pub git_ceiling: Option<&'a Path>,
}

/// The environment of a confined child, from `vars` (Evolve's own environment).
pub fn child_env(
    vars: impl Iterator<Item = (OsString, OsString)>,
    places: &Places<'_>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = vars
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            PASSED.contains(&k.as_ref()) || k.starts_with("LC_")
        })
        .map(|(k, v)| {
            // A relative or empty entry of PATH is the current folder: the workspace,
            // where the model can put a program named `ls`.
            if k == "PATH" {
                let kept: Vec<std::path::PathBuf> = std::env::split_paths(&v)
                    .filter(|p| p.is_absolute())
                    .collect();
                let v = std::env::join_paths(kept).unwrap_or_else(|_| DEFAULT_PATH.into());
                (k, v)
            } else {
                (k, v)
            }
        })
        .collect();
    if !out.iter().any(|(k, _)| k == "PATH") {
        out.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    let mut set = |k: &str, v: OsString| out.push((k.into(), v));
    set("HOME", places.home.into());
    if let Some(tmp) = places.tmp {
        set("TMPDIR", tmp.into());
    }
    // git: no machine or user config, nothing from the repository that runs a program,
    // no prompts, and no repository above the workspace.
    if let Some(ceiling) = places.git_ceiling.and_then(Path::parent) {
        set("GIT_CEILING_DIRECTORIES", ceiling.into());
    }
    set("GIT_CONFIG_NOSYSTEM", "1".into());
    set("GIT_CONFIG_GLOBAL", "/dev/null".into());
    set("GIT_TERMINAL_PROMPT", "0".into());
    set("GIT_PAGER", "cat".into());
    set("PAGER", "cat".into());
    set("GIT_EDITOR", ":".into());
    set("GIT_SEQUENCE_EDITOR", ":".into());
    set("GIT_CONFIG_COUNT", GIT_OVERRIDES.len().to_string().into());
    for (i, (key, value)) in GIT_OVERRIDES.iter().enumerate() {
        set(&format!("GIT_CONFIG_KEY_{i}"), (*key).into());
        set(&format!("GIT_CONFIG_VALUE_{i}"), (*value).into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(env: &'a [(OsString, OsString)], k: &str) -> Option<&'a str> {
        env.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.to_str())
    }

    #[test]
    fn only_the_allowlist_passes_and_home_is_the_workspace() {
        let vars = [
            ("PATH", "/usr/bin::.:bin:/opt/x/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("TZ", "UTC"),
            ("OPENAI_API_KEY", "sk-x"),
            ("EVOLVE_HOME", "/h"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("HOME", "/root"),
            ("SSH_AUTH_SOCK", "/run/agent"),
            ("GIT_DIR", "/elsewhere/.git"),
            ("LD_PRELOAD", "/evil.so"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = child_env(
            vars.into_iter(),
            &Places {
                home: Path::new("/w/space"),
                tmp: Some(Path::new("/tmp/t")),
                git_ceiling: Some(Path::new("/w/space")),
            },
        );
        assert_eq!(
            get(&env, "PATH"),
            Some("/usr/bin:/opt/x/bin"),
            "relative entries dropped"
        );
        assert_eq!(get(&env, "LANG"), Some("C.UTF-8"));
        assert_eq!(get(&env, "LC_ALL"), Some("C"));
        assert_eq!(get(&env, "TZ"), Some("UTC"));
        assert_eq!(get(&env, "HOME"), Some("/w/space"));
        assert_eq!(get(&env, "TMPDIR"), Some("/tmp/t"));
        assert_eq!(get(&env, "GIT_CEILING_DIRECTORIES"), Some("/w"));
        for gone in [
            "OPENAI_API_KEY",
            "EVOLVE_HOME",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "GIT_DIR",
            "LD_PRELOAD",
        ] {
            assert_eq!(get(&env, gone), None, "{gone}");
        }
        assert_eq!(env.iter().filter(|(k, _)| k == "HOME").count(), 1);
        let count: usize = get(&env, "GIT_CONFIG_COUNT").unwrap().parse().unwrap();
        let keys: Vec<&str> = (0..count)
            .map(|i| get(&env, &format!("GIT_CONFIG_KEY_{i}")).unwrap())
            .collect();
        assert!(keys.contains(&"core.fsmonitor") && keys.contains(&"core.hooksPath"));
    }

    #[test]
    fn a_missing_path_gets_the_default() {
        let env = child_env(
            std::iter::empty(),
            &Places {
                home: Path::new("/w"),
                tmp: None,
                git_ceiling: None,
            },
        );
        assert_eq!(get(&env, "PATH"), Some(DEFAULT_PATH));
        assert_eq!(get(&env, "TMPDIR"), None);
        assert_eq!(get(&env, "GIT_CEILING_DIRECTORIES"), None);
    }
}
