//! Reporters: pure functions from analysis results to text, JSON and CSV.

pub mod diff;
pub mod nvml;

use std::io::{self, Write};
use std::path::Path;

use collector::analysis::live::LiveGroup;
use collector::analysis::{DeviceSummary, OpRow, Summary};
use collector::units::{bytes_iec, duration_us, torch_memory};
use serde::Serialize;

/// How to record memory next time, for each source format.
fn memory_hint(format: &str) -> &'static str {
    match format {
        "nsight-systems-sqlite" | "nsight-systems-json" => {
            "profile with nsys --cuda-memory-usage=true"
        }
        "pytorch-allocator-snapshot" => {
            "call torch.cuda.memory._record_memory_history() before the run"
        }
        "vramscope-recording" => "record with vramscope record --torch-memory on a GPU",
        _ => "profile with torch.profiler.profile(profile_memory=True)",
    }
}

/// Facts shown around the per-op table.
pub struct TableContext<'a> {
    pub path: &'a Path,
    pub total_rows: usize,
    pub sort: &'a str,
    pub window: Option<(f64, f64)>,
    pub has_memory: bool,
    /// Source format identifier, for hints.
    pub format: &'static str,
    /// Longest name among *all* rows, shown or not: torch sizes the column before the limit.
    pub longest_name: usize,
    /// Whether to show the CUDA columns: torch does when any row has self device memory > 0.
    pub device_columns: bool,
}

/// torch's `_build_table` constants.
const NAME_COLUMN_MAX: usize = 55;
const COLUMN_WIDTH: usize = 12;
const SPACING: usize = 2;

/// The table as torch prints it (memory columns only): same headers, widths, truncation
/// and units, "CUDA Mem" columns only when the trace has device memory.
pub fn table_text(out: &mut impl Write, rows: &[OpRow], ctx: &TableContext<'_>) -> io::Result<()> {
    if !ctx.has_memory {
        writeln!(
            out,
            "note: {} has no memory events ({})",
            ctx.path.display(),
            memory_hint(ctx.format)
        )?;
    }
    if rows.is_empty() {
        writeln!(out, "no ops in {}", describe_window(ctx.window))?;
        return Ok(());
    }
    let device = ctx.device_columns;
    let name_width = (ctx.longest_name + 4).min(NAME_COLUMN_MAX);
    let mut headers = vec!["Name", "CPU Mem", "Self CPU Mem"];
    if device {
        headers.extend(["CUDA Mem", "Self CUDA Mem"]);
    }
    headers.push("# of Calls");
    let widths: Vec<usize> = std::iter::once(name_width)
        .chain(std::iter::repeat_n(COLUMN_WIDTH, headers.len() - 1))
        .collect();
    let separator: String = widths
        .iter()
        .map(|w| format!("{}{}", "-".repeat(*w), " ".repeat(SPACING)))
        .collect();
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}{}", " ".repeat(SPACING)))
            .collect()
    };
    writeln!(out, "{separator}")?;
    writeln!(
        out,
        "{}",
        line(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>())
    )?;
    writeln!(out, "{separator}")?;
    for r in rows {
        let mut name = r.name.clone();
        if name.chars().count() >= NAME_COLUMN_MAX - 3 {
            name = name.chars().take(NAME_COLUMN_MAX - 3).collect::<String>() + "...";
        }
        let mut cells = vec![
            name,
            torch_memory(r.cpu_memory_usage),
            torch_memory(r.self_cpu_memory_usage),
        ];
        if device {
            cells.push(torch_memory(r.device_memory_usage));
            cells.push(torch_memory(r.self_device_memory_usage));
        }
        cells.push(r.calls.to_string());
        writeln!(out, "{}", line(&cells))?;
    }
    writeln!(out, "{separator}")?;
    writeln!(
        out,
        "{} of {} rows, sorted by {}, {}",
        rows.len(),
        ctx.total_rows,
        ctx.sort,
        describe_window(ctx.window)
    )?;
    Ok(())
}

fn describe_window(window: Option<(f64, f64)>) -> String {
    match window {
        None => "whole trace".to_owned(),
        Some((a, b)) => format!(
            "window {} – {} after trace start",
            duration_us(a),
            duration_us(b)
        ),
    }
}

/// The table as a JSON array with torch's field names and integer bytes.
pub fn table_json(out: &mut impl Write, rows: &[OpRow]) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, rows)?;
    writeln!(out)
}

/// The table as CSV with a header row.
pub fn table_csv(out: &mut impl Write, rows: &[OpRow]) -> io::Result<()> {
    writeln!(
        out,
        "name,calls,self_cpu_memory_usage,cpu_memory_usage,self_device_memory_usage,device_memory_usage"
    )?;
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{}",
            csv_field(&r.name),
            r.calls,
            r.self_cpu_memory_usage,
            r.cpu_memory_usage,
            r.self_device_memory_usage,
            r.device_memory_usage
        )?;
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// What `vramscope live` shows.
#[derive(Serialize)]
pub struct LiveReport {
    pub device: String,
    pub at: String,
    pub at_us: f64,
    pub allocated_bytes: i64,
    pub reserved_bytes: Option<i64>,
    pub live_bytes: i64,
    pub live_blocks: u64,
    pub groups: Vec<LiveGroup>,
}

/// The live report as JSON.
pub fn live_json(out: &mut impl Write, report: &LiveReport) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}

/// The live report as text: one line per group with a size bar.
pub fn live_text(out: &mut impl Write, path: &Path, r: &LiveReport) -> io::Result<()> {
    let reserved = r
        .reserved_bytes
        .map_or(String::new(), |b| format!(", reserved {}", bytes_iec(b)));
    writeln!(
        out,
        "{} — {} at {} ({})",
        path.display(),
        r.device,
        r.at,
        duration_us(r.at_us)
    )?;
    writeln!(
        out,
        "allocated {}{reserved}; {} live blocks with known addresses hold {}",
        bytes_iec(r.allocated_bytes),
        group(r.live_blocks),
        bytes_iec(r.live_bytes)
    )?;
    writeln!(out)?;
    let largest = r.groups.first().map_or(1, |g| g.bytes.max(1));
    for g in &r.groups {
        let bar = "█".repeat(((g.bytes as f64 / largest as f64) * 20.0).round() as usize);
        writeln!(
            out,
            "{:>12}  {:>6} {:<6}  {bar:<20}  {}",
            bytes_iec(g.bytes),
            group(g.blocks),
            blocks_word(g.blocks),
            g.site
        )?;
    }
    Ok(())
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    file: String,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// The summary as JSON.
pub fn summary_json(out: &mut impl Write, path: &Path, summary: &Summary) -> io::Result<()> {
    let doc = SummaryJson {
        file: path.display().to_string(),
        summary,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// The summary as text for a terminal.
pub fn summary_text(out: &mut impl Write, path: &Path, s: &Summary) -> io::Result<()> {
    writeln!(out, "{}", path.display())?;
    writeln!(
        out,
        "  format     {}, {}{}",
        s.format_name,
        s.era,
        if s.compressed { ", gzip" } else { "" }
    )?;
    if let Some(packed) = &s.packed {
        writeln!(out, "  packed     {packed}")?;
    }
    writeln!(
        out,
        "  contents   {} events, {} ops, {} steps, {} memory events, {} long",
        group(s.events),
        group(s.ops),
        s.steps,
        group(s.memory_events),
        duration_us(s.duration_us)
    )?;
    if let Some(rank) = s.rank {
        let world = s.world_size.map_or(String::new(), |w| format!(" of {w}"));
        let backend = s
            .backend
            .as_deref()
            .map_or(String::new(), |b| format!(" ({b})"));
        writeln!(out, "  rank       {rank}{world}{backend}")?;
    }
    for g in &s.gpus {
        let mem = g
            .total_memory_bytes
            .map_or(String::new(), |b| format!(", {}", bytes_iec(b as i64)));
        writeln!(
            out,
            "  gpu        {} {}{mem}",
            g.device,
            g.name.as_deref().unwrap_or("?")
        )?;
    }
    if !s.has_memory_data && !nvml::has_samples(s) {
        writeln!(out)?;
        writeln!(
            out,
            "No memory events in this file ({}),",
            memory_hint(s.format)
        )?;
        writeln!(
            out,
            "so there is nothing to say about memory. Ops and steps are listed above."
        )?;
    }
    for d in &s.devices {
        writeln!(out)?;
        device_text(out, d)?;
    }
    nvml::nvml_text(out, s)?;
    for f in &s.fragmentation {
        writeln!(out)?;
        let when = if f.source == "snapshot" {
            "at the snapshot".to_owned()
        } else {
            format!("at the peak ({})", duration_us(f.at_us))
        };
        writeln!(out, "fragmentation {} {when}", f.device)?;
        writeln!(
            out,
            "  {} reserved in {} {}, {} allocated, {} free in {} {}; largest free block {}",
            bytes_iec(f.reserved_bytes),
            f.segments,
            if f.segments == 1 {
                "segment"
            } else {
                "segments"
            },
            bytes_iec(f.allocated_bytes),
            bytes_iec(f.cache_free_bytes),
            group(f.free_blocks),
            blocks_word(f.free_blocks),
            bytes_iec(f.largest_free_block_bytes)
        )?;
        writeln!(
            out,
            "  external fragmentation {:.1}%; small pool {} free of {}, large pool {} free of {}",
            f.external_fragmentation * 100.0,
            bytes_iec(f.small_pool.free_bytes),
            bytes_iec(f.small_pool.reserved_bytes),
            bytes_iec(f.large_pool.free_bytes),
            bytes_iec(f.large_pool.reserved_bytes)
        )?;
    }
    for o in &s.ooms {
        writeln!(out)?;
        writeln!(
            out,
            "out of memory on {} at {}: requested {}",
            o.device,
            duration_us(o.at_us),
            bytes_iec(o.requested_bytes)
        )?;
        writeln!(out, "  verdict: {}", o.verdict)?;
        for g in &o.largest_live {
            writeln!(
                out,
                "  {:>12}  {:>5} {:<6}  {}",
                bytes_iec(g.bytes),
                group(g.blocks),
                blocks_word(g.blocks),
                g.site
            )?;
        }
    }
    for g in s.growth.iter().filter(|g| g.steady_growth) {
        writeln!(out)?;
        writeln!(
            out,
            "steady growth on {}: allocated rises at every step end, {} per step on average (a leak?)",
            g.device,
            bytes_iec(g.average_growth_bytes)
        )?;
    }
    if let Some(at) = s.truncated_at_byte {
        writeln!(out)?;
        writeln!(
            out,
            "warning: the file ends early; complete events before byte {at} were read"
        )?;
    }
    if !s.warnings.is_empty() {
        writeln!(out)?;
        let parts: Vec<String> = s
            .warnings
            .iter()
            .map(|(k, v)| format!("{} {k}", group(*v)))
            .collect();
        writeln!(out, "warnings: {}", parts.join("; "))?;
    }
    Ok(())
}

fn device_text(out: &mut impl Write, d: &DeviceSummary) -> io::Result<()> {
    let name = d
        .name
        .as_deref()
        .map_or(String::new(), |n| format!("  {n}"));
    writeln!(out, "{}{name}", d.device)?;
    let at = |us: Option<f64>| us.map_or(String::new(), |u| format!(" at {}", duration_us(u)));
    if let Some(peak) = d.peak_allocated_bytes {
        let op = d
            .peak_allocated_op
            .as_deref()
            .map_or(String::new(), |o| format!(" in {o}"));
        writeln!(
            out,
            "  peak allocated   {}{}{op}",
            bytes_iec(peak),
            at(d.peak_allocated_at_us)
        )?;
    }
    if let Some(r) = d.peak_reserved_bytes {
        writeln!(
            out,
            "  peak reserved    {}{}",
            bytes_iec(r),
            at(d.peak_reserved_at_us)
        )?;
    }
    if let Some(c) = d.cache_at_peak_bytes {
        writeln!(
            out,
            "  cache at peak    {} (reserved but unallocated at the peak)",
            bytes_iec(c)
        )?;
    }
    let mut end = Vec::new();
    if let Some(a) = d.final_allocated_bytes {
        end.push(format!("allocated {}", bytes_iec(a)));
    }
    if let Some(r) = d.final_reserved_bytes {
        end.push(format!("reserved {}", bytes_iec(r)));
    }
    if !end.is_empty() {
        writeln!(out, "  at the end       {}", end.join(", "))?;
    }
    let totals = match d.totals {
        "trace" => "; allocator totals from the trace",
        "reconstructed" => "; totals reconstructed from Bytes",
        _ => "",
    };
    let mut parts = vec![
        format!("{} allocs", group(d.allocs)),
        format!("{} frees", group(d.frees)),
    ];
    if d.segment_events > 0 {
        parts.push(format!("{} segment events", group(d.segment_events)));
    }
    if d.ooms > 0 {
        parts.push(format!("{} out-of-memory", d.ooms));
    }
    writeln!(
        out,
        "  events           {} ({}){totals}",
        group(d.memory_events),
        parts.join(", ")
    )?;
    if d.frees_without_alloc > 0 {
        writeln!(
            out,
            "  note             {} frees of blocks allocated before the trace began",
            group(d.frees_without_alloc)
        )?;
    }
    Ok(())
}

/// 1234567 → "1,234,567".
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "block" or "blocks", as a count needs.
pub fn blocks_word(n: u64) -> &'static str {
    if n == 1 { "block" } else { "blocks" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }

    #[test]
    fn csv_quotes_when_needed() {
        assert_eq!(csv_field("aten::mm"), "aten::mm");
        assert_eq!(csv_field("f(a, b)"), "\"f(a, b)\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
