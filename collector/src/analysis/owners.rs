//! Who owns each block of a segment layout: the first frame of user code in the stack
//! that allocated it (what memory_viz colours segments by), and the category of the
//! allocation that holds it. The segment view colours blocks by either.

use rustc_hash::FxHashMap;

use super::categories::{Category, categories_of};
use super::live::is_library_file;
use super::segments::{BlockUse, SegmentLayout};
use crate::model::{DeviceIdx, Frame, Recording, StackId};
use crate::timeline::Timeline;

/// The owner of one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockOwner {
    /// The first frame of user code (else the first frame with a file) of the allocating
    /// stack; `None` for free blocks and where no stack was recorded.
    pub frame: Option<Frame>,
    /// The category of the allocation at the block's address live at the instant; `None`
    /// for free blocks and blocks no allocation of the history covers.
    pub category: Option<Category>,
}

/// The first frame of user code of `stack` (innermost first), else its first frame with a
/// file (C++ frames without symbols, `??`, name nothing).
pub fn owner_frame(rec: &Recording, stack: Option<StackId>) -> Option<Frame> {
    let frames = rec.stack(stack);
    let has_file = |f: &&Frame| {
        let file = rec.strings.get(f.file);
        file != "??" && !file.is_empty()
    };
    frames
        .iter()
        .filter(has_file)
        .find(|f| !is_library_file(rec.strings.get(f.file)))
        .or_else(|| frames.iter().find(has_file))
        .copied()
}

/// The owner of every block of `layout` (the segments of `device` at `time_ns`), parallel
/// to the segments and their blocks.
pub fn owners(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
    layout: &[SegmentLayout],
) -> Vec<Vec<BlockOwner>> {
    let categories = timeline
        .devices
        .get(device as usize)
        .map(|d| {
            let live: Vec<usize> = (0..d.allocations.len())
                .filter(|&i| {
                    let a = &d.allocations[i];
                    a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns)
                })
                .collect();
            let of = categories_of(rec, timeline, d, &live);
            live.iter()
                .zip(of)
                .map(|(&i, c)| (d.allocations[i].addr, c))
                .collect::<FxHashMap<u64, Category>>()
        })
        .unwrap_or_default();
    layout
        .iter()
        .map(|s| {
            s.blocks
                .iter()
                .map(|b| match b.state {
                    BlockUse::Free => BlockOwner::default(),
                    BlockUse::Allocated | BlockUse::PendingFree => BlockOwner {
                        frame: owner_frame(rec, b.stack),
                        category: categories.get(&b.addr).copied(),
                    },
                })
                .collect()
        })
        .collect()
}
