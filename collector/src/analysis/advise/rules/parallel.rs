//! Model parallelism: Megatron-style tensor parallelism, with sequence parallelism.

use super::super::Options;
use super::super::curve::Seg;
use super::super::run::{Life, Phase, Run};
use super::super::technique::{Ctx, Parameter, Rule, Words, scaled};
use super::optimizer::optimizer_local;
use crate::analysis::categories::Category;

/// The group of tensor parallelism and its sequence-parallel form (one at a time).
const TENSOR: &str = "tensor_parallel";

/// Column- and row-parallel linears over this many ranks.
pub(in super::super) struct TensorParallel;
/// Tensor parallelism with the norms' and residual stream's activations split along the
/// sequence.
pub(in super::super) struct SequenceParallel;

/// What a rank holds of allocation `life` with the blocks' linears split over `t` ranks
/// (`sequence`: and the rest of the blocks' activations but the norms' outputs split along
/// the sequence).
fn tensor_share(run: &Run, t: u32, sequence: bool, life: &Life, seg: Seg) -> Vec<Seg> {
    let t64 = i64::from(t.max(1));
    let s = &run.structure;
    let weight_sized = s.split_sizes.contains(&life.bytes) && !s.whole_sizes.contains(&life.bytes);
    let split = match life.category {
        Category::Gradient => life.matmul && !life.head,
        Category::Parameter | Category::OptimizerState => weight_sized,
        _ if optimizer_local(life) => weight_sized,
        _ if life.phase == Phase::Forward && life.block.is_some() => {
            life.split || (sequence && !life.norm)
        }
        _ => false,
    };
    if split {
        return scaled(seg, 1, t64);
    }
    // Backward of a block: its temporaries mirror the block's saved activations, split as
    // they are.
    let backward = matches!(
        life.category,
        Category::Activation | Category::AutogradDetail | Category::Temporary
    ) && life.phase == Phase::Backward;
    let shares = life
        .backward_block
        .and_then(|b| s.shares.get(b as usize))
        .filter(|_| backward)
        .filter(|sh| sh.saved_bytes > 0);
    match shares {
        Some(sh) => {
            let kept = if sequence {
                sh.norm_bytes
            } else {
                sh.saved_bytes - sh.split_bytes
            };
            let den = sh.saved_bytes * t64;
            scaled(seg, kept * t64 + (sh.saved_bytes - kept), den)
        }
        None => vec![seg],
    }
}

impl Rule for TensorParallel {
    fn name(&self) -> &'static str {
        "tensor_parallel"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Degree)
    }

    fn value(&self, o: &Options) -> u32 {
        o.tensor_parallel.max(1)
    }

    fn group(&self) -> &'static str {
        TENSOR
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        tensor_share(c.run, c.value, false, life, seg)
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        let t = c.value;
        Words {
            assumptions: format!(
                "Megatron-style over {t} ranks: the weights of the linears (those whose gradient \
                 a matmul makes) but the output layer's, their gradients, state and step \
                 temporaries ÷ {t}; in each block, between norms, the activations from the first \
                 linear's output (column-parallel) to the last one's (row-parallel, whose output \
                 is whole) ÷ {t}, and the block's backward temporaries in the same share; \
                 norms, embedding, output layer, residual stream and the loss whole"
            ),
            cost: "two all-reduces of the residual stream per block in forward and two in \
                   backward, inside each layer (fast links: within a node)"
                .to_owned(),
        }
    }
}

impl Rule for SequenceParallel {
    fn name(&self) -> &'static str {
        "sequence_parallel"
    }

    fn parameter(&self) -> Option<Parameter> {
        Some(Parameter::Degree)
    }

    fn value(&self, o: &Options) -> u32 {
        o.tensor_parallel.max(1)
    }

    fn group(&self) -> &'static str {
        TENSOR
    }

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        tensor_share(c.run, c.value, true, life, seg)
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        let t = c.value;
        Words {
            assumptions: format!(
                "tensor parallelism over {t} ranks, and the blocks' other activations (residual \
                 stream, dropout, the linears' whole outputs) split along the sequence ÷ {t}; \
                 each norm's output is gathered whole before the next column-parallel linear, \
                 which saves it (torch's SequenceParallel; Megatron gathers it again in \
                 backward instead); embedding, output layer and loss whole"
            ),
            cost: "an all-gather and a reduce-scatter in place of each all-reduce (the same \
                   traffic)"
                .to_owned(),
        }
    }
}

/// The model's blocks split into this many pipeline stages, 1F1B.
pub(in super::super) struct PipelineParallel;

/// The first stage's view of the run with `p` stages and `m` micro-batches.
struct FirstStage {
    p: i64,
    m: i64,
    /// The first stage's share of the parameters (and their gradients and state): num / den.
    params: (i64, i64),
}

impl FirstStage {
    /// Stages and micro-batches, without the parameters' share.
    fn new_cheap(c: &Ctx<'_>) -> FirstStage {
        FirstStage {
            p: i64::from(c.value.max(1)),
            m: i64::from(c.options.micro_batches.max(1)),
            params: (1, 1),
        }
    }

    fn new(c: &Ctx<'_>) -> FirstStage {
        let run = c.run;
        let p = i64::from(c.value.max(1));
        let m = i64::from(c.options.micro_batches.max(1));
        let s = &run.structure;
        let first_iteration = s.positions.first().map_or(0, |x| x.1 as usize);
        let units: i64 = (0..first_iteration)
            .filter(|&b| in_first_stage(run, b, p))
            .filter_map(|b| run.blocks.get(b).map(|x| x.unit_bytes))
            .sum();
        let params = if units > 0 && run.gradient_bytes > 0 {
            let embedding = (run.root_unit_bytes - s.head_bytes).max(0);
            (units + embedding, run.gradient_bytes)
        } else {
            (1, p)
        };
        FirstStage { p, m, params }
    }
}

/// Whether block `b` is on the first of `p` stages (its iteration's first ⌈L/p⌉ blocks).
fn in_first_stage(run: &Run, b: usize, p: i64) -> bool {
    run.structure.positions.get(b).is_some_and(|&(pos, count)| {
        let per_stage = (i64::from(count) + p - 1) / p;
        i64::from(pos) < per_stage
    })
}

impl Rule for PipelineParallel {
    fn name(&self) -> &'static str {
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

    fn reshape(&self, c: &Ctx<'_>, _: usize, life: &Life, seg: Seg) -> Vec<Seg> {
        let params = *c.memo.get_or_init(|| FirstStage::new(c).params);
        let f = FirstStage {
            params,
            ..FirstStage::new_cheap(c)
        };
        let run = c.run;
        let in_flight = f.p.min(f.m);
        match life.category {
            Category::Parameter | Category::Gradient | Category::OptimizerState => {
                return scaled(seg, f.params.0, f.params.1);
            }
            _ if optimizer_local(life) => return scaled(seg, f.params.0, f.params.1),
            Category::Activation
            | Category::AutogradDetail
            | Category::Temporary
            | Category::Input => {}
            _ => return vec![seg],
        }
        let block = life.block.or(life.backward_block).map(|b| b as usize);
        let ours = match block {
            Some(b) => in_first_stage(run, b, f.p),
            // Outside the blocks: what comes before them (the embedding) is the first
            // stage's, what comes after (the output layer, the loss) the last's.
            None => {
                life.phase == Phase::Forward && !life.loss && !life.head && before_blocks(run, life)
            }
        };
        if !ours && life.category != Category::Input {
            return Vec::new();
        }
        if life.saved {
            scaled(seg, in_flight, f.m)
        } else {
            scaled(seg, 1, f.m)
        }
    }

    fn words(&self, c: &Ctx<'_>) -> Words {
        let f = FirstStage::new(c);
        Words {
            assumptions: format!(
                "1F1B over {} stages with {} micro-batches (--micro-batches), the estimate the \
                 first stage's (the worst): its blocks (each iteration's first ⌈blocks/{}⌉) and \
                 the embedding, with their parameters, gradients and state ({:.0} % of them); \
                 the activations it saves for min(micro-batches, stages) = {} micro-batches of \
                 1/{} the batch; everything else one micro-batch's; the later stages' blocks, \
                 the output layer and the loss on other ranks",
                f.p,
                f.m,
                f.p,
                100.0 * f.params.0 as f64 / f.params.1.max(1) as f64,
                f.p.min(f.m),
                f.m
            ),
            cost: format!(
                "the pipeline bubble: ({} − 1)/{} of a step idle at each stage; activations sent \
                 between stages",
                f.p, f.m
            ),
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
