//! Recomputing activations instead of keeping them: per-block checkpointing.

use super::super::basis::{Basis, Found};
use super::super::curve::Seg;
use super::super::run::{Life, Run, most_live};
use super::super::technique::{Ctx, Rule};

/// `torch.utils.checkpoint` around each block of the model.
pub(in super::super) struct ActivationCheckpointing;

/// The group of the kinds of recompute (one of them at a time).
pub(in super::super) const RECOMPUTE: &str = "recompute";

impl Rule for ActivationCheckpointing {
    fn name(&self) -> &'static str {
        "activation_checkpointing"
    }

    fn group(&self) -> &'static str {
        RECOMPUTE
    }

    fn reshape(&self, c: &Ctx<'_>, index: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        checkpointed(c.run, index, life, seg)
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::ActivationCheckpointing {
            blocks: Found::of(c.run.blocks.len(), c.run.stacks_without_spans),
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

/// Megatron's selective recompute: each attention core (scores, softmax, dropout, the matmul
/// with the values) checkpointed, every other activation kept.
pub(in super::super) struct SelectiveCheckpointing;

impl Rule for SelectiveCheckpointing {
    fn name(&self) -> &'static str {
        "selective_checkpointing"
    }

    fn group(&self) -> &'static str {
        RECOMPUTE
    }

    /// A tensor an attention core saved lives to the core's end, and again from when
    /// backward needs the core until its original free.
    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let Some(core) = life
            .core
            .and_then(|i| c.run.structure.cores.get(i as usize))
        else {
            return vec![seg];
        };
        let mut out = vec![Seg {
            end_ns: Some(core.end_ns.max(seg.start_ns)),
            ..seg
        }];
        if let (Some(again), Some(free)) = (core.recompute_ns, seg.end_ns)
            && again > core.end_ns
            && again < free
        {
            out.push(Seg {
                start_ns: again,
                ..seg
            });
        }
        out
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::SelectiveCheckpointing {
            cores: Found::of(c.run.structure.cores.len(), c.run.stacks_without_spans),
        }
    }
}

/// Blocks whose forward runs while a block's saved activations are copied to the host (and
/// ahead of backward, while they are copied back).
const OFFLOAD_BLOCKS_IN_FLIGHT: usize = 1;
/// Host-device copy bandwidth the price assumes: PCIe 4.0 ×16 with pinned memory, about
/// 25 GB/s each way.
const PCIE_BYTES_PER_S: f64 = 25e9;

/// Saved activations moved to host memory between their forward and their backward.
pub(in super::super) struct ActivationOffload;

impl ActivationOffload {
    /// The block whose forward end (or backward start) bounds block `b`'s device copy.
    fn neighbour(run: &Run, b: usize) -> &super::super::run::Block {
        let last = run.blocks.len().saturating_sub(1);
        let at = (b + OFFLOAD_BLOCKS_IN_FLIGHT).min(last);
        run.blocks.get(at).or(run.blocks.get(b)).unwrap_or(&EMPTY)
    }

    /// The most offloaded bytes at once: every block's saved activations.
    fn offloaded_bytes(run: &Run) -> i64 {
        most_live(run.lives.iter().filter(|l| l.saved && l.block.is_some()))
    }
}

static EMPTY: super::super::run::Block = super::super::run::Block::EMPTY;

impl Rule for ActivationOffload {
    fn name(&self) -> &'static str {
        "activation_offload"
    }

    fn incompatible_with(&self) -> &'static [&'static str] {
        &[
            "activation_checkpointing",
            "selective_checkpointing",
            "pipeline_parallel",
        ]
    }

    /// A block's saved activation stays on the device until the forward of the block after
    /// it ends (the copy out in flight), and is back from when backward begins that block
    /// (the copy in prefetched one block ahead) until its original free.
    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let Some(b) = life.block.map(|b| b as usize) else {
            return vec![seg];
        };
        if !life.saved || c.run.blocks.get(b).is_none() {
            return vec![seg];
        }
        let next = ActivationOffload::neighbour(c.run, b);
        let out_end = next.end_ns.max(seg.start_ns);
        let back = next
            .recompute_ns
            .or_else(|| c.run.blocks.get(b).and_then(|x| x.recompute_ns));
        let mut out = vec![Seg {
            end_ns: Some(seg.end_ns.map_or(out_end, |e| e.min(out_end))),
            ..seg
        }];
        if let (Some(again), Some(free)) = (back, seg.end_ns)
            && again > out_end
            && again < free
        {
            out.push(Seg {
                start_ns: again,
                ..seg
            });
        }
        out
    }

    fn host_bytes(&self, c: &Ctx<'_>) -> Option<i64> {
        Some(ActivationOffload::offloaded_bytes(c.run))
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::ActivationOffload {
            blocks_in_flight: OFFLOAD_BLOCKS_IN_FLIGHT,
            offloaded_bytes: ActivationOffload::offloaded_bytes(c.run),
            link_bytes_per_s: PCIE_BYTES_PER_S,
        }
    }
}
