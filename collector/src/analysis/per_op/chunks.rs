//! The table in chunks of time, so its memory stays flat: each chunk's events, tree and
//! folding flags take ~55 bytes an op, which for a whole 10 GB trace (23 M ops) would be 1.3 GB.
//!
//! Chunks are cut only at instants inside no host op that the table counts, other than
//! Python frames: no such op then straddles a cut, so every op's children, its memory
//! records and the records covered by no op all lie in its own chunk, and running torch's
//! rules chunk by chunk, in time order, gives the whole table's rows in the same order.
//! Python frames may straddle cuts (a script's `<module>` frame spans the run): they are
//! not rows, so a frame still open at a chunk's start is given to that chunk as well, to
//! nest its ops as the whole run would. Device-side ops (kernels) nest nothing and hold
//! no memory; each goes to the chunk it starts in.
//!
//! Cuts are tried at each training step's start and at the starts of every few thousandth
//! op; where none is clear of ops (one op spanning the run) the table is one chunk.

use super::events::OpFilter;
use crate::model::{OpCategory, Recording};

/// Ops per chunk the table aims at: ~14 MB of events, tree and flags a chunk, whatever the
/// trace's size. Smaller chunks cost a pass over each chunk's records' times each.
pub(super) const CHUNK_OPS: usize = 1 << 18;

/// Candidate cuts per chunk aimed at (op starts tried, beside the steps' starts).
const CANDIDATES_PER_CHUNK: usize = 8;

/// Counted ops grouped by the chunk they start in.
pub(super) struct Chunks {
    /// Chunk k covers `[bounds[k - 1], bounds[k])`, the first from the beginning of time and
    /// the last to its end.
    bounds: Vec<i64>,
    /// Counted op indices, chunk by chunk, in source order within each.
    ops: Vec<u32>,
    /// `ops[starts[k]..starts[k + 1]]` are chunk k's.
    starts: Vec<usize>,
    /// Python frames open at chunk k's start that started before it, in source order.
    open_frames: Vec<Vec<u32>>,
}

impl Chunks {
    /// Cut the counted ops into chunks of about `chunk_ops`.
    pub(super) fn plan(rec: &Recording, filter: &OpFilter, chunk_ops: usize) -> Chunks {
        let counted = rec.ops.iter().filter(|o| filter.counts(o)).count();
        let bounds = if counted > chunk_ops {
            cuts(rec, filter, counted, chunk_ops)
        } else {
            Vec::new()
        };
        let chunk_of = |t: i64| bounds.partition_point(|&b| b <= t);
        let mut starts = vec![0usize; bounds.len() + 2];
        for op in rec.ops.iter().filter(|o| filter.counts(o)) {
            starts[chunk_of(op.start_ns) + 1] += 1;
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        let mut fill = starts.clone();
        let mut ops = vec![0u32; counted];
        let mut open_frames = vec![Vec::new(); bounds.len() + 1];
        for (i, op) in rec.ops.iter().enumerate() {
            if !filter.counts(&op) {
                continue;
            }
            let k = chunk_of(op.start_ns);
            ops[fill[k]] = i as u32;
            fill[k] += 1;
            if op.category == OpCategory::PythonFunction {
                for frames in &mut open_frames[k + 1..=chunk_of(op.end_ns).max(k)] {
                    frames.push(i as u32);
                }
            }
        }
        Chunks {
            bounds,
            ops,
            starts,
            open_frames,
        }
    }

    /// Number of chunks.
    pub(super) fn len(&self) -> usize {
        self.bounds.len() + 1
    }

    /// Chunk k's time range `[from, to)`.
    pub(super) fn range(&self, k: usize) -> (i64, i64) {
        let from = k.checked_sub(1).map_or(i64::MIN, |j| self.bounds[j]);
        (from, self.bounds.get(k).copied().unwrap_or(i64::MAX))
    }

    /// Chunk k's ops in push order: the frames open at its start, then its own.
    pub(super) fn ops(&self, k: usize) -> impl Iterator<Item = u32> + '_ {
        let own = &self.ops[self.starts[k]..self.starts[k + 1]];
        self.open_frames[k].iter().chain(own).copied()
    }
}

/// The cuts: candidates (step starts, every few thousandth op's start) that no counted
/// host op other than a Python frame straddles, taken once at least `chunk_ops` ops lie
/// since the last cut.
fn cuts(rec: &Recording, filter: &OpFilter, counted: usize, chunk_ops: usize) -> Vec<i64> {
    let stride = (chunk_ops / CANDIDATES_PER_CHUNK).max(1);
    let mut candidates: Vec<i64> = rec.steps.iter().map(|s| s.start_ns).collect();
    candidates.extend(
        rec.ops
            .iter()
            .filter(|o| filter.counts(o))
            .step_by(stride)
            .map(|o| o.start_ns),
    );
    candidates.sort_unstable();
    candidates.dedup();
    // Ops starting before each candidate (and after the one before), and a difference
    // array of the ops straddling each: a candidate in (start, end] is inside the op.
    let mut before = vec![0usize; candidates.len() + 1];
    let mut straddled = vec![0i32; candidates.len() + 1];
    for op in rec.ops.iter().filter(|o| filter.counts(o)) {
        let a = candidates.partition_point(|&t| t <= op.start_ns);
        before[a] += 1;
        if op.category.is_host() && op.category != OpCategory::PythonFunction {
            let b = candidates.partition_point(|&t| t <= op.end_ns);
            if a < b {
                straddled[a] += 1;
                straddled[b] -= 1;
            }
        }
    }
    let (mut cuts, mut since, mut seen, mut depth) = (Vec::new(), 0usize, 0usize, 0i32);
    for (j, &t) in candidates.iter().enumerate() {
        since += before[j];
        seen += before[j];
        depth += straddled[j];
        // Not so close to the end that the last chunk would be a sliver.
        if depth == 0 && since >= chunk_ops && counted - seen >= chunk_ops / 2 {
            cuts.push(t);
            since = 0;
        }
    }
    // Frames open across cuts are given to each chunk they reach: past one per op (frames
    // that overlap without nesting, in a hostile file), one chunk costs less.
    let chunk_of = |t: i64| cuts.partition_point(|&b| b <= t);
    let replicas: usize = rec
        .ops
        .iter()
        .filter(|o| o.category == OpCategory::PythonFunction && filter.counts(o))
        .map(|o| chunk_of(o.end_ns).saturating_sub(chunk_of(o.start_ns)))
        .sum();
    if replicas > counted {
        cuts.clear();
    }
    cuts
}
