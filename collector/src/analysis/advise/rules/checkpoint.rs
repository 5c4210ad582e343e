//! Recomputing activations instead of keeping them: per-block checkpointing.

use super::super::curve::Seg;
use super::super::run::{Life, Run, most_live};
use super::super::technique::{Ctx, Rule, Words};

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

    fn words(&self, c: &Ctx<'_>) -> Words {
        if c.run.blocks.is_empty() {
            return Words {
                assumptions: without_scopes(c, "no blocks to checkpoint were found")
                    .unwrap_or_else(|| {
                        "the trace has no module scopes (profile with with_stack=True), so no \
                         blocks to checkpoint were found: no change estimated"
                            .to_owned()
                    }),
                cost: "one more forward per step".to_owned(),
            };
        }
        Words {
            assumptions: format!(
                "each block forward ({} over the run: modules directly under the root that hold \
                 modules) keeps only its output for backward, and its other saved activations \
                 come back while backward recomputes it",
                c.run.blocks.len()
            ),
            cost: "one more forward per step (about a third more compute)".to_owned(),
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

    fn words(&self, c: &Ctx<'_>) -> Words {
        let n = c.run.structure.cores.len();
        let assumptions = if n == 0 {
            without_scopes(
                c,
                "no attention core (a softmax inside a block's forward) was found",
            )
            .unwrap_or_else(|| {
                "no attention core found (a softmax inside a block's forward, with module \
                 scopes: with_stack=True): no change estimated"
                    .to_owned()
            })
        } else {
            format!(
                "each attention core ({n} over the run: from the scores before a block's softmax \
                 to the matmul with the values) checkpointed: the tensors it saves (softmax \
                 output, dropout mask and output) live only to its end and come back when \
                 backward reaches it; every other activation kept"
            )
        };
        Words {
            assumptions,
            cost: "the attention core's forward twice (a few percent more compute)".to_owned(),
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

    fn words(&self, c: &Ctx<'_>) -> Words {
        let bytes = ActivationOffload::offloaded_bytes(c.run);
        let ms = 2.0 * bytes as f64 / PCIE_BYTES_PER_S * 1e3;
        Words {
            assumptions: format!(
                "every block's saved activations copied to pinned host memory after its forward \
                 ({OFFLOAD_BLOCKS_IN_FLIGHT} block's forward in flight) and back one block \
                 ahead of its backward (host bytes: the most offloaded at once); activations \
                 outside blocks stay; not re-run here (on CPU the host is the device)"
            ),
            cost: format!(
                "{ms:.2} ms of host-device copies per step (out and back, at {:.0} GB/s: PCIe \
                 4.0 ×16), hidden only where compute overlaps them",
                PCIE_BYTES_PER_S / 1e9
            ),
        }
    }
}

/// Why a rule that reads module scopes estimated no change on an allocator snapshot:
/// `what` was not found, and what would find it (issue 37: a snapshot was told to profile
/// with `with_stack=True`, which gave it the stacks it has). `None` for a trace.
fn without_scopes(c: &Ctx<'_>, what: &str) -> Option<String> {
    c.run.stacks_without_spans.then(|| {
        format!(
            "{what}: blocks come from a profiler trace's nn.Module scopes, which an allocator \
             snapshot does not record (its call stacks do not mark where a block begins and \
             ends); profile a step with torch.profiler to estimate it: no change estimated"
        )
    })
}
