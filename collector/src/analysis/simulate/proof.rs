//! Proof before prediction: replay a snapshot's history through the model with the
//! snapshot's own settings, segments handed out where the real ones were, and check that
//! each allocation lands at the address the real allocator gave it and that the model ends
//! with the snapshot's segments. Where a placement differs it is counted and the block put
//! where it really went, so every later placement is checked on its own.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet;

use super::allocator::{Allocator, SMALL_REQUEST_BYTES};
use super::blocks::NO_BLOCK;
use super::config::AllocatorConfig;
use super::driver::{FIRST_PHANTOM_ADDR, Recorded};
use super::state::{SimSegment, recorded_segments};
use crate::model::{BlockState, DeviceHistory, HistoryAction, HistoryEntry, Segment};

/// How the model did on one device's recorded history.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Proof {
    /// Allocations in the default pools, replayed and checked.
    pub allocations: u64,
    /// Of them, placed at the address the real allocator gave them.
    pub placed_as_recorded: u64,
    /// Allocations into private pools (CUDA graphs, `MemPool`): placed as recorded, not
    /// simulated.
    pub private_pool_allocations: u64,
    /// The first placement that differed, if any.
    pub first_divergence: Option<Divergence>,
    /// Where the replay could not go on (a block or segment the model does not have),
    /// the entry's index; the allocations after it are not checked.
    pub stopped_at_entry: Option<usize>,
    /// Frees of blocks the model did not hold.
    pub unknown_frees: u64,
    /// Whether the model ends with the snapshot's segments: the same sizes, each with the
    /// same blocks (sizes and states) in the same order.
    pub final_segments_identical: bool,
    /// The first segment that differs, recorded then simulated.
    pub first_segment_difference: Option<(Option<SimSegment>, Option<SimSegment>)>,
    /// The model's segments at the end, in address order.
    pub final_segments: Vec<SimSegment>,
    /// Blocks live when the history began whose size the history showed larger than the
    /// size asked for (see [`prove`]).
    pub start_blocks_resized: u64,
}

/// A placement the model made differently from the real allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Divergence {
    /// Index of the history entry.
    pub entry: usize,
    /// When, ns.
    pub time_ns: i64,
    /// The size asked for.
    pub requested_bytes: u64,
    /// Where the real allocator put it.
    pub recorded_addr: u64,
    /// Where the model put it (a new segment the real allocator did not make: none).
    pub simulated_addr: Option<u64>,
}

impl Proof {
    /// The share of checked allocations placed as recorded (1 with none to check).
    pub fn placed_share(&self) -> f64 {
        if self.allocations == 0 {
            1.0
        } else {
            self.placed_as_recorded as f64 / self.allocations as f64
        }
    }
}

/// Passes over the history that may correct the start state; each pass sizes every block
/// it finds wrong, so two or three do in practice.
const START_PASSES: usize = 4;

/// Replay `history` with `config` (the snapshot's settings) and compare with what the real
/// allocator did and ended with (`at_snapshot`, the snapshot's segments).
///
/// The blocks live when the history begins and freed in it have the size asked for,
/// rounded; a large-pool block may hold up to 1 MiB more (a remainder not split off). Where
/// a recorded address shows one did (the block after it starting that much later), the
/// start is corrected and the replay run again: [`Proof::start_blocks_resized`].
pub fn prove(history: &DeviceHistory, config: &AllocatorConfig, at_snapshot: &[Segment]) -> Proof {
    let mut start = history.start.clone();
    let mut resized = 0;
    for pass in 1..=START_PASSES {
        let (mut proof, fixes) = replay(history, &start, config, at_snapshot);
        if fixes.is_empty() || pass == START_PASSES {
            proof.start_blocks_resized = resized;
            return proof;
        }
        resized += fixes.len() as u64;
        for (addr, extra) in fixes {
            grow_start_block(&mut start, addr, extra);
        }
    }
    unreachable!("the last pass returns")
}

/// Grow the start's block at `addr` by `extra` bytes taken from the free block after it.
fn grow_start_block(start: &mut [Segment], addr: u64, extra: u64) {
    for s in start.iter_mut() {
        let Some(i) = s.blocks.iter().position(|b| b.address == addr) else {
            continue;
        };
        let Some(next) = s
            .blocks
            .get(i + 1)
            .filter(|b| b.state == BlockState::Inactive)
        else {
            return;
        };
        if next.size_bytes < extra {
            return;
        }
        if next.size_bytes == extra {
            s.blocks.remove(i + 1);
        } else {
            let n = &mut s.blocks[i + 1];
            n.address += extra;
            n.size_bytes -= extra;
        }
        s.blocks[i].size_bytes += extra;
        return;
    }
}

/// One replay from `start`: the proof, and the start's blocks found too small.
fn replay(
    history: &DeviceHistory,
    start: &[Segment],
    config: &AllocatorConfig,
    at_snapshot: &[Segment],
) -> (Proof, BTreeMap<u64, u64>) {
    let mut r = Replay {
        a: Allocator::new(config.clone()),
        driver: Recorded::new(),
        start_live: (start.iter())
            .flat_map(|s| &s.blocks)
            .filter(|b| b.state != BlockState::Inactive)
            .map(|b| b.address)
            .collect(),
        fixes: BTreeMap::new(),
        proof: Proof::default(),
    };
    r.a.seed(start);
    let private: Vec<(u64, u64)> = (start.iter())
        .filter(|s| s.private_pool.is_some())
        .map(|s| (s.address, s.address.saturating_add(s.total_size_bytes)))
        .collect();
    for (i, e) in history.entries.iter().enumerate() {
        let ok = match e.action {
            HistoryAction::SegmentAlloc | HistoryAction::SegmentMap => {
                r.driver.waiting.push_back((e.addr, e.size_bytes));
                true
            }
            HistoryAction::Alloc if private.iter().any(|&(lo, hi)| (lo..hi).contains(&e.addr)) => {
                r.proof.private_pool_allocations += 1;
                r.a.place_at(e.addr, e.size_bytes, &mut r.driver)
            }
            HistoryAction::Alloc => r.alloc(i, e),
            HistoryAction::FreeCompleted => {
                r.start_live.remove(&e.addr);
                if !r.a.free(e.addr) {
                    r.proof.unknown_frees += 1;
                }
                true
            }
            HistoryAction::SegmentFree | HistoryAction::SegmentUnmap => {
                r.a.materialize(e.addr, &mut r.driver);
                r.a.release_segment_at(e.addr)
            }
            HistoryAction::FreeRequested | HistoryAction::Oom => true,
        };
        if !ok {
            r.proof.stopped_at_entry = Some(i);
            break;
        }
    }
    let mut proof = r.proof;
    proof.final_segments = r.a.segments();
    let recorded = recorded_segments(at_snapshot, history.device);
    let first = (0..recorded.len().max(proof.final_segments.len()))
        .find(|&i| recorded.get(i) != proof.final_segments.get(i));
    proof.final_segments_identical = first.is_none() && proof.stopped_at_entry.is_none();
    proof.first_segment_difference = first.map(|i| {
        (
            recorded.get(i).cloned(),
            proof.final_segments.get(i).cloned(),
        )
    });
    (proof, r.fixes)
}

/// A replay under way.
struct Replay {
    a: Allocator,
    driver: Recorded,
    /// The blocks live since the start (their sizes are guesses until freed).
    start_live: FxHashSet<u64>,
    /// The start's blocks found too small: address → bytes more.
    fixes: BTreeMap<u64, u64>,
    proof: Proof,
}

impl Replay {
    /// An allocation: the model's placement checked against the recorded one, and the
    /// block put where it really went either way. False where it cannot be.
    fn alloc(&mut self, i: usize, e: &HistoryEntry) -> bool {
        self.proof.allocations += 1;
        let placed = self.a.malloc(e.size_bytes, e.stream, &mut self.driver).ok();
        let at = placed.map(|id| self.a.blocks.get(id).addr);
        if at == Some(e.addr) {
            self.proof.placed_as_recorded += 1;
            return true;
        }
        if self.proof.first_divergence.is_none() {
            self.proof.first_divergence = Some(Divergence {
                entry: i,
                time_ns: e.time_ns,
                requested_bytes: e.size_bytes,
                recorded_addr: e.addr,
                simulated_addr: at.filter(|&a| a < FIRST_PHANTOM_ADDR),
            });
        }
        if let Some(addr) = at {
            self.a.free(addr);
            self.a.release_phantoms();
        }
        if let Some((block, extra)) = self.start_block_too_small(e.addr) {
            self.fixes.entry(block).or_insert(extra);
        }
        self.a.place_at(e.addr, e.size_bytes, &mut self.driver)
    }

    /// Where `addr` lies up to 1 MiB into a cached large-pool block that follows a block
    /// live since the start: that block's true size reaches `addr` (a remainder not split).
    fn start_block_too_small(&self, addr: u64) -> Option<(u64, u64)> {
        let blocks = &self.a.blocks;
        let (_, holder) = blocks
            .alive()
            .find(|(_, b)| !b.allocated && b.mapped && b.addr < addr && addr < b.end())?;
        let extra = addr - holder.addr;
        let large = !blocks.pools[holder.pool as usize].small && holder.expandable.is_none();
        if !large || extra > SMALL_REQUEST_BYTES || holder.prev == NO_BLOCK {
            return None;
        }
        let prev = blocks.get(holder.prev);
        (prev.allocated && self.start_live.contains(&prev.addr)).then_some((prev.addr, extra))
    }
}
