//! The generated conversation stores and their labelled questions.
//!
//! A store is what Evolve's memory holds after a long time with one user: every dialog turn
//! and every extracted fact is one [`Memory`] (turns `Category::General`, extracted facts
//! `Category::Fact`, default priority and mostly default importance, ages spread over two
//! years). A few fictional people have personal facts ([`Topic`]: where they live, their
//! job, their pet…), each stated once in their own words ("Mel: I painted a sunset at the
//! lake last weekend"), sometimes retold by the user and sometimes also extracted ("Mel
//! painted a sunset at the lake."). Around them: chit-chat that names them without saying
//! anything about a topic, near misses that name them and touch a topic without the fact,
//! facts that are no longer true (where they used to live), chit-chat without names and
//! topic words without a person.
//!
//! Questions ask for a fact in other words: the same word, another form of it (live/lives,
//! painted/paint, 狗/小狗) or other words altogether (job/profession, 住/生活), which is
//! labelled per question ([`Wording`]) against its evidence. Follow-ups ask with a pronoun
//! and need the previous user turn. Questions without an answer ask about a topic the
//! person has no fact for, about a stranger, or about something else entirely.
//!
//! The language files ([`en`], [`zh`]) hold the templates and the names; this file holds
//! the shapes and the generator. Everything comes from the seed: no file, no network.

pub mod en;
pub mod zh;

use std::collections::{BTreeMap, BTreeSet};

use evolve_core::memory::{Category, Memory};
use evolve_core::text::Tokenizer;
use evolve_core::{Timestamp, DAY};

use crate::rng::Rng;

/// The moment every question is asked: 2026-01-01T00:00:00Z.
pub const NOW: Timestamp = 1_767_225_600;

/// Memories are created over the two years before [`NOW`].
const HISTORY_DAYS: usize = 730;

/// One kind of personal fact and every way the data talks about it. Templates use `{n}`
/// (the person), `{ns}` (the person's possessive: "Mel's", "李娜的"), `{pro}`/`{pos}` (their
/// pronouns), `{0}`, `{1}`… (the fields of one entry of `values`) and the pool slots
/// `{city}`, `{old}`, `{year}`, `{month}`, `{day}`, `{age}`, `{sib}`, `{partner}`.
pub struct Topic {
    /// Short name, for the reader of the templates.
    #[allow(dead_code)]
    pub key: &'static str,
    /// One entry per possible fact, its fields referenced as `{0}`, `{1}`…
    pub values: &'static [&'static [&'static str]],
    /// The person says it (the speaker label is added).
    pub said: &'static [&'static str],
    /// The user tells it about the person.
    pub told: &'static [&'static str],
    /// The fact as memory extraction writes it (`Category::Fact`).
    pub extracted: &'static [&'static str],
    /// Was true once and is no longer (where they used to live): never evidence.
    pub earlier: &'static [&'static str],
    /// Names the person and touches the topic without the fact.
    pub near: &'static [&'static str],
    /// Topic words without any person.
    pub mention: &'static [&'static str],
    /// Questions for the fact, naming the person with `{n}`/`{ns}` (a follow-up puts the
    /// pronouns there, so `{n}` is only ever a subject).
    pub questions: &'static [&'static str],
    /// A turn that brings up a relative of the person ("Tell me about Mel's sister").
    pub intro: &'static [&'static str],
    /// Follow-ups after an `intro`, about the relative by pronoun.
    pub about_relative: &'static [&'static str],
}

/// Everything a language contributes to the data.
pub struct Language {
    /// "en", "zh": the column in the tables.
    pub code: &'static str,
    /// A turn said by someone: `{n}` the speaker, `{t}` the text.
    pub speaker: &'static str,
    /// The possessive of a name (`{n}`).
    pub possessive: &'static str,
    /// Subject and possessive pronoun, for women then men.
    pub pronouns: [(&'static str, &'static str); 2],
    /// Given names of the people, women then men. With `surnames`, a name is a surname and
    /// one of these.
    pub given: [&'static [&'static str]; 2],
    /// Surnames (empty for English).
    pub surnames: &'static [&'static str],
    /// Names of relatives and partners (with a surname when `surnames` is not empty).
    pub relatives: &'static [&'static str],
    /// People who never appear in the store (questions without an answer).
    pub strangers: &'static [&'static str],
    /// Pool slots.
    pub cities: &'static [&'static str],
    pub months: &'static [&'static str],
    pub weekdays: &'static [&'static str],
    pub foods: &'static [&'static str],
    /// How a year and a day of the month are written (`{y}`, `{d}`).
    pub year: &'static str,
    pub day: &'static str,
    pub topics: &'static [Topic],
    /// Chit-chat without names (`{weekday}`, `{hour}`, `{food}`, `{mins}`, `{city}`).
    pub chat: &'static [&'static str],
    /// Chit-chat that names someone (`{n}` and the chat slots).
    pub name_chat: &'static [&'static str],
    /// A user turn that brings a person up, before a follow-up about them.
    pub openers: &'static [&'static str],
    /// Questions about nothing in the store.
    pub off_topic: &'static [&'static str],
    /// Ways to wrap a question: `{q}` as is, `{lq}` with its first letter lower-cased.
    pub wrappers: &'static [&'static str],
    /// How a follow-up about the same person starts (`{q}`/`{lq}`).
    pub follow_up: &'static [&'static str],
}

/// What a system sees of a question.
pub struct Question {
    /// The user's turn.
    pub text: String,
    /// The user's turn before it in the same conversation, if any. Follow-ups need it;
    /// for the other questions it is unrelated (or absent), as in a real conversation.
    /// (No system of the first lineup reads it.)
    #[allow(dead_code)]
    pub previous: Option<String>,
    /// When it is asked.
    pub now: Timestamp,
}

/// What kind of question a case is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Names the person; answered by the evidence.
    Direct,
    /// Asks by pronoun; the previous turn says who.
    FollowUp,
    /// Nothing in the store answers it: the best is to inject nothing.
    NoAnswer,
}

/// How a question words what its evidence says (the person's name aside), under the
/// product's keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// At least one keyword in common.
    SameWord,
    /// No keyword in common, but a stem (English: lives/live, painted/paint), or in
    /// Chinese a word inside another (狗/小狗, 画/画画).
    OtherForm,
    /// Nothing in common: only meaning links them (job/profession, 住/生活).
    OtherWords,
}

impl Wording {
    pub const ALL: [Wording; 3] = [Wording::SameWord, Wording::OtherForm, Wording::OtherWords];

    pub fn label(self) -> &'static str {
        match self {
            Wording::SameWord => "same word",
            Wording::OtherForm => "other form",
            Wording::OtherWords => "other words",
        }
    }
}

/// A question with its labels.
pub struct Case {
    pub question: Question,
    pub kind: Kind,
    pub wording: Wording,
    /// Indices of the memories that state the answer (empty for [`Kind::NoAnswer`]).
    pub evidence: Vec<usize>,
    /// The person asked about, if one of the store's.
    pub person: Option<usize>,
}

/// Where a memory came from, for the breakdown of what a system injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// States a fact of `person` about `topic` (index into the language's topics).
    Fact { person: usize, topic: usize },
    /// A fact of `person` that is no longer true.
    Earlier { person: usize },
    /// Names `person` (or a relative: `None`) without a fact.
    NameChat { person: Option<usize> },
    /// Names `person` and touches a topic without the fact.
    NearMiss { person: usize },
    /// Chit-chat without names.
    Chat,
    /// Topic words without a person.
    Mention,
}

/// One generated store and its questions.
pub struct Dataset {
    pub lang: &'static str,
    pub memories: Vec<Memory>,
    pub sources: Vec<Source>,
    pub cases: Vec<Case>,
}

/// How many questions of each kind.
pub struct Mix {
    pub direct: usize,
    pub follow_ups: usize,
    pub no_answer: usize,
}

/// The values of a template's slots.
type Slots = BTreeMap<&'static str, String>;

/// Slot names of the fields of a topic value.
const FIELDS: [&str; 6] = ["0", "1", "2", "3", "4", "5"];

/// A person of the store.
struct Person {
    name: String,
    /// 0 for women, 1 for men (index into `Language::pronouns`).
    gender: usize,
    /// The slots of each topic the person has a fact for.
    facts: Vec<Option<Slots>>,
}

/// A memory before it is built: the store sorts by creation time first.
struct Draft {
    text: String,
    category: Category,
    at: Timestamp,
    source: Source,
}

/// Fills `{key}` slots. A missing slot is a mistake in a template of this bench.
fn render(template: &str, slots: &Slots) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .unwrap_or_else(|| panic!("unclosed slot in template {template:?}"));
        let key = &after[..close];
        let value = slots
            .get(key)
            .unwrap_or_else(|| panic!("no slot {{{key}}} for template {template:?}"));
        out.push_str(value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    capitalised(&out)
}

/// The first letter upper-cased (English sentences; Chinese is unchanged).
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if c.is_lowercase() => c.to_uppercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// The first letter lower-cased (a question after "Remind me, ").
fn lowered(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if c.is_uppercase() => c.to_lowercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// `template` with `{q}` and `{lq}` filled from `question`.
fn wrap(template: &str, question: &str) -> String {
    template
        .replace("{lq}", &lowered(question))
        .replace("{q}", question)
}

/// Draws names without repeating one: every name in a store is one person.
struct Names<'a> {
    lang: &'a Language,
    given: [Vec<&'static str>; 2],
    relatives: Vec<&'static str>,
}

impl<'a> Names<'a> {
    fn new(lang: &'a Language, rng: &mut Rng) -> Self {
        let mut given = [lang.given[0].to_vec(), lang.given[1].to_vec()];
        let mut relatives = lang.relatives.to_vec();
        for g in &mut given {
            rng.shuffle(g);
        }
        rng.shuffle(&mut relatives);
        Names {
            lang,
            given,
            relatives,
        }
    }

    /// A person's name; given names are never reused, so two people differ in more than
    /// their surname.
    fn person(&mut self, gender: usize, rng: &mut Rng) -> String {
        let given = self.given[gender]
            .pop()
            .expect("enough given names for the people of the store");
        if self.lang.surnames.is_empty() {
            given.to_string()
        } else {
            format!("{}{given}", rng.pick(self.lang.surnames))
        }
    }

    fn relative(&mut self, rng: &mut Rng) -> String {
        let given = self
            .relatives
            .pop()
            .expect("enough relative names for the store");
        if self.lang.surnames.is_empty() {
            given.to_string()
        } else {
            format!("{}{given}", rng.pick(self.lang.surnames))
        }
    }
}

/// Slots for chit-chat and topic mentions: pool values only.
fn pool_slots(lang: &Language, rng: &mut Rng) -> Slots {
    let mut s = Slots::new();
    let city = rng.pick(lang.cities);
    let mut old = rng.pick(lang.cities);
    while old == city {
        old = rng.pick(lang.cities);
    }
    s.insert("city", city.to_string());
    s.insert("old", old.to_string());
    let year = (2015 + rng.below(10)).to_string();
    s.insert("year", lang.year.replace("{y}", &year));
    s.insert("month", rng.pick(lang.months).to_string());
    let day = (1 + rng.below(28)).to_string();
    s.insert("day", lang.day.replace("{d}", &day));
    s.insert("age", (24 + rng.below(30)).to_string());
    s.insert("weekday", rng.pick(lang.weekdays).to_string());
    s.insert("hour", (7 + rng.below(13)).to_string());
    s.insert("mins", (5 + 5 * rng.below(12)).to_string());
    s.insert("food", rng.pick(lang.foods).to_string());
    s
}

/// Slots of one topic: pool values and the fields of one of its values.
fn topic_slots(lang: &Language, topic: &Topic, rng: &mut Rng) -> Slots {
    let mut s = pool_slots(lang, rng);
    if !topic.values.is_empty() {
        for (key, field) in FIELDS.iter().zip(rng.pick(topic.values).iter()) {
            s.insert(key, field.to_string());
        }
    }
    s
}

/// Adds the slots that name someone: `{n}`, `{ns}`, `{pro}`, `{pos}`.
fn name_slots(lang: &Language, s: &mut Slots, name: &str, gender: usize) {
    s.insert("n", name.to_string());
    s.insert("ns", lang.possessive.replace("{n}", name));
    let (pro, pos) = lang.pronouns[gender];
    s.insert("pro", pro.to_string());
    s.insert("pos", pos.to_string());
}

/// The same slots with the pronouns where the name was: a follow-up's question.
fn pronoun_slots(lang: &Language, s: &Slots, gender: usize) -> Slots {
    let mut s = s.clone();
    let (pro, pos) = lang.pronouns[gender];
    s.insert("n", pro.to_string());
    s.insert("ns", pos.to_string());
    s
}

/// A creation time in the two years before [`NOW`] (at least an hour before it).
fn some_time(rng: &mut Rng) -> Timestamp {
    NOW - 3_600 - (rng.below(HISTORY_DAYS * DAY as usize) as Timestamp)
}

/// Builds one store of `size` memories about `people` people, and its questions.
pub fn generate(
    lang: &'static Language,
    size: usize,
    people: usize,
    mix: &Mix,
    tokenizer: &dyn Tokenizer,
    seed: u64,
) -> Dataset {
    let mut rng = Rng::new(seed);
    let mut names = Names::new(lang, &mut rng);
    let mut relatives: Vec<String> = Vec::new();

    // The people and their facts (each topic with probability 0.85).
    let people: Vec<Person> = (0..people)
        .map(|i| {
            let gender = i % 2;
            let name = names.person(gender, &mut rng);
            let sib = names.relative(&mut rng);
            let partner = names.relative(&mut rng);
            relatives.push(sib.clone());
            relatives.push(partner.clone());
            let facts = lang
                .topics
                .iter()
                .map(|topic| {
                    if !rng.chance(85) {
                        return None;
                    }
                    let mut s = topic_slots(lang, topic, &mut rng);
                    name_slots(lang, &mut s, &name, gender);
                    s.insert("sib", sib.clone());
                    s.insert("partner", partner.clone());
                    Some(s)
                })
                .collect();
            Person {
                name,
                gender,
                facts,
            }
        })
        .collect();

    // Every fact: said by the person, told by the user 65% of the time, extracted 70%
    // of the time (shortly after it was said); where they lived before, 70% of the time.
    let mut drafts: Vec<Draft> = Vec::new();
    for (p, person) in people.iter().enumerate() {
        for (t, topic) in lang.topics.iter().enumerate() {
            let Some(slots) = &person.facts[t] else {
                continue;
            };
            let at = some_time(&mut rng);
            let source = Source::Fact {
                person: p,
                topic: t,
            };
            let said = render(rng.pick(topic.said), slots);
            let mut speaker = Slots::new();
            speaker.insert("n", person.name.clone());
            speaker.insert("t", said);
            drafts.push(Draft {
                text: render(lang.speaker, &speaker),
                category: Category::General,
                at,
                source,
            });
            if rng.chance(65) {
                drafts.push(Draft {
                    text: render(rng.pick(topic.told), slots),
                    category: Category::General,
                    at: some_time(&mut rng),
                    source,
                });
            }
            if rng.chance(70) {
                drafts.push(Draft {
                    text: render(rng.pick(topic.extracted), slots),
                    category: Category::Fact,
                    at: (at + 60).min(NOW - 60),
                    source,
                });
            }
            if !topic.earlier.is_empty() && rng.chance(70) {
                let before = (30 + rng.below(400)) as Timestamp * DAY;
                drafts.push(Draft {
                    text: render(rng.pick(topic.earlier), slots),
                    category: Category::General,
                    at: at - before,
                    source: Source::Earlier { person: p },
                });
            }
        }
    }
    assert!(
        drafts.len() < size,
        "{} facts do not leave room for chit-chat in {size} memories",
        drafts.len()
    );

    // The rest: the people's chit-chat 35%, near misses 20%, chit-chat without names
    // 30%, topic words without a person 15%; 10–20% of it also kept as facts.
    while drafts.len() < size {
        let roll = rng.below(100);
        let mut s = pool_slots(lang, &mut rng);
        let (text, source) = if roll < 35 {
            let (name, gender, person) = if rng.chance(85) {
                let p = rng.below(people.len());
                (people[p].name.clone(), people[p].gender, Some(p))
            } else {
                (rng.pick(&relatives), rng.below(2), None)
            };
            name_slots(lang, &mut s, &name, gender);
            (
                render(rng.pick(lang.name_chat), &s),
                Source::NameChat { person },
            )
        } else if roll < 55 {
            let p = rng.below(people.len());
            let topic = rng.pick_ref(lang.topics);
            let mut s = topic_slots(lang, topic, &mut rng);
            name_slots(lang, &mut s, &people[p].name, people[p].gender);
            (
                render(rng.pick(topic.near), &s),
                Source::NearMiss { person: p },
            )
        } else if roll < 85 {
            (render(rng.pick(lang.chat), &s), Source::Chat)
        } else {
            let topic = rng.pick_ref(lang.topics);
            let s = topic_slots(lang, topic, &mut rng);
            (render(rng.pick(topic.mention), &s), Source::Mention)
        };
        // Extraction also keeps some of it as facts ("Jon finds Mondays hard"), so a
        // `Fact` is not a sign of an answer.
        let extracted = match source {
            Source::Mention => 20,
            Source::NearMiss { .. } => 15,
            _ => 10,
        };
        let category = if rng.chance(extracted) {
            Category::Fact
        } else {
            Category::General
        };
        drafts.push(Draft {
            text,
            category,
            at: some_time(&mut rng),
            source,
        });
    }

    // The store's order: by creation time.
    drafts.sort_by_key(|d| d.at);
    let mut memories = Vec::with_capacity(drafts.len());
    let mut sources = Vec::with_capacity(drafts.len());
    let mut evidence: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for (i, d) in drafts.into_iter().enumerate() {
        let mut m = Memory::new(d.text, d.category, d.at, tokenizer);
        m.id = i as u64 + 1;
        // Mostly the default importance (3), as extraction leaves it; one in ten not.
        if rng.chance(10) {
            m.importance = rng.pick(&[2, 4, 5]);
        }
        if let Source::Fact { person, topic } = d.source {
            evidence.entry((person, topic)).or_default().push(i);
        }
        memories.push(m);
        sources.push(d.source);
    }

    let cases = Questions {
        lang,
        people: &people,
        memories: &memories,
        evidence: &evidence,
        tokenizer,
    }
    .generate(mix, &mut rng);
    Dataset {
        lang: lang.code,
        memories,
        sources,
        cases,
    }
}

/// What the question generator needs of a store.
struct Questions<'a> {
    lang: &'static Language,
    people: &'a [Person],
    memories: &'a [Memory],
    evidence: &'a BTreeMap<(usize, usize), Vec<usize>>,
    tokenizer: &'a dyn Tokenizer,
}

impl Questions<'_> {
    fn generate(&self, mix: &Mix, rng: &mut Rng) -> Vec<Case> {
        let lang = self.lang;
        let mut cases = Vec::new();

        // Direct: every (person, topic, question template) once before any twice.
        let mut combos: Vec<(usize, usize, usize)> = Vec::new();
        for (p, person) in self.people.iter().enumerate() {
            for (t, topic) in lang.topics.iter().enumerate() {
                if person.facts[t].is_some() {
                    combos.extend((0..topic.questions.len()).map(|q| (p, t, q)));
                }
            }
        }
        rng.shuffle(&mut combos);
        for i in 0..mix.direct {
            let (p, t, q) = combos[i % combos.len()];
            let slots = self.slots(p, t);
            let text = wrap(
                rng.pick(lang.wrappers),
                &render(lang.topics[t].questions[q], slots),
            );
            let previous = self.unrelated_previous(rng, Some(p));
            cases.push(self.case(text, previous, Kind::Direct, p, t));
        }

        // Follow-ups: half about a relative brought up by the previous turn, half about
        // the person the previous turn named.
        let with_relatives: Vec<(usize, usize)> = self
            .facts()
            .filter(|&(_, t)| !lang.topics[t].about_relative.is_empty())
            .collect();
        for i in 0..mix.follow_ups {
            if i % 2 == 0 && !with_relatives.is_empty() {
                let (p, t) = rng.pick(&with_relatives);
                let topic = &lang.topics[t];
                let slots = self.slots(p, t);
                let previous = render(rng.pick(topic.intro), slots);
                let text = render(rng.pick(topic.about_relative), slots);
                cases.push(self.case(text, Some(previous), Kind::FollowUp, p, t));
            } else {
                let p = rng.below(self.people.len());
                let mine: Vec<usize> = (0..lang.topics.len())
                    .filter(|&t| self.people[p].facts[t].is_some())
                    .collect();
                if mine.len() < 2 {
                    continue;
                }
                let a = rng.pick(&mine);
                let mut b = rng.pick(&mine);
                while b == a {
                    b = rng.pick(&mine);
                }
                let previous = if rng.chance(50) {
                    render(rng.pick(lang.topics[a].questions), self.slots(p, a))
                } else {
                    render(rng.pick(lang.openers), self.slots(p, a))
                };
                let asked = pronoun_slots(lang, self.slots(p, b), self.people[p].gender);
                let text = wrap(
                    rng.pick(lang.follow_up),
                    &render(rng.pick(lang.topics[b].questions), &asked),
                );
                cases.push(self.case(text, Some(previous), Kind::FollowUp, p, b));
            }
        }

        // Without an answer: a topic the person has no fact for, a stranger, or nothing
        // the store is about, in turn.
        let missing: Vec<(usize, usize)> = (0..self.people.len())
            .flat_map(|p| (0..lang.topics.len()).map(move |t| (p, t)))
            .filter(|&(p, t)| self.people[p].facts[t].is_none())
            .collect();
        for i in 0..mix.no_answer {
            let (text, person) = match i % 3 {
                0 if !missing.is_empty() => {
                    let (p, t) = rng.pick(&missing);
                    let topic = &lang.topics[t];
                    let mut s = topic_slots(lang, topic, rng);
                    name_slots(lang, &mut s, &self.people[p].name, self.people[p].gender);
                    (render(rng.pick(topic.questions), &s), Some(p))
                }
                0 | 1 => {
                    let topic = rng.pick_ref(lang.topics);
                    let mut s = topic_slots(lang, topic, rng);
                    name_slots(lang, &mut s, rng.pick(lang.strangers), rng.below(2));
                    (render(rng.pick(topic.questions), &s), None)
                }
                _ => (rng.pick(lang.off_topic).to_string(), None),
            };
            let text = wrap(rng.pick(lang.wrappers), &text);
            let previous = self.unrelated_previous(rng, person);
            cases.push(Case {
                question: Question {
                    text,
                    previous,
                    now: NOW,
                },
                kind: Kind::NoAnswer,
                wording: Wording::OtherWords,
                evidence: Vec::new(),
                person,
            });
        }
        cases
    }

    /// Every (person, topic) with a fact.
    fn facts(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.people.iter().enumerate().flat_map(|(p, person)| {
            (0..self.lang.topics.len())
                .filter(move |&t| person.facts[t].is_some())
                .map(move |t| (p, t))
        })
    }

    fn slots(&self, p: usize, t: usize) -> &Slots {
        self.people[p].facts[t]
            .as_ref()
            .expect("questions are asked about facts the person has")
    }

    /// The turn before a question that does not depend on it: none (a new conversation),
    /// chit-chat, or a question about someone else.
    fn unrelated_previous(&self, rng: &mut Rng, not: Option<usize>) -> Option<String> {
        let roll = rng.below(100);
        if roll < 30 {
            return None;
        }
        if roll < 65 || self.people.len() < 2 {
            return Some(render(
                rng.pick(self.lang.chat),
                &pool_slots(self.lang, rng),
            ));
        }
        let others: Vec<(usize, usize)> = self.facts().filter(|&(p, _)| Some(p) != not).collect();
        let (p, t) = rng.pick(&others);
        Some(render(
            rng.pick(self.lang.topics[t].questions),
            self.slots(p, t),
        ))
    }

    fn case(&self, text: String, previous: Option<String>, kind: Kind, p: usize, t: usize) -> Case {
        let evidence = self.evidence.get(&(p, t)).cloned().unwrap_or_default();
        assert!(!evidence.is_empty(), "a fact is always said once");
        let slots = self.slots(p, t);
        let names = [&self.people[p].name, &slots["sib"], &slots["partner"]];
        let wording = self.wording(&text, &evidence, &names);
        Case {
            question: Question {
                text,
                previous,
                now: NOW,
            },
            kind,
            wording,
            evidence,
            person: Some(p),
        }
    }

    /// How `question` words what the evidence says, names aside (see [`Wording`]).
    fn wording(&self, question: &str, evidence: &[usize], names: &[&String]) -> Wording {
        let name_chars: BTreeSet<char> = names.iter().flat_map(|n| n.chars()).collect();
        let name_words: BTreeSet<String> = names
            .iter()
            .flat_map(|n| self.tokenizer.keywords(n))
            .collect();
        let keywords = |text: &str| -> BTreeSet<String> {
            self.tokenizer
                .keywords(text)
                .into_iter()
                .filter(|k| !name_words.contains(k) && !k.chars().all(|c| name_chars.contains(&c)))
                .collect()
        };
        let asked = keywords(question);
        let stated: BTreeSet<String> = evidence
            .iter()
            .flat_map(|&i| keywords(&self.memories[i].content))
            .collect();
        if asked.intersection(&stated).next().is_some() {
            return Wording::SameWord;
        }
        let same_stem = |a: &String, b: &String| a.is_ascii() && b.is_ascii() && stem(a) == stem(b);
        let one_in_other = |a: &String, b: &String| {
            !a.is_ascii() && !b.is_ascii() && (a.contains(b.as_str()) || b.contains(a.as_str()))
        };
        let related = asked
            .iter()
            .any(|a| stated.iter().any(|b| same_stem(a, b) || one_in_other(a, b)));
        if related {
            Wording::OtherForm
        } else {
            Wording::OtherWords
        }
    }
}

/// A crude English stem, only to label questions: plural and verb endings off, a final
/// `e` and a doubled consonant off (lives/living/live → liv, knitted/knit → knit).
fn stem(word: &str) -> String {
    let mut w = word.to_string();
    for (suffix, with) in [("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")] {
        if w.len() > suffix.len() + 2 && w.ends_with(suffix) {
            w.truncate(w.len() - suffix.len());
            w.push_str(with);
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    let b = w.as_bytes();
    if b.len() > 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiouls".contains(&b[b.len() - 1]) {
        w.pop();
    }
    w
}
