//! What the advisor knows of a run: every allocation's life with its category, phase, the
//! model block it was made in and whether a full-precision op made it; the iterations'
//! optimizer steps and backward passes; the model's blocks from its module scopes.

use super::frozen::Frozen;
pub(super) use super::life::{Life, Phase};
use super::ops::BACKWARD_NODE;
use super::structure::{Structure, annotate};
use crate::analysis::categories::{Category, classify_allocations};
use crate::model::python::module_scope;
use crate::model::{OpCategory, Recording};
use crate::timeline::{DeviceTimeline, Timeline};

/// A model block's forward: a module called by the root module that holds modules itself
/// (a transformer layer, a `Sequential` stage): what per-block checkpointing wraps.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub start_ns: i64,
    pub end_ns: i64,
    /// When backward needs the block again (the first free of a saved activation it made):
    /// checkpointing recomputes its forward there.
    pub recompute_ns: Option<i64>,
    /// The saved activation checkpointing keeps: the block's last one (its output, the next
    /// block's input).
    pub output: Option<usize>,
    /// The block's backward: from the first to the last free of a saved activation it made.
    pub backward: Option<(i64, i64)>,
    /// The gradients made in that window: the block's parameters (an FSDP unit).
    pub unit_bytes: i64,
}

/// One device's run, read once.
pub(super) struct Run {
    /// (time, allocated bytes) after each memory event.
    pub points: Vec<(i64, i64)>,
    pub lives: Vec<Life>,
    pub optimizer_steps: Vec<(i64, i64)>,
    pub blocks: Vec<Block>,
    /// The most gradient bytes live at once: one copy of the parameters' gradients.
    pub gradient_bytes: i64,
    /// The most optimizer-state bytes live at once.
    pub state_bytes: i64,
    /// The largest single gradient: a stand-in for one unsharded layer.
    pub layer_bytes: i64,
    /// When the first backward began.
    pub first_backward_ns: Option<i64>,
    /// Backward passes, disjoint and sorted.
    pub backward: Vec<(i64, i64)>,
    /// The parameters' sizes: the gradients one iteration makes (Adam's and SGD's state
    /// per parameter is proportional).
    pub parameter_bytes: Vec<i64>,
    /// The parameters of no block (embeddings, the output layer): FSDP's root unit.
    pub root_unit_bytes: i64,
    /// Per iteration, when its accumulated gradients can begin ([`super::micro`]).
    accumulation_starts: Vec<i64>,
    /// Call stacks without operator or Python spans (an allocator snapshot, whose
    /// annotations may add a few ranges): the rules that read module scopes say a trace is
    /// needed, not that stacks are.
    pub stacks_without_spans: bool,
    /// Attention cores, logits, what tensor parallelism splits ([`super::structure`]).
    pub structure: Structure,
    /// The linears LoRA adapts and the forward before them ([`super::frozen`]).
    pub frozen: Frozen,
}

impl Run {
    /// Read the device's run.
    pub fn build(rec: &Recording, timeline: &Timeline, d: &DeviceTimeline) -> Run {
        let spans = |prefix: &str| -> Vec<(i64, i64)> {
            let mut v: Vec<_> = rec
                .ops
                .iter()
                .filter(|o| rec.strings.get(o.name).starts_with(prefix))
                .map(|o| (o.start_ns, o.end_ns))
                .collect();
            v.sort_unstable();
            v
        };
        let optimizer_steps = spans("Optimizer.step#");
        let classified = classify_allocations(rec, timeline, d);
        let mut backward = super::backward::merge(spans(BACKWARD_NODE));
        if backward.is_empty() {
            backward = super::backward::from_phases(&d.allocations, &classified);
        }
        let mut blocks = blocks(rec);
        let mut lives = super::life::read(rec, timeline, d, &classified, &backward, &blocks);
        mark_blocks(&mut blocks, &lives);
        let structure = annotate(&mut lives, &blocks, &optimizer_steps);
        let frozen = super::frozen::read(rec, &blocks, &optimizer_steps);
        let parameter_bytes = parameter_sizes(&lives, &optimizer_steps);
        let most = |c: Category| most_live(lives.iter().filter(|l| l.category == c));
        let gradient_bytes = most(Category::Gradient);
        let root_unit_bytes = root_unit(&mut blocks, &lives, &optimizer_steps, gradient_bytes);
        let first_ns = d.points.first().map_or(0, |p| p.time_ns);
        let accumulation_starts =
            super::micro::accumulation_starts(&lives, &optimizer_steps, first_ns);
        Run {
            points: d
                .points
                .iter()
                .map(|p| (p.time_ns, p.allocated_bytes))
                .collect(),
            gradient_bytes,
            root_unit_bytes,
            state_bytes: most(Category::OptimizerState),
            layer_bytes: parameter_bytes.iter().copied().max().unwrap_or(0),
            first_backward_ns: backward.first().map(|b| b.0),
            backward,
            lives,
            optimizer_steps,
            blocks,
            parameter_bytes,
            accumulation_starts,
            structure,
            frozen,
            stacks_without_spans: !rec
                .ops
                .iter()
                .any(|op| matches!(op.category, OpCategory::CpuOp | OpCategory::PythonFunction))
                && rec.mem_events.iter().any(|e| e.stack.is_some()),
        }
    }

    /// Each iteration's (start, end of its last backward pass before its optimizer step).
    pub fn forward_to_backward(&self) -> Vec<(i64, i64)> {
        self.optimizer_steps
            .iter()
            .filter_map(|&(step_ns, _)| {
                let end = self
                    .backward
                    .iter()
                    .take_while(|b| b.1 <= step_ns)
                    .last()?
                    .1;
                Some((self.iteration_start(step_ns), end))
            })
            .collect()
    }

    /// ZeroRedundancyOptimizer's most loaded rank at `n` ranks, as a share of all
    /// parameters: it sorts the parameters largest first and gives each to the rank
    /// holding the fewest elements so far; the rank with the most holds the most state.
    pub fn largest_rank_share(&self, n: u32) -> (i64, i64) {
        let mut sizes = self.parameter_bytes.clone();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let mut ranks = vec![0i64; n.max(1) as usize];
        for s in &sizes {
            if let Some(least) = ranks.iter_mut().min() {
                *least += s;
            }
        }
        let total: i64 = sizes.iter().sum();
        match ranks.iter().max() {
            Some(&most) if total > 0 => (most, total),
            _ => (1, i64::from(n.max(1))),
        }
    }

    /// When the accumulated gradients of the iteration holding `time_ns` can begin.
    pub fn accumulation_start(&self, time_ns: i64) -> i64 {
        let i = self.optimizer_steps.partition_point(|s| s.1 <= time_ns);
        self.accumulation_starts
            .get(i)
            .copied()
            .unwrap_or_else(|| self.iteration_start(time_ns))
    }

    /// When the iteration holding `time_ns` began: the end of the optimizer step before it,
    /// or the first memory event.
    pub fn iteration_start(&self, time_ns: i64) -> i64 {
        let first = self.points.first().map_or(time_ns, |p| p.0);
        self.optimizer_steps
            .iter()
            .filter(|s| s.1 <= time_ns)
            .map(|s| s.1)
            .next_back()
            .unwrap_or(first)
    }
}

/// The parameters' sizes: the gradients made before the first optimizer step.
fn parameter_sizes(lives: &[Life], steps: &[(i64, i64)]) -> Vec<i64> {
    let first_step_ns = steps.first().map_or(i64::MAX, |s| s.0);
    lives
        .iter()
        .filter(|l| l.category == Category::Gradient && l.alloc_ns < first_step_ns)
        .map(|l| l.bytes)
        .collect()
}

/// The most bytes live at once among `lives`.
pub(super) fn most_live<'a>(lives: impl Iterator<Item = &'a Life>) -> i64 {
    let mut edges: Vec<(i64, i64)> = Vec::new();
    for l in lives {
        edges.push((l.alloc_ns, l.bytes));
        if let Some(f) = l.free_ns {
            edges.push((f, -l.bytes));
        }
    }
    edges.sort_unstable_by_key(|&(t, b)| (t, b));
    let (mut now, mut most) = (0i64, 0i64);
    for (_, b) in edges {
        now += b;
        most = most.max(now);
    }
    most
}

/// The blocks' forwards, from the `nn.Module: …` scopes: the modules directly under a root
/// module that enclose other modules.
fn blocks(rec: &Recording) -> Vec<Block> {
    let mut modules: Vec<(i64, i64)> = rec
        .ops
        .iter()
        .filter(|o| {
            o.category == OpCategory::PythonFunction
                && module_scope(rec.strings.get(o.name)).is_some()
        })
        .map(|o| (o.start_ns, o.end_ns))
        .collect();
    // Outer scopes first where two start together.
    modules.sort_unstable_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
    let mut out = Vec::new();
    let mut stack: Vec<(i64, i64)> = Vec::new();
    for &(s, e) in &modules {
        while stack.last().is_some_and(|top| top.1 < s) {
            stack.pop();
        }
        // A module two deep: its parent, a child of the root, is a block.
        if stack.len() == 2
            && let Some(&parent) = stack.get(1)
            && out.last().is_none_or(|b: &Block| b.start_ns != parent.0)
        {
            out.push(block_at(parent));
        }
        stack.push((s, e));
    }
    out
}

impl Block {
    /// A block of no time.
    pub const EMPTY: Block = Block {
        start_ns: 0,
        end_ns: 0,
        recompute_ns: None,
        output: None,
        backward: None,
        unit_bytes: 0,
    };
}

fn block_at((start_ns, end_ns): (i64, i64)) -> Block {
    Block {
        start_ns,
        end_ns,
        ..Block::EMPTY
    }
}

/// Each block's FSDP unit and the root unit. Backward runs the blocks in reverse: a
/// gradient made inside a block's backward window of its iteration is that block's
/// parameters'; one made before the iteration's first window (the output layer) or after
/// its last (the embedding) belongs to no block. The root unit is the first iteration's
/// gradients of no block.
fn root_unit(
    blocks: &mut [Block],
    lives: &[Life],
    steps: &[(i64, i64)],
    gradient_bytes: i64,
) -> i64 {
    let iteration = |t: i64| steps.partition_point(|s| s.1 <= t);
    let first_step_ns = steps.first().map_or(i64::MAX, |s| s.0);
    let mut in_blocks = 0;
    for l in lives.iter().filter(|l| l.category == Category::Gradient) {
        let t = l.alloc_ns;
        let owner = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| iteration(b.start_ns) == iteration(t))
            .find(|(_, b)| b.backward.is_some_and(|(s, e)| s <= t && t <= e))
            .map(|(i, _)| i);
        if let Some(b) = owner.and_then(|i| blocks.get_mut(i)) {
            b.unit_bytes += l.bytes;
            if t < first_step_ns {
                in_blocks += l.bytes;
            }
        }
    }
    (gradient_bytes - in_blocks).max(0)
}

/// Each block's output (its last saved activation) and when backward needs it again.
fn mark_blocks(blocks: &mut [Block], lives: &[Life]) {
    for (i, l) in lives.iter().enumerate() {
        let Some(b) = l.block.and_then(|b| blocks.get_mut(b as usize)) else {
            continue;
        };
        if !l.saved {
            continue;
        }
        if b.output
            .is_none_or(|o| lives.get(o).is_some_and(|o| o.alloc_ns <= l.alloc_ns))
        {
            b.output = Some(i);
        }
        if let Some(f) = l.free_ns {
            b.recompute_ns = Some(b.recompute_ns.map_or(f, |r| r.min(f)));
        }
    }
    // The backward window: from when its output is freed (the next block's backward, or
    // the output layer's, is done with it) to its last saved activation's free.
    for l in lives {
        let Some(b) = l.block.and_then(|b| blocks.get_mut(b as usize)) else {
            continue;
        };
        if let Some(f) = l.free_ns.filter(|_| l.saved) {
            b.backward = Some(b.backward.map_or((f, f), |(s, e)| (s.min(f), e.max(f))));
        }
    }
}
