//! A curve for the page at a few zoom levels: the collector's min/max decimation
//! ([`min_max_points`]) at [`LEVEL_BUCKETS`] buckets over the whole run, and the points
//! themselves where there are few enough — the page draws the finest level that has at
//! most a few points per pixel column in view, and per column its smallest and largest
//! value, as the viewer's pyramids do. Times and values are stored as differences from the
//! previous point (small numbers in the JSON), times in ns since the input's start.

use collector::analysis::decimate::min_max_points;
use serde::Serialize;

/// Buckets of each decimated level over the whole run, coarsest first. At 1,000 px the
/// finest shows one bucket a pixel up to a 16× zoom; each level costs about
/// 2 × buckets × 14 bytes of JSON a curve (~460 KB at 16,384).
pub const LEVEL_BUCKETS: [usize; 2] = [2_048, 16_384];

/// Points a curve may have and be stored whole as its finest level: exact at any zoom.
/// ~14 bytes of JSON each (~460 KB at this cap).
pub const EXACT_POINTS_MAX: usize = 32_768;

/// One level of a curve.
#[derive(Debug, Serialize)]
pub struct Level {
    /// Its buckets over the run; 0 for the exact points.
    pub buckets: usize,
    /// Times, ns since the input's start, each as the difference from the one before.
    pub t: Vec<i64>,
    /// Values (bytes), each as the difference from the one before.
    pub v: Vec<i64>,
}

/// The levels of `points` ((time_ns, bytes) in time order, times on the recording's
/// clock), with times from `origin_ns`; coarsest first, the exact points last where
/// they are few.
pub fn levels(points: &[(i64, i64)], origin_ns: i64) -> Vec<Level> {
    let mut out = Vec::new();
    if points.is_empty() {
        return out;
    }
    for buckets in LEVEL_BUCKETS {
        if points.len() <= 2 * buckets {
            break;
        }
        out.push(level(&min_max_points(points, buckets), origin_ns, buckets));
    }
    if points.len() <= EXACT_POINTS_MAX {
        out.push(level(points, origin_ns, 0));
    }
    out
}

fn level(points: &[(i64, i64)], origin_ns: i64, buckets: usize) -> Level {
    let (mut t, mut v) = (
        Vec::with_capacity(points.len()),
        Vec::with_capacity(points.len()),
    );
    let (mut last_t, mut last_v) = (origin_ns, 0);
    for &(time_ns, bytes) in points {
        t.push(time_ns - last_t);
        v.push(bytes - last_v);
        (last_t, last_v) = (time_ns, bytes);
    }
    Level { buckets, t, v }
}

/// `values` as differences from the one before (the first from 0).
pub fn deltas(values: impl IntoIterator<Item = i64>) -> Vec<i64> {
    let mut last = 0;
    values
        .into_iter()
        .map(|x| {
            let d = x - last;
            last = x;
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_points_are_kept_exactly_as_differences() {
        let l = levels(&[(100, 5), (110, 7), (130, 2)], 100);
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].buckets, &l[0].t, &l[0].v),
            (0, &vec![0, 10, 20], &vec![5, 2, -5])
        );
    }

    #[test]
    fn many_points_get_decimated_levels_that_keep_the_peak() {
        let points: Vec<(i64, i64)> = (0..100_000).map(|i| (i, i % 1000)).collect();
        let l = levels(&points, 0);
        assert_eq!(
            l.iter().map(|l| l.buckets).collect::<Vec<_>>(),
            vec![2_048, 16_384]
        );
        let max = l[0].v.iter().scan(0, |s, d| {
            *s += d;
            Some(*s)
        });
        assert_eq!(max.max(), Some(999));
    }

    #[test]
    fn deltas_start_from_zero() {
        assert_eq!(deltas([3, 5, 4]), vec![3, 2, -1]);
    }
}
