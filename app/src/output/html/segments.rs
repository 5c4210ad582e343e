//! A device's segments at the instant the summary measures fragmentation (the snapshot's
//! own blocks, else the allocated peak): the collector's segment layouts, each a row of
//! blocks (allocated, pending free, free), with the summary's fragmentation numbers as
//! the CLI words them.

use collector::analysis::DeviceSummary;
use collector::analysis::fragmentation::FragmentationSource;
use collector::analysis::segments::{BlockUse, layout_at, layout_at_snapshot};
use collector::model::{DeviceIdx, SegmentPool};
use collector::units::{bytes_iec, duration_between};
use serde::Serialize;

use super::Input;
use super::strings::Strings;

/// Most segments drawn, largest first (~20 bytes of JSON each plus their blocks).
pub const MAX_SEGMENTS: usize = 400;
/// Most blocks drawn per segment; the rest of a segment is drawn as one stretch of its
/// state mix ("…"), ~16 bytes of JSON a block.
pub const MAX_BLOCKS: usize = 256;

/// The segments of one device.
#[derive(Debug, Serialize)]
pub struct SegmentsDoc {
    /// When (a string id).
    pub when: u32,
    /// The fragmentation numbers: (label, text) string ids.
    pub facts: Vec<(u32, u32)>,
    /// Per segment: size, pool (0 large, 1 small, 2 other), and its blocks as (bytes,
    /// state: 0 allocated, 1 pending free, 2 free) pairs, flattened.
    pub segments: Vec<(i64, u8, Vec<i64>)>,
    /// Segments left out.
    pub left_out: usize,
}

/// The segments of `device` (summarised as `ds`) where the summary measured its
/// fragmentation; `None` where it did not.
pub fn segments(
    input: &Input<'_>,
    device: DeviceIdx,
    ds: &DeviceSummary,
    s: &mut Strings,
) -> Option<SegmentsDoc> {
    let sum = input.summary;
    let f = sum.fragmentation.iter().find(|f| f.device == ds.device)?;
    let (layouts, when) = if f.source == FragmentationSource::Snapshot {
        (
            layout_at_snapshot(input.rec, device)?,
            "at the snapshot".to_owned(),
        )
    } else {
        let layout = layout_at(input.rec, input.timeline, device, f.at_ns)?;
        (
            layout,
            format!("at the peak, {}", duration_between(sum.start_ns, f.at_ns)),
        )
    };
    let facts = [
        ("reserved", bytes_iec(f.reserved_bytes)),
        ("allocated", bytes_iec(f.allocated_bytes)),
        ("free", bytes_iec(f.cache_free_bytes)),
        ("segments", f.segments.to_string()),
        ("free blocks", f.free_blocks.to_string()),
        ("largest free block", bytes_iec(f.largest_free_block_bytes)),
        (
            "external fragmentation",
            format!("{:.1}%", f.external_fragmentation * 100.0),
        ),
    ];
    let mut layouts = layouts;
    layouts.sort_by_key(|l| std::cmp::Reverse(l.size_bytes));
    let left_out = layouts.len().saturating_sub(MAX_SEGMENTS);
    layouts.truncate(MAX_SEGMENTS);
    let segments = layouts
        .iter()
        .map(|l| {
            let pool = match l.pool {
                SegmentPool::Large => 0,
                SegmentPool::Small => 1,
                SegmentPool::Other => 2,
            };
            let mut blocks = Vec::with_capacity(2 * l.blocks.len().min(MAX_BLOCKS + 1));
            for b in l.blocks.iter().take(MAX_BLOCKS) {
                let state = match b.state {
                    BlockUse::Allocated => 0,
                    BlockUse::PendingFree => 1,
                    BlockUse::Free => 2,
                };
                blocks.extend([b.size_bytes, state]);
            }
            let rest: i64 = l.blocks.iter().skip(MAX_BLOCKS).map(|b| b.size_bytes).sum();
            if rest > 0 {
                blocks.extend([rest, 3]);
            }
            (l.size_bytes, pool, blocks)
        })
        .collect();
    Some(SegmentsDoc {
        when: s.id(&when),
        facts: facts.iter().map(|(l, t)| (s.id(l), s.id(t))).collect(),
        segments,
        left_out,
    })
}
