//! The what-if advisor: the estimated peak of a measured run under each memory-saving
//! technique of the field — bf16 autocast, full and selective activation checkpointing,
//! activation offload, ZeRO-1/2/3, optimizer offload, bf16 and 8-bit optimizer state,
//! micro-batching with gradient accumulation, LoRA, chunked loss, tensor, sequence and
//! pipeline parallelism — and, given a capacity, the smallest combination that fits. Each
//! technique is one registered rule ([`technique::REGISTRY`]).
//!
//! Estimates come from the categories and their lifetimes, not from a model config: each
//! allocation of the run is reshaped as the technique would ([`rules`]: halved, sharded,
//! freed at its block's end and remade when backward recomputes the block, …) and the whole
//! curve is re-evaluated, its maximum taken ([`curve`]). So checkpointing saves nothing when
//! the peak sits where activations are already gone, and ZeRO-1 can cost more than it saves
//! (DDP's buckets). `docs/ADVISOR.md` has the accuracy against real re-runs and the limits.

mod allocator;
mod backward;
mod basis;
mod curve;
mod fit;
mod frozen;
mod life;
mod micro;
mod ops;
mod rules;
mod run;
mod structure;
mod technique;

pub use allocator::{Caveat, SettingChange, SettingEstimate, allocator_settings};
pub use basis::{Basis, Found};
pub use fit::Fit;
pub use technique::{Parameter, Technique, techniques};

use crate::analysis::categories::{Category, composition_at_peak};
use crate::model::{DeviceIdx, Recording};
use crate::timeline::Timeline;
use curve::{Changes, Seg};
use run::Run;
use technique::{Ctx, Rule};

/// What the advisor is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Ranks for ZeRO (≥ 1).
    pub world_size: u32,
    /// Micro-batches per step (≥ 1).
    pub micro_batches: u32,
    /// Memory to fit in, bytes; `None`: the device's memory where known.
    pub capacity_bytes: Option<u64>,
    /// Tensor- (and sequence-) parallel degree (≥ 1).
    pub tensor_parallel: u32,
    /// Pipeline stages (≥ 1).
    pub pipeline_stages: u32,
    /// LoRA adapters' rank (≥ 1).
    pub lora_rank: u32,
    /// Chunks the loss is computed in (≥ 1).
    pub loss_chunks: u32,
}

impl Options {
    /// `advise`'s defaults, which the report and the viewer start from: ZeRO over 2 ranks,
    /// 2 micro-batches, tensor and pipeline parallelism of degree 2, rank-8 adapters, the
    /// loss in 4 chunks, the device's memory as the capacity where the input says it.
    pub const DEFAULTS: Options = Options {
        world_size: 2,
        micro_batches: 2,
        capacity_bytes: None,
        tensor_parallel: 2,
        pipeline_stages: 2,
        lora_rank: 8,
        loss_chunks: 4,
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
    /// The model used and the facts it read: what the estimate assumes and the technique
    /// costs (the app words it).
    pub basis: Basis,
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
    /// The allocator's settings, where the run can be replayed through the allocator
    /// model (their saving is reserved memory).
    pub allocator: Vec<SettingEstimate>,
}

/// The advice for every device with allocations.
pub fn advise(rec: &Recording, timeline: &Timeline, options: &Options) -> Vec<DeviceAdvice> {
    let mut settings = allocator_settings(rec, options.capacity_bytes);
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
                    let peak = estimate(&run, &[t], untracked, options);
                    let c = ctx(&run, t, untracked, options, 0);
                    Estimate {
                        technique: t,
                        estimated_peak_bytes: peak,
                        saving_bytes: measured - peak,
                        host_bytes: t.rule().host_bytes(&c),
                        basis: t.rule().basis(&c),
                    }
                })
                .collect();
            let capacity = options
                .capacity_bytes
                .or_else(|| rec.devices.get(d.device as usize)?.total_memory_bytes);
            let fit = capacity.map(|c| {
                fit::fit(c, measured, options, |ts| {
                    estimate(&run, ts, untracked, options)
                })
            });
            Some(DeviceAdvice {
                device: d.device,
                measured_peak_bytes: measured,
                estimates,
                fit,
                allocator: (settings.iter_mut())
                    .find(|(device, _)| *device == d.device)
                    .map(|(_, s)| std::mem::take(s))
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// The estimated peak of `device` with every technique of `plan` applied together (what
/// the capacity search weighs), `None` for a device without allocations. `options` gives
/// what a plan's techniques read beyond their own parameter (pipeline parallelism's
/// micro-batches).
pub fn estimate_together(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    plan: &[Technique],
    options: &Options,
) -> Option<i64> {
    let d = timeline
        .devices
        .iter()
        .find(|d| d.device == device && d.allocated_known && d.peak_allocated.is_some())?;
    let run = Run::build(rec, timeline, d);
    let untracked = untracked_parameter_bytes(rec, timeline, d, &run);
    Some(estimate(&run, plan, untracked, options))
}

/// What technique `t`'s rule reads, for its rank role `role`.
fn ctx<'a>(run: &'a Run, t: Technique, untracked: i64, options: &'a Options, role: u32) -> Ctx<'a> {
    Ctx {
        run,
        value: t.parameter().map_or(0, |p| p.1),
        untracked_parameter_bytes: untracked,
        options,
        role,
        memo: std::cell::OnceCell::new(),
    }
}

/// The peak of the run with every technique of `plan` applied together: the most loaded
/// rank's, over the rank roles the plan's techniques tell apart (pipeline stages; usually
/// one), each estimated by reshaping every allocation by every technique in turn, once, and
/// walking the curve once.
fn estimate(
    run: &Run,
    plan: &[Technique],
    untracked_parameter_bytes: i64,
    options: &Options,
) -> i64 {
    let roles: Vec<u32> = plan.iter().map(|t| t.rule().roles().max(1)).collect();
    let combinations: u32 = roles.iter().product();
    (0..combinations)
        .map(|mut k| {
            let rules: Vec<(&dyn Rule, Ctx<'_>)> = plan
                .iter()
                .zip(&roles)
                .map(|(&t, &n)| {
                    let role = k % n;
                    k /= n;
                    let c = ctx(run, t, untracked_parameter_bytes, options, role);
                    (t.rule(), c)
                })
                .collect();
            estimate_one(run, &rules)
        })
        .max()
        .unwrap_or(0)
}

/// The peak of the run reshaped by `rules`.
fn estimate_one(run: &Run, rules: &[(&dyn Rule, Ctx<'_>)]) -> i64 {
    let mut changes = Changes::default();
    for (i, life) in run.lives.iter().enumerate() {
        let original = Seg {
            start_ns: life.alloc_ns,
            end_ns: life.free_ns,
            bytes: life.bytes,
        };
        let mut segs = vec![original];
        for (rule, c) in rules {
            segs = segs
                .into_iter()
                .flat_map(|s| rule.reshape(c, i, life, s))
                .collect();
        }
        changes.replace(original, &segs);
    }
    for (rule, c) in rules {
        for s in rule.extras(c) {
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
