//! `vramscope diff`: the run-vs-run comparison as text, JSON and markdown, pure functions
//! of a [`Diff`] (the chart of `--chart` is in [`super::charts::compare`]).

use std::io::{self, Write};

use collector::analysis::diff::{Align, Change, DeviceDiff, Diff, DiffNote, OpDiff, Side};
use collector::model::DeviceId;
use collector::units::us_after as us;
use collector::units::{bytes_iec, duration_us, signed, torch_memory};
use serde::Serialize;

use super::terminal::one_line;
use super::text::{md_cell, md_code, plural, short_name};

/// The two inputs, as the user named them.
pub struct DiffFiles<'a> {
    /// Run A.
    pub a: &'a str,
    /// Run B.
    pub b: &'a str,
}

fn align_text(align: Align) -> &'static str {
    match align {
        Align::Start => "times are from each trace's start",
        Align::Step => "times are from each run's first training step",
    }
}

/// A size change: "12.00 MiB → 13.00 MiB (+1.00 MiB)".
fn bytes_change(c: &Change<i64>) -> String {
    let side = |v: Option<i64>| v.map_or("—".to_owned(), bytes_iec);
    let delta = c
        .delta
        .map_or(String::new(), |d| format!(" ({})", signed(d, bytes_iec)));
    format!("{} → {}{delta}", side(c.a), side(c.b))
}

fn time_change(c: &Change<f64>) -> String {
    let side = |v: Option<f64>| v.map_or("—".to_owned(), duration_us);
    format!("{} → {}", side(c.a), side(c.b))
}

/// The device lines of a diff, shared by text and markdown.
fn device_lines(d: &DeviceDiff) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    if d.peak_allocated_bytes.a.is_some() || d.peak_allocated_bytes.b.is_some() {
        lines.push((
            "peak allocated",
            format!(
                "{}, at {}",
                bytes_change(&d.peak_allocated_bytes),
                time_change(&change_us(&d.peak_allocated_at_ns))
            ),
        ));
    }
    for (label, c) in [
        ("peak reserved", &d.peak_reserved_bytes),
        ("final allocated", &d.final_allocated_bytes),
        ("final reserved", &d.final_reserved_bytes),
    ] {
        if c.a.is_some() || c.b.is_some() {
            lines.push((label, bytes_change(c)));
        }
    }
    lines
}

/// The columns of the op table: the sort column's self memory in A and B and its change,
/// the total's change, and the calls.
fn op_cells(o: &OpDiff, device: bool) -> [String; 6] {
    let (own, total) = if device {
        (&o.self_device_memory_usage, &o.device_memory_usage)
    } else {
        (&o.self_cpu_memory_usage, &o.cpu_memory_usage)
    };
    let side = |v: Option<i64>| v.map_or("—".to_owned(), torch_memory);
    let delta = |c: &Change<i64>| signed(c.delta.unwrap_or(0), torch_memory);
    let calls = |v: Option<i64>| v.map_or("—".to_owned(), |c| c.to_string());
    [
        side(own.a),
        side(own.b),
        delta(own),
        delta(total),
        calls(o.calls.a),
        calls(o.calls.b),
    ]
}

fn op_headers(device: bool) -> [&'static str; 7] {
    if device {
        [
            "Name",
            "Self CUDA A",
            "Self CUDA B",
            "Δ Self CUDA",
            "Δ CUDA Mem",
            "Calls A",
            "Calls B",
        ]
    } else {
        [
            "Name",
            "Self CPU A",
            "Self CPU B",
            "Δ Self CPU",
            "Δ CPU Mem",
            "Calls A",
            "Calls B",
        ]
    }
}

/// Why a diff lists no op: none in either run, or none changed.
fn no_ops_words(d: &Diff) -> String {
    match d.unchanged_left_out {
        0 => "no ops in either run".to_owned(),
        n => format!(
            "no op changed: {} the same in both runs",
            plural(n as u64, "op is", "ops are")
        ),
    }
}

/// A note in words (the CLI's text and markdown, the viewer's Compare panel).
pub fn note_text(note: &DiffNote) -> String {
    let list = |ids: &[DeviceId]| {
        let names: Vec<String> = ids.iter().map(DeviceId::to_string).collect();
        names.join(", ")
    };
    match note {
        DiffNote::NoMemoryEvents(side) => format!(
            "{} has no memory events (profile_memory=True?): its side of every row is empty",
            side_name(*side)
        ),
        DiffNote::NoStepsToAlign(side) => format!(
            "{} has no training steps (ProfilerStep#N): its times are from its start",
            side_name(*side)
        ),
        DiffNote::NoDeviceInCommon { a, b } => format!(
            "the runs share no device (A: {}; B: {}): no device row compares the two",
            list(a),
            list(b)
        ),
        DiffNote::DifferentModels { device, a, b } => format!(
            "{device} is a different device in each run (A: {a}; B: {b}): the same bytes are a \
             different share of each one's memory"
        ),
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::A => "A",
        Side::B => "B",
    }
}

/// Longest name shown in the text table.
const NAME_WIDTH: usize = 55;

/// The diff for a terminal.
pub fn diff_text(out: &mut impl Write, files: &DiffFiles<'_>, d: &Diff) -> io::Result<()> {
    writeln!(out, "A: {}", one_line(files.a))?;
    writeln!(out, "B: {}", one_line(files.b))?;
    writeln!(out, "({}; changes are B − A)", align_text(d.align))?;
    for note in &d.notes {
        writeln!(out, "note: {}", note_text(note))?;
    }
    for dev in &d.devices {
        writeln!(out)?;
        writeln!(out, "{}", dev.device)?;
        for (label, text) in device_lines(dev) {
            writeln!(out, "  {label:<16} {text}")?;
        }
    }
    writeln!(out)?;
    if d.ops.is_empty() {
        writeln!(out, "{}", no_ops_words(d))?;
        return Ok(());
    }
    let device = d.sorted_by == "self_device_memory_usage";
    let name_width = d
        .ops
        .iter()
        .map(|o| o.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, NAME_WIDTH);
    let headers = op_headers(device);
    write!(out, "{:<name_width$}", headers[0])?;
    for h in &headers[1..] {
        write!(out, "  {h:>12}")?;
    }
    writeln!(out)?;
    for o in &d.ops {
        let shown = one_line(&o.name);
        let name: String = if shown.chars().count() > NAME_WIDTH {
            shown.chars().take(NAME_WIDTH - 3).collect::<String>() + "..."
        } else {
            shown.into_owned()
        };
        write!(out, "{name:<name_width$}")?;
        for c in op_cells(o, device) {
            write!(out, "  {c:>12}")?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "{} ops, largest absolute change of {} first",
        d.ops.len(),
        d.sorted_by
    )?;
    Ok(())
}

/// The diff as JSON ([`DiffDoc`]): every value in bytes (µs for times) as `{a, b, delta}`.
pub fn diff_json(out: &mut impl Write, files: &DiffFiles<'_>, d: &Diff) -> io::Result<()> {
    let doc = DiffDoc::new(files.a, files.b, d);
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// The diff as markdown, for a pull request or an issue.
pub fn diff_markdown(out: &mut impl Write, files: &DiffFiles<'_>, d: &Diff) -> io::Result<()> {
    writeln!(out, "## Memory: A vs B")?;
    writeln!(out)?;
    writeln!(out, "- A: {}", md_code(files.a))?;
    writeln!(out, "- B: {}", md_code(files.b))?;
    writeln!(out, "- {}; changes are B − A", align_text(d.align))?;
    for note in &d.notes {
        writeln!(out, "- **note:** {}", md_cell(&note_text(note)))?;
    }
    if !d.devices.is_empty() {
        writeln!(out)?;
        writeln!(out, "| device | what | A → B (change) |")?;
        writeln!(out, "|---|---|---|")?;
        for dev in &d.devices {
            for (label, text) in device_lines(dev) {
                writeln!(out, "| {} | {label} | {} |", dev.device, md_cell(&text))?;
            }
        }
    }
    writeln!(out)?;
    if d.ops.is_empty() {
        writeln!(out, "{}.", no_ops_words(d))?;
        return Ok(());
    }
    let device = d.sorted_by == "self_device_memory_usage";
    let headers = op_headers(device);
    writeln!(out, "| {} |", headers.join(" | "))?;
    writeln!(out, "|---|{}", "---:|".repeat(headers.len() - 1))?;
    for o in &d.ops {
        let cells = op_cells(o, device);
        writeln!(
            out,
            "| {} | {} |",
            md_code(&short_name(&o.name)),
            cells.join(" | ")
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{} ops, largest absolute change of `{}` first.",
        d.ops.len(),
        d.sorted_by
    )?;
    Ok(())
}

/// `diff --format json`: every value in bytes (µs for times) as `{a, b, delta}`.
#[derive(Serialize)]
pub struct DiffDoc<'a> {
    a: &'a str,
    b: &'a str,
    /// What the comparison lacks, when anything: `[{"kind": "no_memory_events", "run": "a"}]`,
    /// `[{"kind": "no_device_in_common", "a": ["cuda:0"], "b": ["cpu"]}]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<serde_json::Value>,
    align: Align,
    devices: Vec<DeviceDiffDoc>,
    sorted_by: &'static str,
    ops: &'a [OpDiff],
    /// Ops left out by `--limit` because both runs agree on them.
    #[serde(skip_serializing_if = "is_zero")]
    unchanged_ops_left_out: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl<'a> DiffDoc<'a> {
    /// The document for a diff of the files `a` and `b`.
    pub fn new(a: &'a str, b: &'a str, d: &'a Diff) -> DiffDoc<'a> {
        DiffDoc {
            a,
            b,
            notes: d.notes.iter().map(note_json).collect(),
            align: d.align,
            devices: d.devices.iter().map(DeviceDiffDoc::new).collect(),
            sorted_by: d.sorted_by,
            ops: &d.ops,
            unchanged_ops_left_out: d.unchanged_left_out,
        }
    }
}

fn note_json(note: &DiffNote) -> serde_json::Value {
    let names = |ids: &[collector::model::DeviceId]| -> Vec<String> {
        ids.iter().map(ToString::to_string).collect()
    };
    match note {
        DiffNote::NoMemoryEvents(side) => {
            serde_json::json!({"kind": "no_memory_events", "run": side})
        }
        DiffNote::NoStepsToAlign(side) => {
            serde_json::json!({"kind": "no_steps_to_align", "run": side})
        }
        DiffNote::NoDeviceInCommon { a, b } => {
            serde_json::json!({"kind": "no_device_in_common", "a": names(a), "b": names(b)})
        }
        DiffNote::DifferentModels { device, a, b } => serde_json::json!(
            {"kind": "different_models", "device": device.to_string(), "a": a, "b": b}
        ),
    }
}

#[derive(Serialize)]
struct DeviceDiffDoc {
    device: String,
    peak_allocated_bytes: Change<i64>,
    peak_allocated_at_us: Change<f64>,
    peak_reserved_bytes: Change<i64>,
    final_allocated_bytes: Change<i64>,
    final_reserved_bytes: Change<i64>,
}

impl DeviceDiffDoc {
    fn new(d: &DeviceDiff) -> DeviceDiffDoc {
        DeviceDiffDoc {
            device: d.device.to_string(),
            peak_allocated_bytes: d.peak_allocated_bytes,
            peak_allocated_at_us: change_us(&d.peak_allocated_at_ns),
            peak_reserved_bytes: d.peak_reserved_bytes,
            final_allocated_bytes: d.final_allocated_bytes,
            final_reserved_bytes: d.final_reserved_bytes,
        }
    }
}

/// A change of times (ns after each run's origin) in µs.
pub fn change_us(c: &Change<i64>) -> Change<f64> {
    let (a, b) = (c.a.map(|t| us(0, t)), c.b.map(|t| us(0, t)));
    Change {
        a,
        b,
        delta: a.zip(b).map(|(a, b)| b - a),
    }
}
