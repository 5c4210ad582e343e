//! Following the recorded run where the model cannot decide: an allocation put where
//! the real allocator put it, a recorded segment made when an allocation shows it is in
//! use, a segment released where the real one was, the model's own extra segments dropped.

use super::allocator::{Allocator, SMALL_SEGMENT_BYTES};
use super::blocks::{BlockId, LARGE_POOL, NO_BLOCK, SMALL_POOL, SimBlock};
use super::driver::{FIRST_PHANTOM_ADDR, Recorded};

impl Allocator {
    /// Put an allocation where the real allocator put it: carved out of the cached block
    /// that holds `addr`. False where no cached block does.
    pub(super) fn place_at(&mut self, addr: u64, requested: u64, driver: &mut Recorded) -> bool {
        self.materialize(addr, driver);
        let size = self.round_size(requested);
        let holder = self.blocks.alive().find(|(_, b)| {
            !b.allocated && b.mapped && b.addr <= addr && addr.saturating_add(size) <= b.end()
        });
        let Some((mut id, b)) = holder.map(|(id, b)| (id, *b)) else {
            return false;
        };
        self.blocks.uncache(id);
        if addr > b.addr {
            let front = self.split_front(id, addr - b.addr);
            self.blocks.cache(front);
            self.blocks.uncache(id);
        }
        id = self.alloc_found_block(id, size, requested);
        self.blocks.get(id).addr == addr
    }

    /// Make the recorded segment waiting to be handed out that holds `addr`, if any.
    pub(super) fn materialize(&mut self, addr: u64, driver: &mut Recorded) {
        let Some(at) = (driver.waiting.iter())
            .position(|&(base, size)| (base..base.saturating_add(size)).contains(&addr))
        else {
            return;
        };
        let Some((base, size)) = driver.waiting.remove(at) else {
            return;
        };
        let pool = if size == SMALL_SEGMENT_BYTES {
            SMALL_POOL
        } else {
            LARGE_POOL
        };
        let id = self.blocks.make(SimBlock {
            addr: base,
            size,
            requested: 0,
            stream: 0,
            prev: NO_BLOCK,
            next: NO_BLOCK,
            pool,
            allocated: false,
            mapped: true,
            expandable: None,
            gc_base: 0,
            alive: true,
        });
        self.blocks.cache(id);
        self.totals.reserved_bytes += size;
        self.totals.device_mallocs += 1;
    }

    /// Release the whole cached segment at `addr`; false where there is none.
    pub(super) fn release_segment_at(&mut self, addr: u64) -> bool {
        let whole = self
            .blocks
            .alive()
            .find(|(_, b)| b.addr == addr && !b.is_split() && !b.allocated && b.mapped);
        let Some((id, _)) = whole else { return false };
        self.release_block(id, &mut Recorded::new());
        true
    }

    /// Release cached whole segments the model made where the real allocator made none.
    pub(super) fn release_phantoms(&mut self) {
        let phantoms: Vec<BlockId> = (self.blocks.alive())
            .filter(|(_, b)| b.addr >= FIRST_PHANTOM_ADDR && !b.is_split() && !b.allocated)
            .map(|(id, _)| id)
            .collect();
        for id in phantoms {
            self.release_block(id, &mut Recorded::new());
        }
    }
}
