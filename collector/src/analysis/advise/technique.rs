//! A technique is one registered rule ([`Rule`], listed once in [`REGISTRY`]): its name, its
//! parameter, how it reshapes each measured allocation, the memory it adds of its own, the
//! facts its assumptions and price rest on ([`Basis`]), and what it cannot be combined with.
//! Adding a technique is writing one `Rule`, one line of the registry and its `Basis`
//! variant; the estimate, the capacity search and the JSON read everything from there, and
//! the app's words for the new variant are asked for by the compiler.

use std::cell::OnceCell;

use super::Options;
use super::basis::Basis;
use super::curve::Seg;
use super::rules;
use super::run::{Life, Run};

/// What a technique's number means (and its key in the JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Parameter {
    /// Ranks the technique shards over (ZeRO).
    WorldSize,
    /// What the technique divides by (micro-batches, loss chunks).
    Factor,
    /// The model-parallel degree (tensor, sequence, pipeline parallelism).
    Degree,
    /// An adapter's rank (LoRA).
    Rank,
}

impl Parameter {
    /// The JSON key: `world_size`, `factor`, `degree`, `rank`.
    pub fn key(self) -> &'static str {
        match self {
            Parameter::WorldSize => "world_size",
            Parameter::Factor => "factor",
            Parameter::Degree => "degree",
            Parameter::Rank => "rank",
        }
    }
}

/// A memory-saving technique with its parameter's value: one entry of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Technique {
    /// Index into [`REGISTRY`].
    index: u8,
    /// The parameter's value (0 where the technique has none).
    value: u32,
}

impl Technique {
    /// The technique registered as `name`, with `value` for its parameter (ignored where it
    /// has none; at least 1 where it has one); `None` for a name nothing registers.
    pub fn named(name: &str, value: u32) -> Option<Technique> {
        let index = REGISTRY.iter().position(|r| r.name() == name)?;
        Some(Technique::at(index, value))
    }

    fn at(index: usize, value: u32) -> Technique {
        let has = REGISTRY.get(index).is_some_and(|r| r.parameter().is_some());
        Technique {
            index: u8::try_from(index).unwrap_or(u8::MAX),
            value: if has { value.max(1) } else { 0 },
        }
    }

    pub(super) fn rule(self) -> &'static dyn Rule {
        REGISTRY
            .get(usize::from(self.index))
            .copied()
            .unwrap_or(&rules::precision::Bf16Autocast)
    }

    /// The stable name: `bf16_autocast`, `zero1`, `micro_batch`, …
    pub fn as_str(self) -> &'static str {
        self.rule().name()
    }

    /// Its parameter and value, where it has one.
    pub fn parameter(self) -> Option<(Parameter, u32)> {
        self.rule().parameter().map(|p| (p, self.value))
    }

    fn value_of(self, kind: Parameter) -> Option<u32> {
        self.parameter().filter(|p| p.0 == kind).map(|p| p.1)
    }

    /// Ranks the state is sharded over (ZeRO).
    pub fn world_size(self) -> Option<u32> {
        self.value_of(Parameter::WorldSize)
    }

    /// What it divides by (micro-batches, loss chunks).
    pub fn factor(self) -> Option<u32> {
        self.value_of(Parameter::Factor)
    }

    /// Its model-parallel degree.
    pub fn degree(self) -> Option<u32> {
        self.value_of(Parameter::Degree)
    }

    /// Its adapters' rank.
    pub fn rank(self) -> Option<u32> {
        self.value_of(Parameter::Rank)
    }

    /// The techniques it cannot be combined with, by name (those of its own group too).
    pub fn incompatible_with(self) -> Vec<&'static str> {
        let rule = self.rule();
        REGISTRY
            .iter()
            .filter(|r| r.name() != rule.name())
            .filter(|r| !compatible(rule, **r))
            .map(|r| r.name())
            .collect()
    }

    /// Whether the two can be applied together.
    pub fn compatible_with(self, other: Technique) -> bool {
        compatible(self.rule(), other.rule())
    }

    /// Whether the capacity search may pick it.
    pub fn searched(self) -> bool {
        self.rule().searched()
    }
}

/// Two rules go together: different groups, and neither names the other.
fn compatible(a: &dyn Rule, b: &dyn Rule) -> bool {
    a.group() != b.group()
        && !a.incompatible_with().contains(&b.name())
        && !b.incompatible_with().contains(&a.name())
}

/// Every registered technique, with its parameter's value from `o`, in the order reports
/// list them.
pub fn techniques(o: &Options) -> Vec<Technique> {
    (0..REGISTRY.len())
        .map(|i| {
            let value = REGISTRY.get(i).map_or(0, |r| r.value(o));
            Technique::at(i, value)
        })
        .collect()
}

/// What a rule reads besides the allocation.
pub(super) struct Ctx<'a> {
    pub run: &'a Run,
    /// The technique's parameter's value (0: none).
    pub value: u32,
    /// Parameter bytes the totals hold without an event naming them.
    pub untracked_parameter_bytes: i64,
    /// What the advisor was asked (pipeline parallelism's micro-batches).
    pub options: &'a Options,
    /// Which of the technique's rank roles is estimated (below [`Rule::roles`]).
    pub role: u32,
    /// A number the rule computes once per estimate (pipeline parallelism's first stage's
    /// share of the parameters).
    pub memo: OnceCell<(i64, i64)>,
}

/// One technique: registered once in [`REGISTRY`].
pub(super) trait Rule: Sync {
    /// The stable name.
    fn name(&self) -> &'static str;
    /// Its parameter, if any.
    fn parameter(&self) -> Option<Parameter> {
        None
    }
    /// Its parameter's value from what the advisor was asked.
    fn value(&self, _o: &Options) -> u32 {
        0
    }
    /// Techniques of one group exclude each other (ZeRO's stages, the kinds of recompute).
    fn group(&self) -> &'static str {
        self.name()
    }
    /// Techniques of other groups it cannot be combined with.
    fn incompatible_with(&self) -> &'static [&'static str] {
        &[]
    }
    /// Ranks that hold different things (pipeline stages): the estimate is the most loaded
    /// of these roles' peaks.
    fn roles(&self) -> u32 {
        1
    }
    /// Whether the capacity search may pick it (not a choice of what to train).
    fn searched(&self) -> bool {
        true
    }
    /// Its version of `seg`, a piece of allocation `index`'s life.
    fn reshape(&self, _c: &Ctx<'_>, _index: usize, _life: &Life, seg: Seg) -> Vec<Seg> {
        vec![seg]
    }
    /// Memory it adds of its own.
    fn extras(&self, _c: &Ctx<'_>) -> Vec<Seg> {
        Vec::new()
    }
    /// Host memory it uses instead, bytes.
    fn host_bytes(&self, _c: &Ctx<'_>) -> Option<i64> {
        None
    }
    /// The model used and this run's facts it read: what the app words as the estimate's
    /// assumptions and price.
    fn basis(&self, c: &Ctx<'_>) -> Basis;
}

/// Every technique, once, in the order reports list them.
pub(super) static REGISTRY: [&dyn Rule; 17] = [
    &rules::precision::Bf16Autocast,
    &rules::checkpoint::ActivationCheckpointing,
    &rules::zero::Zero1,
    &rules::zero::Fsdp { reshard: false },
    &rules::zero::Fsdp { reshard: true },
    &rules::optimizer::OptimizerOffload,
    &rules::batch::MicroBatch,
    &rules::checkpoint::SelectiveCheckpointing,
    &rules::checkpoint::ActivationOffload,
    &rules::optimizer::OptimizerBf16States,
    &rules::optimizer::Optimizer8bit,
    &rules::lora::Lora,
    &rules::loss::ChunkedLoss,
    &rules::parallel::TensorParallel { sequence: false },
    &rules::parallel::TensorParallel { sequence: true },
    &rules::pipeline::PipelineParallel { gpipe: false },
    &rules::pipeline::PipelineParallel { gpipe: true },
];

/// `seg` with its bytes times `num / den`, rounded up.
pub(super) fn scaled(seg: Seg, num: i64, den: i64) -> Vec<Seg> {
    vec![Seg {
        bytes: (seg.bytes * num + den.max(1) - 1) / den.max(1),
        ..seg
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_technique_is_registered_once_and_found_by_its_name() {
        // GIVEN the registry
        let all = techniques(&Options::DEFAULTS);
        assert_eq!(all.len(), REGISTRY.len());
        for t in &all {
            // THEN each name is one technique's, and names it back with its value
            let again = Technique::named(t.as_str(), t.parameter().map_or(0, |p| p.1));
            assert_eq!(again, Some(*t));
            assert_eq!(all.iter().filter(|u| u.as_str() == t.as_str()).count(), 1);
        }
        assert_eq!(Technique::named("fp8", 1), None);
        // THEN the defaults' parameters are where the options put them
        let named = |n: &str| all.iter().find(|t| t.as_str() == n).copied();
        assert_eq!(named("zero3").and_then(|t| t.world_size()), Some(2));
        assert_eq!(named("tensor_parallel").and_then(|t| t.degree()), Some(2));
        assert_eq!(named("lora").and_then(|t| t.rank()), Some(8));
        assert_eq!(named("chunked_loss").and_then(|t| t.factor()), Some(4));
        assert_eq!(named("bf16_autocast").and_then(|t| t.parameter()), None);
    }

    #[test]
    fn incompatibilities_hold_both_ways_and_within_a_group() {
        let t = |n: &str| Technique::named(n, 2).expect("registered");
        // GIVEN activation offload, THEN not with either recompute, nor with pipelines
        let offload = t("activation_offload");
        for other in [
            "activation_checkpointing",
            "selective_checkpointing",
            "pipeline_parallel",
        ] {
            assert!(!offload.compatible_with(t(other)), "{other}");
            assert!(!t(other).compatible_with(offload), "{other}");
            assert!(offload.incompatible_with().contains(&other));
            assert!(t(other).incompatible_with().contains(&"activation_offload"));
        }
        // THEN one ZeRO stage, one recompute, one optimizer-state form, one tensor split
        assert!(!t("zero1").compatible_with(t("zero3")));
        assert!(!t("activation_checkpointing").compatible_with(t("selective_checkpointing")));
        assert!(!t("optimizer_8bit").compatible_with(t("optimizer_offload")));
        assert!(!t("tensor_parallel").compatible_with(t("sequence_parallel")));
        // THEN different families go together
        assert!(t("zero3").compatible_with(t("tensor_parallel")));
        assert!(t("bf16_autocast").compatible_with(t("activation_offload")));
    }
}
