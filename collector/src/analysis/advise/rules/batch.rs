//! The batch split: micro-batching with gradient accumulation ([`super::super::micro`]).

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::Life;
use super::super::technique::{Ctx, Parameter, Rule};

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

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::MicroBatch { factor: c.value }
    }
}
