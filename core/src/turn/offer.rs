//! Which tools a model step carries in full (the `tools` array is counted in
//! the window, and a plain question should not carry every schema). The others are
//! named, one line each, by the shell's `more_tools` tool, which the model calls to
//! have them offered from the next step on; a call of any tool of the turn's catalog is
//! checked and run as usual, offered in full or not.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::text::{KeywordSet, Tokenizer};

/// One tool the turn could offer.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its name.
    pub name: &'a str,
    /// The keywords of its name, description and topics.
    pub keywords: &'a KeywordSet,
}

/// What the choice is made from.
#[derive(Debug, Clone, Copy)]
pub struct OfferInput<'a> {
    /// Every tool of the turn, in the order the model sees them.
    pub candidates: &'a [Candidate<'a>],
    /// The keywords of the question (and the one before it, for a follow-up).
    pub query: &'a KeywordSet,
    /// Tools offered whatever the question: used earlier in the session or in this
    /// turn, asked for with `more_tools`, forced with `--tool`.
    pub wanted: &'a [&'a str],
    /// Tools chosen by their keywords, at most.
    pub max_relevant: usize,
}

/// The indices of the tools to offer in full, in catalog order: every wanted one, and
/// up to `max_relevant` of the rest that share keywords with the query (most shared
/// first; ties in catalog order).
pub fn choose(input: &OfferInput<'_>) -> Vec<usize> {
    let mut chosen: Vec<usize> = input
        .candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| input.wanted.contains(&c.name))
        .map(|(i, _)| i)
        .collect();
    let mut scored: Vec<(usize, usize)> = input
        .candidates
        .iter()
        .enumerate()
        .filter(|(i, _)| !chosen.contains(i))
        .map(|(i, c)| (i, shared(c.keywords, input.query)))
        .filter(|&(_, n)| n > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    chosen.extend(scored.into_iter().take(input.max_relevant).map(|(i, _)| i));
    chosen.sort_unstable();
    chosen
}

/// The tools offered in full from now on: those offered before, in the order first
/// offered, then those of `chosen` not among them, in the order given. A tool once
/// offered stays offered for the session, so a request's `tools` array begins with the
/// previous request's (a model server's prompt cache reuses it, the tools coming first
/// in a chat template). Returns how many were added.
pub fn grow(offered: &mut Vec<String>, chosen: &[&str]) -> usize {
    let before = offered.len();
    for name in chosen {
        if !offered.iter().any(|o| o == name) {
            offered.push(name.to_string());
        }
    }
    offered.len() - before
}

/// Words a tool's description uses whatever the tool does ("get the answers back",
/// "returns the result", "use it to …"): a question that shares only these with a tool
/// points to none (a question about reading a file back is no reason to offer a tool
/// whose description says its helpers "get their answers back").
pub const GENERIC_WORDS: &str = "back get gets got getting give gives use uses used using \
    make makes made take takes come comes go goes put puts want wants need needs help helps \
    way ways thing things like well first last new one two several many much may might must \
    can also able each every whatever tool tools result results return returns returned \
    answer answers call calls called ask asks asked user users work works done do does \
    see sees seen let lets keep keeps kept run runs ran running";

/// The keywords a tool is matched by from its name and its description: the
/// description's without [`GENERIC_WORDS`] (the name's all count: a tool named `back_up`
/// is about backups).
pub fn described(tokenizer: &dyn Tokenizer, name: &str, description: &str) -> KeywordSet {
    let generic = KeywordSet::of(tokenizer, GENERIC_WORDS);
    let words = KeywordSet::of(tokenizer, description);
    let specific = KeywordSet::from_hashes(
        words
            .as_slice()
            .iter()
            .copied()
            .filter(|h| !generic.contains(*h))
            .collect(),
    );
    KeywordSet::of(tokenizer, &name.replace(['_', '-'], " ")).union(&specific)
}

fn shared(a: &KeywordSet, b: &KeywordSet) -> usize {
    crate::text::intersection_len(a.as_slice(), b.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn offered_tools_only_grow_and_keep_the_order_first_offered() {
        // (offered before, chosen now, offered after, added)
        type Row<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], usize);
        let table: [Row<'_>; 5] = [
            (&[], &["shell", "read_file"], &["shell", "read_file"], 2),
            (&["shell"], &["get_time"], &["shell", "get_time"], 1),
            (
                &["shell", "get_time"],
                &["get_time", "shell"],
                &["shell", "get_time"],
                0,
            ),
            (&["shell", "get_time"], &[], &["shell", "get_time"], 0),
            (&["b"], &["a", "b", "a", "c"], &["b", "a", "c"], 2),
        ];
        for (before, chosen, after, added) in table {
            let mut offered: Vec<String> = before.iter().map(|s| s.to_string()).collect();
            assert_eq!(grow(&mut offered, chosen), added, "{before:?} + {chosen:?}");
            assert_eq!(offered, after.to_vec(), "{before:?} + {chosen:?}");
        }
        let mut offered = vec![];
        grow(&mut offered, &["x"]);
        assert_eq!(offered, ["x"]);
    }
    use crate::text::FallbackTokenizer;

    fn kw(text: &str) -> KeywordSet {
        KeywordSet::of(&FallbackTokenizer, text)
    }

    #[test]
    fn a_word_every_description_uses_offers_no_tool_a_specific_one_does() {
        let t = &FallbackTokenizer;
        let tools = [
            (
                "subtasks",
                "Split a task into independent subtasks that run in parallel, each answered \
                 by a helper agent of its own, and get their answers back to combine.",
            ),
            ("weather__forecast", "Get the weather forecast for a city."),
            (
                "github__create_issue",
                "Create a new issue in a repository. Returns the issue's URL.",
            ),
            ("backup__run", "Use it to make a copy of a folder."),
        ];
        let sets: Vec<KeywordSet> = tools
            .iter()
            .map(|(name, description)| described(t, name, description))
            .collect();
        let candidates: Vec<Candidate<'_>> = tools
            .iter()
            .zip(&sets)
            .map(|((name, _), keywords)| Candidate { name, keywords })
            .collect();
        // (question, the tools it points to)
        let cases: [(&str, &[usize]); 9] = [
            ("Read packing.md back to me", &[]),
            ("Can you get it back?", &[]),
            ("Use whatever tool you need and give me the result", &[]),
            ("What's the weather in Lyon tomorrow?", &[1]),
            ("Open an issue about the crash", &[2]),
            ("Split this into parallel parts", &[0]),
            ("Run a backup of my photos", &[3]),
            ("Return the forecast", &[1]),
            ("What is the capital of France?", &[]),
        ];
        for (q, want) in cases {
            let query = kw(q);
            let got = choose(&OfferInput {
                candidates: &candidates,
                query: &query,
                wanted: &[],
                max_relevant: 8,
            });
            assert_eq!(got, want, "{q:?}");
        }
    }

    #[test]
    fn tools_are_chosen_by_the_question_and_what_the_session_used() {
        let time = kw("get time current date clock today tomorrow");
        let read = kw("read file text contents open show");
        let shell = kw("shell command run program terminal");
        let names = ["get_time", "read_file", "shell"];
        let sets = [&time, &read, &shell];
        let candidates: Vec<Candidate<'_>> = names
            .iter()
            .zip(sets)
            .map(|(name, keywords)| Candidate { name, keywords })
            .collect();
        // (question, wanted, max, chosen)
        let cases: [(&str, &[&str], usize, &[usize]); 6] = [
            ("what is the capital of France?", &[], 8, &[]),
            ("what date is it tomorrow?", &[], 8, &[0]),
            ("open the file notes.md and show it", &[], 8, &[1]),
            ("what is the capital of France?", &["shell"], 8, &[2]),
            // The most shared first, up to the cap.
            ("run the program, then show the file contents", &[], 1, &[1]),
            (
                "run the program, then show the file contents",
                &["get_time"],
                1,
                &[0, 1],
            ),
        ];
        for (q, wanted, max, want) in cases {
            let query = kw(q);
            let got = choose(&OfferInput {
                candidates: &candidates,
                query: &query,
                wanted,
                max_relevant: max,
            });
            assert_eq!(got, want, "{q:?} {wanted:?}");
        }
    }
}
