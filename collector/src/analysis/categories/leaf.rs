//! What a leaf op's name says: the few op kinds the category rules treat apart (the
//! batch makers, the ops that take no tensor in, a magnitude).

/// What a leaf op's name says, for the few rules that need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LeafKind {
    /// `aten::sqrt` or `aten::abs`: in an optimizer step, a magnitude taken of a state
    /// tensor or a gradient (Adam's `sqrt(v)`, Adamax's `|g|`).
    Magnitude,
    /// `aten::div`.
    Div,
    /// `aten::add`, out of place: in a single-tensor optimizer step, the weight decay of a
    /// gradient (`grad.add(param, alpha=weight_decay)`), a new tensor of the weight's size.
    Add,
    /// An op that makes a batch from nothing (random numbers, ranges, copies in).
    Factory,
    /// An op over a list of tensors (`aten::_foreach_sqrt`): a foreach optimizer's.
    Foreach,
    /// Not the op's kind but where it ran: an optimizer step's result torch leaves unnamed
    /// because a decayed gradient lived when it was made ([`super::step_results`]).
    AfterDecay,
    /// An optimizer step's result that torch's input flood reaches whatever the step
    /// (Adadelta's `add(eps)`, whose Python number torch wraps as an input): an activation in
    /// every step, the trace's last included ([`super::step_results::adadelta_result`]).
    Flooded,
    /// Any other op.
    Other,
}

/// Ops that create a batch: torch calls their results inputs when nothing else tells.
/// (`ones` and `zeros` too: synthetic batches and targets, a recurrent net's first state.)
const FACTORY_OPS: [&str; 10] = [
    "aten::ones",
    "aten::zeros",
    "aten::randint",
    "aten::randn",
    "aten::rand",
    "aten::randperm",
    "aten::arange",
    "aten::full",
    "aten::lift_fresh",
    "aten::from_file",
];

/// Ops that take no tensor in (or only another tensor's shape): an allocation that only
/// such ops follow before its free was never handed to an op, so torch has no tensor
/// identity for it (`aten::native_batch_norm`'s unused outputs, max-pool indices nobody
/// reads).
pub(super) const SHAPE_ONLY_OPS: [&str; 10] = [
    "aten::empty",
    "aten::empty_strided",
    "aten::empty_like",
    "aten::zeros",
    "aten::ones",
    "aten::full",
    "aten::scalar_tensor",
    "aten::randn",
    "aten::rand",
    "aten::randint",
];

/// What the leaf op named `name` is, for the rules.
pub(super) fn leaf_kind(name: &str) -> LeafKind {
    match name {
        "aten::sqrt" | "aten::abs" => LeafKind::Magnitude,
        "aten::div" => LeafKind::Div,
        "aten::add" => LeafKind::Add,
        n if FACTORY_OPS.contains(&n) => LeafKind::Factory,
        n if n.starts_with("aten::_foreach_") => LeafKind::Foreach,
        _ => LeafKind::Other,
    }
}
