//! Equal strings share one value. A `str` is immutable, so a second string with the same
//! text may take the first one's id, as a memo `GET` would: nothing a consumer reads can
//! tell them apart. Snapshots repeat short texts millions of times as distinct objects
//! (each frame's function name, when the process built it anew): on a 537 MB snapshot of
//! 6.2M trace entries, 6.2M of its 30M values were such strings, 16 bytes of slot and their
//! text each, of which about 40 were distinct.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::NodeId;
use super::arena::Pickle;

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
