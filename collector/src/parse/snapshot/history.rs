//! A device's allocator history as the allocator recorded it, kept for the allocator
//! simulation ([`crate::analysis::simulate`]) where the load asks for it: the segments
//! when the surviving history begins (the snapshot's, walked back) and every entry with
//! its requested size and stream.

use super::entry::{Action, Entry, Trace};
use super::state::{Live, Pieces};
use crate::model::{
    Block, BlockState, DeviceHistory, DeviceIdx, HistoryAction, HistoryEntry, Segment, SegmentPool,
};

/// The size of a small-pool segment (c10's `kSmallBuffer`): a segment of this size whose
/// pool the snapshot does not name is a small-pool one (large-pool segments are 10 MiB or
/// more, or expandable).
const SMALL_SEGMENT_BYTES: u64 = 2 << 20;
/// The largest request of the small pool (c10's `kSmallSize`); a large-pool block is split
/// only where more than this remains.
const SMALL_REQUEST_BYTES: u64 = 1 << 20;

/// The history of one device: `live` and `pieces` hold the state when it begins.
pub(super) fn device_history(
    device: DeviceIdx,
    trace: &Trace,
    at_snapshot: &[Segment],
    live: &Live,
    pieces: &Pieces,
    times: impl Iterator<Item = i64>,
) -> DeviceHistory {
    let mut device_free = trace.device_free.iter().copied();
    let mut entries = Vec::with_capacity(trace.entries.len());
    for ((i, e), time_ns) in trace.entries.iter().enumerate().zip(times) {
        let action = match e.action {
            Action::Alloc => HistoryAction::Alloc,
            Action::FreeRequested => HistoryAction::FreeRequested,
            Action::FreeCompleted => HistoryAction::FreeCompleted,
            Action::SegmentAlloc => HistoryAction::SegmentAlloc,
            Action::SegmentFree => HistoryAction::SegmentFree,
            Action::SegmentMap => HistoryAction::SegmentMap,
            Action::SegmentUnmap => HistoryAction::SegmentUnmap,
            Action::Oom => HistoryAction::Oom,
            Action::Snapshot | Action::Unknown => continue,
        };
        let device_free_bytes = match action {
            HistoryAction::Oom => device_free.next().flatten(),
            _ => None,
        };
        entries.push(HistoryEntry {
            time_ns,
            action,
            addr: e.addr,
            size_bytes: e.size,
            stream: Entry::stream_in(trace, i),
            device_free_bytes,
            stack: e.stack(),
        });
    }
    let start = pieces
        .iter()
        .map(|(&address, &size)| start_segment(device, address, size, at_snapshot, &entries, live))
        .collect();
    DeviceHistory {
        device,
        start,
        entries,
        carried_bytes: 0,
    }
}

/// The segment at `address` when the history begins: what the snapshot says of it where
/// it is still there (stream, pool, private pool), else what its `segment_free` says;
/// its blocks the live ones and one free block in each gap between them.
fn start_segment(
    device: DeviceIdx,
    address: u64,
    size: u64,
    at_snapshot: &[Segment],
    entries: &[HistoryEntry],
    live: &Live,
) -> Segment {
    let known = at_snapshot
        .iter()
        .find(|s| s.device == device && s.address == address);
    let freed_on = || {
        entries
            .iter()
            .find(|e| {
                matches!(
                    e.action,
                    HistoryAction::SegmentFree | HistoryAction::SegmentUnmap
                ) && e.addr == address
            })
            .map_or(0, |e| e.stream)
    };
    let pool = match known {
        Some(s) => s.pool,
        None if size == SMALL_SEGMENT_BYTES => SegmentPool::Small,
        None => SegmentPool::Large,
    };
    // A large-pool block is split only where more than 1 MiB would remain, so no free
    // block there is 1 MiB or less: such a gap is the end of the block before it (whose
    // size the history gives as the size asked for, rounded).
    let whole_blocks = pool == SegmentPool::Large && !known.is_some_and(|s| s.expandable);
    let blocks = start_blocks(address, address.saturating_add(size), live, whole_blocks);
    let allocated: u64 = (blocks.iter())
        .filter(|b| b.state != BlockState::Inactive)
        .map(|b| b.size_bytes)
        .sum();
    Segment {
        device,
        address,
        total_size_bytes: size,
        allocated_size_bytes: allocated,
        active_size_bytes: allocated,
        requested_size_bytes: 0,
        stream: known.map_or_else(freed_on, |s| s.stream),
        pool,
        expandable: known.is_some_and(|s| s.expandable),
        private_pool: known.and_then(|s| s.private_pool),
        blocks,
    }
}

/// The blocks of `[address, end)`: the live ones, and a free block in each gap between
/// them (or, with `whole_blocks`, a gap of 1 MiB or less added to the block before it).
fn start_blocks(address: u64, end: u64, live: &Live, whole_blocks: bool) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut inside: Vec<_> = live
        .iter()
        .filter(|&(&a, _)| a >= address && a < end)
        .collect();
    inside.sort_unstable_by_key(|&(&a, _)| a);
    let mut at = address;
    for (&a, &(sizes, stack)) in inside {
        if a > at && whole_blocks && a - at <= SMALL_REQUEST_BYTES {
            if let Some(last) = blocks.last_mut() {
                last.size_bytes += a - at;
            }
        } else if a > at {
            blocks.push(free_block(at, a - at));
        }
        blocks.push(Block {
            address: a,
            size_bytes: sizes.block,
            requested_size_bytes: sizes.requested,
            state: BlockState::ActiveAllocated,
            stack,
        });
        at = a.saturating_add(sizes.block);
    }
    match blocks.last_mut() {
        Some(last) if at < end && whole_blocks && end - at <= SMALL_REQUEST_BYTES => {
            last.size_bytes += end - at;
        }
        _ if at < end => blocks.push(free_block(at, end - at)),
        _ => {}
    }
    blocks
}

fn free_block(address: u64, size: u64) -> Block {
    Block {
        address,
        size_bytes: size,
        requested_size_bytes: 0,
        state: BlockState::Inactive,
        stack: None,
    }
}
