//! Pairing events by address: an allocation with its free, a reserved range with its
//! release.

use super::{Allocation, FreedAt, HashMap, SegmentSpan};
use crate::model::{MemEvent, MemEventKind, Recording};

/// The allocations among a device's events (indices into `rec.mem_events`, in time order),
/// each paired with its free by address; and how many frees found no live allocation at
/// their address (blocks allocated before the recording started).
pub(super) fn allocations(rec: &Recording, order: &[u32]) -> (Vec<Allocation>, u64) {
    let mut allocations = Vec::new();
    let mut live: HashMap<u64, usize> = HashMap::default();
    let mut unmatched_frees = 0;
    for &i in order {
        let e = &rec.mem_events[i as usize];
        if !matches!(e.kind, MemEventKind::Alloc | MemEventKind::Free) {
            continue;
        }
        let Some(addr) = e.addr.get() else { continue };
        if !allocation(&mut allocations, &mut live, e, addr, i) {
            unmatched_frees += 1;
        }
    }
    (allocations, unmatched_frees)
}

/// Pair an allocation event (number `event`, at `addr`) with its lifetime: an alloc opens
/// one, a free closes the one live at its address. Returns false for a free with no live
/// allocation at its address.
fn allocation(
    allocations: &mut Vec<Allocation>,
    live: &mut HashMap<u64, usize>,
    e: &MemEvent,
    addr: u64,
    event: u32,
) -> bool {
    if e.kind == MemEventKind::Alloc {
        if let Some(prev) = live.insert(addr, allocations.len()) {
            // An address handed out twice without a free in between: close the first.
            if let Some(a) = allocations.get_mut(prev) {
                let a: &mut Allocation = a;
                a.free_ns = e.time_ns.into();
            }
        }
        allocations.push(Allocation {
            addr,
            bytes: e.bytes,
            alloc_ns: e.time_ns,
            free_ns: FreedAt::LIVE_AT_END,
            alloc_event: event,
            thread: e.thread,
        });
    } else {
        match live.remove(&addr).and_then(|idx| allocations.get_mut(idx)) {
            Some(a) => a.free_ns = e.time_ns.into(),
            None => return false,
        }
    }
    true
}

/// Pair a segment event (number `event`) with its range: a release closes the range at its
/// address; a release of part of a range (expandable segments unmapping pages) closes it
/// and opens the rest anew.
pub(super) fn segment(
    segments: &mut Vec<SegmentSpan>,
    live: &mut HashMap<u64, usize>,
    e: &MemEvent,
    event: u32,
) {
    if e.kind == MemEventKind::SegmentAlloc {
        let idx = segments.len();
        segments.push(SegmentSpan {
            addr: e.addr.get(),
            bytes: e.bytes,
            start_ns: e.time_ns,
            end_ns: None,
            start_event: event,
            end_event: None,
        });
        if let Some(addr) = e.addr.get() {
            live.insert(addr, idx);
        }
        return;
    }
    let Some(addr) = e.addr.get() else { return };
    if let Some(idx) = live.remove(&addr)
        && let Some(s) = segments.get_mut(idx)
    {
        let released = -e.bytes;
        s.end_ns = Some(e.time_ns);
        s.end_event = Some(event);
        if released < s.bytes {
            // Part of the range goes: close it and reopen the rest after the released pages.
            let rest = SegmentSpan {
                addr: Some(addr + released as u64),
                bytes: s.bytes - released,
                start_ns: e.time_ns,
                end_ns: None,
                start_event: event,
                end_event: None,
            };
            live.insert(addr + released as u64, segments.len());
            segments.push(rest);
        }
    }
}
