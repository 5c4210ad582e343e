//! The stacking: one walk of a device's events, as memory_viz's `process_alloc_data`
//! walks them. The live allocations stay in the order they were made; an allocation goes
//! on top of the stack; a free takes its band out and every band above slides down by its
//! bytes; a change of the bytes allocated before the trace (a free of a block the trace
//! never saw allocated) moves every band.
//!
//! The moves are not stored: a real trace makes ~90 per allocation (1.2 M for the 13 k
//! allocations of one HTA trace, ~230 M at 10 GB), memory_viz's walk records them all.
//! The walk keeps each band's offset when it was allocated and the removals in order
//! ([`Removals`]); a band's moves are the removals of older bands while it lives and the
//! changes below the trace then, found when a view asks: its offset at an instant
//! ([`BandLayout::offset_at`]) and its moves in view, one a pixel column at most
//! ([`BandLayout::moves_in`]). [`BandLayout::moves`] lists every one, as the walk would.

use super::lod::{BandIndex, BandQuery};
use super::removals::{NEVER, Removals};
use crate::model::{DeviceIdx, MemEventKind, Recording};
use crate::timeline::DeviceTimeline;

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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
    /// The walk step (index into the device's points) of each band's allocation.
    alloc_steps: Vec<u32>,
    /// The position of each band's removal in `removals`, or [`NEVER`].
    removed_at: Vec<u32>,
    /// Each allocation's free event (an index into `Recording::mem_events`).
    free_events: Vec<u32>,
    /// The bands taken off the stack (freed, or replaced at their address), in order.
    removals: Removals,
    /// The bottom band: bytes allocated before the trace (the allocator's total minus the
    /// live allocations seen), as steps (time, bytes).
    pub before_trace: Vec<(i64, i64)>,
    /// The walk step of each of `before_trace`'s changes.
    before_trace_steps: Vec<u32>,
    /// The device's last event: bands never freed end there.
    pub end_ns: i64,
    /// Bands by size and lifetime, for views.
    pub index: BandIndex,
}

/// A band's life in the walk: the removals while it lives are `from..to`.
struct Life {
    alloc_step: u32,
    end_step: u32,
    from: usize,
    to: usize,
}

/// A band's bytes.
fn bytes(d: &DeviceTimeline, band: u32) -> i64 {
    d.allocations.get(band as usize).map_or(0, |a| a.bytes)
}

/// One step of the walk: the band it takes off the stack (and the event that freed it,
/// where one did), the band it puts on top, and the total the stack then reaches.
pub(super) struct Step {
    /// The walk step's number (index into the points walked).
    pub step: u32,
    /// When.
    pub time_ns: i64,
    /// The allocator's total after it: the bytes no band holds are the bottom band.
    pub total_bytes: i64,
    /// The band taken off, and its free event where it was freed (not replaced).
    pub removed: Option<(u32, Option<u32>)>,
    /// The band put on top.
    pub added: Option<u32>,
}

impl BandLayout {
    /// Walk `d`'s events once and stack its allocations. O(events).
    pub fn build(rec: &Recording, d: &DeviceTimeline) -> BandLayout {
        let mut at: HashMap<u64, u32> = HashMap::default();
        let mut next = 0u32;
        let steps = d.points.iter().enumerate().filter_map(|(step, p)| {
            let e = rec.mem_events.get(p.event as usize)?;
            let (removed, added) = match (e.kind, e.addr.get()) {
                (MemEventKind::Alloc, Some(addr)) => {
                    next += 1;
                    (
                        at.insert(addr, next - 1).map(|id| (id, None)),
                        Some(next - 1),
                    )
                }
                (MemEventKind::Free, Some(addr)) => {
                    (at.remove(&addr).map(|id| (id, Some(p.event))), None)
                }
                _ if e.kind.is_allocation() => (None, None),
                _ => return None,
            };
            Some(Step {
                step: step as u32,
                time_ns: p.time_ns,
                total_bytes: p.allocated_bytes,
                removed,
                added,
            })
        });
        let end_ns = d.points.last().map_or(0, |p| p.time_ns);
        BandLayout::walk(d, end_ns, steps)
    }

    /// Stack `bands`' allocations by `steps` (in time order); bands never removed end at
    /// `end_ns`. What [`BandLayout::build`] does with a device's allocations, and the
    /// cached view with its segments (`cached.rs`). O(steps).
    pub(super) fn walk(
        bands: &DeviceTimeline,
        end_ns: i64,
        steps: impl IntoIterator<Item = Step>,
    ) -> BandLayout {
        let n = bands.allocations.len();
        let mut layout = BandLayout {
            device: bands.device,
            start_offsets: vec![0i64; n],
            alloc_steps: vec![NEVER; n],
            removed_at: vec![NEVER; n],
            free_events: vec![NO_EVENT; n],
            removals: Removals::default(),
            before_trace: Vec::new(),
            before_trace_steps: Vec::new(),
            end_ns,
            index: BandIndex::default(),
        };
        let (mut seen_bytes, mut rest_bytes) = (0i64, 0i64);
        let bytes_of = |id: u32| bytes(bands, id);
        for s in steps {
            let step = s.step;
            if let Some((id, freed_by)) = s.removed {
                if let (Some(f), Some(event)) = (layout.free_events.get_mut(id as usize), freed_by)
                {
                    *f = event;
                }
                if let Some(r) = layout.removed_at.get_mut(id as usize) {
                    *r = layout.removals.band.len() as u32;
                }
                layout.removals.push(id, bytes_of(id), step, s.time_ns);
            }
            let plus = s.added.map_or(0, bytes_of);
            seen_bytes += plus - s.removed.map_or(0, |(id, _)| bytes_of(id));
            let rest = s.total_bytes - seen_bytes;
            if rest != rest_bytes {
                layout.before_trace.push((s.time_ns, rest));
                layout.before_trace_steps.push(step);
                rest_bytes = rest;
            }
            if let Some(id) = s.added {
                if let Some(o) = layout.start_offsets.get_mut(id as usize) {
                    *o = s.total_bytes - plus;
                }
                if let Some(a) = layout.alloc_steps.get_mut(id as usize) {
                    *a = step;
                }
            }
        }
        layout.index = BandIndex::build(bands, layout.end_ns);
        layout
    }

    /// Number of bands.
    pub fn len(&self) -> usize {
        self.start_offsets.len()
    }

    /// Whether there are no bands.
    pub fn is_empty(&self) -> bool {
        self.start_offsets.is_empty()
    }

    /// Band `i`'s moves, in time order: one at each walk step that removes a band allocated
    /// before it or changes the bytes before the trace, while it is live. `d` is the
    /// device the layout was built from. O(moves) and a scan of the removals meanwhile that
    /// skips 64 at a time where none is older than `i`.
    pub fn moves(&self, d: &DeviceTimeline, i: usize) -> Vec<Move> {
        let Some(life) = self.life(i) else {
            return Vec::new();
        };
        // (step, time, shift) of the older bands' removals, then of the rest's changes.
        let mut shifts: Vec<(u32, i64, i64)> = Vec::new();
        let removals = &self.removals;
        removals.each_below(life.from, life.to, i as u32, |k| {
            let gone = bytes(d, removals.band[k]);
            shifts.push((removals.step[k], removals.time_ns[k], -gone));
        });
        let changes = self.rest_changes(&life);
        let mut previous_rest = changes
            .start
            .checked_sub(1)
            .map_or(0, |k| self.before_trace[k].1);
        for k in changes {
            let (time, rest) = self.before_trace[k];
            shifts.push((self.before_trace_steps[k], time, rest - previous_rest));
            previous_rest = rest;
        }
        shifts.sort_by_key(|s| s.0);
        let mut offset = self.start_offset(i);
        let mut moves: Vec<(u32, Move)> = Vec::with_capacity(shifts.len());
        for (step, time_ns, shift) in shifts {
            offset += shift;
            let m = Move {
                time_ns,
                offset_bytes: offset,
            };
            match moves.last_mut() {
                Some(last) if last.0 == step => last.1 = m,
                _ => moves.push((step, m)),
            }
        }
        // A step whose shifts cancel (a free below as the bytes before the trace grow by
        // as much) leaves the band where it was: not a move.
        let mut previous = self.start_offset(i);
        moves
            .into_iter()
            .map(|(_, m)| m)
            .filter(|m| std::mem::replace(&mut previous, m.offset_bytes) != m.offset_bytes)
            .collect()
    }

    /// Band `i`'s offset when it was allocated.
    pub fn start_offset(&self, i: usize) -> i64 {
        self.start_offsets.get(i).copied().unwrap_or(0)
    }

    /// Band `i`'s offset (bytes below it) at `time_ns` (its offset when allocated before any
    /// move): O(blocks of removals since it was allocated).
    pub fn offset_at(&self, d: &DeviceTimeline, i: usize, time_ns: i64) -> i64 {
        let Some(life) = self.life(i) else {
            return self.start_offset(i);
        };
        let upto = life.from
            + self.removals.time_ns[life.from..life.to].partition_point(|&t| t <= time_ns);
        self.start_offset(i) + self.rest_shift(&life, time_ns)
            - self
                .removals
                .bytes_below(life.from, upto, i as u32, |b| bytes(d, b))
    }

    /// Band `i`'s offset at `t0_ns`, and its moves after it up to `t1_ns`, at most one per
    /// `resolution_ns` (a pixel's width): the moves of each such column merged into its
    /// first, with the offset after its last. What a view draws, at O(columns with a move
    /// + blocks of removals).
    pub fn moves_in(
        &self,
        d: &DeviceTimeline,
        i: usize,
        (t0_ns, t1_ns): (i64, i64),
        resolution_ns: i64,
    ) -> (i64, Vec<Move>) {
        let Some(life) = self.life(i) else {
            return (self.start_offset(i), Vec::new());
        };
        let times = &self.removals.time_ns;
        let after = |t: i64| life.from + times[life.from..life.to].partition_point(|&x| x <= t);
        let (mut k, end) = (after(t0_ns), after(t1_ns));
        let res = resolution_ns.max(1);
        let column_end = |t: i64| t0_ns + (t.saturating_sub(t0_ns) / res + 1).saturating_mul(res);
        let mut changes: Vec<(i64, i64)> = Vec::new();
        while let Some(first) = self.removals.next_below(k, end, i as u32) {
            let t = times[first];
            let group_end = first + times[first..end].partition_point(|&x| x < column_end(t));
            let gone = self
                .removals
                .bytes_below(first, group_end, i as u32, |b| bytes(d, b));
            changes.push((t, -gone));
            k = group_end;
        }
        for k in self.rest_changes(&life) {
            let t = self.before_trace[k].0;
            if t > t0_ns && t <= t1_ns {
                let previous = k.checked_sub(1).map_or(0, |j| self.before_trace[j].1);
                changes.push((t, self.before_trace[k].1 - previous));
            }
        }
        changes.sort_by_key(|c| c.0);
        let at_start = self.offset_at(d, i, t0_ns);
        let mut offset = at_start;
        let mut moves: Vec<Move> = Vec::with_capacity(changes.len());
        for (time_ns, shift) in changes {
            offset += shift;
            match moves.last_mut() {
                Some(last) if column_end(last.time_ns) > time_ns => last.offset_bytes = offset,
                _ => moves.push(Move {
                    time_ns,
                    offset_bytes: offset,
                }),
            }
        }
        (at_start, moves)
    }

    /// Band `i`'s run of removals while it lives, and its walk steps.
    fn life(&self, i: usize) -> Option<Life> {
        let alloc_step = *self.alloc_steps.get(i)?;
        let removed_at = self.removed_at.get(i).copied().unwrap_or(NEVER);
        let to = if removed_at == NEVER {
            self.removals.band.len()
        } else {
            removed_at as usize
        };
        Some(Life {
            alloc_step,
            end_step: self.removals.step.get(to).copied().unwrap_or(NEVER),
            from: self.removals.first_after(alloc_step).min(to),
            to,
        })
    }

    /// How far the bytes before the trace moved a band between its allocation and
    /// `time_ns` (changes at later walk steps than its allocation only).
    fn rest_shift(&self, life: &Life, time_ns: i64) -> i64 {
        let changes = self.rest_changes(life);
        let first = changes.start;
        let upto = first + self.before_trace[changes].partition_point(|s| s.0 <= time_ns);
        let at = |k: usize| k.checked_sub(1).map_or(0, |j| self.before_trace[j].1);
        at(upto) - at(first)
    }

    /// The changes of the bytes before the trace while band `life` lives: those at later
    /// walk steps than its allocation and earlier than its removal.
    fn rest_changes(&self, life: &Life) -> std::ops::Range<usize> {
        let steps = &self.before_trace_steps;
        let first = steps.partition_point(|&s| s <= life.alloc_step);
        first..steps.partition_point(|&s| s < life.end_step).max(first)
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

    /// The bands taken off the stack, in the order of their removals.
    pub fn by_free(&self) -> &[u32] {
        &self.removals.band
    }

    /// Heap bytes (for PERFORMANCE.md).
    pub fn heap_bytes(&self) -> usize {
        self.start_offsets.capacity() * 8
            + (self.alloc_steps.capacity()
                + self.removed_at.capacity()
                + self.free_events.capacity()
                + self.before_trace_steps.capacity())
                * 4
            + self.before_trace.capacity() * 16
            + self.removals.heap_bytes()
            + self.index.heap_bytes()
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
            let live = a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns);
            let low = self.offset_at(d, i, time_ns);
            live && low <= offset_bytes && offset_bytes < low + a.bytes
        })
    }
}
