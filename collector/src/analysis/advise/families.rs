//! Each technique family's reshaping of one allocation segment and the memory it adds of
//! its own, from what torch and DeepSpeed do (the sentences in [`super::describe`] say it
//! to the user).

use super::Technique;
use super::curve::Seg;
use super::run::{Life, Phase, Run};
use crate::analysis::categories::Category;

/// The technique's version of `seg`, a piece of allocation `index`'s life.
pub(super) fn reshape(t: Technique, run: &Run, index: usize, life: &Life, seg: Seg) -> Vec<Seg> {
    let scaled = |num: i64, den: i64| {
        vec![Seg {
            bytes: (seg.bytes * num + den.max(1) - 1) / den.max(1),
            ..seg
        }]
    };
    let optimizer_local = life.phase == Phase::Optimizer && life.category != Category::Gradient;
    match t {
        Technique::Bf16Autocast => {
            let lowered = matches!(
                life.category,
                Category::Activation | Category::AutogradDetail | Category::Temporary
            ) && life.phase != Phase::Optimizer
                && !life.full_precision;
            if lowered { scaled(1, 2) } else { vec![seg] }
        }
        Technique::ActivationCheckpointing => checkpointed(run, index, life, seg),
        Technique::MicroBatch(k) => {
            let per_sample = matches!(
                life.category,
                Category::Activation
                    | Category::Input
                    | Category::Temporary
                    | Category::AutogradDetail
                    | Category::Unknown
            ) && life.phase != Phase::Optimizer;
            if per_sample {
                scaled(1, i64::from(k))
            } else if life.category == Category::Gradient && k > 1 {
                // Accumulated: the later micro-batches run with every gradient live.
                let start_ns = run.iteration_start(life.alloc_ns).min(seg.start_ns);
                vec![Seg { start_ns, ..seg }]
            } else {
                vec![seg]
            }
        }
        Technique::Zero1(n) | Technique::Zero2(n) | Technique::Zero3(n) => {
            let sharded = life.category == Category::OptimizerState
                || optimizer_local
                || (life.category == Category::Gradient && !matches!(t, Technique::Zero1(_)))
                || (life.category == Category::Parameter && matches!(t, Technique::Zero3(_)));
            if sharded {
                scaled(1, i64::from(n))
            } else {
                vec![seg]
            }
        }
        Technique::OptimizerOffload => {
            if life.category == Category::OptimizerState || optimizer_local {
                Vec::new()
            } else {
                vec![seg]
            }
        }
    }
}

/// Per-block checkpointing: a saved activation of a block, other than the block's output,
/// lives only to the end of the block's forward, and again from when backward recomputes
/// the block until its original free.
fn checkpointed(run: &Run, index: usize, life: &Life, seg: Seg) -> Vec<Seg> {
    let Some(block) = life.block.and_then(|b| run.blocks.get(b as usize)) else {
        return vec![seg];
    };
    if !life.saved || block.output == Some(index) {
        return vec![seg];
    }
    let mut out = vec![Seg {
        end_ns: Some(block.end_ns),
        ..seg
    }];
    if let (Some(again), Some(free)) = (block.recompute_ns, seg.end_ns)
        && again > block.end_ns
        && again < free
    {
        out.push(Seg {
            start_ns: again,
            ..seg
        });
    }
    out
}

/// Memory the technique adds of its own.
pub(super) fn extras(t: Technique, run: &Run, untracked_parameter_bytes: i64) -> Vec<Seg> {
    let from_backward = |bytes: i64| {
        run.first_backward_ns.map(|start_ns| Seg {
            start_ns,
            end_ns: None,
            bytes,
        })
    };
    let from_start = |bytes: i64| {
        run.points.first().map(|p| Seg {
            start_ns: p.0,
            end_ns: None,
            bytes,
        })
    };
    match t {
        // Weights cast to bf16 once per forward, kept for backward, dropped at the step.
        Technique::Bf16Autocast => {
            let mut start_ns = run.points.first().map_or(0, |p| p.0);
            let mut out = Vec::new();
            for &(step_start, step_end) in &run.optimizer_steps {
                out.push(Seg {
                    start_ns,
                    end_ns: Some(step_start),
                    bytes: run.gradient_bytes / 2,
                });
                start_ns = step_end;
            }
            out
        }
        // DDP's gradient buckets: one more copy of the gradients.
        Technique::Zero1(_) => from_backward(run.gradient_bytes).into_iter().collect(),
        // The reduce-scatter buffer: about one unsharded layer.
        Technique::Zero2(_) => from_backward(run.layer_bytes).into_iter().collect(),
        // Gather and prefetch buffers (one layer each) and the reduce-scatter buffer; the
        // parameters counted in the totals before the capture, sharded.
        Technique::Zero3(n) => {
            let shard_saving = untracked_parameter_bytes - untracked_parameter_bytes / i64::from(n);
            from_start(2 * run.layer_bytes - shard_saving)
                .into_iter()
                .chain(from_backward(run.layer_bytes))
                .collect()
        }
        Technique::ActivationCheckpointing
        | Technique::MicroBatch(_)
        | Technique::OptimizerOffload => Vec::new(),
    }
}
