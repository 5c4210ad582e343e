//! A coarse overview of memory while a file is still being read, for the viewer to draw
//! long before the recording is whole: per device, the smallest and largest allocated
//! bytes in each of [`PREVIEW_BUCKETS`] stretches of time, widening as later (or earlier)
//! events arrive. The reader adds its memory events in batches of
//! [`PREVIEW_EVERY_EVENTS`]; the viewer takes a copy when it draws a frame.

use std::sync::{Mutex, PoisonError};

use crate::model::{DeviceId, MemEvent, MemEventKind};

/// Stretches of time per device: four `i64` each, 32 KiB a device; about one per point
/// of a full-width plot.
pub const PREVIEW_BUCKETS: usize = 1024;

/// The widest bucket: 2^64 ns / [`PREVIEW_BUCKETS`], so that the buckets can span every
/// time an `i64` holds (a hostile file's, before the load clamps them).
const WIDEST_BUCKET_NS: i64 = ((1u128 << 64) / PREVIEW_BUCKETS as u128) as i64;

/// Memory events a reader gathers before adding them under the lock: one lock a batch
/// (~16 k events, well under a millisecond of reading), so the reader never waits on
/// the viewer for long, and the overview is at most this many events behind.
pub const PREVIEW_EVERY_EVENTS: usize = 1 << 14;

/// The overview so far, shared between the reading thread and the viewer.
#[derive(Debug, Default)]
pub struct Preview {
    state: Mutex<PreviewState>,
}

/// What the overview holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreviewState {
    /// One curve per device, in the order their first memory event came.
    pub devices: Vec<DeviceCurve>,
    /// Memory events added so far.
    pub events: u64,
}

/// One device's allocated bytes over time, bucketed.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCurve {
    /// The device.
    pub device: DeviceId,
    /// Where bucket 0 starts.
    pub origin_ns: i64,
    /// Each bucket's width.
    pub bucket_ns: i64,
    /// Smallest allocated bytes seen in each bucket (`i64::MAX`: none seen).
    pub min_bytes: Vec<i64>,
    /// Largest allocated bytes seen in each bucket (`i64::MIN`: none seen).
    pub max_bytes: Vec<i64>,
    /// The time of each bucket's latest event (`i64::MIN`: none seen).
    pub last_ns: Vec<i64>,
    /// The allocated bytes after each bucket's latest event: the level until the next.
    pub last_bytes: Vec<i64>,
    /// The largest allocated bytes seen at all.
    pub peak_bytes: i64,
    /// Allocated bytes from the events' own sizes, for events that carry no total.
    running_bytes: i64,
}

impl Preview {
    /// Add `events` (whose `device` indexes `devices`) to the overview.
    pub fn add(&self, events: &[MemEvent], devices: &[DeviceId]) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for e in events {
            let Some(&device) = devices.get(usize::from(e.device)) else {
                continue;
            };
            state.events += 1;
            if !matches!(e.kind, MemEventKind::Alloc | MemEventKind::Free) {
                continue;
            }
            let at = match state.devices.iter().position(|c| c.device == device) {
                Some(at) => at,
                None => {
                    state.devices.push(DeviceCurve::new(device));
                    state.devices.len() - 1
                }
            };
            let curve = &mut state.devices[at];
            curve.running_bytes = curve.running_bytes.wrapping_add(e.bytes);
            let bytes = e.total_allocated_bytes.get().unwrap_or(curve.running_bytes);
            curve.add(e.time_ns, bytes);
        }
    }

    /// A copy of the overview as it stands.
    pub fn snapshot(&self) -> PreviewState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl DeviceCurve {
    fn new(device: DeviceId) -> DeviceCurve {
        DeviceCurve {
            device,
            origin_ns: 0,
            bucket_ns: 0,
            min_bytes: vec![i64::MAX; PREVIEW_BUCKETS],
            max_bytes: vec![i64::MIN; PREVIEW_BUCKETS],
            last_ns: vec![i64::MIN; PREVIEW_BUCKETS],
            last_bytes: vec![0; PREVIEW_BUCKETS],
            peak_bytes: i64::MIN,
            running_bytes: 0,
        }
    }

    /// The time span the buckets cover (the end clamped to `i64::MAX`).
    pub fn span_ns(&self) -> (i64, i64) {
        (self.origin_ns, self.bucket_start_ns(PREVIEW_BUCKETS))
    }

    /// The time span from the first bucket with an event to the end of the last, if any.
    pub fn filled_span_ns(&self) -> Option<(i64, i64)> {
        let mut filled = (0..PREVIEW_BUCKETS).filter(|&k| self.bucket(k).is_some());
        let first = filled.next()?;
        let last = filled.next_back().unwrap_or(first);
        Some((self.bucket_start_ns(first), self.bucket_start_ns(last + 1)))
    }

    /// Where bucket `k` starts (bucket [`PREVIEW_BUCKETS`]: where the last ends), clamped
    /// to the `i64` range.
    pub fn bucket_start_ns(&self, k: usize) -> i64 {
        let t = self.bucket_start(k);
        t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Where bucket `k` starts, past the `i64` range once the buckets cover every time.
    fn bucket_start(&self, k: usize) -> i128 {
        i128::from(self.origin_ns) + i128::from(self.bucket_ns) * k as i128
    }

    /// Bucket `k`'s smallest and largest bytes, if any event fell in it.
    pub fn bucket(&self, k: usize) -> Option<(i64, i64)> {
        let (lo, hi) = (*self.min_bytes.get(k)?, *self.max_bytes.get(k)?);
        (lo <= hi).then_some((lo, hi))
    }

    /// Each bucket's smallest and largest bytes from the first event on, counting the
    /// level carried in from the bucket before (memory stays allocated between events):
    /// `None` before the first event.
    pub fn levels(&self) -> Vec<Option<(i64, i64)>> {
        let mut carried: Option<i64> = None;
        (0..PREVIEW_BUCKETS)
            .map(|k| {
                let own = self.bucket(k);
                let level = match (own, carried) {
                    (Some((lo, hi)), Some(c)) => Some((lo.min(c), hi.max(c))),
                    (Some(range), None) => Some(range),
                    (None, Some(c)) => Some((c, c)),
                    (None, None) => None,
                };
                if own.is_some() {
                    carried = self.last_bytes.get(k).copied();
                }
                level
            })
            .collect()
    }

    fn add(&mut self, time_ns: i64, bytes: i64) {
        if self.bucket_ns == 0 {
            (self.origin_ns, self.bucket_ns) = (time_ns, 1);
        }
        // Each doubling at least halves the distance to `time_ns` in buckets; at 2^64 /
        // PREVIEW_BUCKETS the buckets span every time an i64 holds (the clamp below only
        // guards that).
        while !self.covers(time_ns) && self.bucket_ns < WIDEST_BUCKET_NS {
            self.widen(time_ns < self.origin_ns);
        }
        let k = (i128::from(time_ns) - i128::from(self.origin_ns)) / i128::from(self.bucket_ns);
        let k = k.clamp(0, PREVIEW_BUCKETS as i128 - 1) as usize;
        self.min_bytes[k] = self.min_bytes[k].min(bytes);
        self.max_bytes[k] = self.max_bytes[k].max(bytes);
        if time_ns >= self.last_ns[k] {
            (self.last_ns[k], self.last_bytes[k]) = (time_ns, bytes);
        }
        self.peak_bytes = self.peak_bytes.max(bytes);
    }

    fn covers(&self, time_ns: i64) -> bool {
        time_ns >= self.origin_ns && i128::from(time_ns) < self.bucket_start(PREVIEW_BUCKETS)
    }

    /// Twice as wide a bucket: pairs merge into the lower half (to reach later times) or
    /// the upper half (earlier ones, the origin moving back by the old span).
    fn widen(&mut self, earlier: bool) {
        let half = PREVIEW_BUCKETS / 2;
        let shift = if earlier { half } else { 0 };
        let mut min = vec![i64::MAX; PREVIEW_BUCKETS];
        let mut max = vec![i64::MIN; PREVIEW_BUCKETS];
        let mut last_ns = vec![i64::MIN; PREVIEW_BUCKETS];
        let mut last_bytes = vec![0; PREVIEW_BUCKETS];
        for j in 0..half {
            let (a, b) = (2 * j, 2 * j + 1);
            min[shift + j] = self.min_bytes[a].min(self.min_bytes[b]);
            max[shift + j] = self.max_bytes[a].max(self.max_bytes[b]);
            let later = if self.last_ns[b] >= self.last_ns[a] {
                b
            } else {
                a
            };
            (last_ns[shift + j], last_bytes[shift + j]) =
                (self.last_ns[later], self.last_bytes[later]);
        }
        (self.last_ns, self.last_bytes) = (last_ns, last_bytes);
        if earlier {
            let span = i128::from(self.bucket_ns) * PREVIEW_BUCKETS as i128;
            self.origin_ns = (i128::from(self.origin_ns) - span).max(i128::from(i64::MIN)) as i64;
        }
        (self.min_bytes, self.max_bytes) = (min, max);
        self.bucket_ns *= 2;
    }
}

#[cfg(test)]
mod tests;
