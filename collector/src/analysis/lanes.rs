//! Ranges as lanes under a timeline: the spans of one category (NVTX ranges of an Nsight
//! export), or the op stack of a profiler trace, one lane per thread, nested ranges stacked
//! one row deeper than the range they sit in — as Nsight Systems draws its NVTX rows and
//! Perfetto its slices.

use std::cmp::Reverse;

use crate::model::python::module_scope;
use crate::model::{OpCategory, OpSpan, Recording, ThreadIdx};
use crate::timeline::sort_runs_by_key;

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
    lanes_of(rec, |o| o.category == category)
}

/// The op stack as lanes (Perfetto's nested slices): per thread, the `record_function`
/// ranges, the `nn.Module` scopes (the module frames of a `with_stack` trace; its other
/// Python frames would fill every row), the ops and the runtime calls that launch kernels,
/// each nested one row under what holds it.
pub fn op_lanes(rec: &Recording) -> Vec<LaneRow> {
    lanes_of(rec, |o| match o.category {
        OpCategory::UserAnnotation
        | OpCategory::CpuOp
        | OpCategory::Runtime
        | OpCategory::Driver => true,
        OpCategory::PythonFunction => module_scope(rec.op_name(o)).is_some(),
        _ => false,
    })
}

/// The rows of every thread's spans that `keep` keeps, as [`lanes`] stacks them.
///
/// Sorted as indices, a thread at a time (4 bytes a span): a copy of every span with its
/// index (40 bytes) and the stable sort's scratch beside it took the viewer's load of a
/// 10 GB trace (16.8 M spans) 0.7 GB over what it holds once loaded.
fn lanes_of(rec: &Recording, keep: impl Fn(&OpSpan) -> bool) -> Vec<LaneRow> {
    let mut by_thread: Vec<Vec<u32>> = Vec::new();
    for (i, o) in rec.ops.iter().enumerate() {
        if keep(&o) {
            let t = o.thread as usize;
            if by_thread.len() <= t {
                by_thread.resize_with(t + 1, Vec::new);
            }
            by_thread[t].push(i as u32);
        }
    }
    let mut rows: Vec<LaneRow> = Vec::new();
    // The end of the last span of each row of the current thread.
    let mut ends: Vec<i64> = Vec::new();
    for (thread, mut list) in by_thread.into_iter().enumerate() {
        // Start order, the longer first where two start together, then source order (the
        // sort is stable): a thread's spans mostly come in start order already.
        let key = |&i: &u32| {
            rec.ops
                .get(i as usize)
                .map(|o| (o.start_ns, Reverse(o.end_ns)))
        };
        sort_runs_by_key(&mut list, key);
        let first_of_thread = rows.len();
        ends.clear();
        for (i, o) in list
            .into_iter()
            .filter_map(|i| Some((i, rec.ops.get(i as usize)?)))
        {
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
                    thread: thread as ThreadIdx,
                    depth,
                    spans: Vec::new(),
                });
            }
            ends[depth] = ends[depth].max(o.end_ns);
            rows[first_of_thread + depth].spans.push(i);
        }
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

    #[test]
    fn the_op_stack_of_a_real_gpu_trace_nests_module_op_and_launch() {
        // A real TraceLens trace (BERT small, H100, with_stack): on the main thread a
        // module's scope holds aten ops, which hold the runtime calls that launch kernels.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
        );
        let rec = crate::load(&path, LoadOptions::default()).expect("loads");
        let rows = op_lanes(&rec);
        let depths = |keep: &dyn Fn(&OpSpan) -> bool| -> Vec<usize> {
            (rows.iter())
                .filter(|r| {
                    (r.spans.iter()).any(|&i| rec.ops.get(i as usize).is_some_and(|o| keep(&o)))
                })
                .map(|r| r.depth)
                .collect()
        };
        let module = depths(&|o| module_scope(rec.op_name(o)).is_some());
        let op = depths(&|o| o.category == OpCategory::CpuOp);
        let launch = depths(&|o| o.category == OpCategory::Runtime);
        let nested =
            (module.iter()).any(|&m| (op.iter()).any(|&o| o > m && launch.iter().any(|&l| l > o)));
        assert!(
            nested,
            "modules at {module:?}, ops at {op:?}, launches at {launch:?}"
        );
        // No row holds two overlapping spans, as the lanes draw them.
        for r in &rows {
            let spans: Vec<_> = r
                .spans
                .iter()
                .filter_map(|&i| rec.ops.get(i as usize))
                .collect();
            if r.depth + 1 < MAX_DEPTH {
                assert!(spans.windows(2).all(|w| w[0].end_ns <= w[1].start_ns));
            }
        }
    }

    #[test]
    fn lanes_sorted_as_indices_a_thread_at_a_time_equal_a_sort_of_every_span() {
        // The rows as a stable sort of every (index, span) by (thread, start, longer
        // first) stacks them, on real traces whose spans are not in start order.
        for rel in [
            "../../shared/traces/real/tracelens-h100-bert-small/gaunernst_bert-small-uncased__1016001.json.gz",
            "../tests/fixtures/torch-cpu/k02_mlp_stack.json.gz",
        ] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
            let rec = crate::load(&path, LoadOptions::default()).expect("loads");
            let mut spans: Vec<(u32, OpSpan)> = (rec.ops.iter().enumerate())
                .map(|(i, o)| (i as u32, o))
                .collect();
            let in_order = spans.windows(2).all(|w| w[0].1.start_ns <= w[1].1.start_ns);
            spans.sort_by_key(|(_, o)| (o.thread, o.start_ns, Reverse(o.end_ns)));
            let mut want: Vec<LaneRow> = Vec::new();
            let mut ends: Vec<i64> = Vec::new();
            for (i, o) in spans {
                if want.last().is_none_or(|r| r.thread != o.thread) {
                    ends.clear();
                }
                let first = want.len() - ends.len();
                let depth = (ends.iter().position(|&e| e <= o.start_ns))
                    .unwrap_or(ends.len())
                    .min(MAX_DEPTH - 1);
                if depth == ends.len() {
                    ends.push(o.end_ns);
                    want.push(LaneRow {
                        thread: o.thread,
                        depth,
                        spans: Vec::new(),
                    });
                }
                ends[depth] = ends[depth].max(o.end_ns);
                want[first + depth].spans.push(i);
            }
            assert!(
                !in_order,
                "{rel}: spans already in start order test nothing"
            );
            assert_eq!(lanes_of(&rec, |_| true), want, "{rel}");
        }
    }

    #[test]
    fn a_span_starting_with_the_one_holding_it_goes_under_it_whatever_the_source_order() {
        // Source order: the inner span first, then the one holding it (same start), then
        // a later one; and on a second thread, two spans that start together.
        let mut rec = Recording::empty(crate::parse::SourceFormat::TorchChromeTrace, "test");
        let name = rec.strings.intern("op");
        let spans = [(0, 0, 5), (0, 0, 10), (0, 5, 8), (1, 3, 4), (1, 3, 9)];
        for (thread, start_ns, end_ns) in spans {
            let category = OpCategory::CpuOp;
            rec.ops.push(OpSpan {
                name,
                category,
                thread,
                start_ns,
                end_ns,
            });
        }
        let rows = lanes_of(&rec, |_| true);
        let row = |thread: ThreadIdx, depth: usize, spans: Vec<u32>| LaneRow {
            thread,
            depth,
            spans,
        };
        assert_eq!(
            rows,
            [
                row(0, 0, vec![1]),
                row(0, 1, vec![0, 2]),
                row(1, 0, vec![4]),
                row(1, 1, vec![3])
            ]
        );
    }
}
