use super::*;

#[test]
fn long_text_goes_out_in_pieces_cut_between_characters() {
    // Three bytes each: a piece ends at 16 383 bytes, before the character that
    // would cross 16 KiB, so 48 KiB take four pieces.
    let zh = "中".repeat(CHUNK_BYTES);
    let cases: Vec<(String, usize)> = vec![
        (String::new(), 0),
        ("short".into(), 1),
        ("a".repeat(CHUNK_BYTES), 1),
        ("a".repeat(CHUNK_BYTES + 1), 2),
        (zh, 4),
    ];
    for (text, n) in cases {
        let got: Vec<&str> = pieces(&text).collect();
        assert_eq!(got.len(), n, "{} bytes", text.len());
        assert!(got.iter().all(|p| !p.is_empty() && p.len() <= CHUNK_BYTES));
        assert_eq!(got.concat(), text);
    }
}
