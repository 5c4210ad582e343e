//! Lower precision: bf16 autocast.

use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::{Life, Phase};
use super::super::technique::{Ctx, Rule, scaled};
use crate::analysis::categories::Category;

/// Mixed precision: `torch.autocast(dtype=torch.bfloat16)`.
pub(in super::super) struct Bf16Autocast;

impl Rule for Bf16Autocast {
    fn name(&self) -> &'static str {
        "bf16_autocast"
    }

    fn reshape(&self, _: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let lowered = matches!(
            life.category,
            Category::Activation | Category::AutogradDetail | Category::Temporary
        ) && life.phase != Phase::Optimizer
            && !life.full_precision;
        if lowered {
            scaled(seg, 1, 2)
        } else {
            vec![seg]
        }
    }

    /// Each weight an op of autocast's lower-precision list uses is cast to bf16 in the
    /// forward and saved for backward, which frees the copy when the node using it runs: the
    /// node making that weight's gradient. The cast cache goes when autocast exits, so no
    /// copy is left at the optimizer step.
    fn extras(&self, c: &Ctx<'_>) -> Vec<Seg> {
        let run = c.run;
        run.lives
            .iter()
            .filter(|l| {
                l.category == Category::Gradient && l.phase == Phase::Backward && !l.full_precision
            })
            .map(|l| Seg {
                start_ns: run.iteration_start(l.alloc_ns),
                end_ns: Some(l.node_end_ns.unwrap_or(l.alloc_ns).max(l.alloc_ns)),
                bytes: l.bytes / 2,
            })
            .collect()
    }

    fn basis(&self, _: &Ctx<'_>) -> Basis {
        Basis::Bf16Autocast
    }
}
