//! The loss over chunks of rows: chunked cross-entropy.

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::{Life, Phase};
use super::super::technique::{Ctx, Parameter, Rule, scaled};
use crate::analysis::categories::Category;

/// The output layer and the loss computed chunk by chunk, each chunk recomputed in backward.
pub(in super::super) struct ChunkedLoss;

impl Rule for ChunkedLoss {
    fn name(&self) -> &'static str {
        "chunked_loss"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Factor)
    }

    fn value(&self, o: &Options) -> u32 {
        o.loss_chunks.max(1)
    }

    /// Every tensor of the logits' size made in forward or backward (the logits, their
    /// log-softmax, their gradients) is one chunk's.
    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let logits = c.run.structure.logits_bytes;
        let batch_made = matches!(
            life.category,
            Category::Activation | Category::AutogradDetail | Category::Temporary
        );
        if logits > 0 && life.bytes == logits && batch_made && life.phase != Phase::Optimizer {
            scaled(seg, 1, i64::from(c.value))
        } else {
            vec![seg]
        }
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::ChunkedLoss {
            chunks: c.value,
            logits_bytes: c.run.structure.logits_bytes,
        }
    }
}
