//! Which op was running at a given time: per-thread nesting, built once.

use crate::model::{OpCategory, Recording, ThreadIdx};

/// Spans that say what the program was doing: operators, `record_function` ranges, NVTX
/// ranges and Python frames. Runtime calls are left out so the answer reads "aten::mm",
/// not "cudaMalloc"; Python frames are indexed but only named when asked for.
pub fn names_work(category: OpCategory) -> bool {
    matches!(
        category,
        OpCategory::CpuOp
            | OpCategory::UserAnnotation
            | OpCategory::Nvtx
            | OpCategory::PythonFunction
    )
}

/// Per-thread op nesting.
#[derive(Clone, Debug, Default)]
pub struct OpIndex {
    /// For each thread: op indices sorted by (start, −end), with parents.
    threads: Vec<ThreadOps>,
}

/// One thread's spans as parallel columns (33 bytes a span; a vector of tuples took 41 with
/// padding, and on a 111 MB trace this index is the largest part of `summary`'s memory).
#[derive(Clone, Debug, Default)]
struct ThreadOps {
    thread: ThreadIdx,
    /// Index into `Recording::ops`, sorted by (start, −end).
    op: Vec<u32>,
    /// Start of each span.
    start: Vec<i64>,
    /// End of each span.
    end: Vec<i64>,
    /// Position of the enclosing span in these columns, or [`NO_PARENT`].
    parent: Vec<u32>,
    /// Whether each entry is a Python frame.
    python: Vec<bool>,
    /// Running maximum of the ends, so enclosure is exact even when spans overlap
    /// without nesting (seen in real traces from autograd and Python frames).
    max_end: Vec<i64>,
}

const NO_PARENT: u32 = u32::MAX;

impl OpIndex {
    /// Build the index: O(n log n).
    pub fn build(rec: &Recording) -> OpIndex {
        // (start, end, op index) of each thread's spans, read in one pass.
        let mut by_thread: Vec<Vec<(i64, i64, u32)>> = vec![Vec::new(); rec.threads.len()];
        for (i, op) in rec.ops.iter().enumerate() {
            if names_work(op.category)
                && let Some(list) = by_thread.get_mut(op.thread as usize)
            {
                list.push((op.start_ns, op.end_ns, i as u32));
            }
        }
        let mut threads = Vec::new();
        for (t, mut list) in by_thread.into_iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            // Stable: equal (start, end) keep source order.
            list.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
            threads.push(ThreadOps::nest(rec, t as ThreadIdx, list));
        }
        OpIndex { threads }
    }

    /// The innermost op (not Python frame) on `thread` whose closed interval contains `time_ns`.
    pub fn innermost_on_thread(&self, thread: ThreadIdx, time_ns: i64) -> Option<u32> {
        let t = self.threads.iter().find(|t| t.thread == thread)?;
        innermost(t, time_ns, false).map(|(op, _)| op)
    }

    /// Whether an op or Python frame on `thread` contains `time_ns`.
    pub fn enclosed_on_thread(&self, thread: ThreadIdx, time_ns: i64) -> bool {
        self.threads
            .iter()
            .find(|t| t.thread == thread)
            .is_some_and(|t| innermost(t, time_ns, true).is_some())
    }

    /// The innermost span on `thread` containing `time_ns`: an op or annotation if one
    /// does, else a Python frame. Some exactly when [`Self::enclosed_on_thread`] is true.
    pub fn innermost_enclosing(&self, thread: ThreadIdx, time_ns: i64) -> Option<u32> {
        let t = self.threads.iter().find(|t| t.thread == thread)?;
        innermost(t, time_ns, false)
            .or_else(|| innermost(t, time_ns, true))
            .map(|(op, _)| op)
    }

    /// The innermost op on any thread containing `time_ns` (latest start wins).
    pub fn innermost_any(&self, time_ns: i64) -> Option<u32> {
        self.threads
            .iter()
            .filter_map(|t| innermost(t, time_ns, false))
            .max_by_key(|&(_, start)| start)
            .map(|(op, _)| op)
    }

    /// Every op and Python frame on `thread` whose closed interval contains `time_ns`,
    /// innermost first (the chain of enclosing scopes a memory event happened in).
    pub fn enclosing_on_thread(&self, thread: ThreadIdx, time_ns: i64) -> Vec<u32> {
        let Some(t) = self.threads.iter().find(|t| t.thread == thread) else {
            return Vec::new();
        };
        let mut chain = Vec::new();
        let n = t.start.partition_point(|&start| start <= time_ns);
        let Some(mut pos) = n.checked_sub(1) else {
            return chain;
        };
        loop {
            if let (Some(&op), Some(&end)) = (t.op.get(pos), t.end.get(pos))
                && end >= time_ns
            {
                chain.push(op);
            }
            match t.parent.get(pos).copied().filter(|&p| p != NO_PARENT) {
                Some(parent) => pos = parent as usize,
                None => break,
            }
        }
        chain
    }

    /// The ops and Python frames on `thread` that start strictly between the two times, in
    /// start order.
    pub fn starting_between(
        &self,
        thread: ThreadIdx,
        after_ns: i64,
        before_ns: i64,
    ) -> impl Iterator<Item = u32> + '_ {
        let t = self.threads.iter().find(|t| t.thread == thread);
        let (from, to) = t.map_or((0, 0), |t| {
            (
                t.start.partition_point(|&s| s <= after_ns),
                t.start.partition_point(|&s| s < before_ns),
            )
        });
        t.into_iter()
            .flat_map(move |t| t.op.get(from..to.max(from)).unwrap_or(&[]).iter().copied())
    }

    /// The op running at `time_ns`: on `thread` if one is, otherwise on any thread.
    pub fn running_at(&self, thread: ThreadIdx, time_ns: i64) -> Option<u32> {
        self.innermost_on_thread(thread, time_ns)
            .or_else(|| self.innermost_any(time_ns))
    }
}

impl ThreadOps {
    /// One thread's spans, sorted by (start, −end), with their parents.
    fn nest(rec: &Recording, thread: ThreadIdx, list: Vec<(i64, i64, u32)>) -> ThreadOps {
        let n = list.len();
        let mut t = ThreadOps {
            thread,
            op: Vec::with_capacity(n),
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
            parent: Vec::with_capacity(n),
            python: Vec::with_capacity(n),
            max_end: Vec::with_capacity(n),
        };
        let mut stack: Vec<u32> = Vec::new();
        let mut running = i64::MIN;
        for (start_ns, end_ns, i) in list {
            while let Some(&top) = stack.last() {
                let top_end = t.end[top as usize];
                if start_ns > top_end || end_ns > top_end {
                    stack.pop();
                } else {
                    break;
                }
            }
            let pos = t.op.len() as u32;
            let python = rec
                .ops
                .get(i as usize)
                .is_some_and(|o| o.category == OpCategory::PythonFunction);
            t.op.push(i);
            t.start.push(start_ns);
            t.end.push(end_ns);
            t.parent.push(stack.last().copied().unwrap_or(NO_PARENT));
            t.python.push(python);
            running = running.max(end_ns);
            t.max_end.push(running);
            stack.push(pos);
        }
        t
    }
}

/// The innermost entry containing `time_ns`: the last one starting at or before it, or the
/// nearest ancestor of that one that contains it (properly nested spans make that exact).
fn innermost(t: &ThreadOps, time_ns: i64, allow_python: bool) -> Option<(u32, i64)> {
    let n = t.start.partition_point(|&start| start <= time_ns);
    let last = n.checked_sub(1)?;
    if t.max_end.get(last).is_none_or(|&m| m < time_ns) {
        return None;
    }
    let fits = |pos: usize| {
        let (op, start, end) = (*t.op.get(pos)?, *t.start.get(pos)?, *t.end.get(pos)?);
        (end >= time_ns && (allow_python || !t.python.get(pos).copied().unwrap_or(false)))
            .then_some((op, start))
    };
    let mut pos = last;
    loop {
        if let Some(found) = fits(pos) {
            return Some(found);
        }
        match t.parent.get(pos).copied().filter(|&p| p != NO_PARENT) {
            Some(parent) => pos = parent as usize,
            None => break,
        }
    }
    // Spans that overlap without nesting: the latest-starting span that contains the time.
    (0..last).rev().find_map(fits)
}
