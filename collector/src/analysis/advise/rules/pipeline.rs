//! Pipeline parallelism: the model's blocks split into stages, under 1F1B (each stage holds
//! at most P − r micro-batches' activations) or GPipe (every forward first: all m, then
//! each micro-batch's backward in turn, freeing its own).

use super::super::Options;
use super::super::basis::Basis;
use super::super::curve::Seg;
use super::super::run::{Life, Phase, Run};
use super::super::technique::{Ctx, Parameter, Rule, scaled};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// The model's blocks split into this many pipeline stages, under 1F1B or GPipe.
pub(in super::super) struct PipelineParallel {
    /// GPipe's schedule (every micro-batch's forward, then every backward) instead of 1F1B.
    pub(in super::super) gpipe: bool,
}

/// The stages estimated: role 0 the first (the most micro-batches in flight, the embedding),
/// role `LAST` the last (the output layer, the logits and the loss); a middle stage holds
/// less than the first. GPipe's roles `STAGES` and on are the same stages during the first
/// micro-batch's backward (every other micro-batch's activations held, the gradients being
/// made) rather than the last's (only its own activations left, every gradient accumulated).
const LAST: u32 = 1;
const STAGES: u32 = LAST + 1;

/// One stage's view of the run with `p` stages and `m` micro-batches.
struct Stage {
    last: bool,
    gpipe: bool,
    /// GPipe during its first micro-batch's backward (else its last's).
    first_backward: bool,
    p: i64,
    m: i64,
}

impl Stage {
    fn of(c: &Ctx<'_>, gpipe: bool) -> Stage {
        Stage {
            last: c.role % STAGES == LAST,
            gpipe,
            first_backward: gpipe && c.role >= STAGES,
            p: i64::from(c.value.max(1)),
            m: i64::from(c.options.micro_batches.max(1)),
        }
    }

    /// Micro-batches whose activations the stage holds at once: min(m, P − r) under 1F1B,
    /// every one under GPipe.
    fn in_flight(&self) -> i64 {
        match (self.gpipe, self.last) {
            (true, _) => self.m,
            (false, true) => 1,
            (false, false) => self.p.min(self.m),
        }
    }

    /// Whether block `b` is this stage's (its iteration's first or last ⌈L/P⌉ blocks).
    fn holds(&self, run: &Run, b: usize) -> bool {
        run.structure.positions.get(b).is_some_and(|&(pos, count)| {
            let per_stage = (i64::from(count) + self.p - 1) / self.p;
            let pos = i64::from(pos);
            if self.last {
                pos >= (self.p - 1) * per_stage
            } else {
                pos < per_stage
            }
        })
    }

    /// The stage's share of the parameters (their gradients, state and step): its blocks'
    /// units and, outside the blocks, the embedding (first) or the output layer (last);
    /// 1/P where no block has a unit.
    fn parameters(&self, run: &Run) -> (i64, i64) {
        let s = &run.structure;
        let first_iteration = s.positions.first().map_or(0, |x| x.1 as usize);
        let units: i64 = (0..first_iteration)
            .filter(|&b| self.holds(run, b))
            .filter_map(|b| run.blocks.get(b).map(|x| x.unit_bytes))
            .sum();
        if units == 0 || run.gradient_bytes == 0 {
            return (1, self.p);
        }
        let outside = if self.last {
            s.head_bytes
        } else {
            (run.root_unit_bytes - s.head_bytes).max(0)
        };
        (units + outside, run.gradient_bytes)
    }

    /// Whether an allocation outside the blocks is this stage's: before the blocks (the
    /// embedding) the first's, after them (the output layer, the loss) the last's.
    fn holds_outside(&self, run: &Run, life: &Life) -> bool {
        let before = life.phase == Phase::Forward && !life.loss && before_blocks(run, life);
        before != self.last
    }
}

impl Rule for PipelineParallel {
    fn name(&self) -> &'static str {
        match self.gpipe {
            true => "pipeline_parallel_gpipe",
            false => "pipeline_parallel",
        }
    }

    fn group(&self) -> &'static str {
        "pipeline_parallel"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Degree)
    }

    fn value(&self, o: &Options) -> u32 {
        o.pipeline_stages.max(1)
    }

    fn incompatible_with(&self) -> &'static [&'static str] {
        &["activation_offload", "micro_batch"]
    }

    fn roles(&self) -> u32 {
        if self.gpipe { 2 * STAGES } else { STAGES }
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let stage = Stage::of(c, self.gpipe);
        let run = c.run;
        let state = matches!(
            life.category,
            Category::Parameter | Category::Gradient | Category::OptimizerState
        );
        if state || optimizer_local(life) {
            let (num, den) = *c.memo.get_or_init(|| stage.parameters(run));
            // The stage's gradients accumulate over the micro-batches, as micro-batching's
            // (during GPipe's first backward only the first micro-batch's are made).
            let segs = if life.category == Category::Gradient && !stage.first_backward {
                super::super::micro::reshape(c.options.micro_batches, run, life, seg)
            } else {
                vec![seg]
            };
            return segs.into_iter().flat_map(|s| scaled(s, num, den)).collect();
        }
        if !matches!(
            life.category,
            Category::Activation | Category::AutogradDetail | Category::Temporary | Category::Input
        ) {
            return vec![seg];
        }
        let ours = match life.block.or(life.backward_block) {
            Some(b) => stage.holds(run, b as usize),
            None => life.category == Category::Input || stage.holds_outside(run, life),
        };
        // torch's schedules keep every micro-batch's output of the last stage (the logits) to
        // return them merged: all m of them, the whole batch's.
        let logits = life.block.is_none()
            && life.phase == Phase::Forward
            && !life.loss
            && life.bytes == run.structure.logits_bytes;
        match (ours, life.saved) {
            (false, _) => Vec::new(),
            (true, _) if stage.last && logits => vec![seg],
            (true, true) if stage.gpipe => {
                gpipe_saved(&run.backward, stage.m, stage.first_backward, seg)
            }
            (true, true) => scaled(seg, stage.in_flight(), stage.m),
            (true, false) => scaled(seg, 1, stage.m),
        }
    }

    fn basis(&self, c: &Ctx<'_>) -> Basis {
        let s = Stage::of(c, self.gpipe);
        Basis::PipelineParallel {
            stages: u32::try_from(s.p).unwrap_or(u32::MAX),
            micro_batches: u32::try_from(s.m).unwrap_or(u32::MAX),
            gpipe: s.gpipe,
        }
    }
}

/// A saved activation's piece `seg` under GPipe: all m micro-batches' copies (1/m each)
/// made in the forward; in the backward pass that frees it, during the last micro-batch's
/// backward only its own copy is left, during the first's its own goes as measured while
/// every other is held to the pass's end. Without a backward pass after it, all m to its
/// measured end.
fn gpipe_saved(backward: &[(i64, i64)], m: i64, first_backward: bool, seg: Seg) -> Vec<Seg> {
    let Some(&(b0, b1)) = backward.iter().find(|b| b.1 >= seg.start_ns) else {
        return scaled(seg, m, m);
    };
    let per = |s: Seg, copies: i64| scaled(s, copies, m);
    if first_backward {
        let held_ns = seg.end_ns.map(|e| e.max(b1));
        let others = Seg {
            end_ns: held_ns,
            ..seg
        };
        return [per(seg, 1), per(others, m - 1)].concat();
    }
    match seg.end_ns {
        Some(end) if end <= b0 => per(seg, m),
        _ if seg.start_ns >= b0 => per(seg, 1),
        _ => {
            let forward = Seg {
                end_ns: Some(b0),
                ..seg
            };
            let backward = Seg {
                start_ns: b0,
                ..seg
            };
            [per(forward, m), per(backward, 1)].concat()
        }
    }
}

/// Made before its iteration's first block began.
fn before_blocks(run: &Run, life: &Life) -> bool {
    let it = run.iteration_start(life.alloc_ns);
    run.blocks
        .iter()
        .find(|b| b.start_ns >= it)
        .is_some_and(|b| life.alloc_ns < b.start_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start_ns: i64, end_ns: Option<i64>, bytes: i64) -> Seg {
        Seg {
            start_ns,
            end_ns,
            bytes,
        }
    }

    #[test]
    fn gpipe_frees_each_micro_batch_s_activations_in_its_own_backward() {
        // GIVEN an activation of 100 B saved at 10, freed at 50 in the backward pass 40–60,
        // and two micro-batches (50 B each)
        let backward = [(40, 60)];
        let saved = seg(10, Some(50), 100);
        // THEN during the last micro-batch's backward: both copies through the forward,
        // only its own from the backward's start to the measured free
        assert_eq!(
            gpipe_saved(&backward, 2, false, saved),
            vec![seg(10, Some(40), 100), seg(40, Some(50), 50)]
        );
        // AND during the first's: its own to the measured free, the other held to the
        // pass's end
        assert_eq!(
            gpipe_saved(&backward, 2, true, saved),
            vec![seg(10, Some(50), 50), seg(10, Some(60), 50)]
        );
        // AND one freed before the backward, or with no backward after it, keeps all m
        assert_eq!(
            gpipe_saved(&backward, 2, false, seg(10, Some(30), 100)),
            vec![seg(10, Some(30), 100)]
        );
        assert_eq!(
            gpipe_saved(&[], 2, false, saved),
            vec![seg(10, Some(50), 100)]
        );
    }
}
