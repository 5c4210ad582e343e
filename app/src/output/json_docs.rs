//! The JSON document of `summary`: its field names and units are a public
//! contract (scripts and CI gates read them), so they are spelled out here, apart from the
//! collector's typed results. Times become µs since the start of the trace (as f64, the
//! way torch's traces count), devices torch's names (`cuda:0`).

use std::collections::BTreeMap;

use super::categories::{CompositionDoc, EvidenceDoc, OutsideDoc};
use collector::analysis::fragmentation::{Fragmentation, PoolFragmentation};
use collector::analysis::growth::StepGrowth;
use collector::analysis::live::LiveGroup;
use collector::analysis::oom::{OomCause, OomVerdict, SimulatedOom};
use collector::analysis::summary::{GpuInfo, NvmlSummary, ProcessPeak};
use collector::analysis::{DeviceSummary, Summary};
use collector::units::us_after as us;
use serde::Serialize;

/// `summary --format json`.
#[derive(Serialize)]
pub struct SummaryDoc<'a> {
    file: String,
    format: &'static str,
    format_name: &'static str,
    era: &'a str,
    compressed: bool,
    packed: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    categories_from: Option<&'a str>,
    duration_us: f64,
    events: u64,
    ops: u64,
    steps: u64,
    memory_events: u64,
    has_memory_data: bool,
    memory_events_in_ops: u64,
    rank: Option<i64>,
    world_size: Option<i64>,
    backend: Option<&'a str>,
    devices: Vec<DeviceDoc<'a>>,
    gpus: Vec<GpuDoc<'a>>,
    warnings: &'a BTreeMap<String, u64>,
    truncated_at_byte: Option<u64>,
    fragmentation: Vec<FragmentationDoc<'a>>,
    ooms: Vec<OomDoc<'a>>,
    growth: Vec<GrowthDoc<'a>>,
    allocator_settings: &'a BTreeMap<String, String>,
    nvml: Vec<NvmlDoc>,
    host_rss_peak_bytes: Option<u64>,
    host_pss_peak_bytes: Option<u64>,
    host_processes_max: Option<u32>,
}

impl<'a> SummaryDoc<'a> {
    /// The document for `summary` of the file `file`.
    pub fn new(file: String, s: &'a Summary) -> SummaryDoc<'a> {
        let t0 = s.start_ns;
        SummaryDoc {
            file,
            format: s.format.as_str(),
            format_name: s.format.describe(),
            era: &s.era,
            compressed: s.compressed,
            packed: s.packed.as_deref(),
            categories_from: s.categories_from.as_deref(),
            duration_us: us(t0, s.end_ns),
            events: s.events,
            ops: s.ops,
            steps: s.steps,
            memory_events: s.memory_events,
            has_memory_data: s.has_memory_data,
            memory_events_in_ops: s.memory_events_in_ops,
            rank: s.rank,
            world_size: s.world_size,
            backend: s.backend.as_deref(),
            devices: s.devices.iter().map(|d| DeviceDoc::new(t0, d)).collect(),
            gpus: s.gpus.iter().map(GpuDoc::new).collect(),
            warnings: &s.warnings,
            truncated_at_byte: s.truncated_at_byte,
            fragmentation: s
                .fragmentation
                .iter()
                .map(|f| FragmentationDoc::new(t0, f))
                .collect(),
            ooms: s.ooms.iter().map(|o| OomDoc::new(t0, o)).collect(),
            growth: s.growth.iter().map(GrowthDoc::new).collect(),
            allocator_settings: &s.allocator_settings,
            nvml: s.nvml.iter().map(|n| NvmlDoc::new(t0, n)).collect(),
            host_rss_peak_bytes: s.host_rss_peak_bytes,
            host_pss_peak_bytes: s.host_pss_peak_bytes,
            host_processes_max: s.host_processes_max,
        }
    }
}

#[derive(Serialize)]
pub(super) struct DeviceDoc<'a> {
    device: String,
    device_type: i16,
    name: Option<&'a str>,
    total_memory_bytes: Option<u64>,
    memory_events: u64,
    allocs: u64,
    frees: u64,
    ooms: u64,
    segment_events: u64,
    peak_allocated_bytes: Option<i64>,
    peak_allocated_at_us: Option<f64>,
    peak_allocated_op: Option<&'a str>,
    peak_reserved_bytes: Option<i64>,
    peak_reserved_at_us: Option<f64>,
    cache_at_peak_bytes: Option<i64>,
    final_allocated_bytes: Option<i64>,
    final_reserved_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_requested_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_requested_at_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    final_requested_bytes: Option<i64>,
    totals: &'static str,
    frees_without_alloc: u64,
    live_at_end: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    composition_at_peak: Option<CompositionDoc<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    composition_evidence: Option<EvidenceDoc<'a>>,
    #[serde(flatten)]
    outside_pytorch: Option<OutsideDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weights_before_profiling: Option<collector::analysis::categories::UnseenWeights>,
    #[serde(skip_serializing_if = "Option::is_none")]
    before_trace_reading: Option<collector::analysis::categories::BeforeTrace>,
}

impl<'a> DeviceDoc<'a> {
    pub(super) fn new(t0: i64, d: &'a DeviceSummary) -> DeviceDoc<'a> {
        let composition = d.composition_at_peak.as_ref();
        DeviceDoc {
            device: d.device.to_string(),
            device_type: d.device.device_type.0,
            name: d.name.as_deref(),
            total_memory_bytes: d.total_memory_bytes,
            memory_events: d.memory_events,
            allocs: d.allocs,
            frees: d.frees,
            ooms: d.ooms,
            segment_events: d.segment_events,
            peak_allocated_bytes: d.peak_allocated_bytes,
            peak_allocated_at_us: d.peak_allocated_at_ns.map(|t| us(t0, t)),
            peak_allocated_op: d.peak_allocated_op.as_deref(),
            peak_reserved_bytes: d.peak_reserved_bytes,
            peak_reserved_at_us: d.peak_reserved_at_ns.map(|t| us(t0, t)),
            cache_at_peak_bytes: d.cache_at_peak_bytes,
            final_allocated_bytes: d.final_allocated_bytes,
            final_reserved_bytes: d.final_reserved_bytes,
            peak_requested_bytes: d.peak_requested_bytes,
            peak_requested_at_us: d.peak_requested_at_ns.map(|t| us(t0, t)),
            final_requested_bytes: d.final_requested_bytes,
            totals: super::text::totals_name(d.totals),
            frees_without_alloc: d.frees_without_alloc,
            live_at_end: d.live_at_end,
            composition_at_peak: composition.map(CompositionDoc),
            composition_evidence: composition.map(EvidenceDoc),
            outside_pytorch: (composition.and_then(|c| c.outside_pytorch)).map(OutsideDoc::from),
            weights_before_profiling: composition.and_then(|c| c.unseen_weights),
            before_trace_reading: composition.and_then(|c| c.before_trace),
        }
    }
}

#[derive(Serialize)]
struct GpuDoc<'a> {
    device: String,
    name: Option<&'a str>,
    total_memory_bytes: Option<u64>,
}

impl<'a> GpuDoc<'a> {
    fn new(g: &'a GpuInfo) -> GpuDoc<'a> {
        GpuDoc {
            device: g.device.to_string(),
            name: g.name.as_deref(),
            total_memory_bytes: g.total_memory_bytes,
        }
    }
}

#[derive(Serialize)]
struct FragmentationDoc<'a> {
    device: String,
    at_us: f64,
    source: &'static str,
    reserved_bytes: i64,
    allocated_bytes: i64,
    cache_free_bytes: i64,
    segments: u64,
    free_blocks: u64,
    largest_free_block_bytes: i64,
    external_fragmentation: f64,
    small_pool: &'a PoolFragmentation,
    large_pool: &'a PoolFragmentation,
}

impl<'a> FragmentationDoc<'a> {
    fn new(t0: i64, f: &'a Fragmentation) -> FragmentationDoc<'a> {
        FragmentationDoc {
            device: f.device.to_string(),
            at_us: us(t0, f.at_ns),
            source: f.source.as_str(),
            reserved_bytes: f.reserved_bytes,
            allocated_bytes: f.allocated_bytes,
            cache_free_bytes: f.cache_free_bytes,
            segments: f.segments,
            free_blocks: f.free_blocks,
            largest_free_block_bytes: f.largest_free_block_bytes,
            external_fragmentation: f.external_fragmentation,
            small_pool: &f.small_pool,
            large_pool: &f.large_pool,
        }
    }
}

#[derive(Serialize)]
struct OomDoc<'a> {
    device: String,
    at_us: f64,
    requested_bytes: i64,
    device_free_bytes: Option<u64>,
    allocated_bytes: i64,
    reserved_bytes: Option<i64>,
    cache_free_bytes: Option<i64>,
    largest_free_block_bytes: Option<i64>,
    outside_allocator_bytes: Option<i64>,
    cause: OomCause,
    verdict: String,
    largest_live: &'a [LiveGroup],
    /// The allocator simulation's answer, where the input has a history to replay.
    #[serde(skip_serializing_if = "Option::is_none")]
    simulation: Option<&'a SimulatedOom>,
}

impl<'a> OomDoc<'a> {
    fn new(t0: i64, o: &'a OomVerdict) -> OomDoc<'a> {
        OomDoc {
            device: o.device.to_string(),
            at_us: us(t0, o.at_ns),
            requested_bytes: o.requested_bytes,
            device_free_bytes: o.device_free_bytes,
            allocated_bytes: o.allocated_bytes,
            reserved_bytes: o.reserved_bytes,
            cache_free_bytes: o.cache_free_bytes,
            largest_free_block_bytes: o.largest_free_block_bytes,
            outside_allocator_bytes: o.outside_allocator_bytes,
            cause: o.cause,
            verdict: super::oom::verdict_words(o),
            largest_live: &o.largest_live,
            simulation: o.simulation.as_ref(),
        }
    }
}

#[derive(Serialize)]
struct GrowthDoc<'a> {
    device: String,
    allocated_at_step_end: &'a [(i64, i64)],
    average_growth_bytes: i64,
    steady_growth: bool,
}

impl<'a> GrowthDoc<'a> {
    fn new(g: &'a StepGrowth) -> GrowthDoc<'a> {
        GrowthDoc {
            device: g.device.to_string(),
            allocated_at_step_end: &g.allocated_at_step_end,
            average_growth_bytes: g.average_growth_bytes,
            steady_growth: g.steady_growth,
        }
    }
}

#[derive(Serialize)]
struct NvmlDoc {
    device: String,
    samples: u64,
    total_bytes: Option<u64>,
    peak_used_bytes: u64,
    peak_used_at_us: f64,
    peak_process_bytes: Option<u64>,
    peak_process_at_us: Option<f64>,
    min_free_bytes: Option<u64>,
    driver_reserved_bytes: Option<u64>,
    processes: Vec<ProcessDoc>,
}

impl NvmlDoc {
    fn new(t0: i64, n: &NvmlSummary) -> NvmlDoc {
        NvmlDoc {
            device: n.device.to_string(),
            samples: n.samples,
            total_bytes: n.total_bytes,
            peak_used_bytes: n.peak_used_bytes,
            peak_used_at_us: us(t0, n.peak_used_at_ns),
            peak_process_bytes: n.peak_process_bytes,
            peak_process_at_us: n.peak_process_at_ns.map(|t| us(t0, t)),
            min_free_bytes: n.min_free_bytes,
            driver_reserved_bytes: n.driver_reserved_bytes,
            processes: n.processes.iter().map(|p| ProcessDoc::new(t0, p)).collect(),
        }
    }
}

#[derive(Serialize)]
struct ProcessDoc {
    pid: u32,
    peak_bytes: Option<u64>,
    peak_at_us: Option<f64>,
    samples: u64,
}

impl ProcessDoc {
    fn new(t0: i64, p: &ProcessPeak) -> ProcessDoc {
        ProcessDoc {
            pid: p.pid,
            peak_bytes: p.peak_bytes,
            peak_at_us: p.peak_at_ns.map(|t| us(t0, t)),
            samples: p.samples,
        }
    }
}
