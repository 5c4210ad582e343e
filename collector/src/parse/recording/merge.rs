//! Merging allocator snapshots, and the storage tags taken with them, into the NVML
//! recording they came with (by [`absorb`]). Both sides must be on the same clock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::Header;
use super::absorb::absorb;
use super::beside::{MAX_SNAPSHOT_FILE_BYTES, open_inside};
use super::snapshots::{Embedded, ShimEvent, SnapshotInfo, no_torch_note, nvml_index, read_status};
use super::tags::{TagRow, place, read_tags_file};
use crate::model::{DeviceId, Recording, SourceFormat};
use crate::parse::input::Input;
use crate::parse::{LoadOptions, snapshot};

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
    mut embedded: Embedded,
    path: &Path,
    finalised: bool,
) {
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut embedded_files = BTreeSet::new();
    for (id, p) in std::mem::take(&mut embedded.by_id) {
        if p.complete {
            embedded_files.insert(p.info.file.clone());
            let tags = embedded.tags.remove(&id).unwrap_or_default();
            candidates.push((p.info, Source::Bytes(p.data), tags));
        } else {
            let why = p.broken.unwrap_or_else(|| "no end line".into());
            rec.diagnostics.note(&format!(
                "torch-memory: snapshot {} of pid {} is embedded incompletely ({why})",
                p.info.file, p.info.pid
            ));
        }
    }
    if let Some(tm) = &header.torch_memory {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        match super::beside::inside(parent, &tm.dir) {
            Ok(dir) if dir.is_dir() => {
                beside(rec, &dir, &embedded_files, finalised, &mut candidates);
            }
            Ok(_) => {}
            Err(e) => rec
                .diagnostics
                .note(&format!("torch-memory: folder not read: {e}")),
        }
    }
    let mut last: BTreeMap<u32, Candidate> = BTreeMap::new();
    for c in candidates {
        let info = &c.0;
        let newer = last.get(&info.pid).is_none_or(|(have, _, _)| {
            (info.taken_unix_ns, info.id) > (have.taken_unix_ns, have.id)
        });
        if newer {
            last.insert(info.pid, c);
        }
    }
    let mut used_devices = BTreeSet::new();
    for (_, (info, source, tags)) in last {
        merge_one(rec, header, &info, source, tags, &mut used_devices);
    }
}

/// A snapshot that may be merged: what it is, where its bytes are, its storage tags.
type Candidate = (SnapshotInfo, Source, Vec<TagRow>);

/// Snapshots and status left in the folder beside the recording.
fn beside(
    rec: &mut Recording,
    dir: &Path,
    embedded_files: &BTreeSet<String>,
    finalised: bool,
    candidates: &mut Vec<Candidate>,
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
        if embedded_files.contains(&info.file) {
            continue;
        }
        let file = match open_inside(dir, &info.file, MAX_SNAPSHOT_FILE_BYTES) {
            Ok(_) => dir.join(&info.file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                rec.diagnostics
                    .note(&format!("torch-memory: snapshot not read: {e}"));
                continue;
            }
        };
        rec.diagnostics.note(&format!(
            "torch-memory: snapshot {} read from beside the recording (not embedded)",
            info.file
        ));
        let tags = beside_tags(rec, dir, &info);
        candidates.push((info, Source::File(file), tags));
    }
}

/// The tags file of a snapshot read from beside the recording; none where it is missing or
/// unreadable (a note says why).
fn beside_tags(rec: &mut Recording, dir: &Path, info: &SnapshotInfo) -> Vec<TagRow> {
    let Some(name) = &info.tags_file else {
        return Vec::new();
    };
    read_tags_file(dir, name).unwrap_or_else(|e| {
        rec.diagnostics.note(&format!(
            "torch-memory: storage tags {name} unreadable ({e}): categories inferred"
        ));
        Vec::new()
    })
}

fn merge_one(
    rec: &mut Recording,
    header: &Header,
    info: &SnapshotInfo,
    source: Source,
    tags: Vec<TagRow>,
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
    let on_nvml = |cuda: u32| {
        let (n, _) = map.get(&i32::try_from(cuda).ok()?)?;
        Some(DeviceId::cuda(*n as i32))
    };
    place(rec, tags, on_nvml, &label);
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
