//! Giving cached memory back to the driver: one or more oversize blocks when a segment
//! cannot be had (`release_available_cached_blocks`, with `max_split_size_mb`), every
//! unsplit cached block on a retry or `torch.cuda.empty_cache()` (`release_cached_blocks`;
//! free pages of expandable segments are unmapped), and the oldest cached blocks past
//! `garbage_collection_threshold` (`garbage_collect_cached_blocks`).

use super::allocator::Allocator;
use super::blocks::{BlockId, PoolId};
use super::driver::Driver;

impl Allocator {
    /// Release oversize cached blocks on `stream` until `size` (at least
    /// `max_split_size`) is freed; whether enough was.
    pub(super) fn release_available_cached_blocks(
        &mut self,
        pool: PoolId,
        stream: u64,
        size: u64,
        driver: &mut dyn Driver,
    ) -> bool {
        let Some(max_split) = self.config.max_split_size_bytes else {
            return false;
        };
        let wanted = size.max(max_split);
        let free = &self.blocks.pools[pool as usize].free;
        if let Some(&(s, _, _, id)) = free.range((stream, wanted, 0, 0)..).next()
            && s == stream
        {
            self.release_block(id, driver);
            return true;
        }
        // No single block is large enough: the largest oversize blocks, down.
        let below: Vec<(u64, u64, u64, BlockId)> = free
            .range(..(stream, wanted, 0, 0))
            .rev()
            .take_while(|&&(s, block_size, _, _)| s == stream && block_size >= max_split)
            .copied()
            .collect();
        let mut released = 0u64;
        for (_, block_size, _, id) in below {
            if released >= wanted {
                break;
            }
            released += block_size;
            self.release_block(id, driver);
        }
        released >= wanted
    }

    /// Release every cached block that is a whole segment, in every pool, and unmap the
    /// free pages of expandable segments (c10's `release_cached_blocks`).
    pub(super) fn release_cached_blocks(&mut self, driver: &mut dyn Driver) {
        for pool in 0..self.blocks.pools.len() {
            if pool >= 2 {
                // Private pools are released only when their graph is gone: as recorded.
                continue;
            }
            let cached: Vec<BlockId> = (self.blocks.pools[pool].free.iter())
                .map(|&(_, _, _, id)| id)
                .collect();
            let mut to_unmap = Vec::new();
            for id in cached {
                let b = *self.blocks.get(id);
                if b.expandable.is_some() {
                    to_unmap.push(id);
                } else if !b.is_split() {
                    self.release_block(id, driver);
                }
            }
            for id in to_unmap {
                self.unmap_block(id);
            }
        }
    }

    /// `cudaFree` a cached block that is a whole segment.
    pub(super) fn release_block(&mut self, id: BlockId, driver: &mut dyn Driver) {
        let b = *self.blocks.get(id);
        self.blocks.uncache(id);
        driver.free(b.addr, b.size);
        self.totals.reserved_bytes -= b.size;
        self.totals.device_frees += 1;
        self.blocks.forget(id);
    }

    /// Free cached whole segments of the large pool older than the average, until the
    /// reserved memory is below the threshold's share of the allowed memory.
    pub(super) fn garbage_collect(&mut self, driver: &mut dyn Driver) {
        let (Some(threshold), Some(allowed)) = (
            self.config.garbage_collection_threshold,
            driver.allowed_bytes(),
        ) else {
            return;
        };
        let limit = (threshold * allowed as f64) as u64;
        if self.totals.reserved_bytes <= limit {
            return;
        }
        let target = self.totals.reserved_bytes - limit;
        let pool = &self.blocks.pools[super::blocks::LARGE_POOL as usize];
        let lookups = pool.lookups;
        let age = |b: &super::blocks::SimBlock| lookups.saturating_sub(b.gc_base) as f64;
        let mut freeable: Vec<BlockId> = (pool.free.iter())
            .map(|&(_, _, _, id)| id)
            .filter(|&id| !self.blocks.get(id).is_split())
            .collect();
        let mut total_age: f64 = freeable.iter().map(|&id| age(self.blocks.get(id))).sum();
        let mut reclaimed = 0u64;
        while reclaimed < target && !freeable.is_empty() {
            let threshold_age = total_age / freeable.len() as f64;
            let (old, young): (Vec<BlockId>, Vec<BlockId>) = freeable
                .iter()
                .partition(|&&id| age(self.blocks.get(id)) >= threshold_age);
            if old.is_empty() {
                break;
            }
            for id in old {
                let b = *self.blocks.get(id);
                if b.expandable.is_some() {
                    continue;
                }
                reclaimed += b.size;
                total_age -= age(&b);
                self.release_block(id, driver);
            }
            freeable = young;
        }
    }
}
