//! A SKILL.md through `evolve_core::skill::parse_skill_md`, then the summary and the
//! ranking a parsed skill goes through.
//!
//! Invariants beyond "no panic": a parsed skill has a valid name and a description of
//! 1 to `MAX_DESCRIPTION_CHARS` characters, and its body is the end of the file,
//! untouched.
#![no_main]

use evolve_core::skill::{
    parse_skill_md, rank, summary_block, validate_name, Lang, SkillSummary, MAX_DESCRIPTION_CHARS,
};
use evolve_core::text::{FallbackTokenizer, KeywordSet, Tokenizer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // the shell reads SKILL.md as UTF-8 and reports anything else
    };
    let Ok(doc) = parse_skill_md(text) else {
        return;
    };
    assert_eq!(validate_name(&doc.name), Ok(()), "name {:?}", doc.name);
    let chars = doc.description.chars().count();
    assert!(
        (1..=MAX_DESCRIPTION_CHARS).contains(&chars),
        "description of {chars} characters"
    );
    assert!(
        text.ends_with(&doc.body),
        "the body is not the end of the file"
    );

    let tokenizer = FallbackTokenizer;
    let summary = SkillSummary::from_doc(&doc, &tokenizer);
    let query = KeywordSet::of(&tokenizer, &doc.body);
    let ranked = rank(std::slice::from_ref(&summary), &query, 3);
    assert!(ranked.len() <= 1);
    for (_, score) in &ranked {
        assert!(score.is_finite() && *score > 0.0, "score {score}");
    }
    for lang in [Lang::En, Lang::Zh] {
        let _ = summary_block(&[&summary], lang);
    }
    let _ = tokenizer.keywords(&doc.description);
});
