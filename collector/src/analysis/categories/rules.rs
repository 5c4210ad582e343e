//! The rules: an allocation's category from the sites of its allocation and free and its
//! lifetime across phases and optimizer steps — torch's rules (`_memory_profiler.py`)
//! restated for what a trace records, since a trace has no tensor identity.

/// Address maps, seeded per process as the timeline's are.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use super::Category;
use super::phase::{LeafKind, Phase, Phases, Site};
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
        if let (Some(addr), true) = (e.addr, e.kind.is_allocation())
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
        let Some(addr) = e.addr else { continue };
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

/// Categories of all the device's allocations.
pub(super) fn classify_all(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases,
    frees: &[Option<u32>],
) -> Vec<Category> {
    (0..d.allocations.len())
        .map(|i| classify_one(rec, d, phases, i, frees.get(i).copied().flatten()))
        .collect()
}

/// The category of allocation `i` of the device, ended by event `free` (if any).
pub(super) fn classify_one(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &Phases,
    i: usize,
    free: Option<u32>,
) -> Category {
    let last_step = phases.optimizer_steps.len().checked_sub(1);
    let Some((a, e)) = d
        .allocations
        .get(i)
        .and_then(|a| Some((a, rec.mem_events.get(a.alloc_event as usize)?)))
    else {
        return Category::Unknown;
    };
    if let Some(known) = phases.tags.category(d.device, a) {
        return known;
    }
    let free = free
        .and_then(|f| rec.mem_events.get(f as usize))
        .map(|f| (phases.site(f), f.time_ns));
    let alloc = Made {
        site: phases.site(e),
        time_ns: a.alloc_ns,
        thread: e.thread,
    };
    classify(phases, &alloc, free, last_step)
}

/// Where, when and on which thread an allocation was made.
pub(super) struct Made {
    /// Its site.
    pub site: Site,
    /// When.
    pub time_ns: i64,
    /// The allocating thread.
    pub thread: ThreadIdx,
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
    if alloc.leaf.is_some() && alloc.leaf == free_site.and_then(|f| f.leaf) {
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
    match alloc.phase {
        Phase::Optimizer => optimizer(phases, alloc, free, last_step),
        Phase::Backward => match free_site {
            Some(f) if f.phase == Phase::Backward => Category::AutogradDetail,
            _ => Category::Gradient,
        },
        Phase::Forward if is_input(phases, alloc, made.time_ns) => Category::Input,
        // Made by an operator: a forward result. Made outside any (a Python-level tensor
        // such as checkpoint's saved RNG state): no op's output, torch cannot name it.
        Phase::Forward if alloc.leaf.is_some() => Category::Activation,
        Phase::Forward => Category::Unknown,
        Phase::ZeroGrad | Phase::Outside => Category::Unknown,
    }
}

/// An allocation of an optimizer step: state if it outlives the step; else a step-local
/// result, which torch names by tensor identity only. Its identity tracking merges tensors
/// whose C++ objects reuse an address, so in every step but the trace's last it calls
/// single-tensor Adam's denominator `sqrt(v)` a parameter and `sqrt(v) / c` an activation
/// (seen on every Adam/AdamW run of tests/fixtures/categories); in the last step, and for
/// anything else, it has no name.
fn optimizer(
    phases: &Phases,
    alloc: &Site,
    free: Option<(Site, i64)>,
    last_step: Option<usize>,
) -> Category {
    let step_end = alloc
        .step
        .and_then(|s| phases.optimizer_steps.get(s))
        .map(|s| s.1);
    let outlives = match (free, step_end) {
        (None, _) => true,
        (Some((_, free_ns)), Some(end)) => free_ns > end,
        (Some((site, _)), None) => site.phase != Phase::Optimizer,
    };
    if outlives {
        return Category::OptimizerState;
    }
    if alloc.step.is_none() || alloc.step == last_step {
        return Category::Unknown;
    }
    match alloc.leaf_kind {
        LeafKind::Sqrt => Category::Parameter,
        LeafKind::Div => Category::Activation,
        _ => Category::Unknown,
    }
}

/// torch's inputs: tensors that feed the model but depend on no gradient — the batch.
/// Read from a trace as: made outside any module, before the iteration's first module
/// forward (the iteration starts after the previous optimizer step); without module frames,
/// made by an op that creates data.
fn is_input(phases: &Phases, alloc: &Site, alloc_ns: i64) -> bool {
    if alloc.in_module {
        return false;
    }
    if !phases.has_modules() {
        return alloc.leaf_kind == LeafKind::Factory;
    }
    let since = phases.previous_step_end(alloc_ns).unwrap_or(i64::MIN);
    !phases.module_began(since, alloc_ns)
}
