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

/// What the ops enclosing an allocation (`chain`, innermost first) say of it: whether an
/// op autocast keeps in fp32 made it, and for a gradient, when the autograd node that
/// made it ended.
pub(super) fn op_facts(rec: &Recording, chain: &[u32], category: Category) -> (bool, Option<i64>) {
    let ops = || chain.iter().filter_map(|&op| rec.ops.get(op as usize));
    let full_precision = ops().any(|o| {
        let n = rec.strings.get(o.name).to_ascii_lowercase();
        o.category == OpCategory::CpuOp && FULL_PRECISION_OPS.iter().any(|f| n.contains(f))
    });
    let node_end_ns = ops()
        .filter(|_| category == Category::Gradient)
        .find(|o| rec.strings.get(o.name).starts_with(BACKWARD_NODE))
        .map(|o| o.end_ns);
    (full_precision, node_end_ns)
}
