//! `vramscope export --format perfetto` and the viewer's Export for Perfetto: the
//! recording as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
//! chrome://tracing open — memory as counter tracks beside the ops that caused it.
//!
//! Layout: `{"traceEvents": [...], "displayTimeUnit": "ms"}` with `M` process/thread
//! names, every op as a complete `X` slice on its own pid/tid, torch's `[memory]` instant
//! events (so vramscope reads the export back with the same memory), and per device `C` counters
//! on a process of their own: allocated and reserved (the allocator), and for recordings
//! NVML used (the whole GPU) and NVML used by the recorded processes, plus the process
//! tree's host RSS. Times are µs since the start of the recording, as floats (ns
//! precision); sizes are bytes.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use collector::analysis::decimate::{Curve, curve, min_max_points};
use collector::analysis::samples::{
    HostCurve, SampleCurve, gpu_curve, host_curve, sampled_devices,
};
use collector::model::MemEventKind;
use collector::parse::chrome_trace::SEGMENT_EVENT;
use collector::{Recording, Timeline};
use serde_json::json;

use super::file::{self, FileError, Policy};

/// Buckets per counter series: at most 2 points each, so ≤ ~100k points per series. A
/// million-event device exports in well under a second and Perfetto stays responsive.
pub const COUNTER_BUCKETS: usize = 50_000;

/// Perfetto wants integer pids and tids; sources may use strings ("stream 7"). Numeric ids
/// are kept, the others numbered after the largest numeric one.
struct Ids {
    pids: BTreeMap<String, i64>,
    /// (pid string, tid string) → tid number.
    tids: BTreeMap<(String, String), i64>,
    /// The process that holds the memory counters.
    memory_pid: i64,
}

impl Ids {
    fn new(rec: &Recording) -> Ids {
        let numeric = |s: &str| s.parse::<i64>().ok();
        let mut next = rec
            .threads
            .iter()
            .flat_map(|t| [numeric(&t.pid), numeric(&t.tid)])
            .flatten()
            .max()
            .unwrap_or(0)
            .max(0)
            + 1;
        let mut fresh = || {
            next += 1;
            next - 1
        };
        let mut pids = BTreeMap::new();
        let mut tids = BTreeMap::new();
        for t in &rec.threads {
            pids.entry(t.pid.clone())
                .or_insert_with(|| numeric(&t.pid).unwrap_or_else(&mut fresh));
            tids.entry((t.pid.clone(), t.tid.clone()))
                .or_insert_with(|| numeric(&t.tid).unwrap_or_else(&mut fresh));
        }
        Ids {
            pids,
            tids,
            memory_pid: fresh(),
        }
    }

    /// The numbers of a thread's pid and tid (0 for one not in the recording's threads).
    fn pid_tid(&self, pid: &str, tid: &str) -> (i64, i64) {
        (
            self.pids.get(pid).copied().unwrap_or(0),
            self.tids
                .get(&(pid.to_owned(), tid.to_owned()))
                .copied()
                .unwrap_or(0),
        )
    }
}

/// The event array being written: a separator before every event but the first.
struct Events<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<W: Write> Events<'_, W> {
    /// Write one event, preceded by a separator as needed.
    fn push(&mut self, value: &serde_json::Value) -> io::Result<()> {
        self.out
            .write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.out, value)?;
        Ok(())
    }
}

/// The temporary file's tag while an export is written: `.NAME.perfetto-PID`.
const TEMP_TAG: &str = "perfetto";

/// Write the recording as Chrome trace-event JSON into the file `dest`.
pub fn write_file(
    dest: &Path,
    policy: &Policy<'_>,
    rec: &Recording,
    timeline: &Timeline,
) -> Result<u64, FileError> {
    file::write(dest, policy, TEMP_TAG, |w| {
        Ok(perfetto_json(w, rec, timeline)?)
    })
}

/// Write the recording as Chrome trace-event JSON.
pub fn perfetto_json(out: &mut impl Write, rec: &Recording, timeline: &Timeline) -> io::Result<()> {
    let ids = Ids::new(rec);
    out.write_all(b"{\"traceEvents\": [")?;
    let mut events = Events { out, first: true };
    name_events(&mut events, rec, &ids)?;
    op_events(&mut events, rec, &ids)?;
    memory_events(&mut events, rec, timeline, &ids)?;
    counter_events(&mut events, rec, timeline, ids.memory_pid)?;
    events.out.write_all(b"\n]")?;
    trace_facts(events.out, rec)?;
    events.out.write_all(b", \"displayTimeUnit\": \"ms\"}\n")?;
    Ok(())
}

/// The trace-level keys torch writes that the export can keep: `deviceProperties` (GPU
/// names and memory) and `distributedInfo` (rank, world size, backend).
fn trace_facts(out: &mut impl Write, rec: &Recording) -> io::Result<()> {
    let gpus: Vec<serde_json::Value> = rec
        .devices
        .iter()
        .filter(|d| d.key.is_accelerator() && (d.name.is_some() || d.total_memory_bytes.is_some()))
        .map(|d| json!({"id": d.key.index, "name": d.name, "totalGlobalMem": d.total_memory_bytes}))
        .collect();
    if !gpus.is_empty() {
        out.write_all(b", \"deviceProperties\": ")?;
        serde_json::to_writer(&mut *out, &gpus)?;
    }
    if let Some(d) = &rec.meta.distributed {
        let info = json!({"backend": d.backend, "rank": d.rank, "world_size": d.world_size});
        out.write_all(b", \"distributedInfo\": ")?;
        serde_json::to_writer(&mut *out, &info)?;
    }
    Ok(())
}

/// `M` events naming every process and thread, and the process of the memory counters;
/// the recording's start and end.
fn name_events(events: &mut Events<'_, impl Write>, rec: &Recording, ids: &Ids) -> io::Result<()> {
    for (pid_text, pid) in &ids.pids {
        let name = if pid_text.parse::<i64>().is_ok() {
            format!("process {pid_text}")
        } else {
            pid_text.clone()
        };
        let m = json!({"name": "process_name", "ph": "M", "ts": 0.0, "pid": pid, "tid": 0,
                       "args": {"name": name}});
        events.push(&m)?;
    }
    for t in &rec.threads {
        let (pid, tid) = ids.pid_tid(&t.pid, &t.tid);
        let name = t
            .name
            .clone()
            .unwrap_or_else(|| format!("thread {}", t.tid));
        let m = json!({"name": "thread_name", "ph": "M", "ts": 0.0, "pid": pid, "tid": tid,
                       "args": {"name": name}});
        events.push(&m)?;
    }
    let m = json!({"name": "process_name", "ph": "M", "ts": 0.0, "pid": ids.memory_pid,
                   "tid": 0, "args": {"name": "Memory (vramscope)"}});
    events.push(&m)?;
    // The recording's own start and end, as global instants: what a reader of the export
    // takes for its time range, so times after the start stay what they were.
    for (name, time_ns) in [
        ("recording start", rec.meta.start_ns),
        ("recording end", rec.meta.end_ns),
    ] {
        let i = json!({"name": name, "ph": "i", "s": "g", "ts": rec.us_since_start(time_ns),
                       "pid": ids.memory_pid, "tid": 0});
        events.push(&i)?;
    }
    Ok(())
}

/// Every op as a complete `X` slice on its thread.
fn op_events(events: &mut Events<'_, impl Write>, rec: &Recording, ids: &Ids) -> io::Result<()> {
    for op in &rec.ops {
        let (pid, tid) = rec
            .threads
            .get(op.thread as usize)
            .map_or((0, 0), |t| ids.pid_tid(&t.pid, &t.tid));
        let x = json!({"name": rec.op_name(op), "cat": op.category.as_str(), "ph": "X",
                       "ts": rec.us_since_start(op.start_ns),
                       "dur": (op.end_ns - op.start_ns).max(0) as f64 / 1000.0,
                       "pid": pid, "tid": tid});
        events.push(&x)?;
    }
    Ok(())
}

/// torch's own `[memory]` and `[OutOfMemory]` instant events, one per allocation, free
/// and OOM, on the thread that made it, with the allocator's totals after it (the
/// timeline's where the source had none): `summary`, `table` and `live` of the export read
/// the same memory as of the original, and Perfetto shows each record as an instant.
/// Segment records (cudaMalloc/cudaFree), which torch's traces lack, are
/// [`SEGMENT_EVENT`] instants of the same shape.
fn memory_events(
    events: &mut Events<'_, impl Write>,
    rec: &Recording,
    timeline: &Timeline,
    ids: &Ids,
) -> io::Result<()> {
    // (allocated, reserved) after each event, as the timeline has them.
    let mut totals: Vec<(Option<i64>, Option<i64>)> = vec![(None, None); rec.mem_events.len()];
    for d in &timeline.devices {
        for p in &d.points {
            if let Some(t) = totals.get_mut(p.event as usize) {
                *t = (
                    d.allocated_known.then_some(p.allocated_bytes),
                    p.reserved_bytes.get(),
                );
            }
        }
    }
    // Device by device, in the recording's device order (each device's events in their own
    // order): readers list devices as they first appear, so the export's summary lists them
    // as the original's does. Perfetto sorts events by time itself.
    let mut order: Vec<usize> = (0..rec.mem_events.len()).collect();
    order.sort_by_key(|&i| rec.mem_events[i].device);
    for i in order {
        let (e, (allocated, reserved)) = (&rec.mem_events[i], totals[i]);
        let name = match e.kind {
            MemEventKind::Alloc | MemEventKind::Free => "[memory]",
            MemEventKind::OutOfMemory => "[OutOfMemory]",
            MemEventKind::SegmentAlloc | MemEventKind::SegmentFree => SEGMENT_EVENT,
        };
        let (allocated, reserved) = if e.kind == MemEventKind::OutOfMemory {
            let device = timeline.devices.get(e.device as usize);
            let point = device.and_then(|d| d.at(e.time_ns));
            let known = device.is_some_and(|d| d.allocated_known);
            (
                point.filter(|_| known).map(|p| p.allocated_bytes),
                point.and_then(|p| p.reserved_bytes.get()),
            )
        } else {
            (allocated, reserved)
        };
        let (pid, tid) = rec
            .threads
            .get(e.thread as usize)
            .map_or((0, 0), |t| ids.pid_tid(&t.pid, &t.tid));
        let device = rec.devices.get(e.device as usize).map(|d| d.key);
        let mut args = serde_json::Map::new();
        if let Some(r) = reserved {
            args.insert("Total Reserved".into(), r.into());
        }
        if let Some(a) = allocated {
            args.insert("Total Allocated".into(), a.into());
        }
        args.insert("Bytes".into(), e.bytes.into());
        if let Some(addr) = e.addr.get() {
            args.insert("Addr".into(), addr.into());
        }
        if let Some(key) = device {
            args.insert("Device Type".into(), key.device_type.0.into());
            args.insert("Device Id".into(), key.index.into());
        }
        let i = json!({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": name,
                       "pid": pid, "tid": tid, "ts": rec.us_since_start(e.time_ns),
                       "args": args});
        events.push(&i)?;
    }
    Ok(())
}

/// The `C` counter tracks: allocated and reserved per device, NVML's readings per sampled
/// GPU, and the host RSS.
fn counter_events(
    events: &mut Events<'_, impl Write>,
    rec: &Recording,
    timeline: &Timeline,
    memory_pid: i64,
) -> io::Result<()> {
    let mut counter = |name: &str, points: &[(i64, i64)]| -> io::Result<()> {
        let mut previous = None;
        for &(time_ns, bytes) in &min_max_points(points, COUNTER_BUCKETS) {
            // A counter holds its value until the next sample: repeats add nothing.
            if previous == Some(bytes) {
                continue;
            }
            previous = Some(bytes);
            let c = json!({"name": name, "ph": "C", "ts": rec.us_since_start(time_ns),
                           "pid": memory_pid, "tid": 0, "args": {"bytes": bytes}});
            events.push(&c)?;
        }
        Ok(())
    };
    let device_name = |idx: u16| {
        rec.devices
            .get(idx as usize)
            .map_or_else(|| format!("device {idx}"), |i| i.key.to_string())
    };
    for d in &timeline.devices {
        let device = device_name(d.device);
        for (which, label) in [
            (Curve::Allocated, "allocated"),
            (Curve::Reserved, "reserved"),
        ] {
            counter(&format!("{device} {label}"), &curve(d, which))?;
        }
    }
    for idx in sampled_devices(rec) {
        let device = device_name(idx);
        for (which, label) in [
            (SampleCurve::DeviceUsed, "NVML used"),
            (
                SampleCurve::ProcessUsed,
                "NVML used by the recorded processes",
            ),
        ] {
            counter(&format!("{device} {label}"), &gpu_curve(rec, idx, which))?;
        }
    }
    counter(
        "host RSS of the recorded processes",
        &host_curve(rec, HostCurve::Rss),
    )?;
    counter(
        "host PSS of the recorded processes",
        &host_curve(rec, HostCurve::Pss),
    )
}
