//! `expandable_segments:True`: per stream and pool one range of address space, as large as
//! the device's memory and an eighth more, into which pages are mapped as requests need
//! them (2 MiB pages in the small pool, 20 MiB in the large), new memory going at the lowest
//! address where the request fits (c10's `find_expandable_block`, `map_block`,
//! `try_allocate_expandable_block`, `unmap_block`).

use super::allocator::{Allocator, LARGE_SEGMENT_BYTES, SMALL_SEGMENT_BYTES};
use super::blocks::{BlockId, NO_BLOCK, PoolId, SimBlock};
use super::driver::Driver;

/// The address space of an expandable segment where the device's memory is unknown: the
/// size a device of this memory would get (an H100's 80 GiB and an eighth). Only requests
/// larger than it notice.
const UNKNOWN_DEVICE_BYTES: u64 = 80 << 30;

/// One expandable segment's address space.
pub(super) struct Expandable {
    pub(super) base: u64,
    pub(super) page_bytes: u64,
}

impl Allocator {
    /// Map pages for a request of `size` in an expandable segment of `pool` on `stream`:
    /// the free block that now holds it, taken out of the cache.
    pub(super) fn try_allocate_expandable_block(
        &mut self,
        pool: PoolId,
        stream: u64,
        size: u64,
        driver: &mut dyn Driver,
    ) -> Option<BlockId> {
        let mut candidate = self.find_expandable_block(pool, stream, size, driver);
        let c = *self.blocks.get(candidate);
        if !c.mapped && !self.map_block(candidate, c.size.min(size), driver) {
            return None;
        }
        while self.blocks.get(candidate).size < size {
            let remaining = size - self.blocks.get(candidate).size;
            let next = self.blocks.get(candidate).next;
            if next == NO_BLOCK {
                return None;
            }
            let next_size = self.blocks.get(next).size;
            if !self.map_block(next, remaining.min(next_size), driver) {
                return None;
            }
            candidate = next;
        }
        self.blocks.uncache(candidate);
        Some(candidate)
    }

    /// The lowest-addressed free and unmapped space of `size` in the pool's expandable
    /// segments on `stream`, or a new segment's whole unmapped range.
    fn find_expandable_block(
        &mut self,
        pool: PoolId,
        stream: u64,
        size: u64,
        driver: &mut dyn Driver,
    ) -> BlockId {
        let unmapped = &self.blocks.pools[pool as usize].unmapped;
        for &(s, _, id) in unmapped.range((stream, 0, 0)..) {
            if s != stream {
                break;
            }
            let prev = self.blocks.get(id).prev;
            let c = if self.blocks.is_free(prev) { prev } else { id };
            if self.has_room_from(c, size) {
                return c;
            }
        }
        let page_bytes = if self.blocks.pools[pool as usize].small {
            SMALL_SEGMENT_BYTES
        } else {
            LARGE_SEGMENT_BYTES
        };
        let device = driver.allowed_bytes().unwrap_or(UNKNOWN_DEVICE_BYTES);
        // c10 sizes it by the device alone; a request larger than the device (let past the
        // capacity to go on after a predicted OOM) still gets room.
        let space = (device + device / 8).max(size).div_ceil(page_bytes) * page_bytes;
        let base = driver.reserve_address_space(space);
        self.expandables.push(Expandable { base, page_bytes });
        let id = self.blocks.make(SimBlock {
            addr: base,
            size: space,
            requested: 0,
            stream,
            prev: NO_BLOCK,
            next: NO_BLOCK,
            pool,
            allocated: false,
            mapped: false,
            expandable: Some((self.expandables.len() - 1) as u32),
            gc_base: 0,
            alive: true,
        });
        self.blocks.cache(id);
        id
    }

    /// Whether free and unmapped blocks from `id` on hold `size` bytes.
    fn has_room_from(&self, mut id: BlockId, size: u64) -> bool {
        let mut bytes = 0u64;
        while bytes < size && self.blocks.is_free(id) {
            bytes += self.blocks.get(id).size;
            id = self.blocks.get(id).next;
        }
        bytes >= size
    }

    /// Map the pages under the first `size` bytes of the unmapped block `id`, and merge it
    /// with its free neighbours. False when the device has no room.
    fn map_block(&mut self, id: BlockId, size: u64, driver: &mut dyn Driver) -> bool {
        let b = *self.blocks.get(id);
        let Some(es) = b.expandable.and_then(|e| self.expandables.get(e as usize)) else {
            return false;
        };
        let end = (b.addr + size - es.base).div_ceil(es.page_bytes) * es.page_bytes + es.base;
        let bytes = end - b.addr;
        if bytes == 0 || !driver.map(b.addr, bytes, self.totals.reserved_bytes) {
            return false;
        }
        self.blocks.uncache(id);
        self.blocks.get_mut(id).mapped = true;
        if bytes < b.size {
            let rest = self.blocks.make(SimBlock {
                addr: b.addr + bytes,
                size: b.size - bytes,
                prev: id,
                mapped: false,
                ..b
            });
            if b.next != NO_BLOCK {
                self.blocks.get_mut(b.next).prev = rest;
            }
            let m = self.blocks.get_mut(id);
            m.next = rest;
            m.size = bytes;
            self.blocks.cache(rest);
        }
        let (prev, next) = (self.blocks.get(id).prev, self.blocks.get(id).next);
        self.blocks.try_merge(id, prev);
        self.blocks.try_merge(id, next);
        self.blocks.cache(id);
        self.totals.reserved_bytes += bytes;
        self.totals.device_mallocs += 1;
        true
    }

    /// Unmap the whole pages inside the cached free block `id` (the bytes before and after
    /// them stay free and mapped); a segment left with no mapped page is released.
    pub(super) fn unmap_block(&mut self, id: BlockId) {
        let b = *self.blocks.get(id);
        let Some(es) = b.expandable.and_then(|e| self.expandables.get(e as usize)) else {
            return;
        };
        let page = es.page_bytes;
        let first = (b.addr - es.base).div_ceil(page) * page + es.base;
        let last = (b.end() - es.base) / page * page + es.base;
        if first >= last {
            return;
        }
        self.blocks.uncache(id);
        let mut prev = b.prev;
        if first > b.addr {
            let before = self.piece(b, b.addr, first - b.addr, prev, id);
            if prev != NO_BLOCK {
                self.blocks.get_mut(prev).next = before;
            }
            prev = before;
        }
        let mut next = b.next;
        if last < b.end() {
            let after = self.piece(b, last, b.end() - last, id, next);
            if next != NO_BLOCK {
                self.blocks.get_mut(next).prev = after;
            }
            next = after;
        }
        self.blocks.relocate(id, first);
        let u = self.blocks.get_mut(id);
        (u.size, u.mapped, u.prev, u.next) = (last - first, false, prev, next);
        self.blocks.try_merge(id, prev);
        self.blocks.try_merge(id, next);
        self.totals.reserved_bytes -= last - first;
        self.totals.device_frees += 1;
        if self.blocks.get(id).is_split() {
            self.blocks.cache(id);
        } else {
            // No page of the segment is mapped: its address space goes back.
            self.blocks.forget(id);
        }
    }

    /// A free mapped block cut from `b`, cached.
    fn piece(
        &mut self,
        b: SimBlock,
        addr: u64,
        size: u64,
        prev: BlockId,
        next: BlockId,
    ) -> BlockId {
        let id = self.blocks.make(SimBlock {
            addr,
            size,
            prev,
            next,
            ..b
        });
        self.blocks.cache(id);
        id
    }
}
