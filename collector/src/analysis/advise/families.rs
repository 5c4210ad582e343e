//! Each technique family's reshaping of one allocation segment and the memory it adds of
//! its own, from what torch and DeepSpeed do (the sentences in [`super::text`] say it
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
        Technique::MicroBatch(k) => super::micro::reshape(k, run, life, seg),
        // ZeroRedundancyOptimizer gives each rank whole parameters: the most loaded rank
        // holds more than 1/N of the state, and its step makes the temporaries of whole
        // parameters, one at a time, as the measured step did (they stay).
        Technique::Zero1(n) => {
            if life.category == Category::OptimizerState {
                let (most, total) = run.largest_rank_share(n);
                scaled(most, total)
            } else {
                vec![seg]
            }
        }
        // FSDP splits every parameter evenly over the ranks.
        Technique::Zero2(n) | Technique::Zero3(n) => {
            let sharded = life.category == Category::OptimizerState
                || optimizer_local
                || life.category == Category::Gradient
                || life.category == Category::Parameter;
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
    match t {
        // Each weight an op of autocast's lower-precision list uses is cast to bf16 in the
        // forward and saved for backward, which frees the copy when the node using it runs:
        // the node making that weight's gradient. The cast cache goes when autocast exits, so
        // no copy is left at the optimizer step.
        Technique::Bf16Autocast => run
            .lives
            .iter()
            .filter(|l| {
                l.category == Category::Gradient && l.phase == Phase::Backward && !l.full_precision
            })
            .map(|l| Seg {
                start_ns: run.iteration_start(l.alloc_ns),
                end_ns: Some(l.node_end_ns.unwrap_or(l.alloc_ns).max(l.alloc_ns)),
                bytes: l.bytes / 2,
            })
            .collect(),
        // DDP's gradient buckets: one more copy of the gradients.
        Technique::Zero1(_) => from_backward(run.gradient_bytes).into_iter().collect(),
        Technique::Zero2(n) => fsdp(run, n, untracked_parameter_bytes, false),
        Technique::Zero3(n) => fsdp(run, n, untracked_parameter_bytes, true),
        Technique::ActivationCheckpointing
        | Technique::MicroBatch(_)
        | Technique::OptimizerOffload => Vec::new(),
    }
}

/// FSDP's own memory. Each unit's parameters are gathered whole for its forward; a unit's
/// gradients are made whole in its backward and reduce-scattered (a transient of about one
/// layer). `SHARD_GRAD_OP` (`reshard_after_forward=False`) keeps every unit gathered from
/// its forward to the end of backward: a whole copy of the parameters. `FULL_SHARD` keeps
/// only the root unit (the parameters of no block: embeddings, the output layer) so, and
/// gathers each block again for its backward, prefetching the next one. The parameters the
/// totals held from before the capture are sharded.
fn fsdp(run: &Run, n: u32, untracked_parameter_bytes: i64, reshard: bool) -> Vec<Seg> {
    let mut out = Vec::new();
    if let Some(start_ns) = run.points.first().map(|p| p.0) {
        let shard_saving = untracked_parameter_bytes - untracked_parameter_bytes / i64::from(n);
        out.push(Seg {
            start_ns,
            end_ns: None,
            bytes: -shard_saving,
        });
    }
    let gathered = match (reshard, run.blocks.is_empty()) {
        (false, _) => run.gradient_bytes,
        (true, false) => run.root_unit_bytes,
        // No module scopes (an allocator snapshot), so no block is known: each unit is taken
        // as about one layer, the one in use and the one prefetched — not every parameter.
        (true, true) => (2 * run.layer_bytes).min(run.gradient_bytes),
    };
    for (start_ns, end_ns) in run.forward_to_backward() {
        out.push(Seg {
            start_ns,
            end_ns: Some(end_ns),
            bytes: gathered,
        });
    }
    for &(start_ns, end_ns) in &run.backward {
        out.push(Seg {
            start_ns,
            end_ns: Some(end_ns),
            bytes: run.layer_bytes,
        });
    }
    // FSDP2 keeps a unit.s all-gather output until the next all-gather is waited on, and
    // prefetches the next unit's: in each block's forward, both buffers.
    for (i, b) in run.blocks.iter().enumerate() {
        let prefetched = run.blocks.get(i + 1).map_or(0, |n| n.unit_bytes);
        out.push(Seg {
            start_ns: b.start_ns,
            end_ns: Some(b.end_ns),
            bytes: b.unit_bytes + prefetched,
        });
    }
    if reshard {
        for (i, b) in run.blocks.iter().enumerate() {
            out.push(Seg {
                start_ns: b.start_ns,
                end_ns: Some(b.end_ns),
                bytes: b.unit_bytes,
            });
            let Some((s, e)) = b.backward else { continue };
            // Its own unit, and the one backward runs next (the block before), prefetched.
            let next = i.checked_sub(1).and_then(|p| run.blocks.get(p));
            let prefetched = next.map_or(0, |p| p.unit_bytes);
            out.push(Seg {
                start_ns: s,
                end_ns: Some(e),
                bytes: b.unit_bytes + prefetched,
            });
        }
    }
    out
}
