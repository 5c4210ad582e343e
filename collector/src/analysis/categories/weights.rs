//! Weights made inside the capture that no module's `__init__` frame names: a tensor
//! `nn.Parameter` wraps (custom layers' own weights), and a model's weights copied to be
//! averaged (`AveragedModel`: EMA, SWA).

use super::Category;
use super::phase::{Phase, Phases};
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
