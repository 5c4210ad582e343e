//! The stacking: one walk of a device's events, as memory_viz's `process_alloc_data`
//! walks them. The live allocations stay in the order they were made; an allocation goes
//! on top of the stack; a free takes its band out and every band above slides down by its
//! bytes; a change of the bytes allocated before the trace (a free of a block the trace
//! never saw allocated) moves every band. Each move is recorded, so a band's offset at
//! any time is a binary search in its own moves.

use super::lod::{BandIndex, BandQuery};
use crate::model::{DeviceIdx, MemEventKind, Recording};
use crate::timeline::DeviceTimeline;

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The most band moves kept per device: 16 bytes each, so 256 MiB at the cap (plus as
/// much again while they are sorted by band). memory_viz pays the same walk (every band
/// above a free moves); a training step's frees are mostly near the top of the stack, so
/// real runs stay far below (see docs/PERFORMANCE.md). Past the cap the layout says it is
/// truncated and later moves are not kept: bands after that keep their last offset.
pub const MAX_MOVES: usize = 16 << 20;

/// No free event.
const NO_EVENT: u32 = u32::MAX;

/// A band's new offset from a time on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    /// When it moved.
    pub time_ns: i64,
    /// Bytes below it from then on.
    pub offset_bytes: i64,
}

/// Every allocation of one device as a stacked band (parallel to `d.allocations`), the
/// bytes allocated before the trace as the band at the bottom, and the index a view
/// queries.
#[derive(Clone, Debug)]
pub struct BandLayout {
    /// The device.
    pub device: DeviceIdx,
    /// Each band's offset (bytes below it) when it was allocated.
    start_offsets: Vec<i64>,
    /// Band i's moves are `moves[move_start[i]..move_start[i + 1]]`, in time order.
    move_start: Vec<u32>,
    moves: Vec<Move>,
    /// Each allocation's free event (an index into `Recording::mem_events`).
    free_events: Vec<u32>,
    /// The ids of freed bands in the order of their frees.
    by_free: Vec<u32>,
    /// The bottom band: bytes allocated before the trace (the allocator's total minus the
    /// live allocations seen), as steps (time, bytes).
    pub before_trace: Vec<(i64, i64)>,
    /// The device's last event: bands never freed end there.
    pub end_ns: i64,
    /// Whether moves past [`MAX_MOVES`] were dropped.
    pub truncated: bool,
    /// Bands by size and lifetime, for views.
    pub index: BandIndex,
}

/// The stack while walking.
#[derive(Default)]
struct Stack {
    live: Vec<u32>,
    offsets: Vec<i64>,
    seen_bytes: i64,
    rest_bytes: i64,
}

impl BandLayout {
    /// Walk `d`'s events once and stack its allocations. O(events + moves).
    pub fn build(rec: &Recording, d: &DeviceTimeline) -> BandLayout {
        let n = d.allocations.len();
        let mut start_offsets = vec![0i64; n];
        let mut free_events = vec![NO_EVENT; n];
        let mut by_free = Vec::new();
        let mut raw: Vec<(u32, Move)> = Vec::new();
        let mut truncated = false;
        let mut before_trace = Vec::new();
        let mut stack = Stack::default();
        let mut at: HashMap<u64, u32> = HashMap::default();
        let mut next = 0u32;
        let bytes_of = |id: u32| d.allocations.get(id as usize).map_or(0, |a| a.bytes);
        for p in &d.points {
            let Some(e) = rec.mem_events.get(p.event as usize) else {
                continue;
            };
            if !e.kind.is_allocation() {
                continue;
            }
            let mut removed = None;
            let mut added = None;
            match (e.kind, e.addr) {
                (MemEventKind::Alloc, Some(addr)) => {
                    added = Some(next);
                    if let Some(prev) = at.insert(addr, next) {
                        removed = Some(prev);
                    }
                    next += 1;
                }
                (MemEventKind::Free, Some(addr)) => {
                    if let Some(id) = at.remove(&addr) {
                        removed = Some(id);
                        if let Some(f) = free_events.get_mut(id as usize) {
                            *f = p.event;
                        }
                    }
                }
                _ => {}
            }
            let (pos, gone) = match removed {
                Some(id) => {
                    by_free.push(id);
                    (stack.remove(id), bytes_of(id))
                }
                None => (stack.live.len(), 0),
            };
            let plus = added.map_or(0, bytes_of);
            stack.seen_bytes += plus - gone;
            let rest = p.allocated_bytes - stack.seen_bytes;
            let delta = rest - stack.rest_bytes;
            if delta != 0 {
                before_trace.push((p.time_ns, rest));
                stack.rest_bytes = rest;
            }
            truncated |= stack.slide(pos, gone, delta, p.time_ns, &mut raw);
            if let Some(id) = added {
                let offset = p.allocated_bytes - plus;
                if let Some(s) = start_offsets.get_mut(id as usize) {
                    *s = offset;
                }
                stack.live.push(id);
                stack.offsets.push(offset);
            }
        }
        let (move_start, moves) = by_band(n, raw);
        let end_ns = d.points.last().map_or(0, |p| p.time_ns);
        BandLayout {
            device: d.device,
            start_offsets,
            move_start,
            moves,
            free_events,
            by_free,
            before_trace,
            end_ns,
            truncated,
            index: BandIndex::build(d, end_ns),
        }
    }

    /// Number of bands.
    pub fn len(&self) -> usize {
        self.start_offsets.len()
    }

    /// Whether there are no bands.
    pub fn is_empty(&self) -> bool {
        self.start_offsets.is_empty()
    }

    /// Band `i`'s moves, in time order.
    pub fn moves(&self, i: usize) -> &[Move] {
        let from = self.move_start.get(i).copied().unwrap_or(0) as usize;
        let to = self.move_start.get(i + 1).copied().unwrap_or(0) as usize;
        self.moves.get(from..to.max(from)).unwrap_or(&[])
    }

    /// Band `i`'s offset when it was allocated.
    pub fn start_offset(&self, i: usize) -> i64 {
        self.start_offsets.get(i).copied().unwrap_or(0)
    }

    /// Band `i`'s offset (bytes below it) at `time_ns` (its offset when allocated before any
    /// move).
    pub fn offset_at(&self, i: usize, time_ns: i64) -> i64 {
        let moves = self.moves(i);
        let n = moves.partition_point(|m| m.time_ns <= time_ns);
        n.checked_sub(1)
            .and_then(|k| moves.get(k))
            .map_or(self.start_offset(i), |m| m.offset_bytes)
    }

    /// The bytes allocated before the trace at `time_ns`: the bottom band's height.
    pub fn before_trace_at(&self, time_ns: i64) -> i64 {
        let n = self.before_trace.partition_point(|s| s.0 <= time_ns);
        n.checked_sub(1)
            .and_then(|k| self.before_trace.get(k))
            .map_or(0, |s| s.1)
    }

    /// The event that freed allocation `i`, if the trace has it.
    pub fn free_event(&self, i: usize) -> Option<u32> {
        self.free_events.get(i).copied().filter(|&e| e != NO_EVENT)
    }

    /// The freed bands in the order of their frees.
    pub fn by_free(&self) -> &[u32] {
        &self.by_free
    }

    /// The band under (`time_ns`, `offset_bytes`): the allocation live then whose band
    /// covers that height.
    pub fn band_at(&self, d: &DeviceTimeline, time_ns: i64, offset_bytes: i64) -> Option<usize> {
        let mut ids = Vec::new();
        let q = BandQuery {
            t0_ns: time_ns,
            t1_ns: time_ns,
            min_bytes: 1,
            min_life_ns: 0,
        };
        self.index.visible(&q, &mut ids);
        ids.into_iter().map(|i| i as usize).find(|&i| {
            let Some(a) = d.allocations.get(i) else {
                return false;
            };
            let live = a.alloc_ns <= time_ns && a.free_ns.is_none_or(|f| f > time_ns);
            let low = self.offset_at(i, time_ns);
            live && low <= offset_bytes && offset_bytes < low + a.bytes
        })
    }
}

impl Stack {
    /// Move the bands from `pos` up down by `gone` bytes (a free there) and every band by
    /// `delta` (a change of the bytes before the trace), recording each move at `time_ns`
    /// while under [`MAX_MOVES`]; returns whether a move was dropped.
    fn slide(
        &mut self,
        pos: usize,
        gone: i64,
        delta: i64,
        time_ns: i64,
        raw: &mut Vec<(u32, Move)>,
    ) -> bool {
        let mut dropped = false;
        // Without a change below the trace, only the bands above a free move.
        let from = if delta == 0 { pos } else { 0 };
        let bands = self.live.iter().zip(self.offsets.iter_mut());
        for (k, (&id, offset)) in bands.enumerate().skip(from) {
            let shift = delta - if k >= pos { gone } else { 0 };
            if shift == 0 {
                continue;
            }
            *offset += shift;
            if raw.len() < MAX_MOVES {
                let m = Move {
                    time_ns,
                    offset_bytes: *offset,
                };
                raw.push((id, m));
            } else {
                dropped = true;
            }
        }
        dropped
    }

    /// Take band `id` out; its position (bands from there up slide down).
    fn remove(&mut self, id: u32) -> usize {
        match self.live.binary_search(&id) {
            Ok(pos) => {
                self.live.remove(pos);
                self.offsets.remove(pos);
                pos
            }
            Err(_) => self.live.len(),
        }
    }
}

/// The moves grouped by band (stable: each band's stay in time order), as offsets into one
/// array.
fn by_band(n: usize, raw: Vec<(u32, Move)>) -> (Vec<u32>, Vec<Move>) {
    let mut start = vec![0u32; n + 1];
    for (id, _) in &raw {
        if let Some(c) = start.get_mut(*id as usize + 1) {
            *c += 1;
        }
    }
    let mut sum = 0;
    for c in &mut start {
        sum += *c;
        *c = sum;
    }
    let mut fill = start.clone();
    let blank = Move {
        time_ns: 0,
        offset_bytes: 0,
    };
    let mut moves = vec![blank; raw.len()];
    for (id, m) in raw {
        if let Some(slot) = fill.get_mut(id as usize) {
            if let Some(dst) = moves.get_mut(*slot as usize) {
                *dst = m;
            }
            *slot += 1;
        }
    }
    (start, moves)
}
