//! What each advisor estimate assumes and what the technique costs, in words: the
//! collector's [`Basis`] (the model used and this run's facts) said once for every output
//! (text, JSON, report, HTML, viewer).

use collector::analysis::advise::{Basis, Found};

/// What the estimate assumes.
pub fn assumptions(basis: &Basis) -> String {
    match *basis {
        Basis::Bf16Autocast => "activations, their gradients and temporaries made by \
             matmul-like and elementwise ops halve; norms, softmax, losses and casts stay fp32; \
             a bf16 copy of each weight a matmul-like op uses lives from the forward until \
             backward has used it (none is left at the optimizer step); gradients and optimizer \
             state stay fp32"
            .to_owned(),
        Basis::ActivationCheckpointing { blocks } => checkpointing(blocks),
        Basis::SelectiveCheckpointing { cores } => selective(cores),
        Basis::ActivationOffload {
            blocks_in_flight, ..
        } => format!(
            "every block's saved activations copied to pinned host memory after its forward \
             ({blocks_in_flight} block's forward in flight) and back one block ahead of its \
             backward (host bytes: the most offloaded at once); activations outside blocks \
             stay; not re-run here (on CPU the host is the device)"
        ),
        Basis::Zero1 { world_size: n } => format!(
            "optimizer state and the step's temporaries split over {n} ranks as \
             ZeroRedundancyOptimizer does (whole parameters, largest first, to the least loaded \
             rank; the estimate is the most loaded rank); DDP's gradient buckets add one copy \
             of the gradients from the first backward; the per-rank batch stays the same"
        ),
        Basis::Fsdp {
            world_size,
            reshard,
            blocks_known,
        } => fsdp(world_size, reshard, blocks_known),
        Basis::OptimizerOffload => "optimizer state and the step's temporaries move to host \
             memory, which then holds the state and a copy of the gradients (host bytes)"
            .to_owned(),
        Basis::MicroBatch { factor: k } => format!(
            "activations, inputs and temporaries of forward and backward scale with the batch \
             (÷ {k}); gradients accumulate, so the later micro-batches run with every gradient \
             live (from when the previous step's are freed), and each of their backward nodes \
             makes its gradient anew beside the accumulated one; optimizer memory and what \
             nothing names (unknown, before the trace) unchanged"
        ),
        Basis::OptimizerBf16States => "the optimizer's state in bf16 (Adam: 8 → 4 bytes a \
             parameter; SGD's momentum 4 → 2), updated in place from the fp32 gradients, so the \
             step's temporaries (Adam's denominator) are bf16 too; weights and gradients stay \
             fp32"
            .to_owned(),
        Basis::Optimizer8bit {
            min_elements,
            block_elements,
        } => format!(
            "bitsandbytes' 8-bit Adam: each state of a parameter of at least {min_elements} \
             elements one byte an element plus an fp32 absmax per {block_elements} (Adam: 8 → \
             about 2 bytes a parameter), its update one fused kernel with no temporaries; \
             smaller parameters keep 32-bit state; not re-run here (it needs CUDA kernels): \
             docs/ADVISOR.md cites the published figures"
        ),
        Basis::Lora {
            rank: r,
            adapted_linears: n,
        } => format!(
            "the base frozen (no gradients, no optimizer state, no step for its weights); \
             rank-{r} adapters (A: r × in, B: out × r) beside each of the {n} nn.Linear modules \
             the blocks call (as peft targets them; none on the output layer), each weight \
             taken as square since a trace records no shapes; their weights, gradients, state \
             and step temporaries in the measured ones' place and time, in proportion to their \
             size; the forward before the first adapted linear keeps nothing for backward but \
             that linear's input; other activations as measured"
        ),
        Basis::ChunkedLoss {
            chunks: k,
            logits_bytes,
        } => chunked_loss(k, logits_bytes),
        Basis::TensorParallel { degree, sequence } => tensor_parallel(degree, sequence),
        Basis::PipelineParallel {
            stages,
            micro_batches,
            gpipe,
        } => pipeline(stages, micro_batches, gpipe),
    }
}

/// What the technique costs.
pub fn price(basis: &Basis) -> String {
    match *basis {
        Basis::Bf16Autocast => {
            "lower-precision matmuls (watch the loss; bf16 needs no loss scaling)".to_owned()
        }
        Basis::ActivationCheckpointing { blocks } if blocks.count() == 0 => {
            "one more forward per step".to_owned()
        }
        Basis::ActivationCheckpointing { .. } => {
            "one more forward per step (about a third more compute)".to_owned()
        }
        Basis::SelectiveCheckpointing { .. } => {
            "the attention core's forward twice (a few percent more compute)".to_owned()
        }
        Basis::ActivationOffload {
            offloaded_bytes,
            link_bytes_per_s,
            ..
        } => format!(
            "{:.2} ms of host-device copies per step (out and back, at {:.0} GB/s: PCIe 4.0 \
             ×16), hidden only where compute overlaps them",
            2.0 * offloaded_bytes as f64 / link_bytes_per_s * 1e3,
            link_bytes_per_s / 1e9
        ),
        Basis::Zero1 { .. } => {
            "an all-reduce of gradients and a broadcast of updated parameters each step".to_owned()
        }
        Basis::Fsdp { reshard: false, .. } => {
            "a reduce-scatter of gradients and an all-gather of parameters each step".to_owned()
        }
        Basis::Fsdp { reshard: true, .. } => "an all-gather of parameters in each forward and \
             backward, a reduce-scatter of gradients each step"
            .to_owned(),
        Basis::OptimizerOffload => "gradients copied to the host and parameters back each \
             step; the step runs on the CPU"
            .to_owned(),
        Basis::MicroBatch { factor: k } => {
            format!(
                "{k} forwards and backwards of 1/{k} the batch per step (lower GPU utilisation)"
            )
        }
        Basis::OptimizerBf16States => "the moments rounded to bf16 each step (long runs may \
             need stochastic or Kahan rounding)"
            .to_owned(),
        Basis::Optimizer8bit { .. } => "block-wise quantization of the moments (Dettmers et \
             al. 2022 report 32-bit accuracy); a CUDA-only kernel"
            .to_owned(),
        Basis::Lora { .. } => "only the adapters learn: a fine-tuning choice (never picked to \
             fit a capacity); merge them into the weights for inference"
            .to_owned(),
        Basis::ChunkedLoss { chunks: k, .. } => {
            format!("the output layer's forward twice ({k} chunks recomputed in backward)")
        }
        Basis::TensorParallel {
            sequence: false, ..
        } => "two all-reduces of the residual stream per block in forward and two in \
             backward, inside each layer (fast links: within a node)"
            .to_owned(),
        Basis::TensorParallel { sequence: true, .. } => "an all-gather and a reduce-scatter in \
             place of each all-reduce (the same traffic)"
            .to_owned(),
        Basis::PipelineParallel {
            stages: p,
            micro_batches: m,
            gpipe,
        } => pipeline_price(p, m, gpipe),
    }
}

/// Why a rule that reads module scopes estimated no change: `what` was not found.
fn not_found(found: Found, what: &str, without_scopes: &str) -> String {
    match found {
        Found::NoneInSnapshot => format!(
            "{what}: blocks come from a profiler trace's nn.Module scopes, which an allocator \
             snapshot does not record (its call stacks do not mark where a block begins and \
             ends); profile a step with torch.profiler to estimate it: no change estimated"
        ),
        Found::NoneWithoutScopes | Found::Count(_) => without_scopes.to_owned(),
    }
}

fn checkpointing(blocks: Found) -> String {
    match blocks {
        Found::Count(n) if n > 0 => format!(
            "each block forward ({n} over the run: modules directly under the root that hold \
             modules) keeps only its output for backward, and its other saved activations come \
             back while backward recomputes it"
        ),
        _ => not_found(
            blocks,
            "no blocks to checkpoint were found",
            "the trace has no module scopes (profile with with_stack=True), so no blocks to \
             checkpoint were found: no change estimated",
        ),
    }
}

fn selective(cores: Found) -> String {
    match cores {
        Found::Count(n) if n > 0 => format!(
            "each attention core ({n} over the run: from the scores before a block's softmax to \
             the matmul with the values) checkpointed: the tensors it saves (softmax output, \
             dropout mask and output) live only to its end and come back when backward reaches \
             it; every other activation kept"
        ),
        _ => not_found(
            cores,
            "no attention core (a softmax inside a block's forward) was found",
            "no attention core found (a softmax inside a block's forward, with module scopes: \
             with_stack=True): no change estimated",
        ),
    }
}

fn fsdp(n: u32, reshard: bool, blocks_known: bool) -> String {
    match (reshard, blocks_known) {
        (false, _) => format!(
            "FSDP with SHARD_GRAD_OP (FSDP2: reshard_after_forward=False): optimizer state, \
             gradients and parameters split evenly over {n} ranks; every unit's parameters \
             gathered whole from its forward to the end of backward (one more copy of the \
             parameters then); in each block's forward its all-gather buffer and the next \
             block's; a reduce-scatter buffer of about one layer in backward"
        ),
        (true, false) => format!(
            "FSDP with FULL_SHARD: optimizer state, gradients and parameters split evenly over \
             {n} ranks; no module scopes, so no block is known: each unit is taken as about one \
             layer (the largest gradient), the one in use and the one prefetched gathered from \
             forward to the end of backward; a reduce-scatter buffer of about one layer in \
             backward"
        ),
        (true, true) => format!(
            "FSDP with FULL_SHARD, each block its own unit: optimizer state, gradients and \
             parameters split evenly over {n} ranks; the root unit (parameters of no block) \
             gathered from forward to the end of backward, each block gathered for its forward \
             and again, with the next one prefetched, for its backward; in each block's \
             forward its all-gather buffer and the next block's; a reduce-scatter buffer of \
             about one layer in backward"
        ),
    }
}

fn chunked_loss(k: u32, logits_bytes: i64) -> String {
    if logits_bytes == 0 {
        return "no loss op (log_softmax, nll_loss, cross_entropy) made a tensor in the \
                forward: no logits found, no change estimated"
            .to_owned();
    }
    format!(
        "the output layer and the loss run over {k} chunks of rows, each checkpointed: every \
         tensor the size of the loss's log-softmax ({logits_bytes} bytes: the logits, their \
         log-probabilities and their gradients) is one chunk's (÷ {k}); the rest as measured"
    )
}

fn tensor_parallel(t: u32, sequence: bool) -> String {
    if sequence {
        return format!(
            "tensor parallelism over {t} ranks, and the blocks' other activations (residual \
             stream, dropout, the linears' whole outputs) split along the sequence ÷ {t}; each \
             norm's output is gathered whole before the next column-parallel linear, which \
             saves it (torch's SequenceParallel; Megatron gathers it again in backward \
             instead); embedding, output layer and loss whole"
        );
    }
    format!(
        "Megatron-style over {t} ranks: the weights of the linears (those whose gradient a \
         matmul makes) but the output layer's, their gradients, state and step temporaries ÷ \
         {t}; in each block, between norms, the activations from the first linear's output \
         (column-parallel) to the last one's (row-parallel, whose output is whole) ÷ {t}, and \
         the block's backward temporaries in the same share; norms, embedding, output layer, \
         residual stream and the loss whole"
    )
}

fn pipeline(p: u32, m: u32, gpipe: bool) -> String {
    if gpipe {
        return format!(
            "GPipe over {p} stages with {m} micro-batches (--micro-batches) of 1/{m} the batch, \
             each iteration's blocks split in order: every micro-batch's forward before any \
             backward, so each stage saves the activations of all {m}, each micro-batch's \
             freed in its own backward; the estimate is the more loaded of the first stage (its \
             blocks and the embedding) and the last (its blocks, the output layer, the loss and \
             every micro-batch's logits), each during its first micro-batch's backward (the \
             others' activations held) and its last's (every gradient made); parameters, \
             gradients and state by the blocks' units, the gradients accumulated over the \
             micro-batches; everything else one micro-batch's"
        );
    }
    format!(
        "1F1B over {p} stages with {m} micro-batches (--micro-batches) of 1/{m} the batch, each \
         iteration's blocks split in order; the estimate is the more loaded of the first stage \
         (its blocks and the embedding, the activations it saves for min({m}, {p}) = {f} \
         micro-batches in flight) and the last (its blocks, the output layer and the loss, one \
         micro-batch in flight, and every micro-batch's logits, which torch's schedules keep to \
         return); parameters, gradients and state by the blocks' units, the gradients \
         accumulated over the micro-batches (live through the later ones, as for micro_batch); \
         everything else one micro-batch's",
        f = p.min(m)
    )
}

fn pipeline_price(p: u32, m: u32, gpipe: bool) -> String {
    if gpipe {
        return format!(
            "the pipeline bubble, ({p} − 1)/({m} + {p} − 1) of a step idle, as 1F1B's, with \
             every micro-batch's activations held at once; activations and their gradients \
             sent between stages"
        );
    }
    format!(
        "the pipeline bubble, ({p} − 1)/({m} + {p} − 1) of a step idle; activations and their \
         gradients sent between stages"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_that_found_nothing_says_why_for_the_kind_of_input() {
        // GIVEN checkpointing that found no blocks in a snapshot, in a trace, and 12 blocks
        let said = |blocks| assumptions(&Basis::ActivationCheckpointing { blocks });
        // THEN the snapshot is sent to the profiler, not told to add the stacks it has
        assert!(said(Found::NoneInSnapshot).contains("profile a step with torch.profiler"));
        assert!(!said(Found::NoneInSnapshot).contains("with_stack"));
        // AND the trace is told how to record module scopes
        assert!(said(Found::NoneWithoutScopes).contains("with_stack=True"));
        // AND what was found is counted, at its full price
        assert!(said(Found::Count(12)).starts_with("each block forward (12 over the run"));
        let priced = |blocks| price(&Basis::ActivationCheckpointing { blocks });
        assert_eq!(priced(Found::NoneInSnapshot), "one more forward per step");
        assert!(priced(Found::Count(12)).contains("a third more compute"));
    }

    #[test]
    fn offload_prices_the_copies_out_and_back_at_the_link_s_bandwidth() {
        // GIVEN 1.25 GB offloaded over a 25 GB/s link
        let basis = Basis::ActivationOffload {
            blocks_in_flight: 1,
            offloaded_bytes: 1_250_000_000,
            link_bytes_per_s: 25e9,
        };
        // THEN out and back take 2 × 50 ms
        assert!(price(&basis).starts_with("100.00 ms of host-device copies per step"));
        assert!(price(&basis).contains("at 25 GB/s"));
    }
}
