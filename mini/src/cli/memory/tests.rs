use super::transfer::{read_import, ImportFile};
use super::*;
use evolve_core::text::FallbackTokenizer;

#[test]
fn argument_parsers_accept_the_documented_forms_and_name_the_rest() {
    assert_eq!(parse_id("12"), Ok(12));
    assert_eq!(parse_id("#12"), Ok(12));
    assert!(parse_id("twelve").unwrap_err().contains("memory list"));
    assert_eq!(parse_priority("high"), Ok(Priority::High));
    assert_eq!(parse_priority("0"), Ok(Priority::Critical));
    assert!(parse_priority("7").unwrap_err().contains("0-3"));
    assert_eq!(parse_category("Fact"), Ok(Category::Fact));
    assert!(parse_category("food").unwrap_err().contains("preference"));
    assert_eq!(parse_importance("5"), Ok(5));
    assert!(parse_importance("6").is_err());
    assert!(parse_importance("0").is_err());
    assert_eq!(parse_expiry("2026-01-01"), Ok(1_767_225_600));
    assert_eq!(
        split_tags(Some(" work, linux,,")),
        vec!["work".to_string(), "linux".to_string()]
    );
    assert!(split_tags(None).is_empty());
}

#[test]
fn a_listing_line_shows_id_priority_category_date_flags_and_text() {
    let mut m = Memory::new(
        "likes\ngreen tea",
        Category::Preference,
        0,
        &FallbackTokenizer,
    );
    m.id = 12;
    m.pinned = true;
    m.expires_at = Some(10);
    let line = listing_line(&m, 20);
    for part in [
        "#12",
        "high",
        "preference",
        "1970-01-01",
        "pinned,expired",
        "likes green tea",
    ] {
        assert!(line.contains(part), "{line:?} lacks {part:?}");
    }
    let json = listing_json(&m);
    assert!(json.get("keywords").is_none());
    assert_eq!(json["content"], "likes\ngreen tea");
}

#[test]
fn import_files_are_told_apart_by_their_schema_version() {
    let dir = std::env::temp_dir().join(format!("evolve-cli-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let table = [
        (r#"[{"content":"a"}]"#, Some(false)),
        (
            r#"{"memories":[{"content":"a"},{"content":"b"}]}"#,
            Some(false),
        ),
        (
            r#"{"schema_version":1,"memories":[{"content":"a"}],"sessions":[]}"#,
            Some(true),
        ),
        (r#"{"schema_version":99,"memories":[],"sessions":[]}"#, None),
        (r#"{"memories":[{"content":"a","priority":9}]}"#, None),
        ("not json", None),
    ];
    for (i, (text, want)) in table.into_iter().enumerate() {
        let path = dir.join(format!("f{i}.json"));
        std::fs::write(&path, text).unwrap();
        match (read_import(&path), want) {
            (Ok(ImportFile::Export(_)), Some(true)) | (Ok(ImportFile::Plain(..)), Some(false)) => {}
            (Err(e), None) => {
                assert_eq!(e.exit_code(), 2, "{e}");
                assert!(e.to_string().contains(&format!("f{i}.json")), "{e}");
            }
            (got, _) => panic!("{text}: {:?}", got.map(|_| ()).map_err(|e| e.to_string())),
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
