//! The fake's script: driver facts, devices with a memory curve over time, and the processes
//! each device reports, read once at `nvmlInit` from `VRAMSCOPE_FAKE_NVML_SCRIPT` (a path to
//! a JSON file, or the JSON itself when it starts with `{`).
//!
//! Curves are step functions of the milliseconds since the first `nvmlInit`: `[[ms, bytes],
//! …]`, each value holding from its time until the next point's. Processes are named by pid,
//! or by an exact element of their command line (`argv`), which the fake resolves from /proc
//! on every query, so a test can make "the worker its child started" use GPU memory without
//! knowing its pid — and name processes outside the recorded tree that must not be counted.

use std::fs;

use serde::Deserialize;

/// The environment variable holding the script (a path, or inline JSON).
pub const SCRIPT_ENV: &str = "VRAMSCOPE_FAKE_NVML_SCRIPT";

/// A memory curve: `(ms since init, bytes)` points, sorted by time.
pub type Curve = Vec<(u64, u64)>;

/// The value of a step curve at `ms` (0 before the first point).
pub fn value_at(curve: &Curve, ms: u64) -> u64 {
    let i = curve.partition_point(|&(t, _)| t <= ms);
    i.checked_sub(1)
        .and_then(|i| curve.get(i))
        .map_or(0, |&(_, v)| v)
}

/// The whole script.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// `nvmlSystemGetDriverVersion`.
    #[serde(default = "default_driver")]
    pub driver_version: String,
    /// `nvmlSystemGetNVMLVersion`.
    #[serde(default = "default_nvml")]
    pub nvml_version: String,
    /// An NVML return code `nvmlInit_v2` fails with (e.g. 9, driver not loaded).
    #[serde(default)]
    pub init_error: Option<u32>,
    /// The GPUs.
    #[serde(default)]
    pub devices: Vec<DeviceScript>,
}

fn default_driver() -> String {
    "550.54.15".into()
}

fn default_nvml() -> String {
    "12.550.54.15".into()
}

/// One GPU.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceScript {
    /// Marketing name.
    pub name: String,
    /// `GPU-…` UUID.
    pub uuid: String,
    /// Total memory.
    pub total: u64,
    /// Memory the driver reserves (`nvmlMemory_v2_t.reserved`).
    #[serde(default)]
    pub reserved: u64,
    /// Used memory over time.
    #[serde(default)]
    pub used: Curve,
    /// Processes with a context on this GPU.
    #[serde(default)]
    pub processes: Vec<ProcessScript>,
    /// An NVML return code every process-list query fails with (e.g. 3, not supported).
    #[serde(default)]
    pub processes_error: Option<u32>,
    /// An NVML return code `nvmlDeviceGetMemoryInfo_v2` fails with on this (parent) device.
    #[serde(default)]
    pub memory_error: Option<u32>,
    /// MIG instances: present means MIG mode is on (an empty list: on, no instances);
    /// absent means the GPU does not support MIG.
    #[serde(default)]
    pub mig: Option<Vec<MigScript>>,
}

/// One MIG instance (a MIG device handle of a parent GPU).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigScript {
    /// Name, e.g. "NVIDIA H200 MIG 1g.18gb".
    pub name: String,
    /// `MIG-…` UUID.
    pub uuid: String,
    /// Total memory of the instance.
    pub total: u64,
    /// Used memory over time.
    #[serde(default)]
    pub used: Curve,
    /// Processes on this instance.
    #[serde(default)]
    pub processes: Vec<ProcessScript>,
}

/// Which process lists report a process.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProcessKind {
    /// `nvmlDeviceGetComputeRunningProcesses_v3` only.
    #[default]
    Compute,
    /// `nvmlDeviceGetGraphicsRunningProcesses_v3` only.
    Graphics,
    /// Both lists (a process with compute and graphics contexts).
    Both,
}

/// A process using the GPU.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessScript {
    /// A fixed pid (a process outside the recorded tree, or one that does not exist).
    #[serde(default)]
    pub pid: Option<u32>,
    /// Every running process one of whose argv elements is exactly this string (the fake's
    /// own process excluded).
    #[serde(default)]
    pub argv_has: Option<String>,
    /// Its memory over time; absent: `NVML_VALUE_NOT_AVAILABLE` (as under MIG without
    /// privileges, or WDDM).
    #[serde(default)]
    pub used: Option<Curve>,
    /// Which lists report it.
    #[serde(default)]
    pub kind: ProcessKind,
    /// MIG GPU instance id reported for it.
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
}

/// Read the script named by [`SCRIPT_ENV`].
pub fn load() -> Result<Script, String> {
    let raw = std::env::var(SCRIPT_ENV).map_err(|_| format!("{SCRIPT_ENV} is not set"))?;
    let text = if raw.trim_start().starts_with('{') {
        raw
    } else {
        fs::read_to_string(&raw).map_err(|e| format!("{raw}: {e}"))?
    };
    let mut script: Script =
        serde_json::from_str(&text).map_err(|e| format!("{SCRIPT_ENV}: {e}"))?;
    for d in &mut script.devices {
        d.used.sort_by_key(|p| p.0);
        for m in d.mig.iter_mut().flatten() {
            m.used.sort_by_key(|p| p.0);
        }
    }
    Ok(script)
}

/// The pids a process entry stands for now.
pub fn resolve(p: &ProcessScript) -> Vec<u32> {
    if let Some(pid) = p.pid {
        return vec![pid];
    }
    let Some(want) = p.argv_has.as_deref() else {
        return Vec::new();
    };
    let own = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != own)
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == want.as_bytes()))
        })
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_curves_hold_each_value_until_the_next_point() {
        let c: Curve = vec![(0, 10), (100, 30), (250, 20)];
        assert_eq!(value_at(&c, 0), 10);
        assert_eq!(value_at(&c, 99), 10);
        assert_eq!(value_at(&c, 100), 30);
        assert_eq!(value_at(&c, 1000), 20);
        assert_eq!(value_at(&vec![(50, 1)], 10), 0);
        assert_eq!(value_at(&Vec::new(), 10), 0);
    }

    #[test]
    fn processes_resolve_by_pid_and_by_argv() {
        let by_pid = ProcessScript {
            pid: Some(4242),
            argv_has: None,
            used: None,
            kind: ProcessKind::Compute,
            gpu_instance_id: None,
        };
        assert_eq!(resolve(&by_pid), [4242]);
        let mut child = std::process::Command::new("sleep")
            .arg("7.25")
            .spawn()
            .expect("spawn sleep");
        let by_argv = ProcessScript {
            pid: None,
            argv_has: Some("7.25".into()),
            ..by_pid
        };
        let found = resolve(&by_argv);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, [child.id()]);
    }
}
