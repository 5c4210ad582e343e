//! One device's part of the page: its rows of the summary (the CLI's texts, with the raw
//! value and its place in `summary --format json`), its curves at a few zoom levels
//! (allocated, reserved, NVML's used memory), its capacity, peaks and OOMs, and the
//! parts drawn from other analyses: categories, compositions, bands and segments.

use collector::analysis::DeviceSummary;
use collector::analysis::categories::categories_over_time;
use collector::analysis::decimate::{Curve, curve};
use collector::analysis::samples::{SampleCurve, gpu_curve};
use collector::model::DeviceIdx;
use collector::timeline::DeviceTimeline;
use collector::units::{bytes_iec, duration_between};
use serde::Serialize;

use super::Input;
use super::bands::{BandsDoc, bands};
use super::categories::{CategoriesDoc, categories};
use super::compose::{Compositions, compositions};
use super::levels::{Level, levels};
use super::segments::{SegmentsDoc, segments};
use super::strings::Strings;
use crate::output::text::totals_name;

/// A row of a device's summary: what, the CLI's text, and where `summary --format json`
/// has the number (`devices.0.peak_allocated_bytes`) with its value, so a test can hold
/// the page to the CLI.
#[derive(Debug, Serialize)]
pub struct FactRow {
    /// Label (a string id).
    pub label: u32,
    /// The text (a string id).
    pub text: u32,
    /// The field's path in the summary document, where the row is one number of it.
    pub path: Option<String>,
    /// That number.
    pub value: Option<i64>,
}

/// A marker on the timeline.
#[derive(Debug, Serialize)]
pub struct Mark {
    /// What (a string id: "peak allocated").
    pub what: u32,
    /// When, ns since the input's start.
    pub t: i64,
    /// Bytes then.
    pub bytes: i64,
    /// Its label (a string id).
    pub text: u32,
}

/// One device.
#[derive(Debug, Serialize)]
pub struct DeviceDoc {
    /// `cuda:0`.
    pub label: u32,
    /// The GPU's name, where known.
    pub name: Option<u32>,
    /// Its memory, where known.
    pub capacity_bytes: Option<u64>,
    /// The summary's rows.
    pub facts: Vec<FactRow>,
    /// Allocated bytes, by level.
    pub allocated: Vec<Level>,
    /// Reserved bytes, by level.
    pub reserved: Vec<Level>,
    /// NVML's used memory of the whole device, by level.
    pub nvml_used: Vec<Level>,
    /// Peaks.
    pub peaks: Vec<Mark>,
    /// Out-of-memory events.
    pub ooms: Vec<Mark>,
    /// Memory by category over time.
    pub categories: Option<CategoriesDoc>,
    /// What was live at some instants.
    pub compositions: Compositions,
    /// The allocations as bands.
    pub bands: Option<BandsDoc>,
    /// The segments at the peak.
    pub segments: Option<SegmentsDoc>,
}

/// The page's part of device `ds` of `input`.
pub fn device(input: &Input<'_>, index: usize, ds: &DeviceSummary, s: &mut Strings) -> DeviceDoc {
    let (rec, timeline) = (input.rec, input.timeline);
    let idx: Option<DeviceIdx> = rec.find_device(ds.device);
    let d: Option<&DeviceTimeline> = idx.and_then(|i| timeline.devices.get(i as usize));
    let origin = input.summary.start_ns;
    let curve_of = |which| d.map_or_else(Vec::new, |d| levels(&curve(d, which), origin));
    let nvml = idx.map_or_else(Vec::new, |i| {
        levels(&gpu_curve(rec, i, SampleCurve::DeviceUsed), origin)
    });
    let mark = |s: &mut Strings, what: &str, at: Option<i64>, bytes: Option<i64>| {
        let (at, bytes) = (at?, bytes?);
        Some(Mark {
            what: s.id(what),
            t: at - origin,
            bytes,
            text: s.id(&format!(
                "{what}: {} at {}",
                bytes_iec(bytes),
                duration_between(origin, at)
            )),
        })
    };
    let peaks = [
        mark(
            s,
            "peak allocated",
            ds.peak_allocated_at_ns,
            ds.peak_allocated_bytes,
        ),
        mark(
            s,
            "peak reserved",
            ds.peak_reserved_at_ns,
            ds.peak_reserved_bytes,
        ),
    ];
    let ooms = input.summary.ooms.iter().filter(|o| o.device == ds.device);
    let ooms = ooms
        .filter_map(|o| mark(s, "out of memory", Some(o.at_ns), Some(o.allocated_bytes)))
        .collect();
    let label = s.id(&ds.device.to_string());
    let series = d
        .filter(|d| d.allocated_known && !d.allocations.is_empty())
        .map(|d| categories_over_time(rec, timeline, d));
    DeviceDoc {
        label,
        name: ds.name.as_deref().map(|n| s.id(n)),
        capacity_bytes: ds.total_memory_bytes,
        facts: facts(index, ds, origin, s),
        allocated: curve_of(Curve::Allocated),
        reserved: curve_of(Curve::Reserved),
        nvml_used: nvml,
        peaks: peaks.into_iter().flatten().collect(),
        ooms,
        categories: series.as_ref().and_then(|se| categories(input, se)),
        compositions: d.map_or_else(Compositions::default, |d| {
            compositions(input, d, ds, series.as_ref(), s)
        }),
        bands: d.and_then(|d| bands(input, d, s)),
        segments: idx.and_then(|i| segments(input, i, ds, s)),
    }
}

/// The device's rows of the summary, as report.md words them.
fn facts(index: usize, ds: &DeviceSummary, origin: i64, s: &mut Strings) -> Vec<FactRow> {
    let mut rows = Vec::new();
    let mut row = |s: &mut Strings, label: &str, text: String, field: Option<(&str, i64)>| {
        rows.push(FactRow {
            label: s.id(label),
            text: s.id(&text),
            path: field.map(|(f, _)| format!("devices.{index}.{f}")),
            value: field.map(|(_, v)| v),
        });
    };
    let at = |t: Option<i64>| {
        t.map_or(String::new(), |t| {
            format!(" at {}", duration_between(origin, t))
        })
    };
    if let Some(p) = ds.peak_allocated_bytes {
        let op = ds
            .peak_allocated_op
            .as_deref()
            .map_or(String::new(), |o| format!(" in {o}"));
        let text = format!(
            "{} ({p} B){}{op}",
            bytes_iec(p),
            at(ds.peak_allocated_at_ns)
        );
        row(s, "peak allocated", text, Some(("peak_allocated_bytes", p)));
    }
    if let Some(r) = ds.peak_reserved_bytes {
        let text = format!("{} ({r} B){}", bytes_iec(r), at(ds.peak_reserved_at_ns));
        row(s, "peak reserved", text, Some(("peak_reserved_bytes", r)));
    }
    if let Some(c) = ds.cache_at_peak_bytes {
        let text = format!("{} (reserved but unallocated)", bytes_iec(c));
        row(s, "cache at peak", text, Some(("cache_at_peak_bytes", c)));
    }
    if let Some(b) = ds.composition_at_peak.as_ref().and_then(|c| c.before_trace) {
        let text = crate::output::categories::before_trace_words(&b).join(" ");
        let field = ("before_trace_reading.at_start_bytes", b.at_start_bytes);
        row(s, "before the trace", text, Some(field));
    }
    if let Some(a) = ds.final_allocated_bytes {
        row(
            s,
            "allocated at the end",
            bytes_iec(a),
            Some(("final_allocated_bytes", a)),
        );
    }
    if let Some(r) = ds.final_reserved_bytes {
        row(
            s,
            "reserved at the end",
            bytes_iec(r),
            Some(("final_reserved_bytes", r)),
        );
    }
    let events = format!(
        "{} ({} allocs, {} frees, {} OOMs; totals: {})",
        ds.memory_events,
        ds.allocs,
        ds.frees,
        ds.ooms,
        totals_name(ds.totals)
    );
    let n = i64::try_from(ds.memory_events).unwrap_or(i64::MAX);
    row(s, "memory events", events, Some(("memory_events", n)));
    rows
}
