//! What was live at an instant: the allocations alive then, grouped by where they were
//! made — the top user frames of their allocation stack where the source records stacks
//! (allocator snapshots), else the op that was running when they were allocated.

use serde::Serialize;

use crate::model::{DeviceIdx, Frame, Recording};
use crate::timeline::Timeline;

/// How many frames name a group.
pub const GROUP_FRAMES: usize = 3;

/// A group of live allocations made at the same place.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveGroup {
    /// Where they were made: "file:line function" frames joined by " ← ", or an op name.
    pub site: String,
    /// The frames of the group (innermost user frame first), empty for op groups.
    pub frames: Vec<String>,
    /// Bytes live in the group.
    pub bytes: i64,
    /// Number of live blocks.
    pub blocks: u64,
    /// The largest block.
    pub largest_block_bytes: i64,
}

impl LiveGroup {
    /// The site for a narrow column: each frame's file without its directory
    /// (`model.py:532 silu ← module.py:1790 _call_impl`). The full `site` keeps the paths.
    pub fn short_site(&self) -> String {
        if self.frames.is_empty() {
            return self.site.clone();
        }
        let frames: Vec<&str> = self
            .frames
            .iter()
            .map(|f| {
                // "dir/file.py:12 name": drop the file's directory (Windows paths too).
                let file_end = line_colon(f).unwrap_or(f.len());
                let start = f[..file_end].rfind(['/', '\\']).map_or(0, |i| i + 1);
                &f[start..]
            })
            .collect();
        frames.join(" ← ")
    }
}

/// Where ":LINE " starts in a frame label "file:LINE name" (a drive's "D:" is no line).
fn line_colon(frame: &str) -> Option<usize> {
    frame.match_indices(':').map(|(i, _)| i).find(|&i| {
        let rest = &frame[i + 1..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let tail = &rest[digits..];
        digits > 0 && (tail.is_empty() || tail.starts_with(' '))
    })
}

/// A frame in reports: `file:line function`.
pub fn frame_label(rec: &Recording, f: &Frame) -> String {
    format!(
        "{}:{} {}",
        rec.strings.get(f.file),
        f.line,
        rec.strings.get(f.name)
    )
}

/// Whether a frame's file is library code rather than the user's: an installed package
/// (a `site-packages` or `dist-packages` folder), torch itself (a `torch` folder), the
/// standard library (a `pythonX.Y` folder) or Python's frozen modules — also as `pack
/// --redact-paths` leaves them (`site-packages/einops/einops.py`, `python3.11/os.py`), so
/// a redacted recording groups as the original does. Windows paths and any case count the
/// same.
pub fn is_library_file(file: &str) -> bool {
    let path = file.replace('\\', "/").to_ascii_lowercase();
    let folders = path.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    let library_folder = |folder: &str| {
        let version = folder.strip_prefix("python").unwrap_or("");
        matches!(folder, "site-packages" | "dist-packages" | "torch")
            || (version.contains('.') && version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    path.starts_with("<frozen ") || folders.split('/').any(library_folder)
}

/// Frames that say where *user* code allocated: C++ frames without symbols (`??`) and the
/// allocator's own machinery are skipped, and so are the library frames above the first
/// frame in user code ([`is_library_file`]), so groups read "model.py:42 forward" rather
/// than "torch/functional.py:373 einsum". A stack of library frames alone is kept whole.
fn user_frames<'a>(rec: &Recording, frames: &'a [Frame]) -> Vec<&'a Frame> {
    let useful: Vec<&Frame> = frames
        .iter()
        .filter(|f| {
            let file = rec.strings.get(f.file);
            file != "??" && !file.is_empty()
        })
        .collect();
    if useful.is_empty() {
        return frames.iter().collect();
    }
    let first_user = useful
        .iter()
        .position(|f| !is_library_file(rec.strings.get(f.file)))
        .unwrap_or(0);
    useful[first_user..].to_vec()
}

/// The allocations live on `device` at `time_ns`, grouped, largest group first.
pub fn live_groups(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    time_ns: i64,
) -> Vec<LiveGroup> {
    let Some(d) = timeline.devices.get(device as usize) else {
        return Vec::new();
    };
    let mut groups: Vec<LiveGroup> = Vec::new();
    let mut index: rustc_hash::FxHashMap<String, usize> = Default::default();
    for a in d.live_at(time_ns) {
        let event = rec.mem_events.get(a.alloc_event as usize);
        let stack = rec.stack(event.and_then(|e| e.stack));
        let (site, frames) = if stack.is_empty() {
            let op = timeline
                .ops
                .running_at(a.thread, a.alloc_ns)
                .and_then(|i| rec.ops.get(i as usize));
            (
                op.map_or("(outside any op)".to_owned(), |o| rec.op_name(o).to_owned()),
                Vec::new(),
            )
        } else {
            let frames: Vec<String> = user_frames(rec, stack)
                .into_iter()
                .take(GROUP_FRAMES)
                .map(|f| frame_label(rec, f))
                .collect();
            (frames.join(" ← "), frames)
        };
        let i = *index.entry(site.clone()).or_insert_with(|| {
            groups.push(LiveGroup {
                site,
                frames,
                bytes: 0,
                blocks: 0,
                largest_block_bytes: 0,
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.bytes += a.bytes;
        g.blocks += 1;
        g.largest_block_bytes = g.largest_block_bytes.max(a.bytes);
    }
    groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.site.cmp(&b.site)));
    groups
}

/// An instant a user asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instant {
    /// The device's allocated peak.
    Peak,
    /// The device's last memory event.
    End,
    /// The device's first out-of-memory event.
    FirstOom,
    /// A time, ns on the recording's clock.
    At(i64),
}

/// Why a question about live memory has no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveError {
    /// The recording has no device with that ordinal.
    NoDevice(i32),
    /// No device has allocations (a profiler trace without `profile_memory=True`).
    NoAllocations,
    /// The chosen device has no allocations (Nsight sees only reserved memory).
    NoAllocationsOnDevice,
    /// The device has no such instant (no OOM, say).
    NoInstant(Instant),
}

/// What was live on one device at one instant: the allocator's totals then and the live
/// allocations, grouped. The CLI's `live`, the report and the viewer's inspector all ask this.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveAt {
    /// The device.
    pub device: DeviceIdx,
    /// The instant, ns on the recording's clock.
    pub time_ns: i64,
    /// Allocated bytes then, where the source knows allocated memory.
    pub allocated_bytes: Option<i64>,
    /// Reserved bytes then, where known.
    pub reserved_bytes: Option<i64>,
    /// Bytes of the live allocations seen (the sum of the groups).
    pub live_bytes: i64,
    /// Number of live allocations seen.
    pub live_blocks: u64,
    /// The live allocations by site, largest first.
    pub groups: Vec<LiveGroup>,
}

/// The device a question is about: the one with ordinal `ordinal` (an accelerator before
/// the host), or, without one, the device with allocations whose peak is highest.
pub fn pick_device(
    rec: &Recording,
    timeline: &Timeline,
    ordinal: Option<i32>,
) -> Result<DeviceIdx, LiveError> {
    if let Some(n) = ordinal {
        return rec
            .devices
            .iter()
            .position(|d| d.key.index == n && d.key.is_accelerator())
            .or_else(|| rec.devices.iter().position(|d| d.key.index == n))
            .map(|i| i as DeviceIdx)
            .ok_or(LiveError::NoDevice(n));
    }
    (0..timeline.devices.len())
        .filter_map(|i| {
            let d = timeline.devices.get(i).filter(|d| d.allocated_known)?;
            let peak = d.peak_allocated.and_then(|p| d.points.get(p));
            Some((i, peak.map_or(0, |p| p.allocated_bytes)))
        })
        .max_by_key(|&(_, peak_bytes)| peak_bytes)
        .map(|(i, _)| i as DeviceIdx)
        .ok_or(LiveError::NoAllocations)
}

/// The time of `instant` on `device`, which must have allocations.
pub fn resolve_instant(
    rec: &Recording,
    timeline: &Timeline,
    device: DeviceIdx,
    instant: Instant,
) -> Result<i64, LiveError> {
    let d = timeline
        .devices
        .get(device as usize)
        .filter(|d| d.allocated_known)
        .ok_or(LiveError::NoAllocationsOnDevice)?;
    let time_ns = match instant {
        Instant::Peak => d
            .peak_allocated
            .and_then(|p| d.points.get(p))
            .map(|p| p.time_ns),
        Instant::End => d.points.last().map(|p| p.time_ns),
        Instant::FirstOom => rec
            .mem_events
            .iter()
            .find(|e| e.kind == crate::model::MemEventKind::OutOfMemory && e.device == device)
            .map(|e| e.time_ns),
        Instant::At(time_ns) => Some(time_ns),
    };
    time_ns.ok_or(LiveError::NoInstant(instant))
}

/// What was live on `device` at `time_ns`.
pub fn live_at(rec: &Recording, timeline: &Timeline, device: DeviceIdx, time_ns: i64) -> LiveAt {
    let d = timeline.devices.get(device as usize);
    let point = d.and_then(|d| d.at(time_ns));
    let groups = live_groups(rec, timeline, device, time_ns);
    LiveAt {
        device,
        time_ns,
        allocated_bytes: point
            .filter(|_| d.is_some_and(|d| d.allocated_known))
            .map(|p| p.allocated_bytes),
        reserved_bytes: point.and_then(|p| p.reserved_bytes),
        live_bytes: groups.iter().map(|g| g.bytes).sum(),
        live_blocks: groups.iter().map(|g| g.blocks).sum(),
        groups,
    }
}

#[cfg(test)]
mod tests {
    use super::is_library_file;

    #[test]
    fn library_frames_are_packages_torch_and_the_standard_library() {
        for library in [
            r"D:\Dev\a\.venv\Lib\site-packages\torch\functional.py",
            r"D:\Dev\a\.venv\Lib\site-packages\einops\einops.py",
            "/usr/lib/python3/dist-packages/numpy/core.py",
            "/usr/lib/python3.11/contextlib.py",
            "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py",
            "torch/nn/modules/module.py",
            "site-packages/einops/einops.py",
            "python3.11/threading.py",
            "/home/me/pytorch/torch/_tensor.py",
            "<frozen runpy>",
        ] {
            assert!(is_library_file(library), "{library}");
        }
        for user in [
            r"D:\Dev\a\cs336-basics\cs336_basics\model.py",
            "/home/me/proj/train.py",
            "model.py",
            "/home/me/torchvision_tricks/train.py",
            "/home/me/mylib/python3.py",
            "/home/me/python3/x.py",
            "/home/me/torch.py",
        ] {
            assert!(!is_library_file(user), "{user}");
        }
    }
}
