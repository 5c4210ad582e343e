//! The per-op memory table, computed exactly as `torch.profiler`'s `key_averages()`.
//!
//! Torch's rules (torch/autograd/profiler.py `_parse_kineto_results`, profiler_util.py
//! `EventList._build_tree` and `key_averages`), reproduced step by step:
//! 1. Every host-side event (ops, annotations, Python frames, runtime calls) gets the sum of
//!    the `[memory]` records whose time lies in its *closed* interval, on any thread — so an
//!    op's memory includes its nested ops. CPU, MKLDNN and IDEEP bytes count as CPU memory;
//!    CUDA, HIP, XPU and PrivateUse1 as device memory.
//! 2. Records inside no event become events named `[memory]`; `[OutOfMemory]` records always do.
//! 3. Events are sorted by (start, −end). Per thread, a stack nests them: a child starts
//!    before its parent ends and ends no later. Python frames take part in the nesting but
//!    are not rows.
//! 4. A child with its parent's name that is its parent's only child is folded into the
//!    parent (`_remove_dup_nodes`), repeatedly until nothing changes.
//! 5. Self memory = memory − Σ children's memory (zero for device-side events).
//! 6. Rows group by name (`ProfilerStep#N` → `ProfilerStep*`), host-vs-device and
//!    user-annotation-or-not, in order of first appearance; `# of Calls` counts events.

mod chunks;
mod events;
mod net;
mod rows;
mod sorting;
mod tree;

use serde::Serialize;

pub use net::{Net, RangeNet, key_averages_with_net};
pub use rows::row_spans;
pub use sorting::{SortKey, sort_rows};

use crate::model::Recording;

/// A time range, closed at both ends, in the recording's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// First instant included.
    pub start_ns: i64,
    /// Last instant included.
    pub end_ns: i64,
}

impl TimeWindow {
    pub(crate) fn contains(&self, t: i64) -> bool {
        self.start_ns <= t && t <= self.end_ns
    }
}

/// One row of the table. Field names are torch's `FunctionEventAvg` attribute names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpRow {
    /// Op name (`ProfilerStep*` for all steps).
    pub name: String,
    /// Number of events ("# of Calls").
    pub calls: u64,
    /// "Self CPU Mem": bytes, signed.
    pub self_cpu_memory_usage: i64,
    /// "CPU Mem": bytes, signed, including nested ops.
    pub cpu_memory_usage: i64,
    /// "Self CUDA Mem".
    pub self_device_memory_usage: i64,
    /// "CUDA Mem".
    pub device_memory_usage: i64,
    /// Whether the row is device-side work (kernels, copies), which holds no memory.
    #[serde(skip)]
    pub on_device: bool,
    /// Whether the row is a `record_function` range.
    #[serde(skip)]
    pub user_annotation: bool,
    /// With [`key_averages_with_net`], the bytes the row's ops allocated and freed
    /// themselves (in the window, or the whole run); `None` in key_averages' own table.
    #[serde(skip)]
    pub net: Option<RangeNet>,
}

/// Compute the key_averages table, for the whole recording or for `window`.
///
/// With a window, the table covers the ops that overlap it and the memory records that
/// lie in it — what torch would report had the profiler run for just that range.
pub fn key_averages(rec: &Recording, window: Option<TimeWindow>) -> Vec<OpRow> {
    key_averages_in_chunks(rec, window, chunks::CHUNK_OPS, events::split)
}

/// [`key_averages`], its ops taken in chunks of time of about `chunk_ops` ops.
fn key_averages_in_chunks(
    rec: &Recording,
    window: Option<TimeWindow>,
    chunk_ops: usize,
    values: events::Values,
) -> Vec<OpRow> {
    let names = events::OpNames::new(rec);
    let filter = events::OpFilter::new(rec, window);
    let records = events::records(rec, window);
    let chunks = chunks::Chunks::plan(rec, &filter, chunk_ops);
    let time = |i: &u32| rec.mem_events.get(*i as usize).map_or(0, |e| e.time_ns);
    let mut rows = rows::Rows::default();
    for k in 0..chunks.len() {
        let (from, to) = chunks.range(k);
        let first = records.sorted.partition_point(|i| time(i) < from);
        let end = records.sorted.partition_point(|i| time(i) < to);
        let ooms: Vec<u32> = (records.ooms.iter())
            .filter(|i| (from..to).contains(&time(i)))
            .copied()
            .collect();
        let (mut events, prefix) = events::chunk_events(
            rec,
            &names,
            chunks.ops(k),
            &records.sorted[first..end.max(first)],
            &ooms,
            values,
        );
        tree::sort_in_place(&mut events);
        let mut tree = tree::nest(&events);
        let alive = tree::fold_duplicates(&events, &mut tree);
        rows.add(rec, &names, &events, &prefix, &alive, &tree);
    }
    rows.finish()
}

#[cfg(test)]
mod tests;
