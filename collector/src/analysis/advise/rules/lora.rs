//! Training adapters instead of the model: LoRA.

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::Life;
use super::super::technique::{Ctx, Parameter, Rule, scaled};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// Bytes of an fp32 element.
const FP32_BYTES: i64 = 4;

/// A frozen base with rank-r adapters beside its linears.
pub(in super::super) struct Lora;

impl Lora {
    /// The adapters, in bytes: A (r × in) and B (out × r) per adapted linear, each weight
    /// taken as square (in = out = √elements) since a trace records no weight shapes; the
    /// adapted linears' weights taken as the linear weights' average where they are fewer.
    fn adapter_bytes(c: &Ctx<'_>) -> i64 {
        let r = i64::from(c.value);
        let weights = &c.run.structure.linear_weights;
        let all: i64 = weights
            .iter()
            .map(|&w| 2 * r * (w / FP32_BYTES).isqrt() * FP32_BYTES)
            .sum();
        let n = i64::try_from(weights.len()).unwrap_or(i64::MAX).max(1);
        let adapted = i64::try_from(c.run.frozen.adapted).unwrap_or(0).min(n);
        all * adapted / n
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

    /// The frozen weights have no gradients, no state and no step; the adapters' take
    /// their place, made and freed when the measured ones were, in proportion (adapter bytes
    /// over parameter bytes); the weights gain the adapters'.
    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let (adapters, parameters) = *c.memo.get_or_init(|| {
            let parameters: i64 = c.run.parameter_bytes.iter().sum();
            (Lora::adapter_bytes(c), parameters.max(1))
        });
        if life.saved
            && let Some(prefix) = c.run.frozen.dropped(life.alloc_ns)
        {
            // Made before anything trainable: not kept for backward.
            let end_ns = prefix.first_ns.max(seg.start_ns);
            return vec![Seg {
                end_ns: Some(seg.end_ns.map_or(end_ns, |e| e.min(end_ns))),
                ..seg
            }];
        }
        // The step's temporaries first: the classifier may call one `parameter`.
        if life.category == Category::Gradient
            || life.category == Category::OptimizerState
            || optimizer_local(life)
        {
            scaled(seg, adapters, parameters)
        } else if life.category == Category::Parameter {
            scaled(seg, parameters + adapters, parameters)
        } else {
            vec![seg]
        }
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        Basis::Lora {
            rank: c.value,
            adapted_linears: c.run.frozen.adapted,
        }
    }
}
