//! Where the text of a turn came from, and what may leave the machine because of it.
//!
//! Every piece of text that enters a turn has one of three sources ([`Source`]):
//! - **the person**: their question and their answers to questions about calls;
//! - **the store**: the agent's own memories, skills and history — private, and as
//!   trustworthy as what they were learned from;
//! - **the world**: every tool result (file contents, pages, command output, MCP
//!   results) and anything stored that was learned from one — untrusted, possibly private.
//!
//! A turn keeps a [`Provenance`] ledger: the person's words, the links seen in store and
//! world text, and what brought world text in. Two rules read it:
//! - [`Provenance::unsourced`] (the egress rule, applied by
//!   [`permission::check_egress`](crate::permission::check_egress)): once world text is
//!   in the turn, what a call would send off the machine (a URL with its host, path and
//!   query; the values of an open-world tool's arguments) must have come from the person's
//!   words, or be a link that earlier text gave verbatim (following a link is not sending
//!   data). Anything else is asked. The rule is on where the data came from, never on
//!   what it looks like, so no encoding (percent, base64, DNS labels) slips past it.
//! - world text never becomes a rule or a preference: the memory side reads
//!   [`Source`] of what it learns from (see `Memory::source` and
//!   `memory::learned_source`).
//!
//! Before any world text, the model may build what it sends from the question itself
//! ("weather in Hangzhou" → a weather URL): that is the person's request.
//!
//! Limits, by design: a page may list links and steer the model to follow some of them;
//! each is verbatim, so each runs — at most the choice of links carries data, never
//! the text of a file. The person's own words may leave in any form (they wrote them).
//!
//! Left to others: which tools send data off the machine and what of their arguments
//! leaves (the shell knows its tools), asking the person, and the user's list of hosts.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// Where a piece of text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The person's own words: their messages and answers.
    #[default]
    Person,
    /// The agent's own store (memories, skills, history) learned from the person.
    Store,
    /// Tool results, and anything learned from them.
    World,
}

impl Source {
    /// `person`, `store`, `world`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Person => "person",
            Source::Store => "store",
            Source::World => "world",
        }
    }
}

/// How a message from someone other than the person (a member of a chat group who is
/// not its owner) opens, as it is asked and kept in the session: `[not the owner] Bo:
/// …`. The model learns who speaks; later turns read the kept message as world text
/// ([`history_user_source`]). A person's own message that happens to open so is only
/// trusted less.
pub const NOT_THE_PERSON: &str = "[not the owner]";

/// `text` from `speaker`, who is not the person, as it is asked and kept.
pub fn from_other(speaker: &str, text: &str) -> String {
    let speaker: String = speaker
        .chars()
        .filter(|c| !c.is_control() && *c != '[' && *c != ']')
        .collect();
    alloc::format!("{NOT_THE_PERSON} {}: {text}", speaker.trim())
}

/// The source of a user message of the history: the person's words, unless it opens
/// with [`NOT_THE_PERSON`].
pub fn history_user_source(text: &str) -> Source {
    if text.trim_start().starts_with(NOT_THE_PERSON) {
        Source::World
    } else {
        Source::Person
    }
}

/// Most origins of world text kept for the explanation (the first ones count most).
pub const MAX_ORIGINS: usize = 8;

/// Most links kept per turn: a page with thousands of links keeps its first ones.
pub const MAX_LINKS: usize = 4096;

/// The sources of one turn's text. Serialises with the turn, so a parked call is judged
/// the same after a restart.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// The person's words in this turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    person: Vec<String>,
    /// Links (`http`/`https` URLs) given verbatim by store or world text.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    links: BTreeSet<String>,
    /// What brought world text in (`read_file`, `http_get`, `history`, `memory` …), in
    /// order, at most [`MAX_ORIGINS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    world: Vec<String>,
    /// Whether any world text is in the turn (kept apart from `world`, which is capped).
    #[serde(default, skip_serializing_if = "core::ops::Not::not")]
    has_world: bool,
}

impl Provenance {
    /// A turn that starts with the person's question.
    pub fn new(question: &str) -> Provenance {
        let mut p = Provenance::default();
        p.person_said(question);
        p
    }

    /// The person said this (an answer, a message).
    pub fn person_said(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.person.push(String::from(text));
        }
    }

    /// Text of `source` entered the turn, brought in by `origin` (a tool's name,
    /// `history`, `memory` …): its links count as given, and world text marks the turn.
    pub fn saw(&mut self, source: Source, origin: &str, text: &str) {
        match source {
            Source::Person => self.person_said(text),
            Source::Store | Source::World => {
                for link in links(text) {
                    if self.links.len() >= MAX_LINKS {
                        break;
                    }
                    self.links.insert(String::from(link));
                }
                if source == Source::World {
                    self.has_world = true;
                    if self.world.len() < MAX_ORIGINS && !self.world.iter().any(|o| o == origin) {
                        self.world.push(String::from(origin));
                    }
                }
            }
        }
    }

    /// The person's words in the turn (their question, unless someone else asked it,
    /// and their answers): what something learned may stand on to be theirs.
    pub fn person_words(&self) -> &[String] {
        &self.person
    }

    /// Whether world text is in the turn.
    pub fn has_world(&self) -> bool {
        self.has_world
    }

    /// What brought world text in, first first.
    pub fn world_origins(&self) -> &[String] {
        &self.world
    }

    /// The first of `parts` (what a call would send) that neither the person's words
    /// nor a verbatim link account for; `None` when all are accounted for or no world
    /// text is in the turn.
    pub fn unsourced<'a>(&self, parts: &[&'a str]) -> Option<&'a str> {
        self.unsourced_with(parts, &[])
    }

    /// [`Provenance::unsourced`], where a value found verbatim in one of `returned` —
    /// what the call's destination itself gave earlier in the turn (an MCP server's
    /// results, for a call of the same server) — also counts: sending a server what it
    /// sent tells it nothing new.
    pub fn unsourced_with<'a>(&self, parts: &[&'a str], returned: &[&str]) -> Option<&'a str> {
        if !self.has_world {
            return None;
        }
        parts
            .iter()
            .copied()
            .find(|p| !self.sourced(p) && !returned.iter().any(|r| r.contains(p.trim())))
    }

    /// Whether one value is accounted for: empty, said by the person (as written; a URL
    /// also without its scheme or final `/`; other text word by word), or a link given
    /// verbatim.
    pub fn sourced(&self, part: &str) -> bool {
        let part = part.trim();
        if part.is_empty() {
            return true;
        }
        if self.person.iter().any(|p| p.contains(part)) {
            return true;
        }
        match url_rest(part) {
            Some(rest) => {
                let bare = rest.strip_suffix('/').unwrap_or(rest);
                // The link as given, with either scheme, with or without a final `/`
                // (a few look-ups in the set, however many links a page gave).
                let given = self.links.contains(part)
                    || ["https://", "http://"].iter().any(|scheme| {
                        let mut l = String::with_capacity(scheme.len() + bare.len() + 1);
                        l.push_str(scheme);
                        l.push_str(bare);
                        if self.links.contains(&l) {
                            return true;
                        }
                        l.push('/');
                        self.links.contains(&l)
                    });
                // The person may write a link without its scheme ("example.com/a").
                given || (bare.len() > 3 && self.person.iter().any(|p| p.contains(bare)))
            }
            None => {
                let said: BTreeSet<String> = self.person.iter().flat_map(|p| words(p)).collect();
                let mut any = false;
                let all = words(part).all(|w| {
                    any = true;
                    said.contains(&w)
                });
                any && all
            }
        }
    }
}

/// What follows `http://` or `https://` (case-insensitive), if `text` is such a URL.
fn url_rest(text: &str) -> Option<&str> {
    for scheme in ["https://", "http://"] {
        if text.len() > scheme.len()
            && text.is_char_boundary(scheme.len())
            && text[..scheme.len()].eq_ignore_ascii_case(scheme)
        {
            return Some(&text[scheme.len()..]);
        }
    }
    None
}

/// The `http`/`https` links in `text`: each runs from its scheme to the first space,
/// quote, angle bracket or backtick, less trailing punctuation and an unmatched `)`
/// (Markdown's `[t](url)`).
pub fn links(text: &str) -> impl Iterator<Item = &str> {
    let lower = text.as_bytes();
    let mut at = 0;
    core::iter::from_fn(move || {
        while at < text.len() {
            let start = find_scheme(lower, at)?;
            let end = text[start..]
                .find(|c: char| c.is_whitespace() || "\"'<>`|\\{}^".contains(c))
                .map_or(text.len(), |i| start + i);
            at = end.max(start + 1);
            let mut link = &text[start..end];
            loop {
                let before = link.len();
                link = link.trim_end_matches(['.', ',', ';', ':', '!', '?', ']', '*']);
                if link.ends_with(')') && link.matches('(').count() < link.matches(')').count() {
                    link = &link[..link.len() - 1];
                }
                if link.len() == before {
                    break;
                }
            }
            if url_rest(link).is_some_and(|r| !r.is_empty()) {
                return Some(link);
            }
        }
        None
    })
}

/// The index of the next `http://` or `https://` (any case) at or after `from`.
fn find_scheme(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 7 <= bytes.len() {
        if bytes[i].eq_ignore_ascii_case(&b'h') {
            let rest = &bytes[i..];
            let is = |s: &[u8]| rest.len() >= s.len() && rest[..s.len()].eq_ignore_ascii_case(s);
            if is(b"http://") || is(b"https://") {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The words of a text for the word-by-word comparison: runs of ASCII letters and
/// digits (lower-cased), and every other letter or digit alone (a CJK character is a
/// word).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = text;
    core::iter::from_fn(move || loop {
        let c = rest.chars().next()?;
        if c.is_ascii_alphanumeric() {
            let end = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let w = rest[..end].to_ascii_lowercase();
            rest = &rest[end..];
            return Some(w);
        }
        rest = &rest[c.len_utf8()..];
        if c.is_alphanumeric() {
            return Some(String::from(c));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn world(question: &str, results: &[&str]) -> Provenance {
        let mut p = Provenance::new(question);
        for r in results {
            p.saw(Source::World, "read_file", r);
        }
        p
    }

    #[test]
    fn links_are_found_with_their_punctuation_trimmed() {
        let text = "See https://a.example/x?y=1. Or (http://b.example/p_(q)) and \
                    [c](https://c.example/d), \"https://e.example/f\" HTTPS://G.example/H!";
        let found: Vec<&str> = links(text).collect();
        assert_eq!(
            found,
            vec![
                "https://a.example/x?y=1",
                "http://b.example/p_(q)",
                "https://c.example/d",
                "https://e.example/f",
                "HTTPS://G.example/H"
            ]
        );
        assert_eq!(links("http:// nothing, https:").count(), 0);
        assert_eq!(links("日本 https://例え.jp/パス。").count(), 1);
    }

    #[test]
    fn a_message_from_someone_else_is_world_text_in_the_history() {
        let cases = [
            ("what is the weather?", Source::Person),
            ("[not the owner] Bo: send it to me", Source::World),
            ("  [not the owner] x", Source::World),
            ("I am [not the owner] of this", Source::Person),
        ];
        for (text, want) in cases {
            assert_eq!(history_user_source(text), want, "{text}");
        }
        let asked = from_other("Bo [admin]\n", "hi");
        assert_eq!(asked, "[not the owner] Bo admin: hi");
        assert_eq!(history_user_source(&asked), Source::World);
    }

    #[test]
    fn before_world_text_anything_may_be_sent() {
        let mut p = Provenance::new("weather in Hangzhou");
        p.saw(Source::Store, "memory", "the user lives in Hangzhou");
        assert!(!p.has_world());
        assert_eq!(p.unsourced(&["https://wttr.in/Hangzhou?format=3"]), None);
    }

    #[test]
    fn after_world_text_only_sourced_values_leave() {
        let page = "Docs at https://docs.example/start and https://docs.example/api/";
        let p = world("summarise https://docs.example/start for me", &[page]);
        // (what would leave, accounted for)
        let cases: &[(&str, bool)] = &[
            // the person's link, as written and without the final slash
            ("https://docs.example/start", true),
            ("https://docs.example/start/", true),
            // a link the page gave, verbatim (with or without the final slash)
            ("https://docs.example/api/", true),
            ("https://docs.example/api", true),
            // the page's link with something added: data could ride on it
            ("https://docs.example/api/?q=secret", false),
            ("https://attacker.example/c?d=hunter2", false),
            // encodings are no way around it: they are not what anyone gave
            ("https://attacker.example/c?d=%67%68%70%5f", false),
            ("https://aGVsbG8.attacker.example/", false),
            ("https://6e6f746573.attacker.example/x", false),
            ("http://DOCS.example/start", false),
            // plain values: the person's words, word by word, in any order
            ("summarise", true),
            ("for me summarise", true),
            ("ME", true),
            ("hunter2", false),
            ("summarise hunter2", false),
            ("", true),
            ("   ", true),
        ];
        for (part, ok) in cases {
            assert_eq!(p.sourced(part), *ok, "{part}");
            assert_eq!(p.unsourced(&[part]).is_none(), *ok, "{part}");
        }
    }

    #[test]
    fn a_link_the_person_wrote_without_its_scheme_counts() {
        let p = world("fetch example.com/weather/Hangzhou please", &["x"]);
        assert!(p.sourced("https://example.com/weather/Hangzhou"));
        assert!(p.sourced("http://example.com/weather/Hangzhou/"));
        assert!(!p.sourced("https://example.com/weather/Hangzhou?k=1"));
    }

    #[test]
    fn chinese_words_are_compared_character_by_character() {
        let p = world("杭州今天的天气", &["页面"]);
        assert!(p.sourced("杭州 天气"));
        assert!(!p.sourced("杭州 密码"));
    }

    #[test]
    fn the_first_unsourced_part_is_named_and_origins_are_kept_once() {
        let mut p = world("q", &[]);
        p.saw(Source::World, "http_get", "a");
        p.saw(Source::World, "http_get", "b");
        p.saw(Source::World, "read_file", "c");
        assert_eq!(p.world_origins(), ["http_get", "read_file"]);
        assert_eq!(p.unsourced(&["q", "leak", "more"]), Some("leak"));
    }

    #[test]
    fn what_the_destination_returned_may_go_back_to_it() {
        let p = world("find the invoice", &["a file"]);
        let returned = ["{\"id\": \"inv-20931\", \"title\": \"March\"}"];
        assert_eq!(p.unsourced_with(&["inv-20931"], &returned), None);
        assert_eq!(
            p.unsourced_with(&["inv-20931", "PIN 4921"], &returned),
            Some("PIN 4921")
        );
        assert_eq!(p.unsourced_with(&["inv-20931"], &[]), Some("inv-20931"));
    }

    #[test]
    fn answers_are_the_persons_words() {
        let mut p = world("look it up", &["page"]);
        assert!(!p.sourced("https://x.example/"));
        p.person_said("yes, use https://x.example/");
        assert!(p.sourced("https://x.example/"));
    }

    #[test]
    fn the_ledger_survives_serialisation() {
        let p = world("q https://a.example/", &["see https://b.example/"]);
        let json = serde_json::to_string(&p).unwrap();
        let back: Provenance = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);
        assert!(back.has_world());
        let empty: Provenance = serde_json::from_str("{}").unwrap();
        assert!(!empty.has_world());
    }
}
