//! The simulation's input, per device: an allocator snapshot's history as the allocator
//! recorded it (requested sizes, streams, the segments when it begins), or for a trace
//! whose memory events carry addresses, its allocations and frees from an empty allocator
//! (sizes as the trace gives them, the default stream); and the device's capacity.

use std::borrow::Cow;

use rustc_hash::FxHashSet;

use crate::model::{
    Block, BlockState, DeviceClass, DeviceHistory, DeviceIdx, HistoryAction, HistoryEntry,
    MemEvent, MemEventKind, Recording, Segment, SegmentPool,
};

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

/// Per accelerator, from the memory events that carry an address: a block freed in the
/// trace but not allocated in it was live when it began (each taken as its own segment:
/// the trace does not say which it shared); what the first event's allocated total holds
/// beyond them is carried.
fn from_events(rec: &Recording) -> Vec<History<'_>> {
    let mut out = Vec::new();
    let orders = crate::timeline::events_in_time_order(rec);
    for ((device, info), order) in rec.devices.iter().enumerate().zip(&orders) {
        if info.key.device_type.class() != DeviceClass::Accelerator {
            continue;
        }
        let device = device as DeviceIdx;
        let events = order.iter().map(|&i| &rec.mem_events[i as usize]);
        if let Some(h) = device_from_events(device, events) {
            out.push(h);
        }
    }
    out
}

fn device_from_events<'r>(
    device: DeviceIdx,
    events: impl Iterator<Item = &'r MemEvent>,
) -> Option<History<'r>> {
    let mut h = DeviceHistory {
        device,
        ..DeviceHistory::default()
    };
    let (mut peak, mut first_allocated) = (None::<u64>, None::<i64>);
    let mut live: FxHashSet<u64> = FxHashSet::default();
    let mut before: Vec<(u64, u64)> = Vec::new();
    for e in events {
        if let Some(r) = e.total_reserved_bytes.get().filter(|&r| r > 0) {
            peak = Some(peak.unwrap_or(0).max(r as u64));
        }
        let (action, addr) = match (e.kind, e.addr.get()) {
            (MemEventKind::OutOfMemory, _) => (HistoryAction::Oom, 0),
            (MemEventKind::Alloc, Some(a)) => (HistoryAction::Alloc, a),
            (MemEventKind::Free, Some(a)) => (HistoryAction::FreeCompleted, a),
            _ => continue,
        };
        if first_allocated.is_none() && e.kind.is_allocation() {
            first_allocated = e.total_allocated_bytes.get().map(|t| t - e.bytes);
        }
        let size = e.bytes.unsigned_abs();
        match action {
            HistoryAction::Alloc => {
                live.insert(addr);
            }
            HistoryAction::FreeCompleted if !live.remove(&addr) => before.push((addr, size)),
            _ => {}
        }
        h.entries.push(HistoryEntry {
            time_ns: e.time_ns,
            action,
            addr,
            size_bytes: size,
            stream: 0,
            device_free_bytes: None,
            stack: e.stack,
        });
    }
    if !h.entries.iter().any(|e| e.action == HistoryAction::Alloc) {
        return None;
    }
    let seen: u64 = before.iter().map(|&(_, size)| size).sum();
    h.carried_bytes = first_allocated.map_or(0, |t| (t.max(0) as u64).saturating_sub(seen));
    before.sort_unstable();
    h.start = (before.into_iter())
        .map(|(address, size)| Segment {
            device,
            address,
            total_size_bytes: size,
            allocated_size_bytes: size,
            active_size_bytes: size,
            requested_size_bytes: size,
            stream: 0,
            pool: SegmentPool::Other,
            expandable: false,
            private_pool: None,
            blocks: vec![Block {
                address,
                size_bytes: size,
                requested_size_bytes: size,
                state: BlockState::ActiveAllocated,
                stack: None,
            }],
        })
        .collect();
    Some(History {
        history: Cow::Owned(h),
        snapshot_segments: None,
        measured_reserved_peak_bytes: peak,
    })
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
