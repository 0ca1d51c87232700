//! Which of a session's grants a person withdraws: by number as `/permissions` lists
//! them, by label (`write_file`, `shell: tar -cf backup.tar notes`, or a tool name for
//! every grant of that tool), by call (the API's tool and command), or all. Decides
//! only the choice; the store withdraws them and the front ends say what went.

use alloc::vec::Vec;

use super::{CallKey, Grant, Grants};

/// What a revocation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoke<'a> {
    /// Every grant of the session.
    All,
    /// The n-th grant as [`Grants::iter`] lists them, from 1.
    Number(usize),
    /// A grant's [`Grant::label`]; a bare tool name also names every grant of that
    /// tool (`shell` for each of its command lines).
    Label(&'a str),
    /// One grant: the tool and, for `shell`, the exact command (a server's tool: its
    /// grants for every definition; the key's definition is not looked at).
    Call(CallKey<'a>),
    /// The grants of a server's tool given for another definition than the key's: they
    /// cover no call any more, and go once the person is told the tool changed.
    Superseded(CallKey<'a>),
}

impl Grants {
    /// The grants `what` names, sorted as [`Grants::iter`] (none when it names none).
    pub fn chosen(&self, what: Revoke<'_>) -> Vec<Grant> {
        let pick =
            |keep: &dyn Fn(&Grant) -> bool| self.iter().filter(|g| keep(g)).cloned().collect();
        match what {
            Revoke::All => self.iter().cloned().collect(),
            Revoke::Number(n) => n
                .checked_sub(1)
                .and_then(|i| self.iter().nth(i))
                .cloned()
                .into_iter()
                .collect(),
            Revoke::Label(text) => {
                let text = text.trim();
                let exact: Vec<Grant> = pick(&|g| g.label() == text);
                if exact.is_empty() {
                    pick(&|g| g.tool == text)
                } else {
                    exact
                }
            }
            Revoke::Call(key) => {
                pick(&|g| g.tool == key.tool && g.command.as_deref() == key.command)
            }
            Revoke::Superseded(key) => pick(&|g| {
                g.tool == key.tool
                    && g.definition.is_some()
                    && g.definition.as_deref() != key.definition
            }),
        }
    }

    /// Withdraws the grants `what` names; returns them.
    pub fn withdraw(&mut self, what: Revoke<'_>) -> Vec<Grant> {
        let gone = self.chosen(what);
        for g in &gone {
            self.revoke_call(g.key());
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::Level;
    use alloc::string::String;

    fn grants() -> Grants {
        let mut g = Grants::new();
        g.grant("write_file", Level::L3).unwrap();
        for cmd in ["tar -cf a.tar x", "tar -cf b.tar y"] {
            g.grant_call(
                CallKey {
                    tool: "shell",
                    command: Some(cmd),
                    definition: None,
                },
                Level::L3,
            )
            .unwrap();
        }
        g
    }

    #[test]
    fn a_revocation_names_the_grants_it_withdraws() {
        let shell_a = CallKey {
            tool: "shell",
            command: Some("tar -cf a.tar x"),
            definition: None,
        };
        let cases: &[(Revoke<'_>, &[&str])] = &[
            (
                Revoke::All,
                &[
                    "shell: tar -cf a.tar x",
                    "shell: tar -cf b.tar y",
                    "write_file",
                ],
            ),
            (Revoke::Number(1), &["shell: tar -cf a.tar x"]),
            (Revoke::Number(3), &["write_file"]),
            (Revoke::Number(0), &[]),
            (Revoke::Number(4), &[]),
            (Revoke::Label("write_file"), &["write_file"]),
            (
                Revoke::Label(" shell: tar -cf b.tar y "),
                &["shell: tar -cf b.tar y"],
            ),
            (
                Revoke::Label("shell"),
                &["shell: tar -cf a.tar x", "shell: tar -cf b.tar y"],
            ),
            (Revoke::Label("read_file"), &[]),
            (Revoke::Call(shell_a), &["shell: tar -cf a.tar x"]),
            // A call names one grant: `shell` without its command is none of them.
            (Revoke::Call(CallKey::from("shell")), &[]),
            (Revoke::Call(CallKey::from("write_file")), &["write_file"]),
        ];
        for (what, want) in cases {
            let mut g = grants();
            let gone: Vec<String> = g.withdraw(*what).iter().map(Grant::label).collect();
            assert_eq!(gone, *want, "{what:?}");
            assert_eq!(g.len(), 3 - want.len(), "{what:?}");
            for label in *want {
                assert!(g.iter().all(|left| left.label() != *label), "{what:?}");
            }
        }
    }
}
