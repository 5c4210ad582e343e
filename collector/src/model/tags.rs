//! Storages named at capture time: `vramscope record --torch-memory`'s shim looks at the
//! program's optimizers and modules and records where their parameters, gradients and
//! optimizer state live (data pointer and size), and torch's memory timeline export names
//! every tensor's category, so the categories of those blocks are known, not inferred.

use super::DeviceIdx;

/// What a tagged storage holds, as the shim saw it in the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorRole {
    /// A parameter of a module or an optimizer's `param_groups`.
    Parameter,
    /// A parameter's `.grad`.
    Gradient,
    /// A tensor of an optimizer's `state` (Adam's moments, SGD's momentum).
    OptimizerState,
    /// What torch's memory profiler calls an input (a batch; read from its timeline).
    Input,
    /// A tensor torch's memory profiler saw made and freed inside one op.
    Temporary,
    /// A tensor of the forward pass kept for backward, as torch's memory profiler says.
    Activation,
    /// Autograd's own buffers, as torch's memory profiler says.
    AutogradDetail,
    /// What torch's memory profiler could not categorise.
    Unknown,
}

impl TensorRole {
    /// The name the shim writes (torch's memory profiler's category names).
    pub fn as_str(self) -> &'static str {
        match self {
            TensorRole::Parameter => "parameter",
            TensorRole::Gradient => "gradient",
            TensorRole::OptimizerState => "optimizer_state",
            TensorRole::Input => "input",
            TensorRole::Temporary => "temporary",
            TensorRole::Activation => "activation",
            TensorRole::AutogradDetail => "autograd_detail",
            TensorRole::Unknown => "unknown",
        }
    }

    /// The role named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<TensorRole> {
        match name {
            "parameter" => Some(TensorRole::Parameter),
            "gradient" => Some(TensorRole::Gradient),
            "optimizer_state" => Some(TensorRole::OptimizerState),
            "input" => Some(TensorRole::Input),
            "temporary" => Some(TensorRole::Temporary),
            "activation" => Some(TensorRole::Activation),
            "autograd_detail" => Some(TensorRole::AutogradDetail),
            "unknown" => Some(TensorRole::Unknown),
            _ => None,
        }
    }
}

/// One storage the shim saw alive: the block holding `addr..addr + bytes` at `since_ns`
/// held it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StorageTag {
    /// The device (an index into [`super::Recording::devices`]).
    pub device: DeviceIdx,
    /// The storage's data pointer (`untyped_storage().data_ptr()`).
    pub addr: u64,
    /// The storage's size (`untyped_storage().nbytes()`); the block holding it can be
    /// larger (the allocator rounds).
    pub bytes: u64,
    /// What it holds.
    pub role: TensorRole,
    /// When the shim saw it alive, ns on the recording's clock.
    pub since_ns: i64,
}
