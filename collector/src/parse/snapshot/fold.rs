//! Trace entries read as the pickle is parsed: each entry dict is decoded into a 32-byte
//! [`Entry`] the moment `SETITEMS` fills it ([`pickle::Fold`]), so its pairs and numbers
//! never take room in the arena. Measured on a 515 MB, 4.7M-entry snapshot: the arena and
//! the caches around it touched about 150 bytes a trace entry, this about 60, and on the
//! shared VM touching fresh memory costs about 2 ms a MB (page faults were half the load).
//!
//! What needs the snapshot's other parts (the stack a frames list means, diagnostics, the
//! device an entry belongs to) waits for [`super::parse::gather`], which reads the entries
//! in the same order as before, so stack and string ids come out the same.

use rustc_hash::FxHashMap;

use super::entry::{Action, Entry, Key};
use super::frames::{FRAME_TAG, FoldedStacks};
use crate::parse::pickle::{self, FoldValue, NodeId, Pickle};

/// Per-node cache entries of the keys (see [`key_of`]): 0 until computed, then
/// `CACHED | key | action << 4` (what a `str` node means as a key and as an action).
pub(super) const CACHED: u32 = 1 << 31;

/// What an entry dict says, before its stack and device are known.
pub(super) struct Decoded {
    /// `stack` holds the frames list's node index + 1 (0 for none) until
    /// [`super::parse::Reader::finish`] interns it.
    pub(super) entry: Entry,
    pub(super) extra: Extra,
    /// The dict has an `action` key: a trace entry (only those are folded).
    pub(super) is_entry: bool,
}

/// The rarer parts of an entry, kept beside it only when present.
#[derive(Clone, Copy, Default)]
pub(super) struct Extra {
    /// An `oom` entry's `device_free`.
    pub(super) device_free: Option<u64>,
    /// A non-empty `user_metadata` string.
    pub(super) metadata: Option<NodeId>,
    /// Its size is no unsigned int: the entry is skipped (and counted).
    pub(super) bad_size: bool,
    /// Its CUDA stream, where it is not the default one (0).
    pub(super) stream: u64,
}

impl Extra {
    fn present(&self, action: Action) -> bool {
        action == Action::Oom || self.metadata.is_some() || self.bad_size || self.stream != 0
    }
}

/// The trace entries, frames and stacks taken over while the pickle is parsed.
#[derive(Default)]
pub(super) struct EntryFolder {
    /// Per node, what a string means as a key (see [`CACHED`]); grown as ids are looked up.
    pub(super) cache: Vec<u32>,
    /// The frame dicts and the lists of them.
    pub(super) stacks: FoldedStacks,
    /// Every folded entry, by fold index.
    pub(super) entries: Vec<Entry>,
    /// The [`Extra`]s of the entries that have any, by fold index.
    pub(super) extras: FxHashMap<u32, Extra>,
}

impl pickle::Fold for EntryFolder {
    fn fold(&mut self, p: &Pickle, pairs: &[(NodeId, FoldValue)]) -> Option<u32> {
        // torch writes `action` first in a trace entry and `name` first in a frame (a dict
        // with them elsewhere is read from the arena).
        let &(first, _) = pairs.first()?;
        match key_of(&mut self.cache, p, first).0 {
            Key::Action => {}
            Key::Name => return self.stacks.frame(&mut self.cache, p, pairs),
            _ => return None,
        }
        let decoded = decode(&mut self.cache, p, pairs.iter().copied());
        if !decoded.is_entry {
            return None;
        }
        let index = u32::try_from(self.entries.len())
            .ok()
            .filter(|&i| i < FRAME_TAG)?;
        // As the arena's, every growth may fail: the dict then stays in the arena, whose
        // own growth reports the memory refused.
        self.entries.try_reserve(1).ok()?;
        if decoded.extra.present(decoded.entry.action) {
            self.extras.try_reserve(1).ok()?;
            self.extras.insert(index, decoded.extra);
        }
        self.entries.push(decoded.entry);
        Some(index)
    }

    fn forget_from(&mut self, len: usize) {
        self.cache.truncate(len);
    }

    fn fold_list(&mut self, p: &Pickle, items: &[NodeId]) -> Option<u32> {
        self.stacks.stack(p, items)
    }

    /// Equal frames have one index, and so do equal stacks.
    fn shares(&self, index: u32) -> bool {
        index & FRAME_TAG != 0
    }

    fn shares_list(&self, _index: u32) -> bool {
        true
    }
}

/// One pass over an entry's keys (what each key string means is cached per node).
pub(super) fn decode(
    cache: &mut Vec<u32>,
    p: &Pickle,
    pairs: impl Iterator<Item = (NodeId, FoldValue)>,
) -> Decoded {
    let (mut action, mut addr, mut size, mut time_ns) = (Action::Unknown, None, 0, None);
    let (mut frames, mut extra, mut is_entry) = (0, Extra::default(), false);
    for (k, v) in pairs {
        match key_of(cache, p, k).0 {
            Key::Action => {
                is_entry = true;
                action = match v.node().filter(|&v| p.as_str(v).is_some()) {
                    Some(v) => key_of(cache, p, v).1,
                    None => Action::Unknown,
                }
            }
            Key::Addr => addr = p.fold_u64(v),
            Key::Size => match p.fold_u64(v) {
                Some(bytes) => size = bytes,
                None => extra.bad_size = true,
            },
            Key::TimeUs => time_ns = p.fold_i64(v).map(|us| us.saturating_mul(1000)),
            // An int is no list: no stack.
            Key::Frames => frames = v.node().map_or(0, |v| v.index() as u32 + 1),
            Key::DeviceFree => extra.device_free = p.fold_u64(v),
            Key::Stream => extra.stream = p.fold_u64(v).unwrap_or(0),
            // Most entries carry '' (the default): only texts are kept.
            Key::UserMetadata => {
                extra.metadata = v
                    .node()
                    .filter(|&v| p.as_str(v).is_some_and(|t| !t.is_empty()));
            }
            Key::Other | Key::Name | Key::Filename | Key::Line => {}
        }
    }
    let entry = Entry {
        addr: addr.unwrap_or(0),
        size,
        time_ns: time_ns.unwrap_or(0),
        stack: frames,
        action,
        has_addr: addr.is_some(),
        has_time: time_ns.is_some(),
    };
    Decoded {
        entry,
        extra,
        is_entry,
    }
}

/// What string node `id` means as a trace-entry key and as an action. Inlined: it runs for
/// every key of every dict folded (about 90M times on the 537 MB snapshot), and all but the
/// first time for each key string the answer is cached.
#[inline]
pub(super) fn key_of(cache: &mut Vec<u32>, p: &Pickle, id: NodeId) -> (Key, Action) {
    let cached = cache.get(id.index()).copied().unwrap_or(0);
    let code = if cached & CACHED != 0 {
        cached
    } else {
        key_code(cache, p, id)
    };
    let key = Key::ALL.get((code & 15) as usize).copied();
    let action = Action::ALL.get((code >> 4 & 15) as usize).copied();
    (key.unwrap_or(Key::Other), action.unwrap_or(Action::Unknown))
}

/// [`key_of`] of a string not met before: its meaning, cached.
#[cold]
#[inline(never)]
fn key_code(cache: &mut Vec<u32>, p: &Pickle, id: NodeId) -> u32 {
    let (key, action) = match p.as_str(id) {
        Some(s) => (Key::parse(s), Action::parse(s)),
        None => (Key::Other, Action::Unknown),
    };
    let code = CACHED | key as u32 | (action as u32) << 4;
    // Ids below the arena's count only: 4 bytes per 16-byte slot at most.
    let missing = (id.index() + 1).saturating_sub(cache.len());
    if missing > 0 && id.index() < p.node_count() && cache.try_reserve(missing).is_ok() {
        cache.resize(id.index() + 1, 0);
    }
    if let Some(slot) = cache.get_mut(id.index()) {
        *slot = code;
    }
    code
}
