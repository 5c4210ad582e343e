//! The categories over the whole run, like torch's `export_memory_timeline`: after each
//! memory event, the bytes of every category (decimated for long runs).

use super::{Category, CategoryBytes, allocation_categories, balance};
use crate::model::{MemEventKind, Recording};
use crate::timeline::{DeviceTimeline, Timeline, TotalsSource};

/// The most points a series keeps. A run with more memory events keeps every k-th point
/// (plus the peak and the last), so `categories` on a 10M-event trace writes ~10k rows
/// (≈ 1 MB of CSV) instead of ~1 GB; steps finer than 1/10,000 of the run are not shown.
pub const MAX_SERIES_POINTS: usize = 10_000;

/// One device's categories over time.
#[derive(Clone, Debug, PartialEq)]
pub struct CategorySeries {
    /// The device, as an index into the recording's devices.
    pub device: crate::model::DeviceIdx,
    /// When, ns on the recording's clock; one entry per kept point.
    pub times_ns: Vec<i64>,
    /// Bytes per category after the event at `times_ns[i]`; each sums to the allocated
    /// total then.
    pub bytes: Vec<CategoryBytes>,
    /// Memory events the series was made from (more than `times_ns.len()` when decimated).
    pub events: usize,
}

/// The device's categories after every memory event, at most [`MAX_SERIES_POINTS`] of them.
pub fn categories_over_time(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
) -> CategorySeries {
    let categories = allocation_categories(rec, timeline, d);
    let residual_to = match d.totals {
        TotalsSource::Trace => Category::BeforeTrace,
        TotalsSource::Reconstructed => Category::Unknown,
    };
    let n = d.points.len();
    let stride = n.div_ceil(MAX_SERIES_POINTS).max(1);
    let mut live: std::collections::HashMap<u64, (Category, i64), foldhash::fast::RandomState> =
        Default::default();
    let mut current: CategoryBytes = [0; Category::ALL.len()];
    let mut next = 0usize;
    let mut series = CategorySeries {
        device: d.device,
        times_ns: Vec::with_capacity(n.min(MAX_SERIES_POINTS) + 2),
        bytes: Vec::with_capacity(n.min(MAX_SERIES_POINTS) + 2),
        events: n,
    };
    for (pos, p) in d.points.iter().enumerate() {
        if let Some(e) = rec.mem_events.get(p.event as usize)
            && let Some(addr) = e.addr.get()
        {
            match e.kind {
                MemEventKind::Alloc => {
                    let c = categories.get(next).copied().unwrap_or(Category::Unknown);
                    next += 1;
                    if let Some((prev, bytes)) = live.insert(addr, (c, e.bytes)) {
                        current[prev.index()] -= bytes;
                    }
                    current[c.index()] += e.bytes;
                }
                MemEventKind::Free => {
                    if let Some((c, bytes)) = live.remove(&addr) {
                        current[c.index()] -= bytes;
                    }
                }
                _ => {}
            }
        }
        let keep = (pos + 1) % stride == 0 || Some(pos) == d.peak_allocated || pos + 1 == n;
        if keep && d.allocated_known {
            let mut bytes = current;
            balance(&mut bytes, p.allocated_bytes, residual_to);
            series.times_ns.push(p.time_ns);
            series.bytes.push(bytes);
        }
    }
    series
}
