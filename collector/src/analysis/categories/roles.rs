//! What an op span says about the events it encloses ([`Role`]), worked out once a name.
//!
//! Every event's site asks the role of each span enclosing it — a few dozen on a trace
//! recorded `with_stack`, whose Python frames' names are parsed to answer — so the same few
//! thousand names were parsed millions of times: ~45 % of `categories` on the stack-heavy
//! benchmark shape (`perf`). The answer depends only on the name and the span's category;
//! it is kept per name id, for the category the name came with (a name seen with a second
//! category is answered without the memo). `summary` of a compact recording asks the same
//! memo which spans mark phases, over each of its millions of compressed spans.

use std::cell::RefCell;

use super::forwards::is_loss;
use super::phase::Phase;
use super::python_frames::{FrameSays, frame_says};
use crate::model::python::module_scope;
use crate::model::{OpCategory, Recording, StrId};

/// The roles of the recording's span names, as they are asked.
#[derive(Default)]
pub(crate) struct Roles {
    /// By name id: the category it was first asked with and its role then.
    by_name: RefCell<Vec<Option<(OpCategory, Role)>>>,
}

impl Roles {
    /// The role of a span of `category` named `name`.
    pub(super) fn of(&self, rec: &Recording, category: OpCategory, name: StrId) -> Role {
        let id = name.0 as usize;
        let mut by_name = self.by_name.borrow_mut();
        if by_name.len() <= id {
            by_name.resize(rec.strings.len().max(id + 1), None);
        }
        match by_name[id] {
            Some((c, role)) if c == category => role,
            Some(_) => role_of(rec, category, name),
            None => {
                let role = role_of(rec, category, name);
                by_name[id] = Some((category, role));
                role
            }
        }
    }

    /// Whether [`super::phase::Phases::build`] reads a span of `category` named `name`: an
    /// optimizer step's, a module's frame or autograd's entry frame (`summary` of a compact
    /// recording takes those spans whatever their time).
    pub(crate) fn marks_phases(&self, rec: &Recording, category: OpCategory, name: StrId) -> bool {
        self.of(rec, category, name).marks_phases()
    }
}

/// What one op span says about the events it encloses.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Role {
    /// The phase its name marks.
    pub phase: Option<Phase>,
    /// Whether it is torch's data-flow leaf (an ATen op, an autograd node, a compiled graph).
    pub leaf: bool,
    /// Whether it is a module's frame.
    pub module: bool,
    /// A module frame of a loss (`nn.Module: CrossEntropyLoss_0`, [`is_loss`]).
    pub loss: bool,
    /// A module frame of `torch.optim.swa_utils.AveragedModel` (`nn.Module: AveragedModel_0`).
    pub averaged_model: bool,
    /// What a Python frame's function and file say (`with_stack=True`).
    pub frame: FrameSays,
    /// An op that, in an optimizer step, says the optimizer may keep a third state tensor
    /// per weight ([`super::step_results::may_keep_a_third_state`]).
    pub third_state: bool,
}

pub(super) fn role_of(rec: &Recording, category: OpCategory, name: StrId) -> Role {
    let name = rec.strings.get(name);
    let cpu_op = category == OpCategory::CpuOp;
    let backward_node =
        cpu_op && (name.contains("Backward") || name.starts_with("torch::autograd::"));
    let by_name = phase_of_name(name);
    let phase = match by_name {
        Some(Phase::Backward) | None if backward_node => Some(Phase::Backward),
        _ => by_name,
    };
    let python = category == OpCategory::PythonFunction;
    let module = module_scope(name).filter(|_| python);
    // The engine's `evaluate_function` span wraps a node and the engine's own work on its
    // outputs (reducing a broadcast gradient to its input's shape): torch's leaves are the
    // node and those ops, so what the node returns is its output, not an intermediate.
    let engine = by_name == Some(Phase::Backward);
    Role {
        phase,
        leaf: (cpu_op && (name.starts_with("aten::") || (backward_node && !engine)))
            || runs_a_compiled_graph(category, name),
        module: module.is_some(),
        loss: module.is_some_and(is_loss),
        averaged_model: module.is_some_and(|m| m.starts_with("AveragedModel_")),
        frame: if python {
            frame_says(name)
        } else {
            FrameSays::default()
        },
        third_state: cpu_op && super::step_results::may_keep_a_third_state(name),
    }
}

/// Whether a span is a call of a compiled graph (`torch.compile`: TorchInductor's
/// `## Call CompiledFxGraph … ##` range): from outside, one operator, whose code makes its
/// outputs and scratch with no ATen op, so it is the leaf of what it allocates.
fn runs_a_compiled_graph(category: OpCategory, name: &str) -> bool {
    category == OpCategory::UserAnnotation && name.starts_with("## Call CompiledFxGraph")
}

/// The phase a span's name marks whatever its category (`Optimizer.step#…`,
/// `Optimizer.zero_grad#…`, `autograd::engine::evaluate_function…`).
fn phase_of_name(name: &str) -> Option<Phase> {
    if name.starts_with("Optimizer.step#") {
        Some(Phase::Optimizer)
    } else if name.starts_with("Optimizer.zero_grad#") {
        Some(Phase::ZeroGrad)
    } else if name.starts_with("autograd::engine::evaluate_function") {
        Some(Phase::Backward)
    } else {
        None
    }
}

/// Whether a span's name marks a phase whatever its category: such spans are read by the
/// categories of every command, `summary` included ([`crate::parse::SpanFilter::Summary`]).
pub fn names_a_phase(name: &str) -> bool {
    phase_of_name(name).is_some()
}

impl Role {
    /// Whether [`super::phase::Phases::build`] reads a span of this role: an optimizer
    /// step's, a module's frame, autograd's entry frame, an optimizer's `load_state_dict`,
    /// or an op that may keep a third state tensor.
    pub(super) fn marks_phases(&self) -> bool {
        self.phase == Some(Phase::Optimizer)
            || self.third_state
            || self.module
            || self.frame.runs_backward
            || self.frame.wraps_parameter
            || self.frame.loads_optimizer_state
    }
}
