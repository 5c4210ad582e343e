//! What a trace's memory from before the trace likely is. A CUDA trace's totals count
//! memory allocated before profiling began (a model loaded, an optimizer stepped, before
//! the profiled steps), but no event names it, so it is `before_trace` by residue. How much
//! of it was there at the first event, whether the trace ever freed any of it, and whether
//! the run trains say what it likely is: the weights of an inference run (or of a forward
//! and backward alone); the weights and the state a training loop keeps between steps.

use serde::{Deserialize, Serialize};

use super::{Category, CategoryBytes, phase::Phases};
use crate::model::{MemEventKind, Recording};
use crate::timeline::{DeviceTimeline, TotalsSource};

/// What memory from before a trace likely is, and the facts that say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeforeTrace {
    /// Allocated before the trace's first memory event on the device.
    pub at_start_bytes: i64,
    /// The least of the memory from before the trace allocated at any instant of it: what
    /// the trace never freed.
    pub held_throughout_bytes: i64,
    /// What it likely is.
    pub likely: LikelyBefore,
    /// Whether a backward pass made gradients in the trace.
    pub backward_ran: bool,
}

/// What memory from before a trace likely is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LikelyBefore {
    /// The trace has no optimizer step (inference, or a forward and backward alone): the
    /// model's weights and buffers, loaded before profiling.
    Weights,
    /// The trace steps an optimizer: the weights, and what a training loop keeps between
    /// steps (the optimizer's state; gradients where they are not set to `None`).
    WeightsAndTrainingState,
}

/// What the `before_trace` bytes at the peak likely are, on an accelerator whose totals
/// come from the trace; `None` where the peak has none, or they are mostly freed while
/// the trace runs (then they are not a model's standing memory).
pub(super) fn reading(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases<'_>,
    bytes: &CategoryBytes,
) -> Option<BeforeTrace> {
    let accelerator = rec.is_accelerator(d.device);
    let at_peak = bytes[Category::BeforeTrace.index()];
    if !accelerator || d.totals != TotalsSource::Trace || at_peak <= 0 {
        return None;
    }
    let (at_start, held) = untraced_extent(rec, d)?;
    if held.saturating_mul(HELD_SHARE_DEN) < at_peak.saturating_mul(HELD_SHARE_NUM) {
        return None;
    }
    let steps = !phases.optimizer_steps.is_empty();
    Some(BeforeTrace {
        at_start_bytes: at_start,
        held_throughout_bytes: held,
        backward_ran: bytes[Category::Gradient.index()] > 0 || phases.backward_ran(),
        likely: if steps {
            LikelyBefore::WeightsAndTrainingState
        } else {
            LikelyBefore::Weights
        },
    })
}

/// The share of the peak's memory from before the trace (9/10) that must stay allocated
/// through the whole trace for it to be read as a model's standing memory.
const HELD_SHARE_NUM: i64 = 9;
const HELD_SHARE_DEN: i64 = 10;

/// The allocated bytes no traced allocation accounts for, right after the first event and
/// at their least over the trace: one walk of the device's curve pairing blocks by address.
fn untraced_extent(rec: &Recording, d: &DeviceTimeline) -> Option<(i64, i64)> {
    let mut live: std::collections::HashMap<u64, i64> = Default::default();
    let mut traced = 0i64;
    let mut first = None;
    let mut least = i64::MAX;
    for p in &d.points {
        let Some(e) = rec.mem_events.get(p.event as usize) else {
            continue;
        };
        if let Some(addr) = e.addr.get() {
            match e.kind {
                MemEventKind::Alloc => {
                    traced += e.bytes;
                    traced -= live.insert(addr, e.bytes).unwrap_or(0);
                }
                MemEventKind::Free => traced -= live.remove(&addr).unwrap_or(0),
                _ => {}
            }
        }
        let untraced = (p.allocated_bytes - traced).max(0);
        first.get_or_insert(untraced);
        least = least.min(untraced);
    }
    Some((first?, least))
}
