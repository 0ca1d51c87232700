//! What is measured of each system's answers, and the markdown tables printed.
//!
//! Recall is micro-averaged over evidence: the share of all evidence memories of the
//! questions that are among the first 10 (30) chosen. "found" is the share of questions
//! with at least one evidence memory among the 30. Characters are those of the chosen
//! memories' contents, as they would enter the prompt (prefixes aside).

use std::time::Duration;

use evolve_core::memory::Memory;
use evolve_core::{Timestamp, DAY};

use crate::data::{Case, Dataset, Kind, Source, Wording};

/// Evidence found among the first 10 and 30 chosen, over a set of questions.
#[derive(Default)]
pub struct Tally {
    evidence: usize,
    at_10: usize,
    at_30: usize,
    questions: usize,
    found: usize,
}

impl Tally {
    fn add(&mut self, evidence: &[usize], chosen: &[usize]) {
        let hits = |k: usize| {
            evidence
                .iter()
                .filter(|e| chosen.iter().take(k).any(|c| c == *e))
                .count()
        };
        let at_30 = hits(30);
        self.evidence += evidence.len();
        self.at_10 += hits(10);
        self.at_30 += at_30;
        self.questions += 1;
        self.found += usize::from(at_30 > 0);
    }

    fn recall_10(&self) -> String {
        percent(self.at_10, self.evidence)
    }

    fn recall_30(&self) -> String {
        percent(self.at_30, self.evidence)
    }

    fn found(&self) -> String {
        percent(self.found, self.questions)
    }
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "–".into();
    }
    format!("{:.1}%", 100.0 * part as f64 / whole as f64)
}

fn mean(total: usize, n: usize) -> String {
    if n == 0 {
        return "–".into();
    }
    format!("{:.0}", total as f64 / n as f64)
}

/// Kinds of injected memory, for answerable questions (see [`Measured::add`]).
const INJECTED: [&str; 6] = [
    "evidence",
    "the person's other facts",
    "the person's chit-chat",
    "others' facts",
    "others' chit-chat",
    "no name",
];

/// Everything measured of one system on one store.
pub struct Measured {
    pub system: String,
    pub lang: &'static str,
    direct: Tally,
    follow_ups: Tally,
    by_wording: [Tally; 3],
    chars: usize,
    questions: usize,
    no_answer_chars: usize,
    no_answers: usize,
    times: Vec<Duration>,
    injected: [usize; 6],
    injected_chars: usize,
    /// Chosen memories at most [`RECENT_DAYS`] old.
    injected_recent: usize,
}

impl Measured {
    pub fn new(system: String, lang: &'static str) -> Self {
        Measured {
            system,
            lang,
            direct: Tally::default(),
            follow_ups: Tally::default(),
            by_wording: Default::default(),
            chars: 0,
            questions: 0,
            no_answer_chars: 0,
            no_answers: 0,
            times: Vec::new(),
            injected: [0; 6],
            injected_chars: 0,
            injected_recent: 0,
        }
    }

    /// Scores one answer.
    pub fn add(&mut self, case: &Case, chosen: &[usize], data: &Dataset, took: Duration) {
        let chars = chars(chosen, &data.memories);
        self.chars += chars;
        self.questions += 1;
        self.times.push(took);
        match case.kind {
            Kind::NoAnswer => {
                self.no_answer_chars += chars;
                self.no_answers += 1;
                return;
            }
            Kind::Direct => {
                self.direct.add(&case.evidence, chosen);
                let w = Wording::ALL
                    .iter()
                    .position(|w| *w == case.wording)
                    .unwrap_or(0);
                self.by_wording[w].add(&case.evidence, chosen);
            }
            Kind::FollowUp => self.follow_ups.add(&case.evidence, chosen),
        }
        for &i in chosen {
            let person_of = |p: usize| Some(p) == case.person;
            let kind = if case.evidence.contains(&i) {
                0
            } else {
                match data.sources[i] {
                    Source::Fact { person, .. } | Source::Earlier { person }
                        if person_of(person) =>
                    {
                        1
                    }
                    Source::NameChat {
                        person: Some(person),
                    }
                    | Source::NearMiss { person }
                        if person_of(person) =>
                    {
                        2
                    }
                    Source::Fact { .. } | Source::Earlier { .. } => 3,
                    Source::NameChat { .. } | Source::NearMiss { .. } => 4,
                    Source::Chat | Source::Mention => 5,
                }
            };
            self.injected[kind] += 1;
            self.injected_chars += data.memories[i].content.chars().count();
            self.injected_recent += usize::from(is_recent(&data.memories[i], case.question.now));
        }
    }

    fn median_micros(&self) -> String {
        let mut t = self.times.clone();
        t.sort();
        match t.get(t.len() / 2) {
            Some(d) => format!("{:.1}", d.as_secs_f64() * 1e6),
            None => "–".into(),
        }
    }
}

/// "Recent" in the tables: the product's 1.0 and 0.9 recency steps end at 1 and 7 days,
/// 0.7 at 30; older memories score 0.5 or 0.3.
const RECENT_DAYS: i64 = 30;

fn is_recent(m: &Memory, now: Timestamp) -> bool {
    now - m.created_at <= RECENT_DAYS * DAY
}

/// Characters of the chosen memories' contents.
pub fn chars(chosen: &[usize], memories: &[Memory]) -> usize {
    chosen
        .iter()
        .map(|&i| memories[i].content.chars().count())
        .sum()
}

/// One line about a store: its size and its questions.
pub fn describe(data: &Dataset) -> String {
    let count = |k: Kind| data.cases.iter().filter(|c| c.kind == k).count();
    let wording = |w: Wording| {
        data.cases
            .iter()
            .filter(|c| c.kind == Kind::Direct && c.wording == w)
            .count()
    };
    let answerable: Vec<&Case> = data
        .cases
        .iter()
        .filter(|c| c.kind != Kind::NoAnswer)
        .collect();
    let evidence: usize = answerable.iter().map(|c| c.evidence.len()).sum();
    let facts = data
        .sources
        .iter()
        .filter(|s| matches!(s, Source::Fact { .. }))
        .count();
    let fact_chars: usize = data
        .sources
        .iter()
        .zip(&data.memories)
        .filter(|(s, _)| matches!(s, Source::Fact { .. }))
        .map(|(_, m)| m.content.chars().count())
        .sum();
    let all_chars: usize = data
        .memories
        .iter()
        .map(|m| m.content.chars().count())
        .sum();
    let now = data.cases.first().map_or(0, |c| c.question.now);
    let recent = data.memories.iter().filter(|m| is_recent(m, now)).count();
    format!(
        "- {}: {} memories ({} state a fact, {} chars on average; all memories {}; {} at most {RECENT_DAYS} days old); {} questions: {} direct (same word {}, other form {}, other words {}), {} follow-ups, {} without an answer; {:.1} evidence memories per answerable question",
        data.lang,
        thousands(data.memories.len()),
        facts,
        mean(fact_chars, facts),
        mean(all_chars, data.memories.len()),
        percent(recent, data.memories.len()),
        thousands(data.cases.len()),
        count(Kind::Direct),
        wording(Wording::SameWord),
        wording(Wording::OtherForm),
        wording(Wording::OtherWords),
        count(Kind::FollowUp),
        count(Kind::NoAnswer),
        evidence as f64 / answerable.len().max(1) as f64,
    )
}

/// `n` questions spread over the store's cases, with their previous turn and evidence.
pub fn print_samples(data: &Dataset, n: usize) {
    let step = (data.cases.len() / n.max(1)).max(1);
    for case in data.cases.iter().step_by(step).take(n) {
        println!(
            "[{} {:?} {:?}] {}",
            data.lang, case.kind, case.wording, case.question.text
        );
        if let Some(previous) = &case.question.previous {
            println!("    previous: {previous}");
        }
        for &i in &case.evidence {
            println!("    evidence #{i}: {}", data.memories[i].content);
        }
    }
}

/// The three tables of one store size.
pub fn print_tables(size: usize, stores: &[String], results: &[Measured]) {
    println!("\n### {} memories\n", thousands(size));
    for line in stores {
        println!("{line}");
    }
    println!();
    println!("| system | lang | R@10 | R@30 | found@30 | follow-up R@30 | follow-up found@30 | chars/question | chars, no answer | µs/query |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.system,
            r.lang,
            r.direct.recall_10(),
            r.direct.recall_30(),
            r.direct.found(),
            r.follow_ups.recall_30(),
            r.follow_ups.found(),
            mean(r.chars, r.questions),
            mean(r.no_answer_chars, r.no_answers),
            r.median_micros(),
        );
    }
    println!("\nR@30 of the direct questions by how they word the fact:\n");
    let labels: Vec<&str> = Wording::ALL.iter().map(|w| w.label()).collect();
    println!("| system | lang | {} |", labels.join(" | "));
    println!("|---|---|---|---|---|");
    for r in results {
        let cells: Vec<String> = r.by_wording.iter().map(Tally::recall_30).collect();
        println!("| {} | {} | {} |", r.system, r.lang, cells.join(" | "));
    }
    println!("\nWhat was injected for the answerable questions (share of the chosen memories):\n");
    println!(
        "| system | lang | {} | chars/memory | ≤ {RECENT_DAYS} days old |",
        INJECTED.join(" | ")
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        let total: usize = r.injected.iter().sum();
        let cells: Vec<String> = r.injected.iter().map(|&n| percent(n, total)).collect();
        println!(
            "| {} | {} | {} | {} | {} |",
            r.system,
            r.lang,
            cells.join(" | "),
            mean(r.injected_chars, total),
            percent(r.injected_recent, total),
        );
    }
}

/// 10000 → "10 000".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
