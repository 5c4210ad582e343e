//! Command-line interface: the arguments (clap) and dispatch to the subcommands, one file
//! each; what they share about their input is in [`input`].

mod advise;
mod categories;
mod check;
mod completions;
mod diff;
mod export;
mod export_parquet;
mod help;
mod input;
mod live;
mod options;
mod pack;
mod record;
mod report;
mod simulate;
mod summary;
mod table;
mod values;
mod view;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::output::style::{ColorWhen, Paint};
pub use options::Format;
use options::{
    AlignArg, CheckOptions, DiffFormat, DiffOptions, ExportFormat, LiveOptions, LoadArgs,
    TableFormat, TableOptions,
};

/// GPU memory profiler and trace visualizer.
///
/// Reads the inputs listed under the commands (`after_help`, from the importers) and
/// reports where memory went.
#[derive(Parser, Debug)]
#[command(name = "vramscope", version, about, long_about = None, after_help = help::inputs_help())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// When to colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, global = true, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
}

impl Cli {
    /// `--color`.
    pub fn color(&self) -> ColorWhen {
        self.color
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Peak, reserved and final memory per device, and the facts of the trace.
    ///
    /// Several files or directories (every trace, snapshot or recording inside, found by
    /// content) give one row per input and device, the worst rank and the skew.
    Summary {
        /// The traces, snapshots or recordings to read, or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// The per-op memory table of torch.profiler's key_averages(), exact to the byte.
    ///
    /// Sizes keep torch's own labels, as torch prints the table: KB, MB and GB are
    /// 1024-based (1 MB = 2^20 B), unlike the decimal units of their names.
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
    ///
    /// Exit codes: 0 every peak is within the limit; 1 a peak is over it; 2 the input
    /// could not be read, or a mistake in the command line; 3 no memory data to judge (a
    /// trace without profile_memory=True, or no memory on the --device asked for).
    Check {
        /// The traces or snapshots to read, or directories of them (every rank's peak is
        /// judged; each rank over the limit is named).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        options: CheckOptions,
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
    /// counter tracks, for ui.perfetto.dev or chrome://tracing; `parquet` a directory of
    /// Parquet files (memory events, ops, samples) for DuckDB, Spark or pandas.
    Export {
        /// The trace or snapshot to read; for parquet, any number of inputs or directories
        /// of them (every rank of a run).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// The file to write (perfetto), or the directory (parquet: created if missing,
        /// used if empty).
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Replace OUT if it exists (for parquet, only an earlier export, whole). Never an
        /// input, even with --force.
        #[arg(long)]
        force: bool,
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
        /// Replace FILE if it exists. Never the input, even with --force.
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
    /// What-if: the estimated peak under bf16 autocast, checkpointing, ZeRO-1/2/3, optimizer
    /// offload and micro-batching, from the run's categories; what fits a capacity.
    Advise(advise::AdviseArgs),
    /// Would this OOM go away? The run replayed through a model of PyTorch's caching
    /// allocator (checked address by address against a snapshot), then under other
    /// settings (expandable_segments, max_split_size_mb, …): reserved peak,
    /// fragmentation, and each OOM's fate.
    Simulate(simulate::SimulateArgs),
    /// Open the viewer: a window onto any file vramscope reads, one tab per file
    /// (`vramscope FILE…` does the same); two files open as two tabs (to compare), three
    /// or more or a directory as a rank grid.
    View {
        /// The traces, snapshots or recordings to open, or directories of them.
        paths: Vec<PathBuf>,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Write a report for a bug report into a directory: report.html (one interactive page,
    /// no network), report.md (peaks, what was live, top ops, fragmentation, OOM verdicts,
    /// warnings, environment) and charts (PNG, SVG); or with --html only the page.
    #[command(group(clap::ArgGroup::new("destination").required(true).multiple(true).args(["output", "html"])))]
    Report {
        /// The traces or snapshots to report on, or directories of them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The directory to write (created if missing, used if empty).
        #[arg(short, long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// Write the interactive page alone to FILE (one self-contained .html file).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Strip user paths from stacks, op names and properties before writing (as
        /// `pack --redact-paths`): library code keeps its path from site-packages/ on,
        /// the rest only its file name.
        #[arg(long)]
        redact_paths: bool,
        /// Replace the report in DIR (or FILE) if there is one, whole. Never a directory
        /// holding an input or files other than a report's, even with --force.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Print a shell completion script (see the README for where each shell reads it).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
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

/// An error that ends vramscope with its own exit code (`check`'s unreadable input, 2).
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub code: u8,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Failure {}

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
pub fn run(cli: Cli, out: &mut impl Paint) -> Result<ExitCode> {
    match cli.command {
        Command::Record(args) => record::run(args),
        Command::RecordExec { command } => Ok(record::exec_step(&command)),
        Command::View { paths, load } => view::run(paths, load),
        Command::Categories(args) => categories::run(out, &args),
        Command::Advise(args) => advise::run(out, &args),
        Command::Simulate(args) => simulate::run(out, &args),
        Command::Check {
            paths,
            options,
            load,
        } => check::run(out, &paths, &options, load),
        Command::Completions { shell } => completions::run(out, shell),
        Command::Diff {
            a,
            b,
            options,
            load,
        } => diff::run(out, &a, &b, &options, load),
        Command::Export {
            paths,
            format,
            output,
            force,
            load,
        } => export::run(out, &paths, format, &output, force, load),
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
            html,
            redact_paths,
            force,
            load,
        } => {
            let to = report::Destination {
                dir: output.as_deref(),
                html: html.as_deref(),
                redact_paths,
                force,
            };
            report::run(out, &paths, &to, load)
        }
        Command::Summary {
            paths,
            format,
            load,
        } => summary::run(out, &paths, format, load),
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
