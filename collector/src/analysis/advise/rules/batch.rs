//! The batch split: micro-batching with gradient accumulation ([`super::super::micro`]).

use super::super::Options;
use super::super::curve::Seg;
use super::super::run::Life;
use super::super::technique::{Ctx, Parameter, Rule, Words};

/// The batch split in this many micro-batches, gradients accumulated.
pub(in super::super) struct MicroBatch;

impl Rule for MicroBatch {
    fn name(&self) -> &'static str {
        "micro_batch"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Factor)
    }

    fn value(&self, o: &Options) -> u32 {
        o.micro_batches.max(1)
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        super::super::micro::reshape(c.value, c.run, life, seg)
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        let k = c.value;
        Words {
            assumptions: format!(
                "activations, inputs and temporaries of forward and backward scale with the \
                 batch (÷ {k}); gradients accumulate, so the later micro-batches run with every \
                 gradient live (from when the previous step's are freed), and each of their \
                 backward nodes makes its gradient anew beside the accumulated one; optimizer memory and what nothing names (unknown, before the \
                 trace) unchanged"
            ),
            cost: format!(
                "{k} forwards and backwards of 1/{k} the batch per step (lower GPU utilisation)"
            ),
        }
    }
}
