//! Fragmentation: how the allocator's reserved memory splits into used and free pieces.
//!
//! The free blocks come from [`segments`](super::segments): at any instant rebuilt from
//! geometry (the reserved ranges live then, minus the allocations live then, by address);
//! at the instant a snapshot was taken, exactly from the snapshot's own block list.

use serde::Serialize;

use super::segments::{BlockUse, SegmentLayout, layout_at, layout_at_snapshot};
use crate::model::{DeviceId, DeviceIdx, Recording, SegmentPool};
use crate::timeline::Timeline;

/// Free-block structure of one pool (small or large).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PoolFragmentation {
    /// Segments in the pool.
    pub segments: u64,
    /// Reserved bytes.
    pub reserved_bytes: i64,
    /// Free bytes inside the segments.
    pub free_bytes: i64,
    /// The largest free block.
    pub largest_free_block_bytes: i64,
}

/// Fragmentation of one device at one instant.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Fragmentation {
    /// The device.
    pub device: DeviceId,
    /// The instant, ns on the recording's clock.
    pub at_ns: i64,
    /// The allocator's own blocks (snapshots) or segments minus live blocks.
    pub source: FragmentationSource,
    /// Reserved bytes.
    pub reserved_bytes: i64,
    /// Allocated bytes.
    pub allocated_bytes: i64,
    /// Reserved − allocated: what the cache holds.
    pub cache_free_bytes: i64,
    /// Number of segments (or mapped ranges).
    pub segments: u64,
    /// Number of free blocks.
    pub free_blocks: u64,
    /// The largest free block: the largest request the cache can serve without cudaMalloc.
    pub largest_free_block_bytes: i64,
    /// 1 − largest free block / total free: 0 when all free memory is one block.
    pub external_fragmentation: f64,
    /// The small pool (2 MiB segments).
    pub small_pool: PoolFragmentation,
    /// The large pool.
    pub large_pool: PoolFragmentation,
}

/// Where a [`Fragmentation`]'s blocks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FragmentationSource {
    /// The allocator's own blocks, in an allocator snapshot.
    Snapshot,
    /// Segments minus the blocks live then, from the timeline.
    Reconstructed,
}

impl FragmentationSource {
    /// `snapshot` or `reconstructed`, as reports say it.
    pub fn as_str(self) -> &'static str {
        match self {
            FragmentationSource::Snapshot => "snapshot",
            FragmentationSource::Reconstructed => "reconstructed",
        }
    }
}

impl std::fmt::Display for FragmentationSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Fragmentation reconstructed from the timeline at `time_ns`. `None` when the source gives
/// no segment addresses (geometry unknown).
pub fn fragmentation_at(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
) -> Option<Fragmentation> {
    let layout = layout_at(rec, timeline, device, time_ns)?;
    let point = timeline.devices.get(device as usize)?.at(time_ns);
    let allocated = point.map_or(0, |p| p.allocated_bytes);
    Some(summarize(
        rec,
        device,
        time_ns,
        FragmentationSource::Reconstructed,
        allocated,
        &pieces(&layout),
    ))
}

/// Fragmentation at the instant the snapshot was taken, from the allocator's own blocks.
pub fn fragmentation_at_snapshot(rec: &Recording, device: DeviceIdx) -> Option<Fragmentation> {
    let layout = layout_at_snapshot(rec, device)?;
    let allocated = layout
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| b.state != BlockUse::Free)
        .map(|b| b.size_bytes)
        .sum();
    Some(summarize(
        rec,
        device,
        rec.meta.end_ns,
        FragmentationSource::Snapshot,
        allocated,
        &pieces(&layout),
    ))
}

/// (pool, reserved bytes, sizes of the free blocks) per segment.
fn pieces(layout: &[SegmentLayout]) -> Vec<(SegmentPool, i64, Vec<i64>)> {
    layout
        .iter()
        .map(|s| (s.pool, s.size_bytes, s.free_sizes().collect()))
        .collect()
}

fn summarize(
    rec: &Recording,
    device: DeviceIdx,
    time_ns: i64,
    source: FragmentationSource,
    allocated: i64,
    pieces: &[(SegmentPool, i64, Vec<i64>)],
) -> Fragmentation {
    let mut small = PoolFragmentation::default();
    let mut large = PoolFragmentation::default();
    let (mut reserved, mut free_total, mut largest, mut free_blocks) = (0i64, 0i64, 0i64, 0u64);
    for (pool, size, free) in pieces {
        let p = if *pool == SegmentPool::Small {
            &mut small
        } else {
            &mut large
        };
        let seg_free: i64 = free.iter().sum();
        let seg_largest = free.iter().copied().max().unwrap_or(0);
        p.segments += 1;
        p.reserved_bytes += size;
        p.free_bytes += seg_free;
        p.largest_free_block_bytes = p.largest_free_block_bytes.max(seg_largest);
        reserved += size;
        free_total += seg_free;
        largest = largest.max(seg_largest);
        free_blocks += free.len() as u64;
    }
    Fragmentation {
        device: rec
            .devices
            .get(device as usize)
            .map_or(DeviceId::CPU, |d| d.key),
        at_ns: time_ns,
        source,
        reserved_bytes: reserved,
        allocated_bytes: allocated,
        cache_free_bytes: reserved - allocated,
        segments: pieces.len() as u64,
        free_blocks,
        largest_free_block_bytes: largest,
        external_fragmentation: if free_total > 0 {
            1.0 - largest as f64 / free_total as f64
        } else {
            0.0
        },
        small_pool: small,
        large_pool: large,
    }
}
