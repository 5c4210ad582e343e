//! Command-line interface: argument parsing and dispatch to the subcommands.

mod check;
mod diff;
mod pack;
mod record;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use collector::analysis::diff::Align;
use collector::analysis::{self, SortKey, TimeWindow};
use collector::{LoadOptions, Recording, Timeline};

use crate::render;
use crate::size::parse_size;

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
    /// What was live at an instant, grouped by allocation site, largest first.
    Live {
        /// The trace or snapshot to read.
        path: PathBuf,
        /// `peak` (the allocated peak), `oom` (the first out-of-memory event), `end`, or a
        /// time in µs since the start.
        #[arg(long, default_value = "peak")]
        at: String,
        /// Device ordinal (`cuda:N`); default: the device with the largest peak.
        #[arg(long)]
        device: Option<i32>,
        /// Show at most N groups.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// A CI gate: exit 1 when a device's peak memory is over a limit, 0 otherwise.
    ///
    /// The peak is the peak allocated memory of each device, or its peak reserved memory
    /// where the source records no allocations (Nsight).
    Check {
        /// The trace or snapshot to read.
        path: PathBuf,
        /// The limit: 40GiB, 512MiB, 1.5GB (decimal units), or plain bytes.
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max_peak: u64,
        /// Check only device ordinal N (`cuda:N`; -1 for the host); default: every device.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        device: Option<i32>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Compare two runs: peak and final memory per device, and the per-op table, B − A.
    Diff {
        /// Run A (the baseline).
        a: PathBuf,
        /// Run B.
        b: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
        format: DiffFormat,
        /// Where each run's clock starts for peak times: the trace's start, or the start of
        /// its first training step (ProfilerStep#N).
        #[arg(long, value_enum, default_value_t = AlignArg::Start)]
        align: AlignArg,
        /// Show at most N ops (the largest changes).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Also draw both runs' memory on one time axis (per device, aligned as --align
        /// says) into FILE: PNG, or SVG when FILE ends in .svg.
        #[arg(long, value_name = "FILE")]
        chart: Option<PathBuf>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Convert to another tool's format: `perfetto` is Chrome trace-event JSON with memory
    /// counter tracks, for ui.perfetto.dev or chrome://tracing.
    Export {
        /// The trace or snapshot to read.
        path: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// The file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Rewrite any input as a compact vramscope recording (gzip; only what vramscope reads)
    /// that every command opens like the original, small enough to attach to an issue.
    Pack {
        /// The trace, snapshot, export or recording to pack.
        path: PathBuf,
        /// The file to write.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Strip user paths from stacks, Python op names, thread names and the command
        /// line: package code keeps its package-relative path, the rest its file name.
        #[arg(long)]
        redact_paths: bool,
        /// Overwrite FILE if it exists.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Run a program and record its GPU memory (NVML), host memory and, with
    /// --torch-memory, PyTorch's allocator history, into one crash-safe file.
    ///
    /// vramscope exits with the program's exit code (128 + N when signal N ended it), 125
    /// when it could not start recording, 126/127 when the program could not be run.
    Record(record::RecordArgs),
    /// `record`'s own step between fork and the program: clear the signal mask, then exec.
    #[command(name = record::EXEC_STEP, hide = true)]
    RecordExec {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Open the viewer: a window onto any file vramscope reads, one tab per file
    /// (`vramscope FILE…` does the same).
    View {
        /// The traces, snapshots or recordings to open.
        paths: Vec<PathBuf>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Write a report for a bug report into a directory: report.md (peaks, what was live,
    /// top ops, fragmentation, OOM verdicts, warnings, environment) and charts (PNG, SVG).
    Report {
        /// The traces or snapshots to report on.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The directory to write (created if missing).
        #[arg(short, long, value_name = "DIR")]
        output: PathBuf,
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

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ExportFormat {
    Perfetto,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum AlignArg {
    Start,
    Step,
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

/// `vramscope FILE…` means `vramscope view FILE…`: when the first argument is neither an
/// option nor a subcommand but an existing path, `view` is put in front of it. Typos of
/// subcommands (no such file) still get clap's "unrecognized subcommand".
pub fn args_with_view_default(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use clap::CommandFactory;
    let Some(first) = args.get(1) else {
        return args;
    };
    let name = first.to_string_lossy();
    let command = Cli::command();
    let subcommand = name == "help" || command.get_subcommands().any(|c| c.get_name() == name);
    if name.starts_with('-') || subcommand || !Path::new(first).exists() {
        return args;
    }
    args.insert(1, "view".into());
    args
}

/// Run a parsed command line, writing results to `out`.
pub fn run(cli: Cli, out: &mut impl Write) -> Result<ExitCode> {
    match cli.command {
        Command::Record(args) => return record::run(args),
        Command::RecordExec { command } => return Ok(record::exec_step(&command)),
        Command::View { paths, load } => {
            let options = LoadOptions {
                salvage_truncated: load.salvage,
            };
            crate::gui::run(paths, options)?;
        }
        Command::Check {
            path,
            max_peak,
            device,
            load,
        } => {
            let rec = open(&path, load)?;
            let timeline = Timeline::build(&rec);
            let summary = analysis::summarize(&rec, &timeline);
            let names = device.map(|n| device_names(&rec, n)).transpose()?;
            return check::check(out, &summary, names.as_deref(), max_peak)
                .with_context(|| path.display().to_string());
        }
        Command::Diff {
            a,
            b,
            format,
            align,
            limit,
            chart,
            load,
        } => {
            let align = match align {
                AlignArg::Start => Align::Start,
                AlignArg::Step => Align::Step,
            };
            let run_a = diff::Run::read(&a, load, align)?;
            let run_b = diff::Run::read(&b, load, align)?;
            let mut d = analysis::diff::diff(&run_a.facts(), &run_b.facts(), align);
            if let Some(n) = limit {
                d.ops.truncate(n);
            }
            let (a, b) = (a.display().to_string(), b.display().to_string());
            let files = render::diff::DiffFiles { a: &a, b: &b };
            match format {
                DiffFormat::Text => render::diff::diff_text(out, &files, &d)?,
                DiffFormat::Json => render::diff::diff_json(out, &files, &d)?,
                DiffFormat::Markdown => render::diff::diff_markdown(out, &files, &d)?,
            }
            if let Some(chart) = chart {
                diff::write_chart(&chart, &files, &run_a, &run_b, align)?;
                // The table goes to stdout (maybe JSON); the note to stderr, after it.
                out.flush()?;
                eprintln!("vramscope: wrote {}", chart.display());
            }
        }
        Command::Export {
            path,
            format: ExportFormat::Perfetto,
            output,
            load,
        } => {
            let rec = open(&path, load)?;
            let timeline = Timeline::build(&rec);
            let file = std::fs::File::create(&output)
                .with_context(|| format!("cannot create {}", output.display()))?;
            let mut w = std::io::BufWriter::new(file);
            crate::export::perfetto_json(&mut w, &rec, &timeline)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {}", output.display()))?;
            writeln!(out, "wrote {}", output.display())?;
        }
        Command::Pack {
            path,
            output,
            redact_paths,
            force,
            load,
        } => {
            let rec = open(&path, load)?;
            let packed = pack::pack(&path, rec, &output, redact_paths, force)?;
            writeln!(out, "{}", pack::describe(&output, &packed))?;
        }
        Command::Report {
            paths,
            output,
            load,
        } => {
            let mut inputs = Vec::with_capacity(paths.len());
            for path in &paths {
                let name = path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                inputs.push((name, open(path, load)?));
            }
            crate::report::write_report(&output, &inputs)?;
            writeln!(out, "wrote {}", output.join("report.md").display())?;
        }
        Command::Summary { path, format, load } => {
            let rec = open(&path, load)?;
            let timeline = Timeline::build(&rec);
            let summary = analysis::summarize(&rec, &timeline);
            match format {
                Format::Text => render::summary_text(out, &path, &summary)?,
                Format::Json => render::summary_json(out, &path, &summary)?,
            }
        }
        Command::Live {
            path,
            at,
            device,
            limit,
            format,
            load,
        } => {
            let rec = open(&path, load)?;
            let timeline = Timeline::build(&rec);
            let report = live_report(&rec, &timeline, &at, device)
                .with_context(|| path.display().to_string())?;
            let mut report = report;
            report.groups.truncate(limit);
            match format {
                Format::Text => render::live_text(out, &path, &report)?,
                Format::Json => render::live_json(out, &report)?,
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
                        format: rec.meta.format.as_str(),
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

/// Resolve `--at` and `--device` and group what was live then.
fn live_report(
    rec: &Recording,
    timeline: &Timeline,
    at: &str,
    device: Option<i32>,
) -> Result<render::LiveReport> {
    use collector::model::{DeviceIdx, MemEventKind};
    let pick = |idx: usize| timeline.devices.get(idx).filter(|d| d.allocated_known);
    let device_idx: DeviceIdx = match device {
        Some(n) => rec
            .devices
            .iter()
            .position(|d| d.key.index == n && d.key.is_accelerator())
            .or_else(|| rec.devices.iter().position(|d| d.key.index == n))
            .map(|i| i as DeviceIdx)
            .ok_or_else(|| {
                UsageError(format!("no device {n} in {}", rec.meta.format.describe()))
            })?,
        None => (0..timeline.devices.len())
            .filter_map(|i| pick(i).map(|d| (i, d)))
            .max_by_key(|(_, d)| {
                d.peak_allocated
                    .and_then(|p| d.points.get(p))
                    .map_or(0, |p| p.allocated_bytes)
            })
            .map(|(i, _)| i as DeviceIdx)
            .ok_or_else(|| anyhow::anyhow!(
                    "no allocations recorded, so nothing was live (a profiler trace needs profile_memory=True)"
                ))?,
    };
    let d = pick(device_idx as usize)
        .ok_or_else(|| anyhow::anyhow!("the source records no allocations on that device"))?;
    let time_ns = match at {
        "peak" => d
            .peak_allocated
            .and_then(|p| d.points.get(p))
            .map(|p| p.time_ns),
        "end" => d.points.last().map(|p| p.time_ns),
        "oom" => rec
            .mem_events
            .iter()
            .find(|e| e.kind == MemEventKind::OutOfMemory && e.device == device_idx)
            .map(|e| e.time_ns),
        us => match us.parse::<f64>() {
            Ok(v) if v.is_finite() => Some(rec.ns_from_us_since_start(v)),
            _ => {
                return Err(UsageError(format!(
                    "--at takes peak, oom, end or a number of µs, not '{us}'"
                ))
                .into());
            }
        },
    }
    .ok_or_else(|| anyhow::anyhow!("no {at} on this device"))?;
    let groups = collector::analysis::live::live_groups(rec, timeline, device_idx, time_ns);
    let point = d.at(time_ns);
    Ok(render::LiveReport {
        device: rec
            .devices
            .get(device_idx as usize)
            .map_or_else(String::new, |x| x.key.to_string()),
        at: at.to_owned(),
        at_us: rec.us_since_start(time_ns),
        allocated_bytes: point.map_or(0, |p| p.allocated_bytes),
        reserved_bytes: point.and_then(|p| p.reserved_bytes),
        live_bytes: groups.iter().map(|g| g.bytes).sum(),
        live_blocks: groups.iter().map(|g| g.blocks).sum(),
        groups,
    })
}

/// The names (`cuda:N`, `cpu`) of the devices with ordinal `n`; a usage error when none.
fn device_names(rec: &Recording, n: i32) -> Result<Vec<String>> {
    let names: Vec<String> = rec
        .devices
        .iter()
        .filter(|d| d.key.index == n)
        .map(|d| d.key.to_string())
        .collect();
    if names.is_empty() {
        return Err(UsageError(format!("no device {n} in {}", rec.meta.format.describe())).into());
    }
    Ok(names)
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

#[cfg(test)]
mod view_default_tests {
    use super::args_with_view_default;
    use std::ffi::OsString;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_bare_existing_path_opens_the_viewer() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        assert_eq!(
            args_with_view_default(args(&["vramscope", file, "b.json"])),
            args(&["vramscope", "view", file, "b.json"])
        );
        // Subcommands, options, typos and no arguments are left to clap.
        for unchanged in [
            &["vramscope", "summary", file][..],
            &["vramscope", "--version"],
            &["vramscope", "sumary"],
            &["vramscope"],
        ] {
            assert_eq!(args_with_view_default(args(unchanged)), args(unchanged));
        }
    }
}
