//! `simulate`'s reporters: per device the model check, a row per allocator setting, and
//! what becomes of each out-of-memory; one JSON document for programs
//! (`{"devices":[{"device","recorded_conf","capacity","proof","final_segments","settings"}]}`).

use std::io::{self, Write};

use collector::analysis::simulate::{
    Capacity, CapacitySource, DeviceSimulation, OomVerdict, Proof, Run, SimSegment,
};
use collector::units::{bytes_delta, bytes_iec, duration_between};
use serde_json::{Value, json};

use super::text::{group, plural};

/// One device's simulation with its display name (`cuda:0`).
pub struct NamedSimulation<'a> {
    /// The device's name.
    pub device: String,
    /// The simulation.
    pub simulation: &'a DeviceSimulation,
}

fn iec(bytes: u64) -> String {
    bytes_iec(i64::try_from(bytes).unwrap_or(i64::MAX))
}

/// A setting for people: its `PYTORCH_CUDA_ALLOC_CONF` text, or "(defaults)".
pub fn setting_label(conf: &str) -> &str {
    if conf.is_empty() { "(defaults)" } else { conf }
}

/// Where a capacity comes from, in words.
pub fn capacity_words(c: &Capacity) -> String {
    let from = match c.source {
        CapacitySource::Asked => "--capacity",
        CapacitySource::OutOfMemory => "reserved + free at the run's first OOM",
        CapacitySource::DeviceTotal => "the device's total memory",
    };
    format!("{} ({from})", iec(c.bytes))
}

/// The model check in one line (the text and the report say the same).
pub fn proof_sentence(p: &Proof) -> String {
    let mut s = format!(
        "model check: {} of {} placed where the real allocator put them ({:.2}%)",
        group(p.placed_as_recorded),
        plural(p.allocations, "allocation", "allocations"),
        100.0 * p.placed_share()
    );
    s += if p.final_segments_identical {
        "; final segments identical"
    } else {
        "; final segments differ"
    };
    if let Some(d) = &p.first_divergence {
        s += &format!(
            "; first difference at entry {}: {} asked, real address {:#x}",
            group(d.entry as u64),
            iec(d.requested_bytes),
            d.recorded_addr
        );
    }
    if let Some(at) = p.stopped_at_entry {
        s += &format!(
            "; stopped at entry {} (not checked after it)",
            group(at as u64)
        );
    }
    if p.start_blocks_resized > 0 {
        s += &format!(
            "; {} live at the start sized from the history",
            plural(p.start_blocks_resized, "block", "blocks")
        );
    }
    s
}

/// What becomes of an OOM under a setting, in words.
pub fn oom_words(o: &OomVerdict) -> String {
    match (o.happens, o.short_by_bytes, o.headroom_bytes) {
        (None, _, _) => "unknown (no capacity: pass --capacity)".to_owned(),
        (Some(false), _, Some(left)) => format!("would not happen ({} left)", iec(left)),
        (Some(false), _, None) => "would not happen".to_owned(),
        (Some(true), Some(short), _) => format!("happens (short by {})", iec(short)),
        (Some(true), None, _) => "happens".to_owned(),
    }
}

/// The simulation as text.
pub fn simulate_text(out: &mut impl Write, devices: &[NamedSimulation<'_>]) -> io::Result<()> {
    for (i, d) in devices.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        device_text(out, d)?;
    }
    Ok(())
}

fn device_text(out: &mut impl Write, d: &NamedSimulation<'_>) -> io::Result<()> {
    let s = d.simulation;
    let recorded = s
        .recorded_conf
        .as_deref()
        .map_or("not recorded (defaults assumed)", setting_label);
    writeln!(out, "{}  recorded settings: {recorded}", d.device)?;
    match &s.capacity {
        Some(c) => writeln!(out, "  capacity: {}", capacity_words(c))?,
        None => writeln!(
            out,
            "  capacity: unknown (OOMs not judged; pass --capacity)"
        )?,
    }
    if let Some(p) = &s.proof {
        writeln!(out, "  {}", proof_sentence(p))?;
    }
    writeln!(
        out,
        "  {:<40} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>7} {:>5}",
        "setting",
        "reserved",
        "vs first",
        "allocated",
        "free@peak",
        "largest",
        "malloc",
        "free",
        "OOMs"
    )?;
    if let Some(m) = s.measured_reserved_peak_bytes {
        writeln!(out, "  {:<40} {:>11}", "as measured", iec(m))?;
    }
    let first = s.runs.first().map_or(0, |r| r.reserved_peak_bytes);
    for (i, r) in s.runs.iter().enumerate() {
        let name = match i {
            0 => format!("{} (simulated)", setting_label(&r.allocator_conf)),
            _ => setting_label(&r.allocator_conf).to_owned(),
        };
        let delta = r.reserved_peak_bytes as i64 - first as i64;
        writeln!(
            out,
            "  {:<40} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>7} {:>5}",
            name,
            iec(r.reserved_peak_bytes),
            if i == 0 {
                "".to_owned()
            } else {
                bytes_delta(delta)
            },
            iec(r.allocated_peak_bytes),
            iec(r.at_peak.cached_free_bytes),
            iec(r.at_peak.largest_free_block_bytes),
            group(r.device_mallocs),
            group(r.device_frees),
            r.ooms.iter().filter(|o| o.happens == Some(true)).count()
        )?;
        if let Some(c) = s.capacity.filter(|c| r.reserved_peak_bytes > c.bytes) {
            writeln!(
                out,
                "  {:<40} (past the capacity by {}: the replay went on after the first OOM)",
                "",
                iec(r.reserved_peak_bytes - c.bytes)
            )?;
        }
    }
    ooms_text(out, s)
}

/// Recorded OOMs shown one by one at most; the rest are counted.
const RECORDED_OOMS_SHOWN: usize = 10;

/// Each recorded OOM and what each setting makes of it; then per setting the first OOM
/// only the simulation has (the program would stop there) and how many more requests
/// would fail if it went on.
fn ooms_text(out: &mut impl Write, s: &DeviceSimulation) -> io::Result<()> {
    let Some(first) = s.runs.first() else {
        return Ok(());
    };
    let recorded: Vec<&OomVerdict> = first.ooms.iter().filter(|o| o.recorded).collect();
    for (k, o) in recorded.iter().enumerate().take(RECORDED_OOMS_SHOWN) {
        writeln!(
            out,
            "  recorded OOM at {}: {} asked",
            duration_between(s.start_ns, o.time_ns),
            iec(o.requested_bytes)
        )?;
        for r in &s.runs {
            let verdict = r.ooms.iter().filter(|v| v.recorded).nth(k);
            if let Some(v) = verdict {
                writeln!(
                    out,
                    "    {:<38} {}",
                    setting_label(&r.allocator_conf),
                    oom_words(v)
                )?;
            }
        }
        if o.happens == Some(false) {
            writeln!(
                out,
                "    (the recorded settings' replay does not fail here as the run did: its start \
                 or the capacity differs from the run's, so the other verdicts are less sure)"
            )?;
        }
    }
    if recorded.len() > RECORDED_OOMS_SHOWN {
        writeln!(
            out,
            "  and {} more (--format json lists them)",
            plural(
                (recorded.len() - RECORDED_OOMS_SHOWN) as u64,
                "recorded OOM",
                "recorded OOMs"
            )
        )?;
    }
    for r in &s.runs {
        let new: Vec<&OomVerdict> = (r.ooms.iter())
            .filter(|o| !o.recorded && o.happens == Some(true))
            .collect();
        let Some(o) = new.first() else { continue };
        let more = match new.len() - 1 {
            0 => String::new(),
            n => format!(
                "; then {} would fail too if it went on",
                plural(n as u64, "request", "requests")
            ),
        };
        writeln!(
            out,
            "  {}: runs out of memory at {} ({} asked, short by {}){more}",
            setting_label(&r.allocator_conf),
            duration_between(s.start_ns, o.time_ns),
            iec(o.requested_bytes),
            iec(o.short_by_bytes.unwrap_or(0)),
        )?;
    }
    Ok(())
}

/// The simulation as one JSON document.
pub fn simulate_json(out: &mut impl Write, devices: &[NamedSimulation<'_>]) -> io::Result<()> {
    let devices: Vec<Value> = devices.iter().map(device_json).collect();
    serde_json::to_writer_pretty(&mut *out, &json!({ "devices": devices }))?;
    writeln!(out)
}

fn device_json(d: &NamedSimulation<'_>) -> Value {
    let s = d.simulation;
    let proof = s.proof.as_ref().map(|p| {
        json!({
            "allocations": p.allocations,
            "placed_as_recorded": p.placed_as_recorded,
            "placed_share": p.placed_share(),
            "final_segments_identical": p.final_segments_identical,
            "first_divergence": p.first_divergence,
            "stopped_at_entry": p.stopped_at_entry,
            "private_pool_allocations": p.private_pool_allocations,
            "unknown_frees": p.unknown_frees,
            "start_blocks_resized": p.start_blocks_resized,
        })
    });
    let final_segments: &[SimSegment] = match (&s.proof, s.runs.first()) {
        (Some(p), _) => &p.final_segments,
        (None, Some(r)) => &r.final_segments,
        (None, None) => &[],
    };
    json!({
        "device": d.device,
        "recorded_conf": s.recorded_conf,
        "capacity": s.capacity,
        "measured_reserved_peak_bytes": s.measured_reserved_peak_bytes,
        "proof": proof,
        "final_segments": final_segments,
        "settings": s.runs.iter().map(run_json).collect::<Vec<_>>(),
        "max_split_size_mb_tried": s.max_split_tried_mb,
    })
}

fn run_json(r: &Run) -> Value {
    json!({
        "allocator_conf": r.allocator_conf,
        "reserved_peak_bytes": r.reserved_peak_bytes,
        "reserved_peak_at_ns": r.reserved_peak_at_ns,
        "allocated_peak_bytes": r.allocated_peak_bytes,
        "at_peak": r.at_peak,
        "device_mallocs": r.device_mallocs,
        "device_frees": r.device_frees,
        "ooms": r.ooms,
    })
}
