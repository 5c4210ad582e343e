//! Sorting the table as torch's `table(sort_by=...)` does, and the default key.

use super::OpRow;

/// Sort keys of torch's `table(sort_by=...)`, for the memory columns and the call count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// `self_cuda_memory_usage` (also `self_device_memory_usage`).
    SelfDeviceMemory,
    /// `cuda_memory_usage`.
    DeviceMemory,
    /// `self_cpu_memory_usage`.
    SelfCpuMemory,
    /// `cpu_memory_usage`.
    CpuMemory,
    /// `count`.
    Calls,
}

impl SortKey {
    /// Parse torch's spelling (`cuda`, `device`, `xpu` and `privateuse1` are synonyms).
    pub fn parse(s: &str) -> Option<SortKey> {
        let s = s
            .replace("cuda", "device")
            .replace("xpu", "device")
            .replace("privateuse1", "device");
        Some(match s.as_str() {
            "self_device_memory_usage" => SortKey::SelfDeviceMemory,
            "device_memory_usage" => SortKey::DeviceMemory,
            "self_cpu_memory_usage" => SortKey::SelfCpuMemory,
            "cpu_memory_usage" => SortKey::CpuMemory,
            "count" | "calls" => SortKey::Calls,
            _ => return None,
        })
    }

    /// The key `table` sorts by when the user names none: self device memory when any
    /// row has device memory, else self CPU memory (what torch users sort by).
    pub fn default_for(rows: &[OpRow]) -> SortKey {
        if rows.iter().any(|r| r.device_memory_usage != 0) {
            SortKey::SelfDeviceMemory
        } else {
            SortKey::SelfCpuMemory
        }
    }

    /// Torch's spelling of the key, as `table` prints it.
    pub fn torch_name(self) -> &'static str {
        match self {
            SortKey::SelfDeviceMemory => "self_cuda_memory_usage",
            SortKey::DeviceMemory => "cuda_memory_usage",
            SortKey::SelfCpuMemory => "self_cpu_memory_usage",
            SortKey::CpuMemory => "cpu_memory_usage",
            SortKey::Calls => "count",
        }
    }

    fn value(self, r: &OpRow) -> i128 {
        match self {
            SortKey::SelfDeviceMemory => i128::from(r.self_device_memory_usage),
            SortKey::DeviceMemory => i128::from(r.device_memory_usage),
            SortKey::SelfCpuMemory => i128::from(r.self_cpu_memory_usage),
            SortKey::CpuMemory => i128::from(r.cpu_memory_usage),
            SortKey::Calls => i128::from(r.calls),
        }
    }
}

/// Sort rows largest first, keeping the original order among equals — as torch's
/// `sorted(..., reverse=True)` does.
pub fn sort_rows(rows: &mut [OpRow], key: SortKey) {
    rows.sort_by_key(|r| std::cmp::Reverse(key.value(r)));
}
