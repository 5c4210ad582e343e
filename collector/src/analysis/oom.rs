//! Out-of-memory verdicts: for each failed allocation, was the device full of live tensors
//! (capacity), was there enough free memory but in pieces too small (fragmentation), or
//! was memory held outside this allocator?

use serde::Serialize;

use super::fragmentation::fragmentation_at;
use super::live::{GroupBy, LiveGroup, live_at};
use crate::model::{DeviceId, Recording};
use crate::timeline::Timeline;
use crate::units::bytes_iec;

/// How many live groups an OOM report lists.
pub const OOM_GROUPS: usize = 5;

/// The cause of an OOM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomCause {
    /// Live tensors (and the cache) fill what the device has.
    Capacity,
    /// Enough free memory in total, but no block large enough.
    Fragmentation,
    /// The device's memory is held by something other than this allocator.
    OutsideAllocator,
    /// A cached block was large enough, yet the request failed (another stream or pool).
    StreamOrPool,
}

/// One OOM, explained.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OomVerdict {
    /// The device.
    pub device: DeviceId,
    /// When, ns on the recording's clock.
    pub at_ns: i64,
    /// Bytes requested.
    pub requested_bytes: i64,
    /// Free bytes on the device as the driver said.
    pub device_free_bytes: Option<u64>,
    /// Allocated bytes then.
    pub allocated_bytes: i64,
    /// Reserved bytes then.
    pub reserved_bytes: Option<i64>,
    /// Free bytes in the allocator's cache then.
    pub cache_free_bytes: Option<i64>,
    /// The largest free cached block then, where segment geometry is known.
    pub largest_free_block_bytes: Option<i64>,
    /// Memory on the device outside this allocator, where the device's capacity is known.
    pub outside_allocator_bytes: Option<i64>,
    /// The cause.
    pub cause: OomCause,
    /// One sentence for a human.
    pub verdict: String,
    /// The largest groups of live allocations then.
    pub largest_live: Vec<LiveGroup>,
}

/// Explain every OOM event of the recording.
pub fn oom_verdicts(rec: &Recording, timeline: &Timeline) -> Vec<OomVerdict> {
    let mut out = Vec::new();
    // In file order, as the events are: the timeline holds each device's.
    let mut ooms: Vec<u32> = timeline
        .devices
        .iter()
        .flat_map(|d| d.ooms.iter().copied())
        .collect();
    ooms.sort_unstable();
    // The first detail of each event, found by a binary search.
    let mut details: Vec<(u32, Option<u64>)> = (rec.oom_details.iter())
        .map(|o| (o.event, o.device_free_bytes))
        .collect();
    details.sort_by_key(|&(event, _)| event);
    for i in ooms {
        let Some(e) = rec.mem_events.get(i as usize) else {
            continue;
        };
        let Some(d) = timeline.devices.get(e.device as usize) else {
            continue;
        };
        let first = details.partition_point(|&(event, _)| event < i);
        let device_free = (details.get(first))
            .filter(|&&(event, _)| event == i)
            .and_then(|&(_, free)| free);
        let point = d.at(e.time_ns);
        let allocated = point.map_or(0, |p| p.allocated_bytes);
        let reserved = point.and_then(|p| p.reserved_bytes);
        let cache_free = reserved.map(|r| r - allocated);
        let largest = fragmentation_at(rec, timeline, e.device, e.time_ns)
            .map(|f| f.largest_free_block_bytes);
        let capacity = rec
            .devices
            .get(e.device as usize)
            .and_then(|d| d.total_memory_bytes);
        let outside = match (capacity, reserved, device_free) {
            (Some(c), Some(r), Some(f)) => Some(c as i64 - r - f as i64),
            _ => None,
        };
        let (cause, verdict) = judge(
            e.bytes,
            device_free,
            allocated,
            cache_free,
            largest,
            outside,
        );
        out.push(OomVerdict {
            device: rec
                .devices
                .get(e.device as usize)
                .map_or(DeviceId::CPU, |d| d.key),
            at_ns: e.time_ns,
            requested_bytes: e.bytes,
            device_free_bytes: device_free,
            allocated_bytes: allocated,
            reserved_bytes: reserved,
            cache_free_bytes: cache_free,
            largest_free_block_bytes: largest,
            outside_allocator_bytes: outside,
            cause,
            verdict,
            largest_live: live_at(rec, timeline, e.device, e.time_ns, GroupBy::Site)
                .groups
                .into_iter()
                .filter(|g| g.kind.is_seen())
                .take(OOM_GROUPS)
                .collect(),
        });
    }
    out
}

/// The decision, in order: a usable cached block → stream/pool; enough free memory in
/// total → fragmentation; a large share held outside the allocator → outside; else capacity.
fn judge(
    requested: i64,
    device_free: Option<u64>,
    allocated: i64,
    cache_free: Option<i64>,
    largest: Option<i64>,
    outside: Option<i64>,
) -> (OomCause, String) {
    let want = bytes_iec(requested);
    let free = device_free.map_or(0, |f| f as i64);
    let cache = cache_free.unwrap_or(0);
    if let Some(l) = largest
        && l >= requested
    {
        return (
            OomCause::StreamOrPool,
            format!(
                "a cached free block of {} could hold the {want} request, but it belongs to another stream or memory pool",
                bytes_iec(l)
            ),
        );
    }
    if cache + free >= requested {
        let largest_text =
            largest.map_or(String::new(), |l| format!(", the largest {}", bytes_iec(l)));
        return (
            OomCause::Fragmentation,
            format!(
                "fragmentation: {} is free in the allocator's cache{largest_text} and {} on the device, but no single block of {want}; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                bytes_iec(cache),
                bytes_iec(free)
            ),
        );
    }
    if let Some(o) = outside
        && o > 0
        && o + cache + free >= requested
    {
        return (
            OomCause::OutsideAllocator,
            format!(
                "memory held outside this allocator ({}: other processes, the CUDA context, NCCL buffers) leaves too little for the {want} request",
                bytes_iec(o)
            ),
        );
    }
    (
        OomCause::Capacity,
        format!(
            "capacity: live tensors hold {}, with {} cached and {} free on the device — not enough for {want}; reduce batch size or activation memory (checkpointing, mixed precision)",
            bytes_iec(allocated),
            bytes_iec(cache),
            bytes_iec(free)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: i64 = 1 << 20;

    #[test]
    fn verdicts() {
        let cases = [
            // requested, device free, allocated, cache free, largest, outside → cause
            (
                60 * MIB,
                Some(12 << 20),
                100 * MIB,
                Some(90 * MIB),
                Some(20 * MIB),
                None,
                OomCause::Fragmentation,
            ),
            (
                300 * MIB,
                Some(30 << 20),
                180 * MIB,
                Some(40 * MIB),
                Some(20 * MIB),
                None,
                OomCause::Capacity,
            ),
            (
                10 * MIB,
                Some(0),
                100 * MIB,
                Some(40 * MIB),
                Some(20 * MIB),
                None,
                OomCause::StreamOrPool,
            ),
            (
                300 * MIB,
                Some(10 << 20),
                100 * MIB,
                Some(0),
                None,
                Some(4096 * MIB),
                OomCause::OutsideAllocator,
            ),
        ];
        for (req, free, alloc, cache, largest, outside, want) in cases {
            let (cause, text) = judge(req, free, alloc, cache, largest, outside);
            assert_eq!(cause, want, "{text}");
            assert!(text.contains(&bytes_iec(req)), "{text}");
        }
    }
}
