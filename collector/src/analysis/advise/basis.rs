//! What an estimate rests on, as facts: which model of the technique was used and the
//! numbers its assumptions and price depend on. The app words them (one match over
//! [`Basis`], so a technique added here without words does not compile there).

/// What a structural rule looked for and found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// This many, over the run.
    Count(usize),
    /// None in a profiler trace: it has no module scopes (`with_stack=True` records them).
    NoneWithoutScopes,
    /// None in an allocator snapshot, whose call stacks do not mark where a block begins
    /// and ends: a profiler trace of a step would.
    NoneInSnapshot,
}

impl Found {
    /// `n` found, or why none were: `in_snapshot` where the input is an allocator snapshot.
    pub(super) fn of(n: usize, in_snapshot: bool) -> Found {
        match (n, in_snapshot) {
            (0, true) => Found::NoneInSnapshot,
            (0, false) => Found::NoneWithoutScopes,
            (n, _) => Found::Count(n),
        }
    }

    /// How many were found.
    pub fn count(self) -> usize {
        match self {
            Found::Count(n) => n,
            Found::NoneWithoutScopes | Found::NoneInSnapshot => 0,
        }
    }
}

/// One technique's model and the facts of this run it used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Basis {
    /// bf16 autocast: matmul-like and elementwise ops' outputs halve.
    Bf16Autocast,
    /// Each block forward checkpointed.
    ActivationCheckpointing {
        /// Blocks (modules directly under the root that hold modules) over the run.
        blocks: Found,
    },
    /// Each attention core checkpointed.
    SelectiveCheckpointing {
        /// Attention cores (a softmax inside a block's forward) over the run.
        cores: Found,
    },
    /// Every block's saved activations copied to the host and back.
    ActivationOffload {
        /// Blocks whose forward is in flight while the previous one's copy runs.
        blocks_in_flight: usize,
        /// Bytes copied out (and back) per step.
        offloaded_bytes: i64,
        /// The host link's bandwidth the copy time assumes, bytes a second.
        link_bytes_per_s: f64,
    },
    /// ZeroRedundancyOptimizer: the optimizer's state sharded.
    Zero1 {
        /// Ranks.
        world_size: u32,
    },
    /// FSDP: state, gradients and parameters sharded.
    Fsdp {
        /// Ranks.
        world_size: u32,
        /// FULL_SHARD (parameters freed after each unit's forward) rather than SHARD_GRAD_OP.
        reshard: bool,
        /// Whether module scopes gave the blocks (else each unit is taken as a layer).
        blocks_known: bool,
    },
    /// The optimizer's state and step on the host.
    OptimizerOffload,
    /// Gradient accumulation over micro-batches.
    MicroBatch {
        /// Micro-batches per step.
        factor: u32,
    },
    /// The optimizer's state in bf16.
    OptimizerBf16States,
    /// bitsandbytes' 8-bit Adam.
    Optimizer8bit {
        /// Parameters with fewer elements keep 32-bit state.
        min_elements: i64,
        /// Elements per fp32 absmax.
        block_elements: i64,
    },
    /// LoRA adapters on a frozen base.
    Lora {
        /// The adapters' rank.
        rank: u32,
        /// nn.Linear modules the blocks call (each gets an adapter).
        adapted_linears: usize,
    },
    /// The output layer and the loss in checkpointed chunks.
    ChunkedLoss {
        /// Chunks.
        chunks: u32,
        /// The loss's log-softmax bytes (0: no loss op made a tensor in the forward).
        logits_bytes: i64,
    },
    /// Megatron-style tensor parallelism, with sequence parallelism or not.
    TensorParallel {
        /// Ranks.
        degree: u32,
        /// The blocks' other activations split along the sequence too.
        sequence: bool,
    },
    /// Pipeline parallelism.
    PipelineParallel {
        /// Stages.
        stages: u32,
        /// Micro-batches per step.
        micro_batches: u32,
        /// GPipe's schedule (all forwards first) rather than 1F1B.
        gpipe: bool,
    },
}
