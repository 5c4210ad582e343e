//! An optimizer step's results that torch names by what flows into them rather than what
//! they hold: a magnitude taken of the temporary made just before it, a gradient decayed
//! out of place, SGD's Nesterov step and Adadelta's two results (told from a decay by the
//! ops the step's code called before them); and how many state tensors a weight the step's
//! optimizer keeps.
//!
//! The decayed gradient is the L2 weight decay of every single-tensor optimizer but
//! AdamW's (`grad = grad.add(param, alpha=weight_decay)`), a new tensor of the weight's size
//! opening each weight's update. torch names it, and in Adam and RMSprop what the update
//! makes while it lives, by its data-flow fallback: the 8-byte tensors Python numbers are
//! wrapped in are inputs to torch, so its "forward" flood enters the step
//! (`exp_avg_sq.mul_(beta2)`), and a tensor that meets a flooded one in an op while being no
//! gradient — the decayed gradient in `addcmul_(g, g)` — becomes a parameter. Which tensors
//! the flood meets differs by optimizer; measured with
//! `tests/fixtures/categories/probe_torch_labels.py` on runs of each (docs/CATEGORIES.md).

use super::leaf::LeafKind;
use super::phase::{Phase, Phases, Site};
use crate::model::{MemEvent, Recording};
use crate::timeline::{Allocation, DeviceTimeline};

/// Whether optimizer-step allocation `i`, a magnitude ([`LeafKind::Magnitude`]), was taken
/// of the temporary made just before it rather than of a state tensor or gradient: the
/// device's previous allocation, of the same size (an elementwise op's input), made on the
/// same thread in the optimizer by another kind of op, was freed after it was made and
/// before anything else was allocated (NAdam's `v.div(c).sqrt()`; Adam's `v.sqrt()`
/// follows no such temporary).
pub(super) fn magnitude_of_a_temporary(
    phases: &Phases,
    rec: &Recording,
    d: &DeviceTimeline,
    i: usize,
) -> bool {
    let (Some(prev), Some(a)) = (
        i.checked_sub(1).and_then(|p| d.allocations.get(p)),
        d.allocations.get(i),
    ) else {
        return false;
    };
    let next_ns = d.allocations.get(i + 1).map_or(i64::MAX, |n| n.alloc_ns);
    let until_ns = next_ns.min(a.free_ns.get().unwrap_or(i64::MAX));
    let consumed = (prev.free_ns.get()).is_some_and(|f| a.alloc_ns <= f && f <= until_ns);
    consumed
        && prev.bytes == a.bytes
        && prev.thread == a.thread
        && rec
            .mem_events
            .get(prev.alloc_event as usize)
            .map(|e| phases.site(e))
            .is_some_and(|s| s.phase == Phase::Optimizer && s.leaf_kind != LeafKind::Magnitude)
}

/// What torch names a step's decayed gradients and the results made while one lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum DecayNaming {
    /// The decayed gradient a parameter, the rest as without decay (SGD, NAdam, Adagrad,
    /// and optimizers not measured: the flood meets it in their moments' update).
    #[default]
    Parameter,
    /// The decayed gradient a parameter, and the update's other results made while it lives
    /// unnamed (Adam: its `sqrt(v)` and the quotient; RMSprop: its `sqrt(v)`). Both then
    /// take the root of the moment the decayed gradient was just added to, an op whose one
    /// input is optimizer state: nothing torch names flows into it.
    ParameterThenUnnamed,
    /// Unnamed (RAdam, Adamax: the flood does not meet it).
    Unnamed,
}

/// How torch names the decayed gradients of the step a span named `name` marks
/// (`Optimizer.step#Adam.step`): by the optimizer's class.
pub(super) fn decay_naming(name: &str) -> DecayNaming {
    match optimizer_class(name) {
        "Adam" | "RMSprop" => DecayNaming::ParameterThenUnnamed,
        "RAdam" | "Adamax" => DecayNaming::Unnamed,
        _ => DecayNaming::Parameter,
    }
}

/// The most state tensors of a weight's size any of torch's optimizers keeps per weight:
/// Adam's and AdamW's with `amsgrad` (two moments and their running maximum), RMSprop's
/// centered with momentum (its square average, gradient average and momentum buffer).
pub(super) const MOST_STATE_TENSORS_PER_WEIGHT: i64 = 3;

/// How many state tensors of a weight's size the optimizer whose step a span named `name`
/// marks keeps per weight at most, by its class: Adam's family two (and a third, AMSGrad's
/// maximum, where [`may_keep_a_third_state`] says), SGD with momentum and Adagrad one;
/// RMSprop, and a class not measured, the most torch's optimizers keep.
pub(super) fn state_tensors_per_weight(name: &str) -> i64 {
    match optimizer_class(name) {
        "Adam" | "AdamW" | "NAdam" | "RAdam" | "Adamax" | "Adadelta" | "Rprop" => 2,
        "SGD" | "Adagrad" | "ASGD" => 1,
        _ => MOST_STATE_TENSORS_PER_WEIGHT,
    }
}

/// Whether an op named `name`, run in the step of an optimizer that [`may_run_amsgrad`],
/// says it keeps a third state tensor per weight: AMSGrad's running maximum
/// (`aten::maximum`, the foreach `aten::_foreach_maximum_`), or a fused Adam kernel, whose
/// one op hides whether it keeps one. (Adamax's running maximum is one of its two.)
pub(super) fn may_keep_a_third_state(name: &str) -> bool {
    matches!(
        name,
        "aten::maximum"
            | "aten::_foreach_maximum_"
            | "aten::_foreach_maximum"
            | "aten::_fused_adam_"
            | "aten::_fused_adamw_"
    )
}

/// Whether the optimizer whose step a span named `name` marks may keep AMSGrad's maximum
/// (`amsgrad=True`): Adam and AdamW.
pub(super) fn may_run_amsgrad(name: &str) -> bool {
    matches!(optimizer_class(name), "Adam" | "AdamW")
}

/// The optimizer's class in its step span's name (`Optimizer.step#Adam.step`: `Adam`).
fn optimizer_class(name: &str) -> &str {
    name.strip_prefix("Optimizer.step#")
        .and_then(|rest| rest.strip_suffix(".step"))
        .unwrap_or_default()
}

/// How many of the device's earlier allocations [`made_while_a_decayed_gradient_lives`]
/// looks back through: an Adam update makes its decayed gradient, the wrapped scalars of
/// its moments' update (8 bytes each) and then the magnitude and quotient.
const MAX_DECAY_LOOKBACK: usize = 8;

/// How many allocations before one the rules read the sites of (this file's look-backs:
/// [`magnitude_of_a_temporary`] reads one): `summary` of a compact recording fetches the
/// spans enclosing them too, 8 more times asked for each allocation live at the peak.
const SITES_READ_BEFORE: usize = MAX_DECAY_LOOKBACK;

/// The allocating events of allocation `i` of the device and of the ones before it whose
/// sites the rules read for it.
pub(super) fn sites_read(d: &DeviceTimeline, i: usize) -> impl Iterator<Item = u32> + '_ {
    let first = i.saturating_sub(SITES_READ_BEFORE);
    let read: &[Allocation] = d.allocations.get(first..=i).unwrap_or_default();
    read.iter().map(|a| a.alloc_event)
}

/// Whether allocation `i`, made in optimizer step `own_step` (its site's, which the caller
/// has read), was made on the same thread while a gradient of its size decayed out of place
/// in the same step still lived.
pub(super) fn made_while_a_decayed_gradient_lives(
    phases: &Phases,
    rec: &Recording,
    d: &DeviceTimeline,
    i: usize,
    own_step: Option<usize>,
) -> bool {
    adds_of_its_size_live(phases, rec, d, i, own_step) > 0
}

/// How many out-of-place adds of allocation `i`'s size, made before it on its thread in
/// optimizer step `own_step`, still lived when it was made (looking back through
/// [`MAX_DECAY_LOOKBACK`] allocations).
fn adds_of_its_size_live(
    phases: &Phases,
    rec: &Recording,
    d: &DeviceTimeline,
    i: usize,
    own_step: Option<usize>,
) -> usize {
    let Some(a) = d.allocations.get(i) else {
        return 0;
    };
    let step = |alloc_event: u32| {
        rec.mem_events
            .get(alloc_event as usize)
            .map(|e| phases.site(e))
            .filter(|s| s.phase == Phase::Optimizer)
            .map(|s| (s.step, s.leaf_kind))
    };
    (d.allocations[i.saturating_sub(MAX_DECAY_LOOKBACK)..i])
        .iter()
        .rev()
        .filter(|b| b.bytes == a.bytes && b.thread == a.thread)
        .filter(|b| b.free_ns.get().is_none_or(|f| f > a.alloc_ns))
        .filter(|b| step(b.alloc_event) == Some((own_step, LeafKind::Add)))
        .count()
}

/// Whether optimizer-step allocation `e`, an out-of-place add ([`LeafKind::Add`]), follows
/// its weight's momentum buffer update at the same level of the step's code: after
/// `buf.mul_(momentum).add_(grad)`, or the buffer's first `torch.clone(grad).detach()`. So
/// SGD's Nesterov step `grad.add(buf, alpha=momentum)` does, which torch leaves unnamed; a
/// decay `grad.add(param, alpha=weight_decay)` opens the weight's update instead, after
/// the previous weight's `param.add_`.
pub(super) fn follows_a_momentum_update(phases: &Phases, e: &MemEvent, site: &Site) -> bool {
    let (Some((leaf, _)), Some(step), false) = (site.leaf, site.step, site.from_frames) else {
        return false;
    };
    let before = phases.ops_before_in_step(e.thread, leaf, step, 2);
    matches!(
        before.as_slice(),
        ["aten::add_", "aten::mul_"] | ["aten::detach", "aten::clone"]
    )
}

/// What torch names Adadelta's two results of a weight's size, told apart by the two ops
/// before each at its level: `std = square_avg.add(eps).sqrt_()`, after the square
/// average's `mul_` and `addcmul_`, an activation in every step ([`LeafKind::Flooded`]);
/// `delta = acc_delta.add(eps).sqrt_()`, after std's `add` and `sqrt_`, a parameter
/// ([`LeafKind::Add`]: a candidate to torch's data-flow fallback as
/// `acc_delta.addcmul_(delta, delta)`'s input, which its identity merges carry) — but an
/// activation in the trace's last step, and where a decayed gradient lives beside std
/// (weight decay: two adds of its size live when it is made). None for any other
/// allocation `i` (its event `e`, its site `site`).
pub(super) fn adadelta_result(
    phases: &Phases,
    (rec, d, i): (&Recording, &DeviceTimeline, usize),
    e: &MemEvent,
    site: &Site,
) -> Option<LeafKind> {
    let adadelta = optimizer_class(phases.step_name(site.step)) == "Adadelta";
    let (true, LeafKind::Add, Some((leaf, _)), Some(step)) =
        (adadelta, site.leaf_kind, site.leaf, site.step)
    else {
        return None;
    };
    match phases
        .ops_before_in_step(e.thread, leaf, step, 2)
        .as_slice()
    {
        ["aten::addcmul_", "aten::mul_"] => Some(LeafKind::Flooded),
        ["aten::sqrt_", "aten::add"]
            if step + 1 == phases.optimizer_steps.len()
                || adds_of_its_size_live(phases, rec, d, i, Some(step)) > 1 =>
        {
            Some(LeafKind::Flooded)
        }
        ["aten::sqrt_", "aten::add"] => Some(LeafKind::Add),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{DecayNaming, decay_naming};

    #[test]
    fn the_optimizer_class_is_read_from_the_step_span() {
        assert_eq!(
            decay_naming("Optimizer.step#Adam.step"),
            DecayNaming::ParameterThenUnnamed
        );
        assert_eq!(
            decay_naming("Optimizer.step#RMSprop.step"),
            DecayNaming::ParameterThenUnnamed
        );
        assert_eq!(
            decay_naming("Optimizer.step#RAdam.step"),
            DecayNaming::Unnamed
        );
        assert_eq!(
            decay_naming("Optimizer.step#Adamax.step"),
            DecayNaming::Unnamed
        );
        assert_eq!(
            decay_naming("Optimizer.step#SGD.step"),
            DecayNaming::Parameter
        );
        // AdamW decays the weight in place (no decayed gradient); a look-alike class is not
        // Adam.
        assert_eq!(
            decay_naming("Optimizer.step#AdamW.step"),
            DecayNaming::Parameter
        );
        assert_eq!(
            decay_naming("Optimizer.step#MyAdam.step"),
            DecayNaming::Parameter
        );
        assert_eq!(decay_naming("aten::add"), DecayNaming::Parameter);
    }
}
