//! One Parquet file written as rows arrive: chunks of rows appended to column buffers,
//! each full buffer encoded as a row group (zstd pages, statistics per page and chunk),
//! so memory stays bounded whatever the number of rows.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;

use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use ::parquet::file::properties::{EnabledStatistics, WriterProperties};
use ::parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use ::parquet::schema::parser::parse_message_type;
use ::parquet::schema::types::ColumnPath;
use anyhow::{Context, Result};

/// Rows a row group holds (a chunk may take it past by less than [`CHUNK_ROWS`]). The
/// buffer holds them as 8–16 bytes a column (a string as its 4-byte id), ~120 bytes a row
/// for memory events, so ~16 MB per file being written; larger groups compress a little
/// better and cost that much more memory.
pub const ROW_GROUP_ROWS: usize = 1 << 17;

/// Rows a reader thread hands to the writer at once (~1 MB of memory events).
pub const CHUNK_ROWS: usize = 1 << 13;

/// zstd's level: 1 is its fastest; higher levels cost time for a few percent of size.
const ZSTD_LEVEL: i32 = 1;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// INT32.
    I32,
    /// INT64.
    I64,
    /// BYTE_ARRAY (STRING): UTF-8.
    Str,
}

/// A column of a table's schema.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether it may be null.
    pub nullable: bool,
}

/// The schema in Parquet's schema language.
fn message(table: &str, fields: &[Field]) -> String {
    let mut m = format!("message {table} {{\n");
    for f in fields {
        let repetition = if f.nullable { "OPTIONAL" } else { "REQUIRED" };
        let ty = match f.kind {
            Kind::I32 => "INT32",
            Kind::I64 => "INT64",
            Kind::Str => "BYTE_ARRAY",
        };
        let logical = if f.kind == Kind::Str { " (STRING)" } else { "" };
        m.push_str(&format!("  {repetition} {ty} {}{logical};\n", f.name));
    }
    m.push('}');
    m
}

/// Empty columns of `fields`' types.
pub fn empty_columns(fields: &[Field]) -> Vec<Values> {
    fields
        .iter()
        .map(|f| match f.kind {
            Kind::I32 => Values::I32(Vec::new()),
            Kind::I64 => Values::I64(Vec::new()),
            Kind::Str => Values::Str(Vec::new()),
        })
        .collect()
}

/// One column's values in a chunk or a row group.
#[derive(Debug)]
pub enum Values {
    /// 32-bit integers.
    I32(Vec<Option<i32>>),
    /// 64-bit integers.
    I64(Vec<Option<i64>>),
    /// UTF-8 strings, as ids into the chunk's (or row group's) strings.
    Str(Vec<Option<u32>>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::I32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::Str(v) => v.len(),
        }
    }

    fn empty_like(&self) -> Values {
        match self {
            Values::I32(_) => Values::I32(Vec::new()),
            Values::I64(_) => Values::I64(Vec::new()),
            Values::Str(_) => Values::Str(Vec::new()),
        }
    }
}

/// Rows of one table: a column of values each, in schema order, and the strings their
/// string columns name.
#[derive(Debug)]
pub struct Chunk {
    /// The columns.
    pub columns: Vec<Values>,
    /// The strings, by id.
    pub strings: Vec<String>,
}

impl Chunk {
    /// How many rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Values::len)
    }
}

/// A Parquet file being written.
pub struct TableWriter {
    fields: &'static [Field],
    file: SerializedFileWriter<BufWriter<File>>,
    /// The row group being filled: its columns, strings and their ids.
    columns: Vec<Values>,
    strings: Vec<ByteArray>,
    ids: HashMap<String, u32>,
    rows: usize,
    /// Rows written in all.
    pub total_rows: u64,
}

impl TableWriter {
    /// Start the file `out`: the table `name` with the columns `fields`.
    pub fn new(out: File, name: &str, fields: &'static [Field]) -> Result<TableWriter> {
        let schema = Arc::new(parse_message_type(&message(name, fields))?);
        // Dictionaries for the strings only (few distinct values); on times, sizes and
        // addresses (mostly distinct) a dictionary is built only to be abandoned.
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_dictionary_enabled(false)
            .set_created_by(format!("vramscope {}", env!("CARGO_PKG_VERSION")));
        for f in fields.iter().filter(|f| f.kind == Kind::Str) {
            props = props.set_column_dictionary_enabled(ColumnPath::from(f.name), true);
        }
        let props = props.build();
        let file = SerializedFileWriter::new(BufWriter::new(out), schema, Arc::new(props))?;
        Ok(TableWriter {
            fields,
            file,
            columns: empty_columns(fields),
            strings: Vec::new(),
            ids: HashMap::new(),
            rows: 0,
            total_rows: 0,
        })
    }

    /// Append a chunk's rows; a full row group is written.
    pub fn push(&mut self, chunk: Chunk) -> Result<()> {
        let rows = chunk.rows();
        let local: Vec<u32> = chunk.strings.into_iter().map(|s| self.id(s)).collect();
        for (into, from) in self.columns.iter_mut().zip(chunk.columns) {
            match (into, from) {
                (Values::I32(a), Values::I32(b)) => a.extend(b),
                (Values::I64(a), Values::I64(b)) => a.extend(b),
                (Values::Str(a), Values::Str(b)) => a.extend(
                    b.into_iter()
                        .map(|s| s.and_then(|s| local.get(s as usize).copied())),
                ),
                _ => anyhow::bail!("a column of the wrong type (a bug in vramscope)"),
            }
        }
        self.rows += rows;
        if self.rows >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn id(&mut self, s: String) -> u32 {
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(ByteArray::from(s.clone().into_bytes()));
        self.ids.insert(s, id);
        id
    }

    /// Write the buffered rows as one row group.
    fn flush(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.file.next_row_group()?;
        for (values, field) in self.columns.iter_mut().zip(self.fields) {
            let mut column = group.next_column()?.context("a column missing (a bug)")?;
            write_column(&mut column, values, field.nullable, &self.strings)?;
            column.close()?;
            *values = values.empty_like();
        }
        group.close()?;
        self.total_rows += self.rows as u64;
        self.rows = 0;
        self.strings.clear();
        self.ids.clear();
        Ok(())
    }

    /// Write what is buffered and the footer; the file, synced.
    pub fn finish(mut self) -> Result<(File, u64)> {
        self.flush()?;
        let total = self.total_rows;
        let out = self.file.into_inner()?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok((file, total))
    }
}

/// One column's values and, when `nullable`, definition levels (1 a value, 0 a null).
fn split<T: Copy>(values: &[Option<T>], nullable: bool) -> (Vec<T>, Vec<i16>) {
    let present = values.iter().flatten().copied().collect();
    let levels = if nullable {
        values.iter().map(|v| i16::from(v.is_some())).collect()
    } else {
        Vec::new()
    };
    (present, levels)
}

fn write_column(
    column: &mut SerializedColumnWriter<'_>,
    values: &Values,
    nullable: bool,
    strings: &[ByteArray],
) -> Result<()> {
    // Required columns take no levels; nullable ones need them.
    match values {
        Values::I32(v) => {
            let (present, def) = split(v, nullable);
            let def = nullable.then_some(def.as_slice());
            column
                .typed::<Int32Type>()
                .write_batch(&present, def, None)?;
        }
        Values::I64(v) => {
            let (present, def) = split(v, nullable);
            let def = nullable.then_some(def.as_slice());
            column
                .typed::<Int64Type>()
                .write_batch(&present, def, None)?;
        }
        Values::Str(v) => {
            // Each value a reference to the row group's copy of the string (no copy).
            let mut present = Vec::with_capacity(v.len());
            let mut def = Vec::with_capacity(if nullable { v.len() } else { 0 });
            for s in v {
                let value = s.and_then(|s| strings.get(s as usize));
                if let Some(b) = value {
                    present.push(b.clone());
                }
                if nullable {
                    def.push(i16::from(value.is_some()));
                }
            }
            let def = nullable.then_some(def.as_slice());
            column
                .typed::<ByteArrayType>()
                .write_batch(&present, def, None)?;
        }
    }
    Ok(())
}
