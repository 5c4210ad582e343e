//! A device's memory by category over the run, for the stacked chart: the collector's
//! series (`categories_over_time`, as `vramscope categories` and the viewer read it),
//! kept whole where it is short and otherwise thinned to the point of the highest total
//! in each of [`CATEGORY_COLUMNS`] slices of the run, so the layers stay stacked exactly
//! (every kept point sums to the allocated bytes then) and the peaks survive.

use collector::analysis::categories::CategorySeries;
use serde::Serialize;

use super::Input;
use super::levels::deltas;
use crate::output::charts::categories::STACK_ORDER;

/// Slices of the run a long series is thinned to: one point each, ~30 bytes of JSON a
/// point with 8 layers (~120 KB a device at this count; 95 KB for the 3,224 points of the
/// 128-token cs336 snapshot).
pub const CATEGORY_COLUMNS: usize = 4_096;

/// The stacked categories of one device.
#[derive(Debug, Serialize)]
pub struct CategoriesDoc {
    /// The categories holding bytes at some point, bottom first (their index in the
    /// page's category list).
    pub layers: Vec<usize>,
    /// The points' times, ns since the input's start, as differences.
    pub t: Vec<i64>,
    /// Per layer its own bytes at each point, as differences.
    pub bytes: Vec<Vec<i64>>,
}

/// The categories of a device from its `series`; `None` where it is empty.
pub fn categories(input: &Input<'_>, series: &CategorySeries) -> Option<CategoriesDoc> {
    let (first, last) = (*series.times_ns.first()?, *series.times_ns.last()?);
    let keep: Vec<usize> = if series.times_ns.len() <= CATEGORY_COLUMNS {
        (0..series.times_ns.len()).collect()
    } else {
        highest_per_column(&series.times_ns, &series.bytes, first, last)
    };
    let layers: Vec<usize> = STACK_ORDER
        .iter()
        .map(|c| c.index())
        .filter(|&i| series.bytes.iter().any(|b| b[i] != 0))
        .collect();
    let origin = input.summary.start_ns;
    Some(CategoriesDoc {
        t: deltas(keep.iter().map(|&k| series.times_ns[k] - origin)),
        bytes: layers
            .iter()
            .map(|&i| deltas(keep.iter().map(|&k| series.bytes[k][i])))
            .collect(),
        layers,
    })
}

/// The index of the point with the highest total in each of [`CATEGORY_COLUMNS`] slices
/// of `[first, last]`, in time order.
fn highest_per_column(
    times: &[i64],
    bytes: &[collector::analysis::categories::CategoryBytes],
    first: i64,
    last: i64,
) -> Vec<usize> {
    let span = (last - first).max(1) as i128;
    let column = |t: i64| ((t - first) as i128 * CATEGORY_COLUMNS as i128 / span) as usize;
    let total = |k: usize| bytes.get(k).map_or(0, |b| b.iter().sum::<i64>());
    let mut keep: Vec<usize> = Vec::with_capacity(CATEGORY_COLUMNS + 1);
    let mut current = usize::MAX;
    for (k, &t) in times.iter().enumerate() {
        let c = column(t);
        match keep.last_mut() {
            Some(best) if c == current => {
                if total(k) > total(*best) {
                    *best = k;
                }
            }
            _ => {
                keep.push(k);
                current = c;
            }
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_column_keeps_its_highest_point() {
        let times: Vec<i64> = (0..10_000).collect();
        let mut bytes = vec![[0i64; 9]; 10_000];
        bytes[5_000][0] = 77;
        let keep = highest_per_column(&times, &bytes, 0, 9_999);
        assert!(keep.len() <= CATEGORY_COLUMNS + 1);
        assert!(keep.contains(&5_000));
    }
}
