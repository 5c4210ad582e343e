//! The NVML probe: device memory (used, free, total, driver-reserved) and the memory of each
//! process of the recorded tree, through nvml-wrapper, which loads `libnvidia-ml.so.1` (or
//! the library named) at run time: nothing to link.
//!
//! Per-process memory comes from the running compute and graphics process lists (a process
//! with both contexts is counted once). Under MIG the parent GPU lists processes without
//! their memory unless the caller is privileged, so each MIG instance (a MIG device handle)
//! is read as well and the tree's memory is summed over instances. A process NVML lists
//! without its memory ("not available": MIG, WDDM) is recorded with unknown bytes.

use std::collections::BTreeSet;
use std::ffi::OsStr;

use nvml_wrapper::Nvml;
use nvml_wrapper::device::Device;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;

use super::{GpuProbe, ProcessTree};
use crate::parse::recording::{DeviceHeader, GpuReading, MigReading, PidReading};

/// NVML, opened.
pub struct NvmlProbe {
    nvml: Nvml,
    count: u32,
    /// Per GPU, whether MIG mode is on (read once: changing it needs a GPU reset).
    mig: Vec<bool>,
    notes: Vec<String>,
    said: BTreeSet<String>,
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
        let mig = (0..count)
            .map(|i| {
                nvml.device_by_index(i)
                    .and_then(|d| d.mig_mode())
                    .is_ok_and(|m| m.current == 1)
            })
            .collect();
        Ok(NvmlProbe {
            nvml,
            count,
            mig,
            notes: Vec::new(),
            said: BTreeSet::new(),
        })
    }

    /// The driver's version string.
    pub fn driver_version(&self) -> Option<String> {
        self.nvml.sys_driver_version().ok()
    }

    /// NVML's version string.
    pub fn nvml_version(&self) -> Option<String> {
        self.nvml.sys_nvml_version().ok()
    }

    fn note_once(&mut self, note: String) {
        if self.said.insert(note.clone()) {
            self.notes.push(note);
        }
    }
}

/// The tree's processes in a device's compute and graphics lists: total bytes (`None` when
/// the lists could not be read, or every tree process's memory is unavailable) and per pid.
struct Attribution {
    procs: Option<u64>,
    pids: Vec<PidReading>,
    unavailable: bool,
    error: Option<NvmlError>,
}

fn attribute(device: &Device<'_>, tree: &mut ProcessTree) -> Attribution {
    let mut pids: Vec<PidReading> = Vec::new();
    let mut error = None;
    let mut listed: Vec<ProcessInfo> = Vec::new();
    for list in [
        device.running_compute_processes(),
        device.running_graphics_processes(),
    ] {
        match list {
            Ok(l) => listed.extend(l),
            Err(e) => error = error.or(Some(e)),
        }
    }
    for p in listed {
        if pids.iter().any(|&(pid, _)| pid == p.pid) || !tree.contains(p.pid) {
            continue;
        }
        let bytes = match p.used_gpu_memory {
            UsedGpuMemory::Used(b) => Some(b),
            UsedGpuMemory::Unavailable => None,
        };
        pids.push((p.pid, bytes));
    }
    pids.sort_unstable();
    let known: Vec<u64> = pids.iter().filter_map(|&(_, b)| b).collect();
    let unavailable = pids.iter().any(|&(_, b)| b.is_none());
    let procs = if error.is_some() && pids.is_empty() || known.is_empty() && unavailable {
        None
    } else {
        Some(known.iter().sum())
    };
    Attribution {
        procs,
        pids,
        unavailable,
        error,
    }
}

impl GpuProbe for NvmlProbe {
    fn devices(&self) -> Vec<DeviceHeader> {
        (0..self.count)
            .map(|index| {
                let device = self.nvml.device_by_index(index).ok();
                let mig = self.mig.get(index as usize).copied().unwrap_or(false);
                DeviceHeader {
                    index,
                    name: device.as_ref().and_then(|d| d.name().ok()),
                    total_bytes: device
                        .as_ref()
                        .and_then(|d| d.memory_info().ok())
                        .map(|m| m.total),
                    uuid: device.as_ref().and_then(|d| d.uuid().ok()),
                    mig: mig.then_some(true),
                }
            })
            .collect()
    }

    fn read(&mut self, tree: &mut ProcessTree) -> Vec<GpuReading> {
        let mut out = Vec::with_capacity(self.count as usize);
        for index in 0..self.count {
            let mig = self.mig.get(index as usize).copied().unwrap_or(false);
            let reading = match self.nvml.device_by_index(index) {
                Ok(device) if mig => read_mig(&device, index, tree),
                Ok(device) => read_plain(&device, index, tree),
                Err(e) => Err(e),
            };
            match reading {
                Ok((reading, notes)) => {
                    out.push(reading);
                    for n in notes {
                        self.note_once(n);
                    }
                }
                Err(e) => self.note_once(format!("GPU {index}: cannot read memory: {e}")),
            }
        }
        out
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

type Read = Result<(GpuReading, Vec<String>), NvmlError>;

/// A GPU without MIG: its memory and its process lists.
fn read_plain(device: &Device<'_>, index: u32, tree: &mut ProcessTree) -> Read {
    let memory = device.memory_info()?;
    let a = attribute(device, tree);
    let mut notes = Vec::new();
    if let Some(e) = &a.error {
        notes.push(format!(
            "GPU {index}: process list unavailable ({e}): no per-process memory"
        ));
    }
    if a.unavailable {
        notes.push(format!(
            "GPU {index}: NVML lists processes of the recorded program without their memory (\"not available\")"
        ));
    }
    let reading = GpuReading {
        index,
        used: memory.used,
        total: Some(memory.total),
        procs: a.procs,
        free: Some(memory.free),
        driver_reserved: Some(memory.reserved),
        pids: a.pids,
        mig: Vec::new(),
    };
    Ok((reading, notes))
}

/// A GPU in MIG mode: the whole GPU's memory (or, where the parent cannot be read without
/// privileges, the sum of its instances) and each instance's memory and processes.
fn read_mig(device: &Device<'_>, index: u32, tree: &mut ProcessTree) -> Read {
    let mut instances = Vec::new();
    let mut pids: Vec<PidReading> = Vec::new();
    let (mut used, mut total, mut procs) = (0u64, 0u64, None::<u64>);
    let mut notes = Vec::new();
    let slots = device.mig_device_count().unwrap_or(0);
    for slot in 0..slots {
        // Empty slots answer NotFound: a GPU holds fewer instances than its maximum.
        let Ok(instance) = device.mig_device_by_index(slot) else {
            continue;
        };
        let memory = instance.memory_info().ok();
        let a = attribute(&instance, tree);
        if a.unavailable {
            notes.push(format!(
                "GPU {index} MIG {slot}: NVML lists processes of the recorded program without their memory"
            ));
        }
        used += memory.as_ref().map_or(0, |m| m.used);
        total += memory.as_ref().map_or(0, |m| m.total);
        if let Some(p) = a.procs {
            procs = Some(procs.unwrap_or(0) + p);
        }
        pids.extend(a.pids);
        instances.push(MigReading {
            slot,
            used: memory.as_ref().map(|m| m.used),
            total: memory.as_ref().map(|m| m.total),
            procs: a.procs,
        });
    }
    pids.sort_unstable();
    pids.dedup_by_key(|p| p.0);
    let reading = match device.memory_info() {
        Ok(m) => GpuReading {
            index,
            used: m.used,
            total: Some(m.total),
            procs,
            free: Some(m.free),
            driver_reserved: Some(m.reserved),
            pids,
            mig: instances,
        },
        Err(e) if !instances.is_empty() => {
            notes.push(format!(
                "GPU {index}: whole-GPU memory unreadable under MIG ({e}): the sum of its instances is recorded"
            ));
            GpuReading {
                index,
                used,
                total: Some(total),
                procs,
                free: Some(total.saturating_sub(used)),
                driver_reserved: None,
                pids,
                mig: instances,
            }
        }
        Err(e) => return Err(e),
    };
    Ok((reading, notes))
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
