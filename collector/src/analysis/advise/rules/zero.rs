//! Sharding the training state over data-parallel ranks: ZeRO-1 (ZeroRedundancyOptimizer
//! over DDP), ZeRO-2 and ZeRO-3 (FSDP), from what torch and DeepSpeed do.

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::Life;
use super::super::technique::{Ctx, Parameter, Rule, scaled};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// The group of ZeRO's stages (one at a time).
const ZERO: &str = "zero";

/// Optimizer state sharded over this many ranks (with DDP's gradient buckets).
pub(in super::super) struct Zero1;
/// FSDP: optimizer state, gradients and parameters sharded; `reshard` (ZeRO-3,
/// `FULL_SHARD`) regathers each block for its backward, without it (ZeRO-2, `SHARD_GRAD_OP`)
/// the parameters stay gathered from forward to the end of backward.
pub(in super::super) struct Fsdp {
    /// Reshard after forward (ZeRO-3).
    pub(in super::super) reshard: bool,
}

/// The ranks each stage shards over.
fn ranks(o: &Options) -> u32 {
    o.world_size.max(1)
}

impl Rule for Zero1 {
    fn name(&self) -> &'static str {
        "zero1"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::WorldSize)
    }

    fn value(&self, o: &Options) -> u32 {
        ranks(o)
    }

    fn group(&self) -> &'static str {
        ZERO
    }

    /// ZeroRedundancyOptimizer gives each rank whole parameters: the most loaded rank holds
    /// more than 1/N of the state, and its step makes the temporaries of whole parameters,
    /// one at a time, as the measured step did (they stay).
    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        if life.category == Category::OptimizerState {
            let (most, total) = c.run.largest_rank_share(c.value);
            scaled(seg, most, total)
        } else {
            vec![seg]
        }
    }

    /// DDP's gradient buckets: one more copy of the gradients.
    fn extras(&self, c: &Ctx<'_>) -> Vec<Seg> {
        c.run
            .first_backward_ns
            .map(|start_ns| Seg {
                start_ns,
                end_ns: None,
                bytes: c.run.gradient_bytes,
            })
            .into_iter()
            .collect()
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::Zero1 {
            world_size: c.value,
        }
    }
}

/// FSDP splits every parameter evenly over the ranks (ZeRO-2 and ZeRO-3 alike).
fn fsdp_reshape(c: &Ctx<'_>, life: &Life, seg: Seg) -> Vec<Seg> {
    let sharded = life.category == Category::OptimizerState
        || optimizer_local(life)
        || life.category == Category::Gradient
        || life.category == Category::Parameter;
    if sharded {
        scaled(seg, 1, i64::from(c.value))
    } else {
        vec![seg]
    }
}

impl Rule for Fsdp {
    fn name(&self) -> &'static str {
        if self.reshard { "zero3" } else { "zero2" }
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::WorldSize)
    }

    fn value(&self, o: &Options) -> u32 {
        ranks(o)
    }

    fn group(&self) -> &'static str {
        ZERO
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        fsdp_reshape(c, life, seg)
    }

    fn extras(&self, c: &Ctx<'_>) -> Vec<Seg> {
        fsdp(c, self.reshard)
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::Fsdp {
            world_size: c.value,
            reshard: self.reshard,
            blocks_known: !c.run.blocks.is_empty(),
        }
    }
}

/// FSDP's own memory. Each unit's parameters are gathered whole for its forward; a unit's
/// gradients are made whole in its backward and reduce-scattered (a transient of about one
/// layer). `SHARD_GRAD_OP` (`reshard_after_forward=False`) keeps every unit gathered from
/// its forward to the end of backward: a whole copy of the parameters. `FULL_SHARD` keeps
/// only the root unit (the parameters of no block: embeddings, the output layer) so, and
/// gathers each block again for its backward, prefetching the next one. The parameters the
/// totals held from before the capture are sharded.
fn fsdp(c: &Ctx<'_>, reshard: bool) -> Vec<Seg> {
    let (run, n, untracked_parameter_bytes) = (c.run, c.value, c.untracked_parameter_bytes);
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
