//! `evolve…`: the product's selection as it ships after the ranking change —
//! `evolve_core::memory::select_query` through the inverted index, the query the agent
//! makes (the question, and the previous user turn at `context_weight`), BM25 relevance
//! inside the seeds' score — and the variants that take one piece away at a time, to
//! measure what each adds: stemming, the stop list, the previous turn, BM25 itself (F1),
//! and the embeddings fused in (reciprocal rank or weighted; a follow-up's vector leans
//! towards the previous turn's, as the product's does).
//!
//! A variant with other word rules keys its own copy of the store with them, as the
//! product would have stored it. `today` is the selection before the change: the seed's
//! word rules, token-overlap F1, no previous turn.

use evolve_core::memory::{
    follow_up_vector, select_query, Fusion, Memory, MemoryConfig, MemoryIndex, QueryVector,
    Ranking, RecallQuery,
};
use evolve_core::text::{keyword_hash, KeywordSet, RuledTokenizer, Rules, Tokenizer};

use super::System;
use crate::data::Question;
use crate::text::ShellTokenizer;

/// The deterministic stand-in for an embedding model: the hashed keywords of the text
/// plus, weighted higher, the topics it mentions from a small table of words that mean
/// alike ("violin" and "instrument", "搬" and "住"). It knows synonyms as a real model
/// does, only far fewer; its figures show what fusion does, not what a given model
/// reaches.
pub struct Embedder {
    tokenizer: ShellTokenizer,
}

/// Hashed keyword dimensions (the topic dimensions follow).
const HASHED: usize = 384;

/// Words (stems, or Chinese words) that mean alike, one topic a line.
const TOPICS: &[&[&str]] = &[
    &[
        "live", "citi", "move", "home", "apart", "hous", "住", "城市", "搬", "生活", "家",
    ],
    &[
        "job", "work", "career", "employ", "offic", "hire", "工作", "上班", "职业", "公司", "银行",
    ],
    &[
        "paint", "art", "draw", "canva", "sketch", "画", "画画", "油画",
    ],
    &[
        "pet", "dog", "cat", "puppi", "kitten", "adopt", "anim", "宠物", "狗", "猫", "小狗", "养",
    ],
    &["sibl", "brother", "sister", "哥哥", "姐姐", "弟弟", "妹妹"],
    &[
        "food", "cook", "dish", "meal", "recip", "bake", "dinner", "菜", "做饭", "下厨", "吃",
    ],
    &[
        "instrument",
        "music",
        "guitar",
        "piano",
        "violin",
        "cello",
        "practis",
        "lesson",
        "乐器",
        "钢琴",
        "吉他",
        "小提琴",
        "练",
    ],
    &[
        "sport",
        "fit",
        "club",
        "run",
        "swim",
        "tenni",
        "gym",
        "shape",
        "marathon",
        "yoga",
        "运动",
        "健身",
        "跑步",
        "游泳",
        "俱乐部",
    ],
    &[
        "travel", "trip", "vacat", "holiday", "visit", "countri", "abroad", "旅行", "旅游", "度假",
        "国家",
    ],
    &[
        "allerg",
        "reaction",
        "shellfish",
        "peanut",
        "gluten",
        "过敏",
        "花生",
    ],
    &[
        "birthday", "born", "old", "age", "turn", "生日", "出生", "岁",
    ],
    &[
        "partner",
        "engag",
        "marri",
        "boyfriend",
        "girlfriend",
        "husband",
        "wife",
        "wed",
        "另一半",
        "男朋友",
        "女朋友",
        "丈夫",
        "妻子",
        "结婚",
        "订婚",
    ],
    &[
        "studi", "cours", "class", "subject", "learn", "school", "degre", "lectur", "课", "学",
        "课程", "学习",
    ],
];

impl Embedder {
    pub fn new(tokenizer: ShellTokenizer) -> Self {
        Embedder { tokenizer }
    }

    /// The unit vector of `text`.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; HASHED + TOPICS.len()];
        self.tokenizer.for_each_keyword(text, &mut |k| {
            v[(keyword_hash(k) % HASHED as u64) as usize] += 1.0;
            for (t, words) in TOPICS.iter().enumerate() {
                if words.iter().any(|w| k.starts_with(w)) {
                    v[HASHED + t] += 3.0;
                }
            }
        });
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

/// The model name the bench's embeddings are stored under.
const MODEL: &str = "bench-embedder";

/// Embeddings computed elsewhere (a real model's, through `/v1/embeddings`): one per
/// memory of the store, in order, and one per question text.
pub struct Given {
    pub memories: Vec<Vec<f32>>,
    pub questions: std::collections::HashMap<String, Vec<f32>>,
}

pub struct Evolve {
    name: String,
    tokenizer: ShellTokenizer,
    /// Key with the core's fallback tokenizer (character bigrams for Chinese) instead of
    /// jieba, to measure what jieba adds.
    bigrams: bool,
    rules: Rules,
    config: MemoryConfig,
    embedder: Option<Embedder>,
    given: Option<std::rc::Rc<Given>>,
    memories: Vec<Memory>,
    index: MemoryIndex,
    /// Whether a follow-up's vector leans towards the previous turn (as the product
    /// does); off, only the words take the previous turn.
    vector_context: bool,
}

impl Evolve {
    /// The product as configured by default.
    pub fn new(tokenizer: ShellTokenizer) -> Self {
        Evolve {
            name: "evolve".into(),
            tokenizer,
            bigrams: false,
            rules: Rules::CURRENT,
            config: MemoryConfig::default(),
            embedder: None,
            given: None,
            memories: Vec::new(),
            index: MemoryIndex::default(),
            vector_context: true,
        }
    }

    /// The selection before the ranking change.
    pub fn today(tokenizer: ShellTokenizer) -> Self {
        Evolve::new(tokenizer)
            .named("today")
            .rules(Rules::SEED)
            .configured(|c| {
                c.ranking = Ranking::F1;
                c.context_weight = 0.0;
                c.relevance_exponent = 1.0;
                c.min_relevance = 0.0;
            })
    }

    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self.tokenizer = self.tokenizer.with_rules(rules);
        self
    }

    pub fn configured(mut self, f: impl FnOnce(&mut MemoryConfig)) -> Self {
        f(&mut self.config);
        self
    }

    pub fn bigrams(mut self) -> Self {
        self.bigrams = true;
        self
    }

    /// The tokenizer memories and questions are keyed with.
    fn keyer(&self) -> Box<dyn Tokenizer> {
        if self.bigrams {
            Box::new(RuledTokenizer(self.rules))
        } else {
            Box::new(self.tokenizer.clone())
        }
    }

    /// Embeddings from `given` instead of the stand-in model.
    pub fn given(mut self, given: std::rc::Rc<Given>, fusion: Fusion) -> Self {
        self.given = Some(given);
        self.config.fusion = fusion;
        self
    }

    /// The question's vector alone, the previous turn in the words only (the product
    /// before a follow-up's vector took it).
    pub fn question_vector_alone(mut self) -> Self {
        self.vector_context = false;
        self
    }

    pub fn embedded(mut self, fusion: Fusion) -> Self {
        self.embedder = Some(Embedder::new(
            self.tokenizer.clone().with_rules(Rules::CURRENT),
        ));
        self.config.fusion = fusion;
        self
    }
}

impl System for Evolve {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn prepare(&mut self, memories: &[Memory]) {
        let mut own = memories.to_vec();
        if self.rules != Rules::CURRENT || self.bigrams {
            let keyer = self.keyer();
            for m in &mut own {
                m.refresh_derived(&*keyer);
            }
        }
        self.memories = own;
        if let Some(e) = &self.embedder {
            for m in &mut self.memories {
                m.embedding = Some(e.embed(&m.content));
                m.embedding_model = Some(MODEL.into());
            }
        }
        if let Some(g) = &self.given {
            for (m, v) in self.memories.iter_mut().zip(&g.memories) {
                m.embedding = Some(v.clone());
                m.embedding_model = Some(MODEL.into());
            }
        }
        self.index = MemoryIndex::build(&self.memories);
    }

    fn recall(&self, question: &Question, _memories: &[Memory]) -> Vec<usize> {
        let keyer = self.keyer();
        let mut q = RecallQuery::new(&KeywordSet::of(&*keyer, &question.text));
        if let Some(p) = &question.previous {
            q = q.with_context(&KeywordSet::of(&*keyer, p), self.config.context_weight);
        }
        let embed = |text: &str| match &self.given {
            Some(g) => g.questions.get(text).cloned(),
            None => self.embedder.as_ref().map(|e| e.embed(text)),
        };
        let mut embedded = embed(&question.text);
        if let (Some(q), Some(p), true) = (&embedded, &question.previous, self.vector_context) {
            if let Some(p) = embed(p) {
                embedded = Some(follow_up_vector(q, &p, self.config.context_weight));
            }
        }
        let vector = embedded.as_deref().map(|e| QueryVector {
            model: MODEL,
            embedding: e,
        });
        select_query(
            &self.memories,
            Some(&self.index),
            &q,
            vector,
            question.now,
            &self.config,
        )
        .chosen
        .iter()
        .map(|c| c.index)
        .collect()
    }
}
