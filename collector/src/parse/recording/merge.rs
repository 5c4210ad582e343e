//! Merging allocator snapshots into the NVML recording they came with: one [`Recording`]
//! into another: devices renumbered, strings re-interned, stacks, threads and events
//! re-indexed. Both sides must be on the same clock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::Header;
use super::snapshots::{Embedded, ShimEvent, SnapshotInfo, no_torch_note, nvml_index, read_status};
use crate::model::{DeviceId, DeviceIdx, Frame, Recording, SourceFormat, StackId, ThreadIdx};
use crate::parse::input::Input;
use crate::parse::{LoadOptions, snapshot};

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
    let stack = |s: Option<StackId>| s.map(|s| StackId(s.0 + stack_base));
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
    for op in src.ops {
        let name = dst.strings.intern(src.strings.get(op.name));
        dst.ops.push(crate::model::OpSpan {
            name,
            thread: thread(op.thread),
            ..op
        });
    }
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

/// Decode a snapshot from the recording's bytes or from its file beside the recording.
fn load(source: Source) -> Result<Recording, String> {
    match source {
        Source::Bytes(bytes) => {
            let len = bytes.len() as u64;
            let input = Input {
                reader: Box::new(std::io::Cursor::new(bytes)),
                compressed: false,
                file_bytes_read: Arc::new(AtomicU64::new(0)),
                file_len: len,
                head: Vec::new(),
            };
            snapshot::read(input, LoadOptions::default()).map_err(|e| {
                crate::parse::LoadError {
                    path: PathBuf::from("the embedded pickle"),
                    offset: e.offset,
                    decompressed: false,
                    kind: e.kind,
                    salvageable: false,
                }
                .to_string()
            })
        }
        Source::File(path) => crate::parse::load(&path, LoadOptions::default())
            .map_err(|e| e.to_string())
            .and_then(|r| match r.meta.format {
                SourceFormat::TorchSnapshot => Ok(r),
                other => Err(format!(
                    "not an allocator snapshot but a {}",
                    other.describe()
                )),
            }),
    }
}

/// `cuda:N` as a device key.
fn device_named(s: &str) -> Option<DeviceId> {
    let n = s.strip_prefix("cuda:")?.parse::<i32>().ok()?;
    Some(DeviceId::cuda(n))
}

/// Where a snapshot's bytes are.
enum Source {
    /// Embedded in the recording.
    Bytes(Vec<u8>),
    /// Still in the folder beside it.
    File(PathBuf),
}

/// A snapshot whose trace entries are older than this before the recording started has no
/// Unix timestamps (torch 2.0 wrote none; the snapshot reader then uses event order).
const CLOCK_SKEW_NS: i64 = 60_000_000_000;

/// Merge the allocator snapshots of a `--torch-memory` recording: those embedded completely,
/// and those still in the folder beside the recording (vramscope stopped before embedding
/// them). Per process the last snapshot is used (the ring buffer keeps the newest history);
/// per GPU one process's history (allocator totals are per process).
pub(super) fn merge_into(
    rec: &mut Recording,
    header: &Header,
    embedded: Embedded,
    path: &Path,
    finalised: bool,
) {
    let mut candidates: Vec<(SnapshotInfo, Source)> = Vec::new();
    let mut embedded_files = BTreeSet::new();
    for (_, p) in embedded.by_id {
        if p.complete {
            embedded_files.insert(p.info.file.clone());
            candidates.push((p.info, Source::Bytes(p.data)));
        } else {
            let why = p.broken.unwrap_or_else(|| "no end line".into());
            rec.diagnostics.note(&format!(
                "torch-memory: snapshot {} of pid {} is embedded incompletely ({why})",
                p.info.file, p.info.pid
            ));
        }
    }
    if let Some(tm) = &header.torch_memory {
        let dir = path.parent().unwrap_or(Path::new(".")).join(&tm.dir);
        if dir.is_dir() {
            beside(rec, &dir, &embedded_files, finalised, &mut candidates);
        }
    }
    let mut last: BTreeMap<u32, (SnapshotInfo, Source)> = BTreeMap::new();
    for (info, source) in candidates {
        let newer = last
            .get(&info.pid)
            .is_none_or(|(have, _)| (info.taken_unix_ns, info.id) > (have.taken_unix_ns, have.id));
        if newer {
            last.insert(info.pid, (info, source));
        }
    }
    let mut used_devices = BTreeSet::new();
    for (_, (info, source)) in last {
        merge_one(rec, header, &info, source, &mut used_devices);
    }
}

/// Snapshots and status left in the folder beside the recording.
fn beside(
    rec: &mut Recording,
    dir: &Path,
    embedded_files: &BTreeSet<String>,
    finalised: bool,
    candidates: &mut Vec<(SnapshotInfo, Source)>,
) {
    let events = match read_status(dir) {
        Ok(events) => events,
        Err(e) => {
            rec.diagnostics
                .note(&format!("torch-memory: cannot read {}: {e}", dir.display()));
            return;
        }
    };
    if !finalised {
        // vramscope stopped before turning the status into notes: do it here.
        for note in events.iter().filter_map(ShimEvent::note) {
            rec.diagnostics.note(&format!("note: {note}"));
        }
        if let Some(note) = no_torch_note(&events) {
            rec.diagnostics.note(&format!("note: {note}"));
        }
    }
    let mut id = u32::MAX;
    for e in &events {
        let Some(info) = e.snapshot_info(id) else {
            continue;
        };
        id -= 1;
        let file = dir.join(&info.file);
        if embedded_files.contains(&info.file) || !file.is_file() {
            continue;
        }
        rec.diagnostics.note(&format!(
            "torch-memory: snapshot {} read from beside the recording (not embedded)",
            info.file
        ));
        candidates.push((info, Source::File(file)));
    }
}

fn merge_one(
    rec: &mut Recording,
    header: &Header,
    info: &SnapshotInfo,
    source: Source,
    used_devices: &mut BTreeSet<u32>,
) {
    let label = format!("torch snapshot of pid {}", info.pid);
    let loaded = load(source);
    let mut snap = match loaded {
        Ok(snap) => snap,
        Err(e) => {
            rec.diagnostics.note(&format!(
                "torch-memory: {label} ({}) unreadable: {e}",
                info.file
            ));
            return;
        }
    };
    let map: BTreeMap<i32, (u32, bool)> = snap
        .devices
        .iter()
        .map(|d| {
            let cuda = u32::try_from(d.key.index).unwrap_or(0);
            (
                d.key.index,
                nvml_index(cuda, &info.devices, &header.devices),
            )
        })
        .collect();
    if let Some(&(taken, _)) = map.values().find(|(n, _)| used_devices.contains(n)) {
        rec.diagnostics.note(&format!(
            "torch-memory: {label} not merged: cuda:{taken} already shows another process's history (it stays embedded)"
        ));
        return;
    }
    if map.values().any(|&(_, by_uuid)| !by_uuid) && !header.devices.is_empty() {
        rec.diagnostics.note(&format!(
            "torch-memory: {label}: devices matched to NVML's by CUDA ordinal (no UUIDs to match)"
        ));
    }
    place_untimed_history(rec, &mut snap, header, info, &label);
    used_devices.extend(map.values().map(|&(n, _)| n));
    let devices: Vec<String> = map.values().map(|(n, _)| format!("cuda:{n}")).collect();
    rec.diagnostics.note(&format!(
        "note: torch-memory: allocator history of pid {} ({} snapshot, {} entries) shown on {}",
        info.pid,
        info.reason,
        info.entries.unwrap_or(snap.meta.events_read),
        devices.join(", ")
    ));
    if let Some(v) = &info.torch_version {
        rec.meta
            .properties
            .insert("torch_version".into(), v.clone());
    }
    absorb(
        rec,
        snap,
        |key| match map.get(&key.index) {
            Some(&(n, _)) if key.is_accelerator() => DeviceId::cuda(n as i32),
            _ => key,
        },
        &label,
    );
}

/// A snapshot from an older torch has no `time_us`: the snapshot reader uses each entry's
/// position as its time. The history is kept (peaks, fragmentation, OOM verdicts stay
/// right) and placed in event order just before the snapshot was taken, and a note says so.
fn place_untimed_history(
    rec: &mut Recording,
    snap: &mut Recording,
    header: &Header,
    info: &SnapshotInfo,
    label: &str,
) {
    let untimed = snap
        .mem_events
        .iter()
        .any(|e| e.time_ns < header.start_unix_ns - CLOCK_SKEW_NS);
    if untimed {
        let taken = info.taken_unix_ns.unwrap_or(header.start_unix_ns);
        let last = snap.mem_events.iter().map(|e| e.time_ns).max().unwrap_or(0);
        snap.shift_time(taken.saturating_sub(last.saturating_add(1)));
        if let Some(state) = snap.allocator.as_mut() {
            state.time_ns = Some(taken);
        }
        rec.diagnostics.note(&format!(
            "note: torch-memory: {label}: this torch writes no timestamps in its trace entries: the allocator history is shown in event order, 1 ns apart, just before the snapshot (its times are not real)"
        ));
    }
}
