//! A memory timeline export as a recording: one device's allocations at made-up
//! addresses, each tagged with torch's category.

use std::collections::HashMap;
use std::path::Path;

use super::{TORCH_CATEGORIES, torch_category};
use crate::model::{
    DeviceId, DeviceIdx, MemEvent, Recording, SourceFormat, StorageTag, TensorRole,
};
use crate::parse::SourceError;

/// The raw export's action of tensors alive before profiling began (time −1).
const PREEXISTING: i64 = 1;
/// The raw export's last action (destroy).
const LAST_ACTION: i64 = 4;
/// Where the made-up addresses start, and the gap between blocks: blocks never touch, so a
/// tag names exactly one.
const FIRST_ADDR: u64 = 0x1000_0000;
const ADDR_GAP: u64 = 512;

/// The device a file's name says (`…cuda:1…`, `…cuda_1…`, `…cpu…`), else `cuda:0`, the
/// device `export_memory_timeline` describes by default where CUDA is available.
pub(super) fn device_from_name(path: &Path) -> (DeviceId, bool) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if let Some(at) = name.find("cuda") {
        let digits: String = name[at + 4..]
            .trim_start_matches([':', '_', '-'])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        return (DeviceId::cuda(digits.parse().unwrap_or(0)), true);
    }
    if name.contains("cpu") {
        return (DeviceId::CPU, true);
    }
    (DeviceId::cuda(0), false)
}

/// The allocations being made up: addresses, the live blocks per key, the events and tags.
struct Blocks {
    rec: Recording,
    device: DeviceIdx,
    next_addr: u64,
    allocated_bytes: i64,
    /// Live blocks by key (the raw export: category and size; the plot: category), last
    /// made last.
    live: HashMap<(usize, i64), Vec<(u64, i64)>>,
}

impl Blocks {
    fn new(era: &str, (device, named): (DeviceId, bool)) -> Blocks {
        let mut rec = Recording::empty(SourceFormat::TorchMemoryTimeline, era);
        let idx = rec.device_index(device);
        rec.thread_index("0", "0");
        if !named {
            rec.diagnostics.note(
                "memory timelines that name no device (shown as cuda:0, torch's default with \
                 CUDA; put cpu or cuda:N in the file name to say)",
            );
        }
        Blocks {
            rec,
            device: idx,
            next_addr: FIRST_ADDR,
            allocated_bytes: 0,
            live: HashMap::new(),
        }
    }

    fn event(&mut self, time_ns: i64, addr: u64, bytes: i64) {
        self.allocated_bytes += bytes;
        self.rec.mem_events.push(MemEvent {
            addr: addr.into(),
            total_allocated_bytes: self.allocated_bytes.into(),
            device: self.device,
            ..MemEvent::sized(time_ns, bytes)
        });
    }

    /// A block of `bytes` (> 0) in torch's category `category` made at `time_ns`, kept
    /// under `key`.
    fn alloc(&mut self, time_ns: i64, category: usize, bytes: i64, key: (usize, i64)) {
        let addr = self.next_addr;
        self.next_addr += (bytes as u64).div_ceil(ADDR_GAP) * ADDR_GAP + ADDR_GAP;
        self.event(time_ns, addr, bytes);
        let role = torch_category(category).and_then(|c| TensorRole::from_name(c.as_str()));
        if let Some(role) = role {
            self.rec.storage_tags.push(StorageTag {
                device: self.device,
                addr,
                bytes: bytes as u64,
                role,
                since_ns: time_ns,
            });
        }
        self.live.entry(key).or_default().push((addr, bytes));
    }

    /// Free the last block made under `key`; false if none is live.
    fn free_last(&mut self, time_ns: i64, key: (usize, i64)) -> Option<i64> {
        let (addr, bytes) = self.live.get_mut(&key)?.pop()?;
        self.event(time_ns, addr, -bytes);
        Some(bytes)
    }

    fn finish(mut self) -> Recording {
        let times = self.rec.mem_events.iter().map(|e| e.time_ns);
        self.rec.meta.start_ns = times.clone().min().unwrap_or(0);
        self.rec.meta.end_ns = times.max().unwrap_or(0);
        self.rec.meta.events_read = self.rec.mem_events.len() as u64;
        self.rec
    }
}

/// The raw export: one allocation per positive row, a free of the last live block of the
/// same category and size per negative row; rows before profiling (time −1) at the first
/// time.
pub(super) fn from_raw(
    rows: &[(i64, i64, i64, i64)],
    device: (DeviceId, bool),
) -> Result<Recording, SourceError> {
    let mut b = Blocks::new("raw events", device);
    let first_ns = rows
        .iter()
        .map(|r| r.0)
        .filter(|&t| t >= 0)
        .min()
        .unwrap_or(0);
    let mut unpaired = 0u64;
    for (i, &(t, action, bytes, category)) in rows.iter().enumerate() {
        let category = usize::try_from(category)
            .ok()
            .filter(|&c| c < TORCH_CATEGORIES);
        let (Some(category), 1..=LAST_ACTION) = (category, action) else {
            return Err(SourceError::shape(
                None,
                format!(
                    "row {i} of the raw memory timeline has action {action} and category \
                     {category:?}: torch writes actions 1-4 and categories 0-7"
                ),
            ));
        };
        let time_ns = if t < 0 && action == PREEXISTING {
            first_ns
        } else {
            t
        };
        let key = (category, bytes.abs());
        if bytes > 0 {
            b.alloc(time_ns, category, bytes, key);
        } else if bytes < 0 && b.free_last(time_ns, key).is_none() {
            unpaired += 1;
        }
    }
    if unpaired > 0 {
        b.rec.diagnostics.note_n(
            "memory timeline frees of no live tensor of their category and size (skipped)",
            unpaired,
        );
    }
    Ok(b.finish())
}

/// The plot export: at each point, each category's change from the point before as
/// blocks made (a rise) or freed, last made first (a fall; any excess made again), so the
/// totals are torch's at every point.
pub(super) fn from_plot(
    times_us: &[i64],
    sizes: &[Vec<i64>],
    device: (DeviceId, bool),
) -> Result<Recording, SourceError> {
    if times_us.len() != sizes.len() {
        return Err(SourceError::shape(
            None,
            format!(
                "the memory timeline has {} times but {} rows of sizes",
                times_us.len(),
                sizes.len()
            ),
        ));
    }
    let mut b = Blocks::new("plot of sizes per category", device);
    let mut before = [0i64; TORCH_CATEGORIES];
    for (i, (&t_us, row)) in times_us.iter().zip(sizes).enumerate() {
        // torch writes a leading 0, then one size per category.
        let Some((0, row)) = row.split_first().map(|(z, r)| (*z, r)) else {
            let what = format!("row {i} of the memory timeline's sizes does not start with 0");
            return Err(SourceError::shape(None, what));
        };
        if row.len() != TORCH_CATEGORIES {
            let what = format!(
                "row {i} of the memory timeline's sizes has {} categories; torch writes {}",
                row.len(),
                TORCH_CATEGORIES
            );
            return Err(SourceError::shape(None, what));
        }
        let time_ns = t_us.saturating_mul(1000);
        // Falls first, then rises: no total between two points exceeds both of theirs.
        for falls in [true, false] {
            for (category, (&now, was)) in row.iter().zip(before.iter_mut()).enumerate() {
                if (now < *was) == falls && now != *was {
                    change(&mut b, time_ns, category, now - *was);
                    *was = now;
                }
            }
        }
    }
    Ok(b.finish())
}

/// One category's change at one point of the plot.
fn change(b: &mut Blocks, time_ns: i64, category: usize, delta: i64) {
    let key = (category, 0);
    let mut to_free = -delta;
    while to_free > 0 {
        match b.free_last(time_ns, key) {
            Some(bytes) => to_free -= bytes,
            None => break,
        }
    }
    // A rise, or what the last freed block held beyond the fall.
    let to_make = if delta > 0 { delta } else { -to_free.min(0) };
    if to_make > 0 {
        b.alloc(time_ns, category, to_make, key);
    }
}
