//! Embeds the browser UI: every file in `static/` (beside `mini/`) becomes an entry of
//! a table the `web` module serves, so adding a file to the UI needs no code change.
//! Each file is stored gzipped (a browser takes it as it is, `Content-Encoding: gzip`;
//! `web/inflate.rs` restores it for a client that does not accept gzip), with its
//! ETag computed here from the original bytes. The Chinese dictionary
//! (`mini/dict/trimmed.dict`) is stored deflated too.

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
    let out_dir = std::env::var("OUT_DIR").unwrap();
    let mut table = String::from("&[\n");
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let bytes = std::fs::read(path).unwrap();
        let gz = Path::new(&out_dir).join(format!("{name}.gz"));
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

    // The Chinese dictionary, deflated the same way (`text::dict` inflates it on the
    // first Chinese text): 40% of it is saved in the binary.
    let dict = Path::new(env!("CARGO_MANIFEST_DIR")).join("dict/trimmed.dict");
    println!("cargo:rerun-if-changed={}", dict.display());
    let bytes = std::fs::read(&dict).unwrap();
    std::fs::write(
        Path::new(&out_dir).join("trimmed.dict.deflate"),
        miniz_oxide::deflate::compress_to_vec(&bytes, 10),
    )
    .unwrap();
    std::fs::write(
        Path::new(&out_dir).join("trimmed_dict_len.rs"),
        format!("{}", bytes.len()),
    )
    .unwrap();
}

/// A gzip member (RFC 1952): the fixed ten-byte header (no name, no time), the
/// deflated bytes, CRC-32 and size.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, 10));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
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
