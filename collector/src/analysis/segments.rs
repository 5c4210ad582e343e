//! The allocator's segments and their blocks at an instant: which pieces of each reserved
//! range were handed out and which were free. What the viewer's segment view draws, and
//! what [`fragmentation`](super::fragmentation) measures.
//!
//! At any instant the layout is rebuilt from geometry: the reserved ranges live then,
//! cut by the allocations live then (by address). At the instant a snapshot was taken, the
//! snapshot's own block list gives it exactly, including blocks freed but still in use by
//! another stream.

use crate::model::{BlockState, DeviceIdx, Recording, SegmentPool, StackId};
use crate::timeline::Timeline;

/// Segments of exactly this size are the small pool's (requests ≤ 1 MiB); the large pool
/// uses 20 MiB segments or rounded sizes ≥ 10 MiB.
pub const SMALL_SEGMENT_BYTES: i64 = 2 << 20;

/// What a block of a segment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockUse {
    /// Handed out to a tensor.
    Allocated,
    /// Freed by the user, still in use by another stream (snapshots only).
    PendingFree,
    /// Free, cached by the allocator.
    Free,
}

/// A piece of a segment.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockSpan {
    /// Start address.
    pub addr: u64,
    /// Size in bytes.
    pub size_bytes: i64,
    /// Used or free.
    pub state: BlockUse,
    /// Where it was allocated, where the source records stacks.
    pub stack: Option<StackId>,
}

/// One segment (a `cudaMalloc` or a mapped range of an expandable segment) and its blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentLayout {
    /// Start address.
    pub addr: u64,
    /// Reserved bytes.
    pub size_bytes: i64,
    /// Small or large pool.
    pub pool: SegmentPool,
    /// The private pool it belongs to (a CUDA graph's or a `MemPool`'s), where the
    /// snapshot says; `None` for the default pool and for layouts rebuilt from events.
    pub private_pool: Option<(u64, u64)>,
    /// Blocks in address order, covering the segment from start to end.
    pub blocks: Vec<BlockSpan>,
}

impl SegmentLayout {
    /// Sizes of the free blocks, in address order.
    pub fn free_sizes(&self) -> impl Iterator<Item = i64> + '_ {
        self.blocks
            .iter()
            .filter(|b| b.state == BlockUse::Free)
            .map(|b| b.size_bytes)
    }

    /// Bytes in free blocks.
    pub fn free_bytes(&self) -> i64 {
        self.free_sizes().sum()
    }

    /// The largest free block, 0 when none.
    pub fn largest_free_bytes(&self) -> i64 {
        self.free_sizes().max().unwrap_or(0)
    }
}

/// The segments of `device` at `time_ns` in address order, rebuilt from segment and block
/// addresses. `None` when the source gives no segment addresses (geometry unknown).
pub fn layout_at(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
) -> Option<Vec<SegmentLayout>> {
    let d = timeline.devices.get(device as usize)?;
    let mut segments: Vec<(u64, i64)> = Vec::new();
    for s in d.segments_at(time_ns) {
        segments.push((s.addr?, s.bytes));
    }
    if segments.is_empty() {
        return None;
    }
    segments.sort_unstable();
    let mut live: Vec<(u64, i64, u32)> = d
        .live_at(time_ns)
        .map(|a| (a.addr, a.bytes, a.alloc_event))
        .collect();
    live.sort_unstable();
    let mut out = Vec::with_capacity(segments.len());
    let mut next = 0;
    for (addr, size) in segments {
        let end = addr.saturating_add(size.max(0) as u64);
        while next < live.len() && live[next].0 < addr {
            next += 1;
        }
        let mut blocks = Vec::new();
        let mut cursor = addr;
        while next < live.len() && live[next].0 < end {
            let (b_addr, b_size, event) = live[next];
            if b_addr > cursor {
                blocks.push(free_block(cursor, b_addr));
            }
            let b_end = b_addr.saturating_add(b_size.max(0) as u64).min(end);
            if b_end > cursor.max(b_addr) {
                let start = cursor.max(b_addr);
                blocks.push(BlockSpan {
                    addr: start,
                    size_bytes: (b_end - start) as i64,
                    state: BlockUse::Allocated,
                    stack: rec.mem_events.get(event as usize).and_then(|e| e.stack),
                });
            }
            cursor = cursor.max(b_end);
            next += 1;
        }
        if end > cursor {
            blocks.push(free_block(cursor, end));
        }
        let pool = if size == SMALL_SEGMENT_BYTES {
            SegmentPool::Small
        } else {
            SegmentPool::Large
        };
        out.push(SegmentLayout {
            addr,
            size_bytes: size,
            pool,
            private_pool: None,
            blocks,
        });
    }
    Some(out)
}

fn free_block(from: u64, to: u64) -> BlockSpan {
    BlockSpan {
        addr: from,
        size_bytes: (to - from) as i64,
        state: BlockUse::Free,
        stack: None,
    }
}

/// The segments of `device` when the snapshot was taken, from the allocator's own blocks.
/// `None` for sources without an allocator state or with no segment on that device.
pub fn layout_at_snapshot(rec: &Recording, device: DeviceIdx) -> Option<Vec<SegmentLayout>> {
    let state = rec.allocator.as_ref()?;
    let mut out: Vec<SegmentLayout> = state
        .segments
        .iter()
        .filter(|s| s.device == device)
        .map(|s| SegmentLayout {
            addr: s.address,
            size_bytes: s.total_size_bytes as i64,
            pool: s.pool,
            private_pool: s.private_pool,
            blocks: s
                .blocks
                .iter()
                .map(|b| BlockSpan {
                    addr: b.address,
                    size_bytes: b.size_bytes as i64,
                    state: match b.state {
                        BlockState::ActiveAllocated => BlockUse::Allocated,
                        BlockState::ActivePendingFree => BlockUse::PendingFree,
                        BlockState::Inactive => BlockUse::Free,
                    },
                    stack: b.stack,
                })
                .collect(),
        })
        .collect();
    if out.is_empty() {
        return None;
    }
    out.sort_by_key(|s| s.addr);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeviceId, MemEvent, MemEventKind, SourceFormat};

    fn event(time_ns: i64, kind: MemEventKind, addr: u64, bytes: i64) -> MemEvent {
        MemEvent {
            time_ns,
            bytes,
            addr: addr.into(),
            total_allocated_bytes: crate::model::Total::UNKNOWN,
            total_reserved_bytes: crate::model::Total::UNKNOWN,
            device: 0,
            thread: 0,
            kind,
            stack: None,
        }
    }

    #[test]
    fn blocks_cut_segments_into_used_and_free_pieces() {
        // GIVEN a 2 MiB segment at 0x1000_0000 and a 20 MiB one above it, with two blocks
        // in the first (one freed again) and one in the second
        let mut rec = Recording::empty(SourceFormat::TorchSnapshot, "test");
        rec.device_index(DeviceId::cuda(0));
        let base = 0x1000_0000u64;
        let big = base + (64 << 20);
        rec.mem_events = vec![
            event(0, MemEventKind::SegmentAlloc, base, SMALL_SEGMENT_BYTES),
            event(1, MemEventKind::SegmentAlloc, big, 20 << 20),
            event(2, MemEventKind::Alloc, base, 4096),
            event(3, MemEventKind::Alloc, base + 8192, 512),
            event(4, MemEventKind::Alloc, big + (4 << 20), 8 << 20),
            event(5, MemEventKind::Free, base, -4096),
        ];
        let timeline = Timeline::build(&rec);
        // WHEN laid out before and after the free
        let before = layout_at(&rec, &timeline, 0, 4).expect("geometry");
        let after = layout_at(&rec, &timeline, 0, 5).expect("geometry");
        // THEN the pieces are exact and cover each segment
        let pieces = |l: &SegmentLayout| {
            l.blocks
                .iter()
                .map(|b| (b.addr - l.addr, b.size_bytes, b.state))
                .collect::<Vec<_>>()
        };
        assert_eq!(before.len(), 2);
        assert_eq!(before[0].pool, SegmentPool::Small);
        assert_eq!(
            pieces(&before[0]),
            vec![
                (0, 4096, BlockUse::Allocated),
                (4096, 4096, BlockUse::Free),
                (8192, 512, BlockUse::Allocated),
                (8704, SMALL_SEGMENT_BYTES - 8704, BlockUse::Free),
            ]
        );
        assert_eq!(
            pieces(&before[1]),
            vec![
                (0, 4 << 20, BlockUse::Free),
                (4 << 20, 8 << 20, BlockUse::Allocated),
                (12 << 20, 8 << 20, BlockUse::Free),
            ]
        );
        assert_eq!(after[0].free_bytes(), SMALL_SEGMENT_BYTES - 512);
        assert_eq!(after[0].largest_free_bytes(), SMALL_SEGMENT_BYTES - 8704);
        assert_eq!(after[1].largest_free_bytes(), 8 << 20);
        // and before the first segment there is no geometry
        assert!(layout_at(&rec, &timeline, 0, -1).is_none());
    }
}
