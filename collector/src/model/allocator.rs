//! The caching allocator's own view: segments, blocks and call stacks, as allocator
//! snapshots record them.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use super::{DeviceIdx, StrId};

/// Handle to an interned call stack in [`Recording::stacks`](super::Recording::stacks).
/// Held as the index + 1 so that `Option<StackId>` takes 4 bytes, not 8: every memory event
/// carries one.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(NonZeroU32);

impl StackId {
    /// The stack at `index` of `Recording::stacks` (`u32::MAX` reads as `u32::MAX - 1`: no
    /// recording holds four billion stacks).
    pub fn new(index: u32) -> StackId {
        StackId(NonZeroU32::new(index.wrapping_add(1)).unwrap_or(NonZeroU32::MAX))
    }

    /// Its index in `Recording::stacks`.
    pub fn index(self) -> u32 {
        self.0.get() - 1
    }
}

impl std::fmt::Debug for StackId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StackId({})", self.index())
    }
}

/// One frame of a call stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Function name.
    pub name: StrId,
    /// Source file (`??` for C++ frames without symbols).
    pub file: StrId,
    /// Line number (0 when unknown).
    pub line: u32,
}

/// Which pool a segment belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentPool {
    /// Blocks ≥ 1 MiB (2 MiB+ segments).
    Large,
    /// Blocks < 1 MiB (2 MiB segments).
    Small,
    /// A pool the source names otherwise.
    Other,
}

/// State of a block inside a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Handed out to a tensor.
    ActiveAllocated,
    /// Freed by the user, still in use by another stream.
    ActivePendingFree,
    /// Free, cached by the allocator.
    Inactive,
}

/// A block of a segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Start address.
    pub address: u64,
    /// Size in bytes (rounded by the allocator).
    pub size_bytes: u64,
    /// Size the caller asked for.
    pub requested_size_bytes: u64,
    /// State.
    pub state: BlockState,
    /// Allocation stack, where recorded.
    pub stack: Option<super::StackId>,
}

/// A segment: one `cudaMalloc` (or an expandable mapping) of the caching allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Device.
    pub device: DeviceIdx,
    /// Start address.
    pub address: u64,
    /// Reserved bytes.
    pub total_size_bytes: u64,
    /// Bytes in active-allocated blocks.
    pub allocated_size_bytes: u64,
    /// Bytes in active blocks (allocated or pending free).
    pub active_size_bytes: u64,
    /// Bytes callers asked for.
    pub requested_size_bytes: u64,
    /// CUDA stream (0 = default).
    pub stream: u64,
    /// Small or large pool.
    pub pool: SegmentPool,
    /// Whether it is an expandable segment (`expandable_segments:True`).
    pub expandable: bool,
    /// The private memory pool it belongs to (a CUDA graph's, or a `MemPool`'s):
    /// the snapshot's `segment_pool_id` where it is not `(0, 0)`, the default pool.
    pub private_pool: Option<(u64, u64)>,
    /// Blocks in address order.
    pub blocks: Vec<Block>,
}

/// The allocator's state at one instant (when the snapshot was taken).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllocatorState {
    /// When, where known.
    pub time_ns: Option<i64>,
    /// Every segment of every device.
    pub segments: Vec<Segment>,
    /// `allocator_settings` as the source wrote them.
    pub settings: BTreeMap<String, String>,
    /// Per device, memory in the sizes the program asked for (the events and totals count
    /// the allocator's blocks, as `torch.cuda.max_memory_allocated` does).
    pub requested: Vec<RequestedTotals>,
    /// Per device, the allocation history as the allocator recorded it, where the load
    /// asked for it ([`LoadOptions::allocator_history`](crate::parse::LoadOptions)):
    /// what the allocator simulation replays.
    pub history: Vec<DeviceHistory>,
}

/// One device's requested memory over a snapshot's history: the sizes callers asked for,
/// as memory_viz draws them (blocks are rounded up to 512 bytes and may hold more).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestedTotals {
    /// The device.
    pub device: DeviceIdx,
    /// The largest requested total.
    pub peak_bytes: i64,
    /// When, ns on the recording's clock.
    pub peak_at_ns: i64,
    /// The requested total at the end.
    pub final_bytes: i64,
}

/// Facts an out-of-memory event carries beyond its size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OomDetail {
    /// Index of the OOM event in [`Recording::mem_events`](super::Recording::mem_events).
    pub event: u32,
    /// Free bytes on the device as the driver reported them at the failure.
    pub device_free_bytes: Option<u64>,
}

/// What one entry of an allocator's history did (a snapshot's trace-entry actions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HistoryAction {
    /// A block handed out (`alloc`).
    Alloc,
    /// The program freed a block (`free_requested`); it is reusable once freed on every
    /// stream that used it (`free_completed`).
    FreeRequested,
    /// The block went back to the allocator's cache (`free_completed`).
    FreeCompleted,
    /// `cudaMalloc` of a segment (`segment_alloc`).
    SegmentAlloc,
    /// `cudaFree` of a segment (`segment_free`).
    SegmentFree,
    /// Pages mapped into an expandable segment (`segment_map`).
    SegmentMap,
    /// Pages unmapped from an expandable segment (`segment_unmap`).
    SegmentUnmap,
    /// A request the allocator could not satisfy (`oom`).
    Oom,
}

impl HistoryAction {
    /// The action as the snapshot (and memory_viz's history list) names it.
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryAction::Alloc => "alloc",
            HistoryAction::FreeRequested => "free_requested",
            HistoryAction::FreeCompleted => "free_completed",
            HistoryAction::SegmentAlloc => "segment_alloc",
            HistoryAction::SegmentFree => "segment_free",
            HistoryAction::SegmentMap => "segment_map",
            HistoryAction::SegmentUnmap => "segment_unmap",
            HistoryAction::Oom => "oom",
        }
    }
}

/// One entry of a device's allocator history, as the caching allocator recorded it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistoryEntry {
    /// When, ns on the recording's clock (the entry's position where the source has no
    /// times).
    pub time_ns: i64,
    /// What happened.
    pub action: HistoryAction,
    /// The block's or segment's address (0 for an OOM).
    pub addr: u64,
    /// The size the program asked for (allocations and frees), the segment's or mapping's
    /// size (segment entries), the rounded request (an OOM).
    pub size_bytes: u64,
    /// The CUDA stream (0: the default stream).
    pub stream: u64,
    /// An OOM's free device memory as the driver reported it.
    pub device_free_bytes: Option<u64>,
    /// The entry's call stack, where the source records one (a snapshot's entries; not
    /// kept by packs).
    pub stack: Option<super::StackId>,
}

/// One device's allocator history: the allocator's segments when the history begins and
/// every entry after. What the allocator simulation replays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceHistory {
    /// The device.
    pub device: DeviceIdx,
    /// The segments when the history begins, in address order: the snapshot's segments
    /// walked back over the history, each block live then allocated and each gap between
    /// them one free block.
    pub start: Vec<Segment>,
    /// Every entry, in order.
    pub entries: Vec<HistoryEntry>,
    /// Bytes allocated when the history begins that no block accounts for (a trace
    /// profiled mid-run: tensors made before it and not freed in it), carried as held.
    pub carried_bytes: u64,
}
