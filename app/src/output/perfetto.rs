//! `vramscope export --format perfetto` and the viewer's Export for Perfetto: the
//! recording as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
//! chrome://tracing open — memory as counter tracks beside the ops that caused it.
//!
//! Layout: `{"traceEvents": [...], "displayTimeUnit": "ms"}` with `M` process/thread
//! names, every op as a complete `X` slice on its own pid/tid, and per device `C` counters
//! on a process of their own: allocated and reserved (the allocator), and for recordings
//! NVML used (the whole GPU) and NVML used by the recorded processes, plus the process
//! tree's host RSS. Times are µs since the start of the recording, as floats (ns
//! precision); sizes are bytes.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use collector::analysis::decimate::{Curve, curve, min_max_points};
use collector::analysis::samples::{SampleCurve, gpu_curve, host_rss_curve, sampled_devices};
use collector::{Recording, Timeline};
use serde_json::json;

use super::file::{self, FileError, Overwrite};

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
    overwrite: Overwrite,
    rec: &Recording,
    timeline: &Timeline,
) -> Result<u64, FileError> {
    file::write(dest, overwrite, TEMP_TAG, |w| {
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
    counter_events(&mut events, rec, timeline, ids.memory_pid)?;
    events
        .out
        .write_all(b"\n], \"displayTimeUnit\": \"ms\"}\n")?;
    Ok(())
}

/// `M` events naming every process and thread, and the process of the memory counters.
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
    events.push(&m)
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
    counter("host RSS of the recorded processes", &host_rss_curve(rec))
}
