//! Readings sampled while a program ran (`vramscope record`): NVML per GPU and per
//! process, and the host memory of the recorded process tree.

use super::DeviceIdx;

/// One NVML reading of one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuSample {
    /// When.
    pub time_ns: i64,
    /// Which GPU.
    pub device: DeviceIdx,
    /// Memory in use on the whole device (all processes, contexts, the driver).
    pub used_bytes: u64,
    /// Device memory total, where reported.
    pub total_bytes: Option<u64>,
    /// Memory used by the recorded process and its descendants, where NVML reports it.
    pub process_bytes: Option<u64>,
    /// Free memory on the device, where reported.
    pub free_bytes: Option<u64>,
    /// Memory the driver and firmware reserve (NVML's `reserved`, not the allocator's).
    pub driver_reserved_bytes: Option<u64>,
}

/// One NVML reading of one process of the recorded tree on one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuProcessSample {
    /// When.
    pub time_ns: i64,
    /// Which GPU.
    pub device: DeviceIdx,
    /// The process.
    pub pid: u32,
    /// Its memory on the GPU; `None` where NVML lists the process without its memory
    /// (MIG without privileges, WDDM).
    pub used_bytes: Option<u64>,
}

/// One reading of the recorded process tree's host memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSample {
    /// When.
    pub time_ns: i64,
    /// Resident set size of the process and its descendants (a page shared by N of them
    /// counts N times).
    pub rss_bytes: u64,
    /// Proportional set size of the same processes (a shared page counts 1/N in each), where
    /// read at this sample; read less often than RSS (it costs ~15 ms per GiB).
    pub pss_bytes: Option<u64>,
    /// How many processes the tree held, where known.
    pub processes: Option<u32>,
}
