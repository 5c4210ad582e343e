//! Training adapters instead of the model: LoRA.

use super::super::Options;
use super::super::curve::Seg;
use super::super::run::{Life, most_live};
use super::super::technique::{Ctx, Parameter, Rule, Words};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// Bytes of an fp32 element.
const FP32_BYTES: i64 = 4;

/// A frozen base with rank-r adapters beside its linears.
pub(in super::super) struct Lora;

impl Lora {
    /// Each linear's adapter, in bytes: A (r × in) and B (out × r), the weight taken as
    /// square (in = out = √elements), since a trace records no weight shapes.
    fn adapter_bytes(c: &Ctx<'_>) -> i64 {
        let r = i64::from(c.value);
        c.run
            .structure
            .linear_weights
            .iter()
            .map(|&w| 2 * r * (w / FP32_BYTES).isqrt() * FP32_BYTES)
            .sum()
    }
}

impl Rule for Lora {
    fn name(&self) -> &'static str {
        "lora"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Rank)
    }

    fn value(&self, o: &Options) -> u32 {
        o.lora_rank.max(1)
    }

    /// Fine-tuning adapters is a choice of what to train, not a way to fit a run.
    fn searched(&self) -> bool {
        false
    }

    /// The frozen weights have no gradients, no state and no step.
    fn reshape(&self, _: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        if life.category == Category::Gradient
            || life.category == Category::OptimizerState
            || optimizer_local(life)
        {
            Vec::new()
        } else {
            vec![seg]
        }
    }

    /// The adapters: their weights where the run's weights are in the totals, their
    /// gradients from the first backward, their state (as many copies as the measured
    /// optimizer keeps a parameter) from the first step.
    fn extras(&self, c: &Ctx<'_>) -> Vec<Seg> {
        let run = c.run;
        let adapters = Lora::adapter_bytes(c);
        let parameters: i64 = run.parameter_bytes.iter().sum();
        let weights_counted = c.untracked_parameter_bytes > 0
            || most_live(
                run.lives
                    .iter()
                    .filter(|l| l.category == Category::Parameter),
            ) > 0;
        let copies = if parameters > 0 {
            (run.state_bytes + parameters / 2) / parameters
        } else {
            0
        };
        let from = |t: Option<i64>, bytes: i64| {
            t.map(|start_ns| Seg {
                start_ns,
                end_ns: None,
                bytes,
            })
        };
        let first_ns = run.points.first().map(|p| p.0);
        [
            from(first_ns.filter(|_| weights_counted), adapters),
            from(run.first_backward_ns, adapters),
            from(run.optimizer_steps.first().map(|s| s.0), copies * adapters),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        let r = c.value;
        let n = c.run.structure.linear_weights.len();
        Words {
            assumptions: format!(
                "the base frozen (no gradients, no optimizer state, no step for its weights); \
                 rank-{r} adapters (A: r × in, B: out × r) beside each of the {n} linear weights \
                 (weights whose gradient a matmul makes) but the output layer's, each weight \
                 taken as square since a trace records no shapes, with their gradients and \
                 state; activations as measured"
            ),
            cost: "only the adapters learn: a fine-tuning choice (never picked to fit a \
                   capacity); merge them into the weights for inference"
                .to_owned(),
        }
    }
}
