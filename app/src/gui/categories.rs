//! The memory categories as the viewer shows them: per device, the collector's series of
//! every category's bytes over the run (`categories_over_time`, the same one `vramscope
//! categories` writes), stacked into cumulative curves with a min/max pyramid each, so the
//! timeline's stacked area costs O(columns × categories) a frame whatever the trace's
//! length; and the composition at the cursor — the summary's `composition_at_peak` at the
//! peak, the series' point at any other instant.

use collector::analysis::categories::{
    BeforeTrace, Category, CategoryBytes, CategorySeries, OutsidePytorch, UnseenWeights,
    categories_over_time,
};
use collector::analysis::pyramid::CurvePyramid;
use collector::model::DeviceIdx;
use collector::timeline::DeviceTimeline;
use collector::{Recording, Timeline};

use super::loaded::Loaded;
use crate::output::charts::categories::stacked;

/// One stacked layer: its category and the curve of its top (the sum of it and every
/// category under it).
#[derive(Debug)]
pub struct Layer {
    /// The category.
    pub category: Category,
    /// The cumulative curve of its top edge.
    pub top: CurvePyramid,
}

/// One device's categories over time, ready to stack.
#[derive(Debug)]
pub struct CategoryCurves {
    /// The collector's series (at most `MAX_SERIES_POINTS` points plus the peak and the
    /// last: ~10,000 × 9 × 8 bytes ≈ 0.7 MB, whatever the trace's length).
    pub series: CategorySeries,
    /// The layers of the categories that hold bytes at some point, in the report's stacking order (`STACK_ORDER`).
    pub layers: Vec<Layer>,
}

impl CategoryCurves {
    /// The device's stacked categories; `None` where it has no allocations to classify.
    pub fn build(rec: &Recording, timeline: &Timeline, d: &DeviceTimeline) -> Option<Self> {
        if !d.allocated_known || d.allocations.is_empty() {
            return None;
        }
        let series = categories_over_time(rec, timeline, d);
        if series.times_ns.is_empty() {
            return None;
        }
        let layers = stacked(&series)
            .into_iter()
            .map(|(category, top)| Layer {
                category,
                top: CurvePyramid::build(&top),
            })
            .collect();
        Some(CategoryCurves { series, layers })
    }

    /// The series' point holding at `time_ns` (the last at or before it): its time and
    /// bytes per category.
    pub fn point_at(&self, time_ns: i64) -> Option<(i64, &CategoryBytes)> {
        let n = self.series.times_ns.partition_point(|&t| t <= time_ns);
        let i = n.checked_sub(1)?;
        Some((*self.series.times_ns.get(i)?, self.series.bytes.get(i)?))
    }

    /// Heap bytes held (series and pyramids).
    pub fn heap_bytes(&self) -> usize {
        let series = self.series.times_ns.len() * (8 + std::mem::size_of::<CategoryBytes>());
        series
            + self
                .layers
                .iter()
                .map(|l| l.top.heap_bytes())
                .sum::<usize>()
    }
}

/// What the composition view shows: the bytes per category at an instant.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownComposition {
    /// The instant, ns on the recording's clock.
    pub at_ns: i64,
    /// Whether this is the allocated peak (the summary's exact composition).
    pub at_peak: bool,
    /// The allocated total then: the sum of `bytes`.
    pub total_bytes: i64,
    /// Bytes per category, indexed by [`Category::index`].
    pub bytes: CategoryBytes,
    /// Device memory used beyond the allocator's reserve (at the peak, with NVML).
    pub outside_pytorch: Option<OutsidePytorch>,
    /// Bytes per category decided by sizes and lifetimes (at the peak; the series does not
    /// keep evidence, so elsewhere none is marked).
    pub inferred: CategoryBytes,
    /// Weights a CPU trace's totals leave out (at the peak).
    pub unseen_weights: Option<UnseenWeights>,
    /// What the memory from before the trace likely is (at the peak).
    pub before_trace: Option<BeforeTrace>,
}

impl ShownComposition {
    /// The categories with bytes, largest first.
    pub fn entries(&self) -> Vec<(Category, i64)> {
        largest_first(&self.bytes)
    }
}

/// The categories with bytes, largest first (ties in [`Category::ALL`] order).
pub fn largest_first(bytes: &CategoryBytes) -> Vec<(Category, i64)> {
    let mut entries: Vec<(Category, i64)> = Category::ALL
        .into_iter()
        .map(|c| (c, bytes[c.index()]))
        .filter(|&(_, b)| b != 0)
        .collect();
    entries.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    entries
}

/// The composition of `device`'s memory at `at_ns` — at the peak when `at_ns` is `None` or
/// the peak's instant — or `None` where the device has no categories.
pub fn composition_at(
    data: &Loaded,
    device: DeviceIdx,
    at_ns: Option<i64>,
) -> Option<ShownComposition> {
    let curves = data.curves.get(device as usize)?.categories.as_ref()?;
    let id = data.device_id(device)?;
    let peak = data
        .summary
        .devices
        .iter()
        .find(|d| d.device == id)
        .and_then(|d| d.composition_at_peak.as_ref());
    match (peak, at_ns) {
        (Some(p), None) => Some(from_peak(p)),
        (Some(p), Some(t)) if t == p.at_ns => Some(from_peak(p)),
        (_, Some(t)) => {
            let (at_ns, bytes) = curves.point_at(t)?;
            Some(ShownComposition {
                at_ns,
                at_peak: false,
                total_bytes: bytes.iter().sum(),
                bytes: *bytes,
                outside_pytorch: None,
                inferred: [0; Category::ALL.len()],
                unseen_weights: None,
                before_trace: None,
            })
        }
        (None, None) => None,
    }
}

fn from_peak(p: &collector::analysis::categories::Composition) -> ShownComposition {
    ShownComposition {
        at_ns: p.at_ns,
        at_peak: true,
        total_bytes: p.total_bytes,
        bytes: p.bytes,
        outside_pytorch: p.outside_pytorch,
        inferred: Category::ALL.map(|c| p.inferred_bytes(c)),
        unseen_weights: p.unseen_weights,
        before_trace: p.before_trace,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use collector::LoadOptions;

    use super::super::tests::fixture;
    use super::*;

    #[test]
    fn the_composition_follows_the_series_and_is_exact_at_the_peak() {
        // GIVEN an MLP trained with Adam on CPU
        let path = fixture("categories/c03_mlp_adam.json.gz");
        let rec = collector::load(&path, LoadOptions::default()).expect("loads");
        let data = Loaded::build(&path, 0, rec, Duration::ZERO);
        let device = data.default_device().expect("a device");
        let curves = data.curves[device as usize]
            .categories
            .as_ref()
            .expect("categories");
        let first_ns = curves.series.times_ns[0];
        // THEN before the first memory event there is nothing to show
        assert_eq!(composition_at(&data, device, Some(first_ns - 1)), None);
        // at the first event, the series' first point (one allocation)
        let first = composition_at(&data, device, Some(first_ns)).expect("first");
        assert_eq!(first.bytes, curves.series.bytes[0]);
        assert!(first.total_bytes > 0 && !first.at_peak);
        // and at the peak, the summary's composition, which on this run is torch's memory
        // profiler's to the byte for the optimizer state and the gradients
        let truth: serde_json::Value = serde_json::from_slice(
            &std::fs::read(fixture("categories/c03_mlp_adam.truth.json")).expect("truth"),
        )
        .expect("JSON");
        let peak = composition_at(&data, device, None).expect("peak");
        assert!(peak.at_peak);
        assert_eq!(
            Some(peak.total_bytes),
            truth["peak_allocated_bytes"].as_i64()
        );
        for c in [Category::OptimizerState, Category::Gradient] {
            let torch = truth["composition_at_peak"][c.as_str()].as_i64();
            assert_eq!(Some(peak.bytes[c.index()]), torch, "{}", c.as_str());
        }
        assert_eq!(composition_at(&data, device, Some(peak.at_ns)), Some(peak));
    }
}
