//! The simulated segments at an instant in the segment view's terms: what the allocator
//! would hold then under another setting, drawn beside what it did hold.

use super::config::AllocatorConfig;
use super::histories;
use super::predict::predict_until;
use super::state::{ALLOCATED, SimSegment};
use crate::analysis::segments::{BlockSpan, BlockUse, SegmentLayout};
use crate::model::{DeviceIdx, Recording, SegmentPool};

/// One device's simulated segments at an instant.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatedLayout {
    /// The setting, as `PYTORCH_CUDA_ALLOC_CONF` says it.
    pub allocator_conf: String,
    /// The segments in address order (addresses made up: only order and sizes mean
    /// anything).
    pub segments: Vec<SegmentLayout>,
    /// Their total, bytes.
    pub reserved_bytes: i64,
    /// The allocated blocks' total, bytes.
    pub allocated_bytes: i64,
    /// The largest free block, bytes.
    pub largest_free_bytes: i64,
}

/// The segments `device`'s allocator would hold at `at_ns` under `config` (the run's
/// history replayed up to it, on a device of unlimited memory); `None` where the device
/// has no history to replay.
pub fn simulated_layout_at(
    rec: &Recording,
    device: DeviceIdx,
    config: &AllocatorConfig,
    at_ns: i64,
) -> Option<SimulatedLayout> {
    let histories = histories(rec);
    let h = histories.iter().find(|h| h.history.device == device)?;
    let run = predict_until(&h.history, config, None, Some(at_ns));
    let segments: Vec<SegmentLayout> = run.final_segments.iter().map(layout).collect();
    let sum = |used: bool| -> i64 {
        (segments.iter().flat_map(|s| &s.blocks))
            .filter(|b| (b.state == BlockUse::Allocated) == used)
            .map(|b| b.size_bytes)
            .sum()
    };
    let (allocated_bytes, free_bytes) = (sum(true), sum(false));
    let largest_free_bytes = (segments.iter().flat_map(|s| s.free_sizes()))
        .max()
        .unwrap_or(0);
    Some(SimulatedLayout {
        allocator_conf: run.allocator_conf,
        reserved_bytes: allocated_bytes + free_bytes,
        allocated_bytes,
        largest_free_bytes,
        segments,
    })
}

fn layout(s: &SimSegment) -> SegmentLayout {
    let mut addr = s.address;
    let blocks = (s.blocks.iter())
        .map(|b| {
            let span = BlockSpan {
                addr,
                size_bytes: b.size as i64,
                state: match b.state == ALLOCATED {
                    true => BlockUse::Allocated,
                    false => BlockUse::Free,
                },
                stack: None,
            };
            addr += b.size;
            span
        })
        .collect();
    SegmentLayout {
        addr: s.address,
        size_bytes: s.total_size as i64,
        pool: match s.small {
            true => SegmentPool::Small,
            false => SegmentPool::Large,
        },
        private_pool: None,
        blocks,
    }
}
