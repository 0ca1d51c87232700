//! Dialog stores: the two rules for memories that are turns of a conversation, before
//! and after, with both fusions.
//!
//! The store is what an import of long chats leaves: every turn one memory
//! (`"Name: text"`, `Category::General`, its `speaker` kept), linked to the turn before
//! it in its conversation (`prev`), as `memory import` of dialog records links them.
//! Ten people talk in pairs; each conversation runs over a year. Generated from a fixed
//! seed, in English, with no file and no network.
//!
//! Three kinds of question, labelled with their one evidence turn:
//! - **reply**: one person asks another ("Which instrument are you learning these
//!   days?") and the answer shares no word with what is asked later ("The cello, since
//!   March."). The question to the system names the one who answered and repeats the
//!   asking turn's words ("What instrument is Anna learning?"): only the turn before
//!   the evidence matches.
//! - **person**: someone states a fact in their own words ("Anna: I painted a lighthouse
//!   last weekend") while others talk about the same thing ("Jon: I should paint
//!   something soon"); the question names the person ("What did Anna paint last
//!   weekend?").
//!
//! - **follow-up**: after a reply question, "And what about Jon?" — Jon answered the
//!   same exchange; only the previous question says what is asked (the words take it
//!   at `context_weight`, and the vector leans towards its embedding).
//!
//! Around them: reactions that name the other ("Wow, that's great, Anna!") and
//! chit-chat. The rows: words alone with neither rule (the selection before), each
//! rule alone, both (the default); then the stand-in embeddings
//! (`system/evolve.rs`) fused by reciprocal rank and by a weighted sum, each
//! before and after.

use evolve_core::memory::{Category, Fusion, Memory};
use evolve_core::{Timestamp, DAY};

use crate::data::{Question, NOW};
use crate::rng::Rng;
use crate::system::{Evolve, Given, System, MAX_CHOSEN};
use crate::text::ShellTokenizer;

const PEOPLE: &[&str] = &[
    "Mel", "Anna", "Jon", "Caroline", "Ravi", "Gina", "Tom", "Lena", "Omar", "Priya",
];

/// One exchange: the asking turns (one is used), the answers (`{0}` one of `values`, no
/// word of the ask or the question), and the question to the system (`{n}` the one who
/// answered).
struct Exchange {
    ask: &'static [&'static str],
    answers: &'static [&'static str],
    values: &'static [&'static str],
    question: &'static str,
}

const EXCHANGES: &[Exchange] = &[
    Exchange {
        ask: &[
            "Which instrument are you learning these days?",
            "Still taking those instrument lessons?",
            "What instrument did you pick in the end?",
        ],
        answers: &[
            "The {0}, since March. My teacher is strict but kind.",
            "Oh, the {0}! Three lessons so far.",
        ],
        values: &["cello", "violin", "flute", "banjo", "harp", "trumpet"],
        question: "What instrument is {n} learning?",
    },
    Exchange {
        ask: &[
            "Did you end up adopting a pet?",
            "So, any new pet at your place?",
            "Which pet did you adopt?",
        ],
        answers: &[
            "Yes! A {0} called Biscuit, sleeps on my bed.",
            "We did, a little {0}. Chaos at home now.",
        ],
        values: &[
            "beagle", "kitten", "rabbit", "parrot", "hamster", "tortoise",
        ],
        question: "What pet did {n} adopt?",
    },
    Exchange {
        ask: &[
            "Where did you travel for your holiday?",
            "How was the holiday trip, where did you go?",
            "Where did you fly off to on holiday?",
        ],
        answers: &[
            "We went to {0} for ten days, the food was amazing.",
            "{0}! Sunburnt but happy.",
        ],
        values: &["Lisbon", "Kyoto", "Oslo", "Cusco", "Hanoi", "Marrakesh"],
        question: "Where did {n} travel on holiday?",
    },
    Exchange {
        ask: &[
            "What do you do for work now?",
            "Did you change jobs? What work do you do?",
            "How is work, what is your job now?",
        ],
        answers: &[
            "I'm a {0} at a small firm downtown.",
            "Still a {0}, long shifts though.",
        ],
        values: &[
            "nurse",
            "architect",
            "baker",
            "pilot",
            "librarian",
            "plumber",
        ],
        question: "What does {n} do for work?",
    },
    Exchange {
        ask: &[
            "What book are you reading right now?",
            "Reading any good book lately?",
            "Which book is on your nightstand?",
        ],
        answers: &[
            "{0}, I can't put it down.",
            "An old copy of {0} from my aunt.",
        ],
        values: &[
            "Dune",
            "Emma",
            "Beloved",
            "Middlemarch",
            "Solaris",
            "Ulysses",
        ],
        question: "Which book is {n} reading right now?",
    },
    Exchange {
        ask: &[
            "Have you picked up any sport lately?",
            "Doing any sport these days?",
            "Which sport are you into now?",
        ],
        answers: &[
            "{0}, twice a week with friends.",
            "Yes, {0}. My knees complain.",
        ],
        values: &[
            "Climbing",
            "Rowing",
            "Fencing",
            "Badminton",
            "Squash",
            "Judo",
        ],
        question: "Which sport has {n} picked up lately?",
    },
    Exchange {
        ask: &[
            "What did you name the boat?",
            "Did you ever name your boat?",
            "So what is the boat called?",
        ],
        answers: &[
            "{0}, after my grandmother.",
            "We went with {0}, don't laugh.",
        ],
        values: &["Marigold", "Seagull", "Nora", "Blue Heron"],
        question: "What is the name of {n}'s boat?",
    },
    Exchange {
        ask: &[
            "Which city are you moving to?",
            "Where are you moving after the summer?",
            "Did you decide which city to move to?",
        ],
        answers: &[
            "{0}, the rent is half of here.",
            "Probably {0}, close to my parents.",
        ],
        values: &["Porto", "Leeds", "Bremen", "Ghent", "Tartu"],
        question: "Which city is {n} moving to?",
    },
    Exchange {
        ask: &[
            "What are you studying at night school?",
            "Which course did you sign up for?",
            "What's the night class about?",
        ],
        answers: &[
            "{0}, every Tuesday and Thursday.",
            "{0}. Harder than I thought.",
        ],
        values: &["Accounting", "Italian", "Pottery", "Astronomy", "Welding"],
        question: "What is {n} studying at night school?",
    },
    Exchange {
        ask: &[
            "What are you allergic to again?",
            "Remind me of your allergy?",
            "Which food gives you the allergy?",
        ],
        answers: &["{0}, even a trace is bad.", "Just {0}, but it's serious."],
        values: &["Peanuts", "Shellfish", "Sesame", "Kiwi"],
        question: "What is {n} allergic to?",
    },
];

/// A fact said by its person (`{0}` one of `values`), what others say about the same
/// thing, and the question naming the person.
struct Statement {
    said: &'static str,
    values: &'static [&'static str],
    others: &'static [&'static str],
    question: &'static str,
}

const STATEMENTS: &[Statement] = &[
    Statement {
        said: "I painted a {0} last weekend, my first in years.",
        values: &[
            "lighthouse",
            "portrait of my cat",
            "bowl of lemons",
            "stormy sea",
        ],
        others: &[
            "I should paint something soon.",
            "Painting always calms me down.",
            "My sister paints every weekend.",
        ],
        question: "What did {n} paint last weekend?",
    },
    Statement {
        said: "I finished my first {0} in October!",
        values: &["marathon", "half marathon", "triathlon", "ultra trail"],
        others: &[
            "I'd love to finish a race one day.",
            "Did you finish that puzzle?",
            "October was so busy for me.",
        ],
        question: "What race did {n} finish in October?",
    },
    Statement {
        said: "I grew {0} in the garden this summer.",
        values: &["tomatoes", "pumpkins", "sunflowers", "strawberries"],
        others: &[
            "Our garden is a mess this summer.",
            "Nothing grows in my garden.",
            "The summer was too hot for gardens.",
        ],
        question: "What did {n} grow in the garden?",
    },
    Statement {
        said: "I baked {0} for the school fair and it sold out.",
        values: &[
            "lemon tarts",
            "cinnamon rolls",
            "a carrot cake",
            "sourdough",
        ],
        others: &[
            "The school fair is next month.",
            "I never bake, too messy.",
            "Baking for a crowd sounds stressful.",
        ],
        question: "What did {n} bake for the school fair?",
    },
    Statement {
        said: "I volunteered at the {0} all of last month.",
        values: &["animal shelter", "food bank", "hospice", "library"],
        others: &[
            "I keep meaning to volunteer.",
            "Last month flew by.",
            "Volunteering is good for the soul.",
        ],
        question: "Where did {n} volunteer last month?",
    },
    Statement {
        said: "I saw {0} in concert on Friday, what a night.",
        values: &["Radiohead", "Adele", "Coldplay", "Bjork"],
        others: &[
            "That concert sounds fun!",
            "I missed the concert on Friday.",
            "Friday nights are for concerts.",
        ],
        question: "Which band did {n} see in concert?",
    },
];

const REACTIONS: &[&str] = &[
    "Wow, that's great, {n}!",
    "No way, {n}, tell me more.",
    "Love that for you.",
    "Haha, of course you did.",
    "That sounds lovely, {n}.",
];

const CHAT: &[&str] = &[
    "How was your day?",
    "Busy, but fine. Yours?",
    "Pretty quiet, honestly.",
    "Did you sleep well?",
    "The weather has been strange lately.",
    "I'm so tired this week.",
    "Let's catch up properly soon.",
    "Thanks for checking in!",
    "Same old, same old.",
    "I made pasta again tonight.",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reply,
    Person,
    FollowUp,
}

struct Case {
    question: Question,
    kind: Kind,
    evidence: usize,
    /// For a reply: the exchange and the one who answered (follow-ups pair them).
    exchange: Option<(usize, usize)>,
}

/// A follow-up to a reply question about someone else (`{n}` the one who answered the
/// same exchange): it names only the person; what it asks is in the previous question.
const FOLLOW_UPS: &[&str] = &["And what about {n}?", "How about {n}?", "And {n}?"];

/// A turn under construction: who, what, and the conversation it belongs to.
struct Turns {
    memories: Vec<Memory>,
    tokenizer: ShellTokenizer,
}

impl Turns {
    /// Adds `speaker: text` after `prev` (the conversation's last turn); returns its index.
    fn say(&mut self, speaker: &str, text: &str, prev: Option<usize>, at: Timestamp) -> usize {
        let i = self.memories.len();
        let mut m = Memory::new(
            format!("{speaker}: {text}"),
            Category::General,
            at,
            &self.tokenizer,
        );
        m.id = i as u64 + 1;
        m.speaker = Some(speaker.to_string());
        m.prev = prev.map(|p| p as u64 + 1);
        m.refresh_derived(&self.tokenizer);
        self.memories.push(m);
        i
    }
}

fn fill(template: &str, n: &str, value: &str) -> String {
    template.replace("{n}", n).replace("{0}", value)
}

/// A store of about `turns` memories and its questions.
fn generate(turns: usize, tokenizer: &ShellTokenizer, seed: u64) -> (Vec<Memory>, Vec<Case>) {
    let mut rng = Rng::new(seed);
    let mut store = Turns {
        memories: Vec::with_capacity(turns + 16),
        tokenizer: tokenizer.clone(),
    };
    let mut cases = Vec::new();
    // Which (person, exchange or statement) is already told: a fact is said once.
    let mut told = std::collections::BTreeSet::new();
    let pairs: Vec<(usize, usize)> = (0..PEOPLE.len())
        .flat_map(|a| ((a + 1)..PEOPLE.len()).map(move |b| (a, b)))
        .collect();
    let per_pair = turns / pairs.len();
    for &(a, b) in &pairs {
        let mut last: Option<usize> = None;
        let mut at = NOW - 365 * DAY + rng.below(30 * DAY as usize) as Timestamp;
        let start = store.memories.len();
        while store.memories.len() - start < per_pair {
            at = (at + rng.below(3 * DAY as usize) as Timestamp).min(NOW - 60);
            let (x, y) = if rng.chance(50) { (a, b) } else { (b, a) };
            let (px, py) = (PEOPLE[x], PEOPLE[y]);
            let mut say = |store: &mut Turns, who: &str, text: &str| {
                let i = store.say(who, text, last, at);
                last = Some(i);
                i
            };
            match rng.below(10) {
                // x asks, y answers.
                0 | 1 => {
                    let e = rng.below(EXCHANGES.len());
                    if !told.insert((y, 'e', e)) {
                        continue;
                    }
                    let ex = &EXCHANGES[e];
                    say(&mut store, px, rng.pick(ex.ask));
                    let value = rng.pick(ex.values);
                    let answer = fill(rng.pick(ex.answers), py, value);
                    let evidence = say(&mut store, py, &answer);
                    let reaction = fill(rng.pick(REACTIONS), py, "");
                    say(&mut store, px, &reaction);
                    cases.push(Case {
                        question: Question {
                            text: fill(ex.question, py, ""),
                            previous: None,
                            now: NOW,
                        },
                        kind: Kind::Reply,
                        evidence,
                        exchange: Some((e, y)),
                    });
                }
                // x states a fact; y reacts.
                2 => {
                    let s = rng.below(STATEMENTS.len());
                    if !told.insert((x, 's', s)) {
                        continue;
                    }
                    let st = &STATEMENTS[s];
                    let value = rng.pick(st.values);
                    let evidence = say(&mut store, px, &fill(st.said, px, value));
                    let reaction = fill(rng.pick(REACTIONS), px, "");
                    say(&mut store, py, &reaction);
                    cases.push(Case {
                        question: Question {
                            text: fill(st.question, px, ""),
                            previous: None,
                            now: NOW,
                        },
                        kind: Kind::Person,
                        evidence,
                        exchange: None,
                    });
                }
                // Someone talks about a statement's topic without the fact.
                3 | 4 => {
                    let st = rng.pick_ref(STATEMENTS);
                    say(&mut store, px, rng.pick(st.others));
                }
                // Chit-chat.
                _ => {
                    say(&mut store, px, rng.pick(CHAT));
                    say(&mut store, py, rng.pick(CHAT));
                }
            }
        }
    }
    // Follow-ups: after the question about one who answered an exchange, "and what
    // about X?" for another who answered the same.
    let mut follow_ups = Vec::new();
    for (i, a) in cases.iter().enumerate() {
        let Some((e, _)) = a.exchange else {
            continue;
        };
        let next = cases[i + 1..]
            .iter()
            .find(|b| b.exchange.is_some_and(|(f, _)| f == e));
        if let Some(b) = next {
            let (_, y) = b.exchange.unwrap_or_default();
            follow_ups.push(Case {
                question: Question {
                    text: fill(rng.pick(FOLLOW_UPS), PEOPLE[y], ""),
                    previous: Some(a.question.text.clone()),
                    now: NOW,
                },
                kind: Kind::FollowUp,
                evidence: b.evidence,
                exchange: None,
            });
        }
    }
    cases.extend(follow_ups);
    (store.memories, cases)
}

/// Recall of one system: questions whose evidence is in the first 10 / 30 chosen.
#[derive(Default)]
struct Tally {
    n: usize,
    at_10: usize,
    at_30: usize,
}

impl Tally {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        self.at_10 += usize::from(rank.is_some_and(|r| r < 10));
        self.at_30 += usize::from(rank.is_some_and(|r| r < 30));
    }

    fn share(&self, k: usize) -> String {
        if self.n == 0 {
            return "–".into();
        }
        format!("{:.3}", k as f64 / self.n as f64)
    }
}

/// The rows: (label, system).
fn lineup(tokenizer: &ShellTokenizer) -> Vec<(String, Evolve)> {
    let t = || tokenizer.clone();
    let rules = |e: Evolve, reply: f32, boost: f32| {
        e.configured(move |c| {
            c.reply_share = reply;
            c.subject_boost = boost;
        })
    };
    let mut rows = Vec::new();
    rows.push((
        "words + both, no previous turn".to_string(),
        rules(Evolve::new(t()), 0.3, 1.5).configured(|c| c.context_weight = 0.0),
    ));
    for (label, reply, boost) in [
        ("words, neither rule (before)", 0.0, 1.0),
        ("words + reply 0.3", 0.3, 1.0),
        ("words + subject ×1.5", 0.0, 1.5),
        ("words + both (default)", 0.3, 1.5),
        ("words + reply 0.5 + subject", 0.5, 1.5),
        ("words + reply 1.0 + subject", 1.0, 1.5),
    ] {
        rows.push((label.to_string(), rules(Evolve::new(t()), reply, boost)));
    }
    for (label, fusion, w, reply, boost) in [
        ("emb rrf, neither rule", Fusion::Rrf, 0.4, 0.0, 1.0),
        ("emb rrf + both", Fusion::Rrf, 0.4, 0.3, 1.5),
        (
            "emb weighted 0.4, neither rule",
            Fusion::Weighted,
            0.4,
            0.0,
            1.0,
        ),
        (
            "emb weighted 0.4 + both (default)",
            Fusion::Weighted,
            0.4,
            0.3,
            1.5,
        ),
        ("emb weighted 0.7 + both", Fusion::Weighted, 0.7, 0.3, 1.5),
    ] {
        let e = rules(Evolve::new(t()).embedded(fusion), reply, boost)
            .configured(move |c| c.vector_weight = w);
        rows.push((label.to_string(), e));
    }
    rows.push((
        "emb weighted 0.4 + both, previous turn in words only".to_string(),
        rules(Evolve::new(t()).embedded(Fusion::Weighted), 0.3, 1.5).question_vector_alone(),
    ));
    rows
}

/// The embeddings of `texts` from an OpenAI-style server at `base` (`…/v1`), 64 a call.
fn remote_embeddings(base: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        let body = serde_json::json!({"model": "all-minilm", "input": chunk}).to_string();
        let mut reply = ureq::post(&format!("{}/embeddings", base.trim_end_matches('/')))
            .header("Content-Type", "application/json")
            .send(&body)
            .map_err(|e| format!("{base}: {e}"))?;
        let text = reply
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()
            .map_err(|e| format!("{base}: {e}"))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        for item in v["data"].as_array().ok_or("no data in the answer")? {
            let e: Vec<f32> = item["embedding"]
                .as_array()
                .ok_or("no embedding in the answer")?
                .iter()
                .map(|x| x.as_f64().unwrap_or(0.0) as f32)
                .collect();
            out.push(e);
        }
    }
    Ok(out)
}

/// With `EVOLVE_BENCH_RECALL_EMBED=http://127.0.0.1:PORT/v1`, the rows of a real
/// sentence model served there (`embed-server.py`: all-MiniLM-L6-v2), for the first
/// dialog store.
fn real_model_rows(memories: &[Memory], cases: &[Case]) -> Vec<(String, Evolve)> {
    let Ok(base) = std::env::var("EVOLVE_BENCH_RECALL_EMBED") else {
        return Vec::new();
    };
    let started = std::time::Instant::now();
    let contents: Vec<String> = memories.iter().map(|m| m.content.clone()).collect();
    let mut questions: Vec<String> = cases
        .iter()
        .flat_map(|c| [Some(c.question.text.clone()), c.question.previous.clone()])
        .flatten()
        .collect();
    questions.sort();
    questions.dedup();
    let (m, q) = match (
        remote_embeddings(&base, &contents),
        remote_embeddings(&base, &questions),
    ) {
        (Ok(m), Ok(q)) => (m, q),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("EVOLVE_BENCH_RECALL_EMBED: {e}");
            return Vec::new();
        }
    };
    println!(
        "(MiniLM rows: {} texts embedded by {base} in {:.0} s)\n",
        m.len() + q.len(),
        started.elapsed().as_secs_f64()
    );
    let given = std::rc::Rc::new(Given {
        memories: m,
        questions: questions.into_iter().zip(q).collect(),
    });
    let tokenizer = ShellTokenizer::new(None);
    let mut rows = Vec::new();
    for (label, fusion, w, reply, boost) in [
        ("MiniLM rrf, neither rule", Fusion::Rrf, 0.4, 0.0, 1.0),
        ("MiniLM rrf + both", Fusion::Rrf, 0.4, 0.3, 1.5),
        (
            "MiniLM weighted 0.4, neither rule",
            Fusion::Weighted,
            0.4,
            0.0,
            1.0,
        ),
        (
            "MiniLM weighted 0.4 + both (default)",
            Fusion::Weighted,
            0.4,
            0.3,
            1.5,
        ),
        (
            "MiniLM weighted 0.3 + both",
            Fusion::Weighted,
            0.3,
            0.3,
            1.5,
        ),
        (
            "MiniLM weighted 0.5 + both",
            Fusion::Weighted,
            0.5,
            0.3,
            1.5,
        ),
    ] {
        let e = Evolve::new(tokenizer.clone())
            .given(given.clone(), fusion)
            .configured(move |c| {
                c.vector_weight = w;
                c.reply_share = reply;
                c.subject_boost = boost;
            });
        rows.push((label.to_string(), e));
    }
    rows
}

/// Generates the dialog stores and prints one table per size.
pub fn run(tokenizer: &ShellTokenizer) {
    for (n, (size, seed)) in [(3_000usize, 0xd1a1_0003u64), (20_000, 0xd1a1_0020)]
        .into_iter()
        .enumerate()
    {
        let (memories, cases) = generate(size, tokenizer, seed);
        let replies = cases.iter().filter(|c| c.kind == Kind::Reply).count();
        let follow_ups = cases.iter().filter(|c| c.kind == Kind::FollowUp).count();
        println!(
            "\n### Dialog store, {} turns in {} conversations of 2 of {} people\n",
            memories.len(),
            PEOPLE.len() * (PEOPLE.len() - 1) / 2,
            PEOPLE.len()
        );
        println!(
            "{} questions: {replies} answered by the reply to a turn, {} naming the person \
             who said it, {follow_ups} follow-ups (\"and what about X?\" after a reply \
             question).\n",
            cases.len(),
            cases.len() - replies - follow_ups
        );
        println!("| system | reply R@10 | reply R@30 | person R@10 | person R@30 | follow-up R@10 | follow-up R@30 | all R@10 | all R@30 | µs/query |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let mut rows: Vec<(String, Evolve)> = lineup(tokenizer);
        if n == 0 {
            rows.extend(real_model_rows(&memories, &cases));
        }
        for (label, mut system) in rows {
            system.prepare(&memories);
            let mut reply = Tally::default();
            let mut person = Tally::default();
            let mut all = Tally::default();
            let mut follow = Tally::default();
            let mut times = Vec::with_capacity(cases.len());
            for case in &cases {
                let t = std::time::Instant::now();
                let mut chosen = system.recall(&case.question, &memories);
                times.push(t.elapsed());
                chosen.truncate(MAX_CHOSEN);
                let rank = chosen.iter().position(|&i| i == case.evidence);
                match case.kind {
                    Kind::Reply => reply.add(rank),
                    Kind::Person => person.add(rank),
                    Kind::FollowUp => follow.add(rank),
                }
                all.add(rank);
            }
            times.sort_unstable();
            let median = times.get(times.len() / 2).map_or(0, |d| d.as_micros());
            println!(
                "| {label} | {} | {} | {} | {} | {} | {} | {} | {} | {median} |",
                reply.share(reply.at_10),
                reply.share(reply.at_30),
                person.share(person.at_10),
                person.share(person.at_30),
                follow.share(follow.at_10),
                follow.share(follow.at_30),
                all.share(all.at_10),
                all.share(all.at_30),
            );
        }
    }
}
