//! The removals of bands from the stack, in walk order, indexed so that a band's moves can
//! be found when a view asks for them instead of being stored: band `i` moves exactly when
//! a band allocated before it (a smaller id) is removed while `i` is live, and those
//! removals lie in one contiguous run of this list (between `i`'s allocation and its own
//! removal). Each run is scanned block by block, skipping blocks whose smallest band id is
//! not below `i`, so the work is about the moves found, not the removals passed over.

/// Removals per block: a block whose smallest id is not below the band asked about is
/// skipped with one comparison; 4 bytes per block. A block that is not skipped costs a
/// scan of its removals, so the work per move found is at most this.
const BLOCK: usize = 64;
/// Blocks per super-block, skipped the same way (4 bytes per 4,096 removals): a band that
/// lives through the whole run passes over a million removals in ~250 comparisons.
const SUPER: usize = 64;

/// No removal: the band is live until the device's last event.
pub(super) const NEVER: u32 = u32::MAX;

/// Bands taken off the stack, in the order the walk took them.
#[derive(Clone, Debug, Default)]
pub(super) struct Removals {
    /// The band removed.
    pub band: Vec<u32>,
    /// The walk step (index into the device's points) that removed it.
    pub step: Vec<u32>,
    /// When.
    pub time_ns: Vec<i64>,
    /// Each block of [`BLOCK`] removals: the smallest and largest band id, the bytes.
    blocks: Level,
    /// The same of each super-block of [`BLOCK`] × [`SUPER`] removals.
    supers: Level,
}

/// The smallest and largest band id, and the bytes, of consecutive runs of removals: 16
/// bytes a run.
#[derive(Clone, Debug, Default)]
struct Level {
    min: Vec<u32>,
    max: Vec<u32>,
    bytes: Vec<i64>,
}

impl Level {
    fn add(&mut self, k: usize, run: usize, band: u32, bytes: i64) {
        if k.is_multiple_of(run) {
            self.min.push(band);
            self.max.push(band);
            self.bytes.push(0);
        }
        if let (Some(lo), Some(hi), Some(b)) = (
            self.min.last_mut(),
            self.max.last_mut(),
            self.bytes.last_mut(),
        ) {
            (*lo, *hi, *b) = ((*lo).min(band), (*hi).max(band), b.wrapping_add(bytes));
        }
    }

    fn heap_bytes(&self) -> usize {
        (self.min.capacity() + self.max.capacity()) * 4 + self.bytes.capacity() * 8
    }
}

impl Removals {
    /// Record that `band` (of `bytes`) left the stack at walk step `step`, at `time_ns`.
    pub fn push(&mut self, band: u32, bytes: i64, step: u32, time_ns: i64) {
        let k = self.band.len();
        self.blocks.add(k, BLOCK, band, bytes);
        self.supers.add(k, BLOCK * SUPER, band, bytes);
        self.band.push(band);
        self.step.push(step);
        self.time_ns.push(time_ns);
    }

    /// The bytes of the removals in `from..to` of bands below `below`; `bytes_of` gives a
    /// band's bytes. Whole blocks count by their sums: O(blocks + 2 × 64).
    pub fn bytes_below(
        &self,
        from: usize,
        to: usize,
        below: u32,
        bytes_of: impl Fn(u32) -> i64,
    ) -> i64 {
        let to = to.min(self.band.len());
        let (mut k, mut sum) = (from, 0i64);
        while k < to {
            let mut whole = false;
            for (level, run) in [(&self.supers, BLOCK * SUPER), (&self.blocks, BLOCK)] {
                let r = k / run;
                if !k.is_multiple_of(run) || k + run > to {
                    continue;
                }
                let (Some(&lo), Some(&hi), Some(&b)) =
                    (level.min.get(r), level.max.get(r), level.bytes.get(r))
                else {
                    continue;
                };
                if lo >= below || hi < below {
                    sum = sum.wrapping_add(if hi < below { b } else { 0 });
                    k += run;
                    whole = true;
                    break;
                }
            }
            if !whole {
                if let Some(&band) = self.band.get(k).filter(|&&b| b < below) {
                    sum = sum.wrapping_add(bytes_of(band));
                }
                k += 1;
            }
        }
        sum
    }

    /// The first removal in `from..to` of a band below `below`.
    pub fn next_below(&self, from: usize, to: usize, below: u32) -> Option<usize> {
        let mut first = None;
        self.each_below_until(from, to, below, |k| {
            first = Some(k);
            false
        });
        first
    }

    /// The first removal after walk step `step`.
    pub fn first_after(&self, step: u32) -> usize {
        self.step.partition_point(|&s| s <= step)
    }

    /// Call `found(k)` for each removal `k` in `from..to` whose band id is below `below`,
    /// in walk order.
    pub fn each_below(&self, from: usize, to: usize, below: u32, mut found: impl FnMut(usize)) {
        self.each_below_until(from, to, below, |k| {
            found(k);
            true
        });
    }

    /// [`Self::each_below`] until `found` returns false.
    fn each_below_until(
        &self,
        from: usize,
        to: usize,
        below: u32,
        mut found: impl FnMut(usize) -> bool,
    ) {
        let to = to.min(self.band.len());
        let mut k = from;
        // A (super-)block whose smallest id is not below `below` has nothing to find in any
        // part of it, so it is skipped from wherever `k` is inside it to its end.
        while k < to {
            let sup = k / (BLOCK * SUPER);
            if self.supers.min.get(sup).is_some_and(|&m| m >= below) {
                k = ((sup + 1) * BLOCK * SUPER).min(to);
                continue;
            }
            let block = k / BLOCK;
            let block_end = ((block + 1) * BLOCK).min(to);
            if self.blocks.min.get(block).is_some_and(|&m| m >= below) {
                k = block_end;
                continue;
            }
            for j in k..block_end {
                if self.band.get(j).is_some_and(|&b| b < below) && !found(j) {
                    return;
                }
            }
            k = block_end;
        }
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        (self.band.capacity() + self.step.capacity()) * 4
            + self.time_ns.capacity() * 8
            + self.blocks.heap_bytes()
            + self.supers.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_below_finds_exactly_the_smaller_ids_of_a_run() {
        // Ids in a scrambled order, long enough to cross super-blocks.
        let n = BLOCK * SUPER * 3 + 77;
        let mut r = Removals::default();
        let id = |k: usize| ((k * 7_919 + 13) % (n + 500)) as u32;
        let bytes = |b: u32| i64::from(b % 97) + 1;
        for k in 0..n {
            r.push(id(k), bytes(id(k)), k as u32 * 2, k as i64 * 10);
        }
        for (from, to, below) in [
            (0, n, 100),
            (5, n - 3, 4_000),
            (BLOCK * SUPER - 1, BLOCK * SUPER * 2 + 5, 50),
            (17, 17, 1_000),
            (0, n, 0),
            (0, n + 10, u32::MAX),
        ] {
            let mut got = Vec::new();
            r.each_below(from, to, below, |k| got.push(k));
            let want: Vec<usize> = (from..to.min(n)).filter(|&k| id(k) < below).collect();
            assert_eq!(got, want, "{from}..{to} below {below}");
            assert_eq!(r.next_below(from, to, below), want.first().copied());
            let sum: i64 = want.iter().map(|&k| bytes(id(k))).sum();
            assert_eq!(r.bytes_below(from, to, below, bytes), sum, "{from}..{to}");
        }
        assert_eq!(r.first_after(0), 1);
        assert_eq!(r.first_after(5), 3);
    }
}
