//! The allocator's state at snapshot time as the replay needs it: the live blocks (their
//! block and requested sizes) and reserved ranges per device, the true sizes of the
//! allocations that survive to the snapshot, and the reservations walked back.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};

use super::entry::{Action, Entry};
use crate::model::{BlockState, DeviceIdx, Segment, StackId};

/// Blocks live on a device, by address: their size, the size asked for, and stack.
pub(super) type Live = BTreeMap<u64, (Sizes, Option<StackId>)>;

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
    let mut live: Live = BTreeMap::new();
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
