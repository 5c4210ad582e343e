//! The net size change per op in a range (TensorBoard's memory view): the bytes each row's
//! ops allocated and freed themselves — not in the ops they call — from the records the
//! table attributes to them. Two more passes of the table over the same events, one
//! summing allocations and one frees, so a row's self allocated − self freed is its self
//! memory, and the rows' nets add up to every attributed record once (the `[memory]` row
//! holding those inside no op), hence to the change of allocated memory over the range
//! where ops on different threads do not overlap (a record inside ops of two threads counts
//! in both, as torch counts it).

use serde::Serialize;

use super::events::{self, class};
use super::{OpRow, TimeWindow, chunks, key_averages_in_chunks};
use crate::model::{DeviceClass, MemEvent, MemEventKind, Recording};

/// Bytes allocated and freed: both ≥ 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Net {
    /// Bytes allocated.
    pub allocated: i64,
    /// Bytes freed.
    pub freed: i64,
}

impl Net {
    /// Allocated − freed: what the op left allocated (negative: it freed more).
    pub fn net(self) -> i64 {
        self.allocated.wrapping_sub(self.freed)
    }
}

/// A row's net change in the range, self (its ops' own records), per key_averages column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RangeNet {
    /// CPU memory (the "CPU Mem" columns' devices).
    pub host: Net,
    /// Device memory (the "CUDA Mem" columns' devices).
    pub device: Net,
}

/// A record's allocated bytes, as (host, device).
fn allocated(rec: &Recording, e: &MemEvent) -> (i64, i64) {
    by_class(rec, e, e.bytes.max(0))
}

/// A record's freed bytes, as (host, device).
fn freed(rec: &Recording, e: &MemEvent) -> (i64, i64) {
    by_class(rec, e, e.bytes.min(0).wrapping_neg())
}

fn by_class(rec: &Recording, e: &MemEvent, bytes: i64) -> (i64, i64) {
    if e.kind == MemEventKind::OutOfMemory {
        return (0, 0);
    }
    match class(rec, e) {
        DeviceClass::Host => (bytes, 0),
        DeviceClass::Accelerator => (0, bytes),
        DeviceClass::Uncounted => (0, 0),
    }
}

/// [`key_averages`](super::key_averages) of `window` (the whole run for `None`) with each
/// row's [`RangeNet`]: the viewer's Ops table.
pub fn key_averages_with_net(rec: &Recording, window: Option<TimeWindow>) -> Vec<OpRow> {
    let mut rows = key_averages_in_chunks(rec, window, chunks::CHUNK_OPS, events::split);
    let alloc = key_averages_in_chunks(rec, window, chunks::CHUNK_OPS, allocated);
    let free = key_averages_in_chunks(rec, window, chunks::CHUNK_OPS, freed);
    // The three passes walk the same events in the same order: their rows line up.
    for ((row, a), f) in rows.iter_mut().zip(&alloc).zip(&free) {
        debug_assert!(row.name == a.name && a.name == f.name);
        row.net = Some(RangeNet {
            host: Net {
                allocated: a.self_cpu_memory_usage,
                freed: f.self_cpu_memory_usage,
            },
            device: Net {
                allocated: a.self_device_memory_usage,
                freed: f.self_device_memory_usage,
            },
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::{LoadOptions, Timeline, load};

    /// On the CPU sample, a range in the middle of training: each row's net is its
    /// allocated − freed, its allocated − freed its self CPU memory, and the rows' nets
    /// add up to the change of allocated memory over the range.
    #[test]
    fn the_rows_nets_add_up_to_the_change_of_allocated_memory_over_the_range() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../samples/transformer-lm-train-cpu.json.gz");
        let rec = load(&path, LoadOptions::default()).expect("the sample reads");
        let timeline = Timeline::build(&rec);
        let (start, end) = (rec.meta.start_ns, rec.meta.end_ns);
        let window = TimeWindow {
            start_ns: start + (end - start) / 4,
            end_ns: start + (end - start) / 2,
        };
        let rows = key_averages_with_net(&rec, Some(window));
        let plain = super::super::key_averages(&rec, Some(window));
        assert_eq!(rows.len(), plain.len());
        let (mut sum, mut allocated, mut freed) = (0i64, 0i64, 0i64);
        for (r, p) in rows.iter().zip(&plain) {
            assert_eq!((&r.name, r.calls), (&p.name, p.calls));
            let net = r.net.expect("a range's row has its net");
            assert_eq!(net.host.net(), p.self_cpu_memory_usage, "{}", r.name);
            assert_eq!(net.device, Net::default(), "{}", r.name);
            sum += net.host.net();
            allocated += net.host.allocated;
            freed += net.host.freed;
        }
        let cpu = (timeline.devices.iter())
            .find(|d| rec.devices[d.device as usize].key == crate::model::DeviceId::CPU)
            .expect("the CPU's curve");
        let at = |t: i64| cpu.at(t).map_or(0, |p| p.allocated_bytes);
        let change = at(window.end_ns) - at(window.start_ns - 1);
        assert_eq!(sum, change);
        assert!(
            allocated > 1 << 20 && freed > 1 << 20,
            "{allocated} {freed}"
        );
    }

    /// The cost of a range's table against key_averages alone, on the trace named by
    /// `VRAMSCOPE_BIG_TRACE` (a range of its middle half, and the whole run):
    /// `VRAMSCOPE_BIG_TRACE=/tmp/vramscope-shapes/current.json cargo test --release -p
    /// vramscope-collector range_table_timings -- --ignored --nocapture`.
    #[test]
    #[ignore = "needs a big trace; prints timings"]
    fn range_table_timings() {
        let Some(path) = std::env::var_os("VRAMSCOPE_BIG_TRACE") else {
            return;
        };
        let rec = load(Path::new(&path), LoadOptions::default()).expect("the trace reads");
        let (start, end) = (rec.meta.start_ns, rec.meta.end_ns);
        let half = TimeWindow {
            start_ns: start + (end - start) / 4,
            end_ns: start + 3 * (end - start) / 4,
        };
        let whole = TimeWindow {
            start_ns: start,
            end_ns: end,
        };
        for (what, w) in [("middle half", half), ("whole run", whole)] {
            let t = std::time::Instant::now();
            let plain = super::super::key_averages(&rec, Some(w));
            let plain_s = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let rows = key_averages_with_net(&rec, Some(w));
            let net_s = t.elapsed().as_secs_f64();
            println!(
                "{what}: {} ops, {} records; key_averages {plain_s:.3} s, with net {net_s:.3} s ({} rows)",
                rec.ops.len(),
                rec.mem_events.len(),
                plain.len().max(rows.len())
            );
        }
    }
}
