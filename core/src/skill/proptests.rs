//! Property tests: the SKILL.md parser never panics, valid files read back as written,
//! and rankings are well-formed.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

use super::*;
use crate::text::{FallbackTokenizer, KeywordSet};

/// Text made of the pieces SKILL.md front matter is made of.
fn front_matterish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("---"),
            Just("\n"),
            Just("\r\n"),
            Just("name: "),
            Just("description: "),
            Just("tags: "),
            Just("metadata:"),
            Just(">"),
            Just("|-"),
            Just("  "),
            Just("- "),
            Just("["),
            Just("]"),
            Just(","),
            Just("\""),
            Just("'"),
            Just("\\"),
            Just("\\u12"),
            Just("#"),
            Just(":"),
            Just("pdf-tools"),
            Just("x"),
            Just("茶"),
            Just("\u{feff}"),
        ],
        0..48,
    )
    .prop_map(|parts| parts.concat())
}

fn valid_name() -> impl Strategy<Value = String> {
    "[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_never_panics_on_arbitrary_strings(text in any::<String>()) {
        let _ = parse_skill_md(&text);
        let _ = parse_skill_md(&format!("---\n{text}\n---\n"));
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_skill_md(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn parser_never_panics_on_front_matter_pieces(text in front_matterish()) {
        if let Ok(doc) = parse_skill_md(&text) {
            prop_assert!(validate_name(&doc.name).is_ok());
            prop_assert!(!doc.description.is_empty());
        }
    }

    #[test]
    fn valid_files_read_back_as_written(
        name in valid_name(),
        description in "[A-Za-z0-9 .,;()茶]{0,80}[A-Za-z0-9.]",
        tags in proptest::collection::vec("[a-z][a-z0-9]{0,8}", 0..4),
        body in any::<String>(),
        crlf in any::<bool>(),
        style in 0usize..3,
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let description_line = match style {
            0 => format!("description: {description}"),
            1 => format!("description: \"{description}\""),
            _ => format!("description: >{nl}  {description}"),
        };
        let tags_line = format!("tags: [{}]", tags.join(", "));
        let file = ["---", &format!("name: {name}"), &description_line, &tags_line, "---", ""]
            .join(nl) + &body;
        let doc = parse_skill_md(&file);
        prop_assert!(doc.is_ok(), "{:?}: {:?}", file, doc);
        let doc = doc.unwrap_or_else(|_| unreachable!());
        prop_assert_eq!(doc.name, name);
        prop_assert_eq!(doc.description, description.trim());
        prop_assert_eq!(doc.tags, tags);
        prop_assert_eq!(doc.body, body);
    }

    #[test]
    fn rankings_are_sorted_bounded_and_positive(
        descriptions in proptest::collection::vec("[a-z ]{0,40}", 0..12),
        query in "[a-z ]{0,30}",
        limit in 0usize..6,
    ) {
        let skills: Vec<SkillSummary> = descriptions
            .iter()
            .enumerate()
            .map(|(i, d)| SkillSummary::new(&format!("skill-{i}"), d, &[], &FallbackTokenizer))
            .collect();
        let q = KeywordSet::of(&FallbackTokenizer, &query);
        let ranked = rank(&skills, &q, limit);
        prop_assert!(ranked.len() <= limit);
        for pair in ranked.windows(2) {
            prop_assert!(pair[0].1 > pair[1].1 || (pair[0].1 == pair[1].1 && pair[0].0 < pair[1].0));
        }
        for &(i, score) in &ranked {
            prop_assert!(score > 0.0 && score <= 2.0 + 1e-6);
            prop_assert!(skills.get(i).is_some_and(|s| s.keywords.overlaps(&q)));
        }
    }
}
