//! Command-line interface: argument parsing and dispatch to the subcommands.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use collector::analysis::{self, SortKey, TimeWindow};
use collector::{LoadOptions, Recording, Timeline};

use crate::render;

/// GPU memory profiler and trace visualizer.
///
/// Reads PyTorch profiler traces (.json, .json.gz; every era from torch 1.8 to 2.x) and
/// reports where memory went. Formats are recognised by content, not by file name.
#[derive(Parser, Debug)]
#[command(name = "vramscope", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Peak, reserved and final memory per device, and the facts of the trace.
    Summary {
        /// The trace to read.
        path: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// The per-op memory table of torch.profiler's key_averages(), exact to the byte.
    Table {
        /// The trace to read.
        path: PathBuf,
        /// Sort key, as torch names it: self_cuda_memory_usage, cuda_memory_usage,
        /// self_cpu_memory_usage, cpu_memory_usage, count. Default: self_cuda_memory_usage,
        /// or self_cpu_memory_usage when the trace has no device memory. `none` keeps
        /// key_averages() order.
        #[arg(long)]
        sort: Option<String>,
        /// Show at most N rows.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TableFormat::Text)]
        format: TableFormat,
        /// Start of the time window, in µs since the start of the trace.
        #[arg(long, value_name = "US", allow_negative_numbers = true)]
        from_us: Option<f64>,
        /// End of the time window, in µs since the start of the trace.
        #[arg(long, value_name = "US", allow_negative_numbers = true)]
        to_us: Option<f64>,
        #[command(flatten)]
        load: LoadArgs,
    },
}

#[derive(clap::Args, Debug, Clone, Copy)]
struct LoadArgs {
    /// Read a file that ends early (a killed writer, a cut download), keeping every complete
    /// event, instead of failing.
    #[arg(long)]
    salvage: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum TableFormat {
    Text,
    Json,
    Csv,
}

/// A mistake in the command line (exit code 2), as opposed to a problem with the input.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Run a parsed command line, writing results to `out`.
pub fn run(cli: Cli, out: &mut impl Write) -> Result<ExitCode> {
    match cli.command {
        Command::Summary { path, format, load } => {
            let rec = open(&path, load)?;
            let timeline = Timeline::build(&rec);
            let summary = analysis::summarize(&rec, &timeline);
            match format {
                Format::Text => render::summary_text(out, &path, &summary)?,
                Format::Json => render::summary_json(out, &path, &summary)?,
            }
        }
        Command::Table {
            path,
            sort,
            limit,
            format,
            from_us,
            to_us,
            load,
        } => {
            let rec = open(&path, load)?;
            let window = window(&rec, from_us, to_us)?;
            let mut rows = analysis::key_averages(&rec, window);
            let has_device_memory = rows.iter().any(|r| r.device_memory_usage != 0);
            let sort_key = match sort.as_deref() {
                Some("none") => None,
                Some(s) => Some(SortKey::parse(s).ok_or_else(|| {
                    UsageError(format!(
                        "unknown sort key '{s}' (use self_cuda_memory_usage, cuda_memory_usage, \
                         self_cpu_memory_usage, cpu_memory_usage, count or none)"
                    ))
                })?),
                None if has_device_memory => Some(SortKey::SelfDeviceMemory),
                None => Some(SortKey::SelfCpuMemory),
            };
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
            if let Some(n) = limit {
                rows.truncate(n);
            }
            match format {
                TableFormat::Text => {
                    let context = render::TableContext {
                        path: &path,
                        total_rows,
                        sort: sort.as_deref().unwrap_or(match sort_key {
                            Some(SortKey::SelfDeviceMemory) => "self_cuda_memory_usage",
                            _ => "self_cpu_memory_usage",
                        }),
                        window: window.map(|w| {
                            (rec.us_since_start(w.start_ns), rec.us_since_start(w.end_ns))
                        }),
                        has_memory: !rec.mem_events.is_empty(),
                        longest_name,
                        device_columns,
                    };
                    render::table_text(out, &rows, &context)?
                }
                TableFormat::Json => render::table_json(out, &rows)?,
                TableFormat::Csv => render::table_csv(out, &rows)?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn open(path: &Path, load: LoadArgs) -> Result<Recording> {
    let options = LoadOptions {
        salvage_truncated: load.salvage,
    };
    let rec = collector::load(path, options)?;
    if let Some(at) = rec.diagnostics.truncated_at {
        eprintln!(
            "vramscope: warning: {} ends early; read the complete events before byte {at}",
            path.display()
        );
    }
    Ok(rec)
}

fn window(rec: &Recording, from_us: Option<f64>, to_us: Option<f64>) -> Result<Option<TimeWindow>> {
    if from_us.is_none() && to_us.is_none() {
        return Ok(None);
    }
    for v in [from_us, to_us].into_iter().flatten() {
        if !v.is_finite() {
            return Err(
                UsageError("--from-us and --to-us must be finite numbers of µs".into()).into(),
            );
        }
    }
    let start_ns = from_us.map_or(i64::MIN, |us| rec.ns_from_us_since_start(us));
    let end_ns = to_us.map_or(i64::MAX, |us| rec.ns_from_us_since_start(us));
    if start_ns > end_ns {
        return Err(UsageError("--from-us must not be after --to-us".into()).into());
    }
    Ok(Some(TimeWindow { start_ns, end_ns }))
}
