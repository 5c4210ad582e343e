//! The markdown of one input's report section: facts, environment, per device its peaks,
//! chart and what was live at the peak, and the top ops.

use std::fmt::Write as _;

use collector::analysis::DeviceSummary;
use collector::analysis::live::{
    GroupBy, GroupKind, Instant, LiveGroup, fold_after, live_at, resolve_instant,
};
use collector::model::DeviceId;
use collector::units::{bytes_iec, duration_between, torch_memory};

use super::advice::advice_markdown;
use super::analyses::analyses_markdown;
use super::categories::categories_markdown;
use super::figures::{host_chart_stem, top_ops};
use super::{LIVE_GROUPS, Section, TOP_OPS, chart_stem};
use crate::output::text::{md_cell, md_code, noun, percent, short_name, totals_name, when};

/// One input's section: its facts and environment, each device, the top ops, and what
/// the analyses found.
pub fn section_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    writeln!(md)?;
    writeln!(md, "## {}", md_cell(s.name))?;
    writeln!(md)?;
    writeln!(
        md,
        "- format: {}, {}{}",
        sum.format.describe(),
        sum.era,
        if sum.compressed { ", gzip" } else { "" }
    )?;
    writeln!(
        md,
        "- contents: {} {}, {} {}, {} {}, {} {}, {} long",
        sum.events,
        noun(sum.events, "event", "events"),
        sum.ops,
        noun(sum.ops, "op", "ops"),
        sum.steps,
        noun(sum.steps, "step", "steps"),
        sum.memory_events,
        noun(sum.memory_events, "memory event", "memory events"),
        duration_between(sum.start_ns, sum.end_ns)
    )?;
    environment(md, s)?;
    let host = sum.host_rss_peak_bytes.is_some();
    if !sum.has_memory_data && !host {
        writeln!(md)?;
        writeln!(
            md,
            "No memory events in this file: nothing to say about memory."
        )?;
    }
    for d in &sum.devices {
        device_markdown(md, s, d)?;
    }
    if host {
        host_markdown(md, s)?;
    }
    top_ops_markdown(md, s)?;
    advice_markdown(md, s)?;
    analyses_markdown(md, s)
}

/// A device's table of peaks and counts, its chart, and what was live at its peak.
fn device_markdown(md: &mut String, s: &Section<'_>, d: &DeviceSummary) -> std::fmt::Result {
    writeln!(md)?;
    let name = d
        .name
        .as_deref()
        .map_or(String::new(), |n| format!(" — {}", md_cell(n)));
    writeln!(md, "### {}{name}", d.device)?;
    writeln!(md)?;
    writeln!(md, "| | |")?;
    writeln!(md, "|---|---|")?;
    let at = |time_ns: Option<i64>| when(s.summary.start_ns, time_ns);
    if let Some(p) = d.peak_allocated_bytes {
        let op = d
            .peak_allocated_op
            .as_deref()
            .map_or(String::new(), |o| format!(" in {}", md_code(o)));
        writeln!(
            md,
            "| peak allocated | {} ({p} B){}{op} |",
            bytes_iec(p),
            at(d.peak_allocated_at_ns)
        )?;
    }
    if let Some(r) = d.peak_reserved_bytes {
        writeln!(
            md,
            "| peak reserved | {} ({r} B){} |",
            bytes_iec(r),
            at(d.peak_reserved_at_ns)
        )?;
    }
    if let Some(r) = d.peak_requested_bytes {
        writeln!(
            md,
            "| peak requested | {} ({r} B){} (the sizes asked for; allocated counts blocks) |",
            bytes_iec(r),
            at(d.peak_requested_at_ns)
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
        d.memory_events,
        d.allocs,
        d.frees,
        d.ooms,
        totals_name(d.totals)
    )?;
    let stem = chart_stem(s.prefix, d.device);
    writeln!(md)?;
    writeln!(
        md,
        "![memory over time on {0}]({stem}.png) ([SVG]({stem}.svg))",
        d.device
    )?;
    categories_markdown(md, s, d)?;
    live_at_peak(md, s, d.device)
}

/// A recording's host memory: the process tree's peaks and its RSS/PSS chart.
fn host_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    let sum = s.summary;
    writeln!(md)?;
    writeln!(md, "### Host memory of the recorded processes")?;
    writeln!(md)?;
    writeln!(md, "| | |")?;
    writeln!(md, "|---|---|")?;
    if let Some(r) = sum.host_rss_peak_bytes {
        let r = i64::try_from(r).unwrap_or(i64::MAX);
        writeln!(
            md,
            "| peak RSS | {} (a page shared by N processes counts N times) |",
            bytes_iec(r)
        )?;
    }
    if let Some(p) = sum.host_pss_peak_bytes {
        let p = i64::try_from(p).unwrap_or(i64::MAX);
        writeln!(
            md,
            "| peak PSS | {} (shared pages split between the processes) |",
            bytes_iec(p)
        )?;
    }
    if let Some(n) = sum.host_processes_max {
        writeln!(md, "| processes at once | at most {n} |")?;
    }
    let stem = host_chart_stem(s.prefix);
    writeln!(md)?;
    writeln!(
        md,
        "![host memory over time]({stem}.png) ([SVG]({stem}.svg))"
    )
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
            md_cell(g.name.as_deref().unwrap_or("?"))
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

fn live_at_peak(md: &mut String, s: &Section<'_>, device: DeviceId) -> std::fmt::Result {
    let Some(idx) = s.rec.find_device(device) else {
        return Ok(());
    };
    let Ok(peak_ns) = resolve_instant(s.rec, s.timeline, idx, Instant::Peak) else {
        return Ok(());
    };
    let live = live_at(s.rec, s.timeline, idx, peak_ns, GroupBy::Site);
    if live.groups.is_empty() {
        return Ok(());
    }
    let seen = live.groups.iter().filter(|g| g.kind.is_seen()).count() as u64;
    writeln!(md)?;
    writeln!(
        md,
        "Live at the peak ({} allocated: {} in {} {} of blocks seen), largest first:",
        bytes_iec(live.allocated_bytes.unwrap_or(0)),
        bytes_iec(live.live_bytes),
        seen,
        noun(seen, "group", "groups")
    )?;
    writeln!(md)?;
    writeln!(md, "| bytes | share | blocks | allocated in |")?;
    writeln!(md, "|---:|---:|---:|---|")?;
    for g in fold_after(live.groups, LIVE_GROUPS) {
        let site = if g.kind.is_seen() {
            md_code(&site_label(&g))
        } else {
            md_cell(&g.site)
        };
        let blocks = if g.kind.is_seen() || g.kind == GroupKind::More {
            g.blocks.to_string()
        } else {
            String::new()
        };
        writeln!(
            md,
            "| {} | {} | {blocks} | {site} |",
            bytes_iec(g.bytes),
            percent(g.share)
        )?;
    }
    Ok(())
}

/// A live group's site for a table: stack frames with their file's directory dropped
/// (`model.py:532 silu ← …`), cut to a readable length.
pub(super) fn site_label(g: &LiveGroup) -> String {
    short_name(&g.short_site())
}

fn top_ops_markdown(md: &mut String, s: &Section<'_>) -> std::fmt::Result {
    // A source without ops (an allocator snapshot) has one `[memory]` row: no table.
    if s.rows.is_empty() || s.rec.ops.is_empty() {
        return Ok(());
    }
    writeln!(md)?;
    writeln!(
        md,
        "### Top ops (key_averages, sorted by {})",
        s.sort.torch_name()
    )?;
    writeln!(md)?;
    // A column pair of zeros says nothing: a CPU run's CUDA columns, a GPU snapshot's CPU.
    let rows = || s.rows.iter().take(TOP_OPS);
    let host = rows().any(|r| r.cpu_memory_usage != 0 || r.self_cpu_memory_usage != 0);
    let device = rows().any(|r| r.device_memory_usage != 0 || r.self_device_memory_usage != 0);
    let columns = [
        (host, "CPU Mem | Self CPU Mem"),
        (device, "CUDA Mem | Self CUDA Mem"),
    ];
    let shown: Vec<&str> = columns.iter().filter(|c| c.0).map(|c| c.1).collect();
    let header = [vec!["Name"], shown, vec!["# of Calls"]]
        .concat()
        .join(" | ");
    writeln!(md, "| {header} |")?;
    writeln!(md, "|---|{}", "---:|".repeat(header.matches(" | ").count()))?;
    for r in rows() {
        let mut cells = vec![md_code(&short_name(&r.name))];
        let pairs = [
            (host, r.cpu_memory_usage, r.self_cpu_memory_usage),
            (device, r.device_memory_usage, r.self_device_memory_usage),
        ];
        for (_, total, own) in pairs.into_iter().filter(|p| p.0) {
            cells.extend([torch_memory(total), torch_memory(own)]);
        }
        cells.push(r.calls.to_string());
        writeln!(md, "| {} |", cells.join(" | "))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_drop_directories() {
        let group = |frames: &[&str]| LiveGroup {
            kind: GroupKind::Stack,
            site: frames.join(" ← "),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            first_user_frame: 0,
            bytes: 1,
            share: 1.0,
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
