//! One allocation as the advisor reshapes it: its category and phase from the classifier,
//! the block whose forward made it, and what the ops around it say.

use super::ops::op_facts;
use super::run::Block;
use crate::analysis::categories::{self, Category, Classified};
use crate::model::Recording;
use crate::timeline::{DeviceTimeline, Timeline};

/// Where in a training iteration an allocation was made: the classifier's phase
/// ([`categories::Phase`]), with everything outside backward and the optimizer step
/// counted as the forward pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// The forward pass (anything outside backward and the optimizer step).
    Forward,
    /// Backward (autograd's engine).
    Backward,
    /// An optimizer step.
    Optimizer,
}

impl From<categories::Phase> for Phase {
    fn from(phase: categories::Phase) -> Phase {
        match phase {
            categories::Phase::Backward => Phase::Backward,
            categories::Phase::Optimizer => Phase::Optimizer,
            _ => Phase::Forward,
        }
    }
}

/// One allocation, as the advisor reshapes it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Life {
    pub bytes: i64,
    pub alloc_ns: i64,
    pub free_ns: Option<i64>,
    pub category: Category,
    pub phase: Phase,
    /// The block (index into [`super::run::Run::blocks`]) whose forward made it.
    pub block: Option<u32>,
    /// Made by an op CPU and CUDA autocast keep in fp32 (norms, softmax, losses).
    pub full_precision: bool,
    /// A forward activation still alive when its iteration's backward began.
    pub saved: bool,
    /// A gradient made inside an autograd node: when the node ended (the gradient it made
    /// is accumulated into `.grad` after it).
    pub node_end_ns: Option<i64>,
    /// Made by a matmul-like op (a linear's output; a weight's gradient).
    pub matmul: bool,
    /// Made by a loss op.
    pub loss: bool,
    /// Made by a softmax (attention's probabilities).
    pub softmax: bool,
    /// Made by a normalisation.
    pub norm: bool,
    /// The attention core (index into [`super::structure::Structure::cores`]) whose saved
    /// tensor it is.
    pub core: Option<u32>,
    /// A block activation between the first and the last linear of a stretch without a norm:
    /// what tensor parallelism splits.
    pub split: bool,
    /// The output layer's weight gradient (the first weight gradient of a backward pass).
    pub head: bool,
    /// Made in this block's backward window (index into [`super::run::Run::blocks`]).
    pub backward_block: Option<u32>,
}

/// Every allocation of the device as a [`Life`]; `backward` the backward passes, `blocks`
/// the blocks' forwards (sorted).
pub(super) fn read(
    rec: &Recording,
    timeline: &Timeline,
    d: &DeviceTimeline,
    classified: &[Classified],
    backward: &[(i64, i64)],
    blocks: &[Block],
) -> Vec<Life> {
    let mut lives = Vec::with_capacity(d.allocations.len());
    for (a, c) in d.allocations.iter().zip(classified) {
        let (category, phase) = (c.category, Phase::from(c.phase));
        let chain = timeline.ops.enclosing_on_thread(a.thread, a.alloc_ns);
        let facts = op_facts(rec, &chain, category);
        let next_backward = backward.iter().find(|&&(s, _)| s > a.alloc_ns).map(|b| b.0);
        let saved = category == Category::Activation
            && phase == Phase::Forward
            && next_backward.is_some_and(|b| a.free_ns.get().is_none_or(|f| f > b));
        let block = blocks
            .partition_point(|b| b.start_ns <= a.alloc_ns)
            .checked_sub(1)
            .filter(|&i| blocks.get(i).is_some_and(|b| a.alloc_ns <= b.end_ns))
            .map(|i| i as u32);
        lives.push(Life {
            bytes: a.bytes,
            alloc_ns: a.alloc_ns,
            free_ns: a.free_ns.get(),
            category,
            phase,
            block,
            full_precision: facts.full_precision,
            saved,
            node_end_ns: facts.node_end_ns,
            matmul: facts.matmul,
            loss: facts.loss,
            softmax: facts.softmax,
            norm: facts.norm,
            core: None,
            split: false,
            head: false,
            backward_block: None,
        });
    }
    lives
}
