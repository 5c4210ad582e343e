//! What a columnar export holds, row by row: every memory event with the device's
//! allocated and reserved totals after it and the op it happened in, every op span with
//! its nesting depth, and every sample of a recording. The app only encodes these rows
//! (`vramscope export --format parquet`).
//!
//! The rows keep the numbers `summary` reports: one memory row per memory event, one op
//! row per op span, the allocated totals of [`Timeline`], and an op for exactly the events
//! that `summary` counts inside ops (`memory_events_in_ops`).

mod depth;
#[cfg(test)]
mod tests;

use crate::analysis::categories::{Classified, classify_events};
use crate::model::{DeviceId, MemEventKind, Recording};
use crate::timeline::{DeviceTimeline, Timeline};
pub use depth::op_depths;

/// One memory event, with the state of its device right after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryEventRow<'a> {
    /// The device whose allocator it is.
    pub device: DeviceId,
    /// When.
    pub ts_ns: i64,
    /// The block's (or segment's) address, where the source records it.
    pub addr: Option<u64>,
    /// Signed size as the source gives it: positive for an allocation or a segment
    /// reserved, negative for a free or a segment released; the size asked for by an OOM.
    pub bytes: i64,
    /// What the event did.
    pub kind: MemEventKind,
    /// The device's allocated total after the event (unchanged by segment and OOM
    /// events); `None` on devices whose source records no allocations (Nsight).
    pub allocated_bytes: Option<i64>,
    /// The device's reserved total after the event, where the source says.
    pub reserved_bytes: Option<i64>,
    /// The thread that allocated or freed, as the source writes its id.
    pub tid: &'a str,
    /// The innermost op on the event's own thread containing it (an operator or
    /// annotation, else a Python frame); `None` exactly when it ran outside every op.
    pub op: Option<&'a str>,
    /// The classifier's verdict on the allocation the event makes or ends (category,
    /// phase, evidence); `None` for segment and OOM events.
    pub class: Option<Classified>,
}

/// The stable name of an event kind in exports.
pub fn kind_name(kind: MemEventKind) -> &'static str {
    match kind {
        MemEventKind::Alloc => "alloc",
        MemEventKind::Free => "free",
        MemEventKind::OutOfMemory => "oom",
        MemEventKind::SegmentAlloc => "segment_alloc",
        MemEventKind::SegmentFree => "segment_free",
    }
}

/// Call `row` on every memory event of the recording: device by device (in the
/// recording's device order), each in the timeline's time order, an OOM after the events
/// at or before its time.
pub fn for_each_memory_event(
    rec: &Recording,
    timeline: &Timeline,
    mut row: impl FnMut(MemoryEventRow<'_>),
) {
    for d in &timeline.devices {
        let device = rec
            .devices
            .get(d.device as usize)
            .map_or(DeviceId::CPU, |i| i.key);
        let classes = classify_events(rec, timeline, d);
        let mut ooms = d.ooms.iter().peekable();
        for p in &d.points {
            while let Some(&&oom) = ooms.peek().filter(|&&&o| event_time(rec, o) < p.time_ns) {
                ooms.next();
                row(oom_row(rec, timeline, d, device, oom));
            }
            if let Some(e) = rec.mem_events.get(p.event as usize) {
                row(MemoryEventRow {
                    device,
                    ts_ns: e.time_ns,
                    addr: e.addr.get(),
                    bytes: e.bytes,
                    kind: e.kind,
                    allocated_bytes: d.allocated_known.then_some(p.allocated_bytes),
                    reserved_bytes: p.reserved_bytes.get(),
                    tid: tid_of(rec, e.thread),
                    op: op_of(rec, timeline, e.thread, e.time_ns),
                    class: classes.get(p.event as usize).copied().flatten(),
                });
            }
        }
        for &oom in ooms {
            row(oom_row(rec, timeline, d, device, oom));
        }
    }
}

fn event_time(rec: &Recording, event: u32) -> i64 {
    rec.mem_events
        .get(event as usize)
        .map_or(i64::MAX, |e| e.time_ns)
}

/// An OOM event's row: the device's totals as they stood then.
fn oom_row<'a>(
    rec: &'a Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    device: DeviceId,
    event: u32,
) -> MemoryEventRow<'a> {
    let e = rec.mem_events.get(event as usize);
    let ts_ns = e.map_or(0, |e| e.time_ns);
    let state = d.at(ts_ns);
    MemoryEventRow {
        device,
        ts_ns,
        addr: e.and_then(|e| e.addr.get()),
        bytes: e.map_or(0, |e| e.bytes),
        kind: MemEventKind::OutOfMemory,
        allocated_bytes: d
            .allocated_known
            .then(|| state.map_or(0, |p| p.allocated_bytes)),
        reserved_bytes: state.and_then(|p| p.reserved_bytes.get()),
        tid: e.map_or("", |e| tid_of(rec, e.thread)),
        op: e.and_then(|e| op_of(rec, timeline, e.thread, e.time_ns)),
        class: None,
    }
}

fn tid_of(rec: &Recording, thread: crate::model::ThreadIdx) -> &str {
    rec.threads
        .get(thread as usize)
        .map_or("", |t| t.tid.as_str())
}

fn op_of<'a>(
    rec: &'a Recording,
    timeline: &Timeline,
    thread: crate::model::ThreadIdx,
    time_ns: i64,
) -> Option<&'a str> {
    let op = timeline.ops.innermost_enclosing(thread, time_ns)?;
    rec.ops.get(op as usize).map(|o| rec.strings.get(o.name))
}

/// One op span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpSpanRow<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its kind (`cpu_op`, `kernel`, …: [`crate::model::OpCategory::as_str`]).
    pub category: &'static str,
    /// The thread (or GPU stream) id as the source writes it.
    pub tid: &'a str,
    /// Start.
    pub start_ns: i64,
    /// End.
    pub end_ns: i64,
    /// How many spans of its thread enclose it (0 at the top).
    pub depth: u32,
}

/// Call `row` on every op span, in the recording's order.
pub fn for_each_op(rec: &Recording, mut row: impl FnMut(OpSpanRow<'_>)) {
    let depths = op_depths(rec);
    for (op, depth) in rec.ops.iter().zip(depths) {
        row(OpSpanRow {
            name: rec.strings.get(op.name),
            category: op.category.as_str(),
            tid: tid_of(rec, op.thread),
            start_ns: op.start_ns,
            end_ns: op.end_ns,
            depth,
        });
    }
}

/// Where a sample comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleSource {
    /// NVML: memory in use on the whole GPU.
    Nvml,
    /// NVML: the recorded process tree's memory on the GPU.
    NvmlProcess,
    /// The recorded process tree's resident set size (host).
    Rss,
    /// The recorded process tree's proportional set size (host).
    Pss,
}

impl SampleSource {
    /// The stable name in exports.
    pub fn as_str(self) -> &'static str {
        match self {
            SampleSource::Nvml => "nvml",
            SampleSource::NvmlProcess => "nvml_process",
            SampleSource::Rss => "rss",
            SampleSource::Pss => "pss",
        }
    }
}

/// One sampled reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleRow {
    /// The device (`cpu` for the host readings).
    pub device: DeviceId,
    /// When.
    pub ts_ns: i64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// What was read.
    pub source: SampleSource,
}

/// Call `row` on every sample of a recording: the GPU readings (whole device, then the
/// process tree's where read), then the host's (RSS, then PSS where read).
pub fn for_each_sample(rec: &Recording, mut row: impl FnMut(SampleRow)) {
    let device_of = |idx: crate::model::DeviceIdx| {
        rec.devices
            .get(idx as usize)
            .map_or(DeviceId::CPU, |d| d.key)
    };
    for s in &rec.gpu_samples {
        let sample = |used_bytes, source| SampleRow {
            device: device_of(s.device),
            ts_ns: s.time_ns,
            used_bytes,
            source,
        };
        row(sample(s.used_bytes, SampleSource::Nvml));
        if let Some(bytes) = s.process_bytes {
            row(sample(bytes, SampleSource::NvmlProcess));
        }
    }
    for h in &rec.host_samples {
        let sample = |used_bytes, source| SampleRow {
            device: DeviceId::CPU,
            ts_ns: h.time_ns,
            used_bytes,
            source,
        };
        row(sample(h.rss_bytes, SampleSource::Rss));
        if let Some(bytes) = h.pss_bytes {
            row(sample(bytes, SampleSource::Pss));
        }
    }
}
