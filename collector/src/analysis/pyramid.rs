//! A multi-resolution min/max summary of a step curve, built once at load time, that
//! answers "the value range in each of C pixel columns of [t0, t1]" in O(C log n) instead
//! of the O(n) walk of [`column_ranges`](super::decimate::column_ranges) — what lets the
//! viewer pan and zoom a trace of tens of millions of memory events at frame rate (Tracy's
//! plot preprocessing, rerun's range-query caches).
//!
//! The curve's points are kept as two flat arrays (time, value). Above them sits a
//! min/max segment tree over blocks of [`LEAF_POINTS`] consecutive points: level 0 holds
//! the range of each block, level k+1 the range of each pair of level-k entries. A column's
//! points are found by binary search on the times; their range is read from O(log n)
//! tree entries plus at most two partial leaf blocks.

use std::sync::Arc;

/// Points per leaf block. A larger leaf makes the tree smaller (2 × 16 bytes per leaf in
/// all levels together, ~2 bytes a point at 16) at the cost of scanning up to 2 × 16 raw
/// values per column; at 16 a 1,600-column query over 10 M points takes ~0.2 ms.
pub const LEAF_POINTS: usize = 16;

/// The times of a curve's points, to share between the pyramids of curves with a point at
/// each of them.
#[derive(Clone, Debug)]
pub struct Times {
    times_ns: Arc<[i64]>,
    leaf_start_ns: Arc<[i64]>,
}

impl Times {
    /// Times in order.
    pub fn new(times_ns: Vec<i64>) -> Times {
        let leaf_start_ns = times_ns.iter().step_by(LEAF_POINTS).copied().collect();
        Times {
            times_ns: times_ns.into(),
            leaf_start_ns,
        }
    }
}

/// A step curve (the value holds from each point to the next) with its min/max pyramid.
#[derive(Clone, Debug, Default)]
pub struct CurvePyramid {
    /// Shared by the curves of one device that have a point at every event (allocated,
    /// reserved and cache of a Chrome trace): 8 bytes a point, once.
    times_ns: Arc<[i64]>,
    /// The time of each leaf block's first point: a small array (1/16 of the points) that
    /// stays in cache, so finding a column's end touches it and one leaf, not ~log n
    /// scattered cache lines of `times_ns`.
    leaf_start_ns: Arc<[i64]>,
    values: Vec<i64>,
    /// `levels[0][b]` = (min, max) of values in leaf block b; each next level halves.
    levels: Vec<Vec<(i64, i64)>>,
}

impl CurvePyramid {
    /// Build from (time_ns, value) points in time order. O(n).
    pub fn build(points: &[(i64, i64)]) -> CurvePyramid {
        let times = Times::new(points.iter().map(|p| p.0).collect());
        CurvePyramid::with_times(&times, points.iter().map(|p| p.1).collect())
    }

    /// Build from the values at `times` (one each, in time order; the shorter decides).
    /// O(n); the times are shared, not copied.
    pub fn with_times(times: &Times, mut values: Vec<i64>) -> CurvePyramid {
        values.truncate(times.times_ns.len());
        let times_ns = if values.len() == times.times_ns.len() {
            times.times_ns.clone()
        } else {
            times.times_ns[..values.len()].into()
        };
        let mut levels = Vec::new();
        let mut level: Vec<(i64, i64)> = values
            .chunks(LEAF_POINTS)
            .map(|c| {
                c.iter()
                    .fold((i64::MAX, i64::MIN), |r, &v| merge(r, (v, v)))
            })
            .collect();
        while level.len() > 1 {
            let next = level
                .chunks(2)
                .map(|p| p.iter().fold((i64::MAX, i64::MIN), |r, &v| merge(r, v)))
                .collect();
            levels.push(std::mem::replace(&mut level, next));
        }
        levels.push(level);
        let leaf_start_ns = if Arc::ptr_eq(&times_ns, &times.times_ns) {
            times.leaf_start_ns.clone()
        } else {
            times_ns.iter().step_by(LEAF_POINTS).copied().collect()
        };
        CurvePyramid {
            times_ns,
            leaf_start_ns,
            values,
            levels,
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the curve has no points.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Time of the first and last point.
    pub fn time_span_ns(&self) -> Option<(i64, i64)> {
        Some((*self.times_ns.first()?, *self.times_ns.last()?))
    }

    /// The points a view of `[start_ns, end_ns]` shows, as (time, value): the one whose
    /// value holds into it, then every one inside. What a view walks instead of asking per
    /// column where it has fewer points than columns.
    pub fn points_in(&self, start_ns: i64, end_ns: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        let first = (self.times_ns.partition_point(|&t| t <= start_ns)).saturating_sub(1);
        let end = self.times_ns.partition_point(|&t| t <= end_ns).max(first);
        let times = self.times_ns.get(first..end).unwrap_or(&[]);
        let values = self.values.get(first..end).unwrap_or(&[]);
        times.iter().copied().zip(values.iter().copied())
    }

    /// How many points a view of `[start_ns, end_ns]` shows ([`Self::points_in`]): two
    /// searches.
    pub fn count_in(&self, start_ns: i64, end_ns: i64) -> usize {
        let first = (self.times_ns.partition_point(|&t| t <= start_ns)).saturating_sub(1);
        self.times_ns
            .partition_point(|&t| t <= end_ns)
            .saturating_sub(first)
    }

    /// The value holding at `time_ns` (set by the last point at or before it).
    pub fn value_at(&self, time_ns: i64) -> Option<i64> {
        let n = self.times_ns.partition_point(|&t| t <= time_ns);
        self.values.get(n.checked_sub(1)?).copied()
    }

    /// The smallest and largest value of the points with index in `lo..hi`.
    pub fn range_of(&self, lo: usize, hi: usize) -> Option<(i64, i64)> {
        let hi = hi.min(self.values.len());
        if lo >= hi {
            return None;
        }
        let (first_full, last_full) = (lo.div_ceil(LEAF_POINTS), hi / LEAF_POINTS);
        if first_full >= last_full {
            return Some(scan(&self.values[lo..hi]));
        }
        let mut r = scan(&self.values[lo..first_full * LEAF_POINTS]);
        r = merge(r, scan(&self.values[last_full * LEAF_POINTS..hi]));
        let (mut a, mut b) = (first_full, last_full);
        for level in &self.levels {
            if a >= b {
                break;
            }
            if a % 2 == 1 {
                r = merge(r, level[a]);
                a += 1;
            }
            if b % 2 == 1 {
                b -= 1;
                r = merge(r, level[b]);
            }
            a /= 2;
            b /= 2;
        }
        Some(r)
    }

    /// The value range of the curve in each of `columns` equal slices of
    /// `[start_ns, end_ns]`: the value carried into the column and every value set inside
    /// it; `None` before the first point. Same answer as
    /// [`column_ranges`](super::decimate::column_ranges), in O(columns × log n) — and
    /// O(columns) when zoomed in so far that columns hold a few points each.
    pub fn column_ranges(
        &self,
        start_ns: i64,
        end_ns: i64,
        columns: usize,
    ) -> Vec<Option<(i64, i64)>> {
        let span = (end_ns - start_ns).max(1) as i128;
        let mut out = Vec::with_capacity(columns);
        let mut next = self.times_ns.partition_point(|&t| t < start_ns);
        let mut carried = next.checked_sub(1).map(|i| self.values[i]);
        for c in 0..columns {
            let column_end = start_ns + ((span * (c as i128 + 1)) / columns as i128) as i64;
            // Zoomed in, most columns hold no point: one comparison settles those.
            let end = if self.times_ns.get(next).is_none_or(|&t| t > column_end) {
                next
            } else {
                self.end_of(next, column_end)
            };
            let inside = self.range_of(next, end);
            out.push(match (carried, inside) {
                (Some(v), Some(r)) => Some(merge((v, v), r)),
                (Some(v), None) => Some((v, v)),
                (None, r) => r,
            });
            if end > next {
                carried = Some(self.values[end - 1]);
            }
            next = end;
        }
        out
    }

    /// The first index at or after `from` whose time is after `t`: gallop over the leaf
    /// starts, then search inside one leaf.
    fn end_of(&self, from: usize, t: i64) -> usize {
        let leaf = from / LEAF_POINTS;
        // The first leaf after `from`'s own that starts after `t`; the end lies before it.
        let after = gallop(&self.leaf_start_ns, leaf + 1, t);
        let lo = from.max((after - 1) * LEAF_POINTS);
        let hi = (after * LEAF_POINTS).min(self.times_ns.len());
        lo + self.times_ns[lo..hi.max(lo)].partition_point(|&x| x <= t)
    }

    /// Largest value of the curve.
    pub fn max(&self) -> Option<i64> {
        self.levels.last()?.first().map(|r| r.1)
    }

    /// Heap bytes held, counting the times as if not shared.
    pub fn heap_bytes(&self) -> usize {
        16 * self.values.len()
            + 8 * self.leaf_start_ns.len()
            + self.levels.iter().map(|l| 16 * l.len()).sum::<usize>()
    }
}

/// The first index at or after `from` whose time is after `t`, found by galloping from
/// `from` (1, 2, 4, … points ahead, then a binary search in the last stride): O(log k) for
/// a column of k points, so deep zooms (k ≈ 0) cost O(1) per column, not O(log n).
fn gallop(times: &[i64], from: usize, t: i64) -> usize {
    if from >= times.len() {
        return from;
    }
    let mut lo = from;
    let mut stride = 1;
    while let Some(&x) = times.get(lo + stride - 1) {
        if x > t {
            break;
        }
        lo += stride;
        stride *= 2;
    }
    let hi = (lo + stride).min(times.len());
    lo + times[lo..hi].partition_point(|&x| x <= t)
}

fn merge(a: (i64, i64), b: (i64, i64)) -> (i64, i64) {
    (a.0.min(b.0), a.1.max(b.1))
}

fn scan(values: &[i64]) -> (i64, i64) {
    values
        .iter()
        .fold((i64::MAX, i64::MIN), |r, &v| merge(r, (v, v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::decimate::column_ranges;

    /// A deterministic xorshift generator: the tests need varied curves, not a `rand` dep.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn random_curve(rng: &mut Rng, n: usize) -> Vec<(i64, i64)> {
        let mut t = 1_000;
        let mut v = 0i64;
        (0..n)
            .map(|_| {
                // Repeated times are common in traces (several events in one µs).
                t += (rng.next() % 4) as i64 * 250;
                v += (rng.next() % 2001) as i64 - 1000;
                (t, v)
            })
            .collect()
    }

    #[test]
    fn a_view_walks_the_point_carried_into_it_and_those_inside() {
        let c = CurvePyramid::build(&[(0, 1), (10, 2), (20, 3), (30, 4)]);
        let walked: Vec<(i64, i64)> = c.points_in(15, 30).collect();
        assert_eq!(walked, vec![(10, 2), (20, 3), (30, 4)]);
        assert_eq!(c.count_in(15, 30), 3);
        // before the first point: nothing is carried in
        assert_eq!(c.points_in(-5, 5).collect::<Vec<_>>(), vec![(0, 1)]);
        assert_eq!(c.count_in(-5, 5), 1);
        assert_eq!(c.count_in(40, 50), 1);
    }

    #[test]
    fn range_queries_match_a_scan() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let curve = random_curve(&mut rng, 5_000);
        let p = CurvePyramid::build(&curve);
        for _ in 0..2_000 {
            let a = (rng.next() % 5_001) as usize;
            let b = (rng.next() % 5_001) as usize;
            let (lo, hi) = (a.min(b), a.max(b));
            let expected =
                (lo < hi).then(|| scan(&curve[lo..hi].iter().map(|p| p.1).collect::<Vec<_>>()));
            assert_eq!(p.range_of(lo, hi), expected, "{lo}..{hi}");
        }
        assert_eq!(p.max(), curve.iter().map(|c| c.1).max());
    }

    #[test]
    fn columns_equal_the_linear_walk_at_every_zoom() {
        // GIVEN random step curves of several lengths (leaf-aligned or not)
        let mut rng = Rng(42);
        for n in [0, 1, 15, 16, 17, 1_000, 33_333] {
            let curve = random_curve(&mut rng, n);
            let p = CurvePyramid::build(&curve);
            let (t0, t1) = (
                curve.first().map_or(0, |c| c.0),
                curve.last().map_or(0, |c| c.0),
            );
            // WHEN asked for windows inside, around and outside the curve, at many widths
            let windows = [
                (t0, t1),
                (t0 - 5_000, t1 + 5_000),
                (t0 + (t1 - t0) / 3, t0 + (t1 - t0) / 3 + 777),
                (t1 + 1, t1 + 10_000),
                (t0 - 10_000, t0 - 1),
            ];
            for (start, end) in windows {
                for columns in [1, 7, 640, 1_601] {
                    // THEN every column equals the independent O(n) walk's
                    assert_eq!(
                        p.column_ranges(start, end, columns),
                        column_ranges(&curve, start, end, columns),
                        "n={n} [{start},{end}] columns={columns}"
                    );
                }
            }
        }
    }

    #[test]
    fn gallop_finds_the_first_later_time() {
        let times = [1, 2, 2, 2, 5, 8, 8, 9, 13, 21, 34];
        for from in 0..=times.len() + 1 {
            for t in -1..40 {
                let rest = times.get(from..).unwrap_or_default();
                let expected = from + rest.iter().take_while(|&&x| x <= t).count();
                assert_eq!(gallop(&times, from, t), expected, "from {from} t {t}");
            }
        }
    }

    #[test]
    fn value_at_follows_the_step() {
        let p = CurvePyramid::build(&[(10, 5), (20, 7), (20, 9), (30, 1)]);
        assert_eq!(p.value_at(9), None);
        assert_eq!(p.value_at(10), Some(5));
        assert_eq!(p.value_at(20), Some(9));
        assert_eq!(p.value_at(29), Some(9));
        assert_eq!(p.value_at(1_000), Some(1));
        assert_eq!(p.time_span_ns(), Some((10, 30)));
        assert_eq!(p.max(), Some(9));
        assert!(CurvePyramid::build(&[]).max().is_none());
    }
}

#[cfg(test)]
mod shared_times_tests {
    use super::*;

    #[test]
    fn a_pyramid_on_shared_times_answers_as_one_built_from_its_points() {
        let points: Vec<(i64, i64)> = (0..5_000i64)
            .map(|i| (i * 37, (i * 7_919) % 1_013))
            .collect();
        let times = Times::new(points.iter().map(|p| p.0).collect());
        let shared = CurvePyramid::with_times(&times, points.iter().map(|p| p.1).collect());
        let own = CurvePyramid::build(&points);
        assert!(Arc::ptr_eq(&shared.times_ns, &times.times_ns));
        for t in [-5, 0, 36, 37, 1_000, 99_999, 185_000, 200_000] {
            assert_eq!(shared.value_at(t), own.value_at(t), "at {t}");
        }
        assert_eq!((shared.max(), shared.len()), (own.max(), own.len()));
        assert_eq!(shared.levels, own.levels);
        // Fewer values than times: the first ones' times.
        let short = CurvePyramid::with_times(&times, vec![5, 6, 7]);
        assert_eq!(short.time_span_ns(), Some((0, 74)));
    }
}
