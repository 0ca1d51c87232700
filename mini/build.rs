//! Embeds the browser UI: every file in `static/` (beside `mini/`) becomes an entry of
//! a table the `web` module serves, so adding a file to the UI needs no code change.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../static");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .filter(|p| p.extension().is_none_or(|x| x != "md"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let abs = path.canonicalize().unwrap_or_else(|_| path.clone());
        writeln!(
            table,
            "    ({name:?}, include_bytes!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
    }
    table.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("static_files.rs");
    std::fs::write(out, table).unwrap();
}
