//! The peaks a run is judged by (`check`, charts, comparisons of runs): per device the
//! allocator's (allocated, else reserved), NVML's per GPU (the process tree's where NVML
//! reports it, else the device's), or the host's resident memory.

use super::{DeviceSummary, Summary};
use crate::model::DeviceId;

/// Which measurement `check` judges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PeakSource {
    /// The allocator: peak allocated, else peak reserved (the default).
    #[default]
    Allocator,
    /// NVML's samples per GPU.
    Nvml,
    /// The host's resident memory.
    Host,
}

/// One judged peak: where, what and how much, and the op running at an allocated peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JudgedPeak<'a> {
    /// The device (the host: `cpu`).
    pub device: DeviceId,
    /// The peak.
    pub peak: DevicePeak,
    /// The op running at an allocated peak, where known.
    pub op: Option<&'a str>,
}

impl Summary {
    /// The peaks `source` gives, one per device that has one, in the summary's order.
    pub fn judged_peaks(&self, source: PeakSource) -> Vec<JudgedPeak<'_>> {
        match source {
            PeakSource::Allocator => (self.devices.iter())
                .filter_map(|d| {
                    let peak = d.judged_peak()?;
                    let op = (d.peak_allocated_op.as_deref())
                        .filter(|_| peak.kind == PeakKind::Allocated);
                    Some(JudgedPeak {
                        device: d.device,
                        peak,
                        op,
                    })
                })
                .collect(),
            PeakSource::Nvml => (self.nvml.iter())
                .map(|n| {
                    let (bytes, kind, at_ns) = match n.peak_process_bytes {
                        Some(b) => (b, PeakKind::NvmlProcess, n.peak_process_at_ns),
                        None => (
                            n.peak_used_bytes,
                            PeakKind::NvmlDevice,
                            Some(n.peak_used_at_ns),
                        ),
                    };
                    JudgedPeak {
                        device: n.device,
                        peak: DevicePeak {
                            bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
                            kind,
                            at_ns,
                        },
                        op: None,
                    }
                })
                .collect(),
            PeakSource::Host => (self.host_rss_peak_bytes.iter())
                .map(|&b| JudgedPeak {
                    device: DeviceId::CPU,
                    peak: DevicePeak {
                        bytes: i64::try_from(b).unwrap_or(i64::MAX),
                        kind: PeakKind::HostRss,
                        at_ns: None,
                    },
                    op: None,
                })
                .collect(),
        }
    }
}

/// Which of a device's peaks it is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeakKind {
    /// Peak allocated: the sources that record allocations.
    Allocated,
    /// Peak reserved: sources that see only the allocator's segments (Nsight).
    Reserved,
    /// NVML's peak memory of the recorded process tree on a GPU.
    NvmlProcess,
    /// NVML's peak memory used on a GPU (every process, the contexts, the driver).
    NvmlDevice,
    /// The recorded process tree's peak resident memory on the host.
    HostRss,
}

impl PeakKind {
    /// "peak allocated" / "peak reserved", as reports say it.
    pub fn as_str(self) -> &'static str {
        match self {
            PeakKind::Allocated => "peak allocated",
            PeakKind::Reserved => "peak reserved",
            PeakKind::NvmlProcess => "NVML peak of the process tree",
            PeakKind::NvmlDevice => "NVML peak used",
            PeakKind::HostRss => "peak host RSS",
        }
    }

    /// Its name in JSON: `allocated`, `reserved`, `nvml_process`, `nvml_device`, `host_rss`.
    pub fn key(self) -> &'static str {
        match self {
            PeakKind::Allocated => "allocated",
            PeakKind::Reserved => "reserved",
            PeakKind::NvmlProcess => "nvml_process",
            PeakKind::NvmlDevice => "nvml_device",
            PeakKind::HostRss => "host_rss",
        }
    }
}

/// The peak a device is judged by (`check`, charts, comparisons of runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePeak {
    /// Bytes at the peak.
    pub bytes: i64,
    /// Allocated or reserved.
    pub kind: PeakKind,
    /// When, ns on the recording's clock.
    pub at_ns: Option<i64>,
}

impl DeviceSummary {
    /// Peak allocated where the source records allocations, else peak reserved.
    pub fn judged_peak(&self) -> Option<DevicePeak> {
        match (self.peak_allocated_bytes, self.peak_reserved_bytes) {
            (Some(bytes), _) => Some(DevicePeak {
                bytes,
                kind: PeakKind::Allocated,
                at_ns: self.peak_allocated_at_ns,
            }),
            (None, Some(bytes)) => Some(DevicePeak {
                bytes,
                kind: PeakKind::Reserved,
                at_ns: self.peak_reserved_at_ns,
            }),
            (None, None) => None,
        }
    }
}
