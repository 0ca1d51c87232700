//! The memory record and its small types.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::number_or_name::{self, NumberOrName};
use crate::provenance::Source;

use crate::text::{keyword_hash, Fnv1a, KeywordSet, Tokenizer};
use crate::Timestamp;

/// Identifier of a memory, assigned by the store.
pub type MemoryId = u64;

/// How binding a memory is. Lower number = more important (tea-agent: 0=CRITICAL …
/// 3=LOW). Serialised as the number; names are also accepted on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Must be followed; always injected first (≤ 10), capped at 15 (FIFO).
    Critical = 0,
    /// Strong preferences and reminders.
    High = 1,
    /// Facts and decisions.
    Medium = 2,
    /// Anything else worth keeping.
    Low = 3,
}

impl Priority {
    /// All priorities, most important first.
    pub const ALL: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Medium,
        Priority::Low,
    ];

    /// The number 0–3.
    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// From 0–3; `None` otherwise.
    pub fn from_u8(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// Lower-case English name.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Critical => "critical",
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }

    /// From a name (any case) or a digit 0–3.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u8>() {
            return Self::from_u8(n);
        }
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }

    /// The next less important level (Low stays Low).
    pub fn lower(self) -> Self {
        Self::from_u8(self.as_u8() + 1).unwrap_or(Priority::Low)
    }

    /// The next more important level (Critical stays Critical).
    pub fn raise(self) -> Self {
        Self::from_u8(self.as_u8().saturating_sub(1)).unwrap_or(Priority::Critical)
    }

    /// The selection factor `(4 − priority) / 4` (tea-agent).
    pub fn factor(self) -> f32 {
        f32::from(4 - self.as_u8()) / 4.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Priority {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.as_u8())
    }
}

impl NumberOrName for Priority {
    const EXPECTING: &'static str = "a priority 0-3 or one of critical/high/medium/low";
    fn from_number(n: u8) -> Option<Self> {
        Priority::from_u8(n)
    }
    fn from_name(name: &str) -> Option<Self> {
        Priority::parse(name)
    }
}

impl<'de> Deserialize<'de> for Priority {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        number_or_name::deserialize(d)
    }
}

/// What kind of thing a memory is; extraction maps it to a priority.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// A rule the user asked to remember ("always answer in English").
    Instruction,
    /// A habit or taste of the user.
    Preference,
    /// Something time-bound, usually with `expires_at`.
    Reminder,
    /// A technical fact or decision.
    Fact,
    /// Anything else.
    #[default]
    General,
}

impl Category {
    /// All categories.
    pub const ALL: [Category; 5] = [
        Category::Instruction,
        Category::Preference,
        Category::Reminder,
        Category::Fact,
        Category::General,
    ];

    /// The priority extraction gives this category (tea-agent): instruction → 0,
    /// preference → 1, reminder → 1, fact → 2, general → 3.
    pub fn default_priority(self) -> Priority {
        match self {
            Category::Instruction => Priority::Critical,
            Category::Preference | Category::Reminder => Priority::High,
            Category::Fact => Priority::Medium,
            Category::General => Priority::Low,
        }
    }

    /// Whether the category tells the agent what to do (instruction, preference,
    /// reminder) rather than what is so: only the person's words may be stored as one.
    pub fn is_rule(self) -> bool {
        matches!(
            self,
            Category::Instruction | Category::Preference | Category::Reminder
        )
    }

    /// Lower-case English name.
    pub fn name(self) -> &'static str {
        match self {
            Category::Instruction => "instruction",
            Category::Preference => "preference",
            Category::Reminder => "reminder",
            Category::Fact => "fact",
            Category::General => "general",
        }
    }

    /// From a name, any case.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Lowest and highest importance (tea-agent: 1 = trivial … 5 = ignoring it causes
/// serious problems).
pub const IMPORTANCE_MIN: u8 = 1;
/// See [`IMPORTANCE_MIN`].
pub const IMPORTANCE_MAX: u8 = 5;

fn default_importance() -> u8 {
    3
}

/// One long-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Store-assigned id.
    #[serde(default)]
    pub id: MemoryId,
    /// The remembered text (a short summary, not a transcript).
    pub content: String,
    /// 0 = critical … 3 = low.
    #[serde(default = "default_priority")]
    pub priority: Priority,
    /// 1–5; clamp with [`Memory::clamp_importance`].
    #[serde(default = "default_importance")]
    pub importance: u8,
    /// What kind of memory it is.
    #[serde(default)]
    pub category: Category,
    /// Free tags, matched like keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Fingerprint of the normalised content ([`content_hash`]), for exact dedup.
    #[serde(default)]
    pub content_hash: u64,
    /// Optional embedding from `/v1/embeddings`, for semantic dedup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    /// After this moment the memory is no longer selected.
    #[serde(default)]
    pub expires_at: Option<Timestamp>,
    /// Pinned memories are exempt from age decay.
    #[serde(default)]
    pub pinned: bool,
    /// The model's priority review raised it to its current priority: the user never
    /// stated it at that level. The CRITICAL cap takes promotions back before it touches
    /// the user's own rules ([`super::stated_by_user`]); any demotion, and a priority
    /// the user sets, clears it. Absent in records written before it existed: `false`.
    #[serde(default)]
    pub promoted: bool,
    /// When it was created (or last promoted: promotion restarts the decay clock).
    #[serde(default)]
    pub created_at: Timestamp,
    /// When it was last selected into a prompt.
    #[serde(default)]
    pub last_accessed_at: Option<Timestamp>,
    /// Soft-deleted (CRITICAL FIFO, merges): kept for audit, never selected.
    #[serde(default)]
    pub deleted: bool,
    /// Keywords of content and tags, precomputed so selection never re-tokenizes.
    #[serde(default)]
    pub keywords: KeywordSet,
    /// How many keywords content and tags gave, repeats counted: the memory's length
    /// for ranking ([`super::rank`]). 0 in records from before it was kept: the number
    /// of distinct keywords stands in.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keyword_count: u32,
    /// The rules the keywords were computed with ([`KEYWORDS_VERSION`]); a record of an
    /// older version gets them again when the store loads it.
    #[serde(default)]
    pub keywords_version: u32,
    /// The embedding model `embedding` came from; an embedding of another model is
    /// never compared with this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// Where the text was learned from: the person (their own words), the store (the
    /// agent's reflections on them) or the world (a page, a file, a tool's output). A
    /// world memory is information, never a rule: [`Memory::confine_world`] holds it at
    /// most [`WORLD_MAX_PRIORITY`], of a category that states no rule, importance at
    /// most [`WORLD_MAX_IMPORTANCE`], and selecting it puts world text in the turn.
    /// Written only when not `person`: records written before sources existed read as
    /// the person's (everything stored then was taken as the person's anyway).
    #[serde(default, skip_serializing_if = "is_person")]
    pub source: Source,
    /// Who said it, when the memory is a turn of a dialog ("Caroline"): a question
    /// naming them boosts it ([`super::rank::SUBJECT_BOOST`]). Absent in other memories
    /// and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    /// The memory just before this one in the same conversation, when it is a dialog
    /// turn: the turn it replies to passes it a share of its relevance
    /// ([`super::rank::REPLY_SHARE`]), since an answer often shares no word with the
    /// question while the turn it answers does. Set at ingest; absent in records
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<MemoryId>,
    /// Keywords of the speaker and of the people named in the content
    /// ([`super::dialog::subjects`]), precomputed with the keywords.
    #[serde(default, skip_serializing_if = "KeywordSet::is_empty")]
    pub subjects: KeywordSet,
}

fn is_person(s: &Source) -> bool {
    *s == Source::Person
}

/// The most binding priority a world memory may have: a fact's (MEDIUM). CRITICAL is
/// for the person's rules only.
pub const WORLD_MAX_PRIORITY: Priority = Priority::Medium;

/// The highest importance a world memory may have (the default, 3).
pub const WORLD_MAX_IMPORTANCE: u8 = 3;

/// The version of the keyword rules: 2 added English stemming, the longer stop list
/// and single digits; 3 added the subjects (speaker and people named). Bumped whenever a change to the tokenizers changes keywords of
/// stored text, so stored memories are keyed again.
pub const KEYWORDS_VERSION: u32 = 3;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_priority() -> Priority {
    Priority::Low
}

impl Memory {
    /// A new memory with the category's default priority, importance 3, keywords and
    /// hash computed.
    pub fn new(
        content: impl Into<String>,
        category: Category,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Self {
        let mut m = Memory {
            id: 0,
            content: content.into(),
            priority: category.default_priority(),
            importance: default_importance(),
            category,
            tags: Vec::new(),
            content_hash: 0,
            embedding: None,
            expires_at: None,
            pinned: false,
            promoted: false,
            created_at: now,
            last_accessed_at: None,
            deleted: false,
            keywords: KeywordSet::default(),
            keyword_count: 0,
            keywords_version: 0,
            embedding_model: None,
            source: Source::Person,
            speaker: None,
            prev: None,
            subjects: KeywordSet::default(),
        };
        m.refresh_derived(tokenizer);
        m
    }

    /// The same memory, learned from `source` and held to what that source may claim
    /// ([`Memory::confine_world`]).
    pub fn with_source(mut self, source: Source) -> Self {
        self.source = source;
        self.confine_world();
        self
    }

    /// True when the memory was learned from world text (a tool's result).
    pub fn is_world(&self) -> bool {
        self.source == Source::World
    }

    /// Holds a world memory to information: a rule category (instruction, preference,
    /// reminder) becomes `fact`, the priority is at most [`WORLD_MAX_PRIORITY`], the
    /// importance at most [`WORLD_MAX_IMPORTANCE`], and it is no promotion. Returns
    /// whether anything changed. Memories of the person and the store are left as they
    /// are. The store applies it on every write, so no path stores a world rule.
    pub fn confine_world(&mut self) -> bool {
        if !self.is_world() {
            return false;
        }
        let before = (self.category, self.priority, self.importance, self.promoted);
        if self.category.is_rule() {
            self.category = Category::Fact;
        }
        self.priority = self.priority.max(WORLD_MAX_PRIORITY);
        self.importance = self.importance.min(WORLD_MAX_IMPORTANCE);
        self.promoted = false;
        before != (self.category, self.priority, self.importance, self.promoted)
    }

    /// Recomputes the keywords (content + tags) and the content hash; call after any
    /// change to content or tags.
    pub fn refresh_derived(&mut self, tokenizer: &dyn Tokenizer) {
        let mut hashes = Vec::new();
        tokenizer.for_each_keyword(&self.content, &mut |k| hashes.push(keyword_hash(k)));
        for tag in &self.tags {
            tokenizer.for_each_keyword(tag, &mut |k| hashes.push(keyword_hash(k)));
        }
        // A speaker kept apart from the text is a keyword too ("what did Caroline
        // say…"); one the text starts with already is.
        if let Some(speaker) = &self.speaker {
            if super::dialog::leading_label(&self.content) != Some(speaker.trim()) {
                tokenizer.for_each_keyword(speaker, &mut |k| hashes.push(keyword_hash(k)));
            }
        }
        self.keyword_count = u32::try_from(hashes.len()).unwrap_or(u32::MAX);
        self.keywords = KeywordSet::from_hashes(hashes);
        self.subjects = super::dialog::subjects(self.speaker.as_deref(), &self.content, tokenizer);
        self.keywords_version = KEYWORDS_VERSION;
        self.content_hash = content_hash(&self.content);
        self.clamp_importance();
    }

    /// Forces importance into 1–5.
    pub fn clamp_importance(&mut self) {
        self.importance = self.importance.clamp(IMPORTANCE_MIN, IMPORTANCE_MAX);
    }

    /// The length ranking normalises by: [`Memory::keyword_count`], or the distinct
    /// keywords for a record that has no count.
    pub fn ranked_len(&self) -> u32 {
        if self.keyword_count > 0 {
            self.keyword_count
        } else {
            u32::try_from(self.keywords.len()).unwrap_or(u32::MAX)
        }
    }

    /// True when the keywords were computed with older rules than this build's.
    pub fn keywords_stale(&self) -> bool {
        self.keywords_version != KEYWORDS_VERSION
    }

    /// The embedding, when it is `model`'s.
    pub fn embedding_of(&self, model: &str) -> Option<&[f32]> {
        match (&self.embedding, &self.embedding_model) {
            (Some(e), Some(m)) if m == model && !e.is_empty() => Some(e),
            _ => None,
        }
    }

    /// True once `expires_at` has passed.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }

    /// True when the memory can be selected at `now` (not deleted, not expired).
    pub fn is_active(&self, now: Timestamp) -> bool {
        !self.deleted && !self.is_expired(now)
    }
}

/// Fingerprint of a memory's content: FNV-1a 64 of the text with white space folded
/// and ASCII lower-cased, so trivially different copies collide on purpose.
pub fn content_hash(content: &str) -> u64 {
    let mut h = Fnv1a::default();
    let mut pending_space = false;
    let mut started = false;
    for c in content.chars() {
        if c.is_whitespace() {
            pending_space = started;
            continue;
        }
        if pending_space {
            h.write(b" ");
            pending_space = false;
        }
        started = true;
        let mut buf = [0u8; 4];
        h.write(c.to_ascii_lowercase().encode_utf8(&mut buf).as_bytes());
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::FallbackTokenizer;

    #[test]
    fn priority_round_trips_as_number_and_accepts_names() {
        let p: Priority = serde_json::from_str("1").unwrap();
        assert_eq!(p, Priority::High);
        let p: Priority = serde_json::from_str("\"CRITICAL\"").unwrap();
        assert_eq!(p, Priority::Critical);
        assert!(serde_json::from_str::<Priority>("4").is_err());
        assert_eq!(serde_json::to_string(&Priority::Medium).unwrap(), "2");
        assert_eq!(Priority::Low.lower(), Priority::Low);
        assert_eq!(Priority::Critical.raise(), Priority::Critical);
        assert_eq!(Priority::Medium.factor(), 0.5);
    }

    #[test]
    fn categories_map_to_seed_priorities() {
        use Category::*;
        let table = [
            (Instruction, 0),
            (Preference, 1),
            (Reminder, 1),
            (Fact, 2),
            (General, 3),
        ];
        for (c, p) in table {
            assert_eq!(c.default_priority().as_u8(), p, "{c}");
        }
    }

    #[test]
    fn minimal_json_gets_defaults_and_new_computes_derived_fields() {
        let m: Memory = serde_json::from_str(r#"{"content":"likes green tea"}"#).unwrap();
        assert_eq!(
            (m.priority, m.importance, m.category),
            (Priority::Low, 3, Category::General)
        );
        let n = Memory::new(
            "Likes  green tea",
            Category::Preference,
            10,
            &FallbackTokenizer,
        );
        assert_eq!(n.priority, Priority::High);
        assert_eq!(n.keywords.len(), 3);
        assert_eq!(n.content_hash, content_hash("likes green   TEA"));
        assert_ne!(n.content_hash, content_hash("likes black tea"));
    }

    #[test]
    fn old_records_read_as_the_persons_and_the_source_round_trips() {
        let old: Memory = serde_json::from_str(r#"{"content":"likes green tea"}"#).unwrap();
        assert_eq!(old.source, Source::Person);
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("source"), "{json}");
        let world = old.clone().with_source(Source::World);
        let json = serde_json::to_string(&world).unwrap();
        assert!(json.contains(r#""source":"world""#), "{json}");
        let back: Memory = serde_json::from_str(&json).unwrap();
        assert_eq!(back.source, Source::World);
    }

    #[test]
    fn a_world_memory_is_held_to_information() {
        use Category::*;
        use Priority::*;
        // (category, priority, importance) → (category, priority, importance)
        let table = [
            ((Instruction, Critical, 5), (Fact, Medium, 3)),
            ((Preference, High, 4), (Fact, Medium, 3)),
            ((Reminder, High, 3), (Fact, Medium, 3)),
            ((Fact, Medium, 2), (Fact, Medium, 2)),
            ((General, Low, 1), (General, Low, 1)),
            ((General, Critical, 5), (General, Medium, 3)),
        ];
        for ((c, p, i), want) in table {
            let mut m = Memory::new("x", c, 0, &FallbackTokenizer);
            m.priority = p;
            m.importance = i;
            m.promoted = true;
            let mut person = m.clone();
            assert!(!person.confine_world(), "the person's memory is kept");
            assert_eq!((person.category, person.priority), (c, p));
            let w = m.with_source(Source::World);
            assert_eq!((w.category, w.priority, w.importance), want, "{c} {p} {i}");
            assert!(!w.promoted);
            let mut again = w.clone();
            assert!(!again.confine_world(), "idempotent");
        }
    }

    #[test]
    fn expiry_is_inclusive_of_its_moment() {
        let mut m = Memory::new("x", Category::Reminder, 0, &FallbackTokenizer);
        m.expires_at = Some(100);
        assert!(m.is_active(99));
        assert!(!m.is_active(100));
    }
}
