//! `vramscope table`: the per-op memory table of torch.profiler's key_averages(), sorted,
//! cut to `--limit` and to a time window.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::analysis::{self, OpRow, SortKey, TimeWindow};
use collector::model::SourceFormat;
use collector::parse::recording::packed;

use super::input::{load_options, open, window};
use super::{LoadArgs, TableFormat, TableOptions, UsageError};
use crate::output::table::{TableContext, table_csv, table_json, table_text};

/// What the table's text says of the recording beside the rows.
struct Facts {
    window: Option<TimeWindow>,
    start_ns: i64,
    has_memory: bool,
    has_ops: bool,
    format: SourceFormat,
}

/// Print the table of `path` as `options` say.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    options: &TableOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    // A whole pack stores the table of the whole recording: no spans to read and nest.
    let stored = (options.from.is_none() && options.to.is_none())
        .then(|| packed::stored_table(path, load_options(load)))
        .flatten();
    let (rows, facts) = match stored {
        Some(t) => {
            let facts = Facts {
                window: None,
                start_ns: t.start_ns,
                has_memory: t.has_memory,
                has_ops: t.has_ops,
                format: t.format,
            };
            (t.rows, facts)
        }
        None => {
            let rec = open(path, load)?;
            let window = window(&rec, options.from, options.to)?;
            let facts = Facts {
                window,
                start_ns: rec.meta.start_ns,
                has_memory: !rec.mem_events.is_empty(),
                has_ops: !rec.ops.is_empty(),
                format: rec.meta.format,
            };
            (analysis::key_averages(&rec, window), facts)
        }
    };
    print(out, path, options, rows, &facts)
}

/// Sort, cut and print `rows`.
fn print(
    out: &mut impl Write,
    path: &Path,
    options: &TableOptions,
    mut rows: Vec<OpRow>,
    facts: &Facts,
) -> Result<ExitCode> {
    let sort_key = sort_key(options.sort.as_deref(), &rows)?;
    if let Some(key) = sort_key {
        analysis::sort_rows(&mut rows, key);
    }
    let total_rows = rows.len();
    let longest_name = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let device_columns = rows.iter().any(|r| r.self_device_memory_usage > 0);
    if let Some(n) = options.limit {
        rows.truncate(n);
    }
    match options.format {
        TableFormat::Text => {
            let context = TableContext {
                path,
                total_rows,
                sort: options
                    .sort
                    .as_deref()
                    .unwrap_or(sort_key.map_or("none", SortKey::torch_name)),
                window: facts.window,
                start_ns: facts.start_ns,
                has_memory: facts.has_memory,
                has_ops: facts.has_ops,
                format: facts.format,
                longest_name,
                device_columns,
            };
            table_text(out, &rows, &context)?
        }
        TableFormat::Json => table_json(out, &rows)?,
        TableFormat::Csv => table_csv(out, &rows)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `--sort` as a key: `none` keeps key_averages() order; without `--sort`, the default
/// ([`SortKey::default_for`]).
fn sort_key(sort: Option<&str>, rows: &[OpRow]) -> Result<Option<SortKey>> {
    Ok(match sort {
        Some("none") => None,
        Some(s) => Some(SortKey::parse(s).ok_or_else(|| {
            UsageError(format!(
                "unknown sort key '{s}' (use self_cuda_memory_usage, cuda_memory_usage, \
                 self_cpu_memory_usage, cpu_memory_usage, count or none)"
            ))
        })?),
        None => Some(SortKey::default_for(rows)),
    })
}
