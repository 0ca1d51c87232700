//! `POST /v1/workspace/files?name=NAME[&replace=true]`: a file from the browser (dropped or
//! picked in the chat) into the workspace, the body being the file's bytes.
//!
//! Decides: the name is cleaned to one plain file name at the workspace's top ([`clean`]:
//! no folders, no leading dots, no control characters, at most [`MAX_NAME_BYTES`]); the
//! path is resolved and checked like the file tools' (no symlink out, no hard-linked
//! file) and written from a thread the kernel holds to the workspace, as `write_file`
//! is; an existing file is never replaced unless `replace=true` (409 `exists` first, so
//! the page can ask); a replacement is written beside it and renamed over it, so a
//! failed upload leaves the old file. The size cap is the server's body limit (4 MiB).

use serde_json::json;

use super::error;
use super::http::{Request, Response};
use super::request::Reply;
use super::State;
use crate::tools::workspace::{refuse_hard_links, Confined};

/// The longest file name kept, in bytes (most file systems allow 255).
pub const MAX_NAME_BYTES: usize = 120;

/// A name as a browser sends it (perhaps a path, `C:\Users\…\a.txt`) made one plain file
/// name, or `None` when nothing usable is left.
pub fn clean(raw: &str) -> Option<String> {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let mut name: String = base
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // No hidden files, no `.` or `..`.
    name = name.trim_start_matches(['.', ' ']).trim_end().to_string();
    if name.is_empty() {
        return None;
    }
    if name.len() > MAX_NAME_BYTES {
        // Keep the extension: the start is cut.
        let ext = name
            .rfind('.')
            .map(|i| name[i..].to_string())
            .filter(|e| e.len() <= 16)
            .unwrap_or_default();
        let mut stem = name[..name.len() - ext.len()].to_string();
        let mut keep = MAX_NAME_BYTES - ext.len();
        while !stem.is_char_boundary(keep) {
            keep -= 1;
        }
        stem.truncate(keep);
        name = format!("{}{ext}", stem.trim_end());
    }
    Some(name)
}

pub fn upload(state: &State, req: &Request) -> Reply {
    let Some(raw) = req.query_param("name") else {
        return error(
            400,
            "name is required: POST /v1/workspace/files?name=report.csv with the file as the body",
        );
    };
    let Some(name) = clean(&raw) else {
        return error(400, format!("{raw:?} is not a usable file name"));
    };
    let replace = match req.query_param("replace").as_deref() {
        None | Some("false" | "0") => false,
        Some("true" | "1") => true,
        Some(other) => return error(400, format!("replace must be true or false, not {other:?}")),
    };
    let rt = state.rt();
    let workspace = &rt.config.workspace;
    if let Err(e) = std::fs::create_dir_all(workspace) {
        return error(
            500,
            format!("cannot create the workspace {}: {e}", workspace.display()),
        );
    }
    let ws = match Confined::new(workspace, "the workspace") {
        Ok(ws) => ws,
        Err(e) => return error(500, e),
    };
    let r = match ws.resolve(&name) {
        Ok(r) => r,
        Err(e) => return error(403, e),
    };
    if r.path.is_dir() {
        return error(
            409,
            format!("{} is a folder in the workspace; rename the file", r.shown),
        );
    }
    if let Err(e) = refuse_hard_links(&r) {
        return error(403, e);
    }
    let scope = rt.config.sandbox_scope(workspace);
    let bytes = &req.body;
    let written = crate::sandbox::in_workspace(&scope, true, || write(&r.path, bytes, replace));
    match written {
        Err(e) => error(500, format!("not written: {e}")),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let mut v = super::said_value(
                409,
                &format!(
                    "{} is already in the workspace; send replace=true to replace it",
                    r.shown
                ),
                Some("exists"),
                &crate::said::Said::new(crate::said::Code::FileExists, json!({"path": r.shown})),
            );
            v["path"] = json!(r.shown);
            Response::json(409, &v)
        }
        Ok(Err(e)) => error(500, format!("cannot write {}: {e}", r.shown)),
        Ok(Ok(replaced)) => {
            log::info!(
                "{} bytes uploaded to the workspace as {}{}",
                bytes.len(),
                r.shown,
                if replaced { " (replaced)" } else { "" }
            );
            Response::json(
                201,
                &json!({"path": r.shown, "bytes": bytes.len(), "replaced": replaced}),
            )
        }
    }
}

/// Writes a new file, or (when `replace`) replaces one through a temporary file renamed
/// over it. Returns whether a file was replaced.
fn write(path: &std::path::Path, bytes: &[u8], replace: bool) -> std::io::Result<bool> {
    use std::io::Write;
    if !replace {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        if let Err(e) = f.write_all(bytes).and_then(|()| f.sync_all()) {
            drop(f);
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        return Ok(false);
    }
    let existed = path.exists();
    // One name per upload: two replacements of one file at once do not share it.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(format!(".upload-{}-{n}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp_name);
    let done = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done.map(|()| existed)
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn names_are_cleaned_to_one_plain_file_name() {
        let long = format!("{}.csv", "é".repeat(100));
        let cases: &[(&str, Option<&str>)] = &[
            ("report.csv", Some("report.csv")),
            ("C:\\Users\\me\\Desktop\\notes.txt", Some("notes.txt")),
            ("../../etc/passwd", Some("passwd")),
            ("/etc/shadow", Some("shadow")),
            (".bashrc", Some("bashrc")),
            ("..", None),
            ("...", None),
            ("dir/", None),
            ("", None),
            ("a\u{0}b\nc.txt", Some("a b c.txt")),
            (
                "  my   holiday   photo .jpg ",
                Some("my holiday photo .jpg"),
            ),
            ("报告 2026.md", Some("报告 2026.md")),
        ];
        for (raw, want) in cases {
            assert_eq!(clean(raw).as_deref(), *want, "{raw:?}");
        }
        let cut = clean(&long).unwrap();
        assert!(cut.len() <= super::MAX_NAME_BYTES, "{}", cut.len());
        assert!(cut.ends_with("é.csv"), "{cut}");
    }
}
