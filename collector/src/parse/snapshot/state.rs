//! The allocator's state at snapshot time as the replay needs it: the live blocks (their
//! block and requested sizes) and reserved ranges per device, the true sizes of the
//! allocations that survive to the snapshot, and the reservations walked back.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::{FxHashMap, FxHashSet};

use super::entry::{Action, Entry};
use crate::model::{BlockState, DeviceIdx, Segment, StackId};

/// Blocks live on a device, by address: their size, the size asked for, and stack. A hash
/// map: walking back a 6 M-entry history inserts or removes a block at each entry (a
/// `BTreeMap` took 137 ms there). Seeded per process, so a hostile file cannot choose
/// addresses that collide.
pub(super) type Live = HashMap<u64, (Sizes, Option<StackId>), foldhash::fast::RandomState>;

/// A block's size as the allocator holds it, and the size the program asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Sizes {
    pub(super) block: u64,
    pub(super) requested: u64,
}

impl Sizes {
    /// Sizes of an allocation known only from the history: entries carry the requested
    /// size; the block is the allocator's rounding of it ([`round_block`]).
    pub(super) fn from_request(requested: u64) -> Sizes {
        Sizes {
            block: round_block(requested),
            requested,
        }
    }
}

/// The caching allocator's block size for a request: a multiple of 512 bytes, at least
/// 512 (c10's `round_size`; a block can be larger when a remainder was not split off, which
/// only the snapshot's own blocks show).
pub(super) fn round_block(requested: u64) -> u64 {
    const BLOCK_ROUNDING_BYTES: u64 = 512;
    requested
        .div_ceil(BLOCK_ROUNDING_BYTES)
        .max(1)
        .saturating_mul(BLOCK_ROUNDING_BYTES)
}
/// Reserved address ranges on a device: base address to length in bytes.
pub(super) type Pieces = BTreeMap<u64, u64>;

/// The device's state at snapshot time: its live blocks and its reserved ranges.
pub(super) fn state_at_snapshot(state: &[Segment], device: DeviceIdx) -> (Live, Pieces) {
    let mut live = Live::default();
    let mut pieces: Pieces = BTreeMap::new();
    for s in state.iter().filter(|s| s.device == device) {
        pieces.insert(s.address, s.total_size_bytes);
        for b in s.blocks.iter().filter(|b| b.state != BlockState::Inactive) {
            // Older snapshots have no requested size: the block's own stands in.
            let requested = match b.requested_size_bytes {
                0 => b.size_bytes,
                r => r,
            };
            let sizes = Sizes {
                block: b.size_bytes,
                requested,
            };
            live.insert(b.address, (sizes, b.stack));
        }
    }
    (live, pieces)
}

/// Trace entries carry the size the caller asked for; the allocator's block may be
/// larger (rounding, unsplit remainders). A block still live at the snapshot takes its
/// true size from the snapshot, so the replay ends exactly in the snapshot's state: by
/// entry index, the true size of the last allocation at each address still live (a map,
/// not a slot per entry: they are as many as the live blocks, 24 bytes an entry saved).
pub(super) fn survivor_sizes(entries: &[Entry], live: &Live) -> FxHashMap<usize, Sizes> {
    let mut survivor_size: FxHashMap<usize, Sizes> = FxHashMap::default();
    let mut touched_later: FxHashSet<u64> = Default::default();
    for (i, e) in entries.iter().enumerate().rev() {
        let Some(addr) = e.addr() else { continue };
        match e.action {
            Action::Alloc if touched_later.insert(addr) => {
                if let Some(&(size, _)) = live.get(&addr) {
                    survivor_size.insert(i, size);
                }
            }
            Action::FreeCompleted => {
                touched_later.insert(addr);
            }
            _ => {}
        }
    }
    survivor_size
}

/// Walk back from the snapshot's state to the first surviving entry: what was live and
/// reserved when the history begins. Returns the oddities met, counted.
pub(super) fn walk_back(
    entries: &[Entry],
    live: &mut Live,
    pieces: &mut Pieces,
) -> [(&'static str, u64); 2] {
    let (mut unknown_allocs, mut unknown_segments) = (0, 0);
    for e in entries.iter().rev() {
        match (e.action, e.addr()) {
            (Action::Alloc, Some(addr)) if live.remove(&addr).is_none() => unknown_allocs += 1,
            (Action::FreeCompleted, Some(addr)) => {
                live.insert(addr, (Sizes::from_request(e.size), e.stack()));
            }
            (Action::SegmentAlloc | Action::SegmentMap, Some(addr))
                if !unreserve(pieces, addr, e.size) =>
            {
                unknown_segments += 1
            }
            (Action::SegmentFree | Action::SegmentUnmap, Some(addr)) => {
                pieces.insert(addr, e.size);
            }
            _ => {}
        }
    }
    [
        (
            "alloc entries whose block is not in the later state",
            unknown_allocs,
        ),
        (
            "segment entries not found in the later segments",
            unknown_segments,
        ),
    ]
}

/// Walking back over a reservation of `size` bytes at `addr`: the range did not exist before.
/// Expandable segments map pages inside a larger range, so a partial range shrinks the
/// range that contains it. Returns false when no range holds `addr`.
pub(super) fn unreserve(pieces: &mut Pieces, addr: u64, size: u64) -> bool {
    let Some((&base, &len)) = pieces.range(..=addr).next_back() else {
        return false;
    };
    if addr >= base.saturating_add(len) {
        return false;
    }
    pieces.remove(&base);
    let end = base.saturating_add(len);
    if addr > base {
        pieces.insert(base, addr - base);
    }
    let tail = addr.saturating_add(size);
    if tail < end {
        pieces.insert(tail, end - tail);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(action: Action, addr: u64, size: u64) -> Entry {
        Entry {
            addr,
            size,
            time_ns: 0,
            stack: 0,
            action,
            has_addr: true,
            has_time: false,
        }
    }

    #[test]
    fn walking_back_finds_the_state_before_the_history_and_counts_what_does_not_fit() {
        let block = |requested| (Sizes::from_request(requested), None);
        // At snapshot time: blocks at 0x1000 and 0x3000 live in one segment at 0.
        let mut live: Live = [(0x1000, block(600)), (0x3000, block(100))]
            .into_iter()
            .collect();
        let mut pieces: Pieces = [(0, 0x10000)].into();
        let history = [
            entry(Action::SegmentAlloc, 0x20000, 0x1000), // no later segment holds it
            entry(Action::Alloc, 0x2000, 512),
            entry(Action::FreeCompleted, 0x2000, 512), // freed before the snapshot
            entry(Action::Alloc, 0x1000, 600),         // live at the snapshot
            entry(Action::Alloc, 0x5000, 64),          // neither live nor freed later
            entry(Action::SegmentAlloc, 0x8000, 0x8000), // the segment's top half mapped
        ];
        let notes = walk_back(&history, &mut live, &mut pieces);
        // 0x3000 was live before the history began; 0x1000 was allocated in it.
        let before: Vec<u64> = live.keys().copied().collect();
        assert_eq!(before, [0x3000]);
        assert_eq!(pieces.into_iter().collect::<Vec<_>>(), [(0, 0x8000)]);
        assert_eq!(
            notes.map(|(_, n)| n),
            [1, 1],
            "one unknown alloc, one unknown segment"
        );
    }

    #[test]
    fn blocks_round_up_to_512_bytes_and_hold_at_least_512() {
        for (requested, block) in [
            (0, 512),
            (1, 512),
            (512, 512),
            (513, 1024),
            (1_000_000, 1_000_448),
        ] {
            assert_eq!(round_block(requested), block, "{requested}");
        }
        let s = Sizes::from_request(700);
        assert_eq!((s.block, s.requested), (1024, 700));
    }
}
