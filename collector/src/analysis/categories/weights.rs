//! Weights made inside the capture that no module's `__init__` frame names: a tensor
//! `nn.Parameter` wraps (custom layers' own weights), a model's weights copied to be
//! averaged (`AveragedModel`: EMA, SWA), and a checkpoint's tensors a model adopts
//! (`load_state_dict(assign=True)`) — told from the optimizer state a resumed optimizer
//! adopts.

use super::Category;
use super::phase::{Phase, Phases, Site};
use super::rules::Made;
use crate::timeline::{Allocation, DeviceTimeline};

/// How many later allocations [`wrapped_as_parameter`] looks through for one still live
/// when `nn.Parameter` wraps: each a comparison, asked once per allocation.
const MAX_WRAP_LOOKAHEAD: usize = 16;

/// Whether `nn.Parameter` wrapped allocation `i` of the device: its constructor began on
/// the allocating thread while the block was live, and no block made after it on that
/// thread was live then (the wrapped tensor is the latest result: `Parameter(randn(…) *
/// s)` wraps the product, the `randn` already freed).
pub(super) fn wrapped_as_parameter(phases: &Phases, d: &DeviceTimeline, i: usize) -> bool {
    let Some(a) = d.allocations.get(i) else {
        return false;
    };
    let Some(wrap_ns) = phases.parameter_wrap_after(a.thread, a.alloc_ns) else {
        return false;
    };
    let live_at_wrap = |b: &Allocation| b.free_ns.get().is_none_or(|f| f > wrap_ns);
    if !live_at_wrap(a) {
        return false;
    }
    // The blocks made after it and before the wrap: none may be live on its thread then.
    for b in d.allocations.iter().skip(i + 1).take(MAX_WRAP_LOOKAHEAD) {
        if b.alloc_ns >= wrap_ns {
            return true;
        }
        if b.thread == a.thread && live_at_wrap(b) {
            return false;
        }
    }
    // Looked through them all (none left), or gave up at the cap.
    d.allocations.len() <= i + 1 + MAX_WRAP_LOOKAHEAD
}

/// The category of a weight copied by `AveragedModel` (EMA, SWA), or None for an allocation
/// not made so: torch names a module's weights once the module runs, so a copied weight is
/// a parameter where the averaged model ran a forward (an evaluation of the average), else
/// unnamed; so is its step counter, which no `nn.Parameter` wraps.
pub(super) fn averaged_copy(phases: &Phases, made: &Made) -> Option<Category> {
    let site = &made.site;
    let named = phases.averaged_model_ran && made.wrapped_as_parameter;
    (site.copies_for_averaging && site.phase == Phase::Forward).then_some(if named {
        Category::Parameter
    } else {
        Category::Unknown
    })
}

/// The category of a tensor read from a checkpoint (`torch.load`) and kept — across an
/// optimizer step, or past a module's forward — or None for another allocation (`free`:
/// its free's site and time). Kept so, it was adopted as read: by `optimizer.load_state_dict`
/// (a resumed optimizer keeps its loaded state) where the trace loads an optimizer's state
/// and a step follows, else by `model.load_state_dict(assign=True)`, which makes the loaded
/// tensors the model's weights (pretrained weights loaded for fine-tuning or inference:
/// torch names them once the model runs). A model loaded without `assign` copies its
/// checkpoint into its own weights, and the loaded copies go with the checkpoint, before
/// any forward. (A trace that loads an optimizer's state and assigns a model's weights
/// from one checkpoint reads both as state.)
pub(super) fn adopted_from_a_checkpoint(
    phases: &Phases,
    made: &Made,
    free: Option<(Site, i64)>,
) -> Option<Category> {
    let site = &made.site;
    if !site.loads_checkpoint || site.phase != Phase::Forward {
        return None;
    }
    let freed_ns = free.map_or(i64::MAX, |f| f.1);
    let across_a_step = phases.step_began_between(made.time_ns, freed_ns);
    if phases.optimizer_state_loaded || site.from_frames {
        return across_a_step.then_some(Category::OptimizerState);
    }
    (across_a_step || phases.module_began(made.time_ns, freed_ns)).then_some(Category::Parameter)
}
