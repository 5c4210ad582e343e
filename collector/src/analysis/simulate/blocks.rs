//! The simulated allocator's blocks: an arena of blocks linked into segments, and per
//! pool the free blocks ordered as c10 orders them (stream, size, address: best fit is the
//! first at or above a request) and the unmapped pieces of expandable segments (stream,
//! address).

use std::collections::BTreeSet;

/// Index of a block in [`Blocks`].
pub(super) type BlockId = u32;
/// No block (a segment's ends).
pub(super) const NO_BLOCK: BlockId = u32::MAX;

/// Which pool: the default large and small pools, then private pools (CUDA graphs,
/// `MemPool`), which the simulation carries as recorded.
pub(super) type PoolId = u16;
pub(super) const LARGE_POOL: PoolId = 0;
pub(super) const SMALL_POOL: PoolId = 1;

/// One block: a piece of a segment, allocated, free (cached), or (expandable segments)
/// address space with no memory behind it.
#[derive(Clone, Copy, Debug)]
pub(super) struct SimBlock {
    pub(super) addr: u64,
    pub(super) size: u64,
    /// The size the program asked for (allocated blocks).
    pub(super) requested: u64,
    pub(super) stream: u64,
    pub(super) prev: BlockId,
    pub(super) next: BlockId,
    pub(super) pool: PoolId,
    pub(super) allocated: bool,
    /// Backed by memory (always, outside expandable segments).
    pub(super) mapped: bool,
    /// The expandable segment it lies in, if any.
    pub(super) expandable: Option<u32>,
    /// The pool's free-block lookups when it was cached (garbage collection's age).
    pub(super) gc_base: u64,
    /// In use (not returned to the arena's spares).
    pub(super) alive: bool,
}

impl SimBlock {
    pub(super) fn is_split(&self) -> bool {
        self.prev != NO_BLOCK || self.next != NO_BLOCK
    }

    pub(super) fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }
}

/// A pool's cached blocks.
#[derive(Default)]
pub(super) struct Pool {
    pub(super) small: bool,
    /// Free, mapped blocks: (stream, size, address, id).
    pub(super) free: BTreeSet<(u64, u64, u64, BlockId)>,
    /// Unmapped pieces of expandable segments: (stream, address, id).
    pub(super) unmapped: BTreeSet<(u64, u64, BlockId)>,
    /// Free-block lookups so far (garbage collection counts a block's age in them).
    pub(super) lookups: u64,
}

/// Every block, and the pools.
#[derive(Default)]
pub(super) struct Blocks {
    arena: Vec<SimBlock>,
    spare: Vec<BlockId>,
    pub(super) pools: Vec<Pool>,
}

impl Blocks {
    pub(super) fn new() -> Blocks {
        let mut b = Blocks::default();
        b.pools.push(Pool::default());
        b.pools.push(Pool {
            small: true,
            ..Pool::default()
        });
        b
    }

    pub(super) fn get(&self, id: BlockId) -> &SimBlock {
        &self.arena[id as usize]
    }

    pub(super) fn get_mut(&mut self, id: BlockId) -> &mut SimBlock {
        &mut self.arena[id as usize]
    }

    pub(super) fn make(&mut self, block: SimBlock) -> BlockId {
        match self.spare.pop() {
            Some(id) => {
                self.arena[id as usize] = block;
                id
            }
            None => {
                self.arena.push(block);
                (self.arena.len() - 1) as BlockId
            }
        }
    }

    pub(super) fn forget(&mut self, id: BlockId) {
        self.get_mut(id).alive = false;
        self.spare.push(id);
    }

    /// Every block in use, by id.
    pub(super) fn alive(&self) -> impl Iterator<Item = (BlockId, &SimBlock)> {
        (self.arena.iter().enumerate())
            .filter(|(_, b)| b.alive)
            .map(|(i, b)| (i as BlockId, b))
    }

    /// Put a free block into its pool's cache (its age starts now).
    pub(super) fn cache(&mut self, id: BlockId) {
        let b = *self.get(id);
        let pool = &mut self.pools[b.pool as usize];
        let lookups = pool.lookups;
        if b.mapped {
            pool.free.insert((b.stream, b.size, b.addr, id));
        } else {
            pool.unmapped.insert((b.stream, b.addr, id));
        }
        self.get_mut(id).gc_base = lookups;
    }

    /// Take a block out of its pool's cache (it is being used, merged or released).
    pub(super) fn uncache(&mut self, id: BlockId) {
        let b = *self.get(id);
        let pool = &mut self.pools[b.pool as usize];
        if b.mapped {
            pool.free.remove(&(b.stream, b.size, b.addr, id));
        } else {
            pool.unmapped.remove(&(b.stream, b.addr, id));
        }
    }

    /// Whether a block can take part in a merge or an expansion: free (not allocated).
    pub(super) fn is_free(&self, id: BlockId) -> bool {
        id != NO_BLOCK && !self.get(id).allocated
    }

    /// Merge `src` into `dst` where `src` is free and mapped alike (c10's
    /// `try_merge_blocks`); the bytes taken over, 0 where nothing merged.
    pub(super) fn try_merge(&mut self, dst: BlockId, src: BlockId) -> u64 {
        if !self.is_free(src) || self.get(dst).mapped != self.get(src).mapped {
            return 0;
        }
        self.uncache(src);
        let s = *self.get(src);
        if self.get(dst).prev == src {
            let d = self.get_mut(dst);
            d.addr = s.addr;
            d.prev = s.prev;
            if s.prev != NO_BLOCK {
                self.get_mut(s.prev).next = dst;
            }
        } else {
            self.get_mut(dst).next = s.next;
            if s.next != NO_BLOCK {
                self.get_mut(s.next).prev = dst;
            }
        }
        self.get_mut(dst).size += s.size;
        self.forget(src);
        s.size
    }
}
