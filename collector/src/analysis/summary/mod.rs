//! Per-device memory summary: peaks (when, in which op), the allocator's cache at the
//! peak, final state, and the trace facts that frame them.

mod compact;
mod file;
mod nvml;
mod peaks;

pub use compact::summarize_compact;
pub use file::{FileSummary, summarize_file};
pub use nvml::{NvmlSummary, ProcessPeak};
pub use peaks::{DevicePeak, JudgedPeak, PeakKind, PeakSource};

use std::collections::BTreeMap;

use super::categories::{Composition, composition_at_peak};
use super::fragmentation::{Fragmentation, fragmentation_at, fragmentation_at_snapshot};
use super::growth::{StepGrowth, step_growth};
use super::oom::{OomVerdict, oom_verdicts};
use crate::model::{DeviceId, Recording, SourceFormat};
use crate::timeline::{DeviceTimeline, Timeline, TotalsSource};

/// The summary of one device.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeviceSummary {
    /// The device (its c10 type — 1 CUDA, 6 HIP, 0 CPU, … — and ordinal).
    pub device: DeviceId,
    /// The device's name, where the trace has device properties.
    pub name: Option<String>,
    /// The device's total memory, where known.
    pub total_memory_bytes: Option<u64>,
    /// Number of memory events (allocations, frees, OOMs).
    pub memory_events: u64,
    /// Allocations.
    pub allocs: u64,
    /// Frees.
    pub frees: u64,
    /// Out-of-memory events.
    pub ooms: u64,
    /// Segment (reserved-memory) events: cudaMalloc/cudaFree of the allocator's segments.
    pub segment_events: u64,
    /// Peak allocated bytes (the largest `Total Allocated` where the trace has totals);
    /// `None` for sources that only see reserved memory (Nsight).
    pub peak_allocated_bytes: Option<i64>,
    /// When the peak happened, ns on the recording's clock.
    pub peak_allocated_at_ns: Option<i64>,
    /// The innermost op running at the peak (on the allocating thread, else any thread).
    pub peak_allocated_op: Option<String>,
    /// Peak reserved bytes, where the trace has `Total Reserved`.
    pub peak_reserved_bytes: Option<i64>,
    /// When reserved peaked, ns on the recording's clock.
    pub peak_reserved_at_ns: Option<i64>,
    /// Reserved − allocated at the allocated peak: what the caching allocator held unused.
    pub cache_at_peak_bytes: Option<i64>,
    /// Allocated bytes after the last event.
    pub final_allocated_bytes: Option<i64>,
    /// Reserved bytes after the last event.
    pub final_reserved_bytes: Option<i64>,
    /// Allocator snapshots: the peak of the sizes the program asked for (allocated counts
    /// the allocator's blocks: rounded to 512 bytes, or larger where not split).
    pub peak_requested_bytes: Option<i64>,
    /// When the requested total peaked, ns on the recording's clock.
    pub peak_requested_at_ns: Option<i64>,
    /// Allocator snapshots: the requested total at the end.
    pub final_requested_bytes: Option<i64>,
    /// Where allocated totals come from; `None` when the source sees no allocations.
    pub totals: Option<TotalsSource>,
    /// Frees of blocks allocated before the trace started.
    pub frees_without_alloc: u64,
    /// Blocks still allocated at the end of the trace (by address).
    pub live_at_end: u64,
    /// What filled memory at the allocated peak, by category (sums to the peak).
    pub composition_at_peak: Option<Composition>,
}

/// The summary of a whole recording.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Source format.
    pub format: SourceFormat,
    /// Producer era.
    pub era: String,
    /// Whether the file was gzip.
    pub compressed: bool,
    /// Set for a `vramscope pack` of another file: where it came from, whether redacted.
    pub packed: Option<String>,
    /// Set where torch's memory timeline export of the same profile gave the categories:
    /// the file and how many allocations it named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories_from: Option<String>,
    /// The first timestamp, ns on the recording's clock (times in reports count from it).
    pub start_ns: i64,
    /// The last timestamp, ns.
    pub end_ns: i64,
    /// Trace events read.
    pub events: u64,
    /// Op spans (operators, annotations, kernels, …).
    pub ops: u64,
    /// Training steps (`ProfilerStep#N`).
    pub steps: u64,
    /// Memory events of all devices.
    pub memory_events: u64,
    /// Whether the trace has any memory events at all.
    pub has_memory_data: bool,
    /// Memory events that happened inside an op, annotation or Python frame on their own
    /// thread (the rest ran outside any recorded op, e.g. in the dataloader or at exit).
    pub memory_events_in_ops: u64,
    /// Distributed rank, world size and backend, where present.
    pub rank: Option<i64>,
    /// Number of ranks.
    pub world_size: Option<i64>,
    /// Process-group backend.
    pub backend: Option<String>,
    /// One entry per device with memory events.
    pub devices: Vec<DeviceSummary>,
    /// GPUs the trace describes (name and memory), including those without memory events.
    pub gpus: Vec<GpuInfo>,
    /// What the parser skipped or repaired, with counts.
    pub warnings: BTreeMap<String, u64>,
    /// Set when the file was cut short and only its complete prefix was read.
    pub truncated_at_byte: Option<u64>,
    /// Fragmentation per device: at the allocated peak (reconstructed from segment and block
    /// addresses) and, for allocator snapshots, at the snapshot (the allocator's own blocks).
    pub fragmentation: Vec<Fragmentation>,
    /// Every out-of-memory event, explained.
    pub ooms: Vec<OomVerdict>,
    /// Allocated memory at step ends, where the recording has steps.
    pub growth: Vec<StepGrowth>,
    /// Allocator settings, for allocator snapshots.
    pub allocator_settings: BTreeMap<String, String>,
    /// Device memory as the driver saw it (NVML), for recordings.
    pub nvml: Vec<NvmlSummary>,
    /// Peak host RSS of the recorded process tree, for recordings.
    pub host_rss_peak_bytes: Option<u64>,
    /// Peak host PSS of the recorded process tree, for recordings that read it.
    pub host_pss_peak_bytes: Option<u64>,
    /// Most processes the recorded tree held at one sample, where recorded.
    pub host_processes_max: Option<u32>,
}

/// A GPU the trace describes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GpuInfo {
    /// The GPU.
    pub device: DeviceId,
    /// Marketing name.
    pub name: Option<String>,
    /// Total memory.
    pub total_memory_bytes: Option<u64>,
}

/// Summarise a recording.
pub fn summarize(rec: &Recording, timeline: &Timeline) -> Summary {
    let devices: Vec<DeviceSummary> = timeline
        .devices
        .iter()
        .filter(|d| !d.points.is_empty() || !d.ooms.is_empty())
        .map(|d| device_summary(rec, timeline, d))
        .collect();
    let gpus = rec
        .devices
        .iter()
        .filter(|d| d.key.is_accelerator() && (d.name.is_some() || d.total_memory_bytes.is_some()))
        .map(|d| GpuInfo {
            device: d.key,
            name: d.name.clone(),
            total_memory_bytes: d.total_memory_bytes,
        })
        .collect();
    let dist = rec.meta.distributed.clone().unwrap_or_default();
    Summary {
        format: rec.meta.format,
        era: rec.meta.era.clone(),
        compressed: rec.meta.compressed,
        packed: rec.meta.properties.get("vramscope_pack").cloned(),
        categories_from: (rec.meta.properties)
            .get(crate::parse::memory_timeline::CATEGORIES_FROM)
            .cloned(),
        start_ns: rec.meta.start_ns,
        end_ns: rec.meta.end_ns,
        events: rec.meta.events_read,
        ops: rec.ops.len() as u64 + rec.meta.spans_left_out,
        steps: rec.steps.len() as u64,
        memory_events: rec.mem_events.len() as u64,
        has_memory_data: !rec.mem_events.is_empty(),
        memory_events_in_ops: rec.meta.memory_events_in_ops.unwrap_or_else(|| {
            rec.mem_events
                .iter()
                .filter(|e| timeline.ops.enclosed_on_thread(e.thread, e.time_ns))
                .count() as u64
        }),
        rank: dist.rank,
        world_size: dist.world_size,
        backend: dist.backend,
        devices,
        gpus,
        warnings: warnings(rec, timeline),
        truncated_at_byte: rec.diagnostics.truncated_at,
        fragmentation: fragmentation(rec, timeline),
        ooms: oom_verdicts(rec, timeline),
        growth: step_growth(rec, timeline),
        allocator_settings: rec
            .allocator
            .as_ref()
            .map(|a| a.settings.clone())
            .unwrap_or_default(),
        nvml: nvml::nvml(rec),
        host_rss_peak_bytes: rec.host_samples.iter().map(|h| h.rss_bytes).max(),
        host_pss_peak_bytes: rec.host_samples.iter().filter_map(|h| h.pss_bytes).max(),
        host_processes_max: rec.host_samples.iter().filter_map(|h| h.processes).max(),
    }
}

/// The reader's counted oddities, and totals below zero: a trace whose `Total Allocated`
/// went negative, Nsight rows that free reserved memory before allocating it. The values
/// stay as the source gives them; the warning says they are inconsistent.
fn warnings(rec: &Recording, timeline: &Timeline) -> BTreeMap<String, u64> {
    let mut warnings = rec.diagnostics.counts.clone();
    let negative: usize = timeline
        .devices
        .iter()
        .map(|d| {
            // Reconstructed allocated totals dip below zero when blocks from before the
            // trace are freed: `frees_without_alloc` says so already.
            let allocated_from_source = d.allocated_known && d.totals == TotalsSource::Trace;
            let below_zero = |p: &&crate::timeline::SeriesPoint| {
                (allocated_from_source && p.allocated_bytes < 0)
                    || p.reserved_bytes.get().is_some_and(|r| r < 0)
            };
            d.points.iter().filter(below_zero).count()
        })
        .sum();
    if negative > 0 {
        warnings.insert(NEGATIVE_TOTALS.to_owned(), negative as u64);
    }
    warnings
}

/// The warning for memory totals below zero.
pub const NEGATIVE_TOTALS: &str = "memory events after which the allocator's total is below zero (shown as the source gives them: its totals are inconsistent)";

fn fragmentation(rec: &Recording, timeline: &Timeline) -> Vec<Fragmentation> {
    let mut out = Vec::new();
    for (i, d) in timeline.devices.iter().enumerate() {
        let device = i as crate::model::DeviceIdx;
        if let Some(peak) = d.peak_allocated.and_then(|p| d.points.get(p))
            && let Some(f) = fragmentation_at(rec, timeline, device, peak.time_ns)
        {
            out.push(f);
        }
        if let Some(f) = fragmentation_at_snapshot(rec, device) {
            out.push(f);
        }
    }
    out
}

fn device_summary(rec: &Recording, timeline: &Timeline, d: &DeviceTimeline) -> DeviceSummary {
    let info = rec.devices.get(d.device as usize);
    let key = info.map(|i| i.key).unwrap_or(crate::model::DeviceId::CPU);
    let requested = rec
        .allocator
        .as_ref()
        .and_then(|a| a.requested.iter().find(|r| r.device == d.device));
    let peak = d.peak_allocated.and_then(|i| d.points.get(i));
    let peak_reserved = d.peak_reserved.and_then(|i| d.points.get(i));
    let last = d.points.last();
    let peak_op = peak.and_then(|p| {
        let e = rec.mem_events.get(p.event as usize)?;
        let op = timeline.ops.running_at(e.thread, p.time_ns)?;
        rec.ops.get(op as usize).map(|o| rec.op_name(o).to_owned())
    });
    DeviceSummary {
        device: key,
        name: info.and_then(|i| i.name.clone()),
        total_memory_bytes: info.and_then(|i| i.total_memory_bytes),
        memory_events: (d.points.len() + d.ooms.len()) as u64,
        allocs: d.counts.allocs,
        frees: d.counts.frees,
        ooms: d.ooms.len() as u64,
        segment_events: d.counts.segment_events,
        peak_allocated_bytes: peak.map(|p| p.allocated_bytes),
        peak_allocated_at_ns: peak.map(|p| p.time_ns),
        peak_allocated_op: peak_op,
        peak_reserved_bytes: peak_reserved.and_then(|p| p.reserved_bytes.get()),
        peak_reserved_at_ns: peak_reserved.map(|p| p.time_ns),
        cache_at_peak_bytes: peak
            .and_then(|p| p.reserved_bytes.get().map(|r| r - p.allocated_bytes)),
        final_allocated_bytes: last
            .filter(|_| d.allocated_known)
            .map(|p| p.allocated_bytes),
        final_reserved_bytes: last.and_then(|p| p.reserved_bytes.get()),
        peak_requested_bytes: requested.map(|r| r.peak_bytes),
        peak_requested_at_ns: requested.map(|r| r.peak_at_ns),
        final_requested_bytes: requested.map(|r| r.final_bytes),
        totals: d.allocated_known.then_some(d.totals),
        frees_without_alloc: d.unmatched_frees,
        live_at_end: d
            .allocations
            .iter()
            .filter(|a| a.free_ns.get().is_none())
            .count() as u64,
        composition_at_peak: composition_at_peak(rec, timeline, d),
    }
}
