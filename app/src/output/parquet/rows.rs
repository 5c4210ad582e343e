//! One input's rows as chunks for the writer: the collector's rows
//! ([`collector::analysis::columnar`]) put into columns, with the input's rank and path on
//! every row. Runs on the reader threads; the writer only appends and encodes.

use std::collections::HashMap;
use std::path::Path;

use collector::analysis::columnar::{
    self, MemoryEventRow, OpSpanRow, SampleRow, for_each_memory_event, for_each_op, for_each_sample,
};
use collector::model::DeviceId;
use collector::{Recording, Timeline};

use super::table::{CHUNK_ROWS, Chunk, Field, Values, empty_columns};
use super::{MEMORY_FIELDS, OP_FIELDS, SAMPLE_FIELDS};

/// A chunk of one table's rows.
#[derive(Debug)]
pub enum InputRows {
    /// memory_events.parquet.
    Memory(Chunk),
    /// ops.parquet.
    Ops(Chunk),
    /// samples.parquet.
    Samples(Chunk),
}

/// Columns being filled, with the strings they name.
struct Builder<'a> {
    fields: &'static [Field],
    columns: Vec<Values>,
    strings: Strings,
    rank: Option<i32>,
    path: &'a str,
}

/// A chunk's strings, each once, by id.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.to_owned());
        self.ids.insert(s.to_owned(), id);
        id
    }
}

/// One value of a row, in field order.
enum Cell<'a> {
    I32(Option<i32>),
    I64(Option<i64>),
    Str(Option<&'a str>),
}

impl<'a> Builder<'a> {
    fn new(fields: &'static [Field], rank: Option<i32>, path: &'a str) -> Builder<'a> {
        Builder {
            fields,
            columns: empty_columns(fields),
            strings: Strings::default(),
            rank,
            path,
        }
    }

    /// Append a row: the rank and path, then `cells` for the other fields in order.
    /// Returns a full chunk to send.
    fn push(&mut self, cells: &[Cell<'_>]) -> Option<Chunk> {
        let path = self.strings.id(self.path);
        let mut columns = self.columns.iter_mut();
        if let Some(Values::I32(v)) = columns.next() {
            v.push(self.rank);
        }
        if let Some(Values::Str(v)) = columns.next() {
            v.push(Some(path));
        }
        for (column, cell) in columns.zip(cells) {
            match (column, cell) {
                (Values::I32(v), Cell::I32(x)) => v.push(*x),
                (Values::I64(v), Cell::I64(x)) => v.push(*x),
                (Values::Str(v), Cell::Str(s)) => v.push(s.map(|s| self.strings.id(s))),
                // The cells follow the fields (tests/e2e/export_parquet.rs reads every column).
                _ => {}
            }
        }
        (self.rows() >= CHUNK_ROWS).then(|| self.take())
    }

    fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| match c {
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::Str(v) => v.len(),
        })
    }

    fn take(&mut self) -> Chunk {
        let strings = std::mem::take(&mut self.strings);
        Chunk {
            columns: std::mem::replace(&mut self.columns, empty_columns(self.fields)),
            strings: strings.list,
        }
    }
}

/// Hand `send` the input's rows, chunk by chunk: memory events, ops, then samples. Stops
/// when `send` returns false (the writer has stopped).
pub fn input_rows(
    path: &Path,
    rank: Option<i64>,
    rec: &Recording,
    timeline: &Timeline,
    mut send: impl FnMut(InputRows) -> bool,
) {
    // A rank beyond INT32 is no rank a launcher gives: null rather than wrapped.
    let rank = rank.and_then(|r| i32::try_from(r).ok());
    let path = path.to_string_lossy();
    let names: Vec<(DeviceId, String)> = rec
        .devices
        .iter()
        .map(|d| d.key)
        .chain([DeviceId::CPU])
        .map(|d| (d, d.to_string()))
        .collect();
    let device = |d: DeviceId| {
        names
            .iter()
            .find(|(key, _)| *key == d)
            .map_or("", |(_, s)| s.as_str())
    };
    let mut open = true;
    let mut b = Builder::new(&MEMORY_FIELDS, rank, &path);
    for_each_memory_event(rec, timeline, |r: MemoryEventRow<'_>| {
        let cells = memory_cells(&r, device(r.device));
        if let Some(chunk) = b.push(&cells).filter(|_| open) {
            open = send(InputRows::Memory(chunk));
        }
    });
    if open && b.rows() > 0 {
        open = send(InputRows::Memory(b.take()));
    }
    let mut b = Builder::new(&OP_FIELDS, rank, &path);
    for_each_op(rec, |r: OpSpanRow<'_>| {
        let cells = [
            Cell::Str(Some(r.name)),
            Cell::Str(Some(r.category)),
            Cell::Str(Some(r.tid)),
            Cell::I64(Some(r.start_ns)),
            Cell::I64(Some(r.end_ns)),
            Cell::I32(Some(i32::try_from(r.depth).unwrap_or(i32::MAX))),
        ];
        if let Some(chunk) = b.push(&cells).filter(|_| open) {
            open = send(InputRows::Ops(chunk));
        }
    });
    if open && b.rows() > 0 {
        open = send(InputRows::Ops(b.take()));
    }
    let mut b = Builder::new(&SAMPLE_FIELDS, rank, &path);
    for_each_sample(rec, |r: SampleRow| {
        let cells = [
            Cell::Str(Some(device(r.device))),
            Cell::I64(Some(r.ts_ns)),
            // Memory sizes fit an i64 (8 EiB).
            Cell::I64(Some(i64::try_from(r.used_bytes).unwrap_or(i64::MAX))),
            Cell::Str(Some(r.source.as_str())),
        ];
        if let Some(chunk) = b.push(&cells).filter(|_| open) {
            open = send(InputRows::Samples(chunk));
        }
    });
    if open && b.rows() > 0 {
        send(InputRows::Samples(b.take()));
    }
}

/// A memory event's cells after the rank and path, in [`MEMORY_FIELDS`] order.
fn memory_cells<'a>(r: &MemoryEventRow<'a>, device: &'a str) -> [Cell<'a>; 12] {
    [
        Cell::Str(Some(device)),
        Cell::I64(Some(r.ts_ns)),
        // Addresses are below 2^63 on every platform torch runs on.
        Cell::I64(r.addr.map(|a| a as i64)),
        Cell::I64(Some(r.bytes)),
        Cell::Str(Some(columnar::kind_name(r.kind))),
        Cell::I64(r.allocated_bytes),
        Cell::I64(r.reserved_bytes),
        Cell::Str(r.op),
        Cell::Str(Some(r.tid)),
        Cell::Str(r.class.map(|c| c.category.as_str())),
        Cell::Str(r.class.map(|c| c.phase.as_str())),
        Cell::Str(r.class.map(|c| c.evidence.as_str())),
    ]
}
