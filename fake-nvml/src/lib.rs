//! A fake `libnvidia-ml.so` for vramscope's tests: CI has no GPU, so the tests load this
//! library through nvml-wrapper's real loading path (`vramscope record --nvml-lib PATH`) and
//! it answers the NVML calls vramscope makes from a script (see [`script`]): devices, a
//! memory curve over time, running processes (some in the recorded tree, some foreign, some
//! with "not available" memory), MIG instances, and failures on demand.
//!
//! Only the symbols nvml-wrapper 0.13 calls for the functions vramscope uses are exported,
//! with NVML's C signatures (nvml-wrapper-sys 0.10's bindings: `nvmlMemory_v2_t`,
//! `nvmlProcessInfo_t` = v2 layout, `_v2`/`_v3` entry points). A call nvml-wrapper makes that
//! is not here fails as a missing symbol, as it would with an old driver.

pub mod script;

use std::ffi::{c_uint, c_void};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use script::{DeviceScript, ProcessKind, ProcessScript, Script};

/// `nvmlReturn_t` values used here (nvml.h).
mod code {
    pub const SUCCESS: u32 = 0;
    pub const UNINITIALIZED: u32 = 1;
    pub const INVALID_ARGUMENT: u32 = 2;
    pub const NOT_SUPPORTED: u32 = 3;
    pub const NOT_FOUND: u32 = 6;
    pub const INSUFFICIENT_SIZE: u32 = 7;
    pub const ARGUMENT_VERSION_MISMATCH: u32 = 25;
    pub const UNKNOWN: u32 = 999;
}

/// `NVML_VALUE_NOT_AVAILABLE` as an unsigned long long.
const VALUE_NOT_AVAILABLE: u64 = u64::MAX;
/// `nvmlDeviceGetMaxMigDeviceCount` on an H100/H200: up to 7 instances.
const MAX_MIG_DEVICES: u32 = 7;

/// `nvmlMemory_v2_t`.
#[repr(C)]
pub struct MemoryV2 {
    version: c_uint,
    total: u64,
    reserved: u64,
    free: u64,
    used: u64,
}

/// `NVML_STRUCT_VERSION(Memory, 2)`.
const MEMORY_V2_VERSION: c_uint = (size_of::<MemoryV2>() | (2 << 24)) as c_uint;

/// `nvmlProcessInfo_t` (the v2 layout, used by the `_v3` functions).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: u64,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

struct State {
    script: Script,
    start: Instant,
    initialised: u32,
}

fn state() -> MutexGuard<'static, Option<State>> {
    static STATE: OnceLock<Mutex<Option<State>>> = OnceLock::new();
    let m = STATE.get_or_init(|| Mutex::new(None));
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A device handle: `parent + 1` in the low byte, `mig slot + 1` in the next (never
/// dereferenced by nvml-wrapper; NVML handles are opaque pointers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle {
    device: usize,
    mig: Option<usize>,
}

impl Handle {
    fn to_ptr(self) -> *mut c_void {
        let raw = (self.device + 1) | self.mig.map_or(0, |m| (m + 1) << 8);
        std::ptr::without_provenance_mut(raw)
    }

    fn from_ptr(p: *mut c_void) -> Option<Handle> {
        let raw = p.addr();
        let device = (raw & 0xff).checked_sub(1)?;
        let mig = (raw >> 8).checked_sub(1);
        Some(Handle { device, mig })
    }
}

/// What one handle answers with.
struct Target<'s> {
    name: &'s str,
    uuid: &'s str,
    total: u64,
    reserved: u64,
    used: u64,
    processes: &'s [ProcessScript],
    processes_error: Option<u32>,
    memory_error: Option<u32>,
    /// A parent GPU in MIG mode: per-process memory is not available there.
    mig_parent: bool,
}

fn target<'s>(s: &'s State, h: Handle) -> Option<Target<'s>> {
    let d: &DeviceScript = s.script.devices.get(h.device)?;
    let ms = u64::try_from(s.start.elapsed().as_millis()).unwrap_or(u64::MAX);
    Some(match h.mig {
        None => Target {
            name: &d.name,
            uuid: &d.uuid,
            total: d.total,
            reserved: d.reserved,
            used: script::value_at(&d.used, ms),
            processes: &d.processes,
            processes_error: d.processes_error,
            memory_error: d.memory_error,
            mig_parent: d.mig.is_some(),
        },
        Some(slot) => {
            let m = d.mig.as_ref()?.get(slot)?;
            Target {
                name: &m.name,
                uuid: &m.uuid,
                total: m.total,
                reserved: 0,
                used: script::value_at(&m.used, ms),
                processes: &m.processes,
                processes_error: d.processes_error,
                memory_error: None,
                mig_parent: false,
            }
        }
    })
}

/// Run `f` on the handle's target, or return the NVML error.
fn with_target(device: *mut c_void, f: impl FnOnce(&Target<'_>, u64) -> u32) -> u32 {
    let guard = state();
    let Some(s) = guard.as_ref().filter(|s| s.initialised > 0) else {
        return code::UNINITIALIZED;
    };
    let ms = u64::try_from(s.start.elapsed().as_millis()).unwrap_or(u64::MAX);
    match Handle::from_ptr(device).and_then(|h| target(s, h)) {
        Some(t) => f(&t, ms),
        None => code::INVALID_ARGUMENT,
    }
}

/// The processes a target reports in one list, now.
fn process_list(t: &Target<'_>, ms: u64, graphics: bool) -> Vec<ProcessInfo> {
    let mut out = Vec::new();
    for p in t.processes {
        let listed = match p.kind {
            ProcessKind::Compute => !graphics,
            ProcessKind::Graphics => graphics,
            ProcessKind::Both => true,
        };
        if !listed {
            continue;
        }
        let used = match &p.used {
            Some(curve) if !t.mig_parent => script::value_at(curve, ms),
            _ => VALUE_NOT_AVAILABLE,
        };
        for pid in script::resolve(p) {
            out.push(ProcessInfo {
                pid,
                used_gpu_memory: used,
                gpu_instance_id: p.gpu_instance_id.unwrap_or(u32::MAX),
                compute_instance_id: p.gpu_instance_id.map_or(u32::MAX, |_| 0),
            });
        }
    }
    out
}

#[allow(unsafe_code)]
mod ffi;
