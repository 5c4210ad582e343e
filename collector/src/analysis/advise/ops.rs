//! What the ops around an allocation say of it, for the advisor: whether autocast would
//! keep it in fp32, and which autograd node made a gradient.

use crate::analysis::categories::Category;
use crate::model::{OpCategory, Recording};

/// The span of one autograd node's backward.
pub(super) const BACKWARD_NODE: &str = "autograd::engine::evaluate_function";

/// Ops whose results CPU and CUDA autocast keep in fp32 (torch's autocast fp32 lists), and
/// the backward nodes of the same ops.
const FULL_PRECISION_OPS: [&str; 10] = [
    "layer_norm",
    "layernorm",
    "log_softmax",
    "logsoftmax",
    "nll_loss",
    "nllloss",
    "cross_entropy",
    "mse_loss",
    "group_norm",
    "aten::_to_copy",
];

/// Matmul-like ops: a linear's output in the forward, its weight's gradient in backward.
const MATMUL_OPS: [&str; 6] = [
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
];

/// Ops of a loss (a language model's output: the logits' log-softmax and its gradient).
const LOSS_OPS: [&str; 6] = [
    "log_softmax",
    "logsoftmax",
    "nll_loss",
    "nllloss",
    "cross_entropy",
    "mse_loss",
];

/// Normalisations.
const NORM_OPS: [&str; 5] = [
    "layer_norm",
    "layernorm",
    "group_norm",
    "batch_norm",
    "rms_norm",
];

/// What the ops enclosing an allocation say of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct OpFacts {
    /// An op autocast keeps in fp32 made it.
    pub full_precision: bool,
    /// For a gradient: when the autograd node that made it ended.
    pub node_end_ns: Option<i64>,
    /// A matmul-like op made it.
    pub matmul: bool,
    /// A loss op made it.
    pub loss: bool,
    /// A softmax (not a log-softmax) made it: attention's probabilities.
    pub softmax: bool,
    /// A normalisation (layer, group, batch, RMS norm) made it.
    pub norm: bool,
}

/// What the ops enclosing an allocation (`chain`, innermost first) say of it.
pub(super) fn op_facts(rec: &Recording, chain: &[u32], category: Category) -> OpFacts {
    let mut facts = OpFacts::default();
    for o in chain.iter().filter_map(|&op| rec.ops.get(op as usize)) {
        let name = rec.strings.get(o.name);
        if category == Category::Gradient
            && facts.node_end_ns.is_none()
            && name.starts_with(BACKWARD_NODE)
        {
            facts.node_end_ns = Some(o.end_ns);
        }
        if o.category != OpCategory::CpuOp {
            continue;
        }
        let n = name.to_ascii_lowercase();
        facts.full_precision |= FULL_PRECISION_OPS.iter().any(|f| n.contains(f));
        facts.matmul |= MATMUL_OPS.contains(&name);
        let loss = LOSS_OPS.iter().any(|f| n.contains(f));
        facts.loss |= loss;
        facts.softmax |= !loss && n.contains("softmax") && !n.contains("backward");
        facts.norm |= NORM_OPS.iter().any(|f| n.contains(f));
    }
    facts
}
