//! Each op span's nesting depth on its thread: how many spans of the same thread (of any
//! kind) enclose it.

use crate::model::Recording;

/// The depth of every op of `rec`, in the order of [`Recording::ops`]: the number of
/// spans of its thread that contain it (start at or before its start, end at or after its
/// end) and come before it in (start, longest first) order — so of two identical spans
/// the second is inside the first, and spans that overlap without nesting do not count.
/// O(n log n): spans in that order, and a Fenwick tree counting the ends seen so far at
/// or after each end; 4 bytes an op, plus 16 a span of the largest thread while it runs.
pub fn op_depths(rec: &Recording) -> Vec<u32> {
    let mut by_thread: Vec<Vec<u32>> = vec![Vec::new(); rec.threads.len()];
    let mut depths = vec![0u32; rec.ops.len()];
    for (i, op) in rec.ops.iter().enumerate() {
        if let Some(list) = by_thread.get_mut(op.thread as usize) {
            list.push(i as u32);
        }
    }
    let span = |i: u32| {
        rec.ops
            .get(i as usize)
            .map_or((0, 0), |o| (o.start_ns, o.end_ns))
    };
    for mut list in by_thread {
        list.sort_by_key(|&i| {
            let (start, end) = span(i);
            (start, std::cmp::Reverse(end))
        });
        let mut ends: Vec<i64> = list.iter().map(|&i| span(i).1).collect();
        ends.sort_unstable();
        ends.dedup();
        let mut seen = Fenwick::new(ends.len());
        for (count, &i) in list.iter().enumerate() {
            let end = span(i).1;
            let rank = ends.partition_point(|&e| e < end);
            // Spans before this one whose end is at or after its end.
            let depth = count - seen.prefix(rank);
            if let Some(d) = depths.get_mut(i as usize) {
                *d = u32::try_from(depth).unwrap_or(u32::MAX);
            }
            seen.add(rank);
        }
    }
    depths
}

/// Counts per position, with prefix sums in O(log n).
struct Fenwick {
    tree: Vec<usize>,
}

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick {
            tree: vec![0; n + 1],
        }
    }

    /// One more at position `at` (0-based).
    fn add(&mut self, at: usize) {
        let mut i = at + 1;
        while let Some(slot) = self.tree.get_mut(i) {
            *slot += 1;
            i += i & i.wrapping_neg();
        }
    }

    /// How many at positions below `end`.
    fn prefix(&self, end: usize) -> usize {
        let mut sum = 0;
        let mut i = end;
        while i > 0 {
            sum += self.tree.get(i).copied().unwrap_or(0);
            i &= i - 1;
        }
        sum
    }
}
