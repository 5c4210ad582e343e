//! `vramscope export --format perfetto`: the recording as Chrome trace-event JSON, which
//! Perfetto (ui.perfetto.dev) and chrome://tracing open — memory as counter tracks beside
//! the ops that caused it.
//!
//! Layout: `{"traceEvents": [...], "displayTimeUnit": "ms"}` with `M` process/thread
//! names, every op as a complete `X` slice on its own pid/tid, and per device `C` counters
//! on a process of their own: allocated and reserved (the allocator), and for recordings
//! NVML used (the whole GPU) and NVML used by the recorded processes, plus the process
//! tree's host RSS. Times are µs since the start
//! of the recording, as floats (ns precision); sizes are bytes.

use std::collections::BTreeMap;
use std::io::{self, Write};

use collector::analysis::decimate::{Curve, curve, min_max_points};
use collector::analysis::samples::{SampleCurve, gpu_curve, host_rss_curve, sampled_devices};
use collector::{Recording, Timeline};
use serde_json::json;

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
}

/// Write one event followed by a separator as needed.
fn event(out: &mut impl Write, first: &mut bool, value: &serde_json::Value) -> io::Result<()> {
    out.write_all(if *first { b"\n" } else { b",\n" })?;
    *first = false;
    serde_json::to_writer(&mut *out, value)?;
    Ok(())
}

/// Write the recording as Chrome trace-event JSON.
pub fn perfetto_json(out: &mut impl Write, rec: &Recording, timeline: &Timeline) -> io::Result<()> {
    let ids = Ids::new(rec);
    let us = |ns: i64| (ns - rec.meta.start_ns) as f64 / 1000.0;
    let mut first = true;
    out.write_all(b"{\"traceEvents\": [")?;
    for (pid_text, pid) in &ids.pids {
        let name = if pid_text.parse::<i64>().is_ok() {
            format!("process {pid_text}")
        } else {
            pid_text.clone()
        };
        let m = json!({"name": "process_name", "ph": "M", "ts": 0.0, "pid": pid, "tid": 0,
                       "args": {"name": name}});
        event(out, &mut first, &m)?;
    }
    for t in &rec.threads {
        let pid = ids.pids.get(&t.pid).copied().unwrap_or(0);
        let tid = ids
            .tids
            .get(&(t.pid.clone(), t.tid.clone()))
            .copied()
            .unwrap_or(0);
        let name = t
            .name
            .clone()
            .unwrap_or_else(|| format!("thread {}", t.tid));
        let m = json!({"name": "thread_name", "ph": "M", "ts": 0.0, "pid": pid, "tid": tid,
                       "args": {"name": name}});
        event(out, &mut first, &m)?;
    }
    let m = json!({"name": "process_name", "ph": "M", "ts": 0.0, "pid": ids.memory_pid,
                   "tid": 0, "args": {"name": "Memory (vramscope)"}});
    event(out, &mut first, &m)?;
    for op in &rec.ops {
        let (pid, tid) = rec.threads.get(op.thread as usize).map_or((0, 0), |t| {
            (
                ids.pids.get(&t.pid).copied().unwrap_or(0),
                ids.tids
                    .get(&(t.pid.clone(), t.tid.clone()))
                    .copied()
                    .unwrap_or(0),
            )
        });
        let x = json!({"name": rec.op_name(op), "cat": op.category.as_str(), "ph": "X",
                       "ts": us(op.start_ns), "dur": (op.end_ns - op.start_ns).max(0) as f64 / 1000.0,
                       "pid": pid, "tid": tid});
        event(out, &mut first, &x)?;
    }
    let mut counter = |name: &str, points: &[(i64, i64)]| -> io::Result<()> {
        let mut previous = None;
        for &(time_ns, bytes) in &min_max_points(points, COUNTER_BUCKETS) {
            // A counter holds its value until the next sample: repeats add nothing.
            if previous == Some(bytes) {
                continue;
            }
            previous = Some(bytes);
            let c = json!({"name": name, "ph": "C", "ts": us(time_ns), "pid": ids.memory_pid,
                           "tid": 0, "args": {"bytes": bytes}});
            event(out, &mut first, &c)?;
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
    counter("host RSS of the recorded processes", &host_rss_curve(rec))?;
    out.write_all(b"\n], \"displayTimeUnit\": \"ms\"}\n")?;
    Ok(())
}
