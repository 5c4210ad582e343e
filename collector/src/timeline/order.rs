//! Memory events in time order, per device.
//!
//! A trace lists each thread's events in time order, and a multi-threaded one interleaves
//! them a stretch at a time: the 10 GB benchmark trace's 5 M events of one device are 189
//! sorted runs, each overlapping only the end of the ones before it. A general sort merges
//! all of it about log2(runs) times over (120 ms there); merging each run into only the
//! part of the sorted prefix it overlaps touches each event about twice (50 ms). Runs that
//! overlap much of what precedes them would make that quadratic, so past a budget of moves
//! the rest is left to the general sort.

use crate::model::Recording;

/// How many element moves, per element, the run merging may spend before it hands the
/// slice to the general O(n log n) sort. Interleaved threads cost about 1–2 (each run
/// moves itself and the overlapped tail of what came before); the budget bounds hostile
/// orders (every run reaching back to the start) to a few passes more than the sort alone.
const MERGE_BUDGET_PER_ELEMENT: usize = 4;

/// Indices into `rec.mem_events` of each device's events (by `DeviceIdx`), in time order;
/// events at the same time stay in file order.
pub(crate) fn per_device(rec: &Recording) -> Vec<Vec<u32>> {
    let mut per_device: Vec<Vec<u32>> = vec![Vec::new(); rec.devices.len()];
    for (i, e) in rec.mem_events.iter().enumerate() {
        if let Some(list) = per_device.get_mut(e.device as usize) {
            list.push(i as u32);
        }
    }
    for order in &mut per_device {
        sort_runs_by_key(order, |&i| rec.mem_events[i as usize].time_ns);
    }
    per_device
}

/// Stable sort of `items` by `key`, fast where they are a few sorted runs each overlapping
/// only the end of what precedes it: each run is merged into the sorted prefix from the
/// first element greater than its own first, which leaves everything before that in place.
/// O(n) for such input; O(n log n) for any.
pub(crate) fn sort_runs_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    let mut budget = items.len().saturating_mul(MERGE_BUDGET_PER_ELEMENT);
    let mut sorted = run_end(items, 0, &key);
    while sorted < items.len() {
        let end = run_end(items, sorted, &key);
        let first = key(&items[sorted]);
        // Everything before `from` is no greater than the run's first element, nor than
        // anything after it in the prefix: only [from, end) needs the merge.
        let from = items[..sorted].partition_point(|x| key(x) <= first);
        let cost = end - from;
        if cost > budget {
            items.sort_by_key(key);
            return;
        }
        budget -= cost;
        // Two sorted runs: the standard library's stable sort finds them and merges once.
        items[from..end].sort_by_key(&key);
        sorted = end;
    }
}

/// The end of the non-decreasing run that starts at `start`.
fn run_end<T, K: Ord>(items: &[T], start: usize, key: &impl Fn(&T) -> K) -> usize {
    let mut end = (start + 1).min(items.len());
    while end < items.len() && key(&items[end - 1]) <= key(&items[end]) {
        end += 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::sort_runs_by_key;

    /// xorshift: reproducible pseudo-random numbers without a dependency.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed.max(1);
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// Sorts `keys` both ways: (key, position) pairs show stability.
    fn check(keys: &[i64], what: &str) {
        let mut ours: Vec<(i64, usize)> = keys.iter().copied().zip(0..).collect();
        let mut std = ours.clone();
        sort_runs_by_key(&mut ours, |p| p.0);
        std.sort_by_key(|p| p.0);
        assert_eq!(ours, std, "{what}");
    }

    #[test]
    fn equals_the_stable_sort_on_interleaved_threads_ties_and_hostile_orders() {
        let mut next = rng(7);
        // Two threads' runs per step, the second starting inside the first's time range.
        let mut interleaved = Vec::new();
        for step in 0..50i64 {
            let base = step * 1_000;
            interleaved.extend((0..40).map(|i| base + i * 20));
            interleaved.extend((0..40).map(|i| base + 300 + i * 15));
        }
        check(&interleaved, "interleaved threads");
        // Many equal keys across runs: ties keep input order.
        let ties: Vec<i64> = (0..2_000).map(|_| (next() % 5) as i64).collect();
        check(&ties, "ties");
        // Descending: every run reaches back to the start (the budget's case).
        let descending: Vec<i64> = (0..3_000).rev().collect();
        check(&descending, "descending");
        let random: Vec<i64> = (0..5_000).map(|_| next() as i64).collect();
        check(&random, "random");
        let sawtooth: Vec<i64> = (0..5_000).map(|i| (i % 97) * 3 + i / 97).collect();
        check(&sawtooth, "sawtooth");
        for n in 0..4 {
            let small: Vec<i64> = (0..n).map(|_| (next() % 3) as i64).collect();
            check(&small, "small");
        }
        check(&[i64::MAX, i64::MIN, 0, i64::MIN, i64::MAX], "extremes");
    }
}
