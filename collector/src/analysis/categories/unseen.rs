//! Weights a CPU profiler trace cannot count. Torch's CPU `Total Allocated` counts only
//! the allocations made while profiling is on, so a model built before profiling began is
//! in no total and no event: its weights appear nowhere, where a CUDA trace would show
//! them as memory from before the trace. Only the run's other memory says they exist: its
//! gradients (one per trainable weight, the same size) or its modules' forward passes.

use super::{Category, CategoryBytes, phase::Phases};
use crate::model::{Recording, SourceFormat};
use crate::timeline::{DeviceTimeline, TotalsSource};

/// Weights a CPU trace's totals leave out because they were made before profiling began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UnseenWeights {
    /// At least this many bytes of them: what the gradients and optimizer state at the
    /// peak imply (a trainable weight's gradient has its size, Adam's state twice it,
    /// AMSGrad's three times; frozen weights add more). `None` where nothing tells their
    /// size (inference).
    pub at_least_bytes: Option<i64>,
}

/// What the peak's `bytes` say of weights made before profiling, on the host device of a
/// profiler trace of a CPU run (no accelerator allocates in it): fewer weights than the
/// gradients and optimizer state imply (training), or no weights while the run calls
/// modules (inference). `step_results_bytes` of the peak's `parameter` are an optimizer
/// step's results that torch calls so (Adam's `sqrt(v)`), not weights.
pub(super) fn unseen_weights(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases<'_>,
    bytes: &CategoryBytes,
    step_results_bytes: i64,
) -> Option<UnseenWeights> {
    let host = rec
        .devices
        .get(d.device as usize)
        .is_some_and(|i| !i.key.is_accelerator());
    let cpu_run = !rec.mem_events.iter().any(|e| rec.is_accelerator(e.device));
    let counted_while_profiling = rec.meta.format == SourceFormat::TorchChromeTrace
        && d.totals == TotalsSource::Trace
        && host
        && cpu_run;
    if !counted_while_profiling {
        return None;
    }
    let weights = bytes[Category::Parameter.index()] - step_results_bytes;
    let implied = implied_weights_bytes(bytes, phases.state_tensors_per_weight);
    // Counted weights would be at least what the gradients and state imply, less
    // [`IMPLIED_SLACK`].
    if weights < implied - implied / IMPLIED_SLACK {
        return Some(UnseenWeights {
            at_least_bytes: Some(implied),
        });
    }
    (weights == 0 && phases.has_modules()).then_some(UnseenWeights {
        at_least_bytes: None,
    })
}

/// The share (1/64) by which counted weights may fall short of what the gradients and
/// state imply: Adam keeps a step counter per weight beside its moments (c12: 52 bytes
/// over twice the weights).
const IMPLIED_SLACK: i64 = 64;

/// The least weights the peak's gradients and optimizer state imply: a trainable weight
/// has a gradient of its size, and the run's optimizers keep at most `state_per_weight`
/// tensors of its size per weight ([`Phases::state_tensors_per_weight`]: Adam's moments
/// two, AMSGrad's three; SGD's momentum and Adagrad's sums one).
fn implied_weights_bytes(bytes: &CategoryBytes, state_per_weight: i64) -> i64 {
    let gradients = bytes[Category::Gradient.index()];
    let state = bytes[Category::OptimizerState.index()];
    gradients.max(state / state_per_weight.max(1))
}
