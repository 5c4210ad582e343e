//! The exported NVML entry points. Every pointer argument is checked for null; buffers are
//! written only within the length the caller gave. Nothing here panics (a panic across
//! `extern "C"` aborts the test).

use std::ffi::{c_char, c_uint, c_void};
use std::ptr;

use super::{
    Handle, MAX_MIG_DEVICES, MEMORY_V2_VERSION, MemoryV2, ProcessInfo, State, code, process_list,
    script, state, with_target,
};

type Ret = c_uint;

/// Write `s` and a NUL into `buf` of `len` bytes.
///
/// # Safety
/// `buf` must be null or valid for `len` bytes.
unsafe fn write_str(s: &str, buf: *mut c_char, len: c_uint) -> Ret {
    if buf.is_null() {
        return code::INVALID_ARGUMENT;
    }
    let bytes = s.as_bytes();
    if bytes.len() + 1 > len as usize {
        return code::INSUFFICIENT_SIZE;
    }
    // SAFETY: the caller gave `len` bytes and we write `bytes.len() + 1 <= len`.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    code::SUCCESS
}

/// Write `value` through `out`.
///
/// # Safety
/// `out` must be null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, value: T) -> Ret {
    if out.is_null() {
        return code::INVALID_ARGUMENT;
    }
    // SAFETY: non-null and valid by the caller's contract.
    unsafe { out.write(value) };
    code::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> Ret {
    let mut guard = state();
    if let Some(s) = guard.as_mut() {
        s.initialised += 1;
        return code::SUCCESS;
    }
    match script::load() {
        Ok(script) => {
            if let Some(e) = script.init_error {
                return e;
            }
            *guard = Some(State {
                script,
                start: std::time::Instant::now(),
                initialised: 1,
            });
            code::SUCCESS
        }
        Err(e) => {
            eprintln!("fake libnvidia-ml: {e}");
            code::UNKNOWN
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> Ret {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> Ret {
    let mut guard = state();
    match guard.as_mut() {
        Some(s) if s.initialised > 0 => {
            s.initialised -= 1;
            code::SUCCESS
        }
        _ => code::UNINITIALIZED,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: Ret) -> *const c_char {
    let s: &'static [u8] = match result {
        code::SUCCESS => b"Success\0",
        code::UNINITIALIZED => b"Uninitialized\0",
        code::INVALID_ARGUMENT => b"Invalid Argument\0",
        code::NOT_SUPPORTED => b"Not Supported\0",
        4 => b"Insufficient Permissions\0",
        code::NOT_FOUND => b"Not Found\0",
        code::INSUFFICIENT_SIZE => b"Insufficient Size\0",
        9 => b"Driver Not Loaded\0",
        code::ARGUMENT_VERSION_MISMATCH => b"Argument Version Mismatch\0",
        _ => b"Unknown Error\0",
    };
    s.as_ptr().cast()
}

/// # Safety
/// `version` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> Ret {
    let guard = state();
    match guard.as_ref() {
        // SAFETY: forwarded caller contract.
        Some(s) => unsafe { write_str(&s.script.driver_version, version, length) },
        None => code::UNINITIALIZED,
    }
}

/// # Safety
/// `version` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(version: *mut c_char, length: c_uint) -> Ret {
    let guard = state();
    match guard.as_ref() {
        // SAFETY: forwarded caller contract.
        Some(s) => unsafe { write_str(&s.script.nvml_version, version, length) },
        None => code::UNINITIALIZED,
    }
}

/// # Safety
/// `count` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> Ret {
    let guard = state();
    match guard.as_ref() {
        // SAFETY: forwarded caller contract.
        Some(s) => unsafe { put(count, s.script.devices.len() as c_uint) },
        None => code::UNINITIALIZED,
    }
}

/// # Safety
/// `device` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut *mut c_void,
) -> Ret {
    let guard = state();
    let Some(s) = guard.as_ref() else {
        return code::UNINITIALIZED;
    };
    if index as usize >= s.script.devices.len() {
        return code::INVALID_ARGUMENT;
    }
    let h = Handle {
        device: index as usize,
        mig: None,
    };
    // SAFETY: forwarded caller contract.
    unsafe { put(device, h.to_ptr()) }
}

/// # Safety
/// `name` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: *mut c_void,
    name: *mut c_char,
    length: c_uint,
) -> Ret {
    // SAFETY: forwarded caller contract.
    with_target(device, |t, _| unsafe { write_str(t.name, name, length) })
}

/// # Safety
/// `uuid` must be valid for `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: *mut c_void,
    uuid: *mut c_char,
    length: c_uint,
) -> Ret {
    // SAFETY: forwarded caller contract.
    with_target(device, |t, _| unsafe { write_str(t.uuid, uuid, length) })
}

/// # Safety
/// `memory` must be valid for a read and a write of `nvmlMemory_v2_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: *mut c_void,
    memory: *mut MemoryV2,
) -> Ret {
    if memory.is_null() {
        return code::INVALID_ARGUMENT;
    }
    // SAFETY: non-null and valid by the caller's contract.
    if unsafe { (*memory).version } != MEMORY_V2_VERSION {
        return code::ARGUMENT_VERSION_MISMATCH;
    }
    with_target(device, |t, _| {
        if let Some(e) = t.memory_error {
            return e;
        }
        let used = t.used.min(t.total.saturating_sub(t.reserved));
        let value = MemoryV2 {
            version: MEMORY_V2_VERSION,
            total: t.total,
            reserved: t.reserved,
            free: t.total - t.reserved - used,
            used,
        };
        // SAFETY: as above.
        unsafe { put(memory, value) }
    })
}

/// The two-call protocol of NVML's process lists: with too small a buffer (or none) the
/// count needed comes back with `INSUFFICIENT_SIZE`.
///
/// # Safety
/// `count` must be valid; `infos` valid for `*count` entries when not null.
unsafe fn processes(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
    graphics: bool,
) -> Ret {
    if count.is_null() {
        return code::INVALID_ARGUMENT;
    }
    with_target(device, |t, ms| {
        if let Some(e) = t.processes_error {
            return e;
        }
        let list = process_list(t, ms, graphics);
        // SAFETY: `count` is non-null and valid.
        let room = unsafe { *count } as usize;
        unsafe { *count = list.len() as c_uint };
        if list.is_empty() {
            return code::SUCCESS;
        }
        if infos.is_null() || room < list.len() {
            return code::INSUFFICIENT_SIZE;
        }
        // SAFETY: `infos` holds `room >= list.len()` entries.
        unsafe { ptr::copy_nonoverlapping(list.as_ptr(), infos, list.len()) };
        code::SUCCESS
    })
}

/// # Safety
/// See [`processes`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> Ret {
    // SAFETY: forwarded caller contract.
    unsafe { processes(device, count, infos, false) }
}

/// # Safety
/// See [`processes`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: *mut c_void,
    count: *mut c_uint,
    infos: *mut ProcessInfo,
) -> Ret {
    // SAFETY: forwarded caller contract.
    unsafe { processes(device, count, infos, true) }
}

/// # Safety
/// `current` and `pending` must be valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: *mut c_void,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> Ret {
    let mode = {
        let guard = state();
        let Some(s) = guard.as_ref() else {
            return code::UNINITIALIZED;
        };
        match Handle::from_ptr(device).and_then(|h| s.script.devices.get(h.device)) {
            Some(d) => d.mig.is_some(),
            None => return code::INVALID_ARGUMENT,
        }
    };
    let supported = with_target(device, |t, _| {
        if t.mig_parent {
            code::SUCCESS
        } else {
            code::NOT_SUPPORTED
        }
    });
    if !mode || supported != code::SUCCESS {
        return code::NOT_SUPPORTED;
    }
    // SAFETY: forwarded caller contract.
    unsafe {
        let r = put(current, 1);
        if r != code::SUCCESS {
            return r;
        }
        put(pending, 1)
    }
}

/// # Safety
/// `count` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: *mut c_void,
    count: *mut c_uint,
) -> Ret {
    let r = with_target(device, |t, _| {
        if t.mig_parent {
            code::SUCCESS
        } else {
            code::NOT_SUPPORTED
        }
    });
    if r != code::SUCCESS {
        return r;
    }
    // SAFETY: forwarded caller contract.
    unsafe { put(count, MAX_MIG_DEVICES) }
}

/// # Safety
/// `mig_device` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: *mut c_void,
    index: c_uint,
    mig_device: *mut *mut c_void,
) -> Ret {
    let Some(parent) = Handle::from_ptr(device).filter(|h| h.mig.is_none()) else {
        return code::INVALID_ARGUMENT;
    };
    let child = Handle {
        device: parent.device,
        mig: Some(index as usize),
    };
    let exists = {
        let guard = state();
        let Some(s) = guard.as_ref() else {
            return code::UNINITIALIZED;
        };
        super::target(s, child).is_some()
    };
    if !exists {
        // Slots without an instance, as on a real GPU with fewer than the maximum.
        return code::NOT_FOUND;
    }
    // SAFETY: forwarded caller contract.
    unsafe { put(mig_device, child.to_ptr()) }
}

/// # Safety
/// `is_mig` must be valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: *mut c_void,
    is_mig: *mut c_uint,
) -> Ret {
    match Handle::from_ptr(device) {
        // SAFETY: forwarded caller contract.
        Some(h) => unsafe { put(is_mig, c_uint::from(h.mig.is_some())) },
        None => code::INVALID_ARGUMENT,
    }
}
