//! `vramscope advise`: the estimated peak of the run under each memory-saving technique
//! the collector registers (precision, recompute, ZeRO, offload, micro-batching, optimizer
//! state formats, LoRA, chunked loss, tensor, sequence and pipeline parallelism) and the
//! smallest combination that fits a capacity.

use crate::output::text::device_label;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use collector::Timeline;
use collector::analysis::advise::{Options, advise};

use super::input::{no_allocations_words, open_with_history};
use super::values::parse_size;
use super::{Format, LoadArgs};
use crate::output::advise::{NamedAdvice, advise_json, advise_text};
use crate::output::style::Paint;
use crate::output::terminal::eprint_escaped;

/// The arguments of `advise`.
#[derive(clap::Args, Debug)]
pub struct AdviseArgs {
    /// The trace, snapshot or recording of a training run.
    path: PathBuf,
    /// Ranks to shard over for ZeRO (at least 2: one rank shards nothing).
    #[arg(long, value_name = "N", default_value_t = Options::DEFAULTS.world_size, value_parser = clap::value_parser!(u32).range(2..=65536))]
    world_size: u32,
    /// Micro-batches per step for gradient accumulation.
    #[arg(long, value_name = "K", default_value_t = Options::DEFAULTS.micro_batches, value_parser = clap::value_parser!(u32).range(2..=65536))]
    micro_batches: u32,
    /// Ranks tensor (and sequence) parallelism split the layers over.
    #[arg(long, value_name = "T", default_value_t = Options::DEFAULTS.tensor_parallel, value_parser = clap::value_parser!(u32).range(2..=65536))]
    tensor_parallel: u32,
    /// Pipeline stages (1F1B, with --micro-batches in flight).
    #[arg(long, value_name = "P", default_value_t = Options::DEFAULTS.pipeline_stages, value_parser = clap::value_parser!(u32).range(2..=65536))]
    pipeline_stages: u32,
    /// Rank of the LoRA adapters.
    #[arg(long, value_name = "R", default_value_t = Options::DEFAULTS.lora_rank, value_parser = clap::value_parser!(u32).range(1..=65536))]
    lora_rank: u32,
    /// Chunks the output layer and loss are computed in (chunked loss).
    #[arg(long, value_name = "C", default_value_t = Options::DEFAULTS.loss_chunks, value_parser = clap::value_parser!(u32).range(2..=65536))]
    loss_chunks: u32,
    /// Memory to fit in (default: the device's memory where the input says it).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    capacity: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[command(flatten)]
    load: LoadArgs,
}

/// Advise on `args.path`.
pub fn run(out: &mut impl Paint, args: &AdviseArgs) -> Result<ExitCode> {
    let rec = open_with_history(&args.path, args.load)?;
    let timeline = Timeline::build(&rec);
    let options = Options {
        world_size: args.world_size,
        micro_batches: args.micro_batches,
        capacity_bytes: args.capacity,
        tensor_parallel: args.tensor_parallel,
        pipeline_stages: args.pipeline_stages,
        lora_rank: args.lora_rank,
        loss_chunks: args.loss_chunks,
    };
    let advice = advise(&rec, &timeline, &options);
    let named: Vec<NamedAdvice<'_>> = advice
        .iter()
        .map(|a| NamedAdvice {
            device: device_label(&rec, a.device),
            advice: a,
        })
        .collect();
    match args.format {
        Format::Text => advise_text(out, &named)?,
        Format::Json => advise_json(out, &named)?,
    }
    if named.is_empty() {
        eprint_escaped!(
            "vramscope: {}: nothing to advise on: {}",
            args.path.display(),
            no_allocations_words(&rec)
        );
    }
    Ok(ExitCode::SUCCESS)
}
