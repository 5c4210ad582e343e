//! The report's memory categories of a device with allocations: what filled its memory at
//! the peak (the summary's `composition_at_peak`: category, bytes, share of the peak) and
//! its allocated memory stacked by category over the run (`memory-DEVICE-categories`, PNG
//! and SVG, from the collector's `categories_over_time`, the series `vramscope
//! categories` writes).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use collector::analysis::DeviceSummary;
use collector::analysis::categories::categories_over_time;
use collector::model::DeviceId;
use collector::units::bytes_iec;

use super::figures::write_png_and_svg;
use super::{Section, chart_stem};
use crate::output::categories::{decided_words, share, unseen_words};
use crate::output::charts::categories::{
    CategoriesChart, Layer, categories_png, categories_svg, stacked,
};
use crate::palette::CATEGORIES_LIGHT;

/// The file stem of a device's chart by category: `memory-cuda-0-categories`.
pub fn categories_stem(prefix: &str, device: DeviceId) -> String {
    format!("{}-categories", chart_stem(prefix, device))
}

/// The composition table and the chart's link, after the device's memory chart.
pub fn categories_markdown(
    md: &mut String,
    s: &Section<'_>,
    d: &DeviceSummary,
) -> std::fmt::Result {
    // Only devices with allocations have a composition.
    let Some(c) = &d.composition_at_peak else {
        return Ok(());
    };
    writeln!(md)?;
    writeln!(
        md,
        "What filled the memory at the peak ({}), by torch's memory profiler's categories:",
        bytes_iec(c.total_bytes)
    )?;
    writeln!(md)?;
    writeln!(md, "| category | bytes | share | decided by |")?;
    writeln!(md, "|---|---:|---:|---|")?;
    let mut entries: Vec<_> = c.entries().collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (category, bytes) in entries {
        writeln!(
            md,
            "| {} | {} ({bytes} B) | {} | {} |",
            category.as_str(),
            bytes_iec(bytes),
            share(bytes, c.total_bytes),
            decided_words(c, category)
        )?;
    }
    if let Some(o) = c.outside_pytorch {
        writeln!(
            md,
            "| outside pytorch (beyond the reserve) | {} ({} B) | | |",
            bytes_iec(o.bytes),
            o.bytes
        )?;
        let parts = [
            ("· this program's (context, libraries)", o.own_process_bytes),
            (
                "· other processes' and the driver's",
                o.other_processes_bytes,
            ),
        ];
        for (label, bytes) in parts {
            if let Some(b) = bytes {
                writeln!(md, "| {label} | {} ({b} B) | | |", bytes_iec(b))?;
            }
        }
    }
    if let Some(u) = c.unseen_weights {
        let [what, why] = unseen_words(&u);
        writeln!(md)?;
        writeln!(md, "{what} {why}.")?;
    }
    if let Some(b) = c.before_trace {
        writeln!(md)?;
        writeln!(
            md,
            "{}.",
            crate::output::categories::before_trace_words(&b).join(" ")
        )?;
    }
    let stem = categories_stem(s.prefix, d.device);
    writeln!(md)?;
    writeln!(
        md,
        "![memory by category on {0}]({stem}.png) ([SVG]({stem}.svg))",
        d.device
    )
}

/// The chart by category of every device with a composition at the peak.
pub fn write_categories_charts(dir: &Path, s: &Section<'_>) -> Result<()> {
    for d in s.summary.devices.iter() {
        if d.composition_at_peak.is_none() {
            continue;
        }
        let Some(idx) = s.rec.find_device(d.device) else {
            continue;
        };
        let Some(t) = s.timeline.devices.iter().find(|t| t.device == idx) else {
            continue;
        };
        let series = categories_over_time(s.rec, s.timeline, t);
        let start = s.rec.meta.start_ns;
        let layers: Vec<Layer<'_>> = stacked(&series)
            .into_iter()
            .map(|(category, top)| Layer {
                name: category.as_str(),
                colour: CATEGORIES_LIGHT[category.index()],
                top: top.into_iter().map(|(t, b)| (t - start, b)).collect(),
            })
            .collect();
        if layers.is_empty() {
            continue;
        }
        let chart = CategoriesChart {
            title: &format!("{} · {} by category", s.name, d.device),
            layers: &layers,
            duration_ns: s.rec.meta.end_ns - start,
        };
        write_png_and_svg(
            dir,
            &categories_stem(s.prefix, d.device),
            |png| categories_png(&chart, png),
            || categories_svg(&chart),
        )?;
    }
    Ok(())
}
