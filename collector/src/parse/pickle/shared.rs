//! Values shared: equal strings, and equal folded values ([`Parser::share_folded`]).
//!
//! Equal strings share one value. A `str` is immutable, so a second string with the same
//! text may take the first one's id, as a memo `GET` would: nothing a consumer reads can
//! tell them apart. Snapshots repeat short texts millions of times as distinct objects
//! (each frame's function name, when the process built it anew): on a 537 MB snapshot of
//! 6.2M trace entries, 6.2M of its 30M values were such strings, 16 bytes of slot and their
//! text each, of which about 40 were distinct.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::io::Read;

use super::arena::Pickle;
use super::reader::Parser;
use super::{Fold, NodeId};

/// Strings longer than this are never shared: they are rarely repeated, and each one looked
/// up costs a hash of its text.
pub(super) const MAX_SHARED_STR_BYTES: usize = 256;

/// Distinct texts remembered; later ones are not shared. The cost: about 24 bytes of table
/// each, 24 MiB at most, where a pickle of that many distinct short strings holds at least
/// 16 bytes of slot and a few of text for each anyway.
pub(super) const MAX_SHARED_STRS: usize = 1 << 20;

/// The first string seen with each text hash. Keyed by a randomly seeded hash (foldhash), so
/// a file cannot choose texts that collide; two texts that do collide are simply not
/// shared (the id is used only after its text compares equal).
#[derive(Default)]
pub(super) struct SharedStrs {
    by_hash: HashMap<u64, NodeId, foldhash::fast::RandomState>,
    text_hasher: foldhash::fast::RandomState,
}

/// What [`SharedStrs::find`] found.
pub(super) enum Lookup {
    /// A string with this text exists: its id.
    Found(NodeId),
    /// None yet: the text's hash, to [`SharedStrs::remember`] the string once it is made.
    New(u64),
    /// The text is not shared (too long, or the table is full).
    Unshared,
}

impl SharedStrs {
    pub(super) fn find(&self, p: &Pickle, text: &str) -> Lookup {
        if text.len() > MAX_SHARED_STR_BYTES {
            return Lookup::Unshared;
        }
        let hash = self.text_hasher.hash_one(text);
        match self.by_hash.get(&hash) {
            Some(&id) if p.as_str(id) == Some(text) => Lookup::Found(id),
            Some(_) => Lookup::Unshared,
            None if self.by_hash.len() >= MAX_SHARED_STRS => Lookup::Unshared,
            None => Lookup::New(hash),
        }
    }

    /// `id` is the string whose text hashed to `hash`. A table the allocator refuses to grow
    /// stays as it is (the string is then not shared).
    pub(super) fn remember(&mut self, hash: u64, id: NodeId) {
        if self.by_hash.try_reserve(1).is_ok() {
            self.by_hash.insert(hash, id);
        }
    }
}

/// Memo records kept ([`MemoRecords`]): Python's pickler memoizes a container as it opens
/// it, so the records needed are those of the containers open at once (a snapshot: under
/// 10). The cost: 16 bytes each, 1 KiB.
const MAX_MEMO_RECORDS: usize = 64;

/// Where the newest values were memoized, so that a folded value the folder shares
/// ([`Fold::shares`]) can give its slot back: the memo keys of values put while each was
/// the newest value (ascending ids; `None`: put twice), and the newest value put while a
/// newer one existed. Every memo key that holds a value newer than `late` is in `records`,
/// unless its record was dropped for room (`evicted_upto`).
#[derive(Default)]
pub(super) struct MemoRecords {
    records: Vec<(u32, Option<u64>)>,
    evicted_upto: u32,
    late: u32,
}

impl MemoRecords {
    /// `value` was memoized under `key`; `newest` when no newer value exists.
    pub(super) fn note(&mut self, value: NodeId, key: u64, newest: bool) {
        if !newest {
            self.late = self.late.max(value.0);
            return;
        }
        match self.records.last_mut() {
            Some((id, put)) if *id == value.0 => *put = None,
            _ => {
                if self.records.len() >= MAX_MEMO_RECORDS {
                    let half = MAX_MEMO_RECORDS / 2;
                    let dropped = self.records.get(half - 1).map_or(0, |r| r.0);
                    self.evicted_upto = self.evicted_upto.max(dropped);
                    self.records.drain(..half);
                }
                self.records.push((value.0, Some(key)));
            }
        }
    }

    /// The newest value any memo key may hold.
    pub(super) fn newest(&self) -> u32 {
        let recorded = self.records.last().map_or(0, |r| r.0);
        self.late.max(recorded).max(self.evicted_upto)
    }

    /// The values from `len` on are gone: so are their records.
    pub(super) fn forget_from(&mut self, len: usize) {
        while self.records.last().is_some_and(|r| r.0 as usize >= len) {
            self.records.pop();
        }
    }

    /// The memo keys that may hold `newest` (the newest value): `Some(None)` for none,
    /// `Some(Some(key))` for one, `None` when it cannot be told.
    fn keys_of(&self, newest: NodeId) -> Option<Option<u64>> {
        if self.late >= newest.0 || self.evicted_upto >= newest.0 {
            return None;
        }
        match self.records.last() {
            Some(&(id, put)) if id == newest.0 => put.map(Some),
            _ => Some(None),
        }
    }
}

impl<R: Read, F: Fold> Parser<R, F> {
    /// The slot that stands for the folded value `key` names (a dict's or a list's fold
    /// index, that the folder shares): the first one made. `target`, just folded and on the
    /// stack at `at`, becomes that slot when it can give its own back: when it is the newest
    /// value and nothing but the stack and one memo key refers to it. Those then refer to
    /// the first slot, and `target`'s id is made again.
    pub(super) fn share_folded(&mut self, target: NodeId, at: usize, key: u64) {
        let Some(&first) = self.canonical.get(&key) else {
            if self.canonical.try_reserve(1).is_ok() {
                self.canonical.insert(key, target);
            }
            return;
        };
        if target.index() + 1 != self.p.nodes.len() || self.stack.get(at) != Some(&target) {
            return;
        }
        let referenced = self.newest_repushed_ever >= target.0 || self.newest_contained >= target.0;
        let Some(memo_key) = self.memo_records.keys_of(target).filter(|_| !referenced) else {
            return;
        };
        if let Some(memo_key) = memo_key {
            let dense = usize::try_from(memo_key)
                .ok()
                .filter(|&k| k < self.memo.len());
            let slot = match dense {
                Some(k) => self.memo.get_mut(k),
                None => self.sparse_memo.get_mut(&memo_key),
            };
            // A key since set to another value no longer refers to `target`.
            if let Some(slot) = slot.filter(|slot| **slot == target) {
                *slot = first;
            }
        }
        if let Some(slot) = self.stack.get_mut(at) {
            *slot = first;
        }
        self.drop_from(target.index());
    }

    /// Drops the values from `len` on, which nothing refers to.
    pub(super) fn drop_from(&mut self, len: usize) {
        self.p.nodes.truncate(len);
        self.memo_records.forget_from(len);
        self.folder.forget_from(len);
    }
}
