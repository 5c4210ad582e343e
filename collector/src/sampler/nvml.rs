//! The NVML probe: device memory (used/total) and per-process memory of the recorded tree,
//! through nvml-wrapper, which loads `libnvidia-ml.so.1` at run time (nothing to link).

use std::ffi::OsStr;

use nvml_wrapper::Nvml;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

use super::GpuProbe;
use crate::parse::recording::{DeviceHeader, GpuReading};

/// NVML, opened.
pub struct NvmlProbe {
    nvml: Nvml,
    count: u32,
}

/// Why NVML could not be used, in one line for the user.
pub fn describe(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(inner) => {
            format!("no NVIDIA driver library (libnvidia-ml.so.1) could be loaded: {inner}")
        }
        NvmlError::DriverNotLoaded => "the NVIDIA driver is not loaded".into(),
        NvmlError::NoPermission => "no permission to query the NVIDIA driver".into(),
        other => format!("NVML failed: {other}"),
    }
}

impl NvmlProbe {
    /// Open NVML from `lib_path`, or from the system's library.
    pub fn open(lib_path: Option<&OsStr>) -> Result<NvmlProbe, String> {
        let nvml = match lib_path {
            Some(p) => Nvml::builder().lib_path(p).init(),
            None => Nvml::init(),
        }
        .map_err(|e| describe(&e))?;
        let count = nvml.device_count().map_err(|e| describe(&e))?;
        Ok(NvmlProbe { nvml, count })
    }

    /// The driver's version string.
    pub fn driver_version(&self) -> Option<String> {
        self.nvml.sys_driver_version().ok()
    }

    /// NVML's version string.
    pub fn nvml_version(&self) -> Option<String> {
        self.nvml.sys_nvml_version().ok()
    }
}

impl GpuProbe for NvmlProbe {
    fn devices(&self) -> Vec<DeviceHeader> {
        (0..self.count)
            .map(|index| {
                let device = self.nvml.device_by_index(index).ok();
                DeviceHeader {
                    index,
                    name: device.as_ref().and_then(|d| d.name().ok()),
                    total_bytes: device
                        .as_ref()
                        .and_then(|d| d.memory_info().ok())
                        .map(|m| m.total),
                    uuid: device.as_ref().and_then(|d| d.uuid().ok()),
                }
            })
            .collect()
    }

    fn read(&mut self, tree: &[u32]) -> Vec<GpuReading> {
        let mut out = Vec::with_capacity(self.count as usize);
        for index in 0..self.count {
            let Ok(device) = self.nvml.device_by_index(index) else {
                continue;
            };
            let Ok(memory) = device.memory_info() else {
                continue;
            };
            // Compute and graphics lists can both name a process; count it once.
            let mut seen = Vec::new();
            let mut procs: Option<u64> = None;
            let lists = [
                device.running_compute_processes(),
                device.running_graphics_processes(),
            ];
            for p in lists.into_iter().flatten().flatten() {
                if !tree.contains(&p.pid) || seen.contains(&p.pid) {
                    continue;
                }
                seen.push(p.pid);
                if let UsedGpuMemory::Used(bytes) = p.used_gpu_memory {
                    procs = Some(procs.unwrap_or(0) + bytes);
                }
            }
            out.push(GpuReading {
                index,
                used: memory.used,
                total: Some(memory.total),
                procs,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_clear_message() {
        let err = NvmlProbe::open(Some(OsStr::new("/nonexistent/libnvidia-ml.so.1")))
            .err()
            .expect("no such library");
        assert!(err.contains("libnvidia-ml"), "{err}");
    }
}
