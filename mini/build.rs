//! Embeds the browser UI: every file in `static/` (beside `mini/`), subfolders included
//! (`js/chat.js`), becomes an entry of a table the `web` module serves, so adding a file to the UI needs no code change.
//! Each file is stored gzipped (a browser takes it as it is, `Content-Encoding: gzip`;
//! `web/inflate.rs` restores it for a client that does not accept gzip), with its
//! ETag computed here from the bytes served. Scripts and style sheets lose their
//! comment lines, blank lines and indentation first ([`squeeze`]; about 7 KB of the
//! binary). The Chinese dictionary
//! (`mini/dict/trimmed.dict`) is stored deflated too.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../static");
    let mut files = Vec::new();
    ui_files(&dir, &mut files);
    files.sort();
    let out_dir = std::env::var("OUT_DIR").unwrap();
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        // A file's name is its path under `static/` (`js/chat.js`), as it is asked for.
        let name = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(path).unwrap();
        let bytes = if name.ends_with(".js") || name.ends_with(".css") {
            squeeze(&String::from_utf8(bytes).unwrap(), name.ends_with(".js")).into_bytes()
        } else {
            bytes
        };
        let gz = Path::new(&out_dir).join(format!("{}.gz", name.replace('/', "+")));
        std::fs::write(&gz, gzip(&bytes)).unwrap();
        writeln!(
            table,
            "    ({name:?}, \"{:016x}\", include_bytes!({:?})),",
            fnv1a(&bytes),
            gz.display().to_string()
        )
        .unwrap();
    }
    table.push(']');
    std::fs::write(Path::new(&out_dir).join("static_files.rs"), table).unwrap();

    // The bundled skills (`skills/*/SKILL.md`, by folder name), deflated together
    // (`skills::bundled` inflates them once, at the first use): 19 KB of text take 9.
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
    println!("cargo:rerun-if-changed={}", skills_dir.display());
    let mut skill_dirs: Vec<_> = std::fs::read_dir(&skills_dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("SKILL.md").is_file())
        .collect();
    skill_dirs.sort();
    let mut all = String::new();
    let mut skill_table = String::from("&[\n");
    for dir in &skill_dirs {
        let file = dir.join("SKILL.md");
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy();
        writeln!(
            skill_table,
            "    ({name:?}, {}, {}),",
            all.len(),
            text.len()
        )
        .unwrap();
        all.push_str(&text);
    }
    skill_table.push(']');
    std::fs::write(Path::new(&out_dir).join("bundled_skills.rs"), skill_table).unwrap();
    std::fs::write(
        Path::new(&out_dir).join("bundled_skills.deflate"),
        deflate(all.as_bytes()),
    )
    .unwrap();
    std::fs::write(
        Path::new(&out_dir).join("bundled_skills_len.rs"),
        format!("{}", all.len()),
    )
    .unwrap();

    // The Chinese dictionary, deflated the same way (`text::dict` inflates it on the
    // first Chinese text): 40% of it is saved in the binary.
    let dict = Path::new(env!("CARGO_MANIFEST_DIR")).join("dict/trimmed.dict");
    println!("cargo:rerun-if-changed={}", dict.display());
    let bytes = std::fs::read(&dict).unwrap();
    std::fs::write(
        Path::new(&out_dir).join("trimmed.dict.deflate"),
        deflate(&bytes),
    )
    .unwrap();
    std::fs::write(
        Path::new(&out_dir).join("trimmed_dict_len.rs"),
        format!("{}", bytes.len()),
    )
    .unwrap();
}

/// The files of the UI under `dir`, subfolders included (`static/js/`): all but hidden
/// ones and `*.md` notes.
fn ui_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if path.is_dir() {
            ui_files(&path, out);
        } else if path.is_file() && path.extension().is_none_or(|x| x != "md") {
            out.push(path);
        }
    }
}

/// A script or style sheet without what only its readers need: lines that are only a
/// comment (`// …` in scripts, `/* … */` on lines of their own, however many), blank
/// lines and each line's indentation. Line breaks stay, so a script means the same
/// (automatic semicolons); nothing inside a line is touched, so no string or regular
/// expression can be cut (the UI has no string spanning lines).
fn squeeze(text: &str, script: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim();
        if in_block {
            if t.ends_with("*/") {
                in_block = false;
                continue;
            }
            if t.contains("*/") {
                // Code after the comment's end: keep the line as it is.
                in_block = false;
                out.push_str(t[t.find("*/").unwrap_or(0) + 2..].trim_start());
                out.push('\n');
            }
            continue;
        }
        if t.is_empty() || script && t.starts_with("//") {
            continue;
        }
        if t.starts_with("/*") {
            if t.ends_with("*/") && t.len() >= 4 {
                continue;
            }
            if !t.contains("*/") {
                in_block = true;
                continue;
            }
        }
        out.push_str(t);
        out.push('\n');
    }
    out
}

/// A gzip member (RFC 1952): the fixed ten-byte header (no name, no time), the
/// deflated bytes, CRC-32 and size.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    out.extend(deflate(data));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// Raw deflate with Zopfli (15 iterations): about 4% smaller than miniz's best level on
/// these files (the dictionary 143 539 -> 138 751 bytes, the UI 71 486 -> 68 274), the
/// same format for the inflater, no code in the binary. Deterministic.
fn deflate(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    zopfli::compress(
        zopfli::Options::default(),
        zopfli::Format::Deflate,
        data,
        &mut out,
    )
    .unwrap();
    out
}

fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |mut c, &b| {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
        c
    })
}

/// FNV-1a: the file's ETag (the file changes, the tag changes).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}
