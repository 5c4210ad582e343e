//! The simulation's input, per device: an allocator snapshot's history as the allocator
//! recorded it (requested sizes, streams, the segments when it begins), or for a trace
//! whose memory events carry addresses, its allocations and frees from an empty allocator
//! (sizes as the trace gives them, the default stream); and the device's capacity.

use std::borrow::Cow;

use crate::model::{DeviceHistory, HistoryAction, HistoryEntry, MemEventKind, Recording, Segment};

/// One device's input.
pub struct History<'r> {
    /// Its history.
    pub history: Cow<'r, DeviceHistory>,
    /// The snapshot's segments of the device at its end (what the proof must end with).
    pub snapshot_segments: Option<Vec<Segment>>,
    /// The reserved peak the input recorded over the history.
    pub measured_reserved_peak_bytes: Option<u64>,
}

/// The memory the allocator could hold on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Capacity {
    /// Bytes.
    pub bytes: u64,
    /// Where it comes from.
    pub source: CapacitySource,
}

/// Where a capacity comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacitySource {
    /// `--capacity`.
    Asked,
    /// The first out-of-memory: what the allocator held then plus what the driver said
    /// was free (the memory this process's allocator could have).
    OutOfMemory,
    /// The device's total memory as the input records it (less what the CUDA context and
    /// other processes hold, which the input does not say).
    DeviceTotal,
}

/// Every device's history: the snapshot's where the load kept it, else one from the
/// recording's addressed memory events.
pub fn histories(rec: &Recording) -> Vec<History<'_>> {
    if let Some(state) = &rec.allocator
        && !state.history.is_empty()
    {
        return (state.history.iter())
            .map(|h| History {
                measured_reserved_peak_bytes: Some(recorded_reserved(h).1),
                snapshot_segments: Some(
                    (state.segments.iter())
                        .filter(|s| s.device == h.device)
                        .cloned()
                        .collect(),
                ),
                history: Cow::Borrowed(h),
            })
            .collect();
    }
    from_events(rec)
}

/// Per device, from the memory events that carry an address.
fn from_events(rec: &Recording) -> Vec<History<'_>> {
    let mut out: Vec<(DeviceHistory, Option<u64>)> = Vec::new();
    for e in &rec.mem_events {
        let addr = match (e.kind, e.addr) {
            (MemEventKind::OutOfMemory, _) => 0,
            (_, Some(addr)) => addr,
            (_, None) => continue,
        };
        let action = match e.kind {
            MemEventKind::Alloc => HistoryAction::Alloc,
            MemEventKind::Free => HistoryAction::FreeCompleted,
            MemEventKind::OutOfMemory => HistoryAction::Oom,
            MemEventKind::SegmentAlloc | MemEventKind::SegmentFree => continue,
        };
        let slot = match out.iter().position(|(h, _)| h.device == e.device) {
            Some(i) => i,
            None => {
                out.push((
                    DeviceHistory {
                        device: e.device,
                        ..DeviceHistory::default()
                    },
                    None,
                ));
                out.len() - 1
            }
        };
        let (h, peak) = &mut out[slot];
        if let Some(r) = e.total_reserved_bytes.filter(|&r| r > 0) {
            *peak = Some(peak.unwrap_or(0).max(r as u64));
        }
        h.entries.push(HistoryEntry {
            time_ns: e.time_ns,
            action,
            addr,
            size_bytes: e.bytes.unsigned_abs(),
            stream: 0,
            device_free_bytes: None,
        });
    }
    out.retain(|(h, _)| h.entries.iter().any(|e| e.action == HistoryAction::Alloc));
    out.into_iter()
        .map(|(h, peak)| History {
            history: Cow::Owned(h),
            snapshot_segments: None,
            measured_reserved_peak_bytes: peak,
        })
        .collect()
}

/// The reserved total as recorded at each out-of-memory, and its peak over the history.
fn recorded_reserved(h: &DeviceHistory) -> (Vec<(usize, u64)>, u64) {
    let mut reserved: u64 = h.start.iter().map(|s| s.total_size_bytes).sum();
    let mut peak = reserved;
    let mut at_oom = Vec::new();
    for (i, e) in h.entries.iter().enumerate() {
        match e.action {
            HistoryAction::SegmentAlloc | HistoryAction::SegmentMap => {
                reserved = reserved.saturating_add(e.size_bytes);
                peak = peak.max(reserved);
            }
            HistoryAction::SegmentFree | HistoryAction::SegmentUnmap => {
                reserved = reserved.saturating_sub(e.size_bytes);
            }
            HistoryAction::Oom => at_oom.push((i, reserved)),
            _ => {}
        }
    }
    (at_oom, peak)
}

/// The device's capacity for the allocator: asked for, else from the first out-of-memory
/// that says the free memory, else the device's total memory.
pub fn capacity_of(rec: &Recording, h: &History<'_>, asked: Option<u64>) -> Option<Capacity> {
    if let Some(bytes) = asked {
        return Some(Capacity {
            bytes,
            source: CapacitySource::Asked,
        });
    }
    let (at_oom, _) = recorded_reserved(&h.history);
    let from_oom = at_oom.iter().find_map(|&(i, reserved)| {
        let free = h.history.entries[i].device_free_bytes?;
        Some(reserved.saturating_add(free))
    });
    if let Some(bytes) = from_oom {
        return Some(Capacity {
            bytes,
            source: CapacitySource::OutOfMemory,
        });
    }
    let device = rec.devices.get(h.history.device as usize)?;
    device.total_memory_bytes.map(|bytes| Capacity {
        bytes,
        source: CapacitySource::DeviceTotal,
    })
}
