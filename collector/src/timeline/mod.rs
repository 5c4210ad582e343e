//! The [`Timeline`]: derived, immutable views of a [`Recording`], built once.
//!
//! Per device: the allocated and reserved step series in time order, the allocations
//! paired by address (so "what was live at t" is a scan of intervals), and an index of
//! ops per thread that answers "which op was running at t" in O(log n + depth).

mod ops;
mod order;

/// Each device's memory events in time order (file order among equal times).
pub(crate) use order::{per_device as events_in_time_order, sort_runs_by_key};
mod pairing;
mod search;

pub use ops::{OpIndex, names_work};
pub use search::search_from;

use std::collections::HashMap as StdHashMap;

/// Address maps: pairing a million events with SipHash took a third of `Timeline::build`
/// on a 1M-entry snapshot. foldhash is several times faster and, unlike an unkeyed hash
/// (Fx), seeded per process, so a hostile file cannot choose addresses that collide.
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;

use crate::model::{DeviceIdx, MemEventKind, Recording, ThreadIdx, Total, option_in_place};

/// One point of a device's memory curve: the state right after a memory event. 28 bytes
/// (`tests::a_curve_point_is_28_bytes`): aligned to 4, not 8, so the event's index does not
/// round it up to 32 — 4 bytes fewer for each of a large trace's millions of points
/// (unaligned loads of its totals cost nothing measurable on x86-64 or aarch64).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, packed(4))]
pub struct SeriesPoint {
    /// When.
    pub time_ns: i64,
    /// Allocated bytes after the event.
    pub allocated_bytes: i64,
    /// Reserved (segment) bytes after the event, where the source says.
    pub reserved_bytes: Total,
    /// The event, as an index into [`Recording::mem_events`].
    pub event: u32,
}

option_in_place!(
    /// When an allocation was freed, in 8 bytes ([`Allocation`] is 40 bytes, not 48: a large
    /// trace holds millions). `i64::MAX`, a time no source gives, stands for "not freed".
    FreedAt(i64),
    /// Still live at the end of the recording.
    LIVE_AT_END = i64::MAX
);

/// An allocation paired with its free by address. 40 bytes
/// (`tests::an_allocation_is_40_bytes`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allocation {
    /// Block address.
    pub addr: u64,
    /// Size in bytes.
    pub bytes: i64,
    /// When it was allocated.
    pub alloc_ns: i64,
    /// When it was freed, unless still live at the end of the recording.
    pub free_ns: FreedAt,
    /// The allocating event, as an index into [`Recording::mem_events`].
    pub alloc_event: u32,
    /// The thread that allocated it.
    pub thread: ThreadIdx,
}

/// A reserved range (a segment, or a mapped piece of an expandable one) over time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentSpan {
    /// Start address, where the source says.
    pub addr: Option<u64>,
    /// Size in bytes.
    pub bytes: i64,
    /// When it was reserved.
    pub start_ns: i64,
    /// When it was released; `None` if still reserved at the end.
    pub end_ns: Option<i64>,
    /// The event that reserved it (for the rest of a range released in part, the release),
    /// as an index into [`Recording::mem_events`].
    pub start_event: u32,
    /// The event that released it, where one did.
    pub end_event: Option<u32>,
}

/// Where a device's allocated totals come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TotalsSource {
    /// The allocator's own `Total Allocated` on every event.
    Trace,
    /// Rebuilt as the running sum of `Bytes` (legacy traces).
    Reconstructed,
}

impl TotalsSource {
    /// Stable name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            TotalsSource::Trace => "trace",
            TotalsSource::Reconstructed => "reconstructed",
        }
    }
}

/// Everything derived for one device.
#[derive(Clone, Debug)]
pub struct DeviceTimeline {
    /// The device, as an index into [`Recording::devices`].
    pub device: DeviceIdx,
    /// Memory curve in time order (stable for equal times).
    pub points: Vec<SeriesPoint>,
    /// Whether the source records allocations on this device (Nsight sees only segments).
    pub allocated_known: bool,
    /// Where the allocated totals come from.
    pub totals: TotalsSource,
    /// Whether any event carried `Total Reserved`.
    pub reserved_known: bool,
    /// Allocations paired by address (empty when the source has no addresses).
    pub allocations: Vec<Allocation>,
    /// Frees whose allocation happened before the recording started.
    pub unmatched_frees: u64,
    /// Reserved ranges paired by address.
    pub segments: Vec<SegmentSpan>,
    /// Out-of-memory events, as indices into [`Recording::mem_events`].
    pub ooms: Vec<u32>,
    /// How many of each kind of event the curve holds.
    pub counts: EventCounts,
    /// Index into `points` of the first maximum of allocated bytes.
    pub peak_allocated: Option<usize>,
    /// Index into `points` of the first maximum of reserved bytes.
    pub peak_reserved: Option<usize>,
}

/// A device's events by kind (out-of-memory events are [`DeviceTimeline::ooms`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Allocations.
    pub allocs: u64,
    /// Frees.
    pub frees: u64,
    /// Segment events: reserving and releasing memory.
    pub segment_events: u64,
}

impl DeviceTimeline {
    /// Allocations live at `time_ns` (allocated at or before, not yet freed).
    pub fn live_at(&self, time_ns: i64) -> impl Iterator<Item = &Allocation> {
        self.allocations
            .iter()
            .filter(move |a| a.alloc_ns <= time_ns && a.free_ns.get().is_none_or(|f| f > time_ns))
    }

    /// Reserved ranges live at `time_ns`.
    pub fn segments_at(&self, time_ns: i64) -> impl Iterator<Item = &SegmentSpan> {
        self.segments
            .iter()
            .filter(move |s| s.start_ns <= time_ns && s.end_ns.is_none_or(|f| f > time_ns))
    }

    /// The curve's state at `time_ns` (the last point at or before it).
    pub fn at(&self, time_ns: i64) -> Option<&SeriesPoint> {
        let n = self.points.partition_point(|p| p.time_ns <= time_ns);
        n.checked_sub(1).and_then(|i| self.points.get(i))
    }

    /// The curve's state at each of `times`, as [`Self::at`] gives it: each found from the
    /// one before, so times in rising order (step ends) cost about a step's distance each
    /// rather than a search of the whole curve (145 k steps over 4 M points: 60 → 3 ms).
    pub fn at_each(
        &self,
        times: impl IntoIterator<Item = i64>,
    ) -> impl Iterator<Item = Option<&SeriesPoint>> {
        let mut hint = 0;
        times.into_iter().map(move |time_ns| {
            hint = search_from(&self.points, hint, |p| p.time_ns <= time_ns);
            hint.checked_sub(1).and_then(|i| self.points.get(i))
        })
    }
}

/// Derived views of a whole recording.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// One entry per device of the recording, same order as [`Recording::devices`].
    pub devices: Vec<DeviceTimeline>,
    /// Which op ran when, per thread.
    pub ops: OpIndex,
}

impl Timeline {
    /// Build all derived views. O(n log n) in the number of events.
    pub fn build(rec: &Recording) -> Timeline {
        let devices = order::per_device(rec)
            .iter()
            .enumerate()
            .map(|(d, order)| build_device(rec, d as DeviceIdx, order))
            .collect();
        Timeline {
            devices,
            ops: OpIndex::build(rec),
        }
    }
}

/// Events of a device below which its curve and pairing run one after the other: starting
/// a thread (tens of µs) costs more than it saves there.
const PAIRING_THREAD_MIN_EVENTS: usize = 65_536;

/// One device's views. The curve and the allocations' pairing read the same events but
/// nothing of each other: the pairing (an address map over every block) runs on a second
/// thread, which took building the 5 M-event device of the 10 GB trace from 215 to 115 ms.
fn build_device(rec: &Recording, device: DeviceIdx, order: &[u32]) -> DeviceTimeline {
    let accelerator = rec
        .devices
        .get(device as usize)
        .is_some_and(|d| d.key.is_accelerator());
    let curve = || Curve::build(rec, order, accelerator);
    let pairing = || pairing::allocations(rec, order);
    let (curve, (allocations, unmatched_frees)) = if order.len() < PAIRING_THREAD_MIN_EVENTS {
        (curve(), pairing())
    } else {
        crate::threads::join("vramscope-pairing", curve, pairing)
    };
    let peak_allocated = if curve.allocated_known {
        first_max_by(&curve.points, |p| Some(p.allocated_bytes))
    } else {
        None
    };
    let peak_reserved = first_max_by(&curve.points, |p| p.reserved_bytes.get());
    DeviceTimeline {
        device,
        points: curve.points,
        allocated_known: curve.allocated_known,
        totals: if curve.all_totals && curve.allocated_known {
            TotalsSource::Trace
        } else {
            TotalsSource::Reconstructed
        },
        reserved_known: curve.reserved_known,
        allocations,
        unmatched_frees,
        segments: curve.segments,
        ooms: curve.ooms,
        counts: curve.counts,
        peak_allocated,
        peak_reserved,
    }
}

/// A device's memory curve, reserved ranges and OOMs, from its events in time order.
struct Curve {
    points: Vec<SeriesPoint>,
    segments: Vec<SegmentSpan>,
    ooms: Vec<u32>,
    counts: EventCounts,
    all_totals: bool,
    reserved_known: bool,
    allocated_known: bool,
}

impl Curve {
    fn build(rec: &Recording, order: &[u32], accelerator: bool) -> Curve {
        let mut c = Curve {
            points: Vec::with_capacity(order.len()),
            segments: Vec::new(),
            ooms: Vec::new(),
            counts: EventCounts::default(),
            all_totals: true,
            reserved_known: false,
            allocated_known: false,
        };
        let mut allocated: i64 = 0;
        let mut reserved: Option<i64> = None;
        let mut live_segments: HashMap<u64, usize> = HashMap::default();
        for &i in order {
            let e = &rec.mem_events[i as usize];
            match e.kind {
                MemEventKind::OutOfMemory => {
                    c.ooms.push(i);
                    continue;
                }
                MemEventKind::SegmentAlloc | MemEventKind::SegmentFree => {
                    let r = e
                        .total_reserved_bytes
                        .get()
                        .unwrap_or_else(|| reserved.unwrap_or(0).saturating_add(e.bytes));
                    reserved = Some(r);
                    c.reserved_known = true;
                    c.counts.segment_events += 1;
                    pairing::segment(&mut c.segments, &mut live_segments, e, i);
                    c.points.push(series_point(e, i, allocated, reserved));
                    continue;
                }
                MemEventKind::Alloc => c.counts.allocs += 1,
                MemEventKind::Free => c.counts.frees += 1,
            }
            c.allocated_known = true;
            allocated = match e.total_allocated_bytes.get() {
                Some(total) => total,
                None => {
                    c.all_totals = false;
                    allocated.saturating_add(e.bytes)
                }
            };
            // Torch writes `Total Reserved: 0` for host memory, where nothing is reserved.
            if let Some(r) = e.total_reserved_bytes.get().filter(|_| accelerator) {
                reserved = Some(r);
                c.reserved_known = true;
            }
            c.points.push(series_point(e, i, allocated, reserved));
        }
        c
    }
}

/// The series point of event number `event` at the totals after it.
fn series_point(
    e: &crate::model::MemEvent,
    event: u32,
    allocated: i64,
    reserved: Option<i64>,
) -> SeriesPoint {
    SeriesPoint {
        time_ns: e.time_ns,
        allocated_bytes: allocated,
        reserved_bytes: reserved.into(),
        event,
    }
}

/// Index of the first maximum of `key` (ignoring `None`).
fn first_max_by(
    points: &[SeriesPoint],
    key: impl Fn(&SeriesPoint) -> Option<i64>,
) -> Option<usize> {
    let mut best: Option<(usize, i64)> = None;
    for (i, p) in points.iter().enumerate() {
        if let Some(v) = key(p)
            && best.is_none_or(|(_, b)| v > b)
        {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests;
