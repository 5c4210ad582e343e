//! Decimation of memory curves for drawing and export: min/max per bucket, so that peaks
//! and troughs survive however many points are dropped (Tracy's plot preprocessing,
//! rerun's `aggregation.rs`).

use crate::timeline::DeviceTimeline;

/// Which curve of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// Allocated bytes (tensors).
    Allocated,
    /// Reserved bytes (the allocator's segments).
    Reserved,
    /// Reserved − allocated: what the allocator's cache held unused; only where the source
    /// records both.
    Cache,
}

/// A device's curve as (time_ns, bytes) points in time order; empty when the source does
/// not record it.
pub fn curve(d: &DeviceTimeline, which: Curve) -> Vec<(i64, i64)> {
    match which {
        Curve::Allocated if d.allocated_known => d
            .points
            .iter()
            .map(|p| (p.time_ns, p.allocated_bytes))
            .collect(),
        Curve::Reserved if d.reserved_known => d
            .points
            .iter()
            .filter_map(|p| p.reserved_bytes.get().map(|r| (p.time_ns, r)))
            .collect(),
        Curve::Cache if d.allocated_known && d.reserved_known => d
            .points
            .iter()
            .filter_map(|p| {
                p.reserved_bytes
                    .get()
                    .map(|r| (p.time_ns, r - p.allocated_bytes))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The values of `which` at every point of `d` (for a curve known at each of them: see
/// [`curve`], whose times these are then).
pub fn curve_values(d: &DeviceTimeline, which: Curve) -> Vec<i64> {
    let reserved = |p: &crate::timeline::SeriesPoint| p.reserved_bytes.get().unwrap_or(0);
    d.points
        .iter()
        .map(|p| match which {
            Curve::Allocated => p.allocated_bytes,
            Curve::Reserved => reserved(p),
            Curve::Cache => reserved(p) - p.allocated_bytes,
        })
        .collect()
}

/// Keep at most two points per bucket of equal time — each bucket's minimum and maximum, in
/// time order — plus the last point, so the result has at most `2 × buckets + 1` points
/// and the same maximum and minimum as the input. Points are (time_ns, value) in time
/// order. Short inputs come back unchanged.
pub fn min_max_points(points: &[(i64, i64)], buckets: usize) -> Vec<(i64, i64)> {
    let buckets = buckets.max(1);
    if points.len() <= 2 * buckets {
        return points.to_vec();
    }
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let span = (last.0 - first.0).max(1) as i128;
    let bucket_of = |t: i64| (((t - first.0) as i128 * buckets as i128) / span) as usize;
    let mut out = Vec::with_capacity(2 * buckets + 1);
    let mut i = 0;
    while i < points.len() {
        let b = bucket_of(points[i].0);
        let (mut lo, mut hi) = (i, i);
        let mut j = i + 1;
        while j < points.len() && bucket_of(points[j].0) == b {
            if points[j].1 < points[lo].1 {
                lo = j;
            }
            if points[j].1 > points[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let (x, y) = (lo.min(hi), lo.max(hi));
        out.push(points[x]);
        if y != x {
            out.push(points[y]);
        }
        i = j;
    }
    if out.last() != Some(last) {
        out.push(*last);
    }
    out
}

/// The value range of a step curve in each of `columns` equal slices of
/// `[start_ns, end_ns]`: the value carried into the column and every value set inside it.
/// `None` before the curve's first point. For drawing one column per pixel.
pub fn column_ranges(
    points: &[(i64, i64)],
    start_ns: i64,
    end_ns: i64,
    columns: usize,
) -> Vec<Option<(i64, i64)>> {
    let span = (end_ns - start_ns).max(1) as i128;
    let mut out = vec![None; columns];
    // Index of the next point to consume, and the value holding before it.
    let mut next = points.partition_point(|p| p.0 < start_ns);
    let mut carried = next.checked_sub(1).and_then(|i| points.get(i)).map(|p| p.1);
    for (c, slot) in out.iter_mut().enumerate() {
        let column_end = start_ns + ((span * (c as i128 + 1)) / columns as i128) as i64;
        let mut range = carried.map(|v| (v, v));
        while let Some(p) = points.get(next).filter(|p| p.0 <= column_end) {
            range = Some(range.map_or((p.1, p.1), |(lo, hi)| (lo.min(p.1), hi.max(p.1))));
            carried = Some(p.1);
            next += 1;
        }
        *slot = range;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept() {
        let p = [(0, 1), (5, 3), (9, 2)];
        assert_eq!(min_max_points(&p, 2), p.to_vec());
    }

    #[test]
    fn peaks_survive_decimation() {
        // GIVEN 10,000 points with one spike and one dip
        let mut p: Vec<(i64, i64)> = (0..10_000).map(|i| (i * 10, 100 + (i % 7))).collect();
        p[4321].1 = 9_999;
        p[777].1 = -5;
        // WHEN decimated to 50 buckets
        let d = min_max_points(&p, 50);
        // THEN at most 101 points remain, in time order, with the spike, the dip and the end
        assert!(d.len() <= 101, "{}", d.len());
        assert!(d.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(d.contains(&(43_210, 9_999)));
        assert!(d.contains(&(7_770, -5)));
        assert_eq!(d.last(), p.last());
    }

    #[test]
    fn columns_carry_values_across_empty_columns() {
        // GIVEN a step curve: 10 from t=0, 50 at t=25 for an instant, 20 from t=26
        let p = [(0, 10), (25, 50), (26, 20)];
        // WHEN cut into 10 columns of 10 ns over [0, 100]
        let c = column_ranges(&p, 0, 100, 10);
        // THEN empty columns carry the last value and the spike's column shows it
        assert_eq!(c[0], Some((10, 10)));
        assert_eq!(c[1], Some((10, 10)));
        assert_eq!(c[2], Some((10, 50)));
        assert_eq!(c[9], Some((20, 20)));
        // and nothing is drawn before the first point
        assert_eq!(column_ranges(&[(50, 1)], 0, 100, 10)[0], None);
    }
}
