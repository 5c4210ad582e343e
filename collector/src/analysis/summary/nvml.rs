//! NVML's view of a recording in the summary: per GPU the peak used memory, the recorded
//! process tree's peak and each of its processes, the least free memory.

use std::collections::BTreeMap;

use crate::model::{DeviceId, Recording};

/// NVML's view of one GPU over a recording.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NvmlSummary {
    /// The GPU (`cuda:N` by NVML index).
    pub device: DeviceId,
    /// Number of samples.
    pub samples: u64,
    /// Device total.
    pub total_bytes: Option<u64>,
    /// Peak memory used on the device (every process, context and driver allocation).
    pub peak_used_bytes: u64,
    /// When, ns on the recording's clock.
    pub peak_used_at_ns: i64,
    /// Peak memory of the recorded process tree, where NVML reports per-process memory.
    pub peak_process_bytes: Option<u64>,
    /// When the tree's memory peaked, ns on the recording's clock.
    pub peak_process_at_ns: Option<i64>,
    /// The least free memory seen.
    pub min_free_bytes: Option<u64>,
    /// Memory the driver and firmware reserve (the last reading).
    pub driver_reserved_bytes: Option<u64>,
    /// Each process of the recorded tree seen on this GPU, by pid.
    pub processes: Vec<ProcessPeak>,
}

/// One process of the recorded tree on one GPU.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcessPeak {
    /// The process.
    pub pid: u32,
    /// Its peak memory on the GPU; `None` when NVML never reported its memory.
    pub peak_bytes: Option<u64>,
    /// When, ns on the recording's clock.
    pub peak_at_ns: Option<i64>,
    /// Readings of it.
    pub samples: u64,
}

fn process_peaks(rec: &Recording, device: usize) -> Vec<ProcessPeak> {
    let mut by_pid: BTreeMap<u32, ProcessPeak> = BTreeMap::new();
    for s in rec
        .gpu_process_samples
        .iter()
        .filter(|s| s.device as usize == device)
    {
        let p = by_pid.entry(s.pid).or_insert(ProcessPeak {
            pid: s.pid,
            peak_bytes: None,
            peak_at_ns: None,
            samples: 0,
        });
        p.samples += 1;
        if let Some(b) = s.used_bytes
            && p.peak_bytes.is_none_or(|have| b > have)
        {
            p.peak_bytes = Some(b);
            p.peak_at_ns = Some(s.time_ns);
        }
    }
    by_pid.into_values().collect()
}

pub(super) fn nvml(rec: &Recording) -> Vec<NvmlSummary> {
    let mut out: Vec<NvmlSummary> = Vec::new();
    for (i, d) in rec.devices.iter().enumerate() {
        let samples: Vec<_> = rec
            .gpu_samples
            .iter()
            .filter(|s| s.device as usize == i)
            .collect();
        let Some(peak) = samples
            .iter()
            .max_by_key(|s| (s.used_bytes, std::cmp::Reverse(s.time_ns)))
        else {
            continue;
        };
        let process_peak = samples
            .iter()
            .filter(|s| s.process_bytes.is_some())
            .max_by_key(|s| (s.process_bytes, std::cmp::Reverse(s.time_ns)));
        out.push(NvmlSummary {
            device: d.key,
            samples: samples.len() as u64,
            total_bytes: d.total_memory_bytes.or(peak.total_bytes),
            peak_used_bytes: peak.used_bytes,
            peak_used_at_ns: peak.time_ns,
            peak_process_bytes: process_peak.and_then(|s| s.process_bytes),
            peak_process_at_ns: process_peak.map(|s| s.time_ns),
            min_free_bytes: samples.iter().filter_map(|s| s.free_bytes).min(),
            driver_reserved_bytes: samples.iter().rev().find_map(|s| s.driver_reserved_bytes),
            processes: process_peaks(rec, i),
        });
    }
    out
}
