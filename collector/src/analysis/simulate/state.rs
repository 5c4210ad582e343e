//! The simulated allocator's state in and out: seeded with the recorded segments when the
//! history begins (the proof), and read back as segments in the snapshot's terms (a
//! segment per cudaMalloc, or per run of mapped pages of an expandable segment).

use std::collections::BTreeMap;

use super::allocator::Allocator;
use super::blocks::{BlockId, LARGE_POOL, NO_BLOCK, Pool, PoolId, SMALL_POOL, SimBlock};
use crate::model::{BlockState, Segment, SegmentPool};

/// One segment as the simulation ends with it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SimSegment {
    /// Its address (the recorded one in the proof; made up in predictions).
    #[serde(skip)]
    pub address: u64,
    /// Bytes.
    pub total_size: u64,
    /// In the small pool.
    #[serde(skip)]
    pub small: bool,
    /// Its blocks in address order.
    pub blocks: Vec<SimBlockState>,
}

/// One block of a [`SimSegment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SimBlockState {
    /// Bytes.
    pub size: u64,
    /// `active_allocated` or `inactive`, as snapshots say.
    pub state: &'static str,
}

pub(super) const ALLOCATED: &str = "active_allocated";
pub(super) const INACTIVE: &str = "inactive";

impl Allocator {
    /// Seed the allocator with recorded segments (their live blocks allocated, the rest
    /// cached). Segments of a private pool go to a pool of their own, which no request
    /// of the default pools reaches.
    pub(super) fn seed(&mut self, segments: &[Segment]) {
        let mut private: BTreeMap<((u64, u64), bool), PoolId> = BTreeMap::new();
        for s in segments {
            let small = s.pool == SegmentPool::Small;
            let pool = match s.private_pool {
                None if small => SMALL_POOL,
                None => LARGE_POOL,
                Some(id) => *private.entry((id, small)).or_insert_with(|| {
                    self.blocks.pools.push(Pool {
                        small,
                        ..Pool::default()
                    });
                    (self.blocks.pools.len() - 1) as PoolId
                }),
            };
            self.seed_segment(s, pool);
        }
    }

    fn seed_segment(&mut self, s: &Segment, pool: PoolId) {
        let mut prev = NO_BLOCK;
        for b in &s.blocks {
            let allocated = b.state != BlockState::Inactive;
            let id = self.blocks.make(SimBlock {
                addr: b.address,
                size: b.size_bytes,
                requested: b.requested_size_bytes,
                stream: s.stream,
                prev,
                next: NO_BLOCK,
                pool,
                allocated,
                mapped: true,
                expandable: None,
                gc_base: 0,
                alive: true,
            });
            if prev != NO_BLOCK {
                self.blocks.get_mut(prev).next = id;
            }
            prev = id;
            if allocated {
                self.active.insert(b.address, id);
                self.totals.allocated_bytes += b.size_bytes;
            }
        }
        // Cached once linked: a free block's place in its pool does not depend on links,
        // but merging later does.
        let ids: Vec<BlockId> = self.chain_from_last(prev);
        for id in ids {
            if !self.blocks.get(id).allocated {
                self.blocks.cache(id);
            }
        }
        self.totals.reserved_bytes += s.total_size_bytes;
    }

    fn chain_from_last(&self, mut id: BlockId) -> Vec<BlockId> {
        let mut out = Vec::new();
        while id != NO_BLOCK {
            out.push(id);
            id = self.blocks.get(id).prev;
        }
        out
    }

    /// The segments now, in address order, as a snapshot would list them.
    pub(super) fn segments(&self) -> Vec<SimSegment> {
        let mut out = Vec::new();
        for (id, b) in self.blocks.alive() {
            if b.prev != NO_BLOCK && self.blocks.get(b.prev).mapped || !b.mapped {
                continue;
            }
            let mut seg = SimSegment {
                address: b.addr,
                total_size: 0,
                small: self.blocks.pools[b.pool as usize].small,
                blocks: Vec::new(),
            };
            let mut at = id;
            while at != NO_BLOCK && self.blocks.get(at).mapped {
                let block = self.blocks.get(at);
                seg.total_size += block.size;
                seg.blocks.push(SimBlockState {
                    size: block.size,
                    state: if block.allocated { ALLOCATED } else { INACTIVE },
                });
                at = block.next;
            }
            out.push(seg);
        }
        out.sort_by_key(|s| s.address);
        out
    }

    /// The largest cached free block (fragmentation: the largest request the cache can
    /// serve without new memory).
    pub(super) fn largest_free_bytes(&self) -> u64 {
        (self.blocks.pools.iter())
            .filter_map(|p| p.free.iter().map(|&(_, size, _, _)| size).max())
            .max()
            .unwrap_or(0)
    }
}

/// The snapshot's own segments of one device in the same terms.
pub fn recorded_segments(segments: &[Segment], device: crate::model::DeviceIdx) -> Vec<SimSegment> {
    let mut out: Vec<SimSegment> = (segments.iter())
        .filter(|s| s.device == device)
        .map(|s| SimSegment {
            address: s.address,
            total_size: s.total_size_bytes,
            small: s.pool == SegmentPool::Small,
            blocks: (s.blocks.iter())
                .map(|b| SimBlockState {
                    size: b.size_bytes,
                    state: if b.state == BlockState::Inactive {
                        INACTIVE
                    } else {
                        ALLOCATED
                    },
                })
                .collect(),
        })
        .collect();
    out.sort_by_key(|s| s.address);
    out
}
