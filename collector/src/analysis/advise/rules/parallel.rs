//! Model parallelism: Megatron-style tensor parallelism, with sequence parallelism.

use super::super::Options;
use super::super::curve::Seg;
use super::super::run::{Life, Phase, Run};
use super::super::technique::{Ctx, Parameter, Rule, Words, scaled};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// The group of tensor parallelism and its sequence-parallel form (one at a time).
const TENSOR: &str = "tensor_parallel";

/// Column- and row-parallel linears over this many ranks; with `sequence`, the norms' and
/// residual stream's activations split along the sequence too (sequence parallelism).
pub(in super::super) struct TensorParallel {
    /// Sequence parallelism with it.
    pub(in super::super) sequence: bool,
}

/// What a rank holds of allocation `life` with the blocks' linears split over `t` ranks
/// (`sequence`: and the rest of the blocks' activations but the norms' outputs split along
/// the sequence).
fn tensor_share(run: &Run, t: u32, sequence: bool, life: &Life, seg: Seg) -> Vec<Seg> {
    let t64 = i64::from(t.max(1));
    let s = &run.structure;
    let weight_sized = s.split_sizes.contains(&life.bytes) && !s.whole_sizes.contains(&life.bytes);
    let split = match life.category {
        Category::Gradient => life.matmul && !life.head,
        Category::Parameter | Category::OptimizerState => weight_sized,
        _ if optimizer_local(life) => weight_sized,
        _ if life.phase == Phase::Forward && life.block.is_some() => {
            life.split || (sequence && !life.norm)
        }
        _ => false,
    };
    if split {
        return scaled(seg, 1, t64);
    }
    // Backward of a block: its temporaries mirror the block's saved activations, split as
    // they are.
    let backward = matches!(
        life.category,
        Category::Activation | Category::AutogradDetail | Category::Temporary
    ) && life.phase == Phase::Backward;
    let shares = life
        .backward_block
        .and_then(|b| s.shares.get(b as usize))
        .filter(|_| backward)
        .filter(|sh| sh.saved_bytes > 0);
    match shares {
        Some(sh) => {
            let kept = if sequence {
                sh.norm_bytes
            } else {
                sh.saved_bytes - sh.split_bytes
            };
            let den = sh.saved_bytes * t64;
            scaled(seg, kept * t64 + (sh.saved_bytes - kept), den)
        }
        None => vec![seg],
    }
}

impl Rule for TensorParallel {
    fn name(&self) -> &'static str {
        if self.sequence {
            "sequence_parallel"
        } else {
            "tensor_parallel"
        }
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Degree)
    }

    fn value(&self, o: &Options) -> u32 {
        o.tensor_parallel.max(1)
    }

    fn group(&self) -> &'static str {
        TENSOR
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        tensor_share(c.run, c.value, self.sequence, life, seg)
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        if self.sequence {
            sequence_words(c)
        } else {
            tensor_words(c)
        }
    }
}

fn tensor_words(c: &Ctx<'_>) -> Words {
    let t = c.value;
    Words {
        assumptions: format!(
            "Megatron-style over {t} ranks: the weights of the linears (those whose gradient \
             a matmul makes) but the output layer's, their gradients, state and step \
             temporaries ÷ {t}; in each block, between norms, the activations from the first \
             linear's output (column-parallel) to the last one's (row-parallel, whose output \
             is whole) ÷ {t}, and the block's backward temporaries in the same share; \
             norms, embedding, output layer, residual stream and the loss whole"
        ),
        cost: "two all-reduces of the residual stream per block in forward and two in \
               backward, inside each layer (fast links: within a node)"
            .to_owned(),
    }
}

fn sequence_words(c: &Ctx<'_>) -> Words {
    let t = c.value;
    Words {
        assumptions: format!(
            "tensor parallelism over {t} ranks, and the blocks' other activations (residual \
             stream, dropout, the linears' whole outputs) split along the sequence ÷ {t}; \
             each norm's output is gathered whole before the next column-parallel linear, \
             which saves it (torch's SequenceParallel; Megatron gathers it again in \
             backward instead); embedding, output layer and loss whole"
        ),
        cost: "an all-gather and a reduce-scatter in place of each all-reduce (the same \
               traffic)"
            .to_owned(),
    }
}
