//! `vramscope summary`: peak, reserved and final memory per device and the facts of the
//! trace, as text for a terminal and as JSON.

use std::io::{self, Write};
use std::path::Path;

use collector::analysis::{DeviceSummary, Summary};
use collector::timeline::TotalsSource;
use collector::units::{bytes_iec, duration_between};

use super::json_docs::SummaryDoc;
use super::nvml;
use super::style::{Paint, Tone};
use super::terminal::{one_line, path_line};
use super::text::{blocks_word, group, plural, when};

/// The summary as JSON ([`SummaryDoc`]: field names and units are a public contract).
pub fn summary_json(out: &mut impl Write, path: &Path, summary: &Summary) -> io::Result<()> {
    let doc = SummaryDoc::new(path.display().to_string(), summary);
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// The summary as text for a terminal: the file's facts, then one block per device, what
/// the driver saw, and the analyses' findings.
pub fn summary_text(out: &mut impl Paint, path: &Path, s: &Summary) -> io::Result<()> {
    writeln!(out, "{}", path_line(path))?;
    facts_text(out, s)?;
    if !s.has_memory_data && !nvml::has_samples(s) {
        writeln!(out)?;
        writeln!(
            out,
            "No memory events in this file ({}),",
            s.format.importer().memory_hint()
        )?;
        writeln!(
            out,
            "so there is nothing to say about memory: its ops and steps are counted above, and \
             `vramscope table` lists the ops."
        )?;
    }
    for d in &s.devices {
        writeln!(out)?;
        device_text(out, s.start_ns, d)?;
    }
    nvml::nvml_text(out, s)?;
    fragmentation_text(out, s)?;
    ooms_text(out, s)?;
    for g in s.growth.iter().filter(|g| g.steady_growth) {
        writeln!(out)?;
        writeln!(
            out,
            "steady growth on {}: allocated rises at every step end, {} per step on average (a leak?)",
            g.device,
            bytes_iec(g.average_growth_bytes)
        )?;
    }
    warnings_text(out, s)
}

/// Format, packing, contents, rank and GPUs: the lines under the file name.
fn facts_text(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    writeln!(
        out,
        "  format     {}, {}{}",
        s.format.describe(),
        s.era,
        if s.compressed { ", gzip" } else { "" }
    )?;
    if let Some(packed) = &s.packed {
        writeln!(out, "  packed     {packed}")?;
    }
    if let Some(from) = &s.categories_from {
        writeln!(out, "  categories {}", one_line(from))?;
    }
    writeln!(out, "  contents   {}", contents(s))?;
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
    Ok(())
}

fn fragmentation_text(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    for f in &s.fragmentation {
        writeln!(out)?;
        let when = if f.source == collector::analysis::fragmentation::FragmentationSource::Snapshot
        {
            "at the snapshot".to_owned()
        } else {
            format!("at the peak ({})", duration_between(s.start_ns, f.at_ns))
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
    Ok(())
}

fn ooms_text(out: &mut impl Write, s: &Summary) -> io::Result<()> {
    for o in &s.ooms {
        writeln!(out)?;
        writeln!(
            out,
            "out of memory on {} at {}: requested {}",
            o.device,
            duration_between(s.start_ns, o.at_ns),
            bytes_iec(o.requested_bytes)
        )?;
        writeln!(out, "  verdict: {}", super::oom::verdict_words(o))?;
        for g in &o.largest_live {
            writeln!(
                out,
                "  {:>12}  {:>5} {:<6}  {}",
                bytes_iec(g.bytes),
                group(g.blocks),
                blocks_word(g.blocks),
                one_line(&g.site)
            )?;
        }
    }
    Ok(())
}

/// A file that ends early, and the counted oddities, last.
fn warnings_text(out: &mut impl Paint, s: &Summary) -> io::Result<()> {
    if let Some(at) = s.truncated_at_byte {
        writeln!(out)?;
        out.paint(Tone::Warning, "warning:")?;
        writeln!(
            out,
            " the file ends early; complete events before byte {at} were read"
        )?;
    }
    if !s.warnings.is_empty() {
        writeln!(out)?;
        let parts: Vec<String> = s
            .warnings
            .iter()
            .map(|(k, v)| format!("{} {k}", group(*v)))
            .collect();
        out.paint(Tone::Warning, "warnings:")?;
        writeln!(out, " {}", parts.join("; "))?;
    }
    Ok(())
}

fn device_text(out: &mut impl Paint, start_ns: i64, d: &DeviceSummary) -> io::Result<()> {
    let name = d
        .name
        .as_deref()
        .map_or(String::new(), |n| format!("  {n}"));
    out.paint(Tone::Heading, &d.device.to_string())?;
    writeln!(out, "{name}")?;
    let at = |time_ns: Option<i64>| when(start_ns, time_ns);
    if let Some(peak) = d.peak_allocated_bytes {
        let op = d
            .peak_allocated_op
            .as_deref()
            .map_or(String::new(), |o| format!(" in {}", one_line(o)));
        writeln!(
            out,
            "  peak allocated   {}{}{op}",
            bytes_iec(peak),
            at(d.peak_allocated_at_ns)
        )?;
    }
    if let Some(r) = d.peak_reserved_bytes {
        writeln!(
            out,
            "  peak reserved    {}{}",
            bytes_iec(r),
            at(d.peak_reserved_at_ns)
        )?;
    }
    if let Some(r) = d.peak_requested_bytes {
        writeln!(
            out,
            "  peak requested   {}{} (the sizes asked for; allocated counts the allocator's blocks)",
            bytes_iec(r),
            at(d.peak_requested_at_ns)
        )?;
    }
    if let Some(c) = d.cache_at_peak_bytes {
        writeln!(
            out,
            "  cache at peak    {} (reserved but unallocated at the peak)",
            bytes_iec(c)
        )?;
    }
    super::categories::composition_text(out, d)?;
    let mut end = Vec::new();
    if let Some(a) = d.final_allocated_bytes {
        end.push(format!("allocated {}", bytes_iec(a)));
    }
    if let Some(r) = d.final_reserved_bytes {
        end.push(format!("reserved {}", bytes_iec(r)));
    }
    if let Some(r) = d.final_requested_bytes {
        end.push(format!("requested {}", bytes_iec(r)));
    }
    if !end.is_empty() {
        writeln!(out, "  at the end       {}", end.join(", "))?;
    }
    device_events_text(out, d)
}

/// The device's event counts, and frees of blocks from before the trace.
fn device_events_text(out: &mut impl Write, d: &DeviceSummary) -> io::Result<()> {
    let totals = match d.totals {
        Some(TotalsSource::Trace) => "; allocator totals from the trace",
        Some(TotalsSource::Reconstructed) => "; totals reconstructed from Bytes",
        None => "",
    };
    let mut parts = vec![
        plural(d.allocs, "alloc", "allocs"),
        plural(d.frees, "free", "frees"),
    ];
    if d.segment_events > 0 {
        parts.push(plural(d.segment_events, "segment event", "segment events"));
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
            "  note             {} of blocks allocated before the trace began",
            plural(d.frees_without_alloc, "free", "frees")
        )?;
    }
    Ok(())
}

/// What a file holds, in one line (the text summary and report.html say it alike):
/// "13,872 events, 1 op, 0 steps, 13,872 memory events, 168.063 ms long".
pub fn contents(s: &Summary) -> String {
    format!(
        "{}, {}, {}, {}, {} long",
        plural(s.events, "event", "events"),
        plural(s.ops, "op", "ops"),
        plural(s.steps, "step", "steps"),
        plural(s.memory_events, "memory event", "memory events"),
        duration_between(s.start_ns, s.end_ns)
    )
}
