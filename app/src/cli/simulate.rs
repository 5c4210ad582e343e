//! `vramscope simulate`: the run replayed through a model of PyTorch's CUDA caching
//! allocator, checked against what the real allocator did, then under other settings:
//! the reserved peak, fragmentation, driver calls, and whether each OOM would happen.

use crate::output::text::device_label;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use collector::analysis::simulate::{AllocatorConfig, SimulateOptions, simulate};

use super::input::{no_allocations_words, open_with_history};
use super::values::parse_size;
use super::{Format, LoadArgs};
use crate::output::simulate::{NamedSimulation, simulate_json, simulate_text};
use crate::output::style::Paint;
use crate::output::terminal::eprint_escaped;

/// The arguments of `simulate`.
#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// An allocator snapshot (its history replays exactly), or a trace whose memory events
    /// carry addresses.
    path: PathBuf,
    /// A setting to simulate beside the recorded one, as PYTORCH_CUDA_ALLOC_CONF says it
    /// (e.g. 'expandable_segments:True,max_split_size_mb:128'); repeat for more. Default:
    /// expandable_segments:True, and the max_split_size_mb that does best.
    #[arg(long = "allocator-conf", value_name = "CONF", value_parser = parse_conf)]
    allocator_conf: Vec<AllocatorConfig>,
    /// The memory the allocator may hold (default: from the run's first OOM, else the
    /// device's memory where the input says it).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    capacity: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    #[command(flatten)]
    load: LoadArgs,
}

fn parse_conf(text: &str) -> Result<AllocatorConfig, String> {
    AllocatorConfig::parse(text).map_err(|e| e.to_string())
}

/// Simulate `args.path`.
pub fn run(out: &mut impl Paint, args: &SimulateArgs) -> Result<ExitCode> {
    let rec = open_with_history(&args.path, args.load)?;
    let sim = simulate(
        &rec,
        &SimulateOptions {
            alternatives: args.allocator_conf.clone(),
            capacity_bytes: args.capacity,
            skip_proof: false,
        },
    );
    let Some(sim) = sim else {
        let kind = collector::model::MemEventKind::Alloc;
        let why = match rec.mem_events.iter().any(|e| e.kind == kind) {
            true => "its memory events carry no block addresses".to_owned(),
            false => no_allocations_words(&rec),
        };
        eprint_escaped!(
            "vramscope: {}: nothing to simulate: {}; the simulation needs an allocator snapshot (torch.cuda.memory._dump_snapshot) or a trace whose memory events carry addresses (profile_memory=True)",
            args.path.display(),
            why
        );
        return Ok(ExitCode::from(1));
    };
    let named: Vec<NamedSimulation<'_>> = (sim.devices.iter())
        .map(|d| NamedSimulation {
            device: device_label(&rec, d.device),
            simulation: d,
        })
        .collect();
    match args.format {
        Format::Text => simulate_text(out, &named)?,
        Format::Json => simulate_json(out, &named)?,
    }
    Ok(ExitCode::SUCCESS)
}
