//! Packed recordings: any [`Recording`] written as a compact vramscope recording, so a
//! 500 MB trace becomes a file small enough to attach to an issue (`vramscope pack`).
//!
//! A packed file is a vramscope recording (same magic, same line discipline) whose header
//! carries a `packed` object. Every line after it is one externally tagged record —
//! `{"strings":[…]}`, `{"mem":{…}}`, `{"ops":{…}}`, … — holding one part of the model in
//! columns: events become parallel arrays, times are deltas, and allocator totals are
//! stored as their difference from what the event's size predicts (almost always 0). The
//! whole file is gzip-compressed; the reader recognises it by content like any other.
//!
//! Format version 3 (written since issue 16) writes the memory-event and op columns, nearly
//! all of a trace's pack, as strings of base-64 variable-length numbers ([`vlq`]) instead
//! of JSON arrays, so reading them parses no JSON numbers; the reader reads both versions.
//!
//! Everything an analysis reads survives the round trip exactly: reading a pack gives the
//! same memory events, ops, steps, stacks, allocator state, samples, metadata and
//! diagnostics, in the same order and with the same ids, so every report on the pack
//! equals the report on the original. What a pack drops is what vramscope never reads
//! (kernel arguments, input shapes, flow events, …). The last line counts every part,
//! so a pack cut short is an error, never a silently smaller trace.

mod columns;
mod decode;
mod history;
mod lines;
mod read;
mod references;
mod stored;
mod summary_spans;
mod vlq;
mod vlq_columns;

pub(super) use read::read_body;
pub use stored::{
    SUMMARY_REVISION, StoredSummary, StoredTable, TABLE_REVISION, stored_summary, stored_table,
};

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::PACKED_VERSION;
use crate::model::{OpSpan, Recording};
use columns::{GpuColumns, HostColumns, MemColumns, OpColumns, ProcessColumns};
use lines::{AllocatorLine, DeviceLine, EndLine, MetaLine, SegmentLine, StackLine, ThreadLine};

/// Events per `mem`/`ops`/sample line. 32k memory events are ~1 MiB of JSON before
/// compression, far under the reader's [`super::MAX_LINE_BYTES`], and bound what a reader holds.
pub const EVENTS_PER_LINE: usize = 32 * 1024;
/// Characters of interned strings per `strings` line.
const STRING_BYTES_PER_LINE: usize = 1 << 20;
/// Blocks per `segments` line (a block is ~60 bytes of JSON).
const BLOCKS_PER_LINE: usize = 32 * 1024;

/// What the header's `packed` object says about the original.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PackInfo {
    /// The original's file name (no directories).
    #[serde(default)]
    pub source_name: Option<String>,
    /// The original's size on disk.
    #[serde(default)]
    pub source_bytes: Option<u64>,
    /// Whether user paths were stripped from stacks, op names and properties.
    #[serde(default)]
    pub redacted_paths: bool,
}

/// The first line of a packed file. Field order matters: the magic key comes first.
#[derive(Serialize)]
struct HeaderLine<'a> {
    vramscope_recording: u32,
    start_unix_ns: i64,
    command: [&'a str; 0],
    vramscope_version: &'a str,
    packed: &'a PackInfo,
}

/// Just the `packed` key of a header, read beside the plain [`super::Header`].
#[derive(Deserialize)]
pub(super) struct PackedProbe {
    #[serde(default)]
    pub packed: Option<PackInfo>,
}

/// One line after the header.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum PackLine {
    Meta(MetaLine),
    Strings(Vec<String>),
    Devices(Vec<DeviceLine>),
    Threads(Vec<ThreadLine>),
    Stacks(Vec<StackLine>),
    /// Memory events of a version-2 pack (JSON arrays).
    Mem(MemColumns),
    /// Ops of a version-2 pack (JSON arrays).
    Ops(OpColumns),
    /// Memory events of a version-3 pack.
    MemVlq(vlq_columns::MemVlq),
    /// Ops of a version-3 pack.
    OpsVlq(vlq_columns::OpsVlq),
    Steps(Vec<[i64; 3]>),
    /// `summary` of the whole pack (before the events; read by [`stored::stored_summary`]).
    Summary(Box<stored::SummaryLine>),
    Allocator(AllocatorLine),
    Segments(Vec<SegmentLine>),
    Ooms(Vec<(u32, Option<u64>)>),
    /// An allocator history ([`history`]), for the allocator simulation.
    History(history::HistoryLine),
    GpuSamples(GpuColumns),
    HostSamples(HostColumns),
    GpuProcessSamples(ProcessColumns),
    /// `record --torch-memory`'s storage tags.
    StorageTags(Vec<lines::TagLine>),
    /// The per-op table of the whole recording ([`stored`], before the events); the full
    /// reader skips it.
    Table(stored::TableLine),
    /// The spans `summary` reads ([`summary_spans`]), ahead of the memory events and ops.
    SummarySpans(summary_spans::SelectionLine),
    End(EndLine),
    /// A usable `summary_spans` record, decoded by the reader's parsing thread.
    #[serde(skip)]
    Selected(summary_spans::Selection),
    /// An `ops` record a reader that took a selection counts without decoding.
    #[serde(skip)]
    OpsCounted(usize),
}

/// Whether an analysis result a pack stores (stamped with its `revision` and the
/// `vramscope_version` that wrote it) may be trusted by this build, whose revision of that
/// result is `expected`: only one written by this very version and revision.
fn written_by_this_build(revision: u32, vramscope_version: &str, expected: u32) -> bool {
    revision == expected && vramscope_version == env!("CARGO_PKG_VERSION")
}

/// Write `rec` as a packed recording (uncompressed lines; the caller chooses the
/// container — `vramscope pack` gzips them). `rec` is borrowed mutably to compute the
/// summary the pack stores on it (its spans set aside meanwhile) and is left as it was.
pub fn write(out: &mut impl Write, rec: &mut Recording, info: &PackInfo) -> io::Result<()> {
    let header = HeaderLine {
        vramscope_recording: PACKED_VERSION,
        start_unix_ns: rec.meta.start_ns,
        command: [],
        vramscope_version: env!("CARGO_PKG_VERSION"),
        packed: info,
    };
    serde_json::to_writer(&mut *out, &header)?;
    out.write_all(b"\n")?;
    let mut line = |l: &PackLine| -> io::Result<()> {
        serde_json::to_writer(&mut *out, l)?;
        out.write_all(b"\n")
    };
    line(&PackLine::Meta(MetaLine::from_meta(rec)))?;
    write_tables(rec, &mut line)?;
    let (selection, summary) = summary_spans::selection_record(rec);
    if let Some(selection) = selection {
        line(&selection)?;
    }
    // The stored results before the events: a reader that finds none stops there.
    if let Some(table) = stored::table_record(rec) {
        line(&table)?;
    }
    if let Some(summary) = stored::summary_record(summary) {
        line(&summary)?;
    }
    write_events(rec, &mut line)?;
    write_allocator(rec, &mut line)?;
    write_samples(rec, &mut line)?;
    for tags in rec.storage_tags.chunks(super::tags::TAGS_PER_LINE) {
        line(&PackLine::StorageTags(
            tags.iter().map(lines::TagLine::from_tag).collect(),
        ))?;
    }
    line(&PackLine::End(EndLine::counting(rec)))
}

/// The tables events refer to: strings, devices, threads and stacks.
fn write_tables(
    rec: &Recording,
    line: &mut impl FnMut(&PackLine) -> io::Result<()>,
) -> io::Result<()> {
    let mut chunk = Vec::new();
    let mut chunk_bytes = 0;
    for i in 0..rec.strings.len() {
        let s = rec.strings.get(crate::model::StrId(i as u32));
        chunk_bytes += s.len();
        chunk.push(s.to_owned());
        if chunk_bytes >= STRING_BYTES_PER_LINE {
            line(&PackLine::Strings(std::mem::take(&mut chunk)))?;
            chunk_bytes = 0;
        }
    }
    if !chunk.is_empty() {
        line(&PackLine::Strings(chunk))?;
    }
    line(&PackLine::Devices(
        rec.devices.iter().map(DeviceLine::from_info).collect(),
    ))?;
    line(&PackLine::Threads(
        rec.threads.iter().map(ThreadLine::from_info).collect(),
    ))?;
    for stacks in rec.stacks.chunks(EVENTS_PER_LINE) {
        line(&PackLine::Stacks(
            stacks.iter().map(|s| StackLine::from_frames(s)).collect(),
        ))?;
    }
    Ok(())
}

/// Memory events, ops and steps.
fn write_events(
    rec: &Recording,
    line: &mut impl FnMut(&PackLine) -> io::Result<()>,
) -> io::Result<()> {
    let mut mem = columns::MemEncoder::default();
    for events in rec.mem_events.chunks(EVENTS_PER_LINE) {
        line(&PackLine::MemVlq(vlq_columns::MemVlq::from_columns(
            &mem.encode(events),
        )))?;
    }
    let mut ops = columns::OpEncoder::default();
    for start in (0..rec.ops.len()).step_by(EVENTS_PER_LINE) {
        let spans: Vec<OpSpan> = rec.ops.iter().skip(start).take(EVENTS_PER_LINE).collect();
        line(&PackLine::OpsVlq(vlq_columns::OpsVlq::from_columns(
            &ops.encode(&spans),
        )))?;
    }
    for steps in rec.steps.chunks(EVENTS_PER_LINE) {
        line(&PackLine::Steps(
            steps
                .iter()
                .map(|s| [s.number, s.start_ns, s.end_ns])
                .collect(),
        ))?;
    }
    Ok(())
}

/// The allocator state, its segments in batches of about [`BLOCKS_PER_LINE`] blocks, and
/// the OOM details.
fn write_allocator(
    rec: &Recording,
    line: &mut impl FnMut(&PackLine) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(state) = &rec.allocator {
        line(&PackLine::Allocator(AllocatorLine::from_state(state)))?;
        let mut batch = Vec::new();
        let mut blocks = 0;
        for s in &state.segments {
            blocks += s.blocks.len().max(1);
            batch.push(SegmentLine::from_segment(s));
            if blocks >= BLOCKS_PER_LINE {
                line(&PackLine::Segments(std::mem::take(&mut batch)))?;
                blocks = 0;
            }
        }
        if !batch.is_empty() {
            line(&PackLine::Segments(batch))?;
        }
    }
    for h in history::history_lines(rec, EVENTS_PER_LINE) {
        line(&PackLine::History(h))?;
    }
    for ooms in rec.oom_details.chunks(EVENTS_PER_LINE) {
        line(&PackLine::Ooms(
            ooms.iter()
                .map(|o| (o.event, o.device_free_bytes))
                .collect(),
        ))?;
    }
    Ok(())
}

/// NVML, host and per-process samples.
fn write_samples(
    rec: &Recording,
    line: &mut impl FnMut(&PackLine) -> io::Result<()>,
) -> io::Result<()> {
    let mut gpu = columns::GpuEncoder::default();
    for samples in rec.gpu_samples.chunks(EVENTS_PER_LINE) {
        line(&PackLine::GpuSamples(gpu.encode(samples)))?;
    }
    let mut host = columns::HostEncoder::default();
    for samples in rec.host_samples.chunks(EVENTS_PER_LINE) {
        line(&PackLine::HostSamples(host.encode(samples)))?;
    }
    let mut process = columns::ProcessEncoder::default();
    for samples in rec.gpu_process_samples.chunks(EVENTS_PER_LINE) {
        line(&PackLine::GpuProcessSamples(process.encode(samples)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_revisions;
#[cfg(test)]
mod tests_stored;
#[cfg(test)]
mod tests_v3;
