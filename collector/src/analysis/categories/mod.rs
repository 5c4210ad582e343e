//! Memory categories: what each allocation *was* — parameter, gradient, optimizer state,
//! activation, temporary, input, autograd detail — with the names and meaning of torch's
//! own memory profiler (`torch/profiler/_memory_profiler.py`), inferred from what a trace
//! or snapshot holds rather than from tensor identity, which neither records.
//!
//! Each allocation's category comes from where it was made and where it went away (the
//! phase — forward, backward, optimizer step, `zero_grad` — and the innermost op or frame of
//! both ends, [`phase`]), and its lifetime across those phases and steps ([`rules`]). The
//! composition at the peak sums exactly to the allocator's total there: what the events do
//! not account for was allocated before the capture began ([`Category::BeforeTrace`]).
//! Where the program itself tagged storages (`record --torch-memory`), those tags come
//! first ([`tags`]): the blocks holding parameters, gradients and optimizer state are known.
//! `docs/CATEGORIES.md` has the rules, their accuracy against torch and the known limits.

mod before;
mod evidence;
mod forwards;
mod frames;
mod leaf;
mod phase;
mod precapture;
mod python_frames;
mod roles;
mod rules;
mod series;
mod step_results;
mod tags;
mod unseen;
mod weights;

pub use before::{BeforeTrace, LikelyBefore};
pub use evidence::{Classified, Evidence, EvidenceBytes};
pub use phase::Phase;
pub(crate) use roles::{Roles, names_a_phase};
pub use series::{CategorySeries, MAX_SERIES_POINTS, categories_over_time};
pub use unseen::UnseenWeights;

use crate::model::{DeviceIdx, Recording};
use crate::timeline::{DeviceTimeline, Timeline, TotalsSource};

/// What an allocation held, in torch's memory profiler's terms plus two of vramscope's.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Category {
    /// Model weights (on CPU traces they predate the capture: see `BeforeTrace`).
    Parameter,
    /// Optimizer state (Adam's moments, SGD's momentum), alive across steps.
    OptimizerState,
    /// The batch fed to the model.
    Input,
    /// Made and released within one op.
    Temporary,
    /// Forward results, kept for backward or freed in the forward.
    Activation,
    /// Parameter gradients, alive from backward to the next `zero_grad` / optimizer step.
    Gradient,
    /// Backward results that are not gradients of parameters (gradients of activations).
    AutogradDetail,
    /// Memory torch cannot name either (scratch buffers of kernels, allocations outside
    /// any phase).
    Unknown,
    /// Allocated before the capture began: counted by the allocator's totals, named by no
    /// event of the trace.
    BeforeTrace,
}

impl Category {
    /// Every category, in the order reports list them.
    pub const ALL: [Category; 9] = [
        Category::Parameter,
        Category::OptimizerState,
        Category::Input,
        Category::Temporary,
        Category::Activation,
        Category::Gradient,
        Category::AutogradDetail,
        Category::Unknown,
        Category::BeforeTrace,
    ];

    /// The stable name (torch's, lower case): `optimizer_state`, `before_trace`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Parameter => "parameter",
            Category::OptimizerState => "optimizer_state",
            Category::Input => "input",
            Category::Temporary => "temporary",
            Category::Activation => "activation",
            Category::Gradient => "gradient",
            Category::AutogradDetail => "autograd_detail",
            Category::Unknown => "unknown",
            Category::BeforeTrace => "before_trace",
        }
    }

    /// Position in [`Category::ALL`] (and in per-category arrays).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Bytes per category, indexed by [`Category::index`].
pub type CategoryBytes = [i64; Category::ALL.len()];

/// What filled a device's memory at its allocated peak.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Composition {
    /// The device.
    pub device: DeviceIdx,
    /// When the peak happened, ns on the recording's clock.
    pub at_ns: i64,
    /// The allocator's allocated total at the peak: the sum of `bytes`.
    pub total_bytes: i64,
    /// Bytes per category; they sum to `total_bytes` exactly.
    pub bytes: CategoryBytes,
    /// The same bytes split by what decided them (each row sums to `bytes[category]`).
    pub evidence: EvidenceBytes,
    /// Device memory in use beyond the allocator's reserve at the peak, where the recording
    /// has NVML samples and reserved totals.
    pub outside_pytorch: Option<OutsidePytorch>,
    /// Weights a CPU trace's totals leave out (made before profiling began).
    pub unseen_weights: Option<UnseenWeights>,
    /// What the `before_trace` bytes likely are, where the facts say (a CUDA trace of a
    /// model loaded before profiling). Left out of a pack's stored summary where `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_trace: Option<BeforeTrace>,
}

/// Device memory in use beyond the allocator's reserve: NVML's used minus reserved (the
/// CUDA context, cuBLAS/cuDNN workspaces, NCCL buffers, other libraries, other processes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutsidePytorch {
    /// All of it: NVML's used bytes of the device minus the allocator's reserved bytes.
    pub bytes: i64,
    /// The recorded process tree's share: NVML's bytes of those processes minus the
    /// reserve (their CUDA contexts and libraries), where NVML reports per-process memory.
    pub own_process_bytes: Option<i64>,
    /// The rest: other processes and the driver (`bytes - own_process_bytes`).
    pub other_processes_bytes: Option<i64>,
}

impl Composition {
    /// The bytes of `category` decided by sizes and lifetimes rather than read from the
    /// capture ([`Evidence::is_inferred`]): reports mark them as inferred.
    pub fn inferred_bytes(&self, category: Category) -> i64 {
        let row = self.evidence.get(category.index());
        Evidence::ALL
            .into_iter()
            .filter(|e| e.is_inferred())
            .filter_map(|e| row.and_then(|r| r.get(e as usize)))
            .sum()
    }

    /// The categories with bytes, in [`Category::ALL`] order.
    pub fn entries(&self) -> impl Iterator<Item = (Category, i64)> + '_ {
        Category::ALL
            .into_iter()
            .map(|c| (c, self.bytes[c.index()]))
            .filter(|&(_, b)| b != 0)
    }
}

/// The category of each of the device's allocations, parallel to `d.allocations`.
pub fn allocation_categories(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> Vec<Category> {
    classify_allocations(rec, timeline, d)
        .into_iter()
        .map(|c| c.category)
        .collect()
}

/// Every allocation of the device classified (category, phase, evidence), parallel to
/// `d.allocations`: the one classifier every consumer reads.
pub fn classify_allocations(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> Vec<Classified> {
    classify_with_frees(rec, timeline, d).0
}

/// The classification of each memory event's allocation on the device, indexed by
/// [`Recording::mem_events`]: the allocation an alloc makes or a free ends. `None` for
/// the other devices' events, segment and OOM events, and frees of blocks from before
/// the capture. Costs 4 bytes per event of the recording (Parquet's `category` column).
pub fn classify_events(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> Vec<Option<Classified>> {
    let (classes, frees) = classify_with_frees(rec, timeline, d);
    let mut by_event = vec![None; rec.mem_events.len()];
    for ((a, class), free) in d.allocations.iter().zip(classes).zip(frees) {
        for event in std::iter::once(a.alloc_event).chain(free) {
            if let Some(slot) = by_event.get_mut(event as usize) {
                *slot = Some(class);
            }
        }
    }
    by_event
}

/// Every allocation classified, with the free event of each (both parallel to
/// `d.allocations`).
fn classify_with_frees(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> (Vec<Classified>, Vec<Option<u32>>) {
    let frees = rules::free_events(rec, d);
    let phases = phase::Phases::build(rec, timeline);
    let pre = precapture::find(rec, d, &phases, Some(&frees));
    (rules::classify_all(rec, d, &phases, &pre, &frees), frees)
}

/// The categories of some of the device's allocations (`indices` into `d.allocations`),
/// in that order: `live --group-by category` asks for the few live at an instant. The
/// frees are found by one walk of the device's events, as for [`allocation_categories`].
pub fn categories_of(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    indices: &[usize],
) -> Vec<Category> {
    let frees = rules::free_events(rec, d);
    let phases = phase::Phases::build(rec, timeline);
    let pre = precapture::find(rec, d, &phases, Some(&frees));
    indices
        .iter()
        .map(|&i| {
            let free = frees.get(i).copied().flatten();
            rules::classify_one(rec, d, &phases, &pre, i, free).category
        })
        .collect()
}

/// The composition of the device's memory at its allocated peak; `None` where the source
/// sees no allocations.
pub fn composition_at_peak(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> Option<Composition> {
    let peak_pos = d.peak_allocated?;
    let peak = d.points.get(peak_pos)?;
    // Only the allocations live at the peak are classified: a few hundred of a run's
    // hundreds of thousands, so `summary` pays for the categories of what it shows.
    let phases = phase::Phases::build(rec, timeline);
    let pre = precapture::find(rec, d, &phases, None);
    let (mut evidence, step_results_bytes) = live_by_evidence(rec, d, &phases, &pre, peak_pos);
    let residual_to = match d.totals {
        TotalsSource::Trace => Category::BeforeTrace,
        TotalsSource::Reconstructed => Category::Unknown,
    };
    let mut bytes: CategoryBytes = evidence.map(|row| row.iter().sum());
    let before = bytes;
    balance(&mut bytes, peak.allocated_bytes, residual_to);
    settle_evidence(&mut evidence, &before, &bytes);
    Some(Composition {
        device: d.device,
        at_ns: peak.time_ns,
        total_bytes: peak.allocated_bytes,
        bytes,
        evidence,
        outside_pytorch: outside_pytorch(rec, d.device, peak.reserved_bytes.get(), peak.time_ns),
        unseen_weights: unseen::unseen_weights(rec, d, &phases, &bytes, step_results_bytes),
        before_trace: before::reading(rec, d, &phases, &bytes),
    })
}

/// Bytes per category and evidence of the allocations live right after curve point `pos`,
/// and of those the `parameter` bytes an optimizer step made (torch's name for a step's
/// `sqrt(v)`, no weight).
fn live_by_evidence(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &phase::Phases,
    pre: &precapture::PreCapture,
    pos: usize,
) -> (EvidenceBytes, i64) {
    let mut bytes: EvidenceBytes = [[0; Evidence::ALL.len()]; Category::ALL.len()];
    let mut step_results_bytes = 0;
    for (i, free) in rules::live_at_position(rec, d, pos) {
        if let Some(alloc) = d.allocations.get(i) {
            let c = rules::classify_one(rec, d, phases, pre, i, free);
            if let Some(row) = bytes.get_mut(c.category.index()) {
                row[c.evidence as usize] += alloc.bytes;
            }
            if c.category == Category::Parameter && c.phase == Phase::Optimizer {
                step_results_bytes += alloc.bytes;
            }
        }
    }
    (bytes, step_results_bytes)
}

/// After [`balance`] moved bytes between categories (`before` → `after`), the evidence
/// rows follow: what a category gained is residual, what it lost is taken from its least
/// certain evidence first.
fn settle_evidence(evidence: &mut EvidenceBytes, before: &CategoryBytes, after: &CategoryBytes) {
    for (c, row) in evidence.iter_mut().enumerate() {
        let change = after.get(c).copied().unwrap_or(0) - before.get(c).copied().unwrap_or(0);
        if change > 0 {
            row[Evidence::Residual as usize] += change;
            continue;
        }
        let mut lose = -change;
        for cell in row.iter_mut().rev() {
            let take = lose.min((*cell).max(0));
            *cell -= take;
            lose -= take;
        }
    }
}

/// The times [`composition_at_peak`] asks which spans enclose (the events that begin and
/// end the allocations live at the peak, and begin the few before each whose sites the
/// step rules read), for a caller that holds spans compressed and fetches only those.
pub fn times_asked_at_peak(rec: &Recording, d: &DeviceTimeline) -> Vec<i64> {
    let Some(peak_pos) = d.peak_allocated else {
        return Vec::new();
    };
    let time = |e: u32| rec.mem_events.get(e as usize).map(|e| e.time_ns);
    let mut times = Vec::new();
    for (i, free) in rules::live_at_position(rec, d, peak_pos) {
        times.extend(step_results::sites_read(d, i).filter_map(time));
        times.extend(free.and_then(time));
    }
    times
}

/// The windows (thread, after, before) in which [`composition_at_peak`] asks which ops
/// started, given a timeline whose op index holds at least the spans enclosing
/// [`times_asked_at_peak`]: the caller then fetches the spans starting in them too.
pub fn windows_asked_at_peak(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> Vec<(crate::model::ThreadIdx, i64, i64)> {
    let Some(peak_pos) = d.peak_allocated else {
        return Vec::new();
    };
    let phases = phase::Phases::build_noting(rec, timeline);
    let pre = precapture::find(rec, d, &phases, None);
    live_by_evidence(rec, d, &phases, &pre, peak_pos);
    phases.asked()
}

/// Make `bytes` sum to `total`: a shortfall is what the events do not name (`residual_to`);
/// an excess (a trace whose totals sit below its own live events, as when frees of blocks
/// allocated before the capture took the total below zero) is taken from the least
/// specific categories first, so the composition never claims more than the allocator.
fn balance(bytes: &mut CategoryBytes, total: i64, residual_to: Category) {
    let sum: i64 = bytes.iter().sum();
    if sum <= total {
        bytes[residual_to.index()] += total - sum;
        return;
    }
    let mut excess = sum - total;
    for c in Category::ALL.into_iter().rev() {
        let take = excess.min(bytes[c.index()].max(0));
        bytes[c.index()] -= take;
        excess -= take;
    }
}

/// NVML's used bytes minus the allocator's reserved bytes at `time_ns` (the last sample at
/// or before it), where both are known; split into the recorded processes' own and the
/// others' where the sample has the processes' bytes. Each part is at least 0 and at most
/// the whole (NVML's per-process figure and the reserve are read at slightly different
/// moments), and the two parts sum to the whole.
fn outside_pytorch(
    rec: &Recording,
    device: DeviceIdx,
    reserved_bytes: Option<i64>,
    time_ns: i64,
) -> Option<OutsidePytorch> {
    let reserved = reserved_bytes?;
    let sample = rec
        .gpu_samples
        .iter()
        .filter(|s| s.device == device && s.time_ns <= time_ns)
        .max_by_key(|s| s.time_ns)?;
    let as_i64 = |b: u64| b.min(i64::MAX as u64) as i64;
    let bytes = (as_i64(sample.used_bytes) - reserved).max(0);
    let own = sample
        .process_bytes
        .map(|p| (as_i64(p) - reserved).clamp(0, bytes));
    Some(OutsidePytorch {
        bytes,
        own_process_bytes: own,
        other_processes_bytes: own.map(|o| bytes - o),
    })
}

#[cfg(test)]
mod tests;
