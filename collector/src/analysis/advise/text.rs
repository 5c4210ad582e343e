//! What each estimate assumes and what the technique costs, in words.

use super::run::Run;
use super::{Estimate, Technique};

/// The estimate of `t`, with its sentences.
pub(super) fn estimate(t: Technique, run: &Run, measured: i64, peak: i64) -> Estimate {
    let (assumptions, cost) = words(t, run);
    Estimate {
        technique: t,
        estimated_peak_bytes: peak,
        saving_bytes: measured - peak,
        host_bytes: (t == Technique::OptimizerOffload)
            .then_some(run.state_bytes + run.gradient_bytes),
        assumptions,
        cost,
    }
}

fn words(t: Technique, run: &Run) -> (String, String) {
    let (a, c) = match t {
        Technique::Bf16Autocast => (
            "activations, their gradients and temporaries made by matmul-like and elementwise ops \
             halve; norms, softmax, losses and casts stay fp32; a bf16 copy of each \
             weight a matmul-like op uses lives from the forward until backward has used it \
             (none is left at the optimizer step); gradients and optimizer state stay fp32"
                .to_owned(),
            "lower-precision matmuls (watch the loss; bf16 needs no loss scaling)".to_owned(),
        ),
        Technique::ActivationCheckpointing if run.blocks.is_empty() => (
            "the trace has no module scopes (profile with with_stack=True), so no blocks to \
             checkpoint were found: no change estimated"
                .to_owned(),
            "one more forward per step".to_owned(),
        ),
        Technique::ActivationCheckpointing => (
            format!(
                "each block forward ({} over the run: modules directly under the root that hold \
                 modules) keeps only its output for backward, and its other saved activations \
                 come back while backward recomputes it",
                run.blocks.len()
            ),
            "one more forward per step (about a third more compute)".to_owned(),
        ),
        Technique::Zero1(n) => (
            format!(
                "optimizer state and the step's temporaries split over {n} ranks as \
                 ZeroRedundancyOptimizer does (whole parameters, largest first, to the least \
                 loaded rank; the estimate is the most loaded rank); DDP's gradient buckets add \
                 one copy of the gradients from the first backward; the per-rank batch stays the \
                 same"
            ),
            "an all-reduce of gradients and a broadcast of updated parameters each step".to_owned(),
        ),
        Technique::Zero2(n) | Technique::Zero3(n) => fsdp_words(t, n, run),
        Technique::OptimizerOffload => (
            "optimizer state and the step's temporaries move to host memory, which then holds \
             the state and a copy of the gradients (host bytes)"
                .to_owned(),
            "gradients copied to the host and parameters back each step; the step runs on the CPU"
                .to_owned(),
        ),
        Technique::MicroBatch(k) => (
            format!(
                "activations, inputs and temporaries of forward and backward scale with the \
                 batch (÷ {k}); gradients accumulate, so the later micro-batches run with every \
                 gradient live (from when the previous step's are freed), and each of their \
                 backward nodes makes its gradient anew beside the accumulated one; optimizer memory and what nothing names (unknown, before the \
                 trace) unchanged"
            ),
            format!(
                "{k} forwards and backwards of 1/{k} the batch per step (lower GPU utilisation)"
            ),
        ),
    };
    (a, c)
}

/// ZeRO-2 and ZeRO-3 (FSDP) in words.
fn fsdp_words(t: Technique, n: u32, run: &Run) -> (String, String) {
    match t {
        Technique::Zero2(_) => (
            format!(
                "FSDP with SHARD_GRAD_OP (FSDP2: reshard_after_forward=False): optimizer state, \
                 gradients and parameters split evenly over {n} ranks; every unit's parameters \
                 gathered whole from its forward to the end of backward (one more copy of the \
                 parameters then); in each block's forward its all-gather buffer and the next \
                 block's; a reduce-scatter buffer of about one layer in backward"
            ),
            "a reduce-scatter of gradients and an all-gather of parameters each step".to_owned(),
        ),
        Technique::Zero3(_) if run.blocks.is_empty() => (
            format!(
                "FSDP with FULL_SHARD: optimizer state, gradients and parameters split evenly \
                 over {n} ranks; no module scopes, so no block is known: each unit is taken as \
                 about one layer (the largest gradient), the one in use and the one prefetched \
                 gathered from forward to the end of backward; a reduce-scatter buffer of about \
                 one layer in backward"
            ),
            "an all-gather of parameters in each forward and backward, a reduce-scatter of \
             gradients each step"
                .to_owned(),
        ),
        _ => (
            format!(
                "FSDP with FULL_SHARD, each block its own unit: optimizer state, gradients and \
                 parameters split evenly over {n} ranks; the root unit (parameters of no block) \
                 gathered from forward to the end of backward, each block gathered for its \
                 forward and again, with the next one prefetched, for its backward; in each \
                 block's forward its all-gather buffer and the next block's; a reduce-scatter \
                 buffer of about one layer in backward"
            ),
            "an all-gather of parameters in each forward and backward, a reduce-scatter of \
             gradients each step"
                .to_owned(),
        ),
    }
}
