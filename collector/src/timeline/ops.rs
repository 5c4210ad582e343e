//! Which op was running at a given time: per-thread nesting, built once.

use crate::model::{OpCategory, Recording, ThreadIdx};

/// Ops that name what the program was doing: operators and `record_function` ranges.
/// Runtime calls and Python frames are left out so the answer reads "aten::mm", not
/// "cudaMalloc" or "<built-in method ...>".
fn names_work(category: OpCategory) -> bool {
    matches!(
        category,
        OpCategory::CpuOp | OpCategory::UserAnnotation | OpCategory::Nvtx
    )
}

/// Per-thread op nesting.
#[derive(Clone, Debug, Default)]
pub struct OpIndex {
    /// For each thread: op indices sorted by (start, −end), with parents.
    threads: Vec<ThreadOps>,
}

#[derive(Clone, Debug, Default)]
struct ThreadOps {
    thread: ThreadIdx,
    /// (op index into Recording::ops, start_ns, end_ns, parent position in this list)
    ops: Vec<(u32, i64, i64, Option<u32>)>,
}

impl OpIndex {
    /// Build the index: O(n log n).
    pub fn build(rec: &Recording) -> OpIndex {
        let mut by_thread: Vec<Vec<u32>> = vec![Vec::new(); rec.threads.len()];
        for (i, op) in rec.ops.iter().enumerate() {
            if names_work(op.category)
                && let Some(list) = by_thread.get_mut(op.thread as usize)
            {
                list.push(i as u32);
            }
        }
        let mut threads = Vec::new();
        for (t, mut list) in by_thread.into_iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            list.sort_by_key(|&i| {
                let op = &rec.ops[i as usize];
                (op.start_ns, std::cmp::Reverse(op.end_ns))
            });
            let mut ops: Vec<(u32, i64, i64, Option<u32>)> = Vec::with_capacity(list.len());
            let mut stack: Vec<u32> = Vec::new();
            for i in list {
                let op = &rec.ops[i as usize];
                while let Some(&top) = stack.last() {
                    let (_, _, top_end, _) = ops[top as usize];
                    if op.start_ns > top_end || op.end_ns > top_end {
                        stack.pop();
                    } else {
                        break;
                    }
                }
                let pos = ops.len() as u32;
                ops.push((i, op.start_ns, op.end_ns, stack.last().copied()));
                stack.push(pos);
            }
            threads.push(ThreadOps {
                thread: t as ThreadIdx,
                ops,
            });
        }
        OpIndex { threads }
    }

    /// The innermost op on `thread` whose closed interval contains `time_ns`.
    pub fn innermost_on_thread(&self, thread: ThreadIdx, time_ns: i64) -> Option<u32> {
        let t = self.threads.iter().find(|t| t.thread == thread)?;
        innermost(t, time_ns).map(|(op, _)| op)
    }

    /// The innermost op on any thread containing `time_ns` (latest start wins).
    pub fn innermost_any(&self, time_ns: i64) -> Option<u32> {
        self.threads
            .iter()
            .filter_map(|t| innermost(t, time_ns))
            .max_by_key(|&(_, start)| start)
            .map(|(op, _)| op)
    }

    /// The op running at `time_ns`: on `thread` if one is, otherwise on any thread.
    pub fn running_at(&self, thread: ThreadIdx, time_ns: i64) -> Option<u32> {
        self.innermost_on_thread(thread, time_ns)
            .or_else(|| self.innermost_any(time_ns))
    }
}

fn innermost(t: &ThreadOps, time_ns: i64) -> Option<(u32, i64)> {
    let n = t.ops.partition_point(|&(_, start, _, _)| start <= time_ns);
    let mut pos = n.checked_sub(1)?;
    loop {
        let &(op, start, end, parent) = t.ops.get(pos)?;
        if end >= time_ns {
            return Some((op, start));
        }
        pos = parent? as usize;
    }
}
