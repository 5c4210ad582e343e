//! `vramscope table`: the per-op memory table of torch.profiler's key_averages(), sorted,
//! cut to `--limit` and to a time window.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use collector::analysis::{self, OpRow, SortKey};

use super::input::{open, window};
use super::{LoadArgs, TableFormat, TableOptions, UsageError};
use crate::output::table::{TableContext, table_csv, table_json, table_text};

/// Print the table of `path` as `options` say.
pub fn run(
    out: &mut impl Write,
    path: &Path,
    options: &TableOptions,
    load: LoadArgs,
) -> Result<ExitCode> {
    let rec = open(path, load)?;
    let window = window(&rec, options.from, options.to)?;
    let mut rows = analysis::key_averages(&rec, window);
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
                window,
                start_ns: rec.meta.start_ns,
                has_memory: !rec.mem_events.is_empty(),
                has_ops: !rec.ops.is_empty(),
                format: rec.meta.format,
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
