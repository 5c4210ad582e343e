//! The optimizer's memory: its state moved to the host.

use super::super::curve::Seg;
use super::super::run::{Life, Phase};
use super::super::technique::{Ctx, Rule, Words};
use crate::analysis::categories::Category;

/// The group of the optimizer state's placements and formats (one at a time).
pub(in super::super) const OPTIMIZER_STATE: &str = "optimizer_state";

/// Made by the optimizer step and not a gradient: the step's temporaries (and the state).
pub(in super::super) fn optimizer_local(life: &Life) -> bool {
    life.phase == Phase::Optimizer && life.category != Category::Gradient
}

/// Optimizer state and step in host memory.
pub(in super::super) struct OptimizerOffload;

impl Rule for OptimizerOffload {
    fn name(&self) -> &'static str {
        "optimizer_offload"
    }

    fn group(&self) -> &'static str {
        OPTIMIZER_STATE
    }

    fn reshape(&self, _: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        if life.category == Category::OptimizerState || optimizer_local(life) {
            Vec::new()
        } else {
            vec![seg]
        }
    }

    fn host_bytes(&self, c: &Ctx<'_>) -> Option<i64> {
        Some(c.run.state_bytes + c.run.gradient_bytes)
    }

    fn words(&self, _: &Ctx<'_>) -> Words {
        Words {
            assumptions: "optimizer state and the step's temporaries move to host memory, which \
                          then holds the state and a copy of the gradients (host bytes)"
                .to_owned(),
            cost: "gradients copied to the host and parameters back each step; the step runs on \
                   the CPU"
                .to_owned(),
        }
    }
}
