//! The rules: an allocation's category from the sites of its allocation and free and its
//! lifetime across phases and optimizer steps — torch's rules (`_memory_profiler.py`)
//! restated for what a trace records, since a trace has no tensor identity.

/// Address maps, seeded per process as the timeline's are.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use super::leaf::LeafKind;
use super::phase::{Phases, Site};
use super::precapture::PreCapture;
use super::step_results::{
    DecayNaming, adadelta_result, follows_a_momentum_update, made_while_a_decayed_gradient_lives,
    magnitude_of_a_temporary,
};
use super::weights::{adopted_from_a_checkpoint, averaged_copy, wrapped_as_parameter};
use super::{Category, Classified, Evidence, Phase};
use crate::model::{MemEventKind, Recording, ThreadIdx};
use crate::timeline::DeviceTimeline;

/// The free event of each allocation (parallel to `d.allocations`), pairing by address in
/// curve order exactly as the timeline does.
pub(super) fn free_events(rec: &Recording, d: &DeviceTimeline) -> Vec<Option<u32>> {
    let mut frees = vec![None; d.allocations.len()];
    walk(rec, d, d.points.len(), |i, e| {
        if let Some(f) = frees.get_mut(i) {
            *f = Some(e);
        }
    });
    frees
}

/// The allocations live right after curve point `pos` (indices into `d.allocations`, in
/// order), each with the event that later ends it, if one does.
pub(super) fn live_at_position(
    rec: &Recording,
    d: &DeviceTimeline,
    pos: usize,
) -> Vec<(usize, Option<u32>)> {
    let live = walk(rec, d, pos + 1, |_, _| {});
    let mut watched: Vec<(usize, Option<u32>)> = live.values().map(|&i| (i, None)).collect();
    watched.sort_unstable();
    // The rest of the curve, for the ends of those lifetimes only.
    let mut at: HashMap<u64, usize> = HashMap::default();
    for (addr, &i) in &live {
        if let Ok(slot) = watched.binary_search_by_key(&i, |w| w.0) {
            at.insert(*addr, slot);
        }
    }
    for p in d.points.iter().skip(pos + 1) {
        if at.is_empty() {
            break;
        }
        let Some(e) = rec.mem_events.get(p.event as usize) else {
            continue;
        };
        if let (Some(addr), true) = (e.addr.get(), e.kind.is_allocation())
            && let Some(slot) = at.remove(&addr)
            && let Some(w) = watched.get_mut(slot)
        {
            w.1 = Some(p.event);
        }
    }
    watched
}

/// Walk the first `points` curve points pairing allocations by address (the n-th
/// addressed allocation event is `d.allocations[n]`); `freed(allocation, event)` hears each
/// end of a lifetime. Returns the live map (address → allocation).
fn walk(
    rec: &Recording,
    d: &DeviceTimeline,
    points: usize,
    mut freed: impl FnMut(usize, u32),
) -> HashMap<u64, usize> {
    let mut live: HashMap<u64, usize> = HashMap::default();
    let mut next = 0usize;
    for p in d.points.iter().take(points) {
        let Some(e) = rec.mem_events.get(p.event as usize) else {
            continue;
        };
        let Some(addr) = e.addr.get() else { continue };
        match e.kind {
            MemEventKind::Alloc => {
                if let Some(prev) = live.insert(addr, next) {
                    freed(prev, p.event);
                }
                next += 1;
            }
            MemEventKind::Free => {
                if let Some(i) = live.remove(&addr) {
                    freed(i, p.event);
                }
            }
            _ => {}
        }
    }
    live
}

/// The classification of all the device's allocations.
pub(super) fn classify_all(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases,
    pre: &PreCapture,
    frees: &[Option<u32>],
) -> Vec<Classified> {
    (0..d.allocations.len())
        .map(|i| classify_one(rec, d, phases, pre, i, frees.get(i).copied().flatten()))
        .collect()
}

/// The classification of allocation `i` of the device, ended by event `free` (if any):
/// the program's tags first, then what the capture saw of a block it found already there
/// ([`PreCapture`]), then the rules on the sites of both ends.
pub(super) fn classify_one(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases,
    pre: &PreCapture,
    i: usize,
    free: Option<u32>,
) -> Classified {
    let last_step = phases.optimizer_steps.len().checked_sub(1);
    let Some((a, e)) = d
        .allocations
        .get(i)
        .and_then(|a| Some((a, rec.mem_events.get(a.alloc_event as usize)?)))
    else {
        return Classified::unknown();
    };
    let mut site = phases.site(e);
    if site.leaf_kind == LeafKind::Magnitude
        && site.phase == Phase::Optimizer
        && magnitude_of_a_temporary(phases, rec, d, i)
    {
        site.leaf_kind = LeafKind::Other;
    }
    // Adadelta's two results are named by the ops before them. Else, made while a decayed
    // gradient lives: what Adam's and RMSprop's update then makes, and a second add, which
    // is no decay (SGD's Nesterov step), are left unnamed; so is an add after the momentum
    // buffer's update, the Nesterov step without a decay before it.
    let adadelta = (site.phase == Phase::Optimizer)
        .then(|| adadelta_result(phases, (rec, d, i), e, &site))
        .flatten();
    if let Some(kind) = adadelta {
        site.leaf_kind = kind;
    } else if site.phase == Phase::Optimizer
        && (site.leaf_kind == LeafKind::Add
            || phases.decay_naming(site.step) == DecayNaming::ParameterThenUnnamed)
        && (made_while_a_decayed_gradient_lives(phases, rec, d, i, site.step)
            || (site.leaf_kind == LeafKind::Add && follows_a_momentum_update(phases, e, &site)))
    {
        site.leaf_kind = LeafKind::AfterDecay;
    }
    let decided = |category, evidence| Classified {
        category,
        phase: site.phase,
        evidence,
    };
    if let Some(known) = phases.tags.category(d.device, a) {
        return decided(known, Evidence::Metadata);
    }
    if let Some((category, evidence)) = pre.get(i) {
        return decided(category, evidence);
    }
    let free = free
        .and_then(|f| rec.mem_events.get(f as usize))
        .map(|f| (phases.site(f), f.time_ns));
    let alloc = Made {
        site,
        time_ns: a.alloc_ns,
        thread: e.thread,
        // Asked only where [`classify`] reads it (a magnitude's kind too: in a step only).
        wrapped_as_parameter: site.phase == Phase::Forward
            && !site.makes_weights
            && wrapped_as_parameter(phases, d, i),
    };
    let evidence = if site.from_frames {
        Evidence::Frames
    } else {
        Evidence::Scopes
    };
    decided(classify(phases, &alloc, free, last_step), evidence)
}

/// Where, when and on which thread an allocation was made.
pub(super) struct Made {
    /// Its site.
    pub site: Site,
    /// When.
    pub time_ns: i64,
    /// The allocating thread.
    pub thread: ThreadIdx,
    /// Whether `nn.Parameter` wrapped it ([`wrapped_as_parameter`]).
    pub wrapped_as_parameter: bool,
}

/// One allocation's category from where it was made, its free (site and time) and the
/// index of the recording's last optimizer step.
pub(super) fn classify(
    phases: &Phases,
    made: &Made,
    free: Option<(Site, i64)>,
    last_step: Option<usize>,
) -> Category {
    let alloc = &made.site;
    let free_site = free.map(|f| f.0);
    // Made and released inside one operator with no op between: a kernel's scratch buffer
    // (oneDNN convolutions, packed GEMMs), which has no tensor identity: torch cannot name it.
    if alloc.innermost_op.is_some() && alloc.innermost_op == free_site.and_then(|f| f.innermost_op)
    {
        return Category::Unknown;
    }
    // Made and released within one leaf op: torch's intermediates — if some op could
    // have taken it in (torch knows a tensor only from the ops it is handed to).
    // (From frames: only a free inside an op below that frame; one made when Python dropped
    // the last reference at the same line was an op's result handed to the next op.)
    let freed_in_leaf =
        free_site.is_some_and(|f| f.leaf == alloc.leaf && (f.in_op || !f.from_frames));
    if alloc.leaf.is_some() && freed_in_leaf {
        let handed_on = match (alloc.innermost_op, free) {
            (Some(_), Some((_, free_ns))) => {
                phases.consumer_between(made.thread, made.time_ns, free_ns)
            }
            _ => true,
        };
        return if handed_on {
            Category::Temporary
        } else {
            Category::Unknown
        };
    }
    if let Some(category) = averaged_copy(phases, made) {
        return category;
    }
    // Made while a module made its weights and kept past its first forward: a weight (a
    // model built inside the capture). A buffer or scratch freed sooner is not.
    if (alloc.makes_weights || made.wrapped_as_parameter)
        && alloc.phase == Phase::Forward
        && !freed_before_a_step(phases, made, free)
    {
        return Category::Parameter;
    }
    if let Some(category) = adopted_from_a_checkpoint(phases, made, free) {
        return category;
    }
    match alloc.phase {
        Phase::Optimizer => optimizer(phases, alloc, made.time_ns, free, last_step),
        Phase::Backward => match free_site {
            Some(f) if f.phase == Phase::Backward => Category::AutogradDetail,
            _ => Category::Gradient,
        },
        // Gradient clipping's norms, computed from gradients alone, and DDP's gradient
        // buckets, handed to collectives on their own threads: torch names none.
        Phase::Forward if alloc.clips_gradients || alloc.makes_ddp_buckets => Category::Unknown,
        Phase::Forward if is_input(phases, alloc, made.time_ns) => Category::Input,
        // Made before the first optimizer step and never freed: no forward result lives
        // that long; a weight made inside the capture (with no stack to say so).
        Phase::Forward if kept_from_before_training(phases, made, free) => Category::Parameter,
        // Made by an operator: a forward result. Made outside any (a Python-level tensor
        // such as checkpoint's saved RNG state): no op's output, torch cannot name it.
        Phase::Forward if alloc.leaf.is_some() => Category::Activation,
        Phase::Forward => Category::Unknown,
        // `zero_grad` makes memory only as gradients (`set_to_none=False` materialising a
        // zeroed `.grad`): one it does not free again is a gradient.
        Phase::ZeroGrad if free_site.is_none_or(|f| f.phase != Phase::ZeroGrad) => {
            Category::Gradient
        }
        Phase::ZeroGrad | Phase::Outside => Category::Unknown,
    }
}

/// Whether an allocation was freed before any optimizer step or module forward began
/// after it was made (a weight lives across them; scratch of `__init__` does not).
fn freed_before_a_step(phases: &Phases, made: &Made, free: Option<(Site, i64)>) -> bool {
    let Some((_, free_ns)) = free else {
        return false;
    };
    !(phases.step_began_between(made.time_ns, free_ns)
        || phases.module_began(made.time_ns, free_ns))
}

/// Whether an allocation of a trace made before the run's first optimizer step is never
/// freed. (A stack says more: a weight made in the capture has its module's `__init__` in
/// it, and what a snapshot's first forward keeps to the end is that forward's.)
/// A trace with module frames (`with_stack=True`) shows a weight being made
/// ([`Site::makes_weights`]); there, what outlives it is a forward result or the loss's.
fn kept_from_before_training(phases: &Phases, made: &Made, free: Option<(Site, i64)>) -> bool {
    !made.site.from_frames
        && !phases.has_modules()
        && free.is_none()
        && phases
            .first_step_ns()
            .is_some_and(|first| made.time_ns < first)
}

/// An allocation of an optimizer step: state if it outlives the step; else a step-local
/// result, which torch names by tensor identity only. Its identity tracking merges tensors
/// whose C++ objects reuse an address, so in every step but the trace's last it calls a
/// magnitude of a state tensor or gradient a parameter (Adam's and AdamW's `sqrt(v)`,
/// RMSprop's and Adagrad's roots, Adamax's `|g|`) and a single-tensor optimizer's other
/// step-local results activations (Adam's `sqrt(v) / c`, RAdam's and NAdam's products and
/// quotients, NAdam's `sqrt(v / c)`: a magnitude of a temporary,
/// [`magnitude_of_a_temporary`]); a foreach optimizer's list results, and anything in the
/// last step, have no name. A gradient decayed out of place (`grad.add(param, alpha=wd)`,
/// L2 weight decay) and what is made while it lives are named by the optimizer's class
/// ([`super::step_results`]).
fn optimizer(
    phases: &Phases,
    alloc: &Site,
    alloc_ns: i64,
    free: Option<(Site, i64)>,
    last_step: Option<usize>,
) -> Category {
    // The step that made it: its scope, else (a site read from frames) the step span
    // holding it in time.
    let step = alloc.step.or_else(|| phases.step_holding(alloc_ns));
    let step_end = step
        .and_then(|s| phases.optimizer_steps.get(s))
        .map(|s| s.1);
    let outlives = match (free, step_end) {
        (None, _) => true,
        (Some((_, free_ns)), Some(end)) => free_ns > end,
        // Made in a step no span records (before a snapshot's history began) and freed
        // in a later one: it lived across steps.
        (Some((_, free_ns)), None) if !phases.optimizer_steps.is_empty() => {
            phases.step_began_between(alloc_ns, free_ns)
        }
        (Some((site, _)), None) => site.phase != Phase::Optimizer,
    };
    if outlives {
        return Category::OptimizerState;
    }
    if alloc.leaf_kind == LeafKind::Flooded {
        return Category::Activation;
    }
    if alloc.step.is_none() || alloc.step == last_step {
        return Category::Unknown;
    }
    match alloc.leaf_kind {
        LeafKind::Add if phases.decay_naming(step) == DecayNaming::Unnamed => Category::Unknown,
        LeafKind::Magnitude | LeafKind::Add => Category::Parameter,
        LeafKind::Foreach | LeafKind::AfterDecay => Category::Unknown,
        _ => Category::Activation,
    }
}

/// torch's inputs: tensors that feed the model but depend on no gradient — the batch.
/// Read from a trace as: made outside any module by an op that creates data (a batch, or
/// targets made after the forward), or with module frames, by any op before the
/// iteration's first training forward (the iteration starts after the previous optimizer
/// step; an evaluation's forward, which no backward follows, does not start one).
fn is_input(phases: &Phases, alloc: &Site, alloc_ns: i64) -> bool {
    if alloc.in_module {
        return false;
    }
    if alloc.leaf_kind == LeafKind::Factory || !phases.has_modules() {
        return alloc.leaf_kind == LeafKind::Factory;
    }
    let since = phases.previous_step_end(alloc_ns).unwrap_or(i64::MIN);
    !phases.training_forward_began(since, alloc_ns)
}
