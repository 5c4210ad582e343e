//! The report's charts of one input: per device its memory over time (PNG and SVG) and,
//! where it has allocations, the same stacked by category (`report/categories.rs`), and
//! the ops with the most self memory (PNG), written beside report.md.

use std::path::Path;

use anyhow::Result;
use collector::analysis::decimate::{Curve, curve};
use collector::analysis::samples::{
    HostCurve, SampleCurve, gpu_curve, host_curve, sampled_devices,
};
use collector::analysis::{OpRow, SortKey};
use collector::model::{DeviceId, DeviceIdx};
use collector::units::{bytes_iec, duration_between};

use super::{Section, TEMP_TAG, TOP_OPS, chart_stem};
use crate::output::charts::memory::{MemoryChart, memory_png, memory_svg};
use crate::output::charts::ops::ops_png;
use crate::output::file::{self, FRESH};
use crate::output::text::short_name;

/// Draw the charts of one section into `dir`.
pub fn write_charts(dir: &Path, s: &Section<'_>) -> Result<()> {
    // Devices with allocator events, and GPUs that only NVML saw (recordings).
    let mut devices: Vec<DeviceIdx> = s.timeline.devices.iter().map(|d| d.device).collect();
    devices.extend(sampled_devices(s.rec));
    devices.sort_unstable();
    devices.dedup();
    for idx in devices {
        write_device_chart(dir, s, idx)?;
    }
    super::categories::write_categories_charts(dir, s)?;
    write_host_chart(dir, s)?;
    let top: Vec<(String, i64)> = top_ops(s)
        .iter()
        .map(|r| (r.name.clone(), self_bytes(r, s.sort)))
        .collect();
    if !top.is_empty() {
        let title = format!(
            "{} · ops with the most self memory ({})",
            s.name,
            s.sort.torch_name()
        );
        let png = dir.join(format!("{}top-ops.png", s.prefix));
        file::write_to_path(&png, &FRESH, TEMP_TAG, "png", |temp| {
            ops_png(&title, &top, temp)
        })?;
    }
    Ok(())
}

/// The memory chart of device `idx`, PNG then SVG; nothing when it has no curve.
fn write_device_chart(dir: &Path, s: &Section<'_>, idx: DeviceIdx) -> Result<()> {
    let Some(info) = s.rec.devices.get(idx as usize) else {
        return Ok(());
    };
    let start = s.rec.meta.start_ns;
    let shift = |p: Vec<(i64, i64)>| -> Vec<(i64, i64)> {
        p.into_iter().map(|(t, b)| (t - start, b)).collect()
    };
    let d = s.timeline.devices.iter().find(|d| d.device == idx);
    let of = |which| d.map_or_else(Vec::new, |d| shift(curve(d, which)));
    let allocated = of(Curve::Allocated);
    let reserved = of(Curve::Reserved);
    let nvml_used = shift(gpu_curve(s.rec, idx, SampleCurve::DeviceUsed));
    if allocated.is_empty() && reserved.is_empty() && nvml_used.is_empty() {
        return Ok(());
    }
    let device = info.key.to_string();
    let title = match &info.name {
        Some(n) => format!("{device} — {n}"),
        None => device.clone(),
    };
    let chart = MemoryChart {
        title: &format!("{} · {title}", s.name),
        allocated: &allocated,
        reserved: &reserved,
        nvml_used: &nvml_used,
        host_rss: &[],
        host_pss: &[],
        total_bytes: info.total_memory_bytes.and_then(|t| i64::try_from(t).ok()),
        duration_ns: s.rec.meta.end_ns - start,
        peak: peak_mark(s, info.key),
    };
    let stem = chart_stem(s.prefix, info.key);
    write_png_and_svg(
        dir,
        &stem,
        |png| memory_png(&chart, png),
        || memory_svg(&chart),
    )
}

/// The host memory chart of a recording's process tree (RSS and PSS), PNG then SVG;
/// nothing when the input has no host samples.
fn write_host_chart(dir: &Path, s: &Section<'_>) -> Result<()> {
    let start = s.rec.meta.start_ns;
    let shift = |p: Vec<(i64, i64)>| -> Vec<(i64, i64)> {
        p.into_iter().map(|(t, b)| (t - start, b)).collect()
    };
    let rss = shift(host_curve(s.rec, HostCurve::Rss));
    if rss.is_empty() {
        return Ok(());
    }
    let pss = shift(host_curve(s.rec, HostCurve::Pss));
    let peak = rss.iter().max_by_key(|p| (p.1, -p.0)).map(|&(t, bytes)| {
        let at = duration_between(0, t);
        (t, bytes, format!("peak RSS {} at {at}", bytes_iec(bytes)))
    });
    let chart = MemoryChart {
        title: &format!("{} · host memory of the recorded processes", s.name),
        allocated: &[],
        reserved: &[],
        nvml_used: &[],
        host_rss: &rss,
        host_pss: &pss,
        total_bytes: None,
        duration_ns: s.rec.meta.end_ns - start,
        peak,
    };
    write_png_and_svg(
        dir,
        &host_chart_stem(s.prefix),
        |png| memory_png(&chart, png),
        || memory_svg(&chart),
    )
}

/// A chart as `STEM.png` and `STEM.svg` in the report directory being built.
pub fn write_png_and_svg(
    dir: &Path,
    stem: &str,
    png: impl FnOnce(&Path) -> Result<()>,
    svg: impl FnOnce() -> Result<String>,
) -> Result<()> {
    file::write_to_path(
        &dir.join(format!("{stem}.png")),
        &FRESH,
        TEMP_TAG,
        "png",
        png,
    )?;
    let svg = svg()?;
    file::write_bytes(
        &dir.join(format!("{stem}.svg")),
        &FRESH,
        TEMP_TAG,
        svg.as_bytes(),
    )?;
    Ok(())
}

/// The host chart's file stem, beside the devices' `memory-DEVICE` charts.
pub fn host_chart_stem(prefix: &str) -> String {
    format!("{prefix}memory-host")
}

/// The peak the chart marks, as the summary reports it: (ns since start, bytes, label).
fn peak_mark(s: &Section<'_>, device: DeviceId) -> Option<(i64, i64, String)> {
    let x = s.summary.devices.iter().find(|x| x.device == device)?;
    let peak = x.judged_peak()?;
    let (bytes, at_ns, what) = (peak.bytes, peak.at_ns?, peak.kind.as_str());
    let start = s.summary.start_ns;
    let op = x
        .peak_allocated_op
        .as_deref()
        .filter(|_| x.peak_allocated_bytes.is_some())
        .map_or(String::new(), |o| format!(" in {}", short_name(o)));
    let label = format!(
        "{what} {} at {}{op}",
        bytes_iec(bytes),
        duration_between(start, at_ns)
    );
    Some((at_ns - start, bytes, label))
}

/// A row's self memory in the column the section is sorted by.
fn self_bytes(r: &OpRow, sort: SortKey) -> i64 {
    if sort == SortKey::SelfDeviceMemory {
        r.self_device_memory_usage
    } else {
        r.self_cpu_memory_usage
    }
}

/// The rows with positive self memory, largest first.
pub fn top_ops<'a>(s: &Section<'a>) -> Vec<&'a OpRow> {
    if s.rec.ops.is_empty() {
        // No ops (an allocator snapshot): its one `[memory]` row is no op to chart.
        return Vec::new();
    }
    s.rows
        .iter()
        .filter(|r| self_bytes(r, s.sort) > 0)
        .take(TOP_OPS)
        .collect()
}
