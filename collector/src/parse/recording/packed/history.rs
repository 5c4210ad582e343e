//! An allocator history in a pack (`{"history":{…}}` lines): what the allocator simulation
//! replays, kept so that a pack of a snapshot that ran out of memory gives the same OOM
//! verdicts as the snapshot. One line per device and [`super::EVENTS_PER_LINE`] entries;
//! the first carries the segments when the history begins.

use serde::{Deserialize, Serialize};

use super::lines::SegmentLine;
use crate::model::{DeviceHistory, DeviceIdx, HistoryAction, HistoryEntry, Recording};

/// Part of one device's history.
#[derive(Serialize, Deserialize)]
pub struct HistoryLine {
    device: DeviceIdx,
    /// The first line of a device's history (its start segments and carried bytes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    start: Vec<SegmentLine>,
    #[serde(default)]
    carried_bytes: u64,
    /// Per entry: time delta (ns) from the entry before, action code, address, size,
    /// stream, and an OOM's free device memory (−1: none). Addresses and sizes are written
    /// as their two's-complement i64.
    entries: Vec<[i64; 6]>,
    /// Per entry, its stack's id + 1 (0: none); absent where no entry has one (and in packs
    /// written before stacks were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    stacks: Vec<u32>,
}

const ACTIONS: [HistoryAction; 8] = [
    HistoryAction::Alloc,
    HistoryAction::FreeRequested,
    HistoryAction::FreeCompleted,
    HistoryAction::SegmentAlloc,
    HistoryAction::SegmentFree,
    HistoryAction::SegmentMap,
    HistoryAction::SegmentUnmap,
    HistoryAction::Oom,
];

/// The history lines of `rec`, `per_line` entries each.
pub fn history_lines(rec: &Recording, per_line: usize) -> Vec<HistoryLine> {
    let Some(state) = &rec.allocator else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for h in &state.history {
        let mut last = 0i64;
        let mut first = true;
        // A history with no entry still says where it begins.
        let chunks: Vec<&[HistoryEntry]> = match h.entries.is_empty() {
            true => vec![&[]],
            false => h.entries.chunks(per_line).collect(),
        };
        for chunk in chunks {
            let stacks: Vec<u32> = match chunk.iter().any(|e| e.stack.is_some()) {
                true => chunk
                    .iter()
                    .map(|e| e.stack.map_or(0, |s| s.index() + 1))
                    .collect(),
                false => Vec::new(),
            };
            let entries = (chunk.iter())
                .map(|e| {
                    let delta = e.time_ns.wrapping_sub(last);
                    last = e.time_ns;
                    let action = ACTIONS.iter().position(|&a| a == e.action).unwrap_or(0);
                    let free = e.device_free_bytes.map_or(-1, |f| f as i64);
                    [
                        delta,
                        action as i64,
                        e.addr as i64,
                        e.size_bytes as i64,
                        e.stream as i64,
                        free,
                    ]
                })
                .collect();
            out.push(HistoryLine {
                device: h.device,
                start: match first {
                    true => h.start.iter().map(SegmentLine::from_segment).collect(),
                    false => Vec::new(),
                },
                carried_bytes: h.carried_bytes,
                entries,
                stacks,
            });
            first = false;
        }
    }
    out
}

/// Put a history line into `rec`: a new device's history, or more of the last one's.
pub fn absorb(rec: &mut Recording, line: HistoryLine) -> Result<(), String> {
    let state = rec
        .allocator
        .as_mut()
        .ok_or_else(|| "history before the allocator record".to_string())?;
    let continues = state
        .history
        .last()
        .is_some_and(|h| h.device == line.device)
        && line.start.is_empty();
    if !continues {
        let mut start = Vec::with_capacity(line.start.len());
        for s in line.start {
            start.push(s.into_segment()?);
        }
        state.history.push(DeviceHistory {
            device: line.device,
            start,
            entries: Vec::new(),
            carried_bytes: line.carried_bytes,
        });
    }
    let Some(h) = state.history.last_mut() else {
        return Err("history line without a device".into());
    };
    let mut last = h.entries.last().map_or(0, |e| e.time_ns);
    h.entries.reserve(line.entries.len());
    let mut stacks = line.stacks.into_iter();
    for [delta, action, addr, size, stream, free] in line.entries {
        let action = usize::try_from(action)
            .ok()
            .and_then(|a| ACTIONS.get(a).copied())
            .ok_or_else(|| format!("unknown history action {action}"))?;
        last = last.wrapping_add(delta);
        h.entries.push(HistoryEntry {
            time_ns: last,
            action,
            addr: addr as u64,
            size_bytes: size as u64,
            stream: stream as u64,
            device_free_bytes: (free >= 0).then_some(free as u64),
            stack: stacks
                .next()
                .and_then(|s| s.checked_sub(1))
                .map(crate::model::StackId::new),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_cut_into_lines_reads_back_whole() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/snapshot/oom.pickle");
        let rec =
            crate::parse::load(&path, crate::parse::LoadOptions::default()).expect("snapshot");
        let state = rec.allocator.as_ref().expect("allocator");
        assert_eq!(state.history.len(), 1, "an OOM snapshot keeps its history");
        let lines = history_lines(&rec, 5);
        assert_eq!(lines.len(), state.history[0].entries.len().div_ceil(5));
        let mut back = Recording::empty(rec.meta.format, "");
        back.allocator = Some(crate::model::AllocatorState::default());
        for line in lines {
            absorb(&mut back, line).expect("absorbed");
        }
        assert_eq!(back.allocator.expect("allocator").history, state.history);
    }
}
