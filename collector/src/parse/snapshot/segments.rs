//! The allocator's state at snapshot time: its segments with their blocks, and its
//! settings as text.

use std::collections::BTreeMap;

use super::budget::size_in_range;
use super::parse::Reader;
use crate::model::{Block, BlockState, DeviceId, Segment, SegmentPool, StackId};
use crate::parse::SourceError;
use crate::parse::pickle::{NodeId, Pickle};

impl Reader<'_> {
    pub(super) fn read_segments(&mut self, segments: NodeId) -> Result<Vec<Segment>, SourceError> {
        let mut out = Vec::new();
        let p = self.p;
        self.take_records(&mut out, p.items(segments).len(), "segments")?;
        for &s in p.items(segments) {
            if self.p.type_name(s) != "dict" {
                self.rec
                    .diagnostics
                    .note("entries of \"segments\" that are not dicts skipped");
                continue;
            }
            // torch numbers CUDA devices from 0; a number beyond 32 bits names none.
            let Ok(device) = i32::try_from(self.u64_of(s, "device").unwrap_or(0)) else {
                self.rec
                    .diagnostics
                    .note("segments of a device numbered beyond 32 bits skipped");
                continue;
            };
            let device = self.rec.device_index(DeviceId::cuda(device));
            let blocks = self.read_blocks(s)?;
            let pool = match self.str_of(s, "segment_type") {
                Some("large") => SegmentPool::Large,
                Some("small") => SegmentPool::Small,
                _ => SegmentPool::Other,
            };
            let address = self.u64_of(s, "address").unwrap_or(0);
            for key in [
                "total_size",
                "allocated_size",
                "active_size",
                "requested_size",
            ] {
                size_in_range("a segment", self.u64_of(s, key).unwrap_or(0))?;
            }
            // Older snapshots lack some sizes; blocks give them.
            let sum = |only_allocated: bool| {
                let sizes = blocks
                    .iter()
                    .filter(|b| !only_allocated || b.state == BlockState::ActiveAllocated);
                let bytes = sizes.fold(0u64, |sum, b| sum.saturating_add(b.size_bytes));
                size_in_range("a segment's blocks", bytes)
            };
            let total = match self.u64_of(s, "total_size") {
                Some(total) => total,
                None => sum(false)?,
            };
            let allocated = match self.u64_of(s, "allocated_size") {
                Some(allocated) => allocated,
                None => sum(true)?,
            };
            out.push(Segment {
                device,
                address,
                total_size_bytes: total,
                allocated_size_bytes: allocated,
                active_size_bytes: self.u64_of(s, "active_size").unwrap_or(allocated),
                requested_size_bytes: self.u64_of(s, "requested_size").unwrap_or(0),
                stream: self.u64_of(s, "stream").unwrap_or(0),
                pool,
                expandable: self
                    .p
                    .get(s, "is_expandable")
                    .and_then(|v| self.p.as_bool(v))
                    .unwrap_or(false),
                private_pool: self.pool_id(s),
                blocks,
            });
        }
        Ok(out)
    }

    /// A segment's blocks.
    fn read_blocks(&mut self, segment: NodeId) -> Result<Vec<Block>, SourceError> {
        let p = self.p;
        let mut blocks = Vec::new();
        let Some(list) = p.get(segment, "blocks") else {
            return Ok(blocks);
        };
        self.take_records(&mut blocks, p.items(list).len(), "blocks")?;
        for &b in p.items(list) {
            let state = match self.str_of(b, "state") {
                Some("active_allocated") => BlockState::ActiveAllocated,
                Some("active_pending_free") => BlockState::ActivePendingFree,
                _ => BlockState::Inactive,
            };
            let frames = p.get(b, "frames");
            let stack = self.stack(frames).checked_sub(1).map(StackId::new);
            let size = |key| size_in_range("a block", self.u64_of(b, key).unwrap_or(0));
            blocks.push(Block {
                address: self.u64_of(b, "address").unwrap_or(0),
                size_bytes: size("size")?,
                requested_size_bytes: size("requested_size")?,
                state,
                stack,
            });
        }
        Ok(blocks)
    }

    /// `segment_pool_id` when it names a pool other than the default `(0, 0)`.
    fn pool_id(&self, segment: NodeId) -> Option<(u64, u64)> {
        let id = self.p.get(segment, "segment_pool_id")?;
        let parts: Vec<u64> = self
            .p
            .items(id)
            .iter()
            .map(|&v| self.p.as_u64(v))
            .collect::<Option<_>>()?;
        match parts[..] {
            [0, 0] => None,
            [a, b] => Some((a, b)),
            _ => None,
        }
    }

    pub(super) fn read_settings(&self, settings: NodeId) -> BTreeMap<String, String> {
        self.p
            .entries(settings)
            .iter()
            .filter_map(|&(k, v)| Some((self.p.as_str(k)?.to_owned(), display(self.p, v))))
            .collect()
    }
}

/// A setting's value as text: scalars as Python prints them, containers as `{…}`/`[…]`.
/// The memo lets a hostile pickle nest a container in itself, or share one many times
/// over (exponential when printed): depth and length are bounded, and what is cut shows
/// as `…`.
fn display(p: &Pickle, v: NodeId) -> String {
    let mut out = String::new();
    display_into(p, v, 0, &mut out);
    out
}

/// Containers printed inside one another, at most.
const DISPLAY_DEPTH: usize = 8;
/// Characters of one setting's text, about.
const DISPLAY_CHARS: usize = 4096;

fn display_into(p: &Pickle, v: NodeId, depth: usize, out: &mut String) {
    if out.len() >= DISPLAY_CHARS {
        if !out.ends_with('…') {
            out.push('…');
        }
        return;
    }
    if let Some(s) = p.as_str(v) {
        let room = DISPLAY_CHARS.saturating_sub(out.len());
        match s.char_indices().nth(room) {
            Some((cut, _)) => {
                out.push_str(&s[..cut]);
                out.push('…');
            }
            None => out.push_str(s),
        }
        return;
    }
    if let Some(b) = p.as_bool(v) {
        out.push_str(if b { "True" } else { "False" });
        return;
    }
    if let Some(i) = p.as_i64(v) {
        out.push_str(&i.to_string());
        return;
    }
    if let Some(f) = p.as_f64(v) {
        out.push_str(&f.to_string());
        return;
    }
    let entries = p.entries(v);
    let dict = !entries.is_empty();
    out.push(if dict { '{' } else { '[' });
    if depth >= DISPLAY_DEPTH {
        out.push('…');
    } else if dict {
        for (n, &(k, v)) in entries.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            display_into(p, k, depth + 1, out);
            out.push_str(": ");
            display_into(p, v, depth + 1, out);
            if out.len() >= DISPLAY_CHARS {
                break;
            }
        }
    } else {
        for (n, &i) in p.items(v).iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            display_into(p, i, depth + 1, out);
            if out.len() >= DISPLAY_CHARS {
                break;
            }
        }
    }
    out.push(if dict { '}' } else { ']' });
}
