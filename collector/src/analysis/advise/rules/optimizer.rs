//! The optimizer's memory: its state moved to the host.

use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::{Life, Phase};
use super::super::technique::{Ctx, Rule, scaled};
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

    fn basis(&self, _: &Ctx<'_>) -> Basis {
        Basis::OptimizerOffload
    }
}

/// Adam's two states (or SGD's momentum) kept in bf16, updated in place from the fp32
/// gradients.
pub(in super::super) struct OptimizerBf16States;

impl Rule for OptimizerBf16States {
    fn name(&self) -> &'static str {
        "optimizer_bf16_states"
    }

    fn group(&self) -> &'static str {
        OPTIMIZER_STATE
    }

    fn reshape(&self, _: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        if life.category == Category::OptimizerState || optimizer_local(life) {
            scaled(seg, 1, 2)
        } else {
            vec![seg]
        }
    }

    fn basis(&self, _: &Ctx<'_>) -> Basis {
        Basis::OptimizerBf16States
    }
}

/// Parameters smaller than this many elements keep 32-bit state in bitsandbytes' 8-bit
/// optimizers (`min_8bit_size`).
const MIN_8BIT_ELEMENTS: i64 = 4096;
/// Bytes of an fp32 element (the measured state's and parameters').
const FP32_BYTES: i64 = 4;
/// Elements per quantization block, each with one fp32 absmax (bitsandbytes' block-wise
/// quantization).
const QUANT_BLOCK_ELEMENTS: i64 = 256;

/// bitsandbytes' 8-bit Adam: each state one byte an element plus a block's absmax, updated by
/// one fused kernel per parameter.
pub(in super::super) struct Optimizer8bit;

impl Rule for Optimizer8bit {
    fn name(&self) -> &'static str {
        "optimizer_8bit"
    }

    fn group(&self) -> &'static str {
        OPTIMIZER_STATE
    }

    /// A state or step temporary the size of a parameter of at least `MIN_8BIT_ELEMENTS`:
    /// the state shrinks to a quarter (plus the absmax of each block), the temporaries go
    /// (the fused kernel makes none); smaller parameters' stay as measured.
    fn reshape(&self, _: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let large = life.bytes >= MIN_8BIT_ELEMENTS * FP32_BYTES;
        if life.category == Category::OptimizerState && large {
            let elements = seg.bytes / FP32_BYTES;
            let absmax = (elements + QUANT_BLOCK_ELEMENTS - 1) / QUANT_BLOCK_ELEMENTS * FP32_BYTES;
            vec![Seg {
                bytes: elements + absmax,
                ..seg
            }]
        } else if optimizer_local(life) && large && life.category != Category::OptimizerState {
            Vec::new()
        } else {
            vec![seg]
        }
    }

    fn basis(&self, _: &Ctx<'_>) -> Basis {
        Basis::Optimizer8bit {
            min_elements: MIN_8BIT_ELEMENTS,
            block_elements: QUANT_BLOCK_ELEMENTS,
        }
    }
}
