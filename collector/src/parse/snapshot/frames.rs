//! Frames and stacks folded as the pickle is read. Each allocation of a snapshot brings its
//! frames list, and where the process built it anew, a new list of new frame dicts: on a
//! 537 MB snapshot of 6.2M trace entries, 2M lists of 4 dicts each. Each frame dict
//! `{name, filename, line}` is taken over at its `SETITEMS` as a 12-byte [`FoldedFrame`]
//! (equal ones share an index), and each list of such frames at its `APPENDS` as a stack
//! (equal ones share an index), so their pairs and items take no room in the arena and the
//! stacks are interned once per distinct content rather than once per list.
//!
//! What [`super::parse::gather`] makes of them (string and stack ids) does not depend on
//! this: it meets the folded stacks in the same order as it met the lists, and interns
//! their frames and strings in the same order.

use std::collections::HashMap;
use std::hash::BuildHasher;

use super::entry::Key;
use super::fold::key_of;
use crate::parse::pickle::{FoldValue, NodeId, Pickle};

/// The fold indices of frame dicts carry this bit (trace entries' do not).
pub(super) const FRAME_TAG: u32 = 1 << 31;

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A frame dict, read: its name and file string nodes and its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct FoldedFrame {
    pub(super) name: NodeId,
    pub(super) file: NodeId,
    pub(super) line: u32,
}

/// The distinct frames and stacks folded. Both maps are keyed by randomly seeded hashes, so
/// a file cannot choose contents that collide; colliding contents are simply kept twice.
#[derive(Default)]
pub(super) struct FoldedStacks {
    pub(super) frames: Vec<FoldedFrame>,
    frame_ids: Map<FoldedFrame, u32>,
    /// Every distinct stack's frame indices, one after another: stack `i` is
    /// `flat[spans[i].0..spans[i].1]`.
    flat: Vec<u32>,
    spans: Vec<(u32, u32)>,
    /// The first stack with each content hash.
    stack_ids: Map<u64, u32>,
    hasher: foldhash::fast::RandomState,
    /// Reused buffer for a list's frame indices.
    scratch: Vec<u32>,
}

impl FoldedStacks {
    /// A frame dict — exactly `name` and `filename` strings and a `line`, in the order torch
    /// writes them — as a fold index (with [`FRAME_TAG`]); `None` for any other dict.
    pub(super) fn frame(
        &mut self,
        keys: &mut Vec<u32>,
        p: &Pickle,
        pairs: &[(NodeId, FoldValue)],
    ) -> Option<u32> {
        let &[(k1, name), (k2, file), (k3, line)] = pairs else {
            return None;
        };
        let is = |keys: &mut Vec<u32>, k, want| key_of(keys, p, k).0 == want;
        if !(is(keys, k1, Key::Name) && is(keys, k2, Key::Filename) && is(keys, k3, Key::Line)) {
            return None;
        }
        let text = |v: FoldValue| v.node().filter(|&v| p.as_str(v).is_some());
        let frame = FoldedFrame {
            name: text(name)?,
            file: text(file)?,
            // As the arena's frames are read: a line that is no unsigned int is 0.
            line: p.fold_u64(line).unwrap_or(0).min(u64::from(u32::MAX)) as u32,
        };
        if let Some(&index) = self.frame_ids.get(&frame) {
            return Some(index | FRAME_TAG);
        }
        let index = u32::try_from(self.frames.len())
            .ok()
            .filter(|&i| i < FRAME_TAG)?;
        // Every growth may fail: the dict then stays in the arena.
        self.frames.try_reserve(1).ok()?;
        self.frame_ids.try_reserve(1).ok()?;
        self.frames.push(frame);
        self.frame_ids.insert(frame, index);
        Some(index | FRAME_TAG)
    }

    /// A list whose items are all folded frames, as a stack index; `None` otherwise.
    pub(super) fn stack(&mut self, p: &Pickle, items: &[NodeId]) -> Option<u32> {
        let mut frames = std::mem::take(&mut self.scratch);
        frames.clear();
        let all_frames = items.iter().all(|&item| match p.folded(item) {
            Some(index) if index & FRAME_TAG != 0 => {
                frames.push(index & !FRAME_TAG);
                true
            }
            _ => false,
        });
        let index = if all_frames {
            self.intern(&frames)
        } else {
            None
        };
        self.scratch = frames;
        index
    }

    fn intern(&mut self, frames: &[u32]) -> Option<u32> {
        let hash = self.hasher.hash_one(frames);
        let first = self.stack_ids.get(&hash).copied();
        if let Some(index) = first
            && self.frames_of(index) == frames
        {
            return Some(index);
        }
        let index = u32::try_from(self.spans.len()).ok()?;
        let start = u32::try_from(self.flat.len()).ok()?;
        let end = start.checked_add(u32::try_from(frames.len()).ok()?)?;
        self.flat.try_reserve(frames.len()).ok()?;
        self.spans.try_reserve(1).ok()?;
        self.stack_ids.try_reserve(1).ok()?;
        self.flat.extend_from_slice(frames);
        self.spans.push((start, end));
        if first.is_none() {
            self.stack_ids.insert(hash, index);
        }
        Some(index)
    }

    /// The frame indices of stack `index` (empty for an index never given).
    pub(super) fn frames_of(&self, index: u32) -> &[u32] {
        let Some(&(start, end)) = self.spans.get(index as usize) else {
            return &[];
        };
        self.flat
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// How many distinct stacks were folded.
    pub(super) fn stack_count(&self) -> usize {
        self.spans.len()
    }
}
