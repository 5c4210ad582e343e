//! What the viewer holds for one open file: the collector's `Recording`, `Timeline`,
//! `Summary` and whole-run key_averages table, plus, per device, the min/max pyramids of
//! each memory curve that the timeline draws from. All built once on the loader thread and
//! then shared read-only (`Arc`) by the UI and the analysis worker.

use std::path::{Path, PathBuf};
use std::time::Duration;

use collector::analysis::decimate::{Curve, curve, curve_values};
use collector::analysis::lanes::{LaneRow, lanes, op_lanes};
use collector::analysis::markers::{Marker, markers};
use collector::analysis::pyramid::{CurvePyramid, Times};
use collector::analysis::samples::{SampleCurve, gpu_curve};
use collector::analysis::{OpRow, Summary, key_averages_with_net, summarize};
use collector::model::{DeviceId, DeviceIdx, OpCategory};
use collector::{Recording, Timeline};

use super::categories::CategoryCurves;

/// The memory curves of one device, ready for per-pixel queries.
#[derive(Debug, Default)]
pub struct DeviceCurves {
    /// Allocated bytes, where the source records allocations.
    pub allocated: Option<CurvePyramid>,
    /// Reserved bytes, where the source records them.
    pub reserved: Option<CurvePyramid>,
    /// Reserved − allocated: what the allocator's cache held.
    pub cache: Option<CurvePyramid>,
    /// Memory used on the whole device as NVML saw it (recordings).
    pub nvml_used: Option<CurvePyramid>,
    /// The device's capacity, where known.
    pub total_bytes: Option<u64>,
    /// The allocated memory by category, stacked; where the device has allocations.
    pub categories: Option<CategoryCurves>,
    /// Every allocation as a stacked band; where the device has allocations.
    pub bands: Option<std::sync::Arc<super::allocations::DeviceBands>>,
}

impl DeviceCurves {
    fn build(rec: &Recording, timeline: &Timeline, device: usize) -> DeviceCurves {
        let Some(d) = timeline.devices.get(device) else {
            return DeviceCurves::default();
        };
        let pyramid =
            |points: Vec<(i64, i64)>| (!points.is_empty()).then(|| CurvePyramid::build(&points));
        // Allocated, reserved and cache share their times when each has a point at every
        // event (Chrome traces with both totals): 8 bytes a point once instead of thrice.
        let times = Times::new(d.points.iter().map(|p| p.time_ns).collect());
        let every = |v: Option<Vec<i64>>| {
            v.filter(|v| !v.is_empty())
                .map(|v| CurvePyramid::with_times(&times, v))
        };
        let reserved_everywhere = d.points.iter().all(|p| p.reserved_bytes.get().is_some());
        let at_every_point = |which: Curve| -> Option<Vec<i64>> {
            let known = match which {
                Curve::Allocated => d.allocated_known,
                Curve::Reserved => d.reserved_known && reserved_everywhere,
                Curve::Cache => d.allocated_known && d.reserved_known && reserved_everywhere,
            };
            known.then(|| curve_values(d, which))
        };
        let shared_or_own = |which: Curve| match at_every_point(which) {
            Some(values) => every(Some(values)),
            None => pyramid(curve(d, which)),
        };
        let info = rec.devices.get(device);
        let sampled_total = rec
            .gpu_samples
            .iter()
            .filter(|s| s.device as usize == device)
            .find_map(|s| s.total_bytes);
        DeviceCurves {
            allocated: shared_or_own(Curve::Allocated),
            reserved: shared_or_own(Curve::Reserved),
            cache: shared_or_own(Curve::Cache),
            nvml_used: pyramid(gpu_curve(rec, device as DeviceIdx, SampleCurve::DeviceUsed)),
            total_bytes: info.and_then(|i| i.total_memory_bytes).or(sampled_total),
            categories: CategoryCurves::build(rec, timeline, d),
            bands: super::allocations::DeviceBands::build(rec, timeline, device),
        }
    }

    /// The largest value of any curve.
    pub fn max_bytes(&self) -> i64 {
        [&self.allocated, &self.reserved, &self.nvml_used]
            .into_iter()
            .flatten()
            .filter_map(CurvePyramid::max)
            .max()
            .unwrap_or(0)
    }
}

/// Everything known about one opened file.
#[derive(Debug)]
pub struct Loaded {
    /// The file.
    pub path: PathBuf,
    /// Its file name, for tabs.
    pub name: String,
    /// Size on disk.
    pub file_bytes: u64,
    /// The neutral model.
    pub rec: Recording,
    /// Derived series and indices.
    pub timeline: Timeline,
    /// Peaks, fragmentation, OOM verdicts, growth.
    pub summary: Summary,
    /// key_averages for the whole recording (what the table shows with no range selected).
    pub rows: Vec<OpRow>,
    /// Per device (same order as `timeline.devices`).
    pub curves: Vec<DeviceCurves>,
    /// Devices worth showing: with memory events or OOMs, accelerators first.
    pub shown_devices: Vec<DeviceIdx>,
    /// Per device (same order as `timeline.devices`), its markers in time order.
    pub markers: Vec<Vec<Marker>>,
    /// The NVTX ranges as lanes (Nsight exports), thread by thread.
    pub lanes: Vec<LaneRow>,
    /// The op stack as lanes (module → op → kernel launch), thread by thread.
    pub op_lanes: Vec<LaneRow>,
    /// Time spent reading the file.
    pub parse_time: Duration,
    /// Time spent building the timeline, analyses and pyramids.
    pub analysis_time: Duration,
}

impl Loaded {
    /// Build everything from a freshly read recording.
    pub fn build(path: &Path, file_bytes: u64, rec: Recording, parse_time: Duration) -> Loaded {
        let started = std::time::Instant::now();
        let timeline = Timeline::build(&rec);
        let summary = summarize(&rec, &timeline);
        let rows = key_averages_with_net(&rec, None);
        // The lanes before the curves: the lists their sort reads (4 bytes a span) are then
        // given back before the curves and bands are built, not held on top of them (on a
        // 10 GB trace of 16.8 M spans the load's peak went 2.03 -> 1.94 GiB).
        let lanes = lanes(&rec, OpCategory::Nvtx);
        let op_lanes = op_lanes(&rec);
        let curves = (0..timeline.devices.len())
            .map(|d| DeviceCurves::build(&rec, &timeline, d))
            .collect();
        let markers = (0..timeline.devices.len())
            .map(|d| markers(&rec, &timeline, d as DeviceIdx))
            .collect();
        let sampled = |d: DeviceIdx| rec.gpu_samples.iter().any(|s| s.device == d);
        let mut shown_devices: Vec<DeviceIdx> = timeline
            .devices
            .iter()
            .filter(|d| !d.points.is_empty() || !d.ooms.is_empty() || sampled(d.device))
            .map(|d| d.device)
            .collect();
        shown_devices.sort_by_key(|&d| {
            let key = rec.devices.get(d as usize).map(|i| i.key);
            (!key.is_some_and(|k| k.is_accelerator()), key)
        });
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Loaded {
            path: path.to_path_buf(),
            name,
            file_bytes,
            rec,
            timeline,
            summary,
            rows,
            curves,
            shown_devices,
            markers,
            lanes,
            op_lanes,
            parse_time,
            analysis_time: started.elapsed(),
        }
    }

    /// The device shown first: the accelerator (else any device) with the largest peak.
    pub fn default_device(&self) -> Option<DeviceIdx> {
        let accelerator = |d: DeviceIdx| self.rec.is_accelerator(d);
        let peak = |d: DeviceIdx| {
            self.curves
                .get(d as usize)
                .map_or(0, DeviceCurves::max_bytes)
        };
        self.shown_devices
            .iter()
            .copied()
            .max_by_key(|&d| (accelerator(d), peak(d), std::cmp::Reverse(d)))
    }

    /// The device at `device`.
    pub fn device_id(&self, device: DeviceIdx) -> Option<DeviceId> {
        self.rec.devices.get(device as usize).map(|d| d.key)
    }

    /// Torch's name of a device (`cuda:0`), for labels.
    pub fn device_name(&self, device: DeviceIdx) -> String {
        self.rec
            .devices
            .get(device as usize)
            .map_or_else(|| format!("device {device}"), |d| d.key.to_string())
    }

    /// Recording length in ns.
    pub fn duration_ns(&self) -> i64 {
        (self.rec.meta.end_ns - self.rec.meta.start_ns).max(1)
    }

    /// The name of the innermost op running at `time_ns` on any thread.
    pub fn op_at(&self, time_ns: i64) -> Option<&str> {
        let op = self.timeline.ops.innermost_any(time_ns)?;
        self.rec.ops.get(op as usize).map(|o| self.rec.op_name(o))
    }

    /// Every level of the op stack at `time_ns`, innermost first (the collector's
    /// `OpIndex::nested_at`).
    pub fn ops_at(&self, time_ns: i64) -> Vec<&str> {
        let nested = self.timeline.ops.nested_at(time_ns);
        nested
            .into_iter()
            .filter_map(|o| self.rec.ops.get(o as usize))
            .map(|o| self.rec.op_name(o))
            .collect()
    }

    /// Heap bytes of the pyramids (for the status bar and PERFORMANCE.md).
    pub fn pyramid_bytes(&self) -> usize {
        self.curves
            .iter()
            .flat_map(|c| [&c.allocated, &c.reserved, &c.cache, &c.nvml_used])
            .flatten()
            .map(CurvePyramid::heap_bytes)
            .sum::<usize>()
            + self
                .curves
                .iter()
                .filter_map(|c| c.categories.as_ref())
                .map(CategoryCurves::heap_bytes)
                .sum::<usize>()
    }
}
