//! Which skills fit a request: keyword overlap between the request and each skill's
//! name, description and tags (ARCHITECTURE.md § The turn, step 4).

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use super::parse::SkillDoc;
use crate::text::{f1, intersection_len, KeywordSet, Tokenizer};

/// What the ranking and the prompt need of a skill; the body stays on disk until the
/// `load_skill` tool asks for it (progressive disclosure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSummary {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// Keywords of the name (hyphens read as spaces), description and tags.
    pub keywords: KeywordSet,
    /// Keywords of the name and tags alone: the words the author chose to label the
    /// skill, which count extra in [`rank`].
    pub label_keywords: KeywordSet,
}

impl SkillSummary {
    /// A summary with its keyword sets computed by `tokenizer` (the same tokenizer must
    /// make the query's keywords).
    pub fn new(
        name: &str,
        description: &str,
        tags: &[String],
        tokenizer: &dyn Tokenizer,
    ) -> SkillSummary {
        let mut label = name.replace('-', " ");
        for tag in tags {
            label.push('\n');
            label.push_str(tag);
        }
        let label_keywords = KeywordSet::of(tokenizer, &label);
        let keywords = label_keywords.union(&KeywordSet::of(tokenizer, description));
        SkillSummary {
            name: String::from(name),
            description: String::from(description),
            tags: tags.to_vec(),
            keywords,
            label_keywords,
        }
    }

    /// The summary of a parsed SKILL.md.
    pub fn from_doc(doc: &SkillDoc, tokenizer: &dyn Tokenizer) -> SkillSummary {
        SkillSummary::new(&doc.name, &doc.description, &doc.tags, tokenizer)
    }

    /// How well this skill fits `query` (0 = no shared keyword):
    /// `F1(query, keywords) + |query ∩ label_keywords| / |query|`.
    ///
    /// The F1 term rewards covering the request without being a long, vague
    /// description that mentions everything; the label term adds up to 1 more when the
    /// request's words are in the skill's name or tags, so a query word that names a
    /// skill outweighs the same word in another skill's prose. Range 0–2.
    pub fn score(&self, query: &KeywordSet) -> f32 {
        if query.is_empty() {
            return 0.0;
        }
        let overlap = f1(query.as_slice(), self.keywords.as_slice());
        if overlap == 0.0 {
            return 0.0;
        }
        let label_hits = intersection_len(query.as_slice(), self.label_keywords.as_slice());
        overlap + label_hits as f32 / query.len() as f32
    }
}

/// The skills that share at least one keyword with `query`, best first, at most
/// `limit`, as (index into `skills`, [`SkillSummary::score`]). Equal scores keep the
/// order of `skills`, so the result is the same on every run. The tokenizer was applied
/// when the summaries were made, so ranking compares integers only.
pub fn rank(skills: &[SkillSummary], query: &KeywordSet, limit: usize) -> Vec<(usize, f32)> {
    let mut ranked: Vec<(usize, f32)> = skills
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.score(query)))
        .filter(|&(_, score)| score > 0.0)
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(limit);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::FallbackTokenizer;
    use alloc::vec;

    fn skill(name: &str, description: &str, tags: &[&str]) -> SkillSummary {
        let tags: Vec<String> = tags.iter().map(|t| String::from(*t)).collect();
        SkillSummary::new(name, description, &tags, &FallbackTokenizer)
    }

    fn library() -> Vec<SkillSummary> {
        vec![
            skill("git-commit", "Write clear commit messages from the staged diff text.", &["git"]),
            skill(
                "pdf-processing",
                "Extract text and tables from PDF files, fill forms, merge documents.",
                &["pdf", "documents"],
            ),
            skill("web-search", "Search the web and summarise the results with sources.", &[]),
            skill("tea-brewing", "冲泡绿茶和红茶的水温与时间。", &["茶"]),
            skill(
                "everything",
                "A general helper for text, files, web, search, documents, code, data, forms and more.",
                &[],
            ),
        ]
    }

    fn top(query: &str) -> Vec<&'static str> {
        let skills = library();
        let q = KeywordSet::of(&FallbackTokenizer, query);
        let names = [
            "git-commit",
            "pdf-processing",
            "web-search",
            "tea-brewing",
            "everything",
        ];
        rank(&skills, &q, 3)
            .iter()
            .map(|(i, _)| names[*i])
            .collect()
    }

    #[test]
    fn the_obviously_relevant_skill_comes_first() {
        let table: &[(&str, &str)] = &[
            ("convert this pdf to text", "pdf-processing"),
            ("write a commit message for my git changes", "git-commit"),
            ("search the web for rust news", "web-search"),
            ("绿茶用多少度的水冲泡", "tea-brewing"),
        ];
        for (query, expected) in table {
            assert_eq!(
                top(query).first(),
                Some(expected),
                "{query:?}: {:?}",
                top(query)
            );
        }
    }

    #[test]
    fn skills_without_a_shared_keyword_are_never_ranked() {
        assert!(top("weather tomorrow in paris").is_empty());
        assert!(top("").is_empty());
        assert_eq!(top("merge"), vec!["pdf-processing"]);
    }

    #[test]
    fn a_name_or_tag_hit_counts_more_than_the_same_word_in_prose() {
        let skills = vec![
            skill("notes", "Keep notes about documents and more.", &[]),
            skill("documents", "Keep notes.", &[]),
        ];
        let q = KeywordSet::of(&FallbackTokenizer, "documents");
        assert_eq!(rank(&skills, &q, 5).first().map(|r| r.0), Some(1));
    }

    #[test]
    fn ties_keep_input_order_and_limit_applies() {
        let skills = vec![
            skill("alpha", "Handles csv data.", &[]),
            skill("beta", "Handles csv data.", &[]),
            skill("gamma", "Handles csv data.", &[]),
        ];
        let q = KeywordSet::of(&FallbackTokenizer, "csv");
        let ranked = rank(&skills, &q, 2);
        assert_eq!(ranked.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(rank(&skills, &q, 0), vec![]);
    }

    #[test]
    fn score_follows_the_documented_formula() {
        let s = skill("pdf-tools", "Read pdf files.", &[]);
        // keywords: pdf, tools, read, files (4); query: pdf, weather (2)
        let q = KeywordSet::of(&FallbackTokenizer, "pdf weather");
        let expected = 2.0 * 1.0 / 6.0 + 1.0 / 2.0;
        assert!((s.score(&q) - expected).abs() < 1e-6, "{}", s.score(&q));
    }
}
