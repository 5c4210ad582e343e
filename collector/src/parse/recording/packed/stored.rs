//! The per-op table and the summary a pack stores beside its events: [`key_averages`] and
//! `summary` of the whole recording, pure functions of what the pack holds, computed once
//! by `pack` so `table` and `summary` of a pack need not decode millions of events and
//! analyse them again (the table is most of `table`'s time on a pack of a 2 GB trace;
//! docs/PERFORMANCE.md has the measurements).
//!
//! A stored result is used only when the pack is whole: a gzip file whose every member's
//! CRC checks, with the end record last, and a result of this vramscope's version and
//! revision ([`TABLE_REVISION`], [`SUMMARY_REVISION`]). Anything else — an older or damaged
//! pack, a window asked for — and the command reads the pack in full and computes, as for
//! any input (so a damaged pack still gets the full reader's error). The results come
//! before the events, so a pack without one, or with one of another build, is told at its
//! first lines rather than after inflating all of it (0.35 s of a 10 GB trace's pack).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use serde::{Deserialize, Serialize};

use super::super::reader::{read_header, read_line};
use super::lines::MetaLine;
use super::{PackInfo, PackLine, PackedProbe};
use crate::analysis::{OpRow, Summary, key_averages};
use crate::model::{Meta, Recording, SourceFormat};
use crate::parse::{LoadOptions, input};

/// The revision of the rows a pack stores. Bump it whenever [`key_averages`] of the same
/// recording changes (a rule of torch's reproduced differently, a row field added): packs
/// of another revision are then recomputed from their events, never trusted.
pub const TABLE_REVISION: u32 = 1;

/// Most bytes of a stored table's or summary's record, half the longest line a reader
/// accepts ([`super::super::MAX_LINE_BYTES`]): what the reader holds for it. A larger one (a
/// table of hundreds of thousands of distinct op names, a summary of thousands of OOMs) is
/// not stored; `table` and `summary` compute it.
const MAX_STORED_RECORD_BYTES: usize = super::super::MAX_LINE_BYTES / 2;

/// How every pack begins: its header's first key.
const PACK_START: &[u8] = b"{\"vramscope_recording\":";

/// The revision of the summary a pack stores. Bump it whenever `summary` of the same
/// recording changes (an analysis added or made to count differently): packs of another
/// revision are then summarised from their events, never trusted. `tests_revisions` pins it
/// beside a hash of the summaries stored for real inputs, so a change without a bump fails.
pub const SUMMARY_REVISION: u32 = 7;

/// The `summary` record: `summary` of the pack, as computed from its events when it was
/// written (`packed` is filled in by the reader, which knows where the pack came from).
#[derive(Serialize, Deserialize)]
pub struct SummaryLine {
    revision: u32,
    vramscope_version: String,
    summary: Summary,
}

/// The `summary` record of `summary` (what `summary` of the pack being written computes),
/// or `None` when it would be larger than [`MAX_STORED_RECORD_BYTES`].
pub(super) fn summary_record(summary: Summary) -> Option<PackLine> {
    let line = PackLine::Summary(Box::new(SummaryLine {
        revision: SUMMARY_REVISION,
        vramscope_version: env!("CARGO_PKG_VERSION").to_owned(),
        summary,
    }));
    let bytes = serde_json::to_vec(&line).ok()?.len();
    (bytes <= MAX_STORED_RECORD_BYTES).then_some(line)
}

/// The `table` record: the rows and what `table`'s text says of the recording.
#[derive(Serialize, Deserialize)]
pub struct TableLine {
    revision: u32,
    vramscope_version: String,
    start_ns: i64,
    format: String,
    has_memory: bool,
    has_ops: bool,
    rows: Vec<RowLine>,
}

/// A row: `[name, calls, self CPU, CPU, self device, device, on device, user annotation]`.
type RowLine = (RowName, u64, i64, i64, i64, i64, bool, bool);

/// A row's name: the id of the pack's string that spells it (most rows: op names), else
/// the text (`ProfilerStep*`, `[memory]`). Ids keep the record small: on a small trace
/// the names written out were a fifth of the pack.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RowName {
    Id(u32),
    Text(String),
}

/// The table of a whole recording, as `vramscope table` shows it without a window.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTable {
    /// [`key_averages`] of the whole recording, in its order.
    pub rows: Vec<OpRow>,
    /// The recording's first timestamp.
    pub start_ns: i64,
    /// The original's format.
    pub format: SourceFormat,
    /// Whether the recording has memory events.
    pub has_memory: bool,
    /// Whether it has op spans.
    pub has_ops: bool,
}

/// The `table` record of `rec`, or `None` when it would be larger than
/// [`MAX_STORED_RECORD_BYTES`].
pub(super) fn table_record(rec: &Recording) -> Option<PackLine> {
    let rows = key_averages(rec, None)
        .into_iter()
        .map(|r| {
            (
                match rec.strings.find(&r.name) {
                    Some(id) => RowName::Id(id.0),
                    None => RowName::Text(r.name),
                },
                r.calls,
                r.self_cpu_memory_usage,
                r.cpu_memory_usage,
                r.self_device_memory_usage,
                r.device_memory_usage,
                r.on_device,
                r.user_annotation,
            )
        })
        .collect();
    let line = PackLine::Table(TableLine {
        revision: TABLE_REVISION,
        vramscope_version: env!("CARGO_PKG_VERSION").to_owned(),
        start_ns: rec.meta.start_ns,
        format: rec.meta.format.as_str().to_owned(),
        has_memory: !rec.mem_events.is_empty(),
        has_ops: !rec.ops.is_empty(),
        rows,
    });
    let bytes = serde_json::to_vec(&line).ok()?.len();
    (bytes <= MAX_STORED_RECORD_BYTES).then_some(line)
}

impl TableLine {
    /// The table, if this vramscope may trust it, its names looked up in `strings`.
    fn into_table(self, strings: &[String]) -> Option<StoredTable> {
        if !super::written_by_this_build(self.revision, &self.vramscope_version, TABLE_REVISION) {
            return None;
        }
        let rows = self.rows.into_iter().map(|r| {
            let name = match r.0 {
                RowName::Id(id) => strings.get(id as usize)?.clone(),
                RowName::Text(text) => text,
            };
            Some(OpRow {
                name,
                calls: r.1,
                self_cpu_memory_usage: r.2,
                cpu_memory_usage: r.3,
                self_device_memory_usage: r.4,
                device_memory_usage: r.5,
                on_device: r.6,
                user_annotation: r.7,
                net: None,
            })
        });
        Some(StoredTable {
            rows: rows.collect::<Option<_>>()?,
            start_ns: self.start_ns,
            format: SourceFormat::from_id(&self.format)?,
            has_memory: self.has_memory,
            has_ops: self.has_ops,
        })
    }
}

/// The table stored in the pack at `path`, read as `options` say (its decompressed limit),
/// when the pack is whole and of this vramscope's table revision; `None` for anything else,
/// whatever the file is. Reads every line but parses only the table, the strings, the
/// facts and the end record.
pub fn stored_table(path: &Path, options: LoadOptions) -> Option<StoredTable> {
    let trusted = |line: &PackLine| match line {
        PackLine::Table(t) => {
            super::written_by_this_build(t.revision, &t.vramscope_version, TABLE_REVISION)
        }
        _ => false,
    };
    match stored_record(path, options, b"{\"table\":", trusted)? {
        (PackLine::Table(table), stored) => table.into_table(&stored.strings),
        _ => None,
    }
}

/// What `summary` needs of a pack, stored in it: the summary, and the pack's facts.
pub struct StoredSummary {
    /// `summary` of the pack, `packed` saying where it came from as a read of it says.
    pub summary: Summary,
    /// The pack's facts (the original's): what several ranks are ordered and staged by.
    pub meta: Meta,
}

/// The summary stored in the pack at `path`, as [`stored_table`] reads the table: when the
/// pack is whole and its summary of this vramscope's revision; `None` for anything else.
pub fn stored_summary(path: &Path, options: LoadOptions) -> Option<StoredSummary> {
    let trusted = |line: &PackLine| match line {
        PackLine::Summary(s) => {
            super::written_by_this_build(s.revision, &s.vramscope_version, SUMMARY_REVISION)
        }
        _ => false,
    };
    let (line, stored) = match stored_record(path, options, b"{\"summary\":", trusted)? {
        (PackLine::Summary(line), stored) => (line, stored),
        _ => return None,
    };
    let mut facts = Recording::empty(SourceFormat::VramscopeRecording, "");
    stored.meta?.apply(&mut facts).ok()?;
    let meta = facts.meta;
    let summary = Summary {
        packed: Some(super::read::pack_note(&stored.info)),
        ..line.summary
    };
    Some(StoredSummary { summary, meta })
}

/// What [`stored_record`] reads besides the record: the pack's strings, its facts and what
/// its header says of it.
struct Stored {
    strings: Vec<String>,
    meta: Option<MetaLine>,
    info: PackInfo,
}

/// The record of a whole pack whose line starts with `prefix`, when `trusted` takes it, and
/// what else the pack says ([`Stored`]): every gzip member's CRC checked, the end record
/// last; `None` for anything else.
fn stored_record(
    path: &Path,
    options: LoadOptions,
    prefix: &[u8],
    trusted: impl Fn(&PackLine) -> bool,
) -> Option<(PackLine, Stored)> {
    // Only a regular file is read twice (here, then by the load when nothing is stored): a
    // FIFO or /dev/stdin gives its bytes once, so the load takes them.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let options = LoadOptions {
        salvage_truncated: false,
        ..options
    };
    let opened = input::open_watched(path, Arc::new(AtomicU64::new(0)), None, options).ok()?;
    // Only gzip packs (all `pack` writes): their CRC vouches for every line not parsed. Any
    // other input is told by its first bytes, before a line of it is read.
    let gzip = opened.gzip?;
    if !opened.input.head.starts_with(PACK_START) {
        return None;
    }
    let mut reader = BufReader::new(opened.input.reader);
    let mut buf = Vec::new();
    read_header(&mut reader, &mut buf).ok()?;
    let info = serde_json::from_slice::<PackedProbe>(&buf).ok()?.packed?;
    let (record, strings, meta) = record_and_end(&mut reader, &mut buf, prefix, trusted)?;
    gzip.read_to_end().ok()?;
    let report = gzip.report();
    if report.damage.is_some() || report.trailing.is_some() {
        return None;
    }
    Some((
        record,
        Stored {
            strings,
            meta,
            info,
        },
    ))
}

/// Lines that start a pack's events: a stored result comes before them.
const EVENT_LINES: [&[u8]; 4] = [
    b"{\"mem_vlq\":",
    b"{\"ops_vlq\":",
    b"{\"mem\":",
    b"{\"ops\":",
];

/// The lines after the header: the record starting with `prefix` (when `trusted` takes it),
/// the strings and the facts, if the end record is the last line. `None` as soon as the
/// events begin without the record, or the record is not trusted.
fn record_and_end(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    prefix: &[u8],
    trusted: impl Fn(&PackLine) -> bool,
) -> Option<(PackLine, Vec<String>, Option<MetaLine>)> {
    let mut record = None;
    let mut strings = Vec::new();
    let mut meta = None;
    let mut ended = false;
    loop {
        if read_line(reader, buf, 0).ok()? == 0 {
            break;
        }
        if ended {
            return None;
        }
        if buf.starts_with(b"{\"strings\":") {
            match serde_json::from_slice(buf).ok()? {
                PackLine::Strings(more) => strings.extend(more),
                _ => return None,
            }
        } else if buf.starts_with(b"{\"meta\":") {
            match serde_json::from_slice(buf).ok()? {
                PackLine::Meta(line) => meta = Some(line),
                _ => return None,
            }
        } else if buf.starts_with(prefix) {
            let line = serde_json::from_slice(buf).ok()?;
            record = Some(line).filter(|line| trusted(line));
            record.as_ref()?;
        } else if record.is_none() && EVENT_LINES.iter().any(|e| buf.starts_with(e)) {
            return None;
        } else if buf.starts_with(b"{\"end\":") && buf.ends_with(b"\n") {
            ended = matches!(serde_json::from_slice(buf).ok()?, PackLine::End(_));
        }
    }
    if ended {
        Some((record?, strings, meta))
    } else {
        None
    }
}
