//! The caching allocator's rules as c10's `DeviceCachingAllocator` implements them
//! (`c10/cuda/CUDACachingAllocator.cpp`): sizes rounded to 512 bytes (or to power-of-two
//! divisions), requests of at most 1 MiB from the small pool in 2 MiB segments, larger
//! ones from the large pool (20 MiB segments below 10 MiB, else rounded up to 2 MiB), best
//! fit per stream by size then address, a block split where its remainder is worth keeping,
//! merged with free neighbours when freed, and segments released only whole.

use rustc_hash::FxHashMap;

use super::blocks::{BlockId, Blocks, LARGE_POOL, NO_BLOCK, PoolId, SMALL_POOL, SimBlock};
use super::config::AllocatorConfig;
use super::driver::Driver;

/// Every block is a multiple of this, and at least this (c10's `kMinBlockSize`).
pub(super) const MIN_BLOCK_BYTES: u64 = 512;
/// The largest request the small pool serves (`kSmallSize`).
pub(super) const SMALL_REQUEST_BYTES: u64 = 1 << 20;
/// A small-pool segment (`kSmallBuffer`); also an expandable small pool's page.
pub(super) const SMALL_SEGMENT_BYTES: u64 = 2 << 20;
/// Requests below this share a 20 MiB segment (`kMinLargeAlloc`).
const MIN_LARGE_ALLOC_BYTES: u64 = 10 << 20;
/// The segment for requests of 1–10 MiB (`kLargeBuffer`); also an expandable large pool's
/// page, and how far above a request an oversize block may be.
pub(super) const LARGE_SEGMENT_BYTES: u64 = 20 << 20;
/// Larger segments are rounded up to this (`kRoundLarge`).
const LARGE_ROUNDING_BYTES: u64 = 2 << 20;

/// The allocator's running totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Bytes in allocated blocks.
    pub allocated_bytes: u64,
    /// Bytes of segments (mapped pages, for expandable segments).
    pub reserved_bytes: u64,
    /// `cudaMalloc` calls (and page mappings of expandable segments).
    pub device_mallocs: u64,
    /// `cudaFree` calls (and page unmappings).
    pub device_frees: u64,
}

/// A request the allocator could not satisfy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OutOfMemory {
    /// What it asked the driver for last (a segment, or pages).
    pub(super) wanted_bytes: u64,
}

/// One device's simulated caching allocator.
pub(super) struct Allocator {
    pub(super) config: AllocatorConfig,
    pub(super) blocks: Blocks,
    /// Allocated blocks by address.
    pub(super) active: FxHashMap<u64, BlockId>,
    pub(super) expandables: Vec<super::expandable::Expandable>,
    pub(super) totals: Totals,
}

impl Allocator {
    pub(super) fn new(config: AllocatorConfig) -> Allocator {
        Allocator {
            config,
            blocks: Blocks::new(),
            active: FxHashMap::default(),
            expandables: Vec::new(),
            totals: Totals::default(),
        }
    }

    /// c10's `round_size`.
    pub(super) fn round_size(&self, bytes: u64) -> u64 {
        if bytes < MIN_BLOCK_BYTES {
            return MIN_BLOCK_BYTES;
        }
        let divisions = self.config.divisions_for(bytes);
        if divisions > 0 && bytes > MIN_BLOCK_BYTES.saturating_mul(divisions) {
            next_power2_division(bytes, divisions)
        } else {
            bytes
                .div_ceil(MIN_BLOCK_BYTES)
                .saturating_mul(MIN_BLOCK_BYTES)
        }
    }

    /// Serve a request of `requested` bytes on `stream` (c10's `malloc`): the block's id.
    pub(super) fn malloc(
        &mut self,
        requested: u64,
        stream: u64,
        driver: &mut dyn Driver,
    ) -> Result<BlockId, OutOfMemory> {
        let size = self.round_size(requested);
        let pool = if size <= SMALL_REQUEST_BYTES {
            SMALL_POOL
        } else {
            LARGE_POOL
        };
        let mut found = self.get_free_block(pool, stream, size);
        if found.is_none() {
            if self.config.garbage_collection_threshold.is_some() {
                self.garbage_collect(driver);
            }
            found = self.alloc_block(pool, stream, size, driver);
            if found.is_none() && self.release_available_cached_blocks(pool, stream, size, driver) {
                found = self.alloc_block(pool, stream, size, driver);
            }
            if found.is_none() {
                self.release_cached_blocks(driver);
                found = self.alloc_block(pool, stream, size, driver);
            }
        }
        let Some(block) = found else {
            let wanted_bytes = if self.config.expandable_segments {
                size
            } else {
                allocation_size(size)
            };
            return Err(OutOfMemory { wanted_bytes });
        };
        Ok(self.alloc_found_block(block, size, requested))
    }

    /// The best cached block for `size` on `stream` (c10's `get_free_block`), taken out
    /// of the cache.
    fn get_free_block(&mut self, pool: PoolId, stream: u64, size: u64) -> Option<BlockId> {
        let gc = self.config.garbage_collection_threshold.is_some();
        let max_split = self.config.max_split_size_bytes.unwrap_or(u64::MAX);
        let expandable_on = self.config.expandable_segments;
        if gc {
            self.blocks.pools[pool as usize].lookups += 1;
        }
        let p = &self.blocks.pools[pool as usize];
        let mut candidates = p.free.range((stream, size, 0, 0)..);
        let mut key = *candidates.next().filter(|k| k.0 == stream)?;
        if self.blocks.get(key.3).expandable.is_some() {
            if expandable_on {
                // An expandable block counts as the size it can grow to.
                for next in candidates {
                    if next.0 != stream
                        || self.blocks.get(key.3).expandable.is_none()
                        || self.expandable_size(next.3) >= self.expandable_size(key.3)
                    {
                        break;
                    }
                    key = *next;
                }
            } else {
                key = *candidates
                    .find(|k| k.0 != stream || self.blocks.get(k.3).expandable.is_none())?;
                if key.0 != stream {
                    return None;
                }
            }
        }
        let block_size = key.1;
        if size < max_split && block_size >= max_split {
            return None;
        }
        if size >= max_split && block_size >= size.saturating_add(LARGE_SEGMENT_BYTES) {
            return None;
        }
        self.blocks.uncache(key.3);
        Some(key.3)
    }

    /// A free block's size plus the unmapped space right after it.
    fn expandable_size(&self, id: BlockId) -> u64 {
        let b = self.blocks.get(id);
        let next = (b.next != NO_BLOCK).then(|| self.blocks.get(b.next));
        b.size + next.filter(|n| !n.mapped).map_or(0, |n| n.size)
    }

    /// New memory for the request (c10's `alloc_block`): a segment from the driver, or
    /// pages of an expandable segment.
    fn alloc_block(
        &mut self,
        pool: PoolId,
        stream: u64,
        size: u64,
        driver: &mut dyn Driver,
    ) -> Option<BlockId> {
        let bytes = allocation_size(size);
        if let Some(allowed) = driver.allowed_bytes()
            && self.config.garbage_collection_threshold.is_some()
            && self.totals.reserved_bytes.saturating_add(bytes) > allowed
        {
            return None;
        }
        if self.config.expandable_segments {
            return self.try_allocate_expandable_block(pool, stream, size, driver);
        }
        let addr = driver.malloc(bytes, self.totals.reserved_bytes)?;
        self.totals.reserved_bytes += bytes;
        self.totals.device_mallocs += 1;
        Some(self.blocks.make(SimBlock {
            addr,
            size: bytes,
            requested: 0,
            stream,
            prev: NO_BLOCK,
            next: NO_BLOCK,
            pool,
            allocated: false,
            mapped: true,
            expandable: None,
            gc_base: 0,
            alive: true,
        }))
    }

    /// c10's `should_split`.
    fn should_split(&self, block: BlockId, size: u64) -> bool {
        let b = self.blocks.get(block);
        let remaining = b.size - size;
        if self.blocks.pools[b.pool as usize].small || self.config.expandable_segments {
            remaining >= MIN_BLOCK_BYTES
        } else {
            size < self.config.max_split_size_bytes.unwrap_or(u64::MAX)
                && remaining > SMALL_REQUEST_BYTES
        }
    }

    /// Hand out `block` for a request rounded to `size` (c10's `alloc_found_block`): the
    /// front of it, the remainder split off and cached where worth it.
    pub(super) fn alloc_found_block(
        &mut self,
        block: BlockId,
        size: u64,
        requested: u64,
    ) -> BlockId {
        let taken = if self.should_split(block, size) {
            self.split_front(block, size)
        } else {
            block
        };
        let b = self.blocks.get_mut(taken);
        b.allocated = true;
        b.requested = requested;
        let (addr, bytes) = (b.addr, b.size);
        self.active.insert(addr, taken);
        self.totals.allocated_bytes += bytes;
        taken
    }

    /// Split `size` bytes off the front of `block`: the new front block's id; the rest
    /// (still `block`) is cached.
    pub(super) fn split_front(&mut self, block: BlockId, size: u64) -> BlockId {
        let rest = *self.blocks.get(block);
        let front = self.blocks.make(SimBlock {
            size,
            next: block,
            requested: 0,
            allocated: false,
            ..rest
        });
        if rest.prev != NO_BLOCK {
            self.blocks.get_mut(rest.prev).next = front;
        }
        let r = self.blocks.get_mut(block);
        r.prev = front;
        r.addr += size;
        r.size -= size;
        self.blocks.cache(block);
        front
    }

    /// The program frees the block at `addr` and it completes (c10's `free_block`):
    /// merged with free neighbours and cached. False for an address not allocated.
    pub(super) fn free(&mut self, addr: u64) -> bool {
        let Some(id) = self.active.remove(&addr) else {
            return false;
        };
        let b = self.blocks.get_mut(id);
        b.allocated = false;
        b.requested = 0;
        let (prev, next, bytes) = (b.prev, b.next, b.size);
        self.totals.allocated_bytes -= bytes;
        self.blocks.try_merge(id, prev);
        self.blocks.try_merge(id, next);
        self.blocks.cache(id);
        true
    }
}

/// The segment a rounded request is served from when none is cached (c10's
/// `get_allocation_size`).
pub(super) fn allocation_size(size: u64) -> u64 {
    if size <= SMALL_REQUEST_BYTES {
        SMALL_SEGMENT_BYTES
    } else if size < MIN_LARGE_ALLOC_BYTES {
        LARGE_SEGMENT_BYTES
    } else {
        size.div_ceil(LARGE_ROUNDING_BYTES)
            .saturating_mul(LARGE_ROUNDING_BYTES)
    }
}

/// `bytes` rounded up to the next of `divisions` equal steps between its powers of two
/// (c10's `roundup_power2_next_division`): 1200 in 4 divisions is 1280.
fn next_power2_division(bytes: u64, divisions: u64) -> u64 {
    if bytes <= 4 || divisions <= 1 || bytes.is_power_of_two() {
        return bytes;
    }
    let floor = 1u64 << (63 - bytes.leading_zeros());
    let step = floor >> (63 - divisions.leading_zeros());
    if step == 0 {
        return floor << 1;
    }
    let rounded_down = bytes & !(step - 1);
    if rounded_down == bytes {
        bytes
    } else {
        rounded_down + step
    }
}
