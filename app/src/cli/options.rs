//! The options several subcommands share, and the value enums of `--format` and kin, so
//! that mod.rs holds the command list and the dispatch.

use std::path::PathBuf;

use clap::ValueEnum;

use super::values::{
    DeviceArg, InstantArg, TimeOffset, parse_device, parse_instant, parse_size, parse_time_offset,
};

/// The options of `check`, whole for [`super::check`].
#[derive(clap::Args, Debug)]
pub(super) struct CheckOptions {
    /// The limit: 40GiB or 40G (binary, 2^30), 1.5GB (decimal, 10^9), 1.5e9, or bytes.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(super) max_peak: u64,
    /// Check only this device: an ordinal (0; -1 is the host) or a name (cuda:0, cpu);
    /// default: every device.
    #[arg(long, value_name = "DEVICE", allow_negative_numbers = true, value_parser = parse_device)]
    pub(super) device: Option<DeviceArg>,
    /// Which peak to judge: the allocator's (allocated, else reserved), NVML's per GPU (the
    /// recorded process tree's where NVML reports it, else the device's used memory), or
    /// the host's resident memory (a `record` recording).
    #[arg(long, value_enum, value_name = "WHAT", default_value_t = PeakOf::Allocator)]
    pub(super) of: PeakOf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(super) format: Format,
}

/// What `check --of` judges.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PeakOf {
    /// The allocator's peak: allocated, else reserved.
    Allocator,
    /// NVML's peak per GPU.
    Nvml,
    /// The host's peak resident memory.
    Host,
}

impl PeakOf {
    /// The collector's name for it.
    pub(super) fn source(self) -> collector::analysis::summary::PeakSource {
        use collector::analysis::summary::PeakSource;
        match self {
            PeakOf::Allocator => PeakSource::Allocator,
            PeakOf::Nvml => PeakSource::Nvml,
            PeakOf::Host => PeakSource::Host,
        }
    }
}

/// The options of `table`, whole for [`super::table`].
#[derive(clap::Args, Debug)]
pub(super) struct TableOptions {
    /// Sort key, as torch names it: self_cuda_memory_usage, cuda_memory_usage,
    /// self_cpu_memory_usage, cpu_memory_usage, count. Default: self_cuda_memory_usage,
    /// or self_cpu_memory_usage when the trace has no device memory. `none` keeps
    /// key_averages() order.
    #[arg(long)]
    pub(super) sort: Option<String>,
    /// Show at most N rows.
    #[arg(long, value_name = "N")]
    pub(super) limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TableFormat::Text)]
    pub(super) format: TableFormat,
    /// Start of the time window after the start of the trace: 1.5ms, 250us, 2s, or µs.
    #[arg(long = "from-us", value_name = "TIME", allow_negative_numbers = true, value_parser = parse_time_offset)]
    pub(super) from: Option<TimeOffset>,
    /// End of the time window after the start of the trace: 1.5ms, 250us, 2s, or µs.
    #[arg(long = "to-us", value_name = "TIME", allow_negative_numbers = true, value_parser = parse_time_offset)]
    pub(super) to: Option<TimeOffset>,
}

/// The options of `live`, whole for [`super::live`].
#[derive(clap::Args, Debug)]
pub(super) struct LiveOptions {
    /// `peak` (the allocated peak), `oom` (the first out-of-memory event), `end`, or a
    /// time after the start: 1.5ms, 250us, 2s, or a plain number of µs.
    #[arg(long, value_name = "WHEN", default_value = "peak", allow_negative_numbers = true, value_parser = parse_instant)]
    pub(super) at: InstantArg,
    /// The device: an ordinal (0; -1 is the host) or a name (cuda:0, cpu); default: the
    /// device with the largest peak.
    #[arg(long, value_name = "DEVICE", allow_negative_numbers = true, value_parser = parse_device)]
    pub(super) device: Option<DeviceArg>,
    /// Show at most N groups of live allocations; the rest is one "N more groups" line,
    /// so the groups still sum to the allocated bytes.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub(super) limit: usize,
    /// Group by `op` (the op running at the allocation), `stack` (its whole stack) or
    /// `category` (parameter, activation, gradient…). Default: by stack where the source
    /// records stacks, else by op.
    #[arg(long, value_enum, value_name = "BY")]
    pub(super) group_by: Option<GroupByArg>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(super) format: Format,
}

/// `live --group-by`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GroupByArg {
    /// The op running when the block was allocated.
    Op,
    /// The block's whole allocation stack.
    Stack,
    /// The memory category.
    Category,
    /// The `nn.Module` scopes around the allocation (traces made `with_stack=True`).
    Module,
}

/// The options of `diff`, whole for [`super::diff`].
#[derive(clap::Args, Debug)]
pub(super) struct DiffOptions {
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub(super) format: DiffFormat,
    /// Where each run's clock starts for peak times: the trace's start, or the start of
    /// its first training step (ProfilerStep#N).
    #[arg(long, value_enum, default_value_t = AlignArg::Start)]
    pub(super) align: AlignArg,
    /// Show at most N ops (the largest changes).
    #[arg(long, value_name = "N")]
    pub(super) limit: Option<usize>,
    /// Also draw both runs' memory on one time axis (per device, aligned as --align
    /// says) into FILE: PNG, or SVG when FILE ends in .svg.
    #[arg(long, value_name = "FILE")]
    pub(super) chart: Option<PathBuf>,
    /// Replace the --chart FILE if it exists. Never run A or B, even with --force.
    #[arg(long)]
    pub(super) force: bool,
}

#[derive(clap::Args, Debug, Clone, Copy)]
pub(super) struct LoadArgs {
    /// Read a file that ends early (a killed writer, a cut download), keeping every complete
    /// event, instead of failing.
    #[arg(long)]
    pub(super) salvage: bool,
    /// Read at most SIZE of decompressed content from a gzip input (40GiB, 512MiB,
    /// 1048576), or `unlimited`. Default: 200× the file's size, at least 64 MiB and at most
    /// 16 GiB, so a small hostile file cannot expand into all of memory.
    #[arg(long, value_name = "SIZE", value_parser = super::input::parse_decompressed_limit)]
    pub(super) max_decompressed_size: Option<collector::parse::input::DecompressedLimit>,
}

/// Text for people or JSON for programs.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Text for people.
    Text,
    /// JSON for programs.
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TableFormat {
    Text,
    Json,
    Csv,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExportFormat {
    /// Chrome trace-event JSON with memory counter tracks (one input, `-o FILE`).
    Perfetto,
    /// A directory of Parquet files: memory events, ops, samples (any inputs, `-o DIR`).
    Parquet,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AlignArg {
    Start,
    Step,
}
