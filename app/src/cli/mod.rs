//! Command-line interface: the arguments (clap) and dispatch to the subcommands, one file
//! each; what they share about their input is in [`input`].

mod categories;
mod check;
mod diff;
mod export;
mod input;
mod live;
mod pack;
mod record;
mod report;
mod summary;
mod table;
mod view;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};

use crate::size::parse_size;

/// GPU memory profiler and trace visualizer.
///
/// Reads the inputs listed under the commands (`after_help`, from the importers) and
/// reports where memory went.
#[derive(Parser, Debug)]
#[command(name = "vramscope", version, about, long_about = None, after_help = inputs_help())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The formats vramscope reads, one per line, from the importers.
fn inputs_help() -> String {
    format!(
        "Inputs (recognised by content, whatever the file is called):\n{}",
        collector::parse::importer::formats_help()
    )
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
        #[command(flatten)]
        options: TableOptions,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// What was live at an instant, grouped by allocation site, largest first.
    Live {
        /// The trace or snapshot to read.
        path: PathBuf,
        #[command(flatten)]
        options: LiveOptions,
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
        #[command(flatten)]
        options: DiffOptions,
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
    /// Memory by category (parameter, gradient, optimizer state, activation, …) over the
    /// whole run, as CSV or JSON (like torch's export_memory_timeline).
    Categories(categories::CategoriesArgs),
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

/// The options of `table`, whole for [`table::run`].
#[derive(clap::Args, Debug)]
struct TableOptions {
    /// Sort key, as torch names it: self_cuda_memory_usage, cuda_memory_usage,
    /// self_cpu_memory_usage, cpu_memory_usage, count. Default: self_cuda_memory_usage,
    /// or self_cpu_memory_usage when the trace has no device memory. `none` keeps
    /// key_averages() order.
    #[arg(long)]
    pub sort: Option<String>,
    /// Show at most N rows.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub format: TableFormat,
    /// Start of the time window, in µs since the start of the trace.
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub from_us: Option<f64>,
    /// End of the time window, in µs since the start of the trace.
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub to_us: Option<f64>,
}

/// The options of `live`, whole for [`live::run`].
#[derive(clap::Args, Debug)]
struct LiveOptions {
    /// `peak` (the allocated peak), `oom` (the first out-of-memory event), `end`, or a
    /// time in µs since the start.
    #[arg(long, default_value = "peak")]
    pub at: String,
    /// Device ordinal (`cuda:N`); default: the device with the largest peak.
    #[arg(long)]
    pub device: Option<i32>,
    /// Show at most N groups.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// The options of `diff`, whole for [`diff::run`].
#[derive(clap::Args, Debug)]
struct DiffOptions {
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Where each run's clock starts for peak times: the trace's start, or the start of
    /// its first training step (ProfilerStep#N).
    #[arg(long, value_enum, default_value_t = AlignArg::Start)]
    pub align: AlignArg,
    /// Show at most N ops (the largest changes).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Also draw both runs' memory on one time axis (per device, aligned as --align
    /// says) into FILE: PNG, or SVG when FILE ends in .svg.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
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
        Command::Record(args) => record::run(args),
        Command::RecordExec { command } => Ok(record::exec_step(&command)),
        Command::View { paths, load } => view::run(paths, load),
        Command::Categories(args) => categories::run(out, &args),
        Command::Check {
            path,
            max_peak,
            device,
            load,
        } => check::run(out, &path, max_peak, device, load),
        Command::Diff {
            a,
            b,
            options,
            load,
        } => diff::run(out, &a, &b, &options, load),
        Command::Export {
            path,
            format,
            output,
            load,
        } => export::run(out, &path, format, &output, load),
        Command::Pack {
            path,
            output,
            redact_paths,
            force,
            load,
        } => pack::run(out, &path, &output, redact_paths, force, load),
        Command::Report {
            paths,
            output,
            load,
        } => report::run(out, &paths, &output, load),
        Command::Summary { path, format, load } => summary::run(out, &path, format, load),
        Command::Live {
            path,
            options,
            load,
        } => live::run(out, &path, &options, load),
        Command::Table {
            path,
            options,
            load,
        } => table::run(out, &path, &options, load),
    }
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
