//! `vramscope report`: a directory to attach to a bug report — `report.md` (summary per
//! device, what was live at the peak, the top ops, fragmentation, OOM verdicts, warnings,
//! environment) and charts. Deterministic: the same inputs give the same bytes.

pub mod charts;
pub mod compare_chart;

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use collector::analysis::decimate::{Curve, curve};
use collector::analysis::live::{LiveGroup, live_groups};
use collector::analysis::samples::{SampleCurve, gpu_curve, sampled_devices};
use collector::analysis::{self, OpRow, SortKey, Summary};
use collector::model::DeviceIdx;
use collector::units::{bytes_iec, duration_us, torch_memory};
use collector::{Recording, Timeline};

use crate::render::diff::{md_cell, short_name};

/// Live groups listed at each peak.
pub const LIVE_GROUPS: usize = 10;
/// Rows of the top-ops table and bars of its chart.
pub const TOP_OPS: usize = 15;

/// Everything one input contributes to the report.
pub struct Section<'a> {
    /// The file name shown (no directory, so reports compare across machines).
    pub name: &'a str,
    /// Prefix of this input's chart files ("" for a single input).
    pub prefix: &'a str,
    /// The input's recording.
    pub rec: &'a Recording,
    /// Its timeline.
    pub timeline: &'a Timeline,
    /// Its summary.
    pub summary: &'a Summary,
    /// key_averages rows, sorted by self device (or CPU) memory.
    pub rows: &'a [OpRow],
    /// Which column `rows` is sorted by.
    pub sort: &'static str,
}

/// The chart file stem of a device: `memory-cuda-0`.
fn chart_stem(prefix: &str, device: &str) -> String {
    let safe: String = device
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{prefix}memory-{safe}")
}

/// Sort a recording's key_averages rows as `table` does by default.
pub fn sorted_rows(rec: &Recording) -> (Vec<OpRow>, &'static str) {
    let mut rows = analysis::key_averages(rec, None);
    let device = rows.iter().any(|r| r.device_memory_usage != 0);
    let (key, name) = if device {
        (SortKey::SelfDeviceMemory, "self_cuda_memory_usage")
    } else {
        (SortKey::SelfCpuMemory, "self_cpu_memory_usage")
    };
    analysis::sort_rows(&mut rows, key);
    (rows, name)
}

/// Draw the charts of one section into `dir`.
pub fn write_charts(dir: &Path, s: &Section<'_>) -> Result<()> {
    let start = s.rec.meta.start_ns;
    let duration_ns = s.rec.meta.end_ns - start;
    // Devices with allocator events, and GPUs that only NVML saw (recordings).
    let mut devices: Vec<DeviceIdx> = s.timeline.devices.iter().map(|d| d.device).collect();
    devices.extend(sampled_devices(s.rec));
    devices.sort_unstable();
    devices.dedup();
    for idx in devices {
        let Some(info) = s.rec.devices.get(idx as usize) else {
            continue;
        };
        let shift = |p: Vec<(i64, i64)>| -> Vec<(i64, i64)> {
            p.into_iter().map(|(t, b)| (t - start, b)).collect()
        };
        let d = s.timeline.devices.iter().find(|d| d.device == idx);
        let of = |which| d.map_or_else(Vec::new, |d| shift(curve(d, which)));
        let allocated = of(Curve::Allocated);
        let reserved = of(Curve::Reserved);
        let nvml_used = shift(gpu_curve(s.rec, idx, SampleCurve::DeviceUsed));
        if allocated.is_empty() && reserved.is_empty() && nvml_used.is_empty() {
            continue;
        }
        let device = info.key.to_string();
        let summary = s.summary.devices.iter().find(|x| x.device == device);
        let peak = summary.and_then(|x| {
            let (bytes, us, what) = match x.peak_allocated_bytes {
                Some(b) => (b, x.peak_allocated_at_us?, "peak allocated"),
                None => (
                    x.peak_reserved_bytes?,
                    x.peak_reserved_at_us?,
                    "peak reserved",
                ),
            };
            let op = x
                .peak_allocated_op
                .as_deref()
                .filter(|_| x.peak_allocated_bytes.is_some())
                .map_or(String::new(), |o| format!(" in {}", short_name(o)));
            let label = format!("{what} {} at {}{op}", bytes_iec(bytes), duration_us(us));
            Some(((us * 1000.0).round() as i64, bytes, label))
        });
        let title = match &info.name {
            Some(n) => format!("{device} — {n}"),
            None => device.clone(),
        };
        let stem = chart_stem(s.prefix, &device);
        charts::memory_chart(
            &charts::MemoryChart {
                title: &format!("{} · {title}", s.name),
                allocated: &allocated,
                reserved: &reserved,
                nvml_used: &nvml_used,
                total_bytes: info.total_memory_bytes.and_then(|t| i64::try_from(t).ok()),
                duration_ns,
                peak,
            },
            &dir.join(format!("{stem}.png")),
            &dir.join(format!("{stem}.svg")),
        )?;
    }
    let top: Vec<(String, i64)> = top_ops(s)
        .iter()
        .map(|r| (r.name.clone(), self_bytes(r, s.sort)))
        .collect();
    if !top.is_empty() {
        let title = format!("{} · ops with the most self memory ({})", s.name, s.sort);
        charts::ops_chart(&title, &top, &dir.join(format!("{}top-ops.png", s.prefix)))?;
    }
    Ok(())
}

fn self_bytes(r: &OpRow, sort: &str) -> i64 {
    if sort == "self_cuda_memory_usage" {
        r.self_device_memory_usage
    } else {
        r.self_cpu_memory_usage
    }
}

/// The rows with positive self memory, largest first.
fn top_ops<'a>(s: &Section<'a>) -> Vec<&'a OpRow> {
    s.rows
        .iter()
        .filter(|r| self_bytes(r, s.sort) > 0)
        .take(TOP_OPS)
        .collect()
}

/// The report's markdown for all sections.
pub fn markdown(sections: &[Section<'_>]) -> Result<String> {
    let mut md = String::new();
    writeln!(md, "# vramscope report")?;
    for s in sections {
        section_markdown(&mut md, s)?;
    }
    Ok(md)
}

fn section_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    writeln!(md)?;
    writeln!(md, "## {}", md_cell(s.name))?;
    writeln!(md)?;
    writeln!(
        md,
        "- format: {}, {}{}",
        sum.format_name,
        sum.era,
        if sum.compressed { ", gzip" } else { "" }
    )?;
    writeln!(
        md,
        "- contents: {} events, {} ops, {} steps, {} memory events, {} long",
        sum.events,
        sum.ops,
        sum.steps,
        sum.memory_events,
        duration_us(sum.duration_us)
    )?;
    environment(md, s)?;
    if !sum.has_memory_data {
        writeln!(md)?;
        writeln!(
            md,
            "No memory events in this file: nothing to say about memory."
        )?;
    }
    for d in &sum.devices {
        writeln!(md)?;
        let name = d
            .name
            .as_deref()
            .map_or(String::new(), |n| format!(" — {n}"));
        writeln!(md, "### {}{name}", d.device)?;
        writeln!(md)?;
        writeln!(md, "| | |")?;
        writeln!(md, "|---|---|")?;
        let at = |us: Option<f64>| us.map_or(String::new(), |u| format!(" at {}", duration_us(u)));
        if let Some(p) = d.peak_allocated_bytes {
            let op = d
                .peak_allocated_op
                .as_deref()
                .map_or(String::new(), |o| format!(" in `{}`", md_cell(o)));
            writeln!(
                md,
                "| peak allocated | {} ({p} B){}{op} |",
                bytes_iec(p),
                at(d.peak_allocated_at_us)
            )?;
        }
        if let Some(r) = d.peak_reserved_bytes {
            writeln!(
                md,
                "| peak reserved | {} ({r} B){} |",
                bytes_iec(r),
                at(d.peak_reserved_at_us)
            )?;
        }
        if let Some(c) = d.cache_at_peak_bytes {
            writeln!(
                md,
                "| cache at peak | {} (reserved but unallocated) |",
                bytes_iec(c)
            )?;
        }
        if let Some(a) = d.final_allocated_bytes {
            writeln!(md, "| allocated at the end | {} |", bytes_iec(a))?;
        }
        if let Some(r) = d.final_reserved_bytes {
            writeln!(md, "| reserved at the end | {} |", bytes_iec(r))?;
        }
        writeln!(
            md,
            "| events | {} ({} allocs, {} frees, {} OOMs; totals: {}) |",
            d.memory_events, d.allocs, d.frees, d.ooms, d.totals
        )?;
        let stem = chart_stem(s.prefix, &d.device);
        writeln!(md)?;
        writeln!(
            md,
            "![memory over time on {0}]({stem}.png) ([SVG]({stem}.svg))",
            d.device
        )?;
        live_at_peak(md, s, &d.device)?;
    }
    top_ops_markdown(md, s)?;
    analyses_markdown(md, s)
}

fn environment(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    if let Some(rank) = sum.rank {
        let world = sum.world_size.map_or(String::new(), |w| format!(" of {w}"));
        let backend = sum
            .backend
            .as_deref()
            .map_or(String::new(), |b| format!(" ({b})"));
        writeln!(md, "- rank: {rank}{world}{backend}")?;
    }
    for g in &sum.gpus {
        let mem = g
            .total_memory_bytes
            .map_or(String::new(), |b| format!(", {}", bytes_iec(b as i64)));
        writeln!(
            md,
            "- gpu: {} {}{mem}",
            g.device,
            g.name.as_deref().unwrap_or("?")
        )?;
    }
    for (k, v) in &s.rec.meta.properties {
        writeln!(md, "- {}: {}", md_cell(k), md_cell(v))?;
    }
    for (k, v) in &sum.allocator_settings {
        writeln!(md, "- allocator {}: {}", md_cell(k), md_cell(v))?;
    }
    Ok(())
}

fn live_at_peak(md: &mut String, s: &Section<'_>, device: &str) -> std::fmt::Result {
    let Some((idx, d)) = s.timeline.devices.iter().enumerate().find(|(i, _)| {
        s.rec
            .devices
            .get(*i)
            .is_some_and(|x| x.key.to_string() == device)
    }) else {
        return Ok(());
    };
    let Some(peak) = d.peak_allocated.and_then(|p| d.points.get(p)) else {
        return Ok(());
    };
    let groups: Vec<LiveGroup> = live_groups(s.rec, s.timeline, idx as DeviceIdx, peak.time_ns);
    if groups.is_empty() {
        return Ok(());
    }
    let total: i64 = groups.iter().map(|g| g.bytes).sum();
    writeln!(md)?;
    writeln!(
        md,
        "Live at the peak ({} in {} groups with known addresses), largest first:",
        bytes_iec(total),
        groups.len()
    )?;
    writeln!(md)?;
    writeln!(md, "| bytes | blocks | allocated in |")?;
    writeln!(md, "|---:|---:|---|")?;
    for g in groups.iter().take(LIVE_GROUPS) {
        writeln!(
            md,
            "| {} | {} | `{}` |",
            bytes_iec(g.bytes),
            g.blocks,
            md_cell(&site_label(g))
        )?;
    }
    Ok(())
}

/// A live group's site for a table: stack frames with their file's directory dropped
/// (`model.py:532 silu ← …`), cut to a readable length.
fn site_label(g: &LiveGroup) -> String {
    short_name(&g.short_site())
}

fn top_ops_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    if s.rows.is_empty() {
        return Ok(());
    }
    writeln!(md)?;
    writeln!(md, "### Top ops (key_averages, sorted by {})", s.sort)?;
    writeln!(md)?;
    writeln!(
        md,
        "| Name | CPU Mem | Self CPU Mem | CUDA Mem | Self CUDA Mem | # of Calls |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|")?;
    for r in s.rows.iter().take(TOP_OPS) {
        writeln!(
            md,
            "| `{}` | {} | {} | {} | {} | {} |",
            md_cell(&short_name(&r.name)),
            torch_memory(r.cpu_memory_usage),
            torch_memory(r.self_cpu_memory_usage),
            torch_memory(r.device_memory_usage),
            torch_memory(r.self_device_memory_usage),
            r.calls
        )?;
    }
    if !top_ops(s).is_empty() {
        writeln!(md)?;
        writeln!(
            md,
            "![ops with the most self memory]({}top-ops.png)",
            s.prefix
        )?;
    }
    Ok(())
}

fn analyses_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    if !sum.fragmentation.is_empty() {
        writeln!(md)?;
        writeln!(md, "### Fragmentation")?;
        writeln!(md)?;
        writeln!(
            md,
            "| device | when | reserved | allocated | free | free blocks | largest free block | external fragmentation |"
        )?;
        writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|")?;
        for f in &sum.fragmentation {
            let when = if f.source == "snapshot" {
                "snapshot".to_owned()
            } else {
                format!("peak, {}", duration_us(f.at_us))
            };
            writeln!(
                md,
                "| {} | {when} | {} | {} | {} | {} | {} | {:.1}% |",
                f.device,
                bytes_iec(f.reserved_bytes),
                bytes_iec(f.allocated_bytes),
                bytes_iec(f.cache_free_bytes),
                f.free_blocks,
                bytes_iec(f.largest_free_block_bytes),
                f.external_fragmentation * 100.0
            )?;
        }
    }
    if !sum.ooms.is_empty() {
        writeln!(md)?;
        writeln!(md, "### Out of memory")?;
        for o in &sum.ooms {
            writeln!(md)?;
            writeln!(
                md,
                "- {} at {}: requested {}. {}",
                o.device,
                duration_us(o.at_us),
                bytes_iec(o.requested_bytes),
                o.verdict
            )?;
            for g in &o.largest_live {
                writeln!(
                    md,
                    "  - {} in {} {}: `{}`",
                    bytes_iec(g.bytes),
                    g.blocks,
                    crate::render::blocks_word(g.blocks),
                    md_cell(&site_label(g))
                )?;
            }
        }
    }
    for g in sum.growth.iter().filter(|g| g.steady_growth) {
        writeln!(md)?;
        writeln!(
            md,
            "**Steady growth on {}**: allocated rises at every step end, {} per step on average (a leak?).",
            g.device,
            bytes_iec(g.average_growth_bytes)
        )?;
    }
    if !sum.warnings.is_empty() || sum.truncated_at_byte.is_some() {
        writeln!(md)?;
        writeln!(md, "### Warnings")?;
        writeln!(md)?;
        if let Some(at) = sum.truncated_at_byte {
            writeln!(
                md,
                "- the file ends early; complete events before byte {at} were read"
            )?;
        }
        for (k, v) in &sum.warnings {
            writeln!(md, "- {v} {}", md_cell(k))?;
        }
    }
    Ok(())
}

/// Write the report for `inputs` (display name, recording) into `dir`.
pub fn write_report(dir: &Path, inputs: &[(String, Recording)]) -> Result<()> {
    let built: Vec<(Timeline, Summary)> = inputs
        .iter()
        .map(|(_, rec)| {
            let timeline = Timeline::build(rec);
            let summary = analysis::summarize(rec, &timeline);
            (timeline, summary)
        })
        .collect();
    let analysed: Vec<Analysed<'_>> = inputs
        .iter()
        .zip(&built)
        .map(|((name, rec), (timeline, summary))| Analysed {
            name,
            rec,
            timeline,
            summary,
        })
        .collect();
    write_analysed(dir, &analysed)
}

/// One input whose timeline and summary are already built (the viewer has them).
pub struct Analysed<'a> {
    /// The file name shown.
    pub name: &'a str,
    /// The recording.
    pub rec: &'a Recording,
    /// Its timeline.
    pub timeline: &'a Timeline,
    /// Its summary.
    pub summary: &'a Summary,
}

/// Write the report for analysed inputs into `dir`: report.md and the charts beside it.
pub fn write_analysed(dir: &Path, inputs: &[Analysed<'_>]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let rows: Vec<(Vec<OpRow>, &'static str)> = inputs.iter().map(|a| sorted_rows(a.rec)).collect();
    let prefixes: Vec<String> = (0..inputs.len())
        .map(|i| {
            if inputs.len() == 1 {
                String::new()
            } else {
                format!("{}-", i + 1)
            }
        })
        .collect();
    let sections: Vec<Section<'_>> = inputs
        .iter()
        .zip(&rows)
        .zip(&prefixes)
        .map(|((a, (rows, sort)), prefix)| Section {
            name: a.name,
            prefix,
            rec: a.rec,
            timeline: a.timeline,
            summary: a.summary,
            rows,
            sort,
        })
        .collect();
    for s in &sections {
        write_charts(dir, s)?;
    }
    let md = markdown(&sections)?;
    let path = dir.join("report.md");
    std::fs::write(&path, md).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_drop_directories() {
        let group = |frames: &[&str]| LiveGroup {
            site: frames.join(" ← "),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            bytes: 1,
            blocks: 1,
            largest_block_bytes: 1,
        };
        let g = group(&[r"D:\Dev\m\model.py:532 silu", "/src/train.py:7 step"]);
        assert_eq!(site_label(&g), "model.py:532 silu ← train.py:7 step");
        let g = group(&["c10::alloc:3 at::empty"]);
        assert_eq!(site_label(&g), "c10::alloc:3 at::empty");
        assert_eq!(site_label(&group(&[])), "");
    }
}
