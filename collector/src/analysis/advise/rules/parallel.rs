//! Model parallelism: Megatron-style tensor parallelism, with sequence parallelism.

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::{Life, Phase, Run};
use super::super::technique::{Ctx, Parameter, Rule, scaled};
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

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::TensorParallel {
            degree: c.value,
            sequence: self.sequence,
        }
    }
}
