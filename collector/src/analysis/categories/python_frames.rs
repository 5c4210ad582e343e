//! What a Python frame says of the memory made under it, by its function and file: a
//! module making its weights, autograd's entry (a backward begins), an optimizer being
//! built or loaded, a checkpoint being read, a model copied to be averaged, gradients being
//! clipped, DDP's gradient buckets being made. Asked of a trace's Python function spans
//! (`file(line): function`) and of a snapshot's frames alike.

use super::frames::in_path;
use crate::model::python::python_call;

/// The functions whose allocations are a module's weights: a `torch.nn` module's
/// `__init__` or `reset_parameters` (the weights of a model built inside the capture), a
/// lazy module's `initialize_parameters` (its first forward), `load_state_dict`, and
/// `Module._apply`, which `.to()`, `.cuda()`, `.half()`, `.bfloat16()` and `to_empty()` run
/// to make every weight again (a model moved to the GPU after the capture began).
const WEIGHT_MAKERS: [&str; 5] = [
    "__init__",
    "reset_parameters",
    "initialize_parameters",
    "load_state_dict",
    "_apply",
];

/// The file whose frames read a checkpoint (`torch.load`).
const CHECKPOINTS: &str = "torch/serialization.py";

/// What a trace's Python function span, named `file(line): function`
/// (`torch/nn/modules/linear.py(96): __init__`), says of the memory made under it: its
/// name parsed once, every question answered.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct FrameSays {
    /// A module making its weights: a function of [`WEIGHT_MAKERS`] in a `torch.nn`
    /// module's source file.
    pub makes_weights: bool,
    /// autograd's entry, `torch.autograd.backward` (what `loss.backward()` calls) or
    /// `torch.autograd.grad`: a backward begins.
    pub runs_backward: bool,
    /// An optimizer's `__init__` or `load_state_dict` (`torch/optim/…`; a learning-rate
    /// scheduler makes no state).
    pub builds_optimizer: bool,
    /// `nn.Parameter`'s constructor (`torch/nn/parameter.py`: `__new__`): the tensor made
    /// just before becomes a module's own weight (custom layers, transformers' `Conv1D`,
    /// an RMSNorm's scale).
    pub wraps_parameter: bool,
    /// `torch.load` ([`CHECKPOINTS`]): a checkpoint being read.
    pub loads_checkpoint: bool,
    /// `AveragedModel`'s `__init__` ([`AVERAGING`]): a copy of a model's weights being made
    /// for an average of them (EMA, SWA), which no optimizer keeps.
    pub copies_for_averaging: bool,
    /// An optimizer's `load_state_dict` (`torch/optim/…`): a resumed optimizer adopting the
    /// state a checkpoint holds.
    pub loads_optimizer_state: bool,
    /// `clip_grad_norm_` and its kin ([`CLIPPING`]): norms computed from gradients alone.
    pub clips_gradients: bool,
    /// `DistributedDataParallel` making its reducer's gradient buckets ([`DDP`]: in
    /// `_ddp_init_helper`, and again in `_pre_forward` when it rebuilds them).
    pub makes_ddp_buckets: bool,
}

/// The file of `torch.nn.parallel.DistributedDataParallel`, whose `_ddp_init_helper` and
/// `_pre_forward` make its gradient buckets: flat buffers the reducer hands to the
/// collectives on their own threads, never to an op torch follows.
const DDP: &str = "torch/nn/parallel/distributed.py";

/// The file of `torch.nn.utils.clip_grad_norm_` (and `clip_grad_value_`,
/// `get_total_norm`): what it makes — each gradient's norm, their stack, the total — is
/// computed from gradients alone, which torch's data flow names nothing.
const CLIPPING: &str = "torch/nn/utils/clip_grad.py";

/// The file of `torch.optim.swa_utils`: `AveragedModel` (a deep copy of a model whose
/// weights are averaged after each step: EMA, SWA) and `SWALR` (a learning-rate
/// schedule). Neither is an optimizer, though it sits among them.
pub(super) const AVERAGING: &str = "torch/optim/swa_utils.py";

/// [`FrameSays`] of the span named `name`; nothing for a name that is no Python call.
pub(super) fn frame_says(name: &str) -> FrameSays {
    python_call(name).map_or_else(FrameSays::default, |c| says(c.function, c.file))
}

/// [`FrameSays`] of a frame of `function` in `file`: a trace's Python span and a
/// snapshot's frame alike.
pub(super) fn says(function: &str, file: &str) -> FrameSays {
    FrameSays {
        makes_weights: WEIGHT_MAKERS.contains(&function) && in_path(file, super::frames::MODULES),
        runs_backward: matches!(function, "backward" | "grad")
            && in_path(file, "torch/autograd/__init__.py"),
        builds_optimizer: matches!(function, "__init__" | "load_state_dict")
            && in_path(file, "torch/optim/")
            && !file.ends_with("lr_scheduler.py")
            && !in_path(file, AVERAGING),
        wraps_parameter: function == "__new__" && in_path(file, "torch/nn/parameter.py"),
        loads_checkpoint: in_path(file, CHECKPOINTS),
        copies_for_averaging: function == "__init__" && in_path(file, AVERAGING),
        loads_optimizer_state: function == "load_state_dict" && in_path(file, "torch/optim/"),
        clips_gradients: in_path(file, CLIPPING),
        makes_ddp_buckets: matches!(function, "_ddp_init_helper" | "_pre_forward")
            && in_path(file, DDP),
    }
}
