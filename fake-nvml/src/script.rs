//! The fake's script: driver facts, devices with a memory curve over time, and the processes
//! each device reports, read once at `nvmlInit` from `VRAMSCOPE_FAKE_NVML_SCRIPT` (a path to
//! a JSON file, or the JSON itself when it starts with `{`).
//!
//! Curves are step functions of the milliseconds since the first `nvmlInit`: `[[ms, bytes],
//! …]`, each value holding from its time until the next point's. Processes are named by pid,
//! or by an exact element of their command line (`argv`), which the fake resolves from /proc
//! on every query, so a test can make "the worker its child started" use GPU memory without
//! knowing its pid — and name processes outside the recorded tree that must not be counted.

use std::collections::HashMap;
use std::fs;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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
    /// own process excluded). Each query walks /proc: fine for tests, too costly for the
    /// overhead benchmark, which uses `children_of_loader`.
    #[serde(default)]
    pub argv_has: Option<String>,
    /// The direct children of the process that loaded the fake (for vramscope: the recorded
    /// program), read cheaply from /proc/self/task/*/children.
    #[serde(default)]
    pub children_of_loader: bool,
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

/// How long a resolved pid list is reused. One vramscope sample asks every GPU's two lists
/// twice (count, then data) within well under a millisecond; walking /proc for each of those
/// calls would make the fake, not vramscope, the cost the overhead benchmark measures.
const RESOLVE_TTL: Duration = Duration::from_millis(5);

/// Resolved pid lists by what they name, with when they were resolved.
type Resolved = HashMap<String, (Instant, Vec<u32>)>;

/// The pids a process entry stands for now (cached for [`RESOLVE_TTL`]).
pub fn resolve(p: &ProcessScript) -> Vec<u32> {
    static CACHE: OnceLock<Mutex<Resolved>> = OnceLock::new();
    if p.pid.is_some() {
        return resolve_now(p);
    }
    // Entries naming the same processes share one answer.
    let key = match (&p.argv_has, p.children_of_loader) {
        (Some(arg), _) => format!("argv {arg}"),
        (None, true) => "children".to_owned(),
        (None, false) => return Vec::new(),
    };
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, pids)) = cache.get(&key)
        && at.elapsed() < RESOLVE_TTL
    {
        return pids.clone();
    }
    let pids = resolve_now(p);
    cache.insert(key, (Instant::now(), pids.clone()));
    pids
}

fn resolve_now(p: &ProcessScript) -> Vec<u32> {
    if let Some(pid) = p.pid {
        return vec![pid];
    }
    if p.children_of_loader {
        return children_of_self();
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

/// The direct children of this process (every thread's `children` file).
fn children_of_self() -> Vec<u32> {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = tasks
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort_unstable();
    out.dedup();
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
            children_of_loader: false,
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
        // The parent may run before the child's new argv is in place (vfork returns during
        // exec): ask until it shows, as NVML's clients do sample after sample.
        let mut found = Vec::new();
        for _ in 0..200 {
            found = resolve(&by_argv);
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let children = resolve(&ProcessScript {
            pid: None,
            argv_has: None,
            children_of_loader: true,
            used: None,
            kind: ProcessKind::Compute,
            gpu_instance_id: None,
        });
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found, [child.id()]);
        assert!(children.contains(&child.id()), "{children:?}");
    }
}
