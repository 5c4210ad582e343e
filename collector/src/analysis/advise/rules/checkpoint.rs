//! Recomputing activations instead of keeping them: per-block checkpointing.

use super::super::curve::Seg;
use super::super::run::{Life, Run};
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
                assumptions: "the trace has no module scopes (profile with with_stack=True), so \
                              no blocks to checkpoint were found: no change estimated"
                    .to_owned(),
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
