//! Ranges as lanes under a timeline: the spans of one category (NVTX ranges of an Nsight
//! export), one lane per thread, nested ranges stacked one row deeper than the range they
//! sit in — as Nsight Systems draws its NVTX rows.

use crate::model::{OpCategory, OpSpan, Recording, ThreadIdx};

/// Rows of one thread's lane at most; deeper ranges share the last row. Each row costs a
/// strip of the timeline's height, so a pathological nesting must not push the plot away.
pub const MAX_DEPTH: usize = 8;

/// One row of a lane: the spans at one nesting depth of one thread, in start order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneRow {
    /// The thread.
    pub thread: ThreadIdx,
    /// Nesting depth, 0 for ranges inside no other.
    pub depth: usize,
    /// Indices into [`Recording::ops`], in start order; they do not overlap (except past
    /// [`MAX_DEPTH`], where deeper ranges are folded into the last row).
    pub spans: Vec<u32>,
}

/// The rows of every thread with spans of `category`, threads in index order, each
/// thread's rows by depth. A range that starts inside another on the same thread and ends
/// no later is nested in it; one that overlaps without nesting (start/end ranges may)
/// goes one row down too, so no two spans of a row overlap.
pub fn lanes(rec: &Recording, category: OpCategory) -> Vec<LaneRow> {
    let mut spans: Vec<(u32, OpSpan)> = (rec.ops.iter().enumerate())
        .filter(|(_, o)| o.category == category)
        .map(|(i, o)| (i as u32, o))
        .collect();
    spans.sort_by_key(|(_, o)| (o.thread, o.start_ns, std::cmp::Reverse(o.end_ns)));
    let mut rows: Vec<LaneRow> = Vec::new();
    let mut first_of_thread = 0;
    // The end of the last span of each row of the current thread.
    let mut ends: Vec<i64> = Vec::new();
    for (i, o) in spans {
        if rows
            .get(first_of_thread)
            .is_none_or(|r| r.thread != o.thread)
        {
            first_of_thread = rows.len();
            ends.clear();
        }
        // The first row whose last span is over by now: every row above holds a range
        // still open, which this one nests in (or overlaps).
        let depth = ends
            .iter()
            .position(|&end| end <= o.start_ns)
            .unwrap_or(ends.len())
            .min(MAX_DEPTH - 1);
        if depth == ends.len() {
            ends.push(o.end_ns);
            rows.push(LaneRow {
                thread: o.thread,
                depth,
                spans: Vec::new(),
            });
        }
        ends[depth] = ends[depth].max(o.end_ns);
        rows[first_of_thread + depth].spans.push(i);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LoadOptions;

    #[test]
    fn nested_nvtx_ranges_of_a_real_export_are_stacked() {
        // The real nsys 2022.4 export of script.py (PROVENANCE: nsys-cpu/README.md): each
        // ProfilerStep#N range holds forward, which holds aten::matmul and aten::relu,
        // then backward and optimizer.step; the dataloader thread has load_batch#i.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/traces/nsys-cpu/run.sqlite");
        let rec = crate::load(&path, LoadOptions::default()).expect("loads");
        let rows = lanes(&rec, OpCategory::Nvtx);
        let depth_of = |name: &str| -> Vec<usize> {
            let mut d: Vec<usize> = rows
                .iter()
                .filter(|r| {
                    r.spans.iter().any(|&i| {
                        rec.op_name(rec.ops.get(i as usize).expect("an op"))
                            .ends_with(name)
                    })
                })
                .map(|r| r.depth)
                .collect();
            d.dedup();
            d
        };
        assert_eq!(depth_of("ProfilerStep#0"), [0]);
        assert_eq!(depth_of("forward"), [1]);
        assert_eq!(depth_of("aten::matmul"), [2]);
        assert_eq!(depth_of("optimizer.step"), [1]);
        assert_eq!(depth_of("load_batch#0"), [0]);
        // No two spans of a row overlap.
        for r in &rows {
            for w in r.spans.windows(2) {
                let (a, b) = (
                    rec.ops.get(w[0] as usize).expect("an op"),
                    rec.ops.get(w[1] as usize).expect("an op"),
                );
                assert!(
                    a.end_ns <= b.start_ns,
                    "{} overlaps {}",
                    rec.op_name(a),
                    rec.op_name(b)
                );
            }
        }
        // Every NVTX range is in exactly one row.
        let in_rows: usize = rows.iter().map(|r| r.spans.len()).sum();
        let nvtx = rec
            .ops
            .iter()
            .filter(|o| o.category == OpCategory::Nvtx)
            .count();
        assert_eq!(in_rows, nvtx);
    }
}
