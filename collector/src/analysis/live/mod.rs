//! What was live at an instant: the allocations alive then, grouped by where they were
//! made — the first user frames of their allocation stack where the source records
//! stacks (allocator snapshots), else the op that was running when they were allocated,
//! or by op, stack or category on request — and the bytes the allocator counted that no
//! allocation seen holds (allocated before the trace began), so the groups sum exactly to
//! the allocated bytes then.

mod frames;
mod groups;

pub use frames::{frame_label, is_library_file, without_directory};
pub use groups::{
    GroupBy, GroupKind, LiveGroup, NO_MODULES, OUTSIDE_MODULES, SITE_FRAMES, fold_after,
    live_groups,
};

use crate::model::{DeviceIdx, Recording};
use crate::timeline::Timeline;

/// An instant a user asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instant {
    /// The device's allocated peak.
    Peak,
    /// The device's last memory event.
    End,
    /// The device's first out-of-memory event.
    FirstOom,
    /// A time, ns on the recording's clock.
    At(i64),
}

/// Why a question about live memory has no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveError {
    /// The recording has no device with that ordinal.
    NoDevice(i32),
    /// No device has allocations (a profiler trace without `profile_memory=True`).
    NoAllocations,
    /// The chosen device has no allocations (Nsight sees only reserved memory).
    NoAllocationsOnDevice,
    /// The device has no such instant (no OOM, say).
    NoInstant(Instant),
}

/// What was live on one device at one instant: the allocator's totals then and the live
/// allocations, grouped. The CLI's `live`, the report and the viewer's inspector all ask this.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveAt {
    /// The device.
    pub device: DeviceIdx,
    /// The instant, ns on the recording's clock.
    pub time_ns: i64,
    /// Allocated bytes then, where the source knows allocated memory.
    pub allocated_bytes: Option<i64>,
    /// Reserved bytes then, where known.
    pub reserved_bytes: Option<i64>,
    /// Bytes of the live allocations seen.
    pub live_bytes: i64,
    /// Number of live allocations seen.
    pub live_blocks: u64,
    /// The live allocations grouped, and the remainder no allocation seen holds, largest
    /// first: their bytes sum to `allocated_bytes` (0 where unknown).
    pub groups: Vec<LiveGroup>,
}

/// The device a question is about: the one with ordinal `ordinal` (an accelerator before
/// the host), or, without one, the device with allocations whose peak is highest.
pub fn pick_device(
    rec: &Recording,
    timeline: &Timeline,
    ordinal: Option<i32>,
) -> Result<DeviceIdx, LiveError> {
    if let Some(n) = ordinal {
        return rec
            .devices
            .iter()
            .position(|d| d.key.index == n && d.key.is_accelerator())
            .or_else(|| rec.devices.iter().position(|d| d.key.index == n))
            .map(|i| i as DeviceIdx)
            .ok_or(LiveError::NoDevice(n));
    }
    (0..timeline.devices.len())
        .filter_map(|i| {
            let d = timeline.devices.get(i).filter(|d| d.allocated_known)?;
            let peak = d.peak_allocated.and_then(|p| d.points.get(p));
            Some((i, peak.map_or(0, |p| p.allocated_bytes)))
        })
        .max_by_key(|&(_, peak_bytes)| peak_bytes)
        .map(|(i, _)| i as DeviceIdx)
        .ok_or(LiveError::NoAllocations)
}

/// The time of `instant` on `device`, which must have allocations.
pub fn resolve_instant(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    instant: Instant,
) -> Result<i64, LiveError> {
    let d = timeline
        .devices
        .get(device as usize)
        .filter(|d| d.allocated_known)
        .ok_or(LiveError::NoAllocationsOnDevice)?;
    let time_ns = match instant {
        Instant::Peak => d
            .peak_allocated
            .and_then(|p| d.points.get(p))
            .map(|p| p.time_ns),
        Instant::End => d.points.last().map(|p| p.time_ns),
        Instant::FirstOom => rec
            .mem_events
            .iter()
            .find(|e| e.kind == crate::model::MemEventKind::OutOfMemory && e.device == device)
            .map(|e| e.time_ns),
        Instant::At(time_ns) => Some(time_ns),
    };
    time_ns.ok_or(LiveError::NoInstant(instant))
}

/// What was live on `device` at `time_ns`, grouped `by`.
pub fn live_at(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
    by: GroupBy,
) -> LiveAt {
    let d = timeline.devices.get(device as usize);
    let point = d.and_then(|d| d.at(time_ns));
    let mut groups = live_groups(rec, timeline, device, time_ns, by);
    let live_bytes = groups.iter().map(|g| g.bytes).sum();
    let live_blocks = groups.iter().map(|g| g.blocks).sum();
    let allocated_bytes = point
        .filter(|_| d.is_some_and(|d| d.allocated_known))
        .map(|p| p.allocated_bytes);
    if let (Some(d), Some(total)) = (d, allocated_bytes)
        && let Some(rest) = groups::remainder(rec, d, total, live_bytes)
    {
        groups.push(rest);
        groups::sort_groups(&mut groups);
    }
    let total = allocated_bytes.unwrap_or(0);
    for g in &mut groups {
        g.share = if total == 0 {
            0.0
        } else {
            g.bytes as f64 / total as f64
        };
    }
    LiveAt {
        device,
        time_ns,
        allocated_bytes,
        reserved_bytes: point.and_then(|p| p.reserved_bytes.get()),
        live_bytes,
        live_blocks,
        groups,
    }
}

#[cfg(test)]
mod tests;
