//! Blocks the capture saw only as already there: an allocator snapshot's blocks alive
//! before its history began that carry no frames (the weights of a model built before
//! `_record_memory_history`, a batch made earlier). No event says what they are; what the
//! run did with memory of the same sizes does:
//!
//! - **matching**: backward makes one gradient per trainable weight, with the weight's size,
//!   so a block made before the capture and alive throughout that has a gradient's size is
//!   that weight (one block per gradient); where the run steps an optimizer whose state was
//!   not made in the capture (a snapshot taken after the first step), up to two more blocks
//!   of each gradient's size are its state (Adam's two moments, SGD's one momentum);
//! - **inference**: a run with no gradients (inference, forward only) that runs a model
//!   holds its weights from before the capture to the end: such blocks are taken as the
//!   weights, and said to be inferred;
//! - anything else is `before_trace`, the same word a trace uses for what it did not see.

/// Address maps, seeded per process as the timeline's are.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use std::collections::BTreeMap;

use super::{Category, Evidence};
use crate::model::Recording;
use crate::timeline::{Allocation, DeviceTimeline};

/// How much larger than the gradient of the same tensor a weight's block may be: the
/// caching allocator keeps a block of the large pool unsplit when less than 1 MiB would
/// remain, so two requests of one size can land in blocks that differ by up to that.
/// (A wider tolerance would pair tensors of other shapes; a narrower one miss weights.)
const SAME_TENSOR_SLACK_BYTES: i64 = (1 << 20) + 512;

/// How many optimizer-state tensors a weight has at most (Adam's `exp_avg`, `exp_avg_sq`).
const MAX_STATE_PER_WEIGHT: u32 = 2;

/// What was decided of the device's pre-capture blocks (indices into `d.allocations`).
#[derive(Default)]
pub(super) struct PreCapture {
    decided: HashMap<usize, (Category, Evidence)>,
}

impl PreCapture {
    /// The category of allocation `i` where it is a pre-capture block: every such block
    /// has one (`before_trace` where nothing identified it).
    pub fn get(&self, i: usize) -> Option<(Category, Evidence)> {
        self.decided.get(&i).copied()
    }
}

/// What the run says of the blocks the capture found already there (this module's rules): only
/// recordings with stacks have such blocks, so a trace pays nothing. `frees` where the
/// caller has them (else one walk finds them).
pub(super) fn find(
    rec: &Recording,
    d: &DeviceTimeline,
    phases: &super::phase::Phases,
    frees: Option<&[Option<u32>]>,
) -> PreCapture {
    let candidates = candidates(rec, d);
    if candidates.is_empty() {
        return PreCapture::default();
    }
    let walked;
    let frees = match frees {
        Some(f) => f,
        None => {
            walked = super::rules::free_events(rec, d);
            &walked
        }
    };
    let none = PreCapture::default();
    let first_step_ns = phases.first_step_ns();
    decide(d, &candidates, first_step_ns, runs_a_model(rec), |i| {
        let free = frees.get(i).copied().flatten();
        super::rules::classify_one(rec, d, phases, &none, i, free).category
    })
}

/// Whether some stack of the recording passes through an `nn.Module`'s call: the program
/// ran a model (a snapshot of anything else has no weights to infer).
fn runs_a_model(rec: &Recording) -> bool {
    (rec.stacks.iter().flatten())
        .any(|f| super::frames::in_path(rec.strings.get(f.file), super::frames::MODULES))
}

/// The device's blocks the capture found already there and knows nothing of (indices into
/// `d.allocations`, ascending): they carry no frames in a recording whose blocks carry them
/// (an allocator snapshot, a recording with `--torch-memory`), and are placed at the
/// device's first instant, where the snapshot reader puts the blocks alive before its
/// history. Empty for every trace (no stacks), at the cost of one test.
pub(super) fn candidates(rec: &Recording, d: &DeviceTimeline) -> Vec<usize> {
    let Some(first) = d.points.first().filter(|_| !rec.stacks.is_empty()) else {
        return Vec::new();
    };
    let no_frames = |a: &Allocation| {
        rec.mem_events
            .get(a.alloc_event as usize)
            .is_some_and(|e| rec.stack(e.stack).is_empty())
    };
    (d.allocations.iter().enumerate())
        .filter(|(_, a)| a.alloc_ns <= first.time_ns && no_frames(a))
        .map(|(i, _)| i)
        .collect()
}

/// What the run says about the device's pre-capture blocks ([`candidates`], ascending),
/// given every other allocation's category (`category_of(i)`, asked of allocations that
/// are not candidates) and when the first optimizer step began.
pub(super) fn decide(
    d: &DeviceTimeline,
    candidates: &[usize],
    first_step_ns: Option<i64>,
    runs_a_model: bool,
    mut category_of: impl FnMut(usize) -> Category,
) -> PreCapture {
    let mut out = PreCapture {
        decided: (candidates.iter())
            .map(|&i| (i, (Category::BeforeTrace, Evidence::Residual)))
            .collect(),
    };
    let mut gradients: BTreeMap<i64, u32> = BTreeMap::new();
    let mut state_made = false;
    let before_step = first_step_ns.unwrap_or(i64::MAX);
    for (i, a) in d.allocations.iter().enumerate() {
        if candidates.binary_search(&i).is_ok() {
            continue;
        }
        match category_of(i) {
            Category::Gradient if a.alloc_ns < before_step => {
                *gradients.entry(a.bytes).or_default() += 1;
            }
            Category::OptimizerState => state_made = true,
            _ => {}
        }
    }
    // Weights are never freed: only blocks alive to the end are candidates for them.
    let mut kept: Vec<usize> = (candidates.iter().copied())
        .filter(|&i| {
            d.allocations
                .get(i)
                .is_some_and(|a| a.free_ns.get().is_none())
        })
        .collect();
    kept.sort_by_key(|&i| d.allocations.get(i).map(|a| a.addr));
    let has_gradients = !gradients.is_empty();
    let mut state = gradients.clone();
    state.values_mut().for_each(|n| *n *= MAX_STATE_PER_WEIGHT);
    let stepped = first_step_ns.is_some() && !state_made;
    for i in kept {
        let Some(a) = d.allocations.get(i) else {
            continue;
        };
        let decided = if take(&mut gradients, a.bytes) {
            (Category::Parameter, Evidence::Matching)
        } else if stepped && take(&mut state, a.bytes) {
            (Category::OptimizerState, Evidence::Matching)
        } else if !has_gradients && runs_a_model {
            (Category::Parameter, Evidence::Inference)
        } else {
            continue;
        };
        out.decided.insert(i, decided);
    }
    out
}

/// Take one size from the multiset that a block of `bytes` can hold: the largest at most
/// `bytes` and within [`SAME_TENSOR_SLACK_BYTES`] of it.
fn take(sizes: &mut BTreeMap<i64, u32>, bytes: i64) -> bool {
    let Some((&size, count)) = sizes
        .range(bytes - SAME_TENSOR_SLACK_BYTES..=bytes)
        .next_back()
        .map(|(s, c)| (s, *c))
    else {
        return false;
    };
    if count <= 1 {
        sizes.remove(&size);
    } else if let Some(c) = sizes.get_mut(&size) {
        *c -= 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_is_taken_by_the_block_that_can_hold_it_within_the_slack() {
        let mut sizes = BTreeMap::from([(4096, 2), (8 << 20, 1)]);
        assert!(take(&mut sizes, 4096));
        assert!(take(&mut sizes, 4096));
        assert!(!take(&mut sizes, 4096), "both 4096-byte sizes are taken");
        // A block 1 MiB larger than the request (kept unsplit) still holds it…
        assert!(take(&mut sizes, (8 << 20) + (1 << 20)));
        assert!(sizes.is_empty());
        // …but one smaller than the request, or 2 MiB larger, does not.
        let mut sizes = BTreeMap::from([(8 << 20, 1)]);
        assert!(!take(&mut sizes, (8 << 20) - 512));
        assert!(!take(&mut sizes, (8 << 20) + (2 << 20)));
    }
}
