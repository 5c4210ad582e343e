//! `export --format parquet`: a directory of three Parquet files (memory events, ops,
//! samples) built from the collector's rows ([`collector::analysis::columnar`]), for
//! DuckDB, Spark, pandas and the like. The schemas are the contract of docs/FORMAT.md.

mod rows;
mod table;

use std::fs::{File, OpenOptions};
use std::path::Path;

use anyhow::{Context, Result};

use crate::output::file::DirShape;
pub use rows::{InputRows, input_rows};
pub use table::{Field, Kind, TableWriter};

/// The memory events file.
pub const MEMORY_EVENTS: &str = "memory_events.parquet";
/// The ops file.
pub const OPS: &str = "ops.parquet";
/// The samples file.
pub const SAMPLES: &str = "samples.parquet";

/// What an export directory holds: the three files, each starting with Parquet's magic.
pub const EXPORT_SHAPE: DirShape = DirShape {
    what: "a vramscope Parquet export",
    marker: MEMORY_EVENTS,
    marker_head: "PAR1",
    made: is_export_file,
};

fn is_export_file(name: &str) -> bool {
    [MEMORY_EVENTS, OPS, SAMPLES].contains(&name)
}

const fn field(name: &'static str, kind: Kind, nullable: bool) -> Field {
    Field {
        name,
        kind,
        nullable,
    }
}

/// The input's rank (null when unknown) and file, first in every table.
const RANK: Field = field("rank", Kind::I32, true);
const PATH: Field = field("path", Kind::Str, false);

/// memory_events.parquet.
pub const MEMORY_FIELDS: [Field; 14] = [
    RANK,
    PATH,
    field("device", Kind::Str, false),
    field("ts_ns", Kind::I64, false),
    field("addr", Kind::I64, true),
    field("bytes", Kind::I64, false),
    field("kind", Kind::Str, false),
    field("allocated_bytes", Kind::I64, true),
    field("reserved_bytes", Kind::I64, true),
    field("op", Kind::Str, true),
    field("tid", Kind::Str, false),
    field("category", Kind::Str, true),
    field("phase", Kind::Str, true),
    field("evidence", Kind::Str, true),
];

/// ops.parquet.
pub const OP_FIELDS: [Field; 8] = [
    RANK,
    PATH,
    field("name", Kind::Str, false),
    field("category", Kind::Str, false),
    field("tid", Kind::Str, false),
    field("start_ns", Kind::I64, false),
    field("end_ns", Kind::I64, false),
    field("depth", Kind::I32, false),
];

/// samples.parquet.
pub const SAMPLE_FIELDS: [Field; 6] = [
    RANK,
    PATH,
    field("device", Kind::Str, false),
    field("ts_ns", Kind::I64, false),
    field("used_bytes", Kind::I64, false),
    field("source", Kind::Str, false),
];

/// The three files being written, in a directory [`crate::output::file::write_dir`] is
/// building.
pub struct ExportWriter {
    /// memory_events.parquet.
    pub memory: TableWriter,
    /// ops.parquet.
    pub ops: TableWriter,
    /// samples.parquet.
    pub samples: TableWriter,
}

/// Rows written per file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Memory events.
    pub memory_events: u64,
    /// Ops.
    pub ops: u64,
    /// Samples.
    pub samples: u64,
}

impl ExportWriter {
    /// Create the three files in `dir` (new, empty: the staging directory).
    pub fn create(dir: &Path) -> Result<ExportWriter> {
        let open = |name: &str| -> Result<File> {
            let path = dir.join(name);
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .with_context(|| format!("cannot create {}", path.display()))
        };
        Ok(ExportWriter {
            memory: TableWriter::new(open(MEMORY_EVENTS)?, "memory_events", &MEMORY_FIELDS)?,
            ops: TableWriter::new(open(OPS)?, "ops", &OP_FIELDS)?,
            samples: TableWriter::new(open(SAMPLES)?, "samples", &SAMPLE_FIELDS)?,
        })
    }

    /// Append one input's chunk to its table.
    pub fn push(&mut self, rows: InputRows) -> Result<()> {
        match rows {
            InputRows::Memory(c) => self.memory.push(c),
            InputRows::Ops(c) => self.ops.push(c),
            InputRows::Samples(c) => self.samples.push(c),
        }
    }

    /// Write what is buffered and the footers (every file, even one without rows).
    pub fn finish(self) -> Result<Written> {
        Ok(Written {
            memory_events: self.memory.finish()?.1,
            ops: self.ops.finish()?.1,
            samples: self.samples.finish()?.1,
        })
    }
}
