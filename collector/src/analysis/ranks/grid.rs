//! The rank grid's data (the viewer's ranks × time heat map): per rank and device,
//! allocated memory over the rank's own time in [`GRID_BUCKETS`] buckets, each the
//! largest value the curve takes in it ([`rank_series`]), computed while the rank's
//! recording is in memory and kept instead of it; then every row put on one time axis,
//! time since each rank's own start ([`Grid::build`]).
//!
//! Time is relative to each rank's own first timestamp, as `diff` aligns two runs at their
//! starts: ranks' clocks are not known to agree (each host has its own, and a trace's
//! `baseTimeNanoseconds` is its own process's), so absolute times would place ranks by
//! clock skew rather than by what they did.

use std::path::PathBuf;

use super::parallel::{FilesProgress, OnError, map_files};
use super::{AcrossRanks, RankInput, across_ranks, rank_order};
use crate::analysis::summarize;
use crate::model::{DeviceId, Recording};
use crate::parse::{LoadError, LoadOptions};
use crate::timeline::{SeriesPoint, Timeline};

/// Time buckets per rank and device, and columns of the grid. Each costs 16 bytes per row
/// (an `Option<i64>`), so a row is 8 KiB and 1,024 single-device ranks keep 8 MiB; 512
/// columns are about one per three screen points on a 1920-point-wide window.
pub const GRID_BUCKETS: usize = 512;

/// One device's allocated memory over a rank's run.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatedBuckets {
    /// The device.
    pub device: DeviceId,
    /// Per bucket, the largest allocated bytes the curve takes in it (the value carried in
    /// from before the bucket counts until the first change inside it); `None` before the
    /// curve's first point.
    pub max_allocated_bytes: Vec<Option<i64>>,
}

/// A rank's decimated allocated-over-time series.
#[derive(Clone, Debug, PartialEq)]
pub struct RankSeries {
    /// The recording's first timestamp (time 0 of the grid for this rank).
    pub start_ns: i64,
    /// Its last timestamp minus its first.
    pub duration_ns: i64,
    /// Per device whose source records allocated memory, in the recording's device order.
    pub devices: Vec<AllocatedBuckets>,
}

/// The rank of time `rel_ns` (ns since the start) among `buckets` equal buckets of
/// `duration_ns`: `floor(rel × buckets / duration)`, the end falling in the last.
pub fn bucket_of(rel_ns: i64, duration_ns: i64, buckets: usize) -> usize {
    let b = (rel_ns.max(0) as i128 * buckets as i128) / duration_ns.max(1) as i128;
    (b as usize).min(buckets.saturating_sub(1))
}

/// The first ns (since the start) of bucket `b`: the least `t` with [`bucket_of`]`(t) == b`.
pub fn bucket_start_ns(b: usize, duration_ns: i64, buckets: usize) -> i64 {
    let num = b as i128 * duration_ns.max(1) as i128;
    let den = buckets.max(1) as i128;
    ((num + den - 1) / den) as i64
}

/// A rank's series: for each device with an allocated curve, [`GRID_BUCKETS`] buckets.
pub fn rank_series(rec: &Recording, timeline: &Timeline) -> RankSeries {
    let (start_ns, duration_ns) = (rec.meta.start_ns, rec.meta.end_ns - rec.meta.start_ns);
    let devices = timeline
        .devices
        .iter()
        .filter(|d| d.allocated_known && !d.points.is_empty())
        .map(|d| AllocatedBuckets {
            device: rec
                .devices
                .get(d.device as usize)
                .map_or(DeviceId::CPU, |i| i.key),
            max_allocated_bytes: max_per_bucket(&d.points, start_ns, duration_ns, GRID_BUCKETS),
        })
        .collect();
    RankSeries {
        start_ns,
        duration_ns,
        devices,
    }
}

/// Per bucket, the largest value of the step curve `points` (in time order) in it.
fn max_per_bucket(
    points: &[SeriesPoint],
    start_ns: i64,
    duration_ns: i64,
    buckets: usize,
) -> Vec<Option<i64>> {
    let mut out: Vec<Option<i64>> = vec![None; buckets];
    // The value the curve has at each bucket's start: the last point before it.
    let mut carried: Option<i64> = None;
    let mut filled = 0;
    for p in points {
        let rel_ns = p.time_ns - start_ns;
        let b = bucket_of(rel_ns, duration_ns, buckets);
        // Buckets before b without points of their own hold the carried value throughout;
        // b holds it too until this, its first point, unless that comes at b's first ns.
        for slot in out.iter_mut().take(b).skip(filled) {
            *slot = max_of(*slot, carried);
        }
        if let Some(slot) = out.get_mut(b)
            && filled <= b
            && rel_ns > bucket_start_ns(b, duration_ns, buckets)
        {
            *slot = max_of(*slot, carried);
        }
        filled = filled.max(b + 1);
        if let Some(slot) = out.get_mut(b) {
            *slot = max_of(*slot, Some(p.allocated_bytes));
        }
        carried = Some(p.allocated_bytes);
    }
    for slot in out.iter_mut().skip(filled) {
        *slot = max_of(*slot, carried);
    }
    out
}

fn max_of(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A rank's summary and series, read from one input.
#[derive(Clone, Debug, PartialEq)]
pub struct GridRank {
    /// The input, its rank and its summary (as `summary` gives them).
    pub input: RankInput,
    /// Its decimated allocated memory.
    pub series: RankSeries,
}

/// Read `files` on `workers` threads and keep of each only its summary and series; the
/// files that could not be read come back as errors, in input order after the others.
pub fn grid_files(
    files: &[PathBuf],
    options: LoadOptions,
    workers: usize,
    progress: &FilesProgress,
) -> (Vec<GridRank>, Vec<LoadError>) {
    let done = map_files(
        files,
        options,
        workers,
        progress,
        OnError::Continue,
        |path, rec| {
            let timeline = Timeline::build(rec);
            let summary = summarize(rec, &timeline);
            GridRank {
                series: rank_series(rec, &timeline),
                input: RankInput::new(path.to_path_buf(), &rec.meta, summary),
            }
        },
    );
    let (mut ranks, mut errors) = (Vec::new(), Vec::new());
    for (_, r) in done {
        match r {
            Ok(rank) => ranks.push(rank),
            Err(e) => errors.push(e),
        }
    }
    (ranks, errors)
}

/// One row of the grid: a rank's device.
#[derive(Clone, Debug, PartialEq)]
pub struct GridRow {
    /// Index into [`Grid::inputs`].
    pub input: usize,
    /// The device.
    pub device: DeviceId,
    /// Per column of [`Grid::span_ns`] / [`GRID_BUCKETS`], the largest allocated bytes in
    /// it; `None` outside the rank's run.
    pub cells: Vec<Option<i64>>,
}

/// The ranks × time heat map: rows by rank (rank order), then device.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The inputs, in rank order ([`super::sort_inputs`]).
    pub inputs: Vec<RankInput>,
    /// Each input's first timestamp (its time 0), same order.
    pub starts_ns: Vec<i64>,
    /// What the inputs say together (the same [`across_ranks`] as `summary`'s).
    pub across: AcrossRanks,
    /// The rows.
    pub rows: Vec<GridRow>,
    /// The longest run: the time axis covers `[0, span_ns]` since each rank's start.
    pub span_ns: i64,
}

impl Grid {
    /// The grid of `ranks`: sorted into rank order, each series put on the common axis.
    pub fn build(mut ranks: Vec<GridRank>) -> Grid {
        ranks.sort_by(|a, b| rank_order(&a.input).cmp(&rank_order(&b.input)));
        let span_ns = ranks
            .iter()
            .map(|r| r.series.duration_ns)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut rows = Vec::new();
        for (input, r) in ranks.iter().enumerate() {
            for d in &r.series.devices {
                rows.push(GridRow {
                    input,
                    device: d.device,
                    cells: on_common_axis(d, r.series.duration_ns, span_ns, GRID_BUCKETS),
                });
            }
        }
        let starts_ns = ranks.iter().map(|r| r.series.start_ns).collect();
        let inputs: Vec<RankInput> = ranks.into_iter().map(|r| r.input).collect();
        Grid {
            across: across_ranks(&inputs),
            inputs,
            starts_ns,
            rows,
            span_ns,
        }
    }

    /// The row of the worst rank's device with the peak.
    pub fn worst_row(&self) -> Option<usize> {
        let w = self.across.worst?;
        self.rows
            .iter()
            .position(|r| r.input == w.input && r.device == w.device)
    }

    /// The largest cell: the top of the colour scale.
    pub fn max_cell_bytes(&self) -> Option<i64> {
        self.rows
            .iter()
            .flat_map(|r| r.cells.iter().flatten())
            .copied()
            .max()
    }

    /// The column of time `rel_ns` since each rank's start.
    pub fn column_of(&self, rel_ns: i64) -> usize {
        bucket_of(rel_ns, self.span_ns, GRID_BUCKETS)
    }

    /// The time range `[from, to)` (ns since each rank's start) column `c` covers.
    pub fn column_range_ns(&self, c: usize) -> (i64, i64) {
        let end = |c: usize| match c {
            c if c >= GRID_BUCKETS => self.span_ns + 1,
            c => bucket_start_ns(c, self.span_ns, GRID_BUCKETS),
        };
        (end(c), end(c + 1))
    }
}

/// A rank's buckets (over its own `duration_ns`) on `columns` columns of `span_ns`: each
/// column the largest of the buckets that overlap it; `None` past the rank's end.
pub fn on_common_axis(
    d: &AllocatedBuckets,
    duration_ns: i64,
    span_ns: i64,
    columns: usize,
) -> Vec<Option<i64>> {
    let mut out = vec![None; columns];
    let n = d.max_allocated_bytes.len();
    for (b, v) in d.max_allocated_bytes.iter().enumerate() {
        let from = bucket_start_ns(b, duration_ns, n);
        // The last bucket holds the end instant too; its value is that of the ns before.
        let to = if b + 1 == n {
            (duration_ns - 1).max(from)
        } else {
            bucket_start_ns(b + 1, duration_ns, n) - 1
        };
        if to < from {
            continue;
        }
        let (c0, c1) = (
            bucket_of(from, span_ns, columns),
            bucket_of(to, span_ns, columns),
        );
        for slot in out.iter_mut().take(c1 + 1).skip(c0) {
            *slot = max_of(*slot, *v);
        }
    }
    out
}

#[cfg(test)]
#[path = "grid_tests.rs"]
mod tests;
