//! The model's structure as the trace shows it, for the techniques that reshape by layer: the
//! attention cores (selective checkpointing), the loss's logits (chunked loss), what tensor
//! parallelism splits in each block, the output layer and the weights of the linears (LoRA,
//! tensor parallelism).

use std::collections::BTreeSet;

use super::run::{Block, Life, Phase};
use crate::analysis::categories::Category;

/// One attention core of a block's forward: from its scores to the matmul with the values.
#[derive(Clone, Copy, Debug)]
pub(super) struct Core {
    /// When the core's forward ends (its saved tensors are freed there when it is
    /// checkpointed).
    pub end_ns: i64,
    /// When backward needs the core: the first free of a tensor it saved.
    pub recompute_ns: Option<i64>,
}

/// A block's saved forward activations: all, those tensor parallelism splits, and the norms'
/// outputs.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Shares {
    pub saved_bytes: i64,
    pub split_bytes: i64,
    pub norm_bytes: i64,
}

/// The structure read from a run's allocations.
#[derive(Clone, Debug, Default)]
pub(super) struct Structure {
    pub cores: Vec<Core>,
    /// The largest tensor the loss made in the forward: one logits-sized fp32 tensor.
    pub logits_bytes: i64,
    /// Per block (as [`super::run::Run::blocks`]).
    pub shares: Vec<Shares>,
    /// The weight gradients of the linears other than the output layer, first iteration:
    /// each linear's weight size.
    pub linear_weights: Vec<i64>,
    /// The sizes of those weights (what tensor parallelism splits), and of every other
    /// parameter (what it keeps whole).
    pub split_sizes: BTreeSet<i64>,
    pub whole_sizes: BTreeSet<i64>,
    /// Per block: its place among its iteration's blocks, and how many that iteration has.
    pub positions: Vec<(u32, u32)>,
    /// The output layer's weight gradient, first iteration.
    pub head_bytes: i64,
}

/// Mark the lives (attention cores, split activations, the output layer's gradients) and
/// read the structure.
pub(super) fn annotate(lives: &mut [Life], blocks: &[Block], steps: &[(i64, i64)]) -> Structure {
    let first_step_ns = steps.first().map_or(i64::MAX, |s| s.0);
    let mut per_block: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (i, l) in lives.iter().enumerate() {
        if let Some(v) = l.block.and_then(|b| per_block.get_mut(b as usize))
            && l.phase == Phase::Forward
        {
            v.push(i);
        }
    }
    let mut s = Structure::default();
    for (b, order) in per_block.iter_mut().enumerate() {
        order.sort_by_key(|&i| lives.get(i).map(|l| l.alloc_ns));
        let end_ns = blocks.get(b).map_or(i64::MAX, |b| b.end_ns);
        cores(lives, order, end_ns, &mut s.cores);
        split(lives, order);
        s.shares.push(shares(lives, order));
    }
    s.logits_bytes = lives
        .iter()
        .filter(|l| l.loss && l.phase == Phase::Forward && l.category != Category::Gradient)
        .map(|l| l.bytes)
        .max()
        .unwrap_or(0);
    heads(lives, steps);
    backward_blocks(lives, blocks);
    s.positions = positions(blocks, steps);
    s.head_bytes = lives
        .iter()
        .find(|l| l.head && l.alloc_ns < first_step_ns)
        .map_or(0, |l| l.bytes);
    let first_gradients = lives
        .iter()
        .filter(|l| l.category == Category::Gradient && l.alloc_ns < first_step_ns);
    for l in first_gradients {
        if l.matmul && !l.head {
            s.linear_weights.push(l.bytes);
            s.split_sizes.insert(l.bytes);
        } else {
            s.whole_sizes.insert(l.bytes);
        }
    }
    s
}

/// The attention cores among a block's forward lives (`order`, by time): each softmax output,
/// from the latest tensor of its size before it (the scores) to the first matmul after it
/// (with the values); the saved tensors made in between are the core's.
fn cores(lives: &mut [Life], order: &[usize], block_end_ns: i64, out: &mut Vec<Core>) {
    let at = |lives: &[Life], k: usize| order.get(k).and_then(|&i| lives.get(i)).copied();
    for p in 0..order.len() {
        let Some(soft) = at(lives, p).filter(|l| l.softmax && l.category == Category::Activation)
        else {
            continue;
        };
        let from = (0..p)
            .rev()
            .find(|&q| at(lives, q).is_some_and(|l| l.bytes == soft.bytes))
            .unwrap_or(p);
        let to = (p + 1..order.len())
            .find(|&r| at(lives, r).is_some_and(|l| l.matmul))
            .unwrap_or(order.len());
        let end_ns = at(lives, to).map_or(block_end_ns, |l| l.alloc_ns);
        let id = u32::try_from(out.len()).unwrap_or(u32::MAX);
        let mut recompute_ns: Option<i64> = None;
        for k in from..to {
            let Some(l) = order.get(k).and_then(|&i| lives.get_mut(i)) else {
                continue;
            };
            if l.saved && l.core.is_none() {
                l.core = Some(id);
                if let Some(f) = l.free_ns {
                    recompute_ns = Some(recompute_ns.map_or(f, |r| r.min(f)));
                }
            }
        }
        out.push(Core {
            end_ns,
            recompute_ns,
        });
    }
}

/// Megatron's split of a block: between norms, the activations from the first linear's
/// output (column-parallel) up to the last linear's (row-parallel, whose output is whole)
/// are split over the ranks.
fn split(lives: &mut [Life], order: &[usize]) {
    let is = |lives: &[Life], k: usize, f: fn(&Life) -> bool| {
        order.get(k).and_then(|&i| lives.get(i)).is_some_and(f)
    };
    let mut start = 0;
    while start < order.len() {
        let end = (start + 1..order.len())
            .find(|&k| is(lives, k, |l| l.norm))
            .unwrap_or(order.len());
        let linear = |l: &Life| l.matmul && l.category == Category::Activation;
        let first = (start..end).find(|&k| is(lives, k, linear));
        let last = (start..end).rev().find(|&k| is(lives, k, linear));
        if let (Some(f), Some(l)) = (first, last) {
            for k in f..l {
                if let Some(life) = order.get(k).and_then(|&i| lives.get_mut(i)) {
                    life.split = true;
                }
            }
        }
        start = end;
    }
}

fn shares(lives: &[Life], order: &[usize]) -> Shares {
    let mut s = Shares::default();
    for l in order
        .iter()
        .filter_map(|&i| lives.get(i))
        .filter(|l| l.saved)
    {
        s.saved_bytes += l.bytes;
        if l.split {
            s.split_bytes += l.bytes;
        }
        if l.norm {
            s.norm_bytes += l.bytes;
        }
    }
    s
}

/// The output layer's weight gradient: the first weight gradient (made by a matmul) of each
/// iteration, whose backward starts at the loss.
fn heads(lives: &mut [Life], steps: &[(i64, i64)]) {
    let mut seen = vec![false; steps.len() + 1];
    let mut order: Vec<usize> = (0..lives.len()).collect();
    order.sort_by_key(|&i| lives.get(i).map(|l| l.alloc_ns));
    for i in order {
        let Some(l) = lives.get_mut(i) else { continue };
        if l.category != Category::Gradient || !l.matmul {
            continue;
        }
        let iteration = steps.partition_point(|s| s.1 <= l.alloc_ns);
        if let Some(seen) = seen.get_mut(iteration)
            && !*seen
        {
            *seen = true;
            l.head = true;
        }
    }
}

/// Each backward allocation's block: the one whose backward window holds it.
fn backward_blocks(lives: &mut [Life], blocks: &[Block]) {
    let mut windows: Vec<(i64, i64, u32)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((b.backward?, u32::try_from(i).ok()?)))
        .map(|((s, e), i)| (s, e, i))
        .collect();
    windows.sort_unstable();
    for l in lives.iter_mut().filter(|l| l.phase == Phase::Backward) {
        let t = l.alloc_ns;
        let before = windows.partition_point(|w| w.0 <= t);
        l.backward_block = windows
            .get(..before)
            .unwrap_or_default()
            .iter()
            .rev()
            .find(|w| t <= w.1)
            .map(|w| w.2);
    }
}

/// Each block's place among its iteration's blocks (iterations end at optimizer steps).
fn positions(blocks: &[Block], steps: &[(i64, i64)]) -> Vec<(u32, u32)> {
    let iteration = |b: &Block| steps.partition_point(|s| s.1 <= b.start_ns);
    let mut out = Vec::with_capacity(blocks.len());
    let mut from = 0;
    while from < blocks.len() {
        let it = blocks.get(from).map(iteration);
        let to = (from..blocks.len())
            .find(|&i| blocks.get(i).map(iteration) != it)
            .unwrap_or(blocks.len());
        let count = u32::try_from(to - from).unwrap_or(u32::MAX);
        out.extend((0..count).map(|p| (p, count)));
        from = to;
    }
    out
}
