//! The allocator's cache as stacked bands: memory_viz's "Active Cached Memory Timeline".
//! Each segment (a `cudaMalloc`, or a mapped range of an expandable segment) is a band over
//! its lifetime, stacked the way the allocation view stacks allocations — a segment is an
//! allocation of the cache — so the stack's top is the reserved total at every instant.
//!
//! The segments are the timeline's reserved ranges paired by address
//! ([`DeviceTimeline::segments`]), with what a view says of each ([`SegmentLife`]: stream,
//! when made — or before the history began —, when freed, stack). They are laid out by the
//! allocation view's own walk ([`BandLayout`]) over a device timeline of their own whose
//! allocations are the segments ([`CacheBands::timeline`]), so offsets, moves, the
//! level-of-detail index and the band under a point come from one piece of code. Each
//! allocation is placed in the segment that held its address ([`CacheBands::segment_of`]),
//! so a view can say how much of a segment was in use at an instant
//! ([`CacheBands::in_use_at`]) and draw it over time ([`CacheBands::in_use_curve`]).

use std::collections::BTreeMap;

use super::layout::{BandLayout, Step};
use crate::model::{MemEventKind, Recording, StackId};
use crate::timeline::{Allocation, DeviceTimeline, SegmentSpan, TotalsSource};

type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// No segment: an allocation whose address no live segment held.
const NO_SEGMENT: u32 = u32::MAX;

/// One segment's life on a device.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentLife {
    /// Start address, where the source says.
    pub addr: Option<u64>,
    /// Reserved bytes.
    pub bytes: i64,
    /// The CUDA stream it was made for, where the source says (snapshots).
    pub stream: Option<u64>,
    /// When it was reserved; `None` when it was already reserved when the snapshot's
    /// history began (its band starts there).
    pub alloc_ns: Option<i64>,
    /// When it was released; `None` when it was still reserved at the end.
    pub free_ns: Option<i64>,
    /// The stack of the `segment_alloc`/`segment_map` that made it, where recorded.
    pub stack: Option<StackId>,
    /// The band's own times: from `alloc_ns` (or the history's start) to `free_ns`.
    pub span: SegmentSpan,
}

/// The segments of device `d` over time, in the order they were reserved (the
/// timeline's pairing of segment events by address; the rest of a range released in part
/// continues it: same stream, stack and making time). Empty where the source records no
/// segments (a profiler trace). O(segments + the allocator history's entries).
pub fn segment_lives(rec: &Recording, d: &DeviceTimeline) -> Vec<SegmentLife> {
    let history_start_ns = rec
        .allocator
        .as_ref()
        .and_then(|_| d.points.first())
        .map(|p| p.time_ns);
    let streams = Streams::build(rec, d);
    let mut by_end: HashMap<u32, usize> = HashMap::default();
    let mut out: Vec<SegmentLife> = Vec::with_capacity(d.segments.len());
    for (k, s) in d.segments.iter().enumerate() {
        let event = rec.mem_events.get(s.start_event as usize);
        // The rest of a range released in part begins at the release: it is the range's.
        let continued = event
            .filter(|e| e.kind == MemEventKind::SegmentFree)
            .and_then(|_| by_end.get(&s.start_event))
            .and_then(|&j| out.get(j));
        let life = match continued {
            Some(whole) => SegmentLife {
                addr: s.addr,
                bytes: s.bytes,
                free_ns: s.end_ns,
                span: *s,
                ..whole.clone()
            },
            None => {
                let stack = event.and_then(|e| e.stack);
                let before = history_start_ns == Some(s.start_ns) && stack.is_none();
                SegmentLife {
                    addr: s.addr,
                    bytes: s.bytes,
                    stream: s.addr.and_then(|a| streams.of(a, s.start_ns, before)),
                    alloc_ns: (!before).then_some(s.start_ns),
                    free_ns: s.end_ns,
                    stack,
                    span: *s,
                }
            }
        };
        if let Some(end) = s.end_event {
            by_end.insert(end, k);
        }
        out.push(life);
    }
    out
}

/// Where a snapshot says which stream a segment was made for: its `segment_alloc` or
/// `segment_map` entry, else the segment (at the history's start or at the end) that
/// holds its address.
struct Streams {
    /// (address, time) of each segment entry of the history, to its stream.
    made: HashMap<(u64, i64), u64>,
    /// The snapshot's segments (at the history's start, then at the end) as (start, end,
    /// stream), by start address.
    held: Vec<(u64, u64, u64)>,
}

impl Streams {
    fn build(rec: &Recording, d: &DeviceTimeline) -> Streams {
        let mut s = Streams {
            made: HashMap::default(),
            held: Vec::new(),
        };
        let Some(state) = &rec.allocator else {
            return s;
        };
        let history = state.history.iter().filter(|h| h.device == d.device);
        for h in history.clone() {
            for e in &h.entries {
                use crate::model::HistoryAction::{SegmentAlloc, SegmentMap};
                if matches!(e.action, SegmentAlloc | SegmentMap) {
                    s.made.insert((e.addr, e.time_ns), e.stream);
                }
            }
        }
        let start = history.flat_map(|h| h.start.iter());
        let end = state.segments.iter().filter(|g| g.device == d.device);
        for g in start.chain(end) {
            let until = g.address.saturating_add(g.total_size_bytes);
            s.held.push((g.address, until, g.stream));
        }
        s.held.sort_by_key(|h| h.0);
        s
    }

    /// The stream of the segment at `addr` made at `time_ns` (`before` the history).
    fn of(&self, addr: u64, time_ns: i64, before: bool) -> Option<u64> {
        let made = (!before).then(|| self.made.get(&(addr, time_ns)).copied());
        made.flatten().or_else(|| {
            let n = self.held.partition_point(|h| h.0 <= addr);
            let h = self.held.get(n.checked_sub(1)?)?;
            (addr < h.1).then_some(h.2)
        })
    }
}

/// A device's segments as stacked bands, and the allocations placed in them.
#[derive(Clone, Debug)]
pub struct CacheBands {
    /// Each segment, in band order.
    pub lives: Vec<SegmentLife>,
    /// The cache as a device timeline of its own: each segment one of its allocations (band
    /// `i` is `lives[i]`), its curve the reserved total after each segment event. What
    /// [`BandLayout`]'s methods and index take for these bands.
    pub timeline: DeviceTimeline,
    /// The segments stacked as memory_viz stacks them.
    pub layout: BandLayout,
    /// Each allocation's segment (parallel to the device's allocations), or [`NO_SEGMENT`].
    segment_of: Vec<u32>,
    /// The allocations of each segment: `members[member_start[s]..member_start[s + 1]]`,
    /// in the order they were made.
    members: Vec<u32>,
    member_start: Vec<u32>,
}

impl CacheBands {
    /// The segments of `d` stacked, and its allocations placed in them; `None` where the
    /// source records no segments. Two walks of the device's events.
    pub fn build(rec: &Recording, d: &DeviceTimeline) -> Option<CacheBands> {
        let lives = segment_lives(rec, d);
        if lives.is_empty() {
            return None;
        }
        let starts: HashMap<u32, u32> = (lives.iter().enumerate())
            .map(|(k, l)| (l.span.start_event, k as u32))
            .collect();
        let ends: HashMap<u32, u32> = (lives.iter().enumerate())
            .filter_map(|(k, l)| Some((l.span.end_event?, k as u32)))
            .collect();
        let timeline = cache_timeline(rec, d, &lives);
        let end_ns = d.points.last().map_or(0, |p| p.time_ns);
        let steps = d.points.iter().enumerate().filter_map(|(step, p)| {
            let added = starts.get(&p.event).copied();
            let removed = ends.get(&p.event).map(|&k| (k, Some(p.event)));
            (added.is_some() || removed.is_some()).then_some(Step {
                step: step as u32,
                time_ns: p.time_ns,
                total_bytes: p.reserved_bytes.get().unwrap_or(0),
                removed,
                added,
            })
        });
        let layout = BandLayout::walk(&timeline, end_ns, steps);
        let segment_of = place(rec, d, &lives, (&starts, &ends));
        let (members, member_start) = group(&segment_of, lives.len());
        Some(CacheBands {
            lives,
            timeline,
            layout,
            segment_of,
            members,
            member_start,
        })
    }

    /// The segment that held allocation `i`'s address when it was made.
    pub fn segment_of(&self, i: usize) -> Option<usize> {
        let s = *self.segment_of.get(i)?;
        (s != NO_SEGMENT).then_some(s as usize)
    }

    /// The allocations made in segment `s` (indices into the device's allocations).
    pub fn blocks_of(&self, s: usize) -> &[u32] {
        let at = |k: usize| self.member_start.get(k).map_or(0, |&v| v as usize);
        self.members.get(at(s)..at(s + 1)).unwrap_or(&[])
    }

    /// Bytes of segment `s` handed out at `time_ns`: its allocations live then. O(its
    /// allocations).
    pub fn in_use_at(&self, d: &DeviceTimeline, s: usize, time_ns: i64) -> i64 {
        let live =
            |a: &&Allocation| a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns);
        (self.blocks_of(s).iter())
            .filter_map(|&i| d.allocations.get(i as usize))
            .filter(live)
            .map(|a| a.bytes)
            .sum()
    }

    /// Bytes of segment `s` handed out over time: (time, bytes from then on), from 0 where
    /// its band begins, one point a time at which its allocations change. What a view draws
    /// as the part of the segment in use. O(its allocations · log).
    pub fn in_use_curve(&self, d: &DeviceTimeline, s: usize) -> Vec<(i64, i64)> {
        let Some(band) = self.timeline.allocations.get(s) else {
            return Vec::new();
        };
        let mut changes: Vec<(i64, i64)> = vec![(band.alloc_ns, 0)];
        for a in (self.blocks_of(s).iter()).filter_map(|&i| d.allocations.get(i as usize)) {
            changes.push((a.alloc_ns, a.bytes));
            changes.extend(a.free_ns.get().map(|f| (f, -a.bytes)));
        }
        changes.sort_by_key(|c| c.0);
        let mut curve: Vec<(i64, i64)> = Vec::with_capacity(changes.len());
        let mut bytes = 0i64;
        for (t, change) in changes {
            bytes += change;
            match curve.last_mut() {
                Some(last) if last.0 == t => last.1 = bytes,
                _ => curve.push((t, bytes)),
            }
        }
        curve
    }
}

/// The segments as a device timeline: each an allocation, the reserved total as its curve.
fn cache_timeline(rec: &Recording, d: &DeviceTimeline, lives: &[SegmentLife]) -> DeviceTimeline {
    let thread = |event: u32| rec.mem_events.get(event as usize).map_or(0, |e| e.thread);
    let allocations = (lives.iter())
        .map(|l| Allocation {
            addr: l.addr.unwrap_or(0),
            bytes: l.bytes,
            alloc_ns: l.span.start_ns,
            free_ns: l.span.end_ns.into(),
            alloc_event: l.span.start_event,
            thread: thread(l.span.start_event),
        })
        .collect();
    let is_segment = |p: &&crate::timeline::SeriesPoint| {
        (rec.mem_events.get(p.event as usize)).is_some_and(|e| e.kind.is_segment())
    };
    let points: Vec<_> = (d.points.iter().filter(is_segment))
        .map(|p| crate::timeline::SeriesPoint {
            allocated_bytes: p.reserved_bytes.get().unwrap_or(0),
            ..*p
        })
        .collect();
    let peak = (points.iter().enumerate())
        .max_by_key(|(k, p)| (p.allocated_bytes, std::cmp::Reverse(*k)))
        .map(|(k, _)| k);
    DeviceTimeline {
        device: d.device,
        allocated_known: true,
        totals: TotalsSource::Trace,
        reserved_known: true,
        allocations,
        unmatched_frees: 0,
        segments: Vec::new(),
        ooms: Vec::new(),
        counts: d.counts,
        peak_allocated: peak,
        peak_reserved: peak,
        points,
    }
}

/// Each allocation's segment: the one live then whose range holds its address (one walk of
/// the device's events, the live segments by address).
fn place(
    rec: &Recording,
    d: &DeviceTimeline,
    lives: &[SegmentLife],
    (starts, ends): (&HashMap<u32, u32>, &HashMap<u32, u32>),
) -> Vec<u32> {
    let mut segment_of = vec![NO_SEGMENT; d.allocations.len()];
    let mut live: BTreeMap<u64, u32> = BTreeMap::new();
    let mut next = 0usize;
    for p in &d.points {
        let Some(e) = rec.mem_events.get(p.event as usize) else {
            continue;
        };
        if let Some(&k) = ends.get(&p.event)
            && let Some(addr) = lives.get(k as usize).and_then(|l| l.addr)
        {
            live.remove(&addr);
        }
        if let Some(&k) = starts.get(&p.event)
            && let Some(addr) = lives.get(k as usize).and_then(|l| l.addr)
        {
            live.insert(addr, k);
        }
        let (MemEventKind::Alloc, Some(addr)) = (e.kind, e.addr.get()) else {
            continue;
        };
        // The timeline pairs allocations in this order: the next one is this event's.
        let Some(a) = d.allocations.get(next).filter(|a| a.alloc_event == p.event) else {
            continue;
        };
        next += 1;
        let holder = live.range(..=addr).next_back().filter(|&(&from, &k)| {
            let bytes = lives.get(k as usize).map_or(0, |l| l.bytes.max(0) as u64);
            addr.saturating_add(a.bytes.max(0) as u64) <= from.saturating_add(bytes)
        });
        if let (Some((_, &k)), Some(slot)) = (holder, segment_of.get_mut(next - 1)) {
            *slot = k;
        }
    }
    segment_of
}

/// The allocations grouped by segment, each group in allocation order: (members, the start
/// of each segment's run, one more than the segments).
fn group(segment_of: &[u32], segments: usize) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; segments + 1];
    for &s in segment_of.iter().filter(|&&s| s != NO_SEGMENT) {
        if let Some(c) = start.get_mut(s as usize + 1) {
            *c += 1;
        }
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut fill = start.clone();
    let mut members = vec![0u32; start.last().copied().unwrap_or(0) as usize];
    for (i, &s) in segment_of.iter().enumerate() {
        let Some(at) = fill.get_mut(s as usize).filter(|_| s != NO_SEGMENT) else {
            continue;
        };
        if let Some(m) = members.get_mut(*at as usize) {
            *m = i as u32;
        }
        *at += 1;
    }
    (members, start)
}
