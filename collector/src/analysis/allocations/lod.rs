//! The level of detail: bands bucketed by size class and lifetime class (powers of two),
//! each bucket in allocation order with the latest end per chunk, so a view asks for the
//! bands at least a pixel tall and a pixel wide that overlap its time range and skips the
//! rest — the bytes of those it skips are drawn merged, per pixel column, from the
//! allocated curve.

use crate::timeline::DeviceTimeline;

/// Bands per chunk of a bucket: a query skips a chunk whose bands all ended before the
/// view with one comparison; 8 bytes per chunk.
const CHUNK: usize = 64;

/// The bands of one size class and lifetime class, in allocation order.
#[derive(Clone, Debug, Default)]
struct Bucket {
    /// floor(log2(bytes)).
    size_class: u32,
    /// floor(log2(lifetime ns + 1)).
    life_class: u32,
    /// Band ids.
    ids: Vec<u32>,
    /// Their allocation times.
    alloc_ns: Vec<i64>,
    /// Their ends (free, or the device's last event).
    end_ns: Vec<i64>,
    /// Their sizes.
    bytes: Vec<i64>,
    /// The latest end in each chunk of [`CHUNK`] bands.
    chunk_end_ns: Vec<i64>,
}

/// What a view asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandQuery {
    /// The view's time range, ns on the recording's clock.
    pub t0_ns: i64,
    /// Right edge.
    pub t1_ns: i64,
    /// Bands smaller than this are left out (a pixel's height in bytes).
    pub min_bytes: i64,
    /// Bands shorter-lived than this are left out (a pixel's width in ns).
    pub min_life_ns: i64,
}

/// Bands by size and lifetime.
#[derive(Clone, Debug, Default)]
pub struct BandIndex {
    buckets: Vec<Bucket>,
}

fn class(v: i64) -> u32 {
    63 - (v.max(1) as u64).leading_zeros()
}

impl BandIndex {
    /// Index the allocations of `d`; those never freed end at `end_ns`.
    pub fn build(d: &DeviceTimeline, end_ns: i64) -> BandIndex {
        let mut buckets: Vec<Bucket> = Vec::new();
        let mut slot: std::collections::HashMap<(u32, u32), usize> = Default::default();
        for (i, a) in d.allocations.iter().enumerate() {
            let end = a.free_ns.get().unwrap_or(end_ns).max(a.alloc_ns);
            let key = (class(a.bytes), class(end - a.alloc_ns + 1));
            let b = *slot.entry(key).or_insert_with(|| {
                buckets.push(Bucket {
                    size_class: key.0,
                    life_class: key.1,
                    ..Bucket::default()
                });
                buckets.len() - 1
            });
            let Some(bucket) = buckets.get_mut(b) else {
                continue;
            };
            if bucket.ids.len() % CHUNK == 0 {
                bucket.chunk_end_ns.push(end);
            }
            if let Some(last) = bucket.chunk_end_ns.last_mut() {
                *last = (*last).max(end);
            }
            bucket.ids.push(i as u32);
            bucket.alloc_ns.push(a.alloc_ns);
            bucket.end_ns.push(end);
            bucket.bytes.push(a.bytes);
        }
        BandIndex { buckets }
    }

    /// The bands of `q` (at least `min_bytes`, living at least `min_life_ns`, overlapping
    /// `[t0_ns, t1_ns]`) appended to `out`, bucket by bucket.
    pub fn visible(&self, q: &BandQuery, out: &mut Vec<u32>) {
        for b in &self.buckets {
            // The largest size and lifetime a bucket may hold.
            let max_bytes = (2u64 << b.size_class.min(62)).saturating_sub(1);
            let max_life = (2u64 << b.life_class.min(62)).saturating_sub(1);
            if (max_bytes as i64) < q.min_bytes || (max_life as i64) < q.min_life_ns {
                continue;
            }
            let upto = b.alloc_ns.partition_point(|&t| t <= q.t1_ns);
            for (c, &chunk_end) in b.chunk_end_ns.iter().enumerate() {
                let from = c * CHUNK;
                if from >= upto {
                    break;
                }
                if chunk_end < q.t0_ns {
                    continue;
                }
                for k in from..(from + CHUNK).min(upto) {
                    let (id, alloc, end) = (b.ids[k], b.alloc_ns[k], b.end_ns[k]);
                    let big = b.bytes[k] >= q.min_bytes && end - alloc >= q.min_life_ns;
                    if end >= q.t0_ns && big {
                        out.push(id);
                    }
                }
            }
        }
    }

    /// Heap bytes (for the status bar and PERFORMANCE.md).
    pub fn heap_bytes(&self) -> usize {
        self.buckets
            .iter()
            .map(|b| {
                b.ids.capacity() * 4
                    + (b.alloc_ns.capacity()
                        + b.end_ns.capacity()
                        + b.bytes.capacity()
                        + b.chunk_end_ns.capacity())
                        * 8
            })
            .sum()
    }
}
