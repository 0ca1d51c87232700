//! Memories: the write-through cache and the writes that apply core's decisions.
//!
//! The cache holds the live memories (not soft-deleted) in id order with their
//! keywords, so selection never touches the file or re-tokenizes. Every change is
//! committed first and mirrored into the cache after, under `memory_writer`. Which
//! memory is a duplicate, what a merge keeps and which CRITICAL memories fall out of
//! the cap, and how, are `evolve_core::memory`'s rules ([`decide_ingest`], [`merge`],
//! [`critical_overflow`], [`retire`]); this file only makes them durable in one
//! transaction each.

use evolve_core::memory::{
    apply_decay, content_hash, critical_overflow, decide_ingest, merge, retire, IngestDecision,
    Memory, MemoryConfig, MemoryId, MemoryIndex, Priority, Retired,
};
use evolve_core::text::Tokenizer;
use evolve_core::Timestamp;
use redb::{Database, ReadableDatabase, ReadableTable, Table};

use super::error::Fail;
use super::schema::*;
use super::{Ingested, Store, StoreError};

/// The message for an unknown memory id.
pub(super) fn no_memory(id: MemoryId) -> String {
    format!("no memory #{id} — `evolve memory list --all` shows the ids")
}

impl Store {
    /// Runs `f` on the cached live memories (not deleted), in id order.
    ///
    /// A released store is opened again first, so memories another process added
    /// meanwhile are seen (if that fails, the last known memories are used).
    pub fn with_memories<R>(&self, f: impl FnOnce(&[Memory]) -> R) -> R {
        self.with_indexed_memories(|all, _| f(all))
    }

    /// As [`Store::with_memories`], with the inverted index of those memories (for
    /// [`evolve_core::memory::select_query`]).
    pub fn with_indexed_memories<R>(&self, f: impl FnOnce(&[Memory], &MemoryIndex) -> R) -> R {
        if let Err(e) = self.handle() {
            log::warn!("{e}; using the memories read before");
        }
        let cache = self.cache();
        f(&cache, cache.index())
    }

    /// One memory by id (deleted ones too).
    pub fn memory(&self, id: MemoryId) -> Result<Memory, StoreError> {
        self.read(|txn| {
            let table = txn.open_table(MEMORIES)?;
            get_json(&table, "memories", id)?.ok_or_else(|| Fail::NotFound(no_memory(id)))
        })
    }

    /// Every memory in the file, soft-deleted ones included, in id order (for listings
    /// with `--all` and exports; the agent reads [`Store::with_memories`]).
    pub fn all_memories(&self) -> Result<Vec<Memory>, StoreError> {
        self.read(|txn| read_all_memories(&txn.open_table(MEMORIES)?))
    }

    /// Adds a memory through core's ingest rule (exact duplicate → nothing; similar →
    /// merge; else insert), then applies age decay and the CRITICAL cap, in that order,
    /// to the CRITICAL memories. One transaction.
    ///
    /// The incoming memory is live (its `deleted` flag is ignored) and its keywords are
    /// computed with `tokenizer` when empty. An exact duplicate still lends its stored
    /// copy a higher priority or importance, new tags or a pin (see [`reinforce`]); it
    /// is reported as `Duplicate`.
    pub fn ingest_memory(
        &self,
        mut memory: Memory,
        cfg: &MemoryConfig,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Ingested, StoreError> {
        prepare(&mut memory, Some(tokenizer));
        memory.deleted = false;
        // A released or lent file is opened first (before the writer lock, which its
        // reload of the cache may take): the decision below sees the memories another
        // process added meanwhile.
        drop(self.handle()?);
        let _writer = self.lock_writer();
        let (outcome, mut record) = {
            let cache = self.cache();
            match decide_ingest(&memory, &cache, now, cfg, tokenizer) {
                IngestDecision::Duplicate { index, id } => {
                    let stored = &cache[index];
                    let reinforced = reinforce(stored, &memory, tokenizer);
                    if reinforced == *stored {
                        return Ok(Ingested::Duplicate(id));
                    }
                    (Ingested::Duplicate(id), reinforced)
                }
                IngestDecision::Merge { index, id, .. } => (
                    Ingested::Merged(id),
                    merge(&cache[index], &memory, tokenizer),
                ),
                IngestDecision::Insert => (Ingested::Inserted(0), memory),
            }
        };
        let changed = self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            if record.id == 0 {
                record.id = allocate_id(&mut txn.open_table(META)?, &table)?;
            }
            let others = {
                let cache = self.cache();
                critical_after(&cache, &mut record, now, cfg)
            };
            let mut changed = Vec::with_capacity(1 + others.len());
            put_json(&mut table, "memories", record.id, &record)?;
            changed.push(record.clone());
            for after in others {
                let id = after.id;
                let mut m: Memory = get_json(&table, "memories", id)?
                    .ok_or_else(|| Fail::NotFound(no_memory(id)))?;
                m.priority = after.priority;
                m.promoted = after.promoted;
                m.deleted = after.deleted;
                put_json(&mut table, "memories", id, &m)?;
                changed.push(m);
            }
            Ok(changed)
        })?;
        self.apply_to_cache(changed);
        Ok(match outcome {
            Ingested::Inserted(_) => Ingested::Inserted(record.id),
            other => other,
        })
    }

    /// Adds a memory learned in `session`, linked to the newest memory learned in it
    /// before ([`Memory::prev`]), through the ingest rule like [`Store::ingest_memory`]
    /// (a dialog turn, with a speaker, through [`Store::insert_turn`]); the memory stored
    /// or merged into becomes the session's newest. Two transactions: a crash between
    /// them only leaves the next memory linked to the one before.
    pub fn ingest_turn(
        &self,
        mut memory: Memory,
        session: &str,
        cfg: &MemoryConfig,
        now: Timestamp,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Ingested, StoreError> {
        let tail = self.read(|txn| {
            Ok(txn
                .open_table(CONVERSATION_TAILS)?
                .get(session)?
                .map(|v| v.value()))
        })?;
        memory.prev = tail.or(memory.prev);
        let outcome = if memory.speaker.is_some() {
            self.insert_turn(memory, tokenizer)?
        } else {
            self.ingest_memory(memory, cfg, now, tokenizer)?
        };
        let (Ingested::Inserted(id) | Ingested::Merged(id) | Ingested::Duplicate(id)) = outcome;
        self.write(|txn| {
            txn.open_table(CONVERSATION_TAILS)?.insert(session, id)?;
            Ok(())
        })?;
        Ok(outcome)
    }

    /// Adds a dialog turn as given, its `prev` link included. A turn is a record of
    /// what was said, in order: it is never merged into another memory (a merge would
    /// mix speakers and break the chain); only an exact copy by the same speaker
    /// replying to the same memory is a `Duplicate` (so importing a dialog twice adds
    /// nothing).
    pub fn insert_turn(
        &self,
        mut memory: Memory,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Ingested, StoreError> {
        prepare(&mut memory, Some(tokenizer));
        memory.deleted = false;
        drop(self.handle()?);
        let _writer = self.lock_writer();
        let copy = self.cache().iter().find_map(|m| {
            (m.content_hash == memory.content_hash
                && m.speaker == memory.speaker
                && m.prev == memory.prev)
                .then_some(m.id)
        });
        if let Some(id) = copy {
            return Ok(Ingested::Duplicate(id));
        }
        let id = self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            memory.id = allocate_id(&mut txn.open_table(META)?, &table)?;
            put_json(&mut table, "memories", memory.id, &memory)?;
            Ok(memory.id)
        })?;
        self.apply_to_cache(vec![memory]);
        Ok(Ingested::Inserted(id))
    }

    /// Inserts a memory as given (no merge), assigning a new id. Returns the id.
    #[cfg(test)]
    pub fn insert_memory(&self, mut memory: Memory) -> Result<MemoryId, StoreError> {
        prepare(&mut memory, None);
        let _writer = self.lock_writer();
        let id = self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            memory.id = allocate_id(&mut txn.open_table(META)?, &table)?;
            put_json(&mut table, "memories", memory.id, &memory)?;
            Ok(memory.id)
        })?;
        self.apply_to_cache(vec![memory]);
        Ok(id)
    }

    /// Replaces a memory (same id). Setting `deleted` soft-deletes it (it leaves the
    /// cache, stays in the file).
    pub fn update_memory(&self, memory: &Memory) -> Result<(), StoreError> {
        let mut memory = memory.clone();
        prepare(&mut memory, None);
        let _writer = self.lock_writer();
        self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            if table.get(memory.id)?.is_none() {
                return Err(Fail::NotFound(no_memory(memory.id)));
            }
            put_json(&mut table, "memories", memory.id, &memory)
        })?;
        self.apply_to_cache(vec![memory]);
        Ok(())
    }

    /// Deletes a memory for good.
    pub fn remove_memory(&self, id: MemoryId) -> Result<(), StoreError> {
        let _writer = self.lock_writer();
        self.write(|txn| {
            let removed = txn.open_table(MEMORIES)?.remove(id)?.is_some();
            if removed {
                Ok(())
            } else {
                Err(Fail::NotFound(no_memory(id)))
            }
        })?;
        let mut cache = self.memories.write().unwrap_or_else(|e| e.into_inner());
        cache.forget(id);
        Ok(())
    }

    /// Writes the records of one maintenance step in one transaction. Each record comes
    /// with the stored copy it was computed from (`None` for a new memory, which gets
    /// the next id). A record whose stored copy changed meanwhile — a turn merged into
    /// it, the user edited or removed it — is not written, so nobody's change is lost;
    /// only a newer `last_accessed_at` does not count as a change (it is kept). Returns,
    /// in order, what happened to each record.
    pub fn save_memories(
        &self,
        records: Vec<(Memory, Option<Memory>)>,
    ) -> Result<Vec<Saved>, StoreError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let _writer = self.lock_writer();
        let saved = self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            let mut meta = txn.open_table(META)?;
            let mut saved = Vec::with_capacity(records.len());
            for (mut m, before) in records {
                prepare(&mut m, None);
                match before {
                    None => m.id = allocate_id(&mut meta, &table)?,
                    Some(before) => {
                        let stored = get_json::<_, Memory>(&table, "memories", m.id)?;
                        match stored {
                            Some(s) if same_but_access(&s, &before) => {
                                m.last_accessed_at = m.last_accessed_at.max(s.last_accessed_at);
                            }
                            other => {
                                saved.push(Saved::Changed(other));
                                continue;
                            }
                        }
                    }
                }
                put_json(&mut table, "memories", m.id, &m)?;
                saved.push(Saved::Written(m));
            }
            Ok(saved)
        })?;
        let changed: Vec<Memory> = saved
            .iter()
            .filter_map(|s| match s {
                Saved::Written(m) | Saved::Changed(Some(m)) => Some(m.clone()),
                Saved::Changed(None) => None,
            })
            .collect();
        self.apply_to_cache(changed);
        Ok(saved)
    }

    /// Sets `last_accessed_at = now` on all of `ids` in one transaction. Ids that no
    /// longer exist (removed since they were selected) are skipped.
    pub fn mark_accessed(&self, ids: &[MemoryId], now: Timestamp) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let _writer = self.lock_writer();
        let changed = self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            let mut changed = Vec::with_capacity(ids.len());
            for &id in ids {
                let Some(mut m) = get_json::<_, Memory>(&table, "memories", id)? else {
                    continue;
                };
                m.last_accessed_at = Some(now);
                put_json(&mut table, "memories", id, &m)?;
                changed.push(m);
            }
            Ok(changed)
        })?;
        self.apply_to_cache(changed);
        Ok(())
    }

    /// Fills the cache at open. A record that cannot be decoded is skipped with a
    /// warning naming it, so one damaged memory does not lock the user out of the rest.
    /// Memories stored without keywords (imported, migrated) get them now, written back
    /// in one transaction so the next open does not redo it.
    pub(super) fn load_memories(&self, tokenizer: &dyn Tokenizer) -> Result<(), StoreError> {
        let refreshed = {
            let guard = self.handle()?;
            let db = guard.as_ref().ok_or_else(|| super::closed(&self.path))?;
            self.fill_cache(db, tokenizer)?
        };
        self.write_refreshed(refreshed)
    }

    /// Replaces the cache with the live memories of `db` (the store's file, perhaps not
    /// yet the store's handle: a reopen fills the cache before any other use sees the
    /// file open). Returns the memories whose keywords were recomputed, to be written.
    pub(super) fn fill_cache(
        &self,
        db: &Database,
        tokenizer: &dyn Tokenizer,
    ) -> Result<Vec<Memory>, StoreError> {
        let mut live = Vec::new();
        let mut refreshed = Vec::new();
        let mut read = || -> Result<(), Fail> {
            let txn = db.begin_read()?;
            let table = txn.open_table(MEMORIES)?;
            for row in table.iter()? {
                let (key, value) = row?;
                let id = key.value();
                match decode::<Memory>("memories", &id, value.value()) {
                    Ok(mut m) => {
                        let has_text = !(m.content.is_empty() && m.tags.is_empty());
                        if has_text && refresh(&mut m, tokenizer) {
                            refreshed.push(m.clone());
                        }
                        if !m.deleted {
                            live.push(m);
                        }
                    }
                    Err(e) => log::warn!("{}; the memory is skipped", e.at(&self.path)),
                }
            }
            Ok(())
        };
        read().map_err(|e| e.at(&self.path))?;
        *self.memories.write().unwrap_or_else(|e| e.into_inner()) = Cache::new(live);
        Ok(refreshed)
    }

    /// Writes back memories whose keywords [`Store::fill_cache`] recomputed.
    pub(super) fn write_refreshed(&self, refreshed: Vec<Memory>) -> Result<(), StoreError> {
        if refreshed.is_empty() {
            return Ok(());
        }
        let _writer = self.lock_writer();
        self.write(|txn| {
            let mut table = txn.open_table(MEMORIES)?;
            for m in &refreshed {
                put_json(&mut table, "memories", m.id, m)?;
            }
            Ok(())
        })
    }

    /// Mirrors committed records into the cache: live ones replace or join, deleted
    /// ones leave. Call with `memory_writer` held, after the commit.
    pub(super) fn apply_to_cache(&self, changed: Vec<Memory>) {
        let mut cache = self.memories.write().unwrap_or_else(|e| e.into_inner());
        for m in changed {
            cache.apply(m);
        }
    }
}

/// The live memories in id order and their inverted index, changed together.
#[derive(Debug, Default)]
pub(super) struct Cache {
    list: Vec<Memory>,
    index: MemoryIndex,
}

impl Cache {
    fn new(list: Vec<Memory>) -> Self {
        let index = MemoryIndex::build(&list);
        Cache { list, index }
    }

    /// The index of the list.
    pub(super) fn index(&self) -> &MemoryIndex {
        &self.index
    }

    /// Takes a committed record: a live one replaces or joins, a deleted one leaves.
    fn apply(&mut self, m: Memory) {
        match (self.list.binary_search_by_key(&m.id, |c| c.id), m.deleted) {
            (Ok(i), false) => {
                self.index.replace(i, &self.list[i], &m);
                self.list[i] = m;
            }
            (Ok(i), true) => {
                let old = self.list.remove(i);
                self.index.remove(i, &old);
            }
            (Err(i), false) => {
                self.index.insert(i, &m);
                self.list.insert(i, m);
            }
            (Err(_), true) => {}
        }
    }

    /// Drops a memory removed from the file.
    fn forget(&mut self, id: MemoryId) {
        if let Ok(i) = self.list.binary_search_by_key(&id, |m| m.id) {
            let old = self.list.remove(i);
            self.index.remove(i, &old);
        }
    }
}

impl std::ops::Deref for Cache {
    type Target = [Memory];

    fn deref(&self) -> &[Memory] {
        &self.list
    }
}

/// What [`Store::save_memories`] did with one record.
#[derive(Debug, Clone, PartialEq)]
pub enum Saved {
    /// Written as given (a new memory with its id).
    Written(Memory),
    /// Not written: the stored copy changed meanwhile; here it is as stored now (`None`:
    /// removed).
    Changed(Option<Memory>),
}

/// Whether two copies of a memory differ at most in `last_accessed_at` (and the derived
/// keywords).
fn same_but_access(a: &Memory, b: &Memory) -> bool {
    let strip = |m: &Memory| Memory {
        last_accessed_at: None,
        keywords: Default::default(),
        keyword_count: 0,
        keywords_version: 0,
        subjects: Default::default(),
        ..m.clone()
    };
    strip(a) == strip(b)
}

/// Makes a record storable: the content hash always matches the content, importance
/// is within 1–5, a memory learned from world text is held to information (never
/// CRITICAL, never a rule: [`Memory::confine_world`], whichever path wrote it), and
/// (given a tokenizer) empty keywords are computed.
fn prepare(m: &mut Memory, tokenizer: Option<&dyn Tokenizer>) {
    if m.confine_world() {
        log::info!(
            "memory #{} learned from outside text is kept as information ({} {})",
            m.id,
            m.priority,
            m.category
        );
    }
    match tokenizer {
        Some(t) if m.keywords.is_empty() || m.keywords_stale() => m.refresh_derived(t),
        _ => {
            m.content_hash = content_hash(&m.content);
            m.clamp_importance();
        }
    }
}

/// What an exact duplicate adds to its stored copy: from core's [`merge`], the
/// priority, importance, tags and pin; the stored text (with its spelling), category,
/// dates and expiry stay, so re-adding the same sentence with other spacing changes
/// nothing and a repeated extraction does not rewrite the record. Across sources
/// [`merge`] keeps the non-world memory whole: a world copy lends the person's memory
/// nothing, and the person saying what a page said makes the memory theirs.
fn reinforce(stored: &Memory, incoming: &Memory, tokenizer: &dyn Tokenizer) -> Memory {
    let merged = merge(stored, incoming, tokenizer);
    if stored.is_world() && !incoming.is_world() {
        return Memory {
            created_at: stored.created_at,
            last_accessed_at: stored.last_accessed_at,
            ..merged
        };
    }
    let mut out = stored.clone();
    out.priority = merged.priority;
    out.promoted = merged.promoted;
    out.importance = merged.importance;
    out.pinned = merged.pinned;
    if out.tags != merged.tags {
        out.tags = merged.tags;
        out.refresh_derived(tokenizer);
    }
    out
}

/// What storing `record` changes among the CRITICAL memories, by core's rules in their
/// order: age decay first (a CRITICAL memory old enough to be HIGH is demoted, not
/// pushed out — an import may bring old ones), then the FIFO cap ([`retire`]). `record`
/// is changed in place; the other changed memories are returned (only the CRITICAL
/// ones of the cache are looked at, cloned, not the whole cache).
fn critical_after(
    cache: &[Memory],
    record: &mut Memory,
    now: Timestamp,
    cfg: &MemoryConfig,
) -> Vec<Memory> {
    let mut critical: Vec<Memory> = cache
        .iter()
        .filter(|m| m.priority == Priority::Critical && m.id != record.id)
        .cloned()
        .collect();
    // The record goes last (whatever its priority: the rules skip what they do not
    // concern).
    critical.push(record.clone());
    let mut changed: Vec<usize> = apply_decay(&mut critical, now, cfg)
        .into_iter()
        .map(|c| {
            log::info!(
                "memory #{} is {} now: older than its priority allows",
                c.id,
                c.to
            );
            c.index
        })
        .collect();
    for id in critical_overflow(&critical, now, cfg) {
        let Some(i) = critical.iter().position(|m| m.id == id) else {
            continue;
        };
        match retire(&mut critical[i], cfg) {
            Retired::Deleted => {
                log::info!("memory #{id} soft-deleted: over the cap of CRITICAL memories")
            }
            Retired::Demoted => log::info!(
                "memory #{id} is HIGH again: the model's promotion gave way to the user's \
                 own CRITICAL memories"
            ),
        }
        changed.push(i);
    }
    let last = critical.len() - 1;
    if let Some(r) = critical.pop() {
        *record = r;
    }
    changed.sort_unstable();
    changed.dedup();
    changed
        .into_iter()
        .filter(|&i| i != last)
        .map(|i| critical[i].clone())
        .collect()
}

/// The next memory id: `meta.next_memory_id`, or one past the highest stored id for a
/// file that has no counter yet. Advances the counter.
pub(super) fn allocate_id(
    meta: &mut Table<'_, &'static str, u64>,
    memories: &impl ReadableTable<u64, Json>,
) -> Result<MemoryId, Fail> {
    let id = next_id(meta, memories)?;
    meta.insert(NEXT_MEMORY_ID_KEY, id + 1)?;
    Ok(id)
}

/// The id [`allocate_id`] would give, without advancing.
pub(super) fn next_id(
    meta: &impl ReadableTable<&'static str, u64>,
    memories: &impl ReadableTable<u64, Json>,
) -> Result<MemoryId, Fail> {
    let counter = meta.get(NEXT_MEMORY_ID_KEY)?.map(|v| v.value());
    let past_last = memories.last()?.map_or(1, |(k, _)| k.value() + 1);
    Ok(counter.unwrap_or(1).max(past_last))
}

/// Every record of the table, deleted ones included.
pub(super) fn read_all_memories(
    table: &impl ReadableTable<u64, Json>,
) -> Result<Vec<Memory>, Fail> {
    let mut out = Vec::new();
    for row in table.iter()? {
        let (key, value) = row?;
        out.push(decode("memories", &key.value(), value.value())?);
    }
    Ok(out)
}

/// Computes the keywords of a memory stored without them (imported, migrated) or
/// with those of older rules; `true` when that changed the record (to write back). A
/// text with no keyword at all ("ok") stays without and is not written back at every
/// open.
pub(super) fn refresh(m: &mut Memory, tokenizer: &dyn Tokenizer) -> bool {
    if !(m.keywords.is_empty() || m.keywords_stale()) {
        return false;
    }
    let before = derived(m);
    m.refresh_derived(tokenizer);
    derived(m) != before
}

/// What [`Memory::refresh_derived`] computes, to tell whether it changed anything.
fn derived(m: &Memory) -> (Vec<u64>, Vec<u64>, u32, u32, u64, u8) {
    (
        m.keywords.as_slice().to_vec(),
        m.subjects.as_slice().to_vec(),
        m.keyword_count,
        m.keywords_version,
        m.content_hash,
        m.importance,
    )
}
