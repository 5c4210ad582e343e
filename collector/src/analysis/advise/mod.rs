//! The what-if advisor: the estimated peak of a measured run under each memory-saving
//! technique of the field — bf16 autocast, per-block activation checkpointing, ZeRO-1/2/3,
//! optimizer offload, micro-batching with gradient accumulation — and, given a capacity,
//! the smallest combination that fits.
//!
//! Estimates come from the categories and their lifetimes, not from a model config: each
//! allocation of the run is reshaped as the technique would ([`families`]: halved, sharded,
//! freed at its block's end and remade when backward recomputes the block, …) and the whole
//! curve is re-evaluated, its maximum taken ([`curve`]). So checkpointing saves nothing when
//! the peak sits where activations are already gone, and ZeRO-1 can cost more than it saves
//! (DDP's buckets). `docs/ADVISOR.md` has the accuracy against real re-runs and the limits.

mod backward;
mod curve;
mod families;
mod fit;
mod micro;
mod ops;
mod run;
mod text;

pub use fit::Fit;

use crate::analysis::categories::{Category, composition_at_peak};
use crate::model::{DeviceIdx, Recording};
use crate::timeline::Timeline;
use curve::{Changes, Seg};
use run::Run;

/// A memory-saving technique, with its parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Technique {
    /// Mixed precision: `torch.autocast(dtype=torch.bfloat16)`.
    Bf16Autocast,
    /// `torch.utils.checkpoint` around each block of the model.
    ActivationCheckpointing,
    /// Optimizer state sharded over this many ranks (with DDP's gradient buckets).
    Zero1(u32),
    /// Optimizer state and gradients sharded.
    Zero2(u32),
    /// Optimizer state, gradients and parameters sharded (FSDP).
    Zero3(u32),
    /// Optimizer state and step in host memory.
    OptimizerOffload,
    /// The batch split in this many micro-batches, gradients accumulated.
    MicroBatch(u32),
}

impl Technique {
    /// The stable name: `bf16_autocast`, `zero1`, `micro_batch`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Technique::Bf16Autocast => "bf16_autocast",
            Technique::ActivationCheckpointing => "activation_checkpointing",
            Technique::Zero1(_) => "zero1",
            Technique::Zero2(_) => "zero2",
            Technique::Zero3(_) => "zero3",
            Technique::OptimizerOffload => "optimizer_offload",
            Technique::MicroBatch(_) => "micro_batch",
        }
    }

    /// Ranks the state is sharded over (ZeRO).
    pub fn world_size(self) -> Option<u32> {
        match self {
            Technique::Zero1(n) | Technique::Zero2(n) | Technique::Zero3(n) => Some(n),
            _ => None,
        }
    }

    /// Micro-batches per step.
    pub fn factor(self) -> Option<u32> {
        match self {
            Technique::MicroBatch(k) => Some(k),
            _ => None,
        }
    }
}

/// What the advisor is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Ranks for ZeRO (≥ 1).
    pub world_size: u32,
    /// Micro-batches per step (≥ 1).
    pub micro_batches: u32,
    /// Memory to fit in, bytes; `None`: the device's memory where known.
    pub capacity_bytes: Option<u64>,
}

impl Options {
    /// `advise`'s defaults, which the report and the viewer start from: ZeRO over 2 ranks,
    /// 2 micro-batches, the device's memory as the capacity where the input says it.
    pub const DEFAULTS: Options = Options {
        world_size: 2,
        micro_batches: 2,
        capacity_bytes: None,
    };
}

/// One technique's estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The technique and its parameter.
    pub technique: Technique,
    /// The estimated peak allocated bytes with it.
    pub estimated_peak_bytes: i64,
    /// Measured minus estimated peak (negative: it costs memory).
    pub saving_bytes: i64,
    /// Host memory it uses instead (offload), bytes.
    pub host_bytes: Option<i64>,
    /// What the estimate assumes, one sentence.
    pub assumptions: String,
    /// Its price, in words.
    pub cost: String,
}

/// The advice for one device.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceAdvice {
    /// The device.
    pub device: DeviceIdx,
    /// The measured allocated peak.
    pub measured_peak_bytes: i64,
    /// One estimate per technique.
    pub estimates: Vec<Estimate>,
    /// Whether and how the run fits the capacity, where one is known.
    pub fit: Option<Fit>,
}

/// The techniques estimated one by one, in the order reports list them.
pub fn techniques(o: &Options) -> Vec<Technique> {
    let n = o.world_size.max(1);
    vec![
        Technique::Bf16Autocast,
        Technique::ActivationCheckpointing,
        Technique::Zero1(n),
        Technique::Zero2(n),
        Technique::Zero3(n),
        Technique::OptimizerOffload,
        Technique::MicroBatch(o.micro_batches.max(1)),
    ]
}

/// The advice for every device with allocations.
pub fn advise(rec: &Recording, timeline: &Timeline, options: &Options) -> Vec<DeviceAdvice> {
    timeline
        .devices
        .iter()
        .filter(|d| d.allocated_known && d.peak_allocated.is_some())
        .filter_map(|d| {
            let measured = d.points.get(d.peak_allocated?)?.allocated_bytes;
            let run = Run::build(rec, timeline, d);
            let untracked = untracked_parameter_bytes(rec, timeline, d, &run);
            let estimates = techniques(options)
                .into_iter()
                .map(|t| {
                    let peak = estimate(&run, &[t], untracked);
                    text::estimate(t, &run, measured, peak)
                })
                .collect();
            let capacity = options
                .capacity_bytes
                .or_else(|| rec.devices.get(d.device as usize)?.total_memory_bytes);
            let fit = capacity
                .map(|c| fit::fit(c, measured, options, |ts| estimate(&run, ts, untracked)));
            Some(DeviceAdvice {
                device: d.device,
                measured_peak_bytes: measured,
                estimates,
                fit,
            })
        })
        .collect()
}

/// The estimated peak of `device` with every technique of `plan` applied together (what
/// the capacity search weighs), `None` for a device without allocations.
pub fn estimate_together(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    plan: &[Technique],
) -> Option<i64> {
    let d = timeline
        .devices
        .iter()
        .find(|d| d.device == device && d.allocated_known && d.peak_allocated.is_some())?;
    let run = Run::build(rec, timeline, d);
    let untracked = untracked_parameter_bytes(rec, timeline, d, &run);
    Some(estimate(&run, plan, untracked))
}

/// The peak of the run with every technique of `plan` applied together.
fn estimate(run: &Run, plan: &[Technique], untracked_parameter_bytes: i64) -> i64 {
    let mut changes = Changes::default();
    for (i, life) in run.lives.iter().enumerate() {
        let original = Seg {
            start_ns: life.alloc_ns,
            end_ns: life.free_ns,
            bytes: life.bytes,
        };
        let mut segs = vec![original];
        for &t in plan {
            segs = segs
                .into_iter()
                .flat_map(|s| families::reshape(t, run, i, life, s))
                .collect();
        }
        changes.replace(original, &segs);
    }
    for &t in plan {
        for s in families::extras(t, run, untracked_parameter_bytes) {
            changes.add(s);
        }
    }
    changes.peak(&run.points)
}

/// Parameter bytes the totals hold without an event naming them (a trace started
/// mid-training on CUDA): one gradient's worth when the peak's `before_trace` holds that
/// much, else none (CPU traces count only what was allocated while profiling).
fn untracked_parameter_bytes(
    rec: &Recording,
    timeline: &Timeline,
    d: &crate::timeline::DeviceTimeline,
    run: &Run,
) -> i64 {
    let before =
        composition_at_peak(rec, timeline, d).map_or(0, |c| c.bytes[Category::BeforeTrace.index()]);
    if run.gradient_bytes > 0 && before >= run.gradient_bytes {
        run.gradient_bytes
    } else {
        0
    }
}
