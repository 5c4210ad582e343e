//! One [`Recording`] added into another: devices renumbered, strings re-interned, stacks,
//! threads and events re-indexed (an allocator snapshot into the NVML recording it came
//! with). Both sides must be on the same clock.

use crate::model::{DeviceId, DeviceIdx, Frame, Recording, StackId, ThreadIdx};

/// Add everything `src` holds to `dst`. `device_id` maps each of `src`'s devices to the
/// device it is in `dst` (e.g. a process's CUDA ordinal to the GPU's NVML index); `label`
/// prefixes `src`'s diagnostics.
pub(super) fn absorb(
    dst: &mut Recording,
    src: Recording,
    device_id: impl Fn(DeviceId) -> DeviceId,
    label: &str,
) {
    let has_times = !src.mem_events.is_empty() || !src.ops.is_empty();
    let devices = absorb_devices(dst, &src, &device_id);
    let device = |i: DeviceIdx| devices.get(i as usize).copied().unwrap_or(i);
    let threads = absorb_threads(dst, &src, &device_id);
    let thread = |i: ThreadIdx| threads.get(i as usize).copied().unwrap_or(i);
    let stack_base = dst.stacks.len() as u32;
    let stack = |s: Option<StackId>| s.map(|s| StackId::new(s.index() + stack_base));
    let event_base = dst.mem_events.len() as u32;

    for frames in &src.stacks {
        let frames = frames
            .iter()
            .map(|f| Frame {
                name: dst.strings.intern(src.strings.get(f.name)),
                file: dst.strings.intern(src.strings.get(f.file)),
                line: f.line,
            })
            .collect();
        dst.stacks.push(frames);
    }
    dst.mem_events
        .extend(src.mem_events.into_iter().map(|mut e| {
            e.device = device(e.device);
            e.thread = thread(e.thread);
            e.stack = stack(e.stack);
            e
        }));
    for op in src.ops.iter() {
        let name = dst.strings.intern(src.strings.get(op.name));
        dst.ops.push(crate::model::OpSpan {
            name,
            thread: thread(op.thread),
            ..op
        });
    }
    dst.storage_tags
        .extend(src.storage_tags.into_iter().map(|mut t| {
            t.device = device(t.device);
            t
        }));
    dst.steps.extend(src.steps);
    dst.steps.sort_by_key(|s| (s.start_ns, s.number));
    dst.oom_details
        .extend(src.oom_details.into_iter().map(|mut o| {
            o.event += event_base;
            o
        }));
    if let Some(state) = src.allocator {
        absorb_allocator(dst, state, &device, &stack);
    }
    for (what, n) in src.diagnostics.counts {
        dst.diagnostics.note_n(&format!("{label}: {what}"), n);
    }
    dst.meta.events_read += src.meta.events_read;
    // A snapshot with no events or spans has a placeholder time range (0, 0) that must not
    // stretch the recording's.
    if has_times {
        dst.meta.start_ns = dst.meta.start_ns.min(src.meta.start_ns);
        dst.meta.end_ns = dst.meta.end_ns.max(src.meta.end_ns);
    }
}

/// `src`'s devices as devices of `dst` (indexed by `src`'s device index), filling in the
/// name and memory size `dst` lacks.
fn absorb_devices(
    dst: &mut Recording,
    src: &Recording,
    device_id: &impl Fn(DeviceId) -> DeviceId,
) -> Vec<DeviceIdx> {
    src.devices
        .iter()
        .map(|d| {
            let key = device_id(d.key);
            let idx = dst.device_index(key);
            if let Some(info) = dst.devices.get_mut(idx as usize) {
                if info.name.is_none() {
                    info.name.clone_from(&d.name);
                }
                if info.total_memory_bytes.is_none() {
                    info.total_memory_bytes = d.total_memory_bytes;
                }
            }
            idx
        })
        .collect()
}

/// `src`'s threads as threads of `dst` (indexed by `src`'s thread index).
fn absorb_threads(
    dst: &mut Recording,
    src: &Recording,
    device_id: &impl Fn(DeviceId) -> DeviceId,
) -> Vec<ThreadIdx> {
    src.threads
        .iter()
        .map(|t| {
            // Threads are named after their device ("allocator", "cuda:0"): use the new name.
            let tid = device_named(&t.tid)
                .map(|k| device_id(k).to_string())
                .unwrap_or_else(|| t.tid.clone());
            dst.thread_index(&t.pid, &tid)
        })
        .collect()
}

/// Add `state`'s segments (renumbered) to the recording's allocator state.
fn absorb_allocator(
    dst: &mut Recording,
    mut state: crate::model::AllocatorState,
    device: &impl Fn(DeviceIdx) -> DeviceIdx,
    stack: &impl Fn(Option<StackId>) -> Option<StackId>,
) {
    for s in &mut state.segments {
        s.device = device(s.device);
        for b in &mut s.blocks {
            b.stack = stack(b.stack);
        }
    }
    for r in &mut state.requested {
        r.device = device(r.device);
    }
    match dst.allocator.as_mut() {
        None => dst.allocator = Some(state),
        Some(have) => {
            have.segments.extend(state.segments);
            have.requested.extend(state.requested);
            for (k, v) in state.settings {
                have.settings.entry(k).or_insert(v);
            }
            have.time_ns = have.time_ns.max(state.time_ns);
        }
    }
}

/// `cuda:N` as a device key.
fn device_named(s: &str) -> Option<DeviceId> {
    let n = s.strip_prefix("cuda:")?.parse::<i32>().ok()?;
    Some(DeviceId::cuda(n))
}
