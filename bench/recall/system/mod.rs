//! The relevance systems compared, behind one trait.
//!
//! A [`System`] is prepared once per store (an index, document frequencies, embeddings)
//! and then asked each question; it answers with the memories it would put in the prompt,
//! in prompt order, at most [`MAX_CHOSEN`]. It sees the question's text, the previous user
//! turn and the time, never the labels.
//!
//! To add a system: implement [`System`] in a file of this folder and add it to
//! [`lineup`], once as it is and, to compare at equal prompt size, once more with
//! [`Cut::TodaysChars`]. The first entry of the lineup is the reference whose injected
//! characters the `@chars` entries are held to.

mod bm25;
mod evolve;

pub use bm25::Bm25Plain;
pub use evolve::{Evolve, Given};

use evolve_core::memory::{Fusion, Memory, Ranking};
use evolve_core::text::Rules;

use crate::data::Question;
use crate::text::ShellTokenizer;

/// At most this many memories enter the prompt (the product's `max_selected`).
pub const MAX_CHOSEN: usize = 30;

/// A way of choosing the memories for a question.
pub trait System {
    /// The row label in the tables.
    fn name(&self) -> String;
    /// Called once with the whole store before any question (not timed).
    fn prepare(&mut self, memories: &[Memory]);
    /// Indices into `memories`, in prompt order, at most [`MAX_CHOSEN`] (timed).
    fn recall(&self, question: &Question, memories: &[Memory]) -> Vec<usize>;
}

/// What is done to a system's answer before it is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Nothing: the system's own choice.
    None,
    /// The answer is taken in order while it fits in the characters the reference (the
    /// first entry) injected for the same question, so systems compare at equal prompt
    /// size.
    TodaysChars,
}

/// One row of the tables: a system and the cut applied to its answers.
pub struct Entry {
    pub system: Box<dyn System>,
    pub cut: Cut,
}

impl Entry {
    pub fn name(&self) -> String {
        match self.cut {
            Cut::None => self.system.name(),
            Cut::TodaysChars => format!("{}@chars", self.system.name()),
        }
    }
}

/// The systems of the tables, the reference first.
pub fn lineup(tokenizer: &ShellTokenizer) -> Vec<Entry> {
    let t = || tokenizer.clone();
    let plain = |system: Box<dyn System>| Entry {
        system,
        cut: Cut::None,
    };
    let held = |system: Box<dyn System>| Entry {
        system,
        cut: Cut::TodaysChars,
    };
    vec![
        plain(Box::new(Evolve::today(t()))),
        plain(Box::new(Bm25Plain::new(t()))),
        held(Box::new(Bm25Plain::new(t()))),
        plain(Box::new(Evolve::new(t()))),
        held(Box::new(Evolve::new(t()))),
        plain(Box::new(Evolve::new(t()).named("evolve -stem").rules(
            Rules {
                stem: false,
                ..Rules::CURRENT
            },
        ))),
        plain(Box::new(Evolve::new(t()).named("evolve -stop").rules(
            Rules {
                stop_words: false,
                ..Rules::CURRENT
            },
        ))),
        plain(Box::new(Evolve::new(t()).named("evolve bigrams").bigrams())),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve -previous")
                .configured(|c| c.context_weight = 0.0),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve previous×0.5")
                .configured(|c| c.context_weight = 0.5),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve F1")
                .configured(|c| c.ranking = Ranking::F1),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve rel^1")
                .configured(|c| c.relevance_exponent = 1.0),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve min 0")
                .configured(|c| c.min_relevance = 0.0),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve -reply -subject")
                .configured(|c| {
                    c.reply_share = 0.0;
                    c.subject_boost = 1.0;
                }),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve+emb rrf")
                .embedded(Fusion::Rrf),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve+emb weighted")
                .embedded(Fusion::Weighted),
        )),
        plain(Box::new(
            Evolve::new(t())
                .named("evolve+emb weighted 0.7")
                .embedded(Fusion::Weighted)
                .configured(|c| c.vector_weight = 0.7),
        )),
    ]
}

/// The first memories of `chosen` whose contents fit in `budget` characters together
/// (stops at the first that does not fit).
pub fn held_to(chosen: &[usize], memories: &[Memory], budget: usize) -> Vec<usize> {
    let mut used = 0usize;
    let mut out = Vec::new();
    for &i in chosen {
        let chars = memories[i].content.chars().count();
        if used + chars > budget {
            break;
        }
        used += chars;
        out.push(i);
    }
    out
}
