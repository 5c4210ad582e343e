//! Where a memory event happened: its phase (forward, backward, optimizer step,
//! `zero_grad`), the torch data-flow leaf op it belongs to, the innermost operator, and
//! whether a module's forward encloses it — from the op spans enclosing the event on its
//! thread (traces), or from its call stack (allocator snapshots).

use std::cell::RefCell;

use super::leaf::{LeafKind, SHAPE_ONLY_OPS, leaf_kind};
use super::step_results::{
    DecayNaming, MOST_STATE_TENSORS_PER_WEIGHT, decay_naming, may_run_amsgrad,
    state_tensors_per_weight,
};
use crate::model::{MemEvent, OpCategory, Recording, StrId, ThreadIdx};
use crate::timeline::{OpIndex, Timeline};

/// The part of a training iteration an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Phase {
    /// Inside some op or frame but none of the phases below: the forward pass and the
    /// work around it (data, loss).
    Forward,
    /// Under `autograd::engine::evaluate_function: …` or a `…Backward…` node.
    Backward,
    /// Under `Optimizer.step#…`.
    Optimizer,
    /// Under `Optimizer.zero_grad#…`.
    ZeroGrad,
    /// No op or frame encloses it.
    Outside,
}

impl Phase {
    /// The stable name in exports: `forward`, `backward`, `optimizer`, `zero_grad`,
    /// `outside`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
            Phase::ZeroGrad => "zero_grad",
            Phase::Outside => "outside",
        }
    }
}

/// Where one memory event happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Site {
    /// The phase.
    pub phase: Phase,
    /// torch's data-flow leaf: the outermost operator (or autograd node) enclosing the
    /// event, as an op index — or, for a snapshot, the innermost frame's (file, line).
    pub leaf: Option<(u32, u32)>,
    /// What the leaf's name says.
    pub leaf_kind: LeafKind,
    /// The innermost operator (not a Python frame) enclosing the event.
    pub innermost_op: Option<u32>,
    /// Whether an `nn.Module` forward (a module's frame) encloses it.
    pub in_module: bool,
    /// Which optimizer step (index into [`Phases::optimizer_steps`]) encloses it.
    pub step: Option<usize>,
    /// Whether a `torch.nn` module's `__init__` (or `reset_parameters`, `load_state_dict`)
    /// encloses it: a weight being made.
    pub makes_weights: bool,
    /// Whether `torch.load` (`torch/serialization.py`) encloses it: a checkpoint being read.
    pub loads_checkpoint: bool,
    /// Whether `AveragedModel`'s `__init__` encloses it: a weight copied to be averaged.
    pub copies_for_averaging: bool,
    /// Whether `clip_grad_norm_` (`torch/nn/utils/clip_grad.py`) encloses it.
    pub clips_gradients: bool,
    /// Whether DDP's making of its gradient buckets encloses it.
    pub makes_ddp_buckets: bool,
    /// (Frames only) whether it happened inside an ATen op below the leaf's Python frame.
    pub in_op: bool,
    /// Whether the site was read from the event's call stack rather than op scopes.
    pub from_frames: bool,
}

/// The recording's phase structure, built once.
pub(super) struct Phases<'a> {
    rec: &'a Recording,
    ops: &'a OpIndex,
    /// `Optimizer.step#…` spans as (start, end), sorted by start.
    pub optimizer_steps: Vec<(i64, i64)>,
    /// Each step's span name, which names the optimizer's class (parallel to
    /// `optimizer_steps`).
    step_names: Vec<StrId>,
    /// The most state tensors of a weight's size the run's optimizers keep per weight, by
    /// their classes and ops (2, Adam's, where no step says).
    pub state_tensors_per_weight: i64,
    /// Ends of the optimizer steps, sorted.
    step_ends: Vec<i64>,
    /// Where `nn.Parameter` wrapped a tensor: (thread, start) of its constructor, sorted.
    parameter_wraps: Vec<(ThreadIdx, i64)>,
    /// Starts of `nn.Module` frames, sorted.
    module_starts: Vec<i64>,
    /// The outermost module forwards that start an iteration (not evaluations).
    training_forwards: super::forwards::TrainingForwards,
    /// Whether a span marks a backward pass (`autograd::engine::evaluate_function…`).
    backward_seen: bool,
    /// Whether an optimizer's `load_state_dict` ran (a resumed optimizer adopting loaded
    /// state).
    pub optimizer_state_loaded: bool,
    /// Whether an `AveragedModel` ran a forward (`nn.Module: AveragedModel_0`): its
    /// weights are then a model's to torch, which names a module's weights once it runs.
    pub averaged_model_ran: bool,
    /// The storages the program tagged (`record --torch-memory`), which the rules defer to.
    pub tags: super::tags::TagIndex,
    /// Where set, every [`Phases::consumer_between`] question asked, as (thread, after,
    /// before): `summary` of a compact recording fetches the spans those answers read.
    asked: Option<RefCell<Vec<(ThreadIdx, i64, i64)>>>,
    /// The roles of span names, worked out once a name.
    roles: super::roles::Roles,
}

impl<'a> Phases<'a> {
    /// Classify every op span once: O(ops).
    pub fn build(rec: &'a Recording, timeline: &'a Timeline) -> Phases<'a> {
        let mut optimizer_steps = Vec::new();
        let mut modules = Vec::new();
        let mut module_starts = Vec::new();
        let mut backward_starts = Vec::new();
        let (mut backward_seen, mut averaged_model_ran) = (false, false);
        let mut optimizer_state_loaded = false;
        let mut parameter_wraps = Vec::new();
        let (mut state_per_weight, mut third_state_ops, mut amsgrad_steps) =
            (None, Vec::new(), Vec::new());
        let roles = super::roles::Roles::default();
        for op in &rec.ops {
            let role = roles.of(rec, op.category, op.name);
            backward_seen |= role.phase == Some(Phase::Backward);
            averaged_model_ran |= role.averaged_model;
            optimizer_state_loaded |= role.frame.loads_optimizer_state;
            if role.frame.runs_backward {
                backward_starts.push(op.start_ns);
            }
            if role.frame.wraps_parameter {
                parameter_wraps.push((op.thread, op.start_ns));
            }
            if role.phase == Some(Phase::Optimizer) {
                let name = rec.op_name(op);
                optimizer_steps.push((op.start_ns, op.end_ns, op.name));
                state_per_weight = state_per_weight.max(Some(state_tensors_per_weight(name)));
                if may_run_amsgrad(name) {
                    amsgrad_steps.push((op.start_ns, op.end_ns));
                }
            }
            if role.third_state {
                third_state_ops.push(op.start_ns);
            }
            if role.module {
                module_starts.push(op.start_ns);
                modules.push((op.start_ns, op.end_ns, role.loss));
            }
        }
        let training_forwards = super::forwards::TrainingForwards::build(modules, backward_starts);
        optimizer_steps.sort_unstable_by_key(|&(start, end, _)| (start, end));
        let step_names = optimizer_steps.iter().map(|s| s.2).collect();
        let optimizer_steps: Vec<(i64, i64)> = optimizer_steps.iter().map(|s| (s.0, s.1)).collect();
        module_starts.sort_unstable();
        parameter_wraps.sort_unstable();
        let mut step_ends: Vec<i64> = optimizer_steps.iter().map(|s| s.1).collect();
        step_ends.sort_unstable();
        // Each step asks whether one of the ops starts inside it: O(log ops) a step,
        // however many `maximum`s the forward passes run.
        third_state_ops.sort_unstable();
        let holds_one = |s: &(i64, i64)| {
            let first = third_state_ops.partition_point(|&t| t < s.0);
            third_state_ops.get(first).is_some_and(|&t| t <= s.1)
        };
        if amsgrad_steps.iter().any(holds_one) {
            state_per_weight = Some(MOST_STATE_TENSORS_PER_WEIGHT);
        }
        Phases {
            state_tensors_per_weight: state_per_weight.unwrap_or(2),
            step_ends,
            rec,
            ops: &timeline.ops,
            optimizer_steps,
            step_names,
            module_starts,
            parameter_wraps,
            training_forwards,
            backward_seen,
            averaged_model_ran,
            optimizer_state_loaded,
            tags: super::tags::TagIndex::build(rec),
            asked: None,
            roles,
        }
    }

    /// [`Phases::build`], noting the questions [`Phases::consumer_between`] is asked.
    pub fn build_noting(rec: &'a Recording, timeline: &'a Timeline) -> Phases<'a> {
        Phases {
            asked: Some(RefCell::default()),
            ..Phases::build(rec, timeline)
        }
    }

    /// The questions [`Phases::consumer_between`] was asked, where noted.
    pub fn asked(self) -> Vec<(ThreadIdx, i64, i64)> {
        self.asked.map(RefCell::into_inner).unwrap_or_default()
    }

    /// Whether an operator that can take a tensor in started on `thread` strictly between
    /// the two times.
    /// (Looked up in the op index when asked rather than kept per op: an allocation's life
    /// inside one leaf op spans a handful of ops, and `summary`'s memory is mostly the index.)
    pub fn consumer_between(&self, thread: ThreadIdx, after_ns: i64, before_ns: i64) -> bool {
        self.note(thread, after_ns, before_ns);
        self.ops
            .starting_between(thread, after_ns, before_ns)
            .filter_map(|i| self.rec.ops.get(i as usize))
            .any(|op| {
                op.category == OpCategory::CpuOp && !SHAPE_ONLY_OPS.contains(&self.rec.op_name(op))
            })
    }

    /// Where noting, note that an answer reads the spans starting on `thread` in the window.
    fn note(&self, thread: ThreadIdx, after_ns: i64, before_ns: i64) {
        if let Some(asked) = &self.asked {
            asked.borrow_mut().push((thread, after_ns, before_ns));
        }
    }

    /// The names of up to `n` ops that ran on `thread` before leaf op `leaf` at its level in
    /// optimizer step `step` (the ops the step's code called before it), latest first.
    pub fn ops_before_in_step(
        &self,
        thread: ThreadIdx,
        leaf: u32,
        step: usize,
        n: usize,
    ) -> Vec<&str> {
        let (Some(op), Some(&(step_ns, _))) = (
            self.rec.ops.get(leaf as usize),
            self.optimizer_steps.get(step),
        ) else {
            return Vec::new();
        };
        self.note(thread, step_ns, op.start_ns);
        let before = self.ops.ops_before_at_level(thread, leaf, op.start_ns, n);
        before
            .into_iter()
            .filter_map(|i| self.rec.ops.get(i as usize))
            .map(|o| self.rec.op_name(o))
            .collect()
    }

    /// Whether a span marks a backward pass.
    pub fn backward_ran(&self) -> bool {
        self.backward_seen
    }

    /// Whether the recording has module frames (`with_stack=True` traces do).
    pub fn has_modules(&self) -> bool {
        !self.module_starts.is_empty()
    }

    /// Whether a module's forward began in (after_ns, until_ns].
    pub fn module_began(&self, after_ns: i64, until_ns: i64) -> bool {
        let from = self.module_starts.partition_point(|&t| t <= after_ns);
        self.module_starts.get(from).is_some_and(|&t| t <= until_ns)
    }

    /// Whether a training forward (not an evaluation, [`super::forwards`]) began in
    /// (after_ns, until_ns].
    pub fn training_forward_began(&self, after_ns: i64, until_ns: i64) -> bool {
        self.training_forwards.began(after_ns, until_ns)
    }

    /// When `nn.Parameter` next wrapped a tensor on `thread` after `time_ns`.
    pub fn parameter_wrap_after(&self, thread: ThreadIdx, time_ns: i64) -> Option<i64> {
        let n = self
            .parameter_wraps
            .partition_point(|&w| w < (thread, time_ns));
        self.parameter_wraps
            .get(n)
            .filter(|w| w.0 == thread)
            .map(|w| w.1)
    }

    /// How torch names the decayed gradients of optimizer step `step`.
    pub fn decay_naming(&self, step: Option<usize>) -> DecayNaming {
        decay_naming(self.step_name(step))
    }

    /// The span name of optimizer step `step` (`Optimizer.step#Adam.step`), or "".
    pub fn step_name(&self, step: Option<usize>) -> &str {
        step.and_then(|s| self.step_names.get(s))
            .map_or("", |&name| self.rec.strings.get(name))
    }

    /// The optimizer step whose span holds `time_ns`, if one does.
    pub fn step_holding(&self, time_ns: i64) -> Option<usize> {
        let n = self.optimizer_steps.partition_point(|s| s.0 <= time_ns);
        n.checked_sub(1)
            .filter(|&i| self.optimizer_steps.get(i).is_some_and(|s| time_ns <= s.1))
    }

    /// Whether an optimizer step began in (after_ns, until_ns].
    pub fn step_began_between(&self, after_ns: i64, until_ns: i64) -> bool {
        let from = self.optimizer_steps.partition_point(|s| s.0 <= after_ns);
        self.optimizer_steps
            .get(from)
            .is_some_and(|s| s.0 <= until_ns)
    }

    /// When the first optimizer step began.
    pub fn first_step_ns(&self) -> Option<i64> {
        self.optimizer_steps.first().map(|s| s.0)
    }

    /// The end of the last optimizer step that ended at or before `time_ns`.
    pub fn previous_step_end(&self, time_ns: i64) -> Option<i64> {
        let n = self.step_ends.partition_point(|&end| end <= time_ns);
        n.checked_sub(1)
            .and_then(|i| self.step_ends.get(i))
            .copied()
    }

    /// Where event `e` happened.
    pub fn site(&self, e: &MemEvent) -> Site {
        let stack = self.rec.stack(e.stack);
        if !stack.is_empty() {
            return super::frames::site_from_frames(self.rec, stack);
        }
        let chain = self.ops.enclosing_on_thread(e.thread, e.time_ns);
        let mut site = Site {
            phase: if chain.is_empty() {
                Phase::Outside
            } else {
                Phase::Forward
            },
            leaf: None,
            leaf_kind: LeafKind::Other,
            innermost_op: None,
            in_module: false,
            step: None,
            makes_weights: false,
            loads_checkpoint: false,
            copies_for_averaging: false,
            clips_gradients: false,
            makes_ddp_buckets: false,
            in_op: false,
            from_frames: false,
        };
        let mut rank = 0;
        // Innermost first: the leaf is the outermost operator, so the last one seen.
        for &i in &chain {
            let Some(op) = self.rec.ops.get(i as usize) else {
                continue;
            };
            // Named on demand: an event's chain is a few dozen spans, and a role column for
            // every op of a large trace cost `summary` 3 bytes an op.
            let role = self.roles.of(self.rec, op.category, op.name);
            if site.innermost_op.is_none() && op.category != OpCategory::PythonFunction {
                site.innermost_op = Some(i);
            }
            if role.leaf {
                site.leaf = Some((i, 0));
                site.leaf_kind = leaf_kind(self.rec.op_name(op));
            }
            site.in_module |= role.module;
            site.makes_weights |= role.frame.makes_weights;
            site.loads_checkpoint |= role.frame.loads_checkpoint;
            site.copies_for_averaging |= role.frame.copies_for_averaging;
            site.clips_gradients |= role.frame.clips_gradients;
            site.makes_ddp_buckets |= role.frame.makes_ddp_buckets;
            // An optimizer's constructor is its phase but not a step.
            let phase = role
                .phase
                .or(role.frame.builds_optimizer.then_some(Phase::Optimizer));
            let r = phase_rank(phase);
            if r > rank {
                rank = r;
                site.phase = phase.unwrap_or(site.phase);
                if role.phase == Some(Phase::Optimizer) {
                    let key = (op.start_ns, op.end_ns);
                    site.step = self.optimizer_steps.binary_search(&key).ok();
                }
            }
        }
        site
    }
}

/// Which phase wins when scopes nest: the optimizer's and `zero_grad`'s own work over the
/// backward that a hook may run in them, and backward over the forward a checkpoint
/// recomputes inside it.
fn phase_rank(phase: Option<Phase>) -> u8 {
    match phase {
        Some(Phase::Optimizer) => 3,
        Some(Phase::ZeroGrad) => 2,
        Some(Phase::Backward) => 1,
        _ => 0,
    }
}
