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

#[test]
fn the_waiting_note_names_each_call_and_the_session() {
    assert_eq!(waiting_note(&Refused::default(), "s1"), None);
    let refused = Refused {
        calls: vec![("shell".into(), Level::L3), ("edit_file".into(), Level::L4)],
        sends_data: false,
    };
    let note = waiting_note(&refused, "s1").expect("a note");
    assert!(note.starts_with("\n\n[evolve] Not run"), "{note}");
    assert!(note.contains("shell (L3), edit_file (L4)"), "{note}");
    assert!(note.contains("evolve chat --session s1"), "{note}");
    assert!(note.contains("nothing is waiting"), "{note}");
    assert!(!note.contains("Approve it"), "{note}");
}
