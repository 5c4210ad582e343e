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

/// One thread's spans as parallel columns, ~24 bytes a span (on a 10 GB trace this index
/// holds 11 M spans): ends as durations, the running maximum of the ends as the position
/// of the span that reaches it, Python frames as bits.
#[derive(Clone, Debug, Default)]
struct ThreadOps {
    thread: ThreadIdx,
    /// Index into `Recording::ops`, sorted by (start, −end).
    op: Vec<u32>,
    /// Start of each span.
    start: Vec<i64>,
    /// End − start of each span, or [`LONG`]: its end is in `long_ends`.
    duration: Vec<u32>,
    /// The ends of spans of 4.3 s or more, or that end before they start, by position.
    long_ends: rustc_hash::FxHashMap<u32, i64>,
    /// Position of the enclosing span in these columns, or [`NO_PARENT`].
    parent: Vec<u32>,
    /// Whether each entry is a Python frame, a bit each.
    python: Vec<u64>,
    /// The position, among this one and those before it, of the span with the latest end:
    /// a running maximum of the ends, so enclosure is exact even when spans overlap
    /// without nesting (seen in real traces from autograd and Python frames).
    max_end_at: Vec<u32>,
}

/// The duration that marks an end kept in `long_ends`.
const LONG: u32 = u32::MAX;

impl ThreadOps {
    fn end(&self, pos: usize) -> Option<i64> {
        match *self.duration.get(pos)? {
            LONG => self.long_ends.get(&(pos as u32)).copied(),
            d => Some(self.start.get(pos)? + i64::from(d)),
        }
    }

    fn is_python(&self, pos: usize) -> bool {
        self.python
            .get(pos / 64)
            .is_some_and(|w| w & (1 << (pos % 64)) != 0)
    }

    /// The position of the nearest span enclosing `pos` that is not a Python frame.
    fn op_parent(&self, pos: usize) -> Option<usize> {
        let mut p = *self.parent.get(pos)?;
        while p != NO_PARENT && self.is_python(p as usize) {
            p = *self.parent.get(p as usize)?;
        }
        (p != NO_PARENT).then_some(p as usize)
    }

    fn max_end(&self, pos: usize) -> Option<i64> {
        self.end(*self.max_end_at.get(pos)? as usize)
    }

    fn push(&mut self, op: u32, (start_ns, end_ns): (i64, i64), parent: u32, python: bool) {
        let pos = self.op.len();
        let duration = (end_ns.checked_sub(start_ns))
            .and_then(|d| u32::try_from(d).ok())
            .filter(|&d| d != LONG);
        self.duration.push(duration.unwrap_or(LONG));
        if duration.is_none() {
            self.long_ends.insert(pos as u32, end_ns);
        }
        if pos.is_multiple_of(64) {
            self.python.push(0);
        }
        if python && let Some(w) = self.python.last_mut() {
            *w |= 1 << (pos % 64);
        }
        let latest = pos.checked_sub(1).and_then(|p| {
            let at = *self.max_end_at.get(p)?;
            (self.end(at as usize)? >= end_ns).then_some(at)
        });
        self.max_end_at.push(latest.unwrap_or(pos as u32));
        self.op.push(op);
        self.start.push(start_ns);
        self.parent.push(parent);
    }
}

const NO_PARENT: u32 = u32::MAX;

/// How many spans [`OpIndex::ops_before_at_level`] walks back through: an optimizer's
/// per-weight update is a handful of ops, each with a few children and Python frames; the
/// walk costs at most this many steps an asking allocation.
const MAX_LEVEL_WALK: usize = 256;

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
            // Equal (start, end) keep source order: the op index breaks the tie. Unstable
            // sorts need no scratch; the standard stable sort allocates one as long as the
            // list (24 bytes a span: 7 MB of `summary`'s peak at 2 GB on the stack shape).
            list.sort_unstable_by_key(|&(start, end, op)| (start, std::cmp::Reverse(end), op));
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

    /// Every level of the op stack at `time_ns`, innermost first: the op
    /// [`Self::innermost_any`] picks, then each op and Python frame (module scope) that
    /// encloses it on its thread — Perfetto's nested slices at an instant.
    pub fn nested_at(&self, time_ns: i64) -> Vec<u32> {
        let thread = self
            .threads
            .iter()
            .filter_map(|t| innermost(t, time_ns, false).map(|(_, start)| (t.thread, start)))
            .max_by_key(|&(_, start)| start)
            .map(|(thread, _)| thread);
        thread.map_or_else(Vec::new, |t| self.enclosing_on_thread(t, time_ns))
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
            if let (Some(&op), Some(end)) = (t.op.get(pos), t.end(pos))
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

    /// Up to `n` ops (not Python frames) that ran on `thread` before op `op`, which started
    /// at `start_ns`, at its level — inside the same nearest enclosing op, Python frames
    /// looked through — latest first. Walks back at most [`MAX_LEVEL_WALK`] spans.
    pub fn ops_before_at_level(
        &self,
        thread: ThreadIdx,
        op: u32,
        start_ns: i64,
        n: usize,
    ) -> Vec<u32> {
        let Some(t) = self.threads.iter().find(|t| t.thread == thread) else {
            return Vec::new();
        };
        let from = t.start.partition_point(|&s| s < start_ns);
        let to = t.start.partition_point(|&s| s <= start_ns);
        let Some(pos) = (from..to).find(|&p| t.op.get(p) == Some(&op)) else {
            return Vec::new();
        };
        let level = t.op_parent(pos);
        let stop = level
            .map_or(0, |p| p + 1)
            .max(pos.saturating_sub(MAX_LEVEL_WALK));
        (stop..pos)
            .rev()
            .filter(|&q| !t.is_python(q) && t.op_parent(q) == level)
            .filter_map(|q| t.op.get(q).copied())
            .take(n)
            .collect()
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
            duration: Vec::with_capacity(n),
            long_ends: Default::default(),
            parent: Vec::with_capacity(n),
            python: Vec::with_capacity(n.div_ceil(64)),
            max_end_at: Vec::with_capacity(n),
        };
        let mut stack: Vec<u32> = Vec::new();
        for (start_ns, end_ns, i) in list {
            while let Some(&top) = stack.last() {
                let top_end = t.end(top as usize).unwrap_or(i64::MIN);
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
            let parent = stack.last().copied().unwrap_or(NO_PARENT);
            t.push(i, (start_ns, end_ns), parent, python);
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
    if t.max_end(last).is_none_or(|m| m < time_ns) {
        return None;
    }
    let fits = |pos: usize| {
        let (op, start, end) = (*t.op.get(pos)?, *t.start.get(pos)?, t.end(pos)?);
        (end >= time_ns && (allow_python || !t.is_python(pos))).then_some((op, start))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OpSpan, StrId, ThreadInfo};

    /// Brute force: the containing non-Python spans of a thread, latest start first (and
    /// among equal starts the one sorted later, i.e. the shorter).
    fn containing(rec: &Recording, time_ns: i64) -> Vec<u32> {
        let mut found: Vec<(i64, std::cmp::Reverse<i64>, u32)> = (rec.ops.iter().enumerate())
            .filter(|(_, o)| o.category == OpCategory::CpuOp)
            .filter(|(_, o)| o.start_ns <= time_ns && time_ns <= o.end_ns)
            .map(|(i, o)| (o.start_ns, std::cmp::Reverse(o.end_ns), i as u32))
            .collect();
        found.sort();
        found.into_iter().rev().map(|f| f.2).collect()
    }

    #[test]
    fn long_and_overlapping_spans_are_found_as_the_spans_say() {
        let mut rec = Recording::empty(crate::parse::SourceFormat::TorchChromeTrace, "");
        rec.threads.push(ThreadInfo {
            pid: "1".into(),
            tid: "1".into(),
            name: None,
        });
        let span = |category, start_ns, end_ns| OpSpan {
            name: StrId(0),
            category,
            thread: 0,
            start_ns,
            end_ns,
        };
        // A step of 10 s (longer than a u32 of ns), ops inside it, two that overlap
        // without nesting, a Python frame, a span ending before it starts.
        let ten_s = 10_000_000_000;
        for s in [
            span(OpCategory::CpuOp, 0, ten_s),
            span(OpCategory::CpuOp, 100, 5_000_000_000),
            span(OpCategory::CpuOp, 200, 300),
            span(OpCategory::CpuOp, 6_000_000_000, 7_000_000_000),
            span(OpCategory::CpuOp, 6_500_000_000, 8_000_000_000),
            span(OpCategory::PythonFunction, 7_200_000_000, 7_300_000_000),
            span(OpCategory::CpuOp, 9_000_000_000, 8_999_999_000),
            span(OpCategory::CpuOp, ten_s + 5, ten_s + 9),
        ] {
            rec.ops.push(s);
        }
        let index = OpIndex::build(&rec);
        for t in [
            0,
            150,
            250,
            4_999_999_999,
            6_700_000_000,
            7_250_000_000,
            7_900_000_000,
            ten_s,
            ten_s + 1,
            ten_s + 7,
            ten_s + 10,
        ] {
            let want = containing(&rec, t);
            assert_eq!(
                index.innermost_on_thread(0, t),
                want.first().copied(),
                "at {t}"
            );
        }
        assert_eq!(index.innermost_enclosing(0, 7_250_000_000), Some(4));
        assert_eq!(index.enclosing_on_thread(0, 250), vec![2, 1, 0]);
    }

    #[test]
    fn the_ops_before_one_at_its_level_look_through_frames_and_skip_children() {
        let mut rec = Recording::empty(crate::parse::SourceFormat::TorchChromeTrace, "");
        for tid in ["1", "2"] {
            rec.threads.push(ThreadInfo {
                pid: "1".into(),
                tid: tid.into(),
                name: None,
            });
        }
        let span = |category, thread, start_ns, end_ns| OpSpan {
            name: StrId(0),
            category,
            thread,
            start_ns,
            end_ns,
        };
        let (cpu, python) = (OpCategory::CpuOp, OpCategory::PythonFunction);
        // A step (0) whose code calls, each under a Python frame, clone (2; its children 3
        // and 4), detach (6), then add (8); another thread's op (9) between them in time.
        for s in [
            span(cpu, 0, 0, 1000),
            span(python, 0, 10, 200),
            span(cpu, 0, 20, 190),
            span(cpu, 0, 30, 60),
            span(cpu, 0, 70, 180),
            span(python, 0, 210, 300),
            span(cpu, 0, 220, 290),
            span(python, 0, 310, 400),
            span(cpu, 0, 320, 390),
            span(cpu, 1, 250, 260),
        ] {
            rec.ops.push(s);
        }
        let index = OpIndex::build(&rec);
        assert_eq!(index.ops_before_at_level(0, 8, 320, 2), vec![6, 2]);
        assert_eq!(index.ops_before_at_level(0, 8, 320, 5), vec![6, 2]);
        assert_eq!(index.ops_before_at_level(0, 4, 70, 2), vec![3]);
        assert_eq!(index.ops_before_at_level(0, 2, 20, 2), Vec::<u32>::new());
        // Not the op that starts there, or not on that thread: nothing.
        assert_eq!(index.ops_before_at_level(0, 7, 320, 2), Vec::<u32>::new());
        assert_eq!(index.ops_before_at_level(1, 8, 320, 2), Vec::<u32>::new());
    }
}
