//! Memory reserved before the capture began: an export whose rows free a block they never
//! allocated would count the reserved memory from below zero. As a snapshot's replay does
//! with the state before its history, each such block is put in place at the capture's
//! start, and a note says how many and how much.

use rustc_hash::FxHashSet;

use crate::model::{MemEvent, MemEventKind, Recording};

/// Allocate at `start_ns` every segment `rec` frees without allocating it (per device and
/// address, in the order of the rows); note them.
pub(super) fn reserve_before_capture(rec: &mut Recording, start_ns: i64) {
    let mut live: FxHashSet<(u16, u64)> = FxHashSet::default();
    let mut before: Vec<MemEvent> = Vec::new();
    for e in &rec.mem_events {
        let Some(addr) = e.addr.get() else { continue };
        match e.kind {
            MemEventKind::SegmentAlloc => {
                live.insert((e.device, addr));
            }
            MemEventKind::SegmentFree if !live.remove(&(e.device, addr)) => {
                before.push(MemEvent {
                    time_ns: start_ns,
                    bytes: e.bytes.saturating_neg(),
                    kind: MemEventKind::SegmentAlloc,
                    ..*e
                });
            }
            _ => {}
        }
    }
    if before.is_empty() {
        return;
    }
    let bytes = before.iter().fold(0i64, |t, e| t.saturating_add(e.bytes));
    rec.diagnostics.note_n(
        &format!(
            "CUDA memory freed in the capture but reserved before it: counted from the capture's start ({bytes} bytes)"
        ),
        before.len() as u64,
    );
    before.append(&mut rec.mem_events);
    rec.mem_events = before;
}
