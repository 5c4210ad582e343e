//! `vramscope live`: what was live at an instant (`--at`), grouped by allocation site.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use collector::{Recording, Timeline};

use super::input::open;
use super::{Format, LiveOptions, LoadArgs, UsageError};
use crate::output::live::{LiveReport, live_json, live_text};

/// Show what was live in `path` as `options` say.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    options: &LiveOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    let rec = open(path, load)?;
    let timeline = Timeline::build(&rec);
    let mut report = live_report(&rec, &timeline, &options.at, options.device)
        .with_context(|| path.display().to_string())?;
    report.groups.truncate(options.limit);
    match options.format {
        Format::Text => live_text(out, path, &report)?,
        Format::Json => live_json(out, &report)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolve `--at` and `--device` and group what was live then.
fn live_report(
    rec: &Recording,
    timeline: &Timeline,
    at: &str,
    device: Option<i32>,
) -> Result<LiveReport> {
    use collector::model::{DeviceIdx, MemEventKind};
    let pick = |idx: usize| timeline.devices.get(idx).filter(|d| d.allocated_known);
    let device_idx: DeviceIdx = match device {
        Some(n) => rec
            .devices
            .iter()
            .position(|d| d.key.index == n && d.key.is_accelerator())
            .or_else(|| rec.devices.iter().position(|d| d.key.index == n))
            .map(|i| i as DeviceIdx)
            .ok_or_else(|| {
                UsageError(format!("no device {n} in {}", rec.meta.format.describe()))
            })?,
        None => (0..timeline.devices.len())
            .filter_map(|i| pick(i).map(|d| (i, d)))
            .max_by_key(|(_, d)| {
                d.peak_allocated
                    .and_then(|p| d.points.get(p))
                    .map_or(0, |p| p.allocated_bytes)
            })
            .map(|(i, _)| i as DeviceIdx)
            .ok_or_else(|| anyhow::anyhow!(
                    "no allocations recorded, so nothing was live (a profiler trace needs profile_memory=True)"
                ))?,
    };
    let d = pick(device_idx as usize)
        .ok_or_else(|| anyhow::anyhow!("the source records no allocations on that device"))?;
    let time_ns = match at {
        "peak" => d
            .peak_allocated
            .and_then(|p| d.points.get(p))
            .map(|p| p.time_ns),
        "end" => d.points.last().map(|p| p.time_ns),
        "oom" => rec
            .mem_events
            .iter()
            .find(|e| e.kind == MemEventKind::OutOfMemory && e.device == device_idx)
            .map(|e| e.time_ns),
        us => match us.parse::<f64>() {
            Ok(v) if v.is_finite() => Some(rec.ns_from_us_since_start(v)),
            _ => {
                return Err(UsageError(format!(
                    "--at takes peak, oom, end or a number of µs, not '{us}'"
                ))
                .into());
            }
        },
    }
    .ok_or_else(|| anyhow::anyhow!("no {at} on this device"))?;
    let groups = collector::analysis::live::live_groups(rec, timeline, device_idx, time_ns);
    let point = d.at(time_ns);
    Ok(LiveReport {
        device: rec
            .devices
            .get(device_idx as usize)
            .map_or_else(String::new, |x| x.key.to_string()),
        at: at.to_owned(),
        at_us: rec.us_since_start(time_ns),
        allocated_bytes: point.map_or(0, |p| p.allocated_bytes),
        reserved_bytes: point.and_then(|p| p.reserved_bytes),
        live_bytes: groups.iter().map(|g| g.bytes).sum(),
        live_blocks: groups.iter().map(|g| g.blocks).sum(),
        groups,
    })
}
