//! What freezing the weights changes in the forward (LoRA): which linears get adapters (those
//! the model calls as `nn.Linear` modules inside its blocks, as peft targets them), and, each
//! iteration, the forward before the first of them, which nothing trainable precedes: its
//! activations are not kept for backward, except the first adapted linear's input.

use super::run::Block;
use crate::model::python::module_scope;
use crate::model::{OpCategory, Recording};

/// Each iteration's forward before its first adapted linear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Prefix {
    /// When the iteration began.
    pub iteration_ns: i64,
    /// Activations made from here on (the module that made the first adapted linear's
    /// input) are still kept.
    pub keep_from_ns: i64,
    /// When the first adapted linear began: the rest of the prefix is done with by then.
    pub first_ns: i64,
}

/// The adapted linears and the frozen prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Frozen {
    /// `nn.Linear` modules called inside the first iteration's blocks.
    pub adapted: usize,
    pub prefixes: Vec<Prefix>,
}

impl Frozen {
    /// The prefix holding `time_ns`, if it lies before its iteration's first adapted linear
    /// and before the module feeding it.
    pub fn dropped(&self, time_ns: i64) -> Option<&Prefix> {
        let i = self
            .prefixes
            .partition_point(|p| p.iteration_ns <= time_ns)
            .checked_sub(1)?;
        self.prefixes.get(i).filter(|p| time_ns < p.keep_from_ns)
    }
}

/// Read the module scopes: `steps` the optimizer steps, `blocks` the blocks' forwards.
pub(super) fn read(rec: &Recording, blocks: &[Block], steps: &[(i64, i64)]) -> Frozen {
    let scopes: Vec<(i64, i64, bool)> = rec
        .ops
        .iter()
        .filter(|o| o.category == OpCategory::PythonFunction)
        .filter_map(|o| {
            let name = module_scope(rec.strings.get(o.name))?;
            Some((o.start_ns, o.end_ns, name.starts_with("Linear_")))
        })
        .collect();
    let in_block = |t: i64| blocks.iter().any(|b| b.start_ns <= t && t <= b.end_ns);
    let mut adapted: Vec<(i64, usize)> = scopes
        .iter()
        .filter(|s| s.2 && in_block(s.0))
        .map(|s| (s.0, steps.partition_point(|st| st.1 <= s.0)))
        .collect();
    adapted.sort_unstable();
    let mut out = Frozen {
        adapted: adapted.iter().filter(|a| a.1 == 0).count(),
        prefixes: Vec::new(),
    };
    let mut iteration = None;
    for &(first_ns, it) in &adapted {
        if iteration == Some(it) {
            continue;
        }
        iteration = Some(it);
        let iteration_ns = it
            .checked_sub(1)
            .and_then(|p| steps.get(p))
            .map_or(i64::MIN, |s| s.1);
        // The module that ran last before it (its input's maker).
        let keep_from_ns = scopes
            .iter()
            .filter(|s| s.1 <= first_ns && s.0 >= iteration_ns)
            .max_by_key(|s| (s.1, std::cmp::Reverse(s.0)))
            .map_or(first_ns, |s| s.0);
        out.prefixes.push(Prefix {
            iteration_ns,
            keep_from_ns,
            first_ns,
        });
    }
    out
}
